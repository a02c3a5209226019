import Testing

@testable import LogStore
@testable import LogStoreTesting

/// What readers get for tables that are not there, and for records damaged on disk after the
/// store was opened (the checks at open cannot have seen that damage).
@Suite("Reads of missing tables and of records damaged after open")
struct IndexViewTests {
  private static let path = "/store"

  private func options(_ fileSystem: SimulatedFileSystem, verify: Bool = true) -> LogStore.Options {
    var options = LogStore.Options(
      compaction: .manual, maxSegmentSize: 4096, verifyChecksumsOnRead: verify)
    options.fileSystem = fileSystem
    return options
  }

  /// Table "t" with keys k100…k199 (a 40-byte value each), over several 4 KiB segments.
  private func makeStore(_ fileSystem: SimulatedFileSystem, verify: Bool = true) throws -> LogStore
  {
    let store = try LogStore(path: Self.path, options: options(fileSystem, verify: verify))
    try store.createTable("t")
    for number in 100..<200 {
      try store.put(value(number), forKey: "k\(number)".bytes, in: "t")
    }
    return store
  }

  private func value(_ number: Int) -> [UInt8] {
    "value of \(number) ".bytes + [UInt8](repeating: 0x2E, count: 27)
  }

  @Test("every read of a missing table throws tableNotFound; of an impossible name, invalid")
  func missingTables() throws {
    let store = try makeStore(SimulatedFileSystem())
    for (table, code) in [("absent", LogStoreError.Code.tableNotFound), ("", .invalidTableName)] {
      let reads: [(String, () throws(LogStoreError) -> Void)] = [
        (
          "value", { () throws(LogStoreError) in _ = try store.value(forKey: "k".bytes, in: table) }
        ),
        (
          "entry", { () throws(LogStoreError) in _ = try store.entry(forKey: "k".bytes, in: table) }
        ),
        ("keys", { () throws(LogStoreError) in _ = try store.keys(in: table) }),
        ("entries", { () throws(LogStoreError) in _ = try store.entries(in: table) }),
        ("count", { () throws(LogStoreError) in _ = try store.count(in: table) }),
        ("lifetime", { () throws(LogStoreError) in _ = try store.lifetime(of: table) }),
        (
          "forEachEntry",
          { () throws(LogStoreError) in try store.forEachEntry(in: table) { _, _, _ in true } }
        ),
      ]
      for (name, read) in reads {
        let error = #expect(throws: LogStoreError.self, "\(name) of \"\(table)\"") { try read() }
        #expect(error?.code == code, "\(name) of \"\(table)\": \(error?.message ?? "")")
      }
    }
  }

  /// Overwrites, in the file of the first segment, the key `key` with `replacement`.
  private func rewriteKey(
    _ key: String, with replacement: String, in fileSystem: SimulatedFileSystem
  ) throws {
    let path = Self.path + "/" + StoreFileName.segment(1)
    let bytes = try #require(fileSystem.files[path])
    let needle = key.bytes
    let offset = try #require(
      (0...bytes.count - needle.count).first { bytes[$0..<$0 + needle.count].elementsEqual(needle) }
    )
    let handle = try fileSystem.openFile(path, mode: .init(writable: true, create: false))
    defer { handle.close() }
    try replacement.bytes.withUnsafeBytes { try handle.write($0, at: offset) }
  }

  @Test("a key damaged on disk after open is reported as damage, never read as another key")
  func keyDamagedAfterOpen() throws {
    for verify in [true, false] {
      let fileSystem = SimulatedFileSystem()
      let store = try makeStore(fileSystem, verify: verify)
      try rewriteKey("k105", with: "k106", in: fileSystem)
      let error = #expect(throws: LogStoreError.self, "verify \(verify)") {
        try store.value(forKey: "k105".bytes, in: "t")
      }
      #expect(error?.code == .corrupted, "verify \(verify)")
      #expect(try store.value(forKey: "k106".bytes, in: "t") == value(106))
      try store.close()
    }
  }

  @Test("compaction drops a key whose record was damaged after open, and counts it")
  func compactionMeetsDamage() throws {
    let fileSystem = SimulatedFileSystem()
    let store = try makeStore(fileSystem)
    try rewriteKey("k105", with: "k106", in: fileSystem)
    try store.compact()
    #expect(try store.value(forKey: "k105".bytes, in: "t") == nil)
    #expect(try store.statistics().damagedRecords == 1)
    #expect(try store.count(in: "t") == 99)
    for number in 100..<200 where number != 105 {
      #expect(try store.value(forKey: "k\(number)".bytes, in: "t") == value(number))
    }
    try store.close()
    let reopened = try LogStore(path: Self.path, options: options(fileSystem))
    #expect(try reopened.count(in: "t") == 99)
    #expect(try reopened.statistics().damagedRecords == 0)
  }

  @Test("a table whose creation record is damaged still holds the keys put in it")
  func creationRecordDamaged() throws {
    let writer = SimulatedFileSystem()
    try makeStore(writer).close()
    var files = writer.files
    let first = Self.path + "/" + StoreFileName.segment(1)
    // The first record after the header creates the table: flip its last byte.
    let creationLength = RecordLayout.length(table: 1, key: 0, value: 0)
    files[first]![SegmentHeader.size + creationLength - 1] ^= 0x01
    let store = try LogStore(path: Self.path, options: options(SimulatedFileSystem(files: files)))
    #expect(try store.statistics().damagedRecords == 1)
    #expect(try store.tableNames() == ["t"])
    #expect(try store.count(in: "t") == 100)
    #expect(try store.value(forKey: "k150".bytes, in: "t") == value(150))
  }
}
