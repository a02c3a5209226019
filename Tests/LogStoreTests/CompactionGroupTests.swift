import Foundation
import Testing

@testable import LogStore

/// The rule for a compaction's outputs (docs/FORMAT.md, "Interrupted compaction") as both of
/// its readers apply it: what `verify` says the next open removes is what that open removes.
@Suite("Compaction groups")
struct CompactionGroupTests {
  /// Three rounds of puts over 150 keys of table t, which fill many segments of 4 KiB.
  private func fill(_ store: LogStore) throws {
    try store.createTable("t")
    for round in 0..<3 {
      for index in 0..<150 {
        let value = "round \(round) item \(index) " + String(repeating: "x", count: 40)
        try store.put(value.bytes, forKey: "k\(index)".bytes, in: "t")
      }
    }
  }

  /// A compacted store at `path`, with the data it holds and the names of the compaction's
  /// outputs (at least two), in order.
  private func compactedStore(at path: String) throws -> (
    expected: [String: [String: String]], outputs: [String]
  ) {
    let options = LogStore.Options(compaction: .manual, maxSegmentSize: 4096)
    let store = try LogStore(path: path, options: options)
    try fill(store)
    try store.compact()
    let expected = try store.snapshot()
    try store.close()
    let outputs = try segmentFiles(in: path).filter { try header(of: $0).compaction != nil }
    try #require(outputs.count >= 2)
    return (expected, outputs.map { String($0.split(separator: "/").last!) })
  }

  private func header(of file: String) throws -> SegmentHeader {
    try fileBytes(file).withUnsafeBytes { try SegmentHeader.decode($0) }
  }

  /// Rewrites the header of segment `file` with another compaction mark, checksum and all.
  private func remark(_ file: String, _ change: (inout SegmentHeader.CompactionMark) -> Void)
    throws
  {
    var bytes = try fileBytes(file)
    var header = try header(of: file)
    change(&header.compaction!)
    bytes.replaceSubrange(0..<SegmentHeader.size, with: header.encoded())
    try writeFile(file, bytes)
  }

  /// Asserts that the segments `verify` reports as "removed at the next open" are exactly the
  /// ones a writer's open of the store at `path` removes.
  private func expectVerifyPredictsOpen(_ path: String) throws {
    let report = try LogStore.verify(path: path)
    let announced = Set(
      report.notes.filter {
        $0.file.hasSuffix(".log") && $0.message.hasSuffix("removed at the next open")
      }.map(\.file))
    let before = Set(try segmentFiles(in: path))
    try LogStore(path: path).close()
    let removed = before.subtracting(try segmentFiles(in: path)).map {
      String($0.split(separator: "/").last!)
    }
    #expect(Set(removed) == announced, "verify's notes: \(report.notes)")
  }

  @Test("outputs of a finished compaction missing one of them are kept, and verify says so")
  func missingOutputAfterInputsRemoved() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let (_, outputs) = try compactedStore(at: path)
    try FileManager.default.removeItem(atPath: path + "/" + outputs[1])
    let report = try LogStore.verify(path: path)
    let kept = report.notes.filter { $0.message.contains("kept at the next open") }.map(\.file)
    #expect(kept == outputs.filter { $0 != outputs[1] })
    try expectVerifyPredictsOpen(path)
    for name in outputs where name != outputs[1] {
      #expect(FileManager.default.fileExists(atPath: path + "/" + name))
    }
  }

  @Test("an output that disagrees on the number of outputs does not make a group unfinished")
  func outputCountDisagreement() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let (expected, outputs) = try compactedStore(at: path)
    // The first output now says the compaction wrote only itself: the group is finished by it
    // alone, and the outputs that name another count are not counted towards it.
    try remark(path + "/" + outputs[0]) { $0.outputCount = 1 }
    try expectVerifyPredictsOpen(path)
    let reopened = try LogStore(path: path, options: .init(corruption: .fail))
    #expect(try reopened.snapshot() == expected)
    try reopened.close()
  }

  @Test(
    "a finished compaction's index file beside inputs a crash left: the open uses it, verify checks it"
  )
  func indexFileBesideLeftInputs() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    var options = LogStore.Options(compaction: .manual, maxSegmentSize: 4096)
    options.indexFileMinimumLiveBytes = 0
    let store = try LogStore(path: path, options: options)
    try fill(store)
    // The inputs as the compaction reads them: sealed.
    var inputs: [String: [UInt8]] = [:]
    try store.compact { _, _ in
      guard inputs.isEmpty else { return }
      for file in try! segmentFiles(in: path) { inputs[file] = try! fileBytes(file) }
    }
    let expected = try store.snapshot()
    try store.close()
    let indexFiles = try FileManager.default.contentsOfDirectory(atPath: path).filter {
      $0.hasSuffix(".index")
    }
    let name = try #require(indexFiles.first)
    #expect(indexFiles.count == 1)
    // A crash after the compaction's manifest and before the removal of its inputs.
    for (file, bytes) in inputs where !FileManager.default.fileExists(atPath: file) {
      try writeFile(file, bytes)
    }
    let report = try LogStore.verify(path: path)
    #expect(report.isClean, "\(report.problems)")
    #expect(report.indexFiles == 1)
    #expect(!report.notes.contains { $0.file == name }, "\(report.notes)")
    let reader = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(reader.openReport.indexFile.map(StoreFileName.index) == name)
    #expect(reader.openReport.scannedRecords == 0)
    #expect(try reader.snapshot() == expected)
    try reader.close()
    // So damage in it is found by verify, and the open reads the log instead.
    var bytes = IndexFileBytes(try fileBytes(path + "/" + name))
    let table = try #require(bytes.tableRecord("t"))
    bytes.bytes[bytes.entry(1, ofTable: table) + 2] ^= 0x40
    try writeFile(path + "/" + name, bytes.bytes)
    let damaged = try LogStore.verify(path: path)
    #expect(
      damaged.problems.map(\.description) == [
        "\(name): a part of table \"t\" is damaged; the log is read instead"
      ])
    let reopened = try LogStore(path: path, options: .init(corruption: .fail))
    #expect(try reopened.snapshot() == expected)
    try reopened.close()
  }

  @Test("an interrupted compaction: verify names the outputs the open removes")
  func interruptedCompaction() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let (_, outputs) = try compactedStore(at: path)
    // An input below the outputs, as if the compaction had not yet removed it: a segment
    // marked as an output of an older, unfinished compaction with no inputs of its own.
    let input = path + "/" + StoreFileName.segment(1)
    try FileManager.default.copyItem(atPath: path + "/" + outputs[0], toPath: input)
    try FileManager.default.removeItem(atPath: path + "/" + outputs[1])
    var bytes = try fileBytes(input)
    var header = try header(of: input)
    header.fileNumber = 1
    header.compaction = nil
    bytes.replaceSubrange(0..<SegmentHeader.size, with: header.encoded())
    try writeFile(input, bytes)
    let report = try LogStore.verify(path: path)
    let unfinished = report.notes.filter { $0.message.contains("unfinished compaction") }
    #expect(unfinished.map(\.file) == outputs.filter { $0 != outputs[1] })
    try expectVerifyPredictsOpen(path)
  }
}
