import Foundation
import FuzzTargets
import Testing

/// Every seed and every input that once made a fuzz target fail, replayed on each test run.
@Suite("Fuzz corpora and kept failures")
struct FuzzCorpusTests {
  static let fuzzDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fuzz")

  static func target(named name: String) -> (UnsafeRawBufferPointer) -> Void {
    switch name {
    case "record-decoding": fuzzRecordDecoding
    case "store-open": fuzzStoreOpen
    case "json": fuzzJSON
    default: fuzzDifferential
    }
  }

  @Test(
    "every seed and kept failure runs through its target without a failure",
    arguments: ["record-decoding", "store-open", "json", "differential"])
  func replay(target name: String) {
    let target = Self.target(named: name)
    var inputs = 0
    for folder in ["Corpus", "Regressions"] {
      let path = Self.fuzzDirectory.appendingPathComponent(folder).appendingPathComponent(name).path
      inputs += FuzzReplay.run([path], target)
    }
    #expect(inputs > 0, "no inputs for \(name)")
  }
}
