import Foundation
import FuzzTargets
import Testing

/// Every seed and every input that once made a fuzz target fail, replayed on each test run.
@Suite("Fuzz corpora and kept failures")
struct FuzzCorpusTests {
  static let fuzzDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fuzz")

  @Test(
    "every seed and kept failure runs through its target without a failure",
    arguments: FuzzTarget.allCases)
  func replay(target: FuzzTarget) {
    var inputs = 0
    for folder in ["Corpus", "Regressions"] {
      let path = Self.fuzzDirectory.appendingPathComponent(folder)
        .appendingPathComponent(target.rawValue).path
      inputs += FuzzReplay.run([path], target.run)
    }
    #expect(inputs > 0, "no inputs for \(target)")
  }
}
