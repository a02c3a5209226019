import Foundation
import Testing

@testable import LogStore

@Suite("Hint files")
struct HintFileTests {
  /// A compacted store of 2,000 keys in several segments, closed.
  private func compactedStore(_ directory: TemporaryDirectory) throws -> (
    String, [String: [String: String]]
  ) {
    let path = directory.appending("store")
    let store = try LogStore(
      path: path, options: .init(compaction: .manual, maxSegmentSize: 32 << 10))
    try store.createTable("t")
    for round in 0..<2 {
      for index in 0..<2_000 {
        try store.put(
          Array("value \(round) \(index)".utf8), forKey: Array("key\(index)".utf8), in: "t")
      }
    }
    try store.compact()
    let expected = try store.snapshot()
    try store.close()
    return (path, expected)
  }

  @Test("opening a compacted store reads its hint files instead of scanning the data")
  func openUsesHints() throws {
    let directory = TemporaryDirectory()
    let (path, expected) = try compactedStore(directory)
    let hints = try FileManager.default.contentsOfDirectory(atPath: path).filter {
      $0.hasSuffix(".hint")
    }
    #expect(hints.count >= 2)
    let store = try LogStore(path: path)
    #expect(try store.snapshot() == expected)
    let report = store.openReport
    #expect(report.hintedSegments == hints.count)
    #expect(report.hintEntries == 2_001)  // every key and the table's creation
    #expect(report.scannedRecords == 0)
  }

  @Test("a damaged hint file is ignored: the segment is scanned and the data is the same")
  func damagedHint() throws {
    let directory = TemporaryDirectory()
    let (path, expected) = try compactedStore(directory)
    let hints = try FileManager.default.contentsOfDirectory(atPath: path)
      .filter { $0.hasSuffix(".hint") }.sorted().map { path + "/" + $0 }
    let original = try fileBytes(hints[0])
    for position in stride(from: 0, to: original.count, by: max(1, original.count / 97)) {
      var damaged = original
      damaged[position] ^= 0x20
      try writeFile(hints[0], damaged)
      let store = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
      #expect(try store.snapshot() == expected, "byte \(position)")
      #expect(store.openReport.hintedSegments == hints.count - 1)
      #expect(store.openReport.scannedRecords > 0)
    }
    // Another segment's hint under this one's name describes the wrong file: ignored too.
    try writeFile(hints[0], try fileBytes(hints[1]))
    let store = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(try store.snapshot() == expected)
    #expect(store.openReport.hintedSegments == hints.count - 1)
  }

  @Test("a hint file whose segment is gone is removed at open")
  func orphanHint() throws {
    let directory = TemporaryDirectory()
    let (path, expected) = try compactedStore(directory)
    let orphan = path + "/" + StoreFileName.hint(4000)
    try writeFile(orphan, [1, 2, 3])
    let store = try LogStore(path: path)
    #expect(try store.snapshot() == expected)
    #expect(!FileManager.default.fileExists(atPath: orphan))
  }
}
