import Foundation
import LogStoreTesting
import Testing

@testable import LogStore

/// An open from an index file makes none of the file's tables (``KeyDirectory``): each is made
/// when a call first names it. These tests reach every path that names a table, reading and
/// writing, and what visits all tables (names, counts, checkpoints, compaction), and check each
/// against the store as written.
@Suite("Tables of an index file, made on first use")
struct TablesOnFirstUseTests {
  private static let options = LogStore.Options(compaction: .manual, maxSegmentSize: 64 << 10)
  private static let tableCount = 40

  /// The tables' names; the last is not ASCII.
  private static func name(_ table: Int) -> String {
    "t" + table.zeroPadded(width: 3) + (table == tableCount - 1 ? "-ü" : "")
  }

  /// A store of ``tableCount`` tables of up to 60 keys each (t007 with a default lifetime, so
  /// that its keys expire in an hour; t009 with keys that expire in a day; t010 empty), written in turn, checkpointed and
  /// closed: every table is in the index file. Returns what it holds.
  private func checkpointedStore(at path: String) throws -> [String: [String: String]] {
    let store = try LogStore(path: path, options: Self.options)
    var expected: [String: [String: String]] = [:]
    for table in 0..<Self.tableCount {
      if table == 7 {
        try store.createTable(Self.name(table), defaultLifetime: 3_600_000_000)
      } else {
        try store.createTable(Self.name(table))
      }
      expected[Self.name(table)] = [:]
    }
    for key in 0..<60 {
      for table in 0..<Self.tableCount where table != 10 && key < 20 + table {
        let (name, value) = (Self.name(table), "v\(key)-\(table)")
        let expiry = table == 9 ? store.expiryNow() + 86_400_000_000 : nil
        try store.put(
          Array(value.utf8), forKey: Array("k\(key)".utf8), in: name,
          expiresAt: expiry.map(Timestamp.init(microsecondsSince1970:)))
        expected[name]!["k\(key)"] = value
      }
    }
    try store.checkpoint()
    try store.close()
    return expected
  }

  /// What `directory` judges of each record `live` lists (``KeyDirectory/judge(count:in:listed:judged:)``),
  /// the records' keys read from `segments`; and whether it judged them all.
  private func judge(_ live: LiveRecords, by directory: KeyDirectory, segments: SegmentLookup)
    throws -> (whole: Bool, verdicts: [Bool])
  {
    var verdicts: [Bool] = []
    // Each listed record's key, one after another.
    var keyBytes: [UInt8] = []
    var keyRanges: [Range<Int>] = []
    for item in live.records {
      let record = try #require(
        try segments[item.location.segment]?.record(at: Int(item.location.offset), verify: true))
      keyRanges.append(keyBytes.count..<keyBytes.count + record.key.count)
      keyBytes += record.key
    }
    let whole = keyBytes.withUnsafeBytes { all in
      directory.judge(
        count: live.records.count, in: live,
        listed: { (live.records[$0], UnsafeRawBufferPointer(rebasing: all[keyRanges[$0]])) },
        judged: { _, holds in verdicts.append(holds) })
    }
    return (whole, verdicts)
  }

  /// The tables of `keys`'s index file not made yet.
  private func unmade(_ keys: KeyDirectory) -> Int { keys.tableCount - keys.tables.count }

  private func unmade(_ store: LogStore) -> Int { unmade(store.engine.index.keys) }

  @Test(
    "an open makes only the tables with expiring keys; every call that names a table makes it once, and reads it as written"
  )
  func everyReadMakesItsTable() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let expected = try checkpointedStore(at: path)
    let store = try LogStore(path: path, options: Self.options)
    #expect(store.openReport.indexFile != nil)
    #expect(unmade(store) == Self.tableCount - 2)
    // What counts or lists every table makes none.
    let statistics = try store.statistics()
    #expect(statistics.tables == Self.tableCount)
    #expect(statistics.liveItems == expected.values.reduce(0) { $0 + $1.count })
    #expect(try store.tableNames().sorted() == expected.keys.sorted())
    #expect(try (0..<Self.tableCount).allSatisfy { try store.tableExists(Self.name($0)) })
    #expect(try !store.tableExists("t999"))
    #expect(unmade(store) == Self.tableCount - 2)
    // Each read names a table not made yet, and makes that one alone.
    func read(_ what: String, _ t: String) throws {
      let items = expected[t]!
      switch what {
      case "value":
        #expect(
          try store.value(forKey: Array("k3".utf8), in: t) == items["k3"].map { Array($0.utf8) })
      case "withValue":
        #expect(try store.withValue(forKey: Array("k1".utf8), in: t) { $0.count } != nil)
      case "entry":
        #expect(try store.entry(forKey: Array("k0".utf8), in: t)?.value == Array(items["k0"]!.utf8))
      case "missing key":
        #expect(try store.value(forKey: Array("none".utf8), in: t) == nil)
      case "count":
        #expect(try store.count(in: t) == items.count)
      case "keys":
        #expect(try store.keys(in: t).count == items.count)
      case "keys with a prefix":
        let keys = try store.keys(in: t, withPrefix: Array("k1".utf8))
        #expect(keys.count == items.keys.filter { $0.hasPrefix("k1") }.count)
      case "entries":
        #expect(try store.entries(in: t).count == items.count)
      case "entries with a prefix":
        var seen = 0
        try store.forEachEntry(in: t, withPrefix: Array("k2".utf8)) { _, _, _ in
          seen += 1
          return true
        }
        #expect(seen == items.keys.filter { $0.hasPrefix("k2") }.count)
      default:
        #expect(try store.lifetime(of: t) == 0)
      }
    }
    let reads = [
      "value", "withValue", "entry", "missing key", "count", "keys", "keys with a prefix",
      "entries", "entries with a prefix", "lifetime",
    ]
    for (position, what) in reads.enumerated() {
      let table = Self.name(11 + position)
      try read(what, table)
      #expect(unmade(store) == Self.tableCount - 3 - position, "\(what)")
      // A second read finds it made.
      try read(what, table)
      #expect(unmade(store) == Self.tableCount - 3 - position, "\(what), again")
    }
    #expect(try store.lifetime(of: Self.name(7)) == 3_600_000_000)
    #expect(try store.snapshot() == expected)
    #expect(unmade(store) == 0)
    try store.close()
  }

  @Test("puts, deletes, prefix deletes, clears, drops and creations of tables not made yet")
  func everyWriteMakesItsTable() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    var expected = try checkpointedStore(at: path)
    let store = try LogStore(path: path, options: Self.options)
    try store.put(Array("new".utf8), forKey: Array("k0".utf8), in: Self.name(1))
    expected[Self.name(1)]!["k0"] = "new"
    try store.put(Array("added".utf8), forKey: Array("added".utf8), in: Self.name(2))
    expected[Self.name(2)]!["added"] = "added"
    try store.delete(key: Array("k5".utf8), in: Self.name(3))
    expected[Self.name(3)]!["k5"] = nil
    try store.deletePrefix(Array("k1".utf8), in: Self.name(4))
    expected[Self.name(4)] = expected[Self.name(4)]!.filter { !$0.key.hasPrefix("k1") }
    try store.clearTable(Self.name(5))
    expected[Self.name(5)] = [:]
    try store.dropTable(Self.name(6))
    expected[Self.name(6)] = nil
    try store.dropTable(Self.name(8))
    try store.createTable(Self.name(8))
    expected[Self.name(8)] = [:]
    // An existing table created again changes nothing, unless with another lifetime.
    try store.createTable(Self.name(12))
    try store.createTable(Self.name(13), defaultLifetime: 60_000_000)
    // A put into a table with a default lifetime gets it.
    try store.put(Array("x".utf8), forKey: Array("x".utf8), in: Self.name(7))
    expected[Self.name(7)]!["x"] = "x"
    var batch = WriteBatch()
    batch.put(Array("b".utf8), forKey: Array("b".utf8), in: Self.name(14))
    batch.delete(key: Array("k0".utf8), in: Self.name(15))
    try store.write(batch)
    expected[Self.name(14)]!["b"] = "b"
    expected[Self.name(15)]!["k0"] = nil
    #expect(throws: LogStoreError.self) {
      try store.put([1], forKey: [1], in: Self.name(6))
    }
    #expect(try store.entry(forKey: Array("x".utf8), in: Self.name(7))?.expires != nil)
    #expect(try store.lifetime(of: Self.name(13)) == 60_000_000)
    #expect(try store.lifetime(of: Self.name(12)) == 0)
    // Counts are exact before any other table is made.
    let statistics = try store.statistics()
    #expect(statistics.tables == Self.tableCount - 1)
    #expect(statistics.liveItems == expected.values.reduce(0) { $0 + $1.count })
    #expect(try store.snapshot() == expected)
    try store.close()
    // Opened again from the same index file and the log after it, and from the log alone.
    for indexFiles in [true, false] {
      let reopened = try LogStore(
        path: path, options: .init(readOnly: true, indexFiles: indexFiles))
      #expect(try reopened.snapshot() == expected, "index files: \(indexFiles)")
      #expect(try reopened.statistics().tables == Self.tableCount - 1)
      #expect(try reopened.lifetime(of: Self.name(13)) == 60_000_000)
    }
  }

  @Test(
    "a checkpoint and a compaction of a store whose tables are not made yet keep every table, and a reopen reads them all"
  )
  func checkpointAndCompaction() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    var expected = try checkpointedStore(at: path)
    do {
      let store = try LogStore(path: path, options: Self.options)
      try store.put(Array("late".utf8), forKey: Array("late".utf8), in: Self.name(20))
      expected[Self.name(20)]!["late"] = "late"
      try store.checkpoint()
      try store.close()
    }
    do {
      let store = try LogStore(path: path, options: Self.options)
      #expect(unmade(store) == Self.tableCount - 2)
      try store.compact()
      #expect(try store.snapshot() == expected)
      try store.close()
    }
    for indexFiles in [true, false] {
      let store = try LogStore(path: path, options: .init(readOnly: true, indexFiles: indexFiles))
      #expect(try store.snapshot() == expected, "index files: \(indexFiles)")
    }
  }

  @Test(
    "a table whose part of the index file is damaged is found out when first used, by a read, a write or a drop, and the store reads its log instead"
  )
  func damageFoundOnFirstUse() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let expected = try checkpointedStore(at: path)
    let indexName = try #require(
      try FileManager.default.contentsOfDirectory(atPath: path).first { $0.hasSuffix(".index") })
    let original = IndexFileBytes(try fileBytes(path + "/" + indexName))
    // The last sample group of t020: the open reads only the directory; making the table
    // reads that group first.
    let record = try #require(original.tableRecord(Self.name(20)))
    let samples = original.field(record + 40, 8)
    let count = original.field(record, 8)
    let lastGroup = samples + (IndexFileFormat.sampleGroupCount(for: count) - 1) * 64
    var damaged = original
    damaged.bytes[lastGroup + 1] ^= 0x10
    try writeFile(path + "/" + indexName, damaged.bytes)
    // `verify` reads every table of the file, and reports that one.
    let report = try LogStore.verify(path: path)
    #expect(
      report.problems.map(\.message).contains {
        $0.hasPrefix("table \"t020\": a table's entries do not end where its record says")
      }, "\(report.problems)")
    do {
      // A compaction's listing meets the damage (the table is read from the file for it), as
      // does a judgment of a listing by another directory of the same file.
      let store = try LogStore(path: path, options: .init(readOnly: true))
      let keys = store.engine.index.keys
      #expect(keys.liveRecords(below: .max) == nil)
      try store.close()
      let clean = directory.appending("clean")
      try copyDirectory(path, to: clean)
      try writeFile(clean + "/" + indexName, original.bytes)
      let good = try LogStore(path: clean, options: .init(readOnly: true))
      let live = try #require(good.engine.index.keys.liveRecords(below: .max))
      let other = KeyDirectory(mapped: try #require(keys.mapped))
      let whole = try judge(live, by: other, segments: good.engine.index.segments).whole
      #expect(!whole, "a listing judged by a directory whose table is damaged")
      try good.close()
    }
    for way in ["read", "write", "drop", "count"] {
      let copy = directory.appending("copy-\(way)")
      try copyDirectory(path, to: copy)
      let store = try LogStore(path: copy, options: Self.options)
      #expect(store.openReport.indexFile != nil, "\(way): only the directory is read at open")
      var now = expected
      switch way {
      case "read":
        #expect(
          try store.value(forKey: Array("k4".utf8), in: Self.name(20)) == Array("v4-20".utf8))
      case "write":
        try store.put(Array("w".utf8), forKey: Array("k4".utf8), in: Self.name(20))
        now[Self.name(20)]!["k4"] = "w"
      case "drop":
        // Dropped without a lookup in it: the damage is found when the table is made.
        try store.dropTable(Self.name(20))
        now[Self.name(20)] = nil
        #expect(try store.statistics().liveItems == now.values.reduce(0) { $0 + $1.count })
      default:
        #expect(try store.count(in: Self.name(20)) == expected[Self.name(20)]!.count)
      }
      // The directory was rebuilt from the log, without the file.
      #expect(try store.statistics().indexMappedBytes == 0, "\(way)")
      #expect(try store.snapshot() == now, "\(way)")
      try store.close()
    }
  }

  @Test(
    "a compaction's listing reads the tables not made yet from the file, and another directory of the same file judges each record without making its tables"
  )
  func listingOfTablesNotMade() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let expected = try checkpointedStore(at: path)
    let store = try LogStore(path: path, options: Self.options)
    let keys = store.engine.index.keys
    let live = try #require(keys.liveRecords(below: .max))
    // Every item, and every table's creation record.
    let items = expected.values.reduce(0) { $0 + $1.count }
    #expect(live.records.count == items + Self.tableCount)
    #expect(Set(live.tables.map(\.name)) == Set(expected.keys))
    #expect(unmade(store) == Self.tableCount - 2)
    // A directory read anew from the same file (as another process's rotation makes one):
    // each record is looked up, in tables read from the file for the purpose.
    let other = KeyDirectory(mapped: try #require(keys.mapped))
    let (whole, verdicts) = try judge(live, by: other, segments: store.engine.index.segments)
    #expect(whole)
    #expect(verdicts.count == live.records.count && verdicts.allSatisfy { $0 })
    #expect(unmade(other) == Self.tableCount - 2)
    try store.close()
  }

  @Test(
    "a table a reader makes after the open gets none of the room an open makes for the log after the index file"
  )
  func roomOnlyWhileReplaying() throws {
    let directory = TemporaryDirectory()
    var options = Self.options
    options.indexFileMinimumLiveBytes = 0
    let writer = try LogStore(path: directory.appending("writer"), options: options)
    for table in ["changed", "read"] {
      try writer.createTable(table)
      for index in 0..<5_000 {
        try writer.put(Array("value \(index)".utf8), forKey: Array("key\(index)".utf8), in: table)
      }
    }
    try writer.checkpoint()
    for index in 0..<600 {
      try writer.put(Array("after".utf8), forKey: Array("key\(index)".utf8), in: "changed")
    }
    // As a process that died would leave it: no hint of the active segment, no new file.
    let died = directory.appending("died")
    try copyDirectory(directory.appending("writer"), to: died)
    try writer.close()
    let store = try LogStore(path: died, options: options)
    #expect(store.openReport.indexFile != nil && store.openReport.scannedRecords == 600)
    #expect(unmade(store) == 1)
    let replayed = try store.statistics().indexHeapBytes
    #expect(try store.value(forKey: Array("key1".utf8), in: "read") == Array("value 1".utf8))
    #expect(unmade(store) == 0)
    #expect(try store.statistics().indexHeapBytes - replayed < 1_024)
    try store.close()
  }

  @Test("readers on several threads meet the same tables not made yet at once")
  func readersAtOnce() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let expected = try checkpointedStore(at: path)
    let store = try LogStore(path: path, options: Self.options)
    let failures = Failures()
    runOnThreads(4) { thread in
      for step in 0..<Self.tableCount {
        // Each thread goes round the tables from a place of its own.
        let name = Self.name((step + thread * 10) % Self.tableCount)
        do {
          #expect(try store.value(forKey: Array("none".utf8), in: name) == nil)
          for (key, value) in expected[name]! {
            guard try store.value(forKey: Array(key.utf8), in: name) == Array(value.utf8) else {
              failures.add("\(name) \(key)")
              continue
            }
          }
        } catch {
          failures.add("\(name): \(error)")
        }
      }
    }
    #expect(failures.all.isEmpty, "\(failures.all.prefix(5))")
    #expect(unmade(store) == 0)
    try store.close()
  }
}

/// Failures noted by several threads.
private final class Failures: @unchecked Sendable {
  private let lock = NSLock()
  private var noted: [String] = []

  func add(_ failure: String) { lock.withLock { noted.append(failure) } }
  var all: [String] { lock.withLock { noted } }
}
