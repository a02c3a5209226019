import LogStoreTesting
import Testing

@testable import LogStore

/// Expiry in the engine: a put's expiry and a table's default lifetime (format version 2),
/// read back through every way an open reads a store (scanning, hint files, an index file),
/// dropped by compaction, and judged by one clock that never goes back.
@Suite("Expiry")
struct ExpiryTests {
  private let directory = TemporaryDirectory("expiry")
  private var path: String { directory.appending("store") }
  private static let second: Int64 = 1_000_000

  private func expires(_ store: LogStore, in seconds: Int64) -> Timestamp {
    Timestamp(microsecondsSince1970: store.expiryNow() + seconds * Self.second)
  }

  /// Everything a reader can see of table `t`: the keys, the entries with their expiries,
  /// the count.
  private func visible(_ store: LogStore, _ table: String = "t") throws -> (
    keys: [String], entries: [String: Int64?], count: Int
  ) {
    let keys = try store.keys(in: table).map { String(decoding: $0, as: UTF8.self) }
    var entries: [String: Int64?] = [:]
    for entry in try store.entries(in: table) {
      entries.updateValue(
        entry.expires?.microsecondsSince1970, forKey: String(decoding: entry.key, as: UTF8.self))
    }
    return (keys, entries, try store.count(in: table))
  }

  @Test("an expired key reads as missing and is not counted, listed or visited; the others are")
  func expiredIsMissing() throws {
    let store = try LogStore(path: path)
    defer { try? store.close() }
    try store.createTable("t")
    let soon = expires(store, in: 10)
    let later = expires(store, in: 3600)
    try store.put("a".bytes, forKey: "soon".bytes, in: "t", expiresAt: soon)
    try store.put("b".bytes, forKey: "later".bytes, in: "t", expiresAt: later)
    try store.put("c".bytes, forKey: "never".bytes, in: "t")
    var batch = WriteBatch()
    batch.put("d".bytes, forKey: "batched".bytes, in: "t", expiresAt: soon)
    try store.write(batch)
    #expect(try store.count(in: "t") == 4)
    #expect(try store.entry(forKey: "soon".bytes, in: "t")?.expires == soon)
    #expect(try store.entry(forKey: "never".bytes, in: "t")?.expires == nil)
    let liveBefore = try store.statistics().liveBytes

    store.expiryClock.skip(microseconds: 11 * Self.second)
    #expect(try store.value(forKey: "soon".bytes, in: "t") == nil)
    #expect(try store.value(forKey: "batched".bytes, in: "t") == nil)
    #expect(try store.value(forKey: "later".bytes, in: "t") == "b".bytes)
    let seen = try visible(store)
    #expect(seen.keys == ["later", "never"])
    #expect(seen.entries.count == 2)
    #expect(seen.entries["later"] == .some(later.microsecondsSince1970))
    #expect(seen.entries["never"] == .some(nil))
    #expect(seen.count == 2)
    let statistics = try store.statistics()
    #expect(statistics.liveItems == 2)
    #expect(statistics.liveBytes < liveBefore)
    // Written again, an expired key is back, with its new expiry or none.
    try store.put("e".bytes, forKey: "soon".bytes, in: "t")
    #expect(try store.count(in: "t") == 3)
    #expect(try store.entry(forKey: "soon".bytes, in: "t")?.expires == nil)
    // Deleting an expired key, by id or prefix, changes no count.
    try store.delete(key: "batched".bytes, in: "t")
    try store.deletePrefix("lat".bytes, in: "t")
    #expect(try visible(store).keys == ["never", "soon"])
  }

  @Test(
    "statistics leave out what expired in every table that has expiring keys, through clears, drops, checkpoints and reopens"
  )
  func statisticsAcrossTables() throws {
    var store = try LogStore(path: path, options: .init(compaction: .manual))
    defer { try? store.close() }
    for table in ["a", "b", "c", "d"] { try store.createTable(table) }
    let soon = expires(store, in: 10)
    for key in ["1", "2", "3"] { try store.put([1], forKey: key.bytes, in: "a", expiresAt: soon) }
    try store.put([1], forKey: "kept".bytes, in: "a")
    for key in ["1", "2"] { try store.put([1], forKey: key.bytes, in: "b", expiresAt: soon) }
    try store.put([1], forKey: "1".bytes, in: "c", expiresAt: soon)
    try store.put([1], forKey: "plain".bytes, in: "d")
    // b cleared and c dropped: their expiring keys leave with them; a's stay.
    try store.clearTable("b")
    try store.dropTable("c")
    try store.put([1], forKey: "new".bytes, in: "b")
    #expect(try store.statistics().liveItems == 6)
    store.expiryClock.skip(microseconds: 11 * Self.second)
    #expect(try store.statistics().liveItems == 3)
    try store.checkpoint()
    #expect(try store.statistics().liveItems == 3)
    try store.close()
    // Opened from the index file, a's expiring keys come from the file's entries.
    store = try LogStore(path: path, options: .init(compaction: .manual))
    #expect(store.openReport.indexFile != nil)
    #expect(try store.statistics().liveItems == 6)
    store.expiryClock.skip(microseconds: 11 * Self.second)
    #expect(try store.statistics().liveItems == 3)
    try store.put([1], forKey: "1".bytes, in: "d", expiresAt: expires(store, in: 10))
    #expect(try store.statistics().liveItems == 4)
    store.expiryClock.skip(microseconds: 11 * Self.second)
    #expect(try store.statistics().liveItems == 3)
    // Every key of a deleted by the empty prefix, its expiring ones with them; d's stays.
    try store.deletePrefix([], in: "a")
    try store.put([1], forKey: "2".bytes, in: "d", expiresAt: expires(store, in: 10))
    #expect(try store.statistics().liveItems == 3)
    store.expiryClock.skip(microseconds: 11 * Self.second)
    #expect(try store.statistics().liveItems == 2)
  }

  /// Opens the store at `path` again and checks what table `t` shows, with the clock moved
  /// `skip` seconds on; returns the open's report.
  private func reopenAndCheck(
    skip: Int64, keys: [String], _ comment: Comment
  ) throws -> OpenReport {
    let store = try LogStore(path: path)
    defer { try? store.close() }
    store.expiryClock.skip(microseconds: skip * Self.second)
    #expect(try visible(store).keys == keys, comment)
    #expect(try store.count(in: "t") == keys.count, comment)
    #expect(try store.lifetime(of: "d") == 90 * Self.second, comment)
    return store.openReport
  }

  @Test(
    "expiries and default lifetimes survive a reopen that scans the log, one through hint files, and one through an index file"
  )
  func survivesEveryOpen() throws {
    var expiries: [String: Int64] = [:]
    do {
      let store = try LogStore(path: path, options: .init(compaction: .manual))
      try store.createTable("t")
      try store.createTable("d", defaultLifetime: 90 * Self.second)
      try store.put(
        "x".bytes, forKey: "gone".bytes, in: "t", expiresAt: .init(microsecondsSince1970: 1))
      for (key, seconds) in [("s10", 10), ("s100", 100), ("s1000", 1000)] {
        let at = expires(store, in: Int64(seconds))
        expiries[key] = at.microsecondsSince1970
        try store.put("v".bytes, forKey: key.bytes, in: "t", expiresAt: at)
      }
      try store.put("v".bytes, forKey: "never".bytes, in: "t")
      try store.close()
    }
    // Scanned.
    var report = try reopenAndCheck(
      skip: 0, keys: ["never", "s10", "s100", "s1000"], "scanned")
    #expect(report.indexFile == nil && report.hintEntries == 0)
    _ = try reopenAndCheck(skip: 50, keys: ["never", "s100", "s1000"], "scanned, later")
    // Through hint files: compaction's outputs get them (the store is small).
    do {
      let store = try LogStore(path: path, options: .init(compaction: .manual))
      try store.compact()
      try store.close()
    }
    report = try reopenAndCheck(skip: 0, keys: ["never", "s10", "s100", "s1000"], "hinted")
    #expect(report.hintEntries > 0)
    _ = try reopenAndCheck(skip: 500, keys: ["never", "s1000"], "hinted, later")
    // Through an index file.
    do {
      let store = try LogStore(path: path, options: .init(compaction: .manual))
      try store.checkpoint()
      try store.close()
    }
    report = try reopenAndCheck(skip: 0, keys: ["never", "s10", "s100", "s1000"], "indexed")
    #expect(report.indexFile != nil)
    _ = try reopenAndCheck(skip: 5000, keys: ["never"], "indexed, later")
    let store = try LogStore(path: path)
    defer { try? store.close() }
    for (key, at) in expiries {
      #expect(try store.entry(forKey: key.bytes, in: "t")?.expires?.microsecondsSince1970 == at)
    }
  }

  @Test(
    "compaction drops expired records, keeps the rest, and a key written during it is not lost"
  )
  func compactionDropsExpired() throws {
    let store = try LogStore(path: path, options: .init(compaction: .manual))
    defer { try? store.close() }
    try store.createTable("t")
    let value = [UInt8](repeating: 7, count: 1000)
    for index in 0..<200 {
      let expiry = index % 2 == 0 ? expires(store, in: 5) : expires(store, in: 3600)
      try store.put(value, forKey: "k\(index)".bytes, in: "t", expiresAt: expiry)
    }
    store.expiryClock.skip(microseconds: 6 * Self.second)
    // A key that expired, written again without an expiry: its new record is live.
    try store.put(value, forKey: "k0".bytes, in: "t")
    let before = try store.statistics()
    #expect(before.liveItems == 101)
    try store.compact()
    let after = try store.statistics()
    #expect(after.liveItems == 101)
    #expect(after.diskBytes < before.diskBytes - 90 * 1000)
    #expect(try store.count(in: "t") == 101)
    #expect(try store.value(forKey: "k0".bytes, in: "t") == value)
    #expect(try store.value(forKey: "k2".bytes, in: "t") == nil)
    try store.close()
    let reopened = try LogStore(path: path)
    defer { try? reopened.close() }
    let keys = try reopened.keys(in: "t").map { String(decoding: $0, as: UTF8.self) }
    #expect(keys.count == 101)
    #expect(keys.contains("k0") && keys.contains("k1") && !keys.contains("k2"))
    // The dropped records are gone from the files, not only hidden: a full verification
    // sees only live puts and the creation.
    #expect(try reopened.statistics().liveItems == 101)
  }

  @Test("a key put again while a compaction drops its expired record keeps the new value")
  func putAgainDuringCompaction() throws {
    let store = try LogStore(path: path, options: .init(compaction: .manual, maxSegmentSize: 4096))
    try store.createTable("t")
    try store.put("old".bytes, forKey: "k".bytes, in: "t", expiresAt: expires(store, in: 1))
    for index in 0..<100 { try store.put("filler".bytes, forKey: "f\(index)".bytes, in: "t") }
    store.expiryClock.skip(microseconds: 2 * Self.second)
    var putAgain = false
    try store.compact { done, total in
      // Every record judged, before the outputs go in.
      guard done == total, !putAgain else { return }
      putAgain = true
      do { try store.put("new".bytes, forKey: "k".bytes, in: "t") } catch {
        Issue.record("\(error)")
      }
    }
    #expect(putAgain)
    #expect(try store.value(forKey: "k".bytes, in: "t") == "new".bytes)
    #expect(try store.count(in: "t") == 101)
    try store.close()
    let reopened = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(try reopened.value(forKey: "k".bytes, in: "t") == "new".bytes)
  }

  @Test(
    "a table's default lifetime: applied to puts that name none, not to Timestamp.never; kept by clear, compaction and reopen; changed only by a creation that gives one"
  )
  func tableDefault() throws {
    let store = try LogStore(path: path, options: .init(compaction: .manual))
    try store.createTable("cache", defaultLifetime: 60 * Self.second)
    let start = store.expiryNow()
    try store.put("a".bytes, forKey: "a".bytes, in: "cache")
    try store.put("b".bytes, forKey: "b".bytes, in: "cache", expiresAt: .never)
    let own = expires(store, in: 5)
    try store.put("c".bytes, forKey: "c".bytes, in: "cache", expiresAt: own)
    var packed = PackedPuts(table: "cache")
    packed.append(key: "p".bytes, value: "p".bytes, timestamp: nil)
    try store.write(packed)
    let a = try #require(try store.entry(forKey: "a".bytes, in: "cache")?.expires)
    #expect(a.microsecondsSince1970 >= start + 60 * Self.second)
    #expect(a.microsecondsSince1970 < store.expiryNow() + 60 * Self.second + 1)
    #expect(try store.entry(forKey: "p".bytes, in: "cache")?.expires != nil)
    #expect(try store.entry(forKey: "b".bytes, in: "cache")?.expires == nil)
    // A batch's puts get no default; one that says never is written without an expiry.
    var batch = WriteBatch()
    batch.put("w".bytes, forKey: "w".bytes, in: "cache")
    batch.put("x".bytes, forKey: "x".bytes, in: "cache", expiresAt: .never)
    try store.write(batch)
    #expect(try store.entry(forKey: "w".bytes, in: "cache")?.expires == nil)
    #expect(try store.entry(forKey: "x".bytes, in: "cache")?.expires == nil)
    try store.delete(key: "w".bytes, in: "cache")
    try store.delete(key: "x".bytes, in: "cache")
    #expect(try store.entry(forKey: "c".bytes, in: "cache")?.expires == own)
    // A default lifetime that would end past the last representable time: never.
    try store.createTable("ages", defaultLifetime: .max)
    try store.put("y".bytes, forKey: "y".bytes, in: "ages")
    #expect(try store.entry(forKey: "y".bytes, in: "ages")?.expires == nil)
    try store.dropTable("ages")
    // A creation without a lifetime, of an existing table, changes nothing and writes
    // nothing; one with the same lifetime neither.
    let disk = try store.statistics().diskBytes
    try store.createTable("cache")
    try store.createTable("cache", defaultLifetime: 60 * Self.second)
    #expect(try store.statistics().diskBytes == disk)
    #expect(try store.lifetime(of: "cache") == 60 * Self.second)
    try store.clearTable("cache")
    #expect(try store.lifetime(of: "cache") == 60 * Self.second)
    try store.put("a".bytes, forKey: "a".bytes, in: "cache")
    try store.createTable("cache", defaultLifetime: 0)
    try store.put("n".bytes, forKey: "n".bytes, in: "cache")
    #expect(try store.entry(forKey: "n".bytes, in: "cache")?.expires == nil)
    try store.createTable("cache", defaultLifetime: 30 * Self.second)
    try store.compact()
    try store.close()
    for indexed in [false, true] {
      let reopened = try LogStore(path: path, options: .init(compaction: .manual))
      #expect(try reopened.lifetime(of: "cache") == 30 * Self.second)
      #expect(try reopened.count(in: "cache") == 2)
      reopened.expiryClock.skip(microseconds: 61 * Self.second)
      // "a" had the 60-second default; "n" was put with none.
      #expect(try reopened.keys(in: "cache") == ["n".bytes])
      if !indexed { try reopened.checkpoint() }
      try reopened.close()
    }
    #expect(throws: LogStoreError.self) {
      let store = try LogStore(path: path)
      defer { try? store.close() }
      try store.createTable("cache", defaultLifetime: -1)
    }
  }

  @Test("the expiry clock never goes back, so what expired stays expired in a process")
  func clockIsMonotonic() {
    let clock = ExpiryClock()
    let first = clock.now()
    clock.skip(microseconds: 10 * Self.second)
    let skipped = clock.now()
    #expect(skipped >= first + 10 * Self.second)
    clock.skip(microseconds: -20 * Self.second)
    #expect(clock.now() >= skipped)
  }

  @Test("the expiring keys of a table: counts and bytes as keys are given and removed")
  func expiringKeysBookkeeping() {
    let keys = ExpiringKeys()
    "a".bytes.withUnsafeBytes { keys.set($0, expiry: 10, length: 100) }
    "b".bytes.withUnsafeBytes { keys.set($0, expiry: 20, length: 200) }
    "ab".bytes.withUnsafeBytes { keys.set($0, expiry: 30, length: 300) }
    #expect(keys.advance(to: 5) == (0, 0))
    #expect(keys.advance(to: 20) == (2, 300))
    // Given a later expiry, a key is live again; given an earlier one, it expires at once.
    "a".bytes.withUnsafeBytes { keys.set($0, expiry: 40, length: 100) }
    #expect(keys.advance(to: 20) == (1, 200))
    "ab".bytes.withUnsafeBytes { keys.set($0, expiry: 15, length: 300) }
    #expect(keys.advance(to: 20) == (2, 500))
    "a".bytes.withUnsafeBytes { keys.removeAll(withPrefix: $0) }
    #expect(keys.advance(to: 100) == (1, 200))
    "b".bytes.withUnsafeBytes { keys.remove($0) }
    #expect(keys.isEmpty)
    // Written again and again with new expiries, the queue does not grow without end, and
    // is rebuilt in order.
    for round in 0..<10_000 {
      "k".bytes.withUnsafeBytes { keys.set($0, expiry: Int64(1000 + round), length: 1) }
    }
    #expect(keys.advance(to: 10_999) == (1, 1))
    for round in 0..<5 {
      for index in 0..<100 {
        "m\(index)".bytes.withUnsafeBytes {
          keys.set($0, expiry: Int64(20_000 + 100 * round + (index * 37) % 100), length: 2)
        }
      }
    }
    #expect(keys.advance(to: 20_449) == (1 + 50, 1 + 100))
    #expect(keys.advance(to: 20_499) == (1 + 100, 1 + 200))
  }
}
