import Foundation
import Testing

@testable import LogStore

/// A table is its name's UTF-8 bytes: two names that `String`'s `==` calls equal (Unicode
/// canonical equivalence) but whose bytes differ are two tables, as they are to SQLite, in
/// memory, in every file the store writes, and through every way an open reads it. (Keyed by
/// `String`, the directory made them one table while the log kept both spellings, and a
/// compaction lost the items of one.)
@Suite("Table names are their bytes")
struct TableNameBytesTests {
  /// Each pair equal as `String`s, different as bytes; short names (stored in the string
  /// itself) and long ones.
  static let pairs: [(String, String)] = [
    // é precomposed (NFC) and decomposed (NFD).
    ("\u{E9}", "e\u{301}"),
    // K and KELVIN SIGN.
    ("K", "\u{212A}"),
    // Å and ANGSTROM SIGN.
    ("\u{C5}", "\u{212B}"),
    (
      "caf\u{E9}: a name longer than fifteen bytes", "cafe\u{301}: a name longer than fifteen bytes"
    ),
  ]

  static let hour: Int64 = 3_600_000_000

  /// `names` as their bytes, in the order the store lists tables (by their bytes).
  static func sortedBytes(_ names: [String]) -> [[UInt8]] {
    names.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
  }

  @Test("the pairs are equal as strings and different as bytes")
  func pairsAreEquivalent() {
    for (first, second) in Self.pairs {
      #expect(first == second)
      #expect(Set([first, second]).count == 1)
      #expect(Array(first.utf8) != Array(second.utf8))
      #expect(TableName(first) != TableName(second))
      #expect(Set([TableName(first), TableName(second), TableName(first)]).count == 2)
    }
  }

  @Test(
    "names equal as strings but not as bytes are two tables: each its own items, counts, lifetime, deletes, clear and drop; both listed, in byte order",
    arguments: [0, 12])
  func twoTables(otherTables: Int) throws {
    let directory = TemporaryDirectory()
    let store = try LogStore(
      path: directory.appending("store"), options: .init(compaction: .manual))
    defer { try? store.close() }
    // Beyond 8 tables the directory finds a table by its hash, not in a short list.
    let others = (0..<otherTables).map { "other\($0)" }
    for name in others { try store.createTable(name) }
    for (first, second) in Self.pairs {
      try store.createTable(first)
      #expect(try !store.tableExists(second))
      #expect(throws: LogStoreError.self) { try store.count(in: second) }
      try store.createTable(second, defaultLifetime: Self.hour)
      #expect(try store.lifetime(of: first) == 0)
      #expect(try store.lifetime(of: second) == Self.hour)
      try store.put("first".bytes, forKey: "shared".bytes, in: first)
      try store.put("second".bytes, forKey: "shared".bytes, in: second)
      try store.put("1".bytes, forKey: "p/first".bytes, in: first)
      try store.put("2".bytes, forKey: "p/second".bytes, in: second)
    }
    let names = Self.pairs.flatMap { [$0.0, $0.1] } + others
    #expect(try store.tableNames().map { Array($0.utf8) } == Self.sortedBytes(names))
    #expect(try store.statistics().tables == names.count)
    #expect(try store.statistics().liveItems == 4 * Self.pairs.count)
    for (first, second) in Self.pairs {
      #expect(try store.value(forKey: "shared".bytes, in: first) == "first".bytes)
      #expect(try store.value(forKey: "shared".bytes, in: second) == "second".bytes)
      #expect(try store.keys(in: first) == ["p/first".bytes, "shared".bytes])
      #expect(try store.keys(in: second) == ["p/second".bytes, "shared".bytes])
      #expect(try store.count(in: first) == 2)
      #expect(try store.count(in: second) == 2)
      // Each table's puts get its own default lifetime.
      #expect(try store.entry(forKey: "shared".bytes, in: first)?.expires == nil)
      #expect(try store.entry(forKey: "shared".bytes, in: second)?.expires != nil)
    }
    // Each change of one table leaves the other as it was.
    for (first, second) in Self.pairs {
      try store.delete(key: "shared".bytes, in: first)
      #expect(try store.value(forKey: "shared".bytes, in: second) == "second".bytes)
      try store.deletePrefix("p/".bytes, in: second)
      #expect(try store.keys(in: first) == ["p/first".bytes])
      try store.put("again".bytes, forKey: "shared".bytes, in: first)
      try store.clearTable(second)
      #expect(try store.count(in: first) == 2)
      #expect(try store.count(in: second) == 0)
      try store.put("back".bytes, forKey: "k".bytes, in: second)
      try store.dropTable(first)
      #expect(try !store.tableExists(first))
      #expect(try store.tableExists(second))
      #expect(try store.value(forKey: "k".bytes, in: second) == "back".bytes)
      #expect(try store.lifetime(of: second) == Self.hour)
      try store.createTable(first)
      #expect(try store.count(in: first) == 0)
      #expect(try store.count(in: second) == 1)
    }
    #expect(try store.tableNames().map { Array($0.utf8) } == Self.sortedBytes(names))
  }

  @Test(
    "a batch that creates, writes to and drops tables of one spelling leaves the other spelling's table alone"
  )
  func batches() throws {
    let directory = TemporaryDirectory()
    let store = try LogStore(
      path: directory.appending("store"), options: .init(compaction: .manual))
    defer { try? store.close() }
    for (first, second) in Self.pairs {
      try store.createTable(first)
      try store.put("first".bytes, forKey: "k".bytes, in: first)
      var creation = WriteBatch()
      creation.createTable(second)
      creation.put("second".bytes, forKey: "k".bytes, in: second)
      try store.write(creation)
      #expect(try store.value(forKey: "k".bytes, in: first) == "first".bytes)
      #expect(try store.value(forKey: "k".bytes, in: second) == "second".bytes)
      // The batch's own drop of one spelling does not hide the other from its later puts.
      var drop = WriteBatch()
      drop.dropTable(first)
      drop.put("later".bytes, forKey: "k2".bytes, in: second)
      try store.write(drop)
      #expect(try !store.tableExists(first))
      #expect(try store.keys(in: second) == ["k".bytes, "k2".bytes])
    }
  }

  /// Options under which a few hundred items fill several segments, and each compaction and
  /// close writes what the next open reads first: index files and changes files, or (without
  /// index files) hint files.
  static func options(indexFiles: Bool, readOnly: Bool = false) -> LogStore.Options {
    var options = LogStore.Options(
      readOnly: readOnly, corruption: .fail, compaction: .manual, maxSegmentSize: 16 << 10,
      indexFiles: indexFiles)
    options.indexFileMinimumLiveBytes = 0
    options.activeHintMinimumBytes = 0
    return options
  }

  /// Writes round `round` to every table of every pair (creating them in round 0), the two
  /// spellings' puts in turn, with overwrites of the same keys, deletes in one spelling only
  /// and a prefix delete in the other, and records what the store then holds in `expected`.
  static func write(
    _ store: LogStore, round: Int, keys: Int, into expected: inout [[UInt8]: [[UInt8]: [UInt8]]]
  ) throws {
    for (pair, (first, second)) in pairs.enumerated() {
      if round == 0 {
        try store.createTable(first)
        try store.createTable(second, defaultLifetime: 100 * 86_400 * 1_000_000)
      }
      for index in 0..<keys {
        for (side, name) in [first, second].enumerated() {
          let value = "pair \(pair) side \(side) round \(round) item \(index)".bytes
          try store.put(value, forKey: "key \(index)".bytes, in: name)
          expected[name.bytes, default: [:]]["key \(index)".bytes] = value
        }
      }
      for index in stride(from: round, to: keys, by: 7) {
        try store.delete(key: "key \(index)".bytes, in: first)
        expected[first.bytes]!["key \(index)".bytes] = nil
      }
      try store.deletePrefix("key 1\(round)".bytes, in: second)
      expected[second.bytes] = expected[second.bytes]!.filter {
        !$0.key.starts(with: "key 1\(round)".bytes)
      }
    }
  }

  /// Opens the store at `path` read-only, refusing damage, and checks it holds `expected`;
  /// returns how the open read it.
  static func expectOpen(
    _ path: String, indexFiles: Bool, holds expected: [[UInt8]: [[UInt8]: [UInt8]]],
    sourceLocation: SourceLocation = #_sourceLocation
  ) throws -> OpenReport {
    let store = try LogStore(path: path, options: options(indexFiles: indexFiles, readOnly: true))
    defer { try? store.close() }
    #expect(try store.tablesByBytes() == expected, sourceLocation: sourceLocation)
    for (name, items) in expected {
      let table = String(decoding: name, as: UTF8.self)
      #expect(try store.count(in: table) == items.count, sourceLocation: sourceLocation)
      for (key, value) in items.prefix(20) {
        #expect(try store.value(forKey: key, in: table) == value, sourceLocation: sourceLocation)
      }
    }
    #expect(
      try store.statistics().liveItems == expected.values.reduce(0) { $0 + $1.count },
      sourceLocation: sourceLocation)
    #expect(try LogStore.verify(path: path).isClean, sourceLocation: sourceLocation)
    return store.openReport
  }

  @Test(
    "both spellings' items survive compactions and every way an open reads the store: an index file (its tables made on first use), a changes file over it, the log after it; verify finds nothing"
  )
  func throughIndexFiles() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    var expected: [[UInt8]: [[UInt8]: [UInt8]]] = [:]
    let store = try LogStore(path: path, options: Self.options(indexFiles: true))
    try Self.write(store, round: 0, keys: 120, into: &expected)
    #expect(try store.statistics().segments > 2)
    #expect(try store.tablesByBytes() == expected)
    try store.compact()
    #expect(try store.tablesByBytes() == expected)
    try store.close()

    let fromIndex = try Self.expectOpen(path, indexFiles: true, holds: expected)
    #expect(fromIndex.indexFile != nil)
    #expect(fromIndex.scannedRecords == 0)
    #expect(fromIndex.hintEntries == 0)

    // Written over the index file: the close writes the changes since in a changes file.
    let changing = try LogStore(path: path, options: Self.options(indexFiles: true))
    try Self.write(changing, round: 1, keys: 15, into: &expected)
    try changing.close()
    let fromChanges = try Self.expectOpen(path, indexFiles: true, holds: expected)
    #expect(fromChanges.usedChangesFile)
    #expect(fromChanges.scannedRecords == 0)

    // Without the changes file, the log after the index file is read over it.
    let changes = try #require(
      try FileManager.default.contentsOfDirectory(atPath: path).first {
        $0.hasSuffix(".changes")
      })
    try FileManager.default.removeItem(atPath: path + "/" + changes)
    let fromLog = try Self.expectOpen(path, indexFiles: true, holds: expected)
    #expect(fromLog.indexFile != nil)
    #expect(!fromLog.usedChangesFile)
    #expect(fromLog.scannedRecords + fromLog.hintEntries > 0)

    // A compaction of a store opened from its index file lists the file's tables.
    let compacting = try LogStore(path: path, options: Self.options(indexFiles: true))
    #expect(compacting.openReport.indexFile != nil)
    try compacting.compact()
    #expect(try compacting.tablesByBytes() == expected)
    try compacting.close()
    let compacted = try Self.expectOpen(path, indexFiles: true, holds: expected)
    #expect(compacted.indexFile != nil)
    #expect(compacted.scannedRecords == 0)
  }

  @Test(
    "both spellings' items survive compactions and every way an open reads a store without index files: hint files, and every segment scanned; verify finds nothing"
  )
  func throughHintsAndScans() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    var expected: [[UInt8]: [[UInt8]: [UInt8]]] = [:]
    let store = try LogStore(path: path, options: Self.options(indexFiles: false))
    try Self.write(store, round: 0, keys: 120, into: &expected)
    try store.compact()
    #expect(try store.tablesByBytes() == expected)
    // Written after the compaction: the active segment, with the hint a close writes.
    try Self.write(store, round: 1, keys: 15, into: &expected)
    try store.close()

    let names = try FileManager.default.contentsOfDirectory(atPath: path)
    #expect(!names.contains { $0.hasSuffix(".index") })
    let fromHints = try Self.expectOpen(path, indexFiles: false, holds: expected)
    #expect(fromHints.hintEntries > 0)
    #expect(fromHints.scannedRecords == 0)

    for name in names where name.hasSuffix(".hint") {
      try FileManager.default.removeItem(atPath: path + "/" + name)
    }
    let scanned = try Self.expectOpen(path, indexFiles: false, holds: expected)
    #expect(scanned.hintEntries == 0)
    #expect(scanned.scannedRecords > 0)

    // Compacted again from the scanned store, and read through the new hint files.
    let compacting = try LogStore(path: path, options: Self.options(indexFiles: false))
    try compacting.compact()
    #expect(try compacting.tablesByBytes() == expected)
    try compacting.close()
    let again = try Self.expectOpen(path, indexFiles: false, holds: expected)
    #expect(again.hintEntries > 0)

    // `recover` copies each table by its name: both, each whole.
    let report = try LogStore.recover(path: path)
    #expect(report.tables == expected.count)
    #expect(report.items == expected.values.reduce(0) { $0 + $1.count })
    _ = try Self.expectOpen(path, indexFiles: false, holds: expected)
  }

  @Test(
    "records whose table name is not well-formed UTF-8 (no writer makes one: names are strings) read as the table its repair names, scanned, through an index file and through hint files, and compactions keep them"
  )
  func illFormedNameReadByItsRepair() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let store = try LogStore(path: path, options: .init(compaction: .manual, indexFiles: false))
    try store.createTable("t")
    try store.close()
    // The store's one segment, its records replaced by a table's creation and a put that
    // name it by the bytes FF 62, which decode (repaired) as "\u{FFFD}b", and another table's.
    let segment = try #require(try segmentFiles(in: path).first)
    let header = try fileBytes(segment).withUnsafeBytes { try SegmentHeader.decode($0) }
    var bytes = Array(try fileBytes(segment)[..<SegmentHeader.size])
    var sequence = header.baseSequence
    func append(_ kind: RecordKind, _ table: [UInt8], key: String = "", value: String = "") {
      let (key, value) = (Array(key.utf8), Array(value.utf8))
      var record = [UInt8](
        repeating: 0,
        count: RecordLayout.length(table: table.count, key: key.count, value: value.count))
      table.withUnsafeBytes { table in
        key.withUnsafeBytes { key in
          value.withUnsafeBytes { value in
            record.withUnsafeMutableBytes {
              RecordCodec.encode(
                kind: kind, sequence: sequence, timestamp: 0, table: table, key: key,
                value: value, salt: header.salt, into: $0)
            }
          }
        }
      }
      bytes += record
      sequence += 1
    }
    // Another table's records between, so that the last put does not find its table as the
    // last one named: it finds it by the name's repair (else it would make the table anew,
    // without the first put's key).
    let illFormed: [UInt8] = [0xFF, 0x62]
    append(.createTable, illFormed)
    append(.put, illFormed, key: "a", value: "1")
    append(.createTable, Array("x".utf8))
    append(.put, Array("x".utf8), key: "k", value: "x")
    append(.put, illFormed, key: "b", value: "2")
    var mark = [UInt8](repeating: 0, count: RecordLayout.syncMarkLength)
    mark.withUnsafeMutableBytes {
      RecordCodec.encodeSyncMark(
        sequence: sequence - 1, timestamp: 0, syncedEnd: bytes.count,
        salt: header.salt, into: $0)
    }
    try writeFile(segment, bytes + mark)
    for name in try FileManager.default.contentsOfDirectory(atPath: path)
    where !name.hasSuffix(".log") && name != "MANIFEST" && name != "LOCK" {
      try FileManager.default.removeItem(atPath: path + "/" + name)
    }

    let expected: [[UInt8]: [[UInt8]: [UInt8]]] = [
      "x".bytes: ["k".bytes: "x".bytes],
      "\u{FFFD}b".bytes: ["a".bytes: "1".bytes, "b".bytes: "2".bytes],
    ]
    let scanned = try Self.expectOpen(path, indexFiles: false, holds: expected)
    #expect(scanned.scannedRecords > 0)
    // Compacted: the records are copied as they are, and read through the index file the
    // compaction writes (its table named by the repair), then, compacted again without index
    // files, through the outputs' hint files; `verify` finds nothing each time.
    let writer = try LogStore(path: path, options: Self.options(indexFiles: true))
    try writer.compact()
    #expect(try writer.tablesByBytes() == expected)
    try writer.close()
    let throughIndex = try Self.expectOpen(path, indexFiles: true, holds: expected)
    #expect(throughIndex.indexFile != nil)
    let compacting = try LogStore(path: path, options: Self.options(indexFiles: false))
    try compacting.compact()
    try compacting.close()
    let throughHints = try Self.expectOpen(path, indexFiles: false, holds: expected)
    #expect(throughHints.hintEntries > 0)
  }
}
