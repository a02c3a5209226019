import Testing

@testable import LogStore
@testable import LogStoreTesting

/// `verify` on the simulated file system: stores it cannot read, files of kinds it must name,
/// and files that change or go while it reads them.
@Suite("Verify, on files that change under it")
struct VerificationTests {
  private static let path = "/store"

  private func options(_ fileSystem: SimulatedFileSystem) -> LogStore.Options {
    var options = LogStore.Options(compaction: .manual, maxSegmentSize: 4096)
    options.fileSystem = fileSystem
    return options
  }

  /// Every record of ``makeStore(_:)`` but the table's creation: a 4-byte key, a 48-byte value.
  private static let recordLength = RecordLayout.length(table: 1, key: 4, value: 48)

  /// A store of 120 puts over 30 keys in 4 KiB segments, left open for writing.
  private func makeStore(_ fileSystem: SimulatedFileSystem) throws -> LogStore {
    let store = try LogStore(path: Self.path, options: options(fileSystem))
    try store.createTable("t")
    for index in 0..<120 {
      let value = [UInt8](repeating: 0x61 + UInt8(index % 26), count: 48)
      try store.put(value, forKey: "k\(100 + index % 30)".bytes, in: "t")
    }
    return store
  }

  private func segments(_ fileSystem: SimulatedFileSystem) -> [String] {
    fileSystem.files.keys.filter { $0.hasSuffix(".log") }.sorted()
  }

  @Test("verify and an open's scan count records alike: a batch as its members")
  func recordCounts() throws {
    let fileSystem = SimulatedFileSystem()
    var options = options(fileSystem)
    options.indexFiles = false
    let store = try LogStore(path: Self.path, options: options)
    try store.createTable("t")
    try store.put([1], forKey: "a".bytes, in: "t")
    var batch = WriteBatch()
    batch.put([2], forKey: "b".bytes, in: "t")
    batch.put([3], forKey: "c".bytes, in: "t")
    batch.delete(key: "a".bytes, in: "t")
    try store.write(batch)
    try store.close()
    let report = try LogStore.verify(path: Self.path, fileSystem: fileSystem)
    #expect(report.records == 5)
    let reopened = try LogStore(path: Self.path, options: options)
    defer { try? reopened.close() }
    #expect(reopened.openReport.scannedRecords == report.records)
  }

  @Test("verify of a path with no store throws storeNotFound")
  func missingStore() {
    let error = #expect(throws: LogStoreError.self) {
      try LogStore.verify(path: "/nothing", fileSystem: SimulatedFileSystem())
    }
    #expect(error?.code == .storeNotFound)
  }

  @Test("an unfinished manifest replacement is a note; a segment of a newer version a problem")
  func manifestTemporaryAndNewerVersion() throws {
    let writer = SimulatedFileSystem()
    try makeStore(writer).close()
    var files = writer.files
    files[Self.path + "/" + Manifest.temporaryName] = [1, 2, 3]
    let first = try #require(segments(writer).first)
    var bytes = files[first]!
    bytes[8] = 9
    let checksum = CRC32C.mask(CRC32C.checksum(Array(bytes[0..<44])))
    withUnsafeBytes(of: checksum.littleEndian) { bytes.replaceSubrange(44..<48, with: $0) }
    files[first] = bytes
    let report = try LogStore.verify(path: Self.path, fileSystem: SimulatedFileSystem(files: files))
    #expect(
      report.notes.contains {
        $0.file == Manifest.temporaryName && $0.message.contains("unfinished replacement")
      })
    let name = String(first.dropFirst(Self.path.count + 1))
    #expect(
      report.problems.contains {
        $0.file == name && $0.offset == 8 && $0.message.contains("version 9 is newer")
      }, "\(report.problems)")
  }

  @Test("a segment a compaction deletes while verify reads the store: verify looks again")
  func segmentGoneMeanwhile() throws {
    let fileSystem = SimulatedFileSystem()
    let store = try makeStore(fileSystem)
    let expected = try LogStore.verify(path: Self.path, fileSystem: fileSystem)
    let compacted = OnceFlag()
    let failure = Guarded<LogStoreError?>(nil)
    fileSystem.callHook = { call in
      guard call.operation == "open", call.path.hasSuffix(".log"), compacted.set() else { return }
      do throws(LogStoreError) { try store.compact() } catch { failure.withLock { $0 = error } }
    }
    let report = try LogStore.verify(path: Self.path, fileSystem: fileSystem)
    fileSystem.callHook = nil
    #expect(compacted.isSet)
    #expect(failure.withLock { $0 } == nil)
    #expect(report.isClean, "\(report.problems)")
    #expect(report.segments < expected.segments)
    try store.close()
  }

  @Test("an index file a writer replaces while verify reads the store is no problem")
  func indexFileReplacedMeanwhile() throws {
    let fileSystem = SimulatedFileSystem()
    let store = try makeStore(fileSystem)
    try store.checkpoint()
    try store.put([1], forKey: "later".bytes, in: "t")
    #expect(try LogStore.verify(path: Self.path, fileSystem: fileSystem).indexFiles == 1)
    let replaced = OnceFlag()
    let failure = Guarded<LogStoreError?>(nil)
    fileSystem.callHook = { call in
      guard call.operation == "open", call.path.hasSuffix(".index"), replaced.set() else { return }
      do throws(LogStoreError) { try store.checkpoint() } catch { failure.withLock { $0 = error } }
    }
    let report = try LogStore.verify(path: Self.path, fileSystem: fileSystem)
    fileSystem.callHook = nil
    #expect(replaced.isSet)
    #expect(failure.withLock { $0 } == nil)
    #expect(report.isClean, "\(report.problems)")
    #expect(report.indexFiles == 0)
    try store.close()
  }

  @Test("a hint file a writer's close replaces while verify reads the store is no problem")
  func hintReplacedMeanwhile() throws {
    let fileSystem = SimulatedFileSystem()
    var options = options(fileSystem)
    options.maxSegmentSize = 64 << 10
    options.activeHintMinimumBytes = 0
    let first = try LogStore(path: Self.path, options: options)
    try first.createTable("t")
    for index in 0..<20 { try first.put("v\(index)".bytes, forKey: "a\(index)".bytes, in: "t") }
    try first.close()
    // A writer that appends to the segment whose hint the close wrote, and closes as verify
    // opens that hint: its close writes a new one, listing what it appended.
    let writer = try LogStore(path: Self.path, options: options)
    try writer.put("w".bytes, forKey: "b".bytes, in: "t")
    let closed = OnceFlag()
    let failure = Guarded<LogStoreError?>(nil)
    fileSystem.callHook = { call in
      guard call.operation == "open", call.path.hasSuffix(".hint"), closed.set() else { return }
      do throws(LogStoreError) {
        for index in 0..<20 {
          try writer.put("x\(index)".bytes, forKey: "c\(index)".bytes, in: "t")
        }
        try writer.close()
      } catch { failure.withLock { $0 = error } }
    }
    let report = try LogStore.verify(path: Self.path, fileSystem: fileSystem)
    fileSystem.callHook = nil
    #expect(closed.isSet)
    #expect(failure.withLock { $0 } == nil)
    #expect(report.hintFiles == 1)
    #expect(report.isClean, "\(report.problems)")
    #expect(try LogStore.verify(path: Self.path, fileSystem: fileSystem).isClean)
  }

  /// Flips a byte in the middle of the `record`-th record of a segment past the first.
  private static func damage(_ bytes: inout [UInt8], record: Int) {
    bytes[SegmentHeader.size + record * recordLength + recordLength / 2] ^= 0x20
  }

  @Test("damage in the last segment is read again until two reads agree, as a writer's would")
  func lastSegmentReadAgain() throws {
    let writer = SimulatedFileSystem()
    try makeStore(writer).close()
    let last = try #require(segments(writer).last)
    var files = writer.files
    Self.damage(&files[last]!, record: 1)
    let damaged = files[last]!
    let fileSystem = SimulatedFileSystem(files: files)
    let steady = try LogStore.verify(path: Self.path, fileSystem: fileSystem)
    #expect(steady.problems.count == 1)
    // A writer finishing one record as another looks damaged: the first two reads differ, and
    // the report is the third's, which agrees with the second.
    let reads = Guarded(0)
    fileSystem.callHook = { call in
      guard call.operation == "pread", call.path == last else { return }
      guard
        reads.withLock({
          $0 += 1
          return $0
        }) == 2
      else { return }
      var bytes = damaged
      Self.damage(&bytes, record: 1)
      Self.damage(&bytes, record: 3)
      let handle = try! fileSystem.openFile(last, mode: .init(writable: true, create: false))
      bytes.withUnsafeBytes { try! handle.write($0, at: 0) }
      handle.close()
    }
    let moving = try LogStore.verify(path: Self.path, fileSystem: fileSystem)
    fileSystem.callHook = nil
    #expect(reads.withLock { $0 } >= 3)
    #expect(moving.problems.count == 1)
    #expect(moving.problems.first?.offset != steady.problems.first?.offset)
  }
}
