import Foundation
import LogStoreTesting
import Testing

@testable import LogStore

@Suite("Changes files")
struct ChangesFileTests {
  private static var options: LogStore.Options {
    var options = LogStore.Options(compaction: .manual, maxSegmentSize: 64 << 10)
    options.indexFileMinimumLiveBytes = 0
    options.activeHintMinimumBytes = 0
    return options
  }

  private static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

  /// A store whose index file holds tables a to e, then a session that changes each of them
  /// differently (overwrites, deletes one by one and by prefix of the index file's keys, new
  /// keys, a cleared table, a dropped one, one dropped and made again, a new one, puts that
  /// expire) and closes, which writes the changes file. Returns what the store holds.
  private func changedStore(at path: String, keys: Int = 300) throws -> [String: [String: String]] {
    var expected: [String: [String: String]] = [:]
    let store = try LogStore(path: path, options: Self.options)
    for table in ["a", "b", "c", "d", "e"] {
      try store.createTable(table)
      for index in 0..<keys {
        try store.put(Self.bytes("\(table)\(index)"), forKey: Self.bytes("k\(index)"), in: table)
        expected[table, default: [:]]["k\(index)"] = "\(table)\(index)"
      }
    }
    try store.checkpoint()
    try store.close()

    let changing = try LogStore(path: path, options: Self.options)
    for index in stride(from: 0, to: keys, by: 3) {
      try changing.put(Self.bytes("new\(index)"), forKey: Self.bytes("k\(index)"), in: "a")
      expected["a"]!["k\(index)"] = "new\(index)"
    }
    for index in stride(from: 1, to: keys, by: 5) {
      try changing.delete(key: Self.bytes("k\(index)"), in: "a")
      expected["a"]!["k\(index)"] = nil
    }
    for index in keys..<keys + keys / 3 {
      try changing.put(Self.bytes("added\(index)"), forKey: Self.bytes("k\(index)"), in: "a")
      expected["a"]!["k\(index)"] = "added\(index)"
    }
    try changing.deletePrefix(Self.bytes("k1"), in: "b")
    expected["b"] = expected["b"]!.filter { !$0.key.hasPrefix("k1") }
    try changing.put(Self.bytes("back"), forKey: Self.bytes("k10"), in: "b")
    expected["b"]!["k10"] = "back"
    try changing.clearTable("c")
    try changing.put(Self.bytes("after clearing"), forKey: Self.bytes("x"), in: "c")
    expected["c"] = ["x": "after clearing"]
    try changing.dropTable("d")
    expected["d"] = nil
    try changing.dropTable("e")
    try changing.createTable("e")
    try changing.put(Self.bytes("again"), forKey: Self.bytes("k0"), in: "e")
    expected["e"] = ["k0": "again"]
    try changing.createTable("f")
    for index in 0..<keys / 6 {
      try changing.put(Self.bytes("f\(index)"), forKey: Self.bytes("k\(index)"), in: "f")
      expected["f", default: [:]]["k\(index)"] = "f\(index)"
    }
    // Changes with expiries, which the file keeps beside their locations: a put that says
    // its own, and puts into a table with a default lifetime (a day: none expires here).
    let tomorrow = Timestamp(
      microsecondsSince1970: Timestamp.now().microsecondsSince1970 + 86_400_000_000)
    try changing.put(Self.bytes("expiring"), forKey: Self.bytes("k4"), in: "a", expiresAt: tomorrow)
    expected["a"]!["k4"] = "expiring"
    try changing.createTable("g", defaultLifetime: 86_400_000_000)
    for index in 0..<keys / 10 {
      try changing.put(Self.bytes("g\(index)"), forKey: Self.bytes("k\(index)"), in: "g")
      expected["g", default: [:]]["k\(index)"] = "g\(index)"
    }
    try changing.close()
    return expected
  }

  private static func statistics(_ store: LogStore) throws -> [Int] {
    let statistics = try store.statistics()
    return [statistics.tables, statistics.liveItems, statistics.liveBytes]
  }

  @Test(
    "a close writes what changed since the index file, and the next open puts it over the file and reads nothing of the log it covers: the same tables, keys, values and counts as an open that reads the log"
  )
  func changesOverIndexFile() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let expected = try changedStore(at: path)
    let file = path + "/" + StoreFileName.changes(2)
    #expect(FileManager.default.fileExists(atPath: file))

    let reopened = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(reopened.openReport.indexFile == 2)
    #expect(reopened.openReport.usedChangesFile)
    #expect(reopened.openReport.scannedRecords == 0)
    #expect(reopened.openReport.hintEntries == 0)
    #expect(try reopened.snapshot() == expected)
    for (table, items) in expected {
      #expect(try reopened.count(in: table) == items.count)
      for key in ["k0", "k1", "k2", "k10", "k301", "x"] {
        #expect(
          try reopened.value(forKey: Self.bytes(key), in: table).map {
            String(decoding: $0, as: UTF8.self)
          } == items[key])
      }
    }
    #expect(try !reopened.tableNames().contains("d"))
    let withChanges = try Self.statistics(reopened)
    try reopened.close()
    #expect(try LogStore.verify(path: path).isClean)

    // Without the changes file the open reads the log after the index file: the same store.
    try FileManager.default.moveItem(atPath: file, toPath: file + ".aside")
    let fromLog = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(!fromLog.openReport.usedChangesFile)
    #expect(fromLog.openReport.scannedRecords + fromLog.openReport.hintEntries > 0)
    #expect(try fromLog.snapshot() == expected)
    #expect(try Self.statistics(fromLog) == withChanges)
    try fromLog.close()
    try FileManager.default.moveItem(atPath: file + ".aside", toPath: file)

    // Written to after: the next close writes the changes anew, and the next open reads them.
    let writer = try LogStore(path: path, options: Self.options)
    #expect(writer.openReport.usedChangesFile)
    try writer.put(Self.bytes("later"), forKey: Self.bytes("k2"), in: "a")
    try writer.delete(key: Self.bytes("k3"), in: "b")
    try writer.close()
    var later = expected
    later["a"]!["k2"] = "later"
    later["b"]!["k3"] = nil
    let third = try LogStore(path: path, options: Self.options)
    #expect(third.openReport.usedChangesFile)
    #expect(third.openReport.scannedRecords == 0)
    #expect(try third.snapshot() == later)
    // Nothing written: the close leaves the changes file as it is.
    let written = try FileManager.default.attributesOfItem(atPath: file)[.modificationDate] as? Date
    usleep(20_000)
    try third.close()
    #expect(
      try FileManager.default.attributesOfItem(atPath: file)[.modificationDate] as? Date == written)
  }

  @Test(
    "a table of thousands of changes, whose slots are filled block by block in the order their probes start, comes back whole: every key, tombstone and count, as the log has them"
  )
  func manyChangesInOneTable() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    // About 10,400 changes in table a: more than one block of slots (4,096 blocks at most).
    let expected = try changedStore(at: path, keys: 12_000)
    let reopened = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(reopened.openReport.usedChangesFile)
    #expect(try reopened.snapshot() == expected)
    let withChanges = try Self.statistics(reopened)
    let indexFile = try #require(reopened.openReport.indexFile)
    try reopened.close()
    try FileManager.default.removeItem(atPath: path + "/" + StoreFileName.changes(indexFile))
    let fromLog = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(!fromLog.openReport.usedChangesFile)
    #expect(try Self.statistics(fromLog) == withChanges)
    try fromLog.close()
  }

  @Test(
    "the counts of a session that only opened and closed, its replayed keys not yet looked up in the index file, come back exact once looked up"
  )
  func unsettledKeys() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let expected = try changedStore(at: path)
    let counted = try LogStore(path: path, options: .init(readOnly: true))
    let exact = try Self.statistics(counted)
    try counted.close()
    // The open reads the log after the index file and leaves its lookups for later; the
    // close writes the changes with those keys unsettled.
    try FileManager.default.removeItem(atPath: path + "/" + StoreFileName.changes(2))
    let replaying = try LogStore(path: path, options: Self.options)
    #expect(!replaying.openReport.usedChangesFile)
    try replaying.close()

    let reopened = try LogStore(path: path, options: Self.options)
    #expect(reopened.openReport.usedChangesFile)
    #expect(try Self.statistics(reopened) == exact)
    #expect(try reopened.snapshot() == expected)
    try reopened.close()
  }

  @Test(
    "a changes file cut at any length or with any byte changed is not used: the open reads the log and holds the same store, verify notes it as a crash's leftover, and a writer's open removes it"
  )
  func damagedChangesFile() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let expected = try changedStore(at: path, keys: 36)
    let file = path + "/" + StoreFileName.changes(2)
    let original = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
    // Every length and every byte at full depth (each byte with one bit changed, the bit
    // turning from byte to byte); the header and every 13th at sample depth.
    var trials: [[UInt8]] = []
    let isHeader = { (position: Int) in position < ChangesFile.headerSize + 32 }
    for length in TestDepth.cases(0..<original.count, every: 13, keeping: isHeader) {
      trials.append(Array(original[..<length]))
    }
    for position in TestDepth.cases(0..<original.count, every: 13, keeping: isHeader) {
      var changed = original
      changed[position] ^= 1 << UInt8(position % 8)
      trials.append(changed)
    }
    for trial in trials {
      try Data(trial).write(to: URL(fileURLWithPath: file))
      let store = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
      #expect(!store.openReport.usedChangesFile)
      #expect(store.openReport.rejectedChangesFile != nil)
      #expect(try store.snapshot() == expected)
      try store.close()
      // Written without a sync, the file may be left so by a crash: `verify` notes it (the
      // store is whole), as it notes a torn tail.
      let report = try LogStore.verify(path: path)
      #expect(report.isClean, "\(report.problems)")
      #expect(
        report.notes.contains {
          $0.file == StoreFileName.changes(2) && $0.message.contains("as a crash may leave it")
        })
    }
    // A writer's open removes the file it did not use.
    let writer = try LogStore(path: path, options: Self.options)
    #expect(writer.openReport.rejectedChangesFile != nil)
    #expect(!FileManager.default.fileExists(atPath: file))
    try writer.close()
  }
}

extension ChangesFileTests {
  /// Recomputes a changes file's checksums after its bytes were changed on purpose.
  private static func resealed(_ bytes: [UInt8]) -> [UInt8] {
    var bytes = bytes
    bytes.withUnsafeMutableBytes { buffer in
      let base = buffer.baseAddress!
      let body = UnsafeRawBufferPointer(rebasing: buffer[ChangesFile.headerSize...])
      storeLittleEndian(CRC32C.mask(CRC32C.checksum(body)), base + 44)
      let header = UnsafeRawBufferPointer(rebasing: buffer[0..<48])
      storeLittleEndian(CRC32C.mask(CRC32C.checksum(header)), base + 48)
    }
    return bytes
  }

  private static func patched<T: FixedWidthInteger>(_ bytes: [UInt8], _ value: T, at offset: Int)
    -> [UInt8]
  {
    var bytes = bytes
    bytes.withUnsafeMutableBytes { storeLittleEndian(value, $0.baseAddress! + offset) }
    return resealed(bytes)
  }

  @Test(
    "a changes file whose checksums hold but whose contents do not fit the index file or the log is not used, and the open holds the same store"
  )
  func changesThatDoNotFit() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let expected = try changedStore(at: path, keys: 36)
    let file = path + "/" + StoreFileName.changes(2)
    let original = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
    let (segments, nextSequence) = try original.withBytes { bytes throws(ChangesFile.Invalid) in
      let contents = try ChangesFile.decode(bytes, indexFile: 2)
      return (contents.segments, contents.nextSequence)
    }
    let last = segments.last!
    let somewhere = RecordLocation(
      segment: last.number, offset: UInt32(SegmentHeader.size),
      length: UInt32(RecordLayout.headerSize))
    /// A file over index file 2 at `position` dropping `dropped`, with `tables` (name, place,
    /// changes), counted as empty.
    func built(
      position: [IndexFileFormat.CoveredSegment] = segments, dropped: [Int] = [],
      _ tables: [(name: String, place: Int?, changes: [(String, RecordLocation?, Bool)])]
    ) -> [UInt8] {
      var builder = ChangesFile.Builder(
        indexFile: 2, nextSequence: nextSequence, segments: position, dropped: dropped)
      for table in tables {
        Array(table.name.utf8).withUnsafeBytes { name in
          builder.beginTable(
            name: name, place: table.place, lifetime: 0, count: 0, liveBytes: 0, creation: nil)
        }
        for (key, location, unsettled) in table.changes {
          Array(key.utf8).withUnsafeBytes {
            builder.add($0, location: location, unsettled: unsettled)
          }
        }
      }
      return builder.finish()
    }
    var shorter = segments
    shorter[shorter.count - 1].coveredLength = SegmentHeader.size
    var otherSalt = segments
    otherSalt[0].salt &+= 1
    let header = ChangesFile.headerSize
    let cases: [(String, [UInt8])] = [
      ("not a changes file", Array(original[..<20])),
      ("another version", Self.patched(original, UInt16(2), at: 8)),
      ("over another index file", Self.patched(original, UInt32(3), at: 12)),
      ("a length that is not the file's", Self.patched(original, UInt64(7), at: 24)),
      ("more tables than it holds", Self.patched(original, UInt32(99), at: 40)),
      ("bytes after the tables", Self.resealed(Self.patched(original, UInt32(0), at: 40))),
      ("no segment", built(position: [], [])),
      ("segments out of order", built(position: segments.reversed() + segments, [])),
      (
        "a segment covered short of its header",
        built(position: [.init(number: 1, salt: 0, coveredLength: 3)], [])
      ),
      (
        "a location outside the position",
        built([("a", 0, [("k0", RecordLocation(segment: 999, offset: 64, length: 40), false)])])
      ),
      (
        "a record shorter than a record's header",
        built([
          ("a", 0, [("k0", RecordLocation(segment: last.number, offset: 64, length: 3), false)])
        ])
      ),
      ("a name too long", built([(String(repeating: "n", count: 256), nil, [])])),
      (
        "a change with unknown flags",
        {
          var bytes = built([("a", 0, [("k0", somewhere, false)])])
          bytes[bytes.count - 3] = 8
          return Self.resealed(bytes)
        }()
      ),
      (
        "a tombstone with a location",
        {
          var bytes = built([("a", 0, [("k0", somewhere, false)])])
          bytes[bytes.count - 3] = ChangesFile.tombstoneFlag
          return Self.resealed(bytes)
        }()
      ),
      ("a dropped table the index file does not have", built(dropped: [99], [])),
      ("a table at a place the index file does not have", built([("a", 99, [])])),
      ("a table under another table's place", built([("zz", 0, [])])),
      ("a table of the index file listed as new", built([("a", nil, [])])),
      ("a table listed twice", built([("new", nil, []), ("new", nil, [])])),
      (
        "a table of the index file listed twice",
        built([("a", 0, [("k0", somewhere, false)]), ("a", 0, [])])
      ),
      ("a key listed twice", built([("a", 0, [("k0", somewhere, false), ("k0", nil, true)])])),
      ("a new table that hides keys", built([("new", nil, [("k0", nil, false)])])),
      ("a new table with keys left to settle", built([("new", nil, [("k0", somewhere, true)])])),
      ("a position before the index file's", built(position: shorter, [])),
      ("a position of other segments", built(position: otherSalt, [])),
      (
        "a position past the store's segments",
        built(
          position: segments + [.init(number: last.number + 1, salt: 0, coveredLength: 100)], [])
      ),
      ("a file larger than the store", [UInt8](repeating: 0, count: header + 4 << 20)),
    ]
    for (label, bytes) in cases {
      try Data(bytes).write(to: URL(fileURLWithPath: file))
      let store = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
      #expect(!store.openReport.usedChangesFile, "\(label)")
      #expect(store.openReport.rejectedChangesFile != nil, "\(label)")
      #expect(try store.snapshot() == expected, "\(label)")
      #expect(try store.count(in: "a") == expected["a"]!.count, "\(label)")
      try store.close()
    }
    // The same builder, with what the store has, is used.
    try Data(original).write(to: URL(fileURLWithPath: file))
    let store = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(store.openReport.usedChangesFile)
    try store.close()
    #expect(try LogStore.verify(path: path).isClean)

    // `verify`: a change that does not point at a good put of its key is a problem, and so are
    // a position longer than its segment, one before the index file's and contents that do not
    // decode although the checksums hold; a position of other segments, a changes file over an
    // index file the store does not have and one cut short are notes.
    func verified(_ bytes: [UInt8], as name: String = StoreFileName.changes(2)) throws
      -> VerificationReport
    {
      try Data(bytes).write(to: URL(fileURLWithPath: path + "/" + name))
      defer { try? FileManager.default.removeItem(atPath: path + "/" + name) }
      return try LogStore.verify(path: path)
    }
    var longer = segments
    longer[longer.count - 1].coveredLength += 1 << 20
    let findings: [(String, [UInt8], String, problem: Bool)] = [
      (
        "a change at another record",
        built([("a", 0, [("k0", somewhere, false)])]), StoreFileName.changes(2), true
      ),
      (
        "a position past its segment's end", built(position: longer, []), StoreFileName.changes(2),
        true
      ),
      (
        "a position before the index file's", built(position: shorter, []),
        StoreFileName.changes(2), true
      ),
      (
        "a position of other segments", built(position: otherSalt, []), StoreFileName.changes(2),
        false
      ),
      ("over an index file the store does not have", original, StoreFileName.changes(77), false),
      (
        "a change with unknown flags, its checksums holding (no crash leaves that)",
        {
          var bytes = built([("a", 0, [("k0", somewhere, false)])])
          bytes[bytes.count - 3] = 8
          return Self.resealed(bytes)
        }(), StoreFileName.changes(2), true
      ),
      (
        "cut short (a crash may leave that)", Array(original.dropLast(5)),
        StoreFileName.changes(2), false
      ),
    ]
    for (label, bytes, name, problem) in findings {
      let report = try verified(bytes, as: name)
      let found = problem ? report.problems : report.notes
      #expect(found.contains { $0.file == name }, "\(label): \(report)")
      #expect(report.isClean == !problem, "\(label)")
    }
  }

  @Test(
    "expiries come back through a changes file as through the log: the index file's, those written since, those taken away by a put without one or a delete"
  )
  func expiriesThroughChanges() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let past = Timestamp(microsecondsSince1970: 1)
    let future = Timestamp(microsecondsSince1970: Int64.max / 2)
    let store = try LogStore(path: path, options: Self.options)
    try store.createTable("t")
    for index in 0..<20 {
      try store.put(
        Self.bytes("v\(index)"), forKey: Self.bytes("k\(index)"), in: "t",
        expiresAt: index % 2 == 0 ? future : past)
    }
    try store.checkpoint()
    try store.put(Self.bytes("kept"), forKey: Self.bytes("k0"), in: "t")
    try store.put(Self.bytes("revived"), forKey: Self.bytes("k1"), in: "t", expiresAt: future)
    try store.delete(key: Self.bytes("k2"), in: "t")
    try store.put(Self.bytes("gone"), forKey: Self.bytes("k4"), in: "t", expiresAt: past)
    try store.put(Self.bytes("new"), forKey: Self.bytes("n"), in: "t", expiresAt: future)
    try store.put(Self.bytes("expired"), forKey: Self.bytes("e"), in: "t", expiresAt: past)
    try store.close()
    #expect(FileManager.default.fileExists(atPath: path + "/" + StoreFileName.changes(2)))

    func seen(_ store: LogStore) throws -> [Int] {
      try Self.statistics(store) + [try store.count(in: "t")]
    }
    let changed = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(changed.openReport.usedChangesFile)
    let expected: [String: String] = [
      "k0": "kept", "k1": "revived", "k6": "v6", "k8": "v8", "k10": "v10", "k12": "v12",
      "k14": "v14", "k16": "v16", "k18": "v18", "n": "new",
    ]
    #expect(try changed.snapshot() == ["t": expected])
    let withChanges = try seen(changed)
    try changed.close()
    try FileManager.default.removeItem(atPath: path + "/" + StoreFileName.changes(2))
    let fromLog = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(!fromLog.openReport.usedChangesFile)
    #expect(try fromLog.snapshot() == ["t": expected])
    #expect(try seen(fromLog) == withChanges)
    try fromLog.close()
  }

  @Test(
    "none once an index file replaces the one it was over, and none from a store without index files"
  )
  func whenNoChangesFile() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    _ = try changedStore(at: path, keys: 36)
    let file = path + "/" + StoreFileName.changes(2)
    #expect(FileManager.default.fileExists(atPath: file))
    // A checkpoint replaces the index file, and its changes file goes with it.
    let store = try LogStore(path: path, options: Self.options)
    try store.checkpoint()
    #expect(!FileManager.default.fileExists(atPath: file))
    try store.close()
    let names = try FileManager.default.contentsOfDirectory(atPath: path)
    #expect(!names.contains { $0.hasSuffix(".changes") }, "\(names.sorted())")

    let plain = directory.appending("plain")
    var options = Self.options
    options.indexFiles = false
    let unindexed = try LogStore(path: plain, options: options)
    try unindexed.createTable("t")
    try unindexed.put(Self.bytes("v"), forKey: Self.bytes("k"), in: "t")
    try unindexed.close()
    #expect(
      try !FileManager.default.contentsOfDirectory(atPath: plain).contains {
        $0.hasSuffix(".changes")
      })
  }
}
