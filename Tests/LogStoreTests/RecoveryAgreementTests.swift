import Foundation
import LogStoreTesting
import Testing

@testable import LogStore

/// Stores left damaged, or as a power loss may leave them, read every way a store is read: a
/// read-only open under each corruption policy, `verify`, a writer's open under each policy
/// (then a write and a reopen), and `recover`. All must agree on what the store holds and on
/// what is damage, by one rule (docs/FORMAT.md, "Recovery"), whichever record kinds and
/// flags follow the damage.
@Suite("Recovery: every path agrees")
struct RecoveryAgreementTests {
  typealias Contents = [String: [String: String]]

  /// Segments are scanned: no hint files, no index files.
  static func options(sync: SyncPolicy = .never) -> LogStore.Options {
    var options = LogStore.Options(
      sync: sync, compaction: .manual, maxSegmentSize: 4096, indexFiles: false)
    options.activeHintMinimumBytes = .max
    return options
  }

  /// What each way of reading the store at `path` finds; each works on a copy of it.
  struct Findings {
    var readOnly: Contents
    var readOnlyDamage: Int
    var readOnlyFailure: LogStoreError?
    var verify: VerificationReport
    var writer: Contents
    var writerDamage: Int
    var writerFailure: LogStoreError?
    /// What a reopen after the writer's open, one put and a close holds.
    var afterWrite: Contents
    var recovered: Contents
    var salvage: SalvageReport
  }

  static func findings(at path: String, in directory: TemporaryDirectory) throws -> Findings {
    func copy(_ name: String) throws -> String {
      let destination = directory.appending(name)
      try copyDirectory(path, to: destination)
      return destination
    }
    let readOnlyPath = try copy("read-only")
    let reader = try LogStore(path: readOnlyPath, options: .init(readOnly: true))
    let readOnly = try reader.snapshot()
    let readOnlyDamage = try reader.statistics().damagedRecords
    try reader.close()
    var readOnlyFailure: LogStoreError?
    do {
      try LogStore(path: readOnlyPath, options: .init(readOnly: true, corruption: .fail)).close()
    } catch {
      readOnlyFailure = error
    }
    let verify = try LogStore.verify(path: readOnlyPath)

    var writerFailure: LogStoreError?
    var failing = options()
    failing.corruption = .fail
    let failingPath = try copy("writer-fail")
    do {
      try LogStore(path: failingPath, options: failing).close()
    } catch {
      writerFailure = error
    }
    let writerPath = try copy("writer")
    let writer = try LogStore(path: writerPath, options: options())
    let written = try writer.snapshot()
    let writerDamage = try writer.statistics().damagedRecords
    try writer.createTable("probe")
    try writer.put(Array("p".utf8), forKey: Array("k".utf8), in: "probe")
    try writer.close()
    let reopened = try LogStore(path: writerPath, options: options())
    let afterWrite = try reopened.snapshot()
    try reopened.close()

    let recoverPath = try copy("recover")
    let salvage = try LogStore.recover(path: recoverPath)
    let recoveredStore = try LogStore(path: recoverPath, options: .init(corruption: .fail))
    let recovered = try recoveredStore.snapshot()
    try recoveredStore.close()
    return Findings(
      readOnly: readOnly, readOnlyDamage: readOnlyDamage, readOnlyFailure: readOnlyFailure,
      verify: verify, writer: written, writerDamage: writerDamage, writerFailure: writerFailure,
      afterWrite: afterWrite, recovered: recovered, salvage: salvage)
  }

  /// Checks that every path found `expected` and `damage` damaged regions, and the same.
  static func check(
    _ found: Findings, expected: Contents, damage: Int, tornTailRecords: Int? = nil,
    _ label: String
  ) {
    #expect(found.readOnly == expected, "read-only open, \(label)")
    #expect(found.writer == expected, "writer's open, \(label)")
    #expect(found.recovered == expected, "recover, \(label)")
    var probed = expected
    probed["probe"] = ["k": "p"]
    #expect(found.afterWrite == probed, "reopen after a write, \(label)")
    #expect(found.readOnlyDamage == damage, "read-only open's damage, \(label)")
    #expect(found.writerDamage == damage, "writer's damage, \(label)")
    #expect(found.salvage.damagedRegions == damage, "recover's damage, \(label)")
    #expect(found.verify.problems.count == damage, "verify: \(found.verify.problems), \(label)")
    #expect((found.readOnlyFailure != nil) == (damage > 0), "read-only .fail, \(label)")
    #expect((found.writerFailure != nil) == (damage > 0), "writer's .fail, \(label)")
    if let failure = found.readOnlyFailure { #expect(failure.code == .corrupted, "\(label)") }
    if let records = tornTailRecords {
      let tails = found.verify.notes.filter { $0.message.contains("torn tail") }
      #expect(tails.count == 1, "verify's notes: \(found.verify.notes), \(label)")
      if records > 0 {
        #expect(
          tails.first?.message.contains("holding \(records) records") == true,
          "verify's notes: \(found.verify.notes), \(label)")
      }
    }
  }

  /// What a store holds after applying the records `applies` picks, in order.
  static func contents(_ records: [DamageTests.Placed], applying applies: (Int) -> Bool)
    -> Contents
  {
    DamageTests.replay(records, applying: applies).mapValues { keys in
      keys.mapValues { records[$0].value }
    }
  }

  /// The bytes of the segment file at `path`, its header zeroed.
  static func withZeroedHeader(_ path: String) throws -> [UInt8] {
    var bytes = try fileBytes(path)
    bytes.replaceSubrange(0..<SegmentHeader.size, with: repeatElement(0, count: SegmentHeader.size))
    return bytes
  }

  /// The offset of `text` in the file at `path`.
  static func offset(of text: String, in path: String) throws -> Int {
    let bytes = try fileBytes(path)
    let needle = Array(text.utf8)
    return try #require(
      (0...(bytes.count - needle.count)).first {
        bytes[$0..<$0 + needle.count].elementsEqual(needle)
      }, "\(text) not in \(path)")
  }

  /// A kind of record, with its flags, to follow damage.
  enum Follower: String, CaseIterable, CustomStringConvertible {
    case put, expiringPut, delete, deletePrefix, createTable, createTableWithLifetime,
      clearTable, dropTable, batchOfDeletes, batchWithExpiringMember

    var description: String { rawValue }

    func write(to store: LogStore) throws {
      let later = StoreOperation.expiry(expired: false)
      switch self {
      case .put: try store.put(Array("b".utf8), forKey: Array("b".utf8), in: "t")
      case .expiringPut:
        try store.put(Array("b".utf8), forKey: Array("b".utf8), in: "t", expiresAt: later)
      case .delete: try store.delete(key: Array("a".utf8), in: "t")
      case .deletePrefix: try store.deletePrefix(Array("a".utf8), in: "t")
      case .createTable: try store.createTable("u")
      case .createTableWithLifetime: try store.createTable("u", defaultLifetime: 86_400_000_000)
      case .clearTable: try store.clearTable("t")
      case .dropTable: try store.dropTable("t")
      case .batchOfDeletes:
        var batch = WriteBatch()
        batch.delete(key: Array("a".utf8), in: "t")
        batch.delete(key: Array("missing".utf8), in: "t")
        try store.write(batch)
      case .batchWithExpiringMember:
        var batch = WriteBatch()
        batch.put(Array("c".utf8), forKey: Array("c".utf8), in: "t", expiresAt: later)
        batch.put(Array("d".utf8), forKey: Array("d".utf8), in: "t")
        try store.write(batch)
      }
    }
  }

  @Test(
    "a damaged record followed by a record of each kind and flag, in a sealed segment and in the last: skipped and counted, the rest kept, everywhere",
    arguments: Follower.allCases, [true, false])
  func damageBeforeEachKind(follower: Follower, sealed: Bool) throws {
    let directory = TemporaryDirectory("agreement")
    let original = directory.appending("original")
    let store = try LogStore(path: original, options: Self.options())
    try store.createTable("t")
    try store.put(Array("a".utf8), forKey: Array("a".utf8), in: "t")
    try store.put(Array("victim-value".utf8), forKey: Array("victim".utf8), in: "t")
    try follower.write(to: store)
    try store.createTable("t")
    try store.put(Array("z".utf8), forKey: Array("z".utf8), in: "t")
    if sealed {
      // Too big for what is left of the first segment: it is sealed, this goes in the next.
      try store.put(
        Array(String(repeating: "f", count: 3950).utf8), forKey: Array("filler".utf8), in: "t")
    }
    try store.close()
    let segments = try segmentFiles(in: original)
    #expect(segments.count == (sealed ? 2 : 1))
    let records = try DamageTests.records(at: original)
    let victim = try #require(records.firstIndex { $0.key == "victim" })
    var bytes = try fileBytes(segments[0])
    bytes[try Self.offset(of: "victim-value", in: segments[0]) + 3] ^= 0x20
    try writeFile(segments[0], bytes)

    let expected = Self.contents(records) { $0 != victim }
    let found = try Self.findings(at: original, in: directory)
    Self.check(found, expected: expected, damage: 1, "\(follower) after damage, sealed \(sealed)")
    #expect(found.verify.problems.first?.offset == records[victim].range.lowerBound)
  }

  @Test(
    "a zeroed segment header with records behind it is damage, not a creation cut short: the records are read with the salt they check with, everywhere",
    arguments: [true, false])
  func zeroedHeader(sealed: Bool) throws {
    let directory = TemporaryDirectory("agreement")
    let original = directory.appending("original")
    let store = try LogStore(path: original, options: Self.options())
    try store.createTable("t")
    try store.put(Array("one".utf8), forKey: Array("k1".utf8), in: "t")
    try store.put(Array("two".utf8), forKey: Array("k2".utf8), in: "t")
    if sealed {
      try store.put(
        Array(String(repeating: "f", count: 3950).utf8), forKey: Array("filler".utf8), in: "t")
    }
    try store.close()
    #expect(try segmentFiles(in: original).count == (sealed ? 2 : 1))
    let records = try DamageTests.records(at: original)
    let segment = try segmentFiles(in: original)[0]
    let bytes = try Self.withZeroedHeader(segment)
    try writeFile(segment, bytes)

    let found = try Self.findings(at: original, in: directory)
    Self.check(
      found, expected: Self.contents(records) { _ in true }, damage: 1,
      "zeroed header, sealed \(sealed)")
    #expect(found.verify.problems.first?.offset == 0)
    #expect(!found.verify.notes.contains { $0.message.contains("cut short") })
    // The tool's next write into the table works: the table is there.
    #expect(found.afterWrite["t"]?["k2"] == "two")
  }

  @Test(
    "a zeroed header before a batch: the salt is solved from the batch and confirmed by its members"
  )
  func zeroedHeaderBeforeBatch() throws {
    let directory = TemporaryDirectory("agreement")
    let original = directory.appending("original")
    let store = try LogStore(path: original, options: Self.options())
    var batch = WriteBatch()
    batch.createTable("t")
    batch.put(Array("one".utf8), forKey: Array("k1".utf8), in: "t")
    batch.put(Array("two".utf8), forKey: Array("k2".utf8), in: "t")
    try store.write(batch)
    try store.close()
    let records = try DamageTests.records(at: original)
    let segment = try segmentFiles(in: original)[0]
    // The batch first, then only the close's sync mark: were the mark damaged too, only the
    // members could confirm the salt.
    var bytes = try Self.withZeroedHeader(segment)
    let mark = try Self.offset(of: "two", in: segment) + 3
    bytes[mark + 4] = 0
    try writeFile(segment, bytes)
    let found = try Self.findings(at: original, in: directory)
    Self.check(
      found, expected: Self.contents(records) { _ in true }, damage: 1, "zeroed header, batch")
  }

  @Test(
    "a zeroed header before a record nothing confirms: its records cannot be read, which is counted, everywhere"
  )
  func zeroedHeaderUnconfirmed() throws {
    let directory = TemporaryDirectory("agreement")
    let original = directory.appending("original")
    let store = try LogStore(path: original, options: Self.options())
    try store.createTable("t")
    try store.put(Array("lost".utf8), forKey: Array("k".utf8), in: "t")
    try store.close()
    // The table's creation, the put, the close's sync mark; the put damaged: no two good
    // records in a row are left to solve a salt from and confirm it.
    let segment = try segmentFiles(in: original)[0]
    var bytes = try Self.withZeroedHeader(segment)
    bytes[try Self.offset(of: "lost", in: segment)] ^= 0x20
    try writeFile(segment, bytes)
    let found = try Self.findings(at: original, in: directory)
    Self.check(found, expected: [:], damage: 2, "zeroed header, nothing confirms")
    #expect(found.verify.problems.contains { $0.message.contains("cannot be read") })
  }

  @Test(
    "a zeroed first page (header and first records) of a segment: the records after it are read with the salt they check with",
    arguments: [true, false])
  func zeroedFirstPage(sealed: Bool) throws {
    let directory = TemporaryDirectory("agreement")
    let original = directory.appending("original")
    var options = Self.options()
    options.maxSegmentSize = 64 << 10
    let store = try LogStore(path: original, options: options)
    try store.createTable("t")
    for index in 0..<100 {
      try store.put(
        Array("value \(index) \(String(repeating: "v", count: 80))".utf8),
        forKey: Array("k\(index)".utf8), in: "t")
    }
    if sealed {
      try store.put(
        Array(String(repeating: "f", count: 60 << 10).utf8), forKey: Array("filler".utf8),
        in: "t")
    }
    try store.close()
    let segment = try segmentFiles(in: original)[0]
    let records = try DamageTests.records(at: original)
    let page = 0..<4096
    var bytes = try fileBytes(segment)
    bytes.replaceSubrange(page, with: repeatElement(0, count: page.count))
    try writeFile(segment, bytes)

    let lost = records.indices.filter {
      records[$0].file == URL(fileURLWithPath: segment).lastPathComponent
        && records[$0].range.overlaps(page)
    }
    #expect(lost.count > 10 && lost.count < 50)
    let expected = Self.contents(records) { !lost.contains($0) }
    let found = try Self.findings(at: original, in: directory)
    // The header, and the records in the page after it: two damaged regions.
    Self.check(found, expected: expected, damage: 2, "zeroed first page, sealed \(sealed)")
  }

  /// A store left as a power loss may leave it while a writer had it open: `write` runs with
  /// the store open, then its files are copied (a process crash keeps everything handed to the
  /// OS) and the 4 KiB page of the last segment around `lostAt` (an offset in it, found by
  /// `lostAt`) is zeroed: a power loss kept the pages after it and not it.
  static func lostPage(
    in directory: TemporaryDirectory, sync: SyncPolicy = .never,
    _ write: (LogStore) throws -> Void, lostAt: (String) throws -> Int
  ) throws -> (path: String, records: [DamageTests.Placed], page: Range<Int>, segment: String) {
    let live = directory.appending("live")
    var options = Self.options(sync: sync)
    options.maxSegmentSize = 1 << 20
    let store = try LogStore(path: live, options: options)
    try write(store)
    let original = directory.appending("original")
    try copyDirectory(live, to: original)
    try store.close()
    let segment = try #require(try segmentFiles(in: original).last)
    let records = try DamageTests.records(at: original, extent: .sealedWithoutMarks)
    let start = try lostAt(segment) / 4096 * 4096
    let page = start..<start + 4096
    var bytes = try fileBytes(segment)
    bytes.replaceSubrange(page, with: repeatElement(0, count: page.count))
    try writeFile(segment, bytes)
    return (original, records, page, URL(fileURLWithPath: segment).lastPathComponent)
  }

  static func puts(_ range: Range<Int>, into store: LogStore) throws {
    if range.lowerBound == 0 { try store.createTable("t") }
    for index in range {
      try store.put(
        Array("value \(index) \(String(repeating: "v", count: 100))".utf8),
        forKey: Array("k\(index)".utf8), in: "t")
    }
  }

  @Test(
    "a lost page in the middle of the active segment, past the last sync (sync never): the log ends before it, a prefix, and nothing after it ever comes back"
  )
  func lostPageNeverSynced() throws {
    let directory = TemporaryDirectory("agreement")
    let (path, records, page, segment) = try Self.lostPage(in: directory) { store in
      try Self.puts(0..<150, into: store)
    } lostAt: {
      try Self.offset(of: "value 70 ", in: $0)
    }
    let first = try #require(
      records.firstIndex { $0.file == segment && $0.range.upperBound > page.lowerBound })
    let after = records.indices.filter { records[$0].range.lowerBound >= page.upperBound }
    #expect(after.count > 20)
    let found = try Self.findings(at: path, in: directory)
    Self.check(
      found, expected: Self.contents(records) { $0 < first }, damage: 0,
      tornTailRecords: after.count, "lost page, never synced")
  }

  @Test(
    "a lost page past the last sync of a store that synced before (sync interval, sync()): the synced records and a prefix after them"
  )
  func lostPageAfterSync() throws {
    let directory = TemporaryDirectory("agreement")
    let (path, records, page, segment) = try Self.lostPage(
      in: directory, sync: .interval(milliseconds: 60_000)
    ) { store in
      try Self.puts(0..<80, into: store)
      try store.sync()
      try Self.puts(80..<200, into: store)
    } lostAt: {
      try Self.offset(of: "value 140 ", in: $0)
    }
    let first = try #require(
      records.firstIndex { $0.file == segment && $0.range.upperBound > page.lowerBound })
    // Past what the sync covered.
    #expect(Int(records[first].key.dropFirst()).map { $0 > 80 } == true)
    let found = try Self.findings(at: path, in: directory)
    Self.check(
      found, expected: Self.contents(records) { $0 < first }, damage: 0, tornTailRecords: nil,
      "lost page after a sync")
  }

  @Test(
    "a lost page in records a sync made durable is damage: skipped and counted, the records after it kept, everywhere",
    arguments: [SyncPolicy.never, .always])
  func lostPageInDurableRecords(sync: SyncPolicy) throws {
    let directory = TemporaryDirectory("agreement")
    let (path, records, page, segment) = try Self.lostPage(in: directory, sync: sync) { store in
      try Self.puts(0..<80, into: store)
      try store.sync()
      try Self.puts(80..<120, into: store)
      try store.sync()
    } lostAt: {
      try Self.offset(of: "value 40 ", in: $0)
    }
    let lost = records.indices.filter {
      records[$0].file == segment && records[$0].range.overlaps(page)
    }
    #expect(!lost.isEmpty)
    let found = try Self.findings(at: path, in: directory)
    Self.check(
      found, expected: Self.contents(records) { !lost.contains($0) }, damage: 1,
      "lost page in durable records, \(sync)")
  }
}
