import Foundation

/// How many of their cases the exhaustive suites run (every flipped byte, every crash point,
/// the long workloads), read from `YTKKV_TEST_DEPTH` (docs/TESTING.md, "Depth: sample and
/// full"): unset or `sample`, what `swift test` runs; `full`, every case, what `.ci/run` runs.
///
/// A sample keeps a suite's edges (the first and last bytes, every boundary between records,
/// headers and files, each point where the format changes meaning) and a spread of the rest,
/// the same on every run: a failure at sample depth fails again at either depth. Only the
/// number of cases changes with the depth, never what is checked of each.
package enum TestDepth: String, Sendable, CustomStringConvertible {
  case sample
  case full

  /// The depth of this run. Any value but the two stops the run: a misspelt `full` must not
  /// quietly run the sample.
  package static let current: TestDepth = {
    let value = ProcessInfo.processInfo.environment["YTKKV_TEST_DEPTH"] ?? ""
    guard let depth = value.isEmpty ? .sample : TestDepth(rawValue: value) else {
      fatalError("YTKKV_TEST_DEPTH is \"\(value)\": it must be sample, full, or unset (sample)")
    }
    return depth
  }()

  package static var isFull: Bool { current == .full }

  /// `sample` at sample depth, `full` at full depth: a number of rounds, runs or steps.
  package static func choose<Value>(sample: Value, full: Value) -> Value {
    isFull ? full : sample
  }

  /// Whether case `index` (counted from 0) of an exhaustive list runs: at full depth every
  /// case; at sample depth every `stride`-th (0, `stride`, 2 × `stride`, …), and the case
  /// whatever its index when it `isEdge`.
  package static func runs(_ index: Int, every stride: Int, isEdge: Bool = false) -> Bool {
    isFull || isEdge || index % stride == 0
  }

  /// The cases of `cases` a suite runs, in order: all at full depth; at sample depth those
  /// `isEdge` names, and every `stride`-th of the list (the first included).
  package static func cases<Cases: Sequence>(
    _ cases: Cases, every stride: Int, keeping isEdge: (Cases.Element) -> Bool = { _ in false }
  ) -> [Cases.Element] {
    cases.enumerated().filter { runs($0.offset, every: stride, isEdge: isEdge($0.element)) }
      .map(\.element)
  }

  package var description: String { "\(rawValue) depth" }
}
