import Foundation
import Testing

@testable import LogStore
@testable import LogStoreTesting

/// The active segment's hint file, written at a clean close: the next open reads it instead
/// of scanning the segment, scans only what was appended after it, skips what an index file
/// covers, and ignores it when it is damaged or belongs to another segment.
@Suite("Active segment hints")
struct ActiveHintTests {
  private let directory = TemporaryDirectory("active-hint")
  private var path: String { directory.appending("store") }

  /// Options under which every clean close writes the active segment's hint.
  private func options(readOnly: Bool = false) -> LogStore.Options {
    var options = LogStore.Options(readOnly: readOnly, compaction: .manual)
    options.activeHintMinimumBytes = 0
    return options
  }

  /// Every table with its keys and values, and counts.
  private func contents(_ store: LogStore) throws -> [String: [String: String]] {
    var tables: [String: [String: String]] = [:]
    for table in try store.tableNames() {
      var entries: [String: String] = [:]
      for entry in try store.entries(in: table) {
        entries[String(decoding: entry.key, as: UTF8.self)] = String(
          decoding: entry.value, as: UTF8.self)
      }
      #expect(try store.count(in: table) == entries.count)
      tables[table] = entries
    }
    return tables
  }

  /// Writes every kind of record into the store.
  private func write(_ store: LogStore, round: Int) throws {
    try store.createTable("t\(round)")
    for index in 0..<50 {
      try store.put("v\(round)-\(index)".bytes, forKey: "k\(index)".bytes, in: "t\(round)")
    }
    var batch = WriteBatch()
    batch.put("b".bytes, forKey: "batched".bytes, in: "t\(round)")
    batch.delete(key: "k1".bytes, in: "t\(round)")
    try store.write(batch)
    try store.delete(key: "k2".bytes, in: "t\(round)")
    try store.deletePrefix("k3".bytes, in: "t\(round)")
    try store.put("e".bytes, forKey: "expiring".bytes, in: "t\(round)", expiresAt: .never)
    try store.put(
      "x".bytes, forKey: "expired".bytes, in: "t\(round)",
      expiresAt: Timestamp(microsecondsSince1970: 1))
    if round > 0 { try store.clearTable("t\(round - 1)") }
  }

  /// A store written for `rounds` rounds and closed: what it holds, and the path of its active
  /// segment's hint file.
  private func closedStore(rounds: Int) throws -> (
    expected: [String: [String: String]], hint: String
  ) {
    let store = try LogStore(path: path, options: options())
    for round in 0..<rounds { try write(store, round: round) }
    let expected = try contents(store)
    let hint = hintPath(of: store)
    try store.close()
    return (expected, hint)
  }

  private func hintPath(of store: LogStore) -> String {
    let active = store.engine.log.writer!.file.number
    return path + "/" + StoreFileName.hint(active)
  }

  @Test(
    "a clean close writes the active segment's hint; the next open reads it, scans nothing, and finds the same store"
  )
  func reopenReadsTheHint() throws {
    let (expected, hint) = try closedStore(rounds: 2)
    #expect(FileManager.default.fileExists(atPath: hint))
    for readOnly in [true, false] {
      let store = try LogStore(path: path, options: options(readOnly: readOnly))
      #expect(store.openReport.scannedRecords == 0, "readOnly \(readOnly)")
      #expect(store.openReport.hintEntries > 0)
      #expect(try contents(store) == expected)
      try store.close()
    }
  }

  @Test(
    "records appended after the hint are scanned, also after a crash; a later clean close covers them too"
  )
  func appendedAfterTheHint() throws {
    let fileSystem = SimulatedFileSystem()
    var options = options()
    options.fileSystem = fileSystem
    do {
      let store = try LogStore(path: "/store", options: options)
      try write(store, round: 0)
      try store.close()
    }
    // A session that appends and then crashes (no close, so no new hint).
    let store = try LogStore(path: "/store", options: options)
    #expect(store.openReport.scannedRecords == 0)
    try write(store, round: 1)
    let expected = try contents(store)
    let crashed = SimulatedFileSystem(files: fileSystem.image(.process))
    options.fileSystem = crashed
    let reopened = try LogStore(path: "/store", options: options)
    #expect(reopened.openReport.hintEntries > 0)
    #expect(reopened.openReport.scannedRecords > 0)
    #expect(try contents(reopened) == expected)
    try write(reopened, round: 2)
    let final = try contents(reopened)
    try reopened.close()
    let again = try LogStore(path: "/store", options: options)
    defer { try? again.close() }
    #expect(again.openReport.scannedRecords == 0)
    #expect(try contents(again) == final)
  }

  /// The number of the store's index file, if it has one.
  private func indexNumber() throws -> UInt32? {
    for name in try FileManager.default.contentsOfDirectory(atPath: path) {
      if case .index(let number) = StoreFileName.classify(name) { return number }
    }
    return nil
  }

  @Test(
    "after an index file, the hint's entries it covers are skipped and the rest applied; counts settle as a full read's"
  )
  func withAnIndexFile() throws {
    var expected: [String: [String: String]] = [:]
    do {
      let store = try LogStore(path: path, options: options())
      try write(store, round: 0)
      try store.checkpoint()
      try write(store, round: 1)
      try store.put("changed".bytes, forKey: "k4".bytes, in: "t1")
      expected = try contents(store)
      try store.close()
    }
    // The close wrote the changes since the index file too, which would stand for the hint's
    // entries: without it, the open reads the hint.
    let number = try #require(try indexNumber())
    let changes = path + "/" + StoreFileName.changes(number)
    #expect(FileManager.default.fileExists(atPath: changes))
    try FileManager.default.removeItem(atPath: changes)
    let store = try LogStore(path: path, options: options())
    #expect(store.openReport.indexFile != nil)
    #expect(store.openReport.scannedRecords == 0)
    #expect(store.openReport.hintEntries > 0)
    #expect(try contents(store) == expected)
    let statistics = try store.statistics()
    try store.close()
    var plain = LogStore.Options(readOnly: true, compaction: .manual, indexFiles: false)
    plain.activeHintMinimumBytes = .max
    try FileManager.default.removeItem(
      atPath: path + "/"
        + (FileManager.default.contentsOfDirectory(atPath: path).first { $0.hasSuffix(".hint") }!))
    let scanned = try LogStore(path: path, options: plain)
    defer { try? scanned.close() }
    #expect(scanned.openReport.scannedRecords > 0)
    let full = try scanned.statistics()
    #expect(statistics.liveItems == full.liveItems)
    #expect(statistics.liveBytes == full.liveBytes)
  }

  @Test(
    "a damaged or cut hint of the active segment is ignored: the segment is scanned, and verify notes the hint as a crash may leave it"
  )
  func damagedHint() throws {
    let (expected, hint) = try closedStore(rounds: 1)
    let good = try fileBytes(hint)
    var cases: [(String, [UInt8])] = [("cut", Array(good.prefix(good.count - 3)))]
    for offset in [9, 13, 17, 30, good.count / 2, good.count - 1] {
      var damaged = good
      damaged[offset] ^= 0x20
      cases.append(("byte \(offset) flipped", damaged))
    }
    for (what, bytes) in cases {
      try writeFile(hint, bytes)
      let store = try LogStore(path: path, options: options(readOnly: true))
      #expect(store.openReport.scannedRecords > 0, "\(what)")
      #expect(try contents(store) == expected, "\(what)")
      try store.close()
      // Written without a sync, the hint may be left so by a crash: a note, not damage.
      let report = try LogStore.verify(path: path)
      #expect(report.isClean, "\(what): \(report.problems)")
      #expect(
        report.notes.contains {
          hint.hasSuffix("/" + $0.file) && $0.message.contains("as a crash may leave")
        }, "\(what): \(report.notes)")
    }
  }

  @Test("a writer's close replaces a cut or another store's hint of the active segment")
  func closeReplacesABadHint() throws {
    let (expected, hint) = try closedStore(rounds: 1)
    // Another store's hint of its segment of the same number: its header checks, but for
    // another salt.
    let other = directory.appending("other")
    do {
      let store = try LogStore(path: other, options: options())
      try write(store, round: 0)
      try store.close()
    }
    let foreign = try fileBytes(other + "/" + URL(fileURLWithPath: hint).lastPathComponent)
    let good = try fileBytes(hint)
    for (what, bytes) in [("cut inside its header", Array(good.prefix(10))), ("foreign", foreign)] {
      try writeFile(hint, bytes)
      // A cut is what a crash may leave (a note); another store's hint, whose checksums hold,
      // no crash leaves (a problem).
      let report = try LogStore.verify(path: path)
      #expect(report.isClean == (what != "foreign"), "\(what): \(report)")
      // The writer scans the segment, and its close finds the hint there covering nothing.
      let writer = try LogStore(path: path, options: options())
      #expect(writer.openReport.hintEntries == 0, "\(what)")
      try writer.close()
      let store = try LogStore(path: path, options: options(readOnly: true))
      #expect(store.openReport.scannedRecords == 0, "\(what)")
      #expect(store.openReport.hintEntries > 0, "\(what)")
      #expect(try contents(store) == expected, "\(what)")
      try store.close()
    }
  }

  @Test(
    "a close writes no hint of a segment with a damaged record: the next open scans it and skips the damage again"
  )
  func noHintOverDamage() throws {
    var hint = ""
    var segment = ""
    do {
      let store = try LogStore(path: path, options: options())
      try store.createTable("t")
      try store.put("first".bytes, forKey: "a".bytes, in: "t")
      try store.put("second".bytes, forKey: "b".bytes, in: "t")
      // A good record after it: the damage below is a damaged region, not a torn tail.
      try store.put("after".bytes, forKey: "z".bytes, in: "t")
      hint = hintPath(of: store)
      segment = path + "/" + StoreFileName.segment(store.engine.log.writer!.file.number)
      try store.close()
    }
    try FileManager.default.removeItem(atPath: hint)
    // Flip the last byte of "second": the record of b fails its checksum.
    var bytes = try fileBytes(segment)
    let position = try #require(
      (0..<bytes.count - 6).last { Array(bytes[$0..<$0 + 6]) == "second".bytes })
    bytes[position + 5] ^= 0x01
    try writeFile(segment, bytes)
    do {
      // A salvaging open skips the damaged record (b has no value), then writes and closes.
      let store = try LogStore(path: path, options: options())
      #expect(try store.statistics().damagedRecords == 1)
      try store.put("third".bytes, forKey: "c".bytes, in: "t")
      try store.close()
    }
    #expect(!FileManager.default.fileExists(atPath: hint))
    let store = try LogStore(path: path, options: options(readOnly: true))
    defer { try? store.close() }
    #expect(store.openReport.hintEntries == 0)
    #expect(try store.value(forKey: "b".bytes, in: "t") == nil)
    #expect(try contents(store) == ["t": ["a": "first", "c": "third", "z": "after"]])
  }

  @Test("a close writes no hint for less than the minimum, nor for what an index file covers")
  func onlyWhenWorthIt() throws {
    do {
      let store = try LogStore(path: path, options: .init(compaction: .manual))
      try write(store, round: 0)
      try store.close()
    }
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(".hint") }
        .isEmpty)
    do {
      let store = try LogStore(path: path, options: options())
      try write(store, round: 1)
      try store.checkpoint()
      try store.close()
    }
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(".hint") }
        .isEmpty)
  }
}
