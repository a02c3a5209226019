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

  @Test(
    "an ordered visit meets a record damaged after open at its place in key order: the items before it, then the damage; at every place of its batches, walking the index file or copied keys, checked or not"
  )
  func orderedVisitMeetsDamage() throws {
    // Keys written in a shuffled order with values of different lengths, so that a batch's
    // records lie apart and their checksums end at different steps.
    var generator = SplitMix64(seed: 23)
    let numbers = Array(100..<200).shuffled(using: &generator)
    func value(_ number: Int) -> [UInt8] {
      "value of \(number) ".bytes + [UInt8](repeating: 0x2E, count: number * 7 % 150)
    }
    let writer = SimulatedFileSystem()
    let store = try LogStore(path: Self.path, options: options(writer))
    try store.createTable("t")
    for number in numbers { try store.put(value(number), forKey: "k\(number)".bytes, in: "t") }
    try store.checkpoint()
    try store.close()
    let expected = (100..<200).map { "k\($0)=" + String(decoding: value($0), as: UTF8.self) }
    // Damaged keys at places 0, 3, 4, 15, 16, 17, 50 and 99 of the walk (a batch is 16).
    for damaged in [100, 103, 104, 115, 116, 117, 150, 199] {
      for (header, verify, walkingTheFile) in [
        (false, true, true), (false, true, false), (false, false, true), (true, false, false),
        (true, true, true),
      ] {
        let label = "k\(damaged), header \(header), verify \(verify), file \(walkingTheFile)"
        let fileSystem = SimulatedFileSystem(files: writer.files)
        let reopened = try LogStore(path: Self.path, options: options(fileSystem, verify: verify))
        if !walkingTheFile {
          // A change to the table: its keys are copied and sorted, then visited.
          try reopened.put(value(200), forKey: "k200".bytes, in: "t")
        }
        // (A table of the index file is made on its first use.)
        #expect(try reopened.count(in: "t") == (walkingTheFile ? 100 : 101))
        #expect(
          try reopened.engine.readIndex { $0.table("t")?.unchangedBase != nil } == walkingTheFile,
          "\(label)")
        // After the open: the damage is the visit's to find. The header's kind made invalid, or
        // the value's last byte changed (which only the checksum sees).
        let (path, keyOffset) = try locate("k\(damaged)", in: fileSystem)
        let offset =
          header
          ? keyOffset - 1 - RecordLayout.headerSize + RecordLayout.kindOffset
          : keyOffset + 4 + value(damaged).count - 1
        let handle = try fileSystem.openFile(path, mode: .init(writable: true, create: false))
        try [UInt8(header ? 0x7F : 0x21)].withUnsafeBytes { try handle.write($0, at: offset) }
        handle.close()
        var visited: [String] = []
        let result = Result { () throws(LogStoreError) in
          try reopened.forEachEntry(in: "t") { key, value, _ in
            visited.append(
              String(decoding: key, as: UTF8.self) + "=" + String(decoding: value, as: UTF8.self))
            return true
          }
        }
        let place = damaged - 100
        if header || verify {
          #expect(throws: LogStoreError.self, "\(label)") { try result.get() }
          #expect((try? result.get()) == nil && visited == Array(expected[..<place]), "\(label)")
          if case .failure(let error) = result { #expect(error.code == .corrupted, "\(label)") }
        } else {
          // Unchecked, the damaged value is read as it is.
          var damagedExpected =
            expected
            + (walkingTheFile ? [] : ["k200=" + String(decoding: value(200), as: UTF8.self)])
          damagedExpected[place] = String(damagedExpected[place].dropLast()) + "!"
          #expect(visited == damagedExpected, "\(label)")
        }
        try reopened.close()
      }
    }
  }

  /// The segment file that holds the key `key`, and the key's offset in it.
  private func locate(_ key: String, in fileSystem: SimulatedFileSystem) throws -> (String, Int) {
    let needle = key.bytes
    for (path, bytes) in fileSystem.files where path.hasSuffix(".log") {
      if let offset = (0...max(bytes.count - needle.count, 0)).first(where: {
        bytes[$0..<$0 + needle.count].elementsEqual(needle)
      }) {
        return (path, offset)
      }
    }
    throw LogStoreError(.corrupted, "no record of \(key)")
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
