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

  /// One entry of a hint file, field by field.
  private func entry(
    kind: UInt8 = RecordKind.put.rawValue, table: String = "t", key: String = "k",
    offset: UInt32 = 48, length: UInt32 = 40, sequence: UInt64 = 1
  ) -> [UInt8] {
    [kind, UInt8(table.utf8.count)] + littleEndianBytes(UInt16(key.utf8.count))
      + littleEndianBytes(offset) + littleEndianBytes(length) + littleEndianBytes(sequence)
      + littleEndianBytes(Int64(1_000)) + Array(table.utf8) + Array(key.utf8)
  }

  /// A hint file for segment 3 (salt 9) with `entries`, both checksums right.
  private func hint(
    version: UInt16 = HintFile.version, count: UInt32, covered: UInt64 = 4096,
    entriesLength: UInt64? = nil, _ entries: [UInt8]
  ) -> [UInt8] {
    var bytes =
      HintFile.magic + littleEndianBytes(version) + [0, 0] + littleEndianBytes(UInt32(3))
      + littleEndianBytes(UInt32(9)) + littleEndianBytes(count) + littleEndianBytes(covered)
      + littleEndianBytes(entriesLength ?? UInt64(entries.count)) + [UInt8](repeating: 0, count: 8)
      + entries
    storeChecksum(&bytes, at: 40, of: 48..<bytes.count)
    storeChecksum(&bytes, at: 44, of: 0..<44)
    return bytes
  }

  /// Why `bytes` are refused as the hint of a segment of 4,096 bytes (by default segment 3,
  /// salt 9, which ``hint(version:count:covered:entriesLength:_:)`` writes); nil if they
  /// decode.
  private func refusal(_ bytes: [UInt8], fileNumber: UInt32 = 3, salt: UInt32 = 9) -> String? {
    let result = bytes.withUnsafeBytes { buffer in
      Result { () throws(HintFile.Invalid) in
        _ = try HintFile.decode(buffer, fileNumber: fileNumber, salt: salt, segmentLength: 4096)
      }
    }
    guard case .failure(let invalid) = result else { return nil }
    return invalid.reason
  }

  @Test("each check of a hint file refuses it with its own reason")
  func refusals() {
    let two = entry() + entry(key: "l", offset: 88, sequence: 2)
    let good = hint(count: 2, two)
    #expect(refusal(good) == nil)
    #expect(
      good.withUnsafeBytes {
        try? HintFile.decode($0, fileNumber: 3, salt: 9, segmentLength: 4096).entries.count
      } == 2)

    var badMagic = good
    badMagic[0] = UInt8(ascii: "X")
    var badHeader = good
    badHeader[10] = 1
    var badEntries = good
    badEntries[good.count - 1] ^= 1
    let cases: [(bytes: [UInt8], reason: String)] = [
      (Array(good.prefix(47)), "shorter than its header"),
      (badMagic, "bad magic"),
      (badHeader, "header checksum mismatch"),
      (hint(version: 3, count: 2, two), "unknown version"),
      (hint(version: 0, count: 2, two), "unknown version"),
      (hint(count: 2, covered: 4097, two), "covers more than the segment holds"),
      (hint(count: 2, covered: 47, two), "covers more than the segment holds"),
      (hint(count: 2, entriesLength: 10, two), "length does not match the file"),
      (badEntries, "entries checksum mismatch"),
      (hint(count: 1, Array(entry().prefix(27))), "entry cut short"),
      (hint(count: 2, two + [1, 2, 3]), "entry cut short"),
      (hint(count: 1, entry(kind: 99)), "malformed entry"),
      (hint(count: 1, entry(kind: RecordKind.batch.rawValue)), "malformed entry"),
      (hint(count: 1, Array(entry(key: "kk").dropLast())), "malformed entry"),
      (hint(count: 1, entry(offset: 47)), "entry points outside the segment"),
      (hint(count: 1, entry(length: 27)), "entry points outside the segment"),
      (hint(count: 1, entry(offset: 4000, length: 97)), "entry points outside the segment"),
      (
        hint(count: 1, entry(sequence: RecordLayout.sequenceLimit)),
        "entry points outside the segment"
      ),
      (hint(count: 1, entry(sequence: 0)), "entry points outside the segment"),
      (
        hint(count: 2, entry(sequence: 5) + entry(key: "l", offset: 88, sequence: 5)),
        "entry points outside the segment"
      ),
      (hint(count: 3, two), "entry count mismatch"),
      (hint(count: 1, two), "entry count mismatch"),
    ]
    for (bytes, reason) in cases {
      #expect(refusal(bytes) == reason)
    }
    #expect(refusal(good, fileNumber: 4) == "describes another segment")
    #expect(refusal(good, salt: 10) == "describes another segment")
  }
}
