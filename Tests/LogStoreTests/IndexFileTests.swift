import Foundation
import LogStoreTesting
import Testing

@testable import LogStore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

@Suite("Index files")
struct IndexFileTests {
  private static let options = LogStore.Options(compaction: .manual, maxSegmentSize: 64 << 10)

  /// A store of three tables with keys overwritten, deleted one by one and by prefix, in
  /// several segments.
  private func fill(_ store: LogStore, keys: Int = 1_500) throws {
    for table in ["a", "b", "c"] { try store.createTable(table) }
    for index in 0..<keys {
      try store.put(Array("value \(index)".utf8), forKey: Array("key\(index)".utf8), in: "a")
      try store.put(Array("b\(index)".utf8), forKey: Array("k\(index % 300)".utf8), in: "b")
    }
    for index in stride(from: 0, to: keys, by: 7) {
      try store.delete(key: Array("key\(index)".utf8), in: "a")
    }
    try store.deletePrefix(Array("key1".utf8), in: "a")
    try store.put([], forKey: [], in: "c")
  }

  /// Opens a store at `path`, fills it (``fill(_:keys:)``), writes its index file and closes it:
  /// a log of several segments, covered by an index file.
  private func checkpointedStore(at path: String, keys: Int = 1_500) throws {
    let store = try LogStore(path: path, options: Self.options)
    try fill(store, keys: keys)
    try store.checkpoint()
    try store.close()
  }

  /// Every key of `expected` read one by one, and keys that are not there read as missing.
  private func expectPointReads(
    _ store: LogStore, _ expected: [String: [String: String]], _ context: String = "",
    sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    for (table, items) in expected {
      #expect(try store.count(in: table) == items.count, "\(table)", sourceLocation: sourceLocation)
      #expect(
        try store.keys(in: table).map { String(decoding: $0, as: UTF8.self) }
          == items.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) },
        sourceLocation: sourceLocation)
      for (key, value) in items {
        let read = try store.value(forKey: Array(key.utf8), in: table)
        #expect(
          read.map { String(decoding: $0, as: UTF8.self) } == value, sourceLocation: sourceLocation)
      }
      for missing in ["key7", "key14", "key1", "key100", "nothing"] where items[missing] == nil {
        #expect(
          try store.value(forKey: Array(missing.utf8), in: table) == nil,
          sourceLocation: sourceLocation)
      }
    }
  }

  /// `bytes` of an index file with every `stride`-th byte of every table's slot groups flipped:
  /// the open accepts the file (it checks the directory; making a table checks the ends of its
  /// entries), and lookups find the damage.
  static func damagingSlotGroups(
    _ bytes: [UInt8], every stride: Int, entries: Bool = false, firstHalf: Bool = false
  )
    -> [UInt8]
  {
    var damaged = bytes
    func field(_ offset: Int, _ size: Int) -> Int { Self.field(of: bytes, at: offset, size) }
    for table in 0..<field(44, 4) {
      let position = Self.tableRecord(table, in: bytes)
      let start = field(position + (entries ? 16 : 32), 8)
      var length = entries ? field(position + 24, 8) : field(position + 48, 4) * 64
      // (Only in tables of more than 32 keys: making a table reads its last 16 entries.)
      if firstHalf { length = field(position, 8) > 32 ? length / 2 : 0 }
      for offset in Swift.stride(from: start, to: start + length, by: stride) {
        damaged[offset] ^= 0x10
      }
    }
    return damaged
  }

  /// Where the record of the table at `place` starts in an index file's `bytes`: the records
  /// follow the directory, 84 bytes each.
  private static func tableRecord(_ place: Int, in bytes: [UInt8]) -> Int {
    IndexFileFormat.headerSize + field(of: bytes, at: 48, 8)
      + place * IndexFileFormat.tableRecordSize
  }

  /// The little-endian integer of `size` bytes at `offset` of an index file's `bytes`.
  private static func field(of bytes: [UInt8], at offset: Int, _ size: Int) -> Int {
    bytes[offset..<offset + size].enumerated().reduce(0) {
      $0 | Int($1.element) << (8 * $1.offset)
    }
  }

  /// Where each part of each table of an index file (`bytes`) starts and ends: its slot
  /// groups, samples and entries, as the directory gives them (the edges a sample damages).
  private static func partEdges(of bytes: [UInt8]) -> Set<Int> {
    func field(_ offset: Int, _ size: Int) -> Int { Self.field(of: bytes, at: offset, size) }
    // The directory's end, the table records' ends.
    let records = IndexFileFormat.headerSize + field(48, 8)
    var edges: Set<Int> = [records - 1, records]
    for table in 0..<field(44, 4) {
      let position = Self.tableRecord(table, in: bytes)
      edges.formUnion([position, position + IndexFileFormat.recordChecksumOffset])
      let entriesStart = field(position + 16, 8)
      let groupsStart = field(position + 32, 8)
      let samplesStart = field(position + 40, 8)
      edges.formUnion([
        groupsStart, samplesStart - 1, samplesStart, entriesStart - 1, entriesStart,
        entriesStart + field(position + 24, 8) - 1,
      ])
    }
    return edges
  }

  private func indexFiles(in path: String) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(".index") }
      .sorted().map { path + "/" + $0 }
  }

  /// A closed store whose table t holds keys `k000` to `k099` with values `v0` to `v99`
  /// (and the key `expiring`, which expires in an hour, if asked), with an index file of it all.
  private func paddedStore(_ directory: TemporaryDirectory, expiring: Bool = false) throws -> (
    path: String, expected: [String: [String: String]], index: String
  ) {
    let path = directory.appending("padded")
    let store = try LogStore(path: path, options: Self.options)
    try store.createTable("t")
    for index in 0..<100 {
      try store.put(
        Array("v\(index)".utf8), forKey: Array("k\(index.zeroPadded(width: 3))".utf8), in: "t")
    }
    if expiring {
      try store.put(
        Array("e".utf8), forKey: Array("expiring".utf8), in: "t",
        expiresAt: Timestamp(microsecondsSince1970: store.expiryNow() + 3_600_000_000))
    }
    try store.checkpoint()
    let expected = try store.snapshot()
    try store.close()
    return (path, expected, try indexFiles(in: path)[0])
  }

  @Test("a checkpoint asked for while a compaction runs waits for it, then writes its file")
  func checkpointWaitsForCompaction() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let store = try LogStore(path: path, options: Self.options)
    try fill(store)
    let expected = try store.snapshot()
    let checkpointed = DispatchSemaphore(value: 0)
    let failure = Guarded<LogStoreError?>(nil)
    var asked = false
    try store.compact { _, _ in
      guard !asked else { return }
      asked = true
      // Asked from another thread while this compaction copies: it waits for the compaction.
      Thread {
        do throws(LogStoreError) {
          try store.checkpoint()
        } catch {
          failure.withLock { $0 = error }
        }
        checkpointed.signal()
      }.start()
      usleep(20_000)
    }
    #expect(checkpointed.wait(timeout: .now() + 30) == .success)
    #expect(failure.withLock { $0 } == nil)
    try store.close()
    let reopened = try LogStore(path: path, options: Self.options)
    #expect(reopened.openReport.indexFile != nil)
    #expect(try reopened.snapshot() == expected)
    try reopened.close()
  }

  @Test("a checkpointed store opens from its index file and reads none of the log it covers")
  func opensFromIndex() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let store = try LogStore(path: path, options: Self.options)
    try fill(store)
    let expected = try store.snapshot()
    let statistics = try store.statistics()
    try store.checkpoint()
    try store.close()
    #expect(try indexFiles(in: path).count == 1)

    let reopened = try LogStore(path: path, options: Self.options)
    #expect(reopened.openReport.indexFile != nil)
    #expect(reopened.openReport.scannedRecords == 0)
    #expect(try reopened.snapshot() == expected)
    try expectPointReads(reopened, expected)
    let after = try reopened.statistics()
    #expect(after.liveItems == statistics.liveItems)
    #expect(after.liveBytes == statistics.liveBytes)
    #expect(after.tables == statistics.tables)
    #expect(after.indexMappedBytes > 0)
    #expect(after.indexHeapBytes < statistics.indexHeapBytes / 4)
    #expect(statistics.indexMappedBytes == 0)
  }

  @Test(
    "an open from an index file makes room in its tables for the log after the file once that log holds a record: none when the file covers the whole log, which leaves only the segment's reserve of zeros"
  )
  func roomForTheLogAfterTheFile() throws {
    let directory = TemporaryDirectory()
    // One table in one segment: what the heap holds after an open is that table's room.
    var options = LogStore.Options(compaction: .manual)
    options.indexFileMinimumLiveBytes = 0
    func fill(_ path: String) throws -> LogStore {
      let store = try LogStore(path: path, options: options)
      try store.createTable("t")
      for index in 0..<5_000 {
        try store.put(Array("value \(index)".utf8), forKey: Array("key\(index)".utf8), in: "t")
      }
      return store
    }

    // An index file of the whole log (as a close writes after enough changes), then a clean
    // close: the open reads no record.
    let path = directory.appending("clean")
    let store = try fill(path)
    let expected = try store.snapshot()
    try store.checkpoint()
    try store.close()
    let clean = try LogStore(path: path, options: options)
    #expect(clean.openReport.indexFile != nil && clean.openReport.scannedRecords == 0)
    #expect(try clean.snapshot() == expected)
    // Room made before a record is found would be room for as many keys as the segment's
    // reserve after the log's end could hold: thousands, in every such open.
    #expect(try clean.statistics().indexHeapBytes < 1_024)
    try clean.close()

    // Changes after an index file, in a copy of the directory taken while the store is open
    // (as a process that died would leave it: no hint of the active segment, no new file).
    let writer = try fill(directory.appending("writer"))
    try writer.checkpoint()
    for index in 0..<600 {
      try writer.put(Array("after \(index)".utf8), forKey: Array("key\(index)".utf8), in: "t")
    }
    let died = directory.appending("died")
    try copyDirectory(directory.appending("writer"), to: died)
    let changed = try writer.snapshot()
    try writer.close()
    let reopened = try LogStore(path: died, options: options)
    #expect(reopened.openReport.indexFile != nil && reopened.openReport.scannedRecords == 600)
    #expect(try reopened.snapshot() == changed)
    try reopened.close()
  }

  @Test("changes after the index file are read from the log, over the file's keys")
  func changesAfterIndex() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    try checkpointedStore(at: path)
    let store = try LogStore(path: path, options: Self.options)
    // Overwrite and delete keys of the file, one by one and by prefix; drop, clear, recreate.
    try store.put(Array("new".utf8), forKey: Array("key2".utf8), in: "a")
    try store.put(Array("fresh".utf8), forKey: Array("key0".utf8), in: "a")
    try store.delete(key: Array("key3".utf8), in: "a")
    try store.delete(key: Array("key3".utf8), in: "a")
    try store.deletePrefix(Array("key2".utf8), in: "a")
    try store.put(Array("back".utf8), forKey: Array("key25".utf8), in: "a")
    try store.deletePrefix(Array("k1".utf8), in: "b")
    try store.put(Array("again".utf8), forKey: Array("k10".utf8), in: "b")
    try store.clearTable("c")
    try store.put(Array("c".utf8), forKey: Array("c".utf8), in: "c")
    try store.dropTable("b")
    try store.createTable("b")
    try store.put(Array("b".utf8), forKey: Array("k5".utf8), in: "b")
    try store.createTable("d")
    let expected = try store.snapshot()
    try expectPointReads(store, expected)
    let statistics = try store.statistics()
    try store.close()

    for useIndex in [true, false] {
      let reopened = try LogStore(
        path: path, options: .init(readOnly: true, corruption: .fail, indexFiles: useIndex))
      #expect((reopened.openReport.indexFile != nil) == useIndex)
      #expect(try reopened.snapshot() == expected)
      try expectPointReads(reopened, expected)
      let after = try reopened.statistics()
      #expect(after.liveItems == statistics.liveItems)
      #expect(after.liveBytes == statistics.liveBytes)
    }
  }

  @Test(
    "an open leaves the lookups of what changed after the index file for later; counts are exact at first use"
  )
  func settlesLater() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let expected: [String: [String: String]]
    let statistics: StoreStatistics
    do {
      let store = try LogStore(path: path, options: Self.options)
      for table in ["a", "b"] { try store.createTable(table) }
      for index in 0..<300 {
        try store.put(Array("v\(index)".utf8), forKey: Array("key\(index)".utf8), in: "a")
      }
      for index in 0..<50 { try store.put([1], forKey: Array("k\(index)".utf8), in: "b") }
      try store.checkpoint()
      // After the file, every way a key can meet the file's: a key of the file overwritten
      // (twice), a new key, a key of the file deleted, a key nowhere deleted, a new key
      // written then deleted, a key of the file deleted then written again, and the same in a
      // second table; then a prefix deleted (which reads the file's keys in order, settling
      // the table) and more changes after it, over keys settled and not.
      try store.put(Array("w1".utf8), forKey: Array("key1".utf8), in: "a")
      try store.put(Array("w2".utf8), forKey: Array("key1".utf8), in: "a")
      try store.put(Array("n".utf8), forKey: Array("new1".utf8), in: "a")
      try store.delete(key: Array("key2".utf8), in: "a")
      try store.delete(key: Array("nowhere".utf8), in: "a")
      try store.put(Array("n".utf8), forKey: Array("new2".utf8), in: "a")
      try store.delete(key: Array("new2".utf8), in: "a")
      try store.delete(key: Array("key3".utf8), in: "a")
      try store.put(Array("back".utf8), forKey: Array("key3".utf8), in: "a")
      try store.delete(key: Array("k1".utf8), in: "b")
      try store.put([2], forKey: Array("k2".utf8), in: "b")
      try store.put([2], forKey: Array("k99".utf8), in: "b")
      try store.put([3], forKey: Array("k98".utf8), in: "b")
      try store.deletePrefix(Array("k4".utf8), in: "b")
      try store.delete(key: Array("k98".utf8), in: "b")
      try store.delete(key: Array("k3".utf8), in: "b")
      try store.put([4], forKey: Array("k97".utf8), in: "b")
      try store.delete(key: Array("k97".utf8), in: "b")
      expected = try store.snapshot()
      statistics = try store.statistics()
      try store.close()
    }
    for first in ["count", "statistics", "write", "checkpoint", "compact"] {
      // Each on a copy of the store, since some change what the next open finds.
      let copy = directory.appending(first)
      try FileManager.default.copyItem(atPath: path, toPath: copy)
      let store = try LogStore(path: copy, options: Self.options)
      #expect(store.openReport.indexFile != nil)
      #expect(!store.engine.index.keys.isSettled, "\(first): the open looked the keys up")
      // Reads and iteration need no settling.
      #expect(try store.snapshot() == expected, "\(first)")
      for (table, items) in expected {
        for key in items.keys + ["key2", "new2", "nowhere", "k1", "k98", "k97"] {
          let read = try store.value(forKey: Array(key.utf8), in: table)
          #expect(read.map { String(decoding: $0, as: UTF8.self) } == items[key], "\(key)")
        }
      }
      #expect(!store.engine.index.keys.isSettled, "\(first): reads settled the counts")
      var model = expected
      switch first {
      case "count":
        #expect(try store.count(in: "a") == expected["a"]!.count)
        #expect(try store.count(in: "b") == expected["b"]!.count)
      case "statistics": _ = try store.statistics()
      case "write":
        try store.put(Array("x".utf8), forKey: Array("key5".utf8), in: "a")
        try store.delete(key: Array("key6".utf8), in: "a")
        model["a"]!["key5"] = "x"
        model["a"]!["key6"] = nil
      case "checkpoint": try store.checkpoint()
      default: try store.compact()
      }
      #expect(store.engine.index.keys.isSettled, "\(first)")
      try expectPointReads(store, model, first)
      let after = try store.statistics()
      #expect(after.liveItems == model.values.reduce(0) { $0 + $1.count }, "\(first)")
      if first != "write" { #expect(after.liveBytes == statistics.liveBytes, "\(first)") }
      #expect(try store.snapshot() == model, "\(first)")
      try store.close()
      // The whole log read agrees.
      let full = try LogStore(
        path: copy, options: .init(readOnly: true, corruption: .fail, indexFiles: false))
      #expect(try full.snapshot() == model, "\(first)")
      #expect(try full.statistics().liveBytes == after.liveBytes, "\(first)")
    }
  }

  @Test(
    "an index file whose checksums match but whose entries point at other keys' records: reads and iteration refuse it"
  )
  func entriesPointingElsewhere() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    try checkpointedStore(at: path, keys: 300)
    // The first two entries of the first table ("a") trade locations, their checksums made to
    // match: what a faulty writer could leave, which no checksum finds.
    let index = try indexFiles(in: path)[0]
    var bytes = try fileBytes(index)
    func field(_ offset: Int, _ size: Int) -> Int {
      bytes[offset..<offset + size].enumerated().reduce(0) {
        $0 | Int($1.element) << (8 * $1.offset)
      }
    }
    let record = try #require(IndexFileBytes(bytes).tableRecord("a"))
    let first = field(record + 16, 8)
    let second = first + 18 + field(first + 16, 2)
    let firstLocation = Array(bytes[first + 4..<first + 16])
    bytes[first + 4..<first + 16] = bytes[second + 4..<second + 16]
    bytes[second + 4..<second + 16] = firstLocation[...]
    for entry in [first, second] {
      let length = 18 + field(entry + 16, 2)
      let crc = bytes[entry + 4..<entry + length].withUnsafeBytes {
        CRC32C.mask(CRC32C.checksum($0))
      }
      withUnsafeBytes(of: crc.littleEndian) { bytes.replaceSubrange(entry..<entry + 4, with: $0) }
    }
    try writeFile(index, bytes)
    // Verify reads every entry's record: both are wrong.
    let report = try LogStore.verify(path: path)
    #expect(
      report.problems.map(\.message) == [
        "2 entries of table \"a\" do not point at a good record of their key (with their expiry)"
      ])
    let store = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(store.openReport.indexFile != nil)
    // Iteration of the table, walked in the file, stops at the first of them; a read of either
    // key finds the other's record.
    #expect(throws: LogStoreError.self) { try store.forEachEntry(in: "a") { _, _, _ in true } }
    var keys: [String] = []
    try store.forEachEntry(in: "b") { key, _, _ in
      keys.append(String(decoding: key, as: UTF8.self))
      return true
    }
    #expect(keys.count == 300)
    let firstKey = Array(bytes[first + 18..<first + 18 + field(first + 16, 2)])
    #expect(throws: LogStoreError.self) { try store.value(forKey: firstKey, in: "a") }
    // After a change, the table's keys are copied rather than walked: the same refusal.
    let writer = try LogStore(path: path, options: Self.options)
    try writer.put([1], forKey: Array("zzz".utf8), in: "a")
    #expect(throws: LogStoreError.self) { try writer.forEachEntry(in: "a") { _, _, _ in true } }
    try writer.close()
  }

  @Test(
    "iteration that reaches a damaged record throws, naming its file and offset, whether it walks the index file or the keys copied after a change"
  )
  func iterationMeetsDamagedRecord() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    do {
      let store = try LogStore(path: path, options: Self.options)
      try store.createTable("a")
      for index in 0..<200 {
        let value = index == 120 ? "the damaged one" : "value \(index)"
        try store.put(Array(value.utf8), forKey: Array("key\(1000 + index)".utf8), in: "a")
      }
      try store.checkpoint()
      try store.close()
    }
    let marker = Array("the damaged one".utf8)
    var damaged: (file: String, offset: Int)?
    for file in try segmentFiles(in: path) {
      var bytes = try fileBytes(file)
      guard
        let at = (0...(bytes.count - marker.count)).first(where: {
          Array(bytes[$0..<$0 + marker.count]) == marker
        })
      else { continue }
      bytes[at + 4] ^= 0x20
      try writeFile(file, bytes)
      damaged = (file, at)
    }
    let (file, _) = try #require(damaged)
    func expectDamage(_ store: LogStore, _ how: String) {
      var seen = 0
      do {
        try store.forEachEntry(in: "a") { _, _, _ in
          seen += 1
          return true
        }
        Issue.record("\(how): the damaged record was read")
      } catch {
        #expect(error.code == .corrupted, "\(how)")
        #expect(
          error.message.contains(file) && error.message.contains("offset"), "\(how): \(error)")
      }
      #expect(seen == 120, "\(how): \(seen) items before the damage")
    }
    let store = try LogStore(path: path, options: Self.options)
    #expect(store.openReport.indexFile != nil)
    expectDamage(store, "walked in the index file")
    try store.put([1], forKey: Array("key0".utf8), in: "a")
    try store.delete(key: Array("key0".utf8), in: "a")
    expectDamage(store, "copied after a change")
    try store.close()
  }

  @Test(
    "an index file whose sampled entries have expiries is whole: verify finds nothing, and a compaction judges by it"
  )
  func sampledEntriesWithExpiries() throws {
    let directory = TemporaryDirectory()
    // "expiring" sorts first: the entry of rank 0, which a sample points at, has an expiry.
    let (path, expected, index) = try paddedStore(directory, expiring: true)
    let report = try LogStore.verify(path: path)
    #expect(report.isClean, "\(report.problems)")
    #expect(report.indexFiles == 1)
    let store = try LogStore(path: path, options: Self.options)
    var usedWhileCopying: Bool?
    try store.compact { _, _ in
      if usedWhileCopying == nil {
        usedWhileCopying = FileManager.default.fileExists(atPath: index)
      }
    }
    #expect(usedWhileCopying == true)
    #expect(try store.snapshot() == expected)
    try store.close()
  }

  @Test(
    "verify finds an index file whose entries are out of order, every checksum matching, its slots leading to them or not"
  )
  func entriesOutOfOrder() throws {
    let directory = TemporaryDirectory()
    let (path, _, index) = try paddedStore(directory)
    #expect(try LogStore.verify(path: path).isClean)
    let original = IndexFileBytes(try fileBytes(index))
    let table = try #require(original.tableRecord("t"))
    // Entries 1 and 2 (keys of one length, no expiry) trade places, each with its checksum.
    let first = original.entry(1, ofTable: table)
    let length = original.entryLength(at: first)
    var swapped = original
    swapped.bytes[first..<first + length] = original.bytes[first + length..<first + 2 * length]
    swapped.bytes[first + length..<first + 2 * length] = original.bytes[first..<first + length]
    // The same, with the two keys' slots leading to their new places.
    var relinked = swapped
    for (key, from, to) in [("k001", first, first + length), ("k002", first + length, first)] {
      let slot = try #require(original.slot(of: Array(key.utf8), entry: from, ofTable: table))
      relinked.store(UInt32(to - original.field(table + 16, 8) + 1), at: slot + 4)
      relinked.resealGroup(holding: slot, ofTable: table)
    }
    for (what, file) in [("slots leading elsewhere", swapped), ("slots following", relinked)] {
      try writeFile(index, file.bytes)
      let report = try LogStore.verify(path: path)
      #expect(
        report.problems.map(\.message) == [
          "a part of table \"t\" is damaged; the log is read instead"
        ], "\(what)")
      #expect(report.problems.first?.file == URL(fileURLWithPath: index).lastPathComponent)
    }
  }

  @Test(
    "an index file covering more of a segment than the segment holds is not used; verify says so")
  func segmentShorterThanCovered() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    try checkpointedStore(at: path)
    let segments = try segmentFiles(in: path)
    try #require(segments.count > 1)
    let cut = try fileBytes(segments[0])
    try writeFile(segments[0], Array(cut.prefix(cut.count / 2)))
    let name = URL(fileURLWithPath: try indexFiles(in: path)[0]).lastPathComponent
    let store = try LogStore(path: path, options: .init(readOnly: true))
    #expect(store.openReport.indexFile == nil)
    let reason = try #require(store.openReport.rejectedIndexFiles.values.first)
    #expect(reason.hasPrefix("it covers ") && reason.contains("which holds \(cut.count / 2)"))
    // What is left of the log is read, as without index files.
    let logOnly = try LogStore(path: path, options: .init(readOnly: true, indexFiles: false))
    #expect(try store.snapshot() == logOnly.snapshot())
    let report = try LogStore.verify(path: path)
    #expect(
      report.problems.contains {
        $0.file == name && $0.message.contains("which holds \(cut.count / 2)")
      }, "\(report.problems)")
  }

  @Test("another store's index file of more segments than this store has is not used")
  func moreSegmentsThanTheStore() throws {
    let larger = TemporaryDirectory()
    let largerPath = larger.appending("store")
    try checkpointedStore(at: largerPath)
    #expect(try segmentFiles(in: largerPath).count > 1)
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let expected: [String: [String: String]]
    do {
      let store = try LogStore(path: path, options: Self.options)
      try store.createTable("t")
      try store.put(Array("v".utf8), forKey: Array("k".utf8), in: "t")
      expected = try store.snapshot()
      try store.close()
    }
    #expect(try segmentFiles(in: path).count == 1)
    let foreign = try indexFiles(in: largerPath)[0]
    try FileManager.default.copyItem(
      atPath: foreign, toPath: path + "/" + URL(fileURLWithPath: foreign).lastPathComponent)
    let store = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(store.openReport.indexFile == nil)
    #expect(
      Array(store.openReport.rejectedIndexFiles.values) == [
        "it covers other segments than the store has"
      ])
    #expect(try store.snapshot() == expected)
  }

  @Test("an index file whose header counts more segments than its directory holds is not used")
  func directoryShorterThanItsCounts() throws {
    let directory = TemporaryDirectory()
    let (path, expected, index) = try checkpointedStore(directory)
    // Every byte of the directory zero (segment records covering nothing), one segment more
    // than it has room for and no table; both checksums made to match.
    var file = IndexFileBytes(try fileBytes(index))
    let length = file.field(48, 8)
    file.bytes.replaceSubrange(64..<64 + length, with: repeatElement(0, count: length))
    file.bytes.replaceSubrange(40..<44, with: littleEndianBytes(UInt32(length / 16 + 1)))
    file.bytes.replaceSubrange(44..<48, with: littleEndianBytes(UInt32(0)))
    storeChecksum(&file.bytes, at: 56, of: 64..<64 + length)
    storeChecksum(&file.bytes, at: 60, of: 0..<60)
    try writeFile(index, file.bytes)
    let store = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(store.openReport.indexFile == nil)
    #expect(Array(store.openReport.rejectedIndexFiles.values) == ["its directory is cut short"])
    #expect(try store.snapshot() == expected)
  }

  @Test("an index file with a damaged entry in a table with expiring keys is not used")
  func damagedEntryBesideExpiries() throws {
    let directory = TemporaryDirectory()
    let (path, expected, index) = try paddedStore(directory, expiring: true)
    var file = IndexFileBytes(try fileBytes(index))
    // A byte of the first key: its entry fails its checksum.
    file.bytes[file.entry(0, ofTable: try #require(file.tableRecord("t"))) + 18] ^= 0x01
    try writeFile(index, file.bytes)
    let store = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(store.openReport.indexFile == nil)
    #expect(store.openReport.rejectedIndexFiles.count == 1)
    #expect(try store.snapshot() == expected)
  }

  @Test(
    "listing a table with expiring keys meets its index file damaged while open: the log is read")
  func keysOfExpiringTableMeetDamage() throws {
    let directory = TemporaryDirectory()
    let (path, expected, index) = try paddedStore(directory, expiring: true)
    let store = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(store.openReport.indexFile != nil)
    var file = IndexFileBytes(try fileBytes(index))
    file.bytes[file.entry(3, ofTable: try #require(file.tableRecord("t"))) + 18] ^= 0x01
    try overwriteInPlace(index, with: file.bytes)
    #expect(
      try store.keys(in: "t").map { String(decoding: $0, as: UTF8.self) }
        == expected["t"]!.keys.sorted())
    #expect(try store.statistics().indexMappedBytes == 0)
  }

  @Test(
    "an ordered visit, which reads its records a batch at a time, stops where asked and leaves out expired items at every place of its batches, walking the index file or the keys copied from a changed table"
  )
  func orderedVisitsInBatches() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let store = try LogStore(path: path, options: Self.options)
    try store.createTable("t")
    var live: [String: String] = [:]
    var generator = SplitMix64(seed: 31)
    // Written in a shuffled order, so that key order is not the records' order; every seventh
    // key expired already, so that some batches hold items the visit leaves out; every fifth
    // written as a member of a batch record, which the index points into.
    var batch = WriteBatch()
    for index in (0..<150).shuffled(using: &generator) {
      let key = "k\(index.zeroPadded(width: 3))"
      if index % 7 == 3 {
        try store.put(
          Array("gone".utf8), forKey: Array(key.utf8), in: "t",
          expiresAt: Timestamp(microsecondsSince1970: 1))
      } else if index % 5 == 0 {
        batch.put(Array("v\(index)".utf8), forKey: Array(key.utf8), in: "t")
        live[key] = "v\(index)"
      } else {
        try store.put(Array("v\(index)".utf8), forKey: Array(key.utf8), in: "t")
        live[key] = "v\(index)"
      }
      if batch.count == 4 {
        try store.write(batch)
        batch = WriteBatch()
      }
    }
    try store.write(batch)
    try store.checkpoint()
    try store.close()

    let reopened = try LogStore(path: path, options: Self.options)
    #expect(reopened.openReport.indexFile != nil)
    func visit(prefix: String, stoppingAfter stop: Int) throws -> [String] {
      var visited: [String] = []
      try reopened.forEachEntry(in: "t", withPrefix: Array(prefix.utf8)) { key, value, _ in
        visited.append(
          String(decoding: key, as: UTF8.self) + "=" + String(decoding: value, as: UTF8.self))
        return visited.count < stop
      }
      return visited
    }
    func check(walkingTheFile: Bool) throws {
      let unchanged = try reopened.engine.readIndex { $0.table("t")?.unchangedBase != nil }
      #expect(unchanged == walkingTheFile)
      for prefix in ["", "k0", "k12"] {
        let expected = live.keys.filter { $0.hasPrefix(prefix) }.sorted().map {
          "\($0)=\(live[$0]!)"
        }
        for stop in [1, 2, 15, 16, 17, 31, 32, 33, 100, expected.count, Int.max] {
          let visited = try visit(prefix: prefix, stoppingAfter: stop)
          #expect(visited == Array(expected.prefix(stop)), "prefix \(prefix), stop \(stop)")
        }
      }
    }
    try check(walkingTheFile: true)
    // A change to the table: its keys are copied and sorted, then visited the same way.
    try reopened.put(Array("v1000".utf8), forKey: Array("k1000".utf8), in: "t")
    live["k1000"] = "v1000"
    try check(walkingTheFile: false)
    try reopened.close()
  }

  @Test("a prefix visit of a table unchanged since its index file gives the prefix's keys only")
  func prefixVisitInTheFile() throws {
    let directory = TemporaryDirectory()
    let (path, _, _) = try paddedStore(directory)
    let store = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(store.openReport.indexFile != nil)
    var visited: [String] = []
    try store.forEachEntry(in: "t", withPrefix: Array("k04".utf8)) { key, value, _ in
      visited.append(
        String(decoding: key, as: UTF8.self) + "=" + String(decoding: value, as: UTF8.self))
      return true
    }
    #expect(visited == (40..<50).map { "k0\($0)=v\($0)" })
  }

  @Test("a prefix delete that meets a damaged index file removes exactly the prefix's keys")
  func prefixDeleteMeetsDamage() throws {
    let directory = TemporaryDirectory()
    let (base, expected, _) = try paddedStore(directory)
    // The damaged entry is met finding where the prefix's keys start (walking from a sample to
    // it), or walking the prefix's keys.
    for (rank, prefix) in [(5, "k007"), (9, "k00")] {
      let path = directory.appending("store-\(rank)")
      try copyDirectory(base, to: path)
      let index = try indexFiles(in: path)[0]
      var file = IndexFileBytes(try fileBytes(index))
      file.bytes[file.entry(rank, ofTable: try #require(file.tableRecord("t"))) + 18] ^= 0x01
      try writeFile(index, file.bytes)
      let model = ["t": expected["t"]!.filter { !$0.key.hasPrefix(prefix) }]
      let store = try LogStore(path: path, options: Self.options)
      #expect(store.openReport.indexFile != nil)
      try store.deletePrefix(Array(prefix.utf8), in: "t")
      #expect(try store.snapshot() == model, "\(prefix)")
      #expect(try store.count(in: "t") == model["t"]!.count, "\(prefix)")
      try store.close()
      let reopened = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
      #expect(try reopened.snapshot() == model, "\(prefix)")
    }
  }

  @Test("an index file of empty tables, with writes after it, opens to those writes")
  func emptyTablesThenWrites() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let expected: [String: [String: String]]
    do {
      let store = try LogStore(path: path, options: Self.options)
      try store.createTable("t")
      try store.createTable("u")
      try store.checkpoint()
      for index in 0..<10 {
        try store.put(Array("v\(index)".utf8), forKey: Array("k\(index)".utf8), in: "t")
      }
      expected = try store.snapshot()
      try store.close()
    }
    let store = try LogStore(path: path, options: Self.options)
    #expect(store.openReport.indexFile != nil)
    #expect(store.openReport.scannedRecords == 10)
    #expect(try store.snapshot() == expected)
    #expect(try store.statistics().liveItems == 10)
    try store.close()
  }

  @Test(
    "a table whose creation record is damaged keeps its items, through a checkpoint and an open from the index file"
  )
  func damagedCreationRecord() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let expected: [String: [String: String]]
    do {
      let store = try LogStore(path: path, options: Self.options)
      try store.createTable("t")
      for index in 0..<20 {
        try store.put(Array("v\(index)".utf8), forKey: Array("k\(index)".utf8), in: "t")
      }
      expected = try store.snapshot()
      try store.close()
    }
    // The first record after the header creates the table: its last byte flipped, it fails
    // its checksum, and the puts after it do not.
    let segment = try segmentFiles(in: path)[0]
    var bytes = try fileBytes(segment)
    bytes[SegmentHeader.size + RecordLayout.length(table: 1, key: 0, value: 0) - 1] ^= 0x01
    try writeFile(segment, bytes)
    do {
      let store = try LogStore(path: path, options: Self.options)
      #expect(try store.statistics().damagedRecords == 1)
      #expect(try store.snapshot() == expected)
      try store.checkpoint()
      try store.close()
    }
    let store = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(store.openReport.indexFile != nil)
    #expect(try store.snapshot() == expected)
  }

  @Test(
    "a close whose index file is found damaged while its keys are copied writes none; the next open reads everything"
  )
  func closeMeetsDamage() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let options = LogStore.Options(compaction: .manual)
    let value = [UInt8](repeating: 7, count: 1000)
    do {
      let store = try LogStore(path: path, options: options)
      try store.createTable("t")
      for index in 0..<5_000 {
        try store.put(value, forKey: Array(index.zeroPadded(width: 4).utf8), in: "t")
      }
      try store.close()
    }
    let written = try indexFiles(in: path)
    try #require(written.count == 1)
    // An entry in the middle of the table: the open checks the last ones only.
    var file = IndexFileBytes(try fileBytes(written[0]))
    file.bytes[file.entry(2_500, ofTable: try #require(file.tableRecord("t"))) + 18] ^= 0x01
    try writeFile(written[0], file.bytes)
    do {
      let store = try LogStore(path: path, options: options)
      #expect(store.openReport.indexFile != nil)
      // Enough written, in another table, for the close to copy the keys into a new file;
      // nothing before it reads table t's entries.
      try store.createTable("big")
      let big = [UInt8](repeating: 9, count: 1 << 20)
      for index in 0..<5 { try store.put(big, forKey: Array("b\(index)".utf8), in: "big") }
      try store.close()
    }
    #expect(try indexFiles(in: path) == written)
    let store = try LogStore(path: path, options: .init(readOnly: true))
    #expect(try store.value(forKey: Array("2500".utf8), in: "t") == value)
    #expect(try store.count(in: "t") == 5_000)
    #expect(try store.count(in: "big") == 5)
  }

  @Test(
    "an index file damaged while a compaction copies: no live key is lost, and the index is rebuilt from the log"
  )
  func damagedDuringCompaction() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    var expected: [String: [String: String]]
    do {
      let store = try LogStore(path: path, options: Self.options)
      // A key in the first segment that expires before the compaction.
      try store.createTable("e")
      try store.put(
        Array("soon".utf8), forKey: Array("k".utf8), in: "e",
        expiresAt: Timestamp(microsecondsSince1970: store.expiryNow() + 1_000_000))
      try fill(store)
      try store.checkpoint()
      expected = try store.snapshot()
      try store.close()
    }
    expected["e"] = [:]
    let index = try indexFiles(in: path)[0]
    let damaged = Self.damagingSlotGroups(try fileBytes(index), every: 3)
    let store = try LogStore(path: path, options: Self.options)
    #expect(store.openReport.indexFile != nil)
    store.expiryClock.skip(microseconds: 2_000_000)
    #expect(try segmentFiles(in: path).count > 1)
    var calls = 0
    try store.compact { _, _ in
      calls += 1
      // The compaction checked the file before its first input, whose records it judges
      // with the file whole (the expired key among them); the damage comes after that.
      guard calls == 2 else { return }
      do { try overwriteInPlace(index, with: damaged) } catch { Issue.record("\(error)") }
    }
    #expect(calls > 2)
    #expect(try store.statistics().indexMappedBytes == 0)
    let compacted = try store.snapshot()
    #expect(compacted["e"] == [:])
    try store.close()
    let reopened = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(try reopened.snapshot() == compacted)
    for (table, items) in expected {
      for (key, value) in items { #expect(compacted[table]?[key] == value, "\(table) \(key)") }
    }
    // No deleted key comes back: a lookup that meets the damage undoes the compaction, which
    // runs again on a directory rebuilt from the log (keeping each put a lookup could not
    // judge would keep puts whose keys were deleted, and the rebuild from the outputs would
    // find them).
    let back = compacted.flatMap { table, items in
      items.keys.filter { expected[table]?[$0] == nil }.map { "\(table)/\($0)" }
    }.sorted()
    #expect(back.isEmpty, "\(back.count) deleted keys are back: \(back.prefix(5)) …")
  }

  @Test(
    "an index file whose entries are damaged before a compaction: its list of live records meets the damage, and it runs on a directory rebuilt from the log, bringing back no deleted key"
  )
  func damagedEntriesBeforeCompaction() throws {
    // The first half of each table's entries, which the open does not read.
    let calls = try compactWithDamagedIndexFile(beforeCompaction: true) {
      Self.damagingSlotGroups($0, every: 3, entries: true, firstHalf: true)
    }
    // Undone once, then run again: each run reports its start.
    #expect(calls > 2)
  }

  @Test(
    "an index file damaged after a compaction copied, before it swaps: the swap does not read it, no key is lost, and the new index file is whole"
  )
  func damagedBeforeSwap() throws {
    // The swap points each key at its copy without looking it up in the file: the file's
    // entries were checked as compaction listed them, and a file never changes under a store
    // that uses it (only damage does that).
    try compactWithDamagedIndexFile(beforeCompaction: false) {
      Self.damagingSlotGroups($0, every: 2)
    }
  }

  /// Compacts a checkpointed store (``fill(_:keys:)``) whose index file `damage` damages, once
  /// the store is open (`beforeCompaction`) or once every record is copied, and checks that the
  /// compaction lost no key and brought none back: in the store, by `verify`, and reopened.
  /// Returns how many times the compaction reported its progress.
  @discardableResult
  private func compactWithDamagedIndexFile(
    beforeCompaction: Bool, damage: ([UInt8]) -> [UInt8],
    sourceLocation: SourceLocation = #_sourceLocation
  ) throws -> Int {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let expected: [String: [String: String]]
    do {
      let store = try LogStore(path: path, options: Self.options)
      try fill(store)
      try store.checkpoint()
      expected = try store.snapshot()
      try store.close()
    }
    let index = try indexFiles(in: path)[0]
    let damaged = damage(try fileBytes(index))
    let store = try LogStore(path: path, options: Self.options)
    #expect(store.openReport.indexFile != nil, sourceLocation: sourceLocation)
    if beforeCompaction { try overwriteInPlace(index, with: damaged) }
    var calls = 0
    try store.compact { done, total in
      calls += 1
      // The last call comes once every record is judged and copied.
      guard !beforeCompaction, done == total else { return }
      do { try overwriteInPlace(index, with: damaged) } catch { Issue.record("\(error)") }
    }
    // The index file written after is a new one.
    #expect(try indexFiles(in: path) != [index], sourceLocation: sourceLocation)
    #expect(try store.snapshot() == expected, sourceLocation: sourceLocation)
    try store.close()
    #expect(try LogStore.verify(path: path).problems.isEmpty, sourceLocation: sourceLocation)
    let reopened = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(try reopened.snapshot() == expected, sourceLocation: sourceLocation)
    return calls
  }

  @Test("creating a table that exists writes nothing, whatever the sync policy")
  func createExistingTable() throws {
    let directory = TemporaryDirectory()
    for sync in [SyncPolicy.never, .always] {
      let store = try LogStore(
        path: directory.appending("\(sync)"), options: .init(sync: sync, compaction: .manual))
      try store.createTable("t")
      try store.put([1], forKey: [1], in: "t")
      let before = try store.statistics().diskBytes
      try store.createTable("t")
      #expect(try store.statistics().diskBytes == before)
      #expect(try store.value(forKey: [1], in: "t") == [1])
      // A table dropped and created again is a new, empty one.
      try store.dropTable("t")
      try store.createTable("t")
      #expect(try store.count(in: "t") == 0)
      #expect(try store.statistics().diskBytes > before)
      try store.close()
    }
  }

  @Test("random changes, checkpoints and reopens keep the store equal to a model")
  func randomAgainstModel() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    var generator = SeededGenerator(seed: 15)
    var model: [String: [String: String]] = ["t": [:], "u": [:]]
    var store = try LogStore(path: path, options: Self.options)
    try store.createTable("t")
    try store.createTable("u")
    for step in 0..<TestDepth.choose(sample: 1_500, full: 6_000) {
      let table = Bool.random(using: &generator) ? "t" : "u"
      let key = "k\(Int.random(in: 0..<400, using: &generator))"
      switch Int.random(in: 0..<100, using: &generator) {
      case 0..<60:
        let value = "v\(step)"
        try store.put(Array(value.utf8), forKey: Array(key.utf8), in: table)
        model[table]![key] = value
      case 60..<85:
        try store.delete(key: Array(key.utf8), in: table)
        model[table]![key] = nil
      case 85..<90:
        let prefix = String(key.prefix(2))
        try store.deletePrefix(Array(prefix.utf8), in: table)
        model[table] = model[table]!.filter { !$0.key.hasPrefix(prefix) }
      case 90..<92:
        try store.clearTable(table)
        model[table] = [:]
      case 92..<96:
        try store.checkpoint()
      case 96..<98:
        try store.compact()
      default:
        try store.close()
        store = try LogStore(path: path, options: Self.options)
      }
      if step % 500 == 0 {
        #expect(try store.snapshot() == model, "step \(step)")
        for (table, items) in model {
          #expect(try store.count(in: table) == items.count, "step \(step)")
        }
      }
    }
    #expect(try store.snapshot() == model)
    try expectPointReads(store, model)
    let statistics = try store.statistics()
    try store.close()
    let scanned = try LogStore(path: path, options: .init(readOnly: true, indexFiles: false))
    #expect(try scanned.statistics().liveBytes == statistics.liveBytes)
    #expect(try scanned.statistics().liveItems == statistics.liveItems)
  }

  @Test("compaction writes an index file of its outputs (no hint files) and removes the one before")
  func compactionWritesIndex() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let store = try LogStore(
      path: path, options: .init(compaction: .manual, maxSegmentSize: 1 << 20))
    try fill(store)
    // Enough live data for compaction to write an index file (a small store gets hint files).
    let large = [UInt8](repeating: 0x41, count: 4096)
    for index in 0..<1_100 { try store.put(large, forKey: Array("large\(index)".utf8), in: "c") }
    try store.checkpoint()
    let first = try indexFiles(in: path)
    try store.put(Array("x".utf8), forKey: Array("key1".utf8), in: "a")
    try store.compact()
    let second = try indexFiles(in: path)
    #expect(first.count == 1 && second.count == 1 && first != second)
    let expected = try store.snapshot()
    try store.close()
    let reopened = try LogStore(path: path, options: Self.options)
    #expect(reopened.openReport.indexFile != nil)
    #expect(reopened.openReport.scannedRecords == 0)
    #expect(reopened.openReport.hintEntries == 0)
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(".hint") }
        .isEmpty)
    #expect(try reopened.snapshot() == expected)
  }

  @Test(
    "a compaction writes its outputs' index file and the store becomes it: writes of every kind made while it copies and after the file is written are kept, as in a store that never compacted"
  )
  func compactionIndexWithWritesMeanwhile() throws {
    let fileSystem = SimulatedFileSystem()
    var options = Self.options
    options.fileSystem = fileSystem
    // Small as it is, the store gets index files, so that compaction writes one.
    options.indexFileMinimumLiveBytes = 0
    let path = "/data/store"
    let store = try LogStore(path: path, options: options)
    var referenceOptions = Self.options
    referenceOptions.fileSystem = SimulatedFileSystem()
    let reference = try LogStore(path: path, options: referenceOptions)
    let both: @Sendable (_ change: (LogStore) throws -> Void) throws -> Void = { change in
      try change(store)
      try change(reference)
    }
    let bytes: @Sendable (String) -> [UInt8] = { Array($0.utf8) }
    // Keys in an index file (a base) and keys written after it, in several segments.
    try both { try fill($0) }
    try store.checkpoint()
    try both { target in
      for table in ["d", "e", "f", "empty", "quiet"] { try target.createTable(table) }
      for index in 0..<400 {
        try target.put(bytes("late \(index)"), forKey: bytes("key\(index * 3)"), in: "a")
        try target.put(bytes("d\(index)"), forKey: bytes("d\(index)"), in: "d")
        try target.put(bytes("e\(index)"), forKey: bytes("e\(index)"), in: "e")
        try target.put(bytes("f\(index)"), forKey: bytes("f\(index)"), in: "f")
      }
      try target.put(
        bytes("gone"), forKey: bytes("expired"), in: "f",
        expiresAt: Timestamp(microsecondsSince1970: 1))
    }
    // While it copies (after its first input): keys of the base and keys written since
    // overwritten and deleted, one by one and by prefix; tables cleared, dropped, made, and
    // dropped and made again.
    var copying = false
    let duringCopy: @Sendable (LogStore) throws -> Void = { target in
      try target.put(bytes("copying"), forKey: bytes("key2"), in: "a")
      try target.put(bytes("copying"), forKey: bytes("key3"), in: "a")
      try target.delete(key: bytes("key4"), in: "a")
      try target.delete(key: bytes("key6"), in: "a")
      try target.deletePrefix(bytes("k2"), in: "b")
      try target.clearTable("c")
      try target.dropTable("d")
      try target.createTable("new")
      try target.put(bytes("n"), forKey: bytes("n"), in: "new")
      try target.dropTable("e")
      try target.createTable("e")
      try target.put(bytes("again"), forKey: bytes("e1"), in: "e")
      // A creation with a lifetime of a table that exists: its creation record moves past the
      // compaction's inputs, and its keys stay.
      try target.createTable("f", defaultLifetime: 3_600_000_000)
      try target.createTable("empty", defaultLifetime: 60_000_000)
    }
    // Once the file is written, before the store takes it in.
    let written = Guarded(false)
    let afterFile: @Sendable (LogStore) throws -> Void = { target in
      try target.put(bytes("after"), forKey: bytes("key5"), in: "a")
      try target.put(bytes("after"), forKey: bytes("key2"), in: "a")
      try target.delete(key: bytes("key8"), in: "a")
      try target.deletePrefix(bytes("f1"), in: "f")
      try target.dropTable("new")
      try target.createTable("d")
      try target.put(bytes("d again"), forKey: bytes("d1"), in: "d")
      try target.put(bytes("fresh"), forKey: bytes("fresh"), in: "a")
      try target.createTable("later")
    }
    let failures = Guarded<[String]>([])
    fileSystem.callHook = { call in
      guard call.operation == "rename", call.path.hasSuffix(".index.tmp"),
        !written.withLock({ $0 })
      else { return }
      written.withLock { $0 = true }
      do { try both(afterFile) } catch { failures.withLock { $0.append("\(error)") } }
    }
    try store.compact { done, _ in
      guard done > 0, !copying else { return }
      copying = true
      do { try both(duringCopy) } catch { failures.withLock { $0.append("\(error)") } }
    }
    fileSystem.callHook = nil
    #expect(failures.withLock { $0 } == [])
    #expect(copying && written.withLock { $0 })
    // Two index files in all, the checkpoint's and the compaction's: the store took the
    // compaction's in, so no checkpoint followed it.
    #expect(
      fileSystem.log.filter { $0.operation == "rename" && $0.path.hasSuffix(".index.tmp") }.count
        == 2)
    let expected = try reference.snapshot()
    #expect(expected["a"]?["key2"] == "after" && expected["d"] == ["d1": "d again"])
    #expect(try store.snapshot() == expected)
    try expectPointReads(store, expected, "after the compaction")
    #expect(try store.statistics().liveItems == reference.statistics().liveItems)
    #expect(try store.statistics().tables == reference.statistics().tables)
    for table in ["f", "empty", "quiet", "later", "a"] {
      #expect(try store.lifetime(of: table) == reference.lifetime(of: table), "\(table)")
    }
    try store.close()
    #expect(try fileSystem.contentsOfDirectory(path).filter { $0.hasSuffix(".hint") }.isEmpty)
    #expect(try LogStore.verify(path: path, fileSystem: fileSystem).isClean)
    let reopened = try LogStore(path: path, options: options)
    #expect(reopened.openReport.indexFile != nil)
    #expect(try reopened.snapshot() == expected)
    try expectPointReads(reopened, expected, "reopened")
    #expect(try reopened.statistics().liveItems == reference.statistics().liveItems)
    // The file held every table's creation: a second compaction, then an open that reads the
    // log alone, keep the empty tables and the lifetimes.
    try reopened.compact()
    try reopened.close()
    var logOnly = options
    logOnly.indexFiles = false
    let fromLog = try LogStore(path: path, options: logOnly)
    defer { try? fromLog.close() }
    #expect(try fromLog.snapshot() == expected)
    for table in ["f", "empty", "quiet", "later"] {
      #expect(try fromLog.lifetime(of: table) == reference.lifetime(of: table), "\(table)")
    }
  }

  @Test(
    "automatic compactions under a stream of writes: one that finds the next due writes no index file, and once they catch up the store has the file of its last outputs"
  )
  func automaticCompactionsUnderWrites() throws {
    let fileSystem = SimulatedFileSystem()
    var options = LogStore.Options(
      compaction: .whenGarbageExceeds(fraction: 0.5), maxSegmentSize: 1 << 20)
    options.fileSystem = fileSystem
    options.indexFileMinimumLiveBytes = 0
    let path = "/data/store"
    let store = try LogStore(path: path, options: options)
    defer { try? store.close() }
    try store.createTable("t")
    // 8 MiB of 1 KiB values over 500 keys: the garbage passes 4 MiB and half the disk, again
    // and again while compactions run.
    let value = [UInt8](repeating: 0x61, count: 1024)
    for round in 0..<16 {
      for key in 0..<500 {
        try store.put(value + Array("\(round)".utf8), forKey: Array("k\(key)".utf8), in: "t")
      }
    }
    try store.waitForCompaction()
    let renames = fileSystem.log.filter { $0.operation == "rename" }.map(\.path)
    #expect(renames.contains { $0.hasSuffix(".log.tmp") }, "no compaction ran: \(renames)")
    let expected = try store.snapshot()
    #expect(
      expected["t"]?.count == 500
        && expected["t"]?["k7"] == String(repeating: "a", count: 1024) + "15")
    // Whichever way the last compaction went (its own file, or a checkpoint after it), one
    // index file is left, and it covers the store's segments.
    let indexFiles = try fileSystem.contentsOfDirectory(path).filter { $0.hasSuffix(".index") }
    #expect(indexFiles.count == 1, "\(indexFiles)")
    try store.close()
    let reopened = try LogStore(path: path, options: options)
    defer { try? reopened.close() }
    #expect(reopened.openReport.indexFile != nil)
    #expect(try reopened.snapshot() == expected)
  }

  /// A filled store on a simulated file system, with an index file of the segments a
  /// compaction will replace.
  private func checkpointedSimulatedStore() throws -> (
    SimulatedFileSystem, LogStore.Options, String, LogStore
  ) {
    let fileSystem = SimulatedFileSystem()
    var options = Self.options
    options.fileSystem = fileSystem
    let path = "/data/store"
    let store = try LogStore(path: path, options: options)
    try fill(store, keys: 300)
    try store.checkpoint()
    return (fileSystem, options, path, store)
  }

  @Test(
    "a checkpoint that finds a record written meanwhile gone bad keeps the directory it has: the records after it stay"
  )
  func checkpointMeetsDamageAfterItsPosition() throws {
    let (fileSystem, _, path, store) = try checkpointedSimulatedStore()
    // Once the file is written (the store's lock free, the position taken): three records
    // after the position, the middle one then changed on the disk. Taking the file in reads
    // them back; the store's writes went on past the bad one, so it is damage.
    let written = Guarded(false)
    let failures = Guarded<[String]>([])
    fileSystem.callHook = { call in
      guard call.operation == "rename", call.path.hasSuffix(".index.tmp"),
        !written.withLock({ $0 })
      else { return }
      written.withLock { $0 = true }
      do {
        for name in ["z0", "z1", "z2"] {
          try store.put(Array("value of \(name)".utf8), forKey: Array(name.utf8), in: "a")
        }
        let segment = try #require(
          try fileSystem.contentsOfDirectory(path).filter { $0.hasSuffix(".log") }.max())
        let handle = try fileSystem.openFile(path + "/" + segment, mode: .readWrite)
        defer { handle.close() }
        let bytes = try handle.readBytes(count: try handle.size())
        let pattern = Array("z1value of z1".utf8)
        let at = try #require(
          (0...(bytes.count - pattern.count)).last {
            bytes[$0..<$0 + pattern.count].elementsEqual(pattern)
          })
        let changed = [bytes[at + pattern.count - 1] ^ 0x01]
        try changed.withUnsafeBytes { try handle.write($0, at: at + pattern.count - 1) }
      } catch {
        failures.withLock { $0.append("\(error)") }
      }
    }
    try store.checkpoint()
    fileSystem.callHook = nil
    #expect(failures.withLock { $0 } == [])
    #expect(written.withLock { $0 })
    #expect(try store.value(forKey: Array("z0".utf8), in: "a") == Array("value of z0".utf8))
    #expect(try store.value(forKey: Array("z2".utf8), in: "a") == Array("value of z2".utf8))
    #expect(throws: LogStoreError.self) { try store.value(forKey: Array("z1".utf8), in: "a") }
    try store.close()
  }

  @Test("a checkpoint made as a compaction ends keeps its index file; the one before goes")
  func checkpointAsCompactionEnds() throws {
    let (fileSystem, options, path, store) = try checkpointedSimulatedStore()
    let before = try fileSystem.contentsOfDirectory(path).filter { $0.hasSuffix(".index") }
    // The compaction has ended when it removes its inputs: a checkpoint then (another
    // thread's, which waited for it) writes a file of its outputs, which must stay.
    let checkpoints = Guarded(0)
    let failures = Guarded<[String]>([])
    fileSystem.callHook = { call in
      guard call.operation == "unlink", call.path.hasSuffix(".log"),
        checkpoints.withLock({ $0 == 0 })
      else { return }
      checkpoints.withLock { $0 += 1 }
      do { try store.checkpoint() } catch { failures.withLock { $0.append("\(error)") } }
    }
    try store.compact()
    fileSystem.callHook = nil
    #expect(failures.withLock { $0 } == [])
    #expect(checkpoints.withLock { $0 } == 1)
    let after = try fileSystem.contentsOfDirectory(path).filter { $0.hasSuffix(".index") }
    #expect(before.count == 1 && after.count == 1 && before != after, "\(before) → \(after)")
    let expected = try store.snapshot()
    try store.close()
    let reopened = try LogStore(path: path, options: options)
    defer { try? reopened.close() }
    #expect(reopened.openReport.indexFile != nil)
    #expect(try reopened.snapshot() == expected)
  }

  @Test("a compaction that cannot remove the old index file says so; the store stays right")
  func indexFileRemovalFails() throws {
    let (fileSystem, options, path, store) = try checkpointedSimulatedStore()
    let expected = try store.snapshot()
    // The unlink of the index file fails once, with EIO.
    fileSystem.callHook = { call in
      guard call.operation == "unlink", call.path.hasSuffix(".index"), let number = call.number
      else { return }
      fileSystem.inject(.init(call: number, errorNumber: EIO, persistent: false))
    }
    #expect(throws: LogStoreError.self) { try store.compact() }
    fileSystem.callHook = nil
    // The compaction itself is done: the store reads as before, and so does the next open,
    // which finds the index file of segments that are gone and reads the log instead.
    #expect(try store.snapshot() == expected)
    try store.close()
    let reopened = try LogStore(path: path, options: options)
    defer { try? reopened.close() }
    #expect(reopened.openReport.indexFile == nil)
    #expect(try reopened.snapshot() == expected)
    #expect(try LogStore.verify(path: path, fileSystem: fileSystem).problems.isEmpty)
  }

  @Test("compaction of a small store writes hint files and no index file")
  func smallStoreGetsHints() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let store = try LogStore(path: path, options: Self.options)
    try fill(store)
    try store.compact()
    try store.close()
    #expect(try indexFiles(in: path).isEmpty)
    let reopened = try LogStore(path: path, options: Self.options)
    #expect(reopened.openReport.hintedSegments > 0)
  }

  @Test("close writes an index file when much was written since the last, not otherwise")
  func closePolicy() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    var store = try LogStore(path: path, options: Self.options)
    try store.createTable("t")
    let value = [UInt8](repeating: 7, count: 1000)
    for index in 0..<5_000 { try store.put(value, forKey: Array("key\(index)".utf8), in: "t") }
    try store.close()
    let written = try indexFiles(in: path)
    #expect(written.count == 1)
    store = try LogStore(path: path, options: Self.options)
    #expect(store.openReport.scannedRecords == 0)
    // A little more: not worth a new file at close.
    for index in 0..<10 { try store.put(value, forKey: Array("key\(index)".utf8), in: "t") }
    try store.close()
    #expect(try indexFiles(in: path) == written)
    store = try LogStore(path: path, options: Self.options)
    #expect(store.openReport.scannedRecords == 10)
    #expect(try store.count(in: "t") == 5_000)
  }

  @Test("without indexFiles, none is written and a writer's open removes those there")
  func turnedOff() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    try checkpointedStore(at: path)
    #expect(try indexFiles(in: path).count == 1)
    var options = Self.options
    options.indexFiles = false
    let reopened = try LogStore(path: path, options: options)
    #expect(reopened.openReport.indexFile == nil)
    #expect(try indexFiles(in: path).isEmpty)
    try reopened.checkpoint()
    try reopened.compact()
    try reopened.close()
    #expect(try indexFiles(in: path).isEmpty)
  }

  // MARK: Damage

  /// A closed, checkpointed store with writes after the checkpoint, its expected contents, and
  /// its index file.
  private func checkpointedStore(_ directory: TemporaryDirectory, keys: Int = 300) throws -> (
    path: String, expected: [String: [String: String]], index: String
  ) {
    let path = directory.appending("store")
    let store = try LogStore(path: path, options: Self.options)
    try fill(store, keys: keys)
    try store.checkpoint()
    try store.put(Array("after".utf8), forKey: Array("key2".utf8), in: "a")
    try store.delete(key: Array("key3".utf8), in: "a")
    let expected = try store.snapshot()
    try store.close()
    return (path, expected, try indexFiles(in: path)[0])
  }

  @Test(
    "an index file of an older version (2: tables in the directory) is not used: the open reads the log, and the next checkpoint writes the current version"
  )
  func olderVersion() throws {
    let directory = TemporaryDirectory()
    let (path, expected, index) = try checkpointedStore(directory)
    var file = IndexFileBytes(try fileBytes(index))
    file.store(UInt16(2), at: 8)
    storeChecksum(&file.bytes, at: 60, of: 0..<60)
    try writeFile(index, file.bytes)
    let store = try LogStore(path: path, options: Self.options)
    #expect(store.openReport.indexFile == nil)
    #expect(
      Array(store.openReport.rejectedIndexFiles.values) == [
        "it is in version 2; this library reads 3"
      ])
    #expect(try store.snapshot() == expected)
    try store.checkpoint()
    try store.close()
    let reopened = try LogStore(path: path, options: .init(readOnly: true))
    #expect(reopened.openReport.indexFile != nil)
    let written = IndexFileBytes(try fileBytes(try indexFiles(in: path)[0]))
    #expect(written.field(8, 2) == Int(IndexFileFormat.version))
    #expect(try reopened.snapshot() == expected)
  }

  @Test("a flipped byte anywhere in the index file never changes what the store returns")
  func flippedBytes() throws {
    let directory = TemporaryDirectory()
    let (path, expected, index) = try checkpointedStore(directory)
    let original = try fileBytes(index)
    var used = 0
    var rejected = 0
    // Every byte of the header, a third of the directory's, a sample of the rest spread over
    // every part; each under one of the two corruption policies. At sample depth a ninth of
    // the directory's, and of the rest the first and last bytes of every part and every
    // 211th.
    let positions =
      Array(0..<64) + Array(stride(from: 64, to: 200, by: TestDepth.choose(sample: 9, full: 3)))
      + Array(stride(from: 200, to: original.count, by: TestDepth.choose(sample: 211, full: 29)))
      + (TestDepth.isFull ? [] : Self.partEdges(of: original).sorted() + [original.count - 1])
    for position in positions where position < original.count {
      var damaged = original
      damaged[position] ^= 1 << (position % 8)
      try writeFile(index, damaged)
      do {
        let corruption = position % 2 == 0 ? CorruptionPolicy.fail : .salvage
        let store = try LogStore(path: path, options: .init(readOnly: true, corruption: corruption))
        if store.openReport.indexFile != nil { used += 1 } else { rejected += 1 }
        try expectPointReads(store, expected)
        #expect(try store.snapshot() == expected, "byte \(position)")
      }
    }
    // Damage in the header or directory is found at open; in a table's parts, when read.
    #expect(used > 0 && rejected > 0)
  }

  @Test("a writer that finds the index file damaged while writing rebuilds from the log")
  func writerMeetsDamage() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let expected: [String: [String: String]]
    do {
      let store = try LogStore(path: path, options: Self.options)
      try fill(store, keys: 300)
      try store.checkpoint()
      expected = try store.snapshot()
      try store.close()
    }
    let index = try indexFiles(in: path)[0]
    try writeFile(index, Self.damagingSlotGroups(try fileBytes(index), every: 5))
    let store = try LogStore(path: path, options: Self.options)
    #expect(store.openReport.indexFile != nil)
    try store.put(Array("later".utf8), forKey: Array("key5".utf8), in: "a")
    try store.delete(key: Array("key6".utf8), in: "a")
    var model = expected
    model["a"]!["key5"] = "later"
    model["a"]!["key6"] = nil
    #expect(try store.snapshot() == model)
    try expectPointReads(store, model)
    #expect(try store.count(in: "a") == model["a"]!.count)
    try store.close()
  }

  @Test("verify checks an index file in full: damage is a problem, a stale one a note")
  func verification() throws {
    let directory = TemporaryDirectory()
    let (path, _, index) = try checkpointedStore(directory)
    var report = try LogStore.verify(path: path)
    #expect(report.isClean, "\(report.problems)")
    #expect(report.indexFiles == 1)
    let original = try fileBytes(index)
    // Damage in each part: the header, the directory, and the tables' parts after them.
    for position in [10, 70, original.count / 3, original.count / 2, original.count * 3 / 4] {
      var damaged = original
      damaged[position] ^= 0x04
      try writeFile(index, damaged)
      report = try LogStore.verify(path: path)
      #expect(!report.isClean, "byte \(position)")
      #expect(report.problems.allSatisfy { $0.file.hasSuffix(".index") }, "byte \(position)")
    }
    // Once a compaction replaced its segments, the file is stale: compaction removes it, and
    // one put back is noted, not used, and removed at the next open.
    try writeFile(index, original)
    let store = try LogStore(path: path, options: Self.options)
    try store.compact()
    try store.close()
    #expect(try indexFiles(in: path).isEmpty)
    try writeFile(index, original)
    report = try LogStore.verify(path: path)
    #expect(report.isClean)
    #expect(report.notes.contains { $0.file == URL(fileURLWithPath: index).lastPathComponent })
    let reopened = try LogStore(path: path, options: Self.options)
    #expect(reopened.openReport.indexFile == nil)
    #expect(reopened.openReport.rejectedIndexFiles.count == 1)
    #expect(try indexFiles(in: path).isEmpty)
  }

  @Test(
    "damage the open's deferred lookups meet is found when they are settled: the whole log is read then"
  )
  func damagedIndexAndRecord() throws {
    let directory = TemporaryDirectory()
    let (path, expected, index) = try checkpointedStore(directory)
    // Every slot group damaged, so that settling the writes after the file meets it; and a
    // record the file covers damaged too, which only reading the whole log finds.
    try writeFile(index, Self.damagingSlotGroups(try fileBytes(index), every: 7))
    let segment = try segmentFiles(in: path)[0]
    var records = try fileBytes(segment)
    records[SegmentHeader.size + 200] ^= 0x01
    try writeFile(segment, records)
    for corruption in [CorruptionPolicy.fail, .salvage] {
      // The open checks the file's header and directory, intact, and leaves the lookups of the
      // keys written after it for later: it uses the file, reading none of the log it covers.
      let store = try LogStore(path: path, options: .init(readOnly: true, corruption: corruption))
      #expect(store.openReport.indexFile != nil)
      // The first count settles them, meets the damage, and reads the whole log instead,
      // counting the damaged record as a rebuild always does (``LogStore/Options/corruption``
      // is the open's policy).
      let statistics = try store.statistics()
      #expect(statistics.damagedRecords >= 1)
      #expect(statistics.indexMappedBytes == 0)
      // Everything but what the damaged record held is there.
      let found = try store.snapshot()
      #expect(found.keys.sorted() == expected.keys.sorted())
      let foundCount = found.values.reduce(0) { $0 + $1.count }
      let expectedCount = expected.values.reduce(0) { $0 + $1.count }
      #expect(foundCount <= expectedCount)
      #expect(statistics.liveItems == foundCount)
      try store.close()
    }
    // Read-only opens leave the file; a writer that finds it damaged keeps it (its position
    // holds for the log after it) until its close writes a new one in its place.
    #expect(try indexFiles(in: path) == [index])
    let writer = try LogStore(path: path, options: Self.options)
    #expect(writer.openReport.indexFile != nil)
    let rebuilt = try writer.statistics()
    #expect(rebuilt.indexMappedBytes == 0)
    #expect(try indexFiles(in: path) == [index])
    let found = try writer.snapshot()
    try writer.close()
    let written = try indexFiles(in: path)
    #expect(written.count == 1 && written != [index])
    let reopened = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(reopened.openReport.indexFile != nil)
    #expect(try reopened.snapshot() == found)
    #expect(try reopened.statistics().liveItems == rebuilt.liveItems)
  }

  /// Writes `bytes` over the file at `path` in place (same file, so a mapping of it sees them).
  private func overwriteInPlace(_ path: String, with bytes: [UInt8]) throws {
    let handle = try #require(FileHandle(forUpdatingAtPath: path))
    defer { try? handle.close() }
    try handle.seek(toOffset: 0)
    try handle.write(contentsOf: Data(bytes))
  }

  @Test(
    "an index file damaged while the store has it mapped: reads, checkpoints and compaction rebuild from the log"
  )
  func damagedWhileOpen() throws {
    for step in ["read", "iterate", "checkpoint", "compact", "write"] {
      let directory = TemporaryDirectory()
      let (path, expected, index) = try checkpointedStore(directory)
      let store = try LogStore(path: path, options: Self.options)
      #expect(store.openReport.indexFile != nil)
      try overwriteInPlace(
        index,
        with: Self.damagingSlotGroups(
          try fileBytes(index), every: 3, entries: ["read", "iterate", "checkpoint"].contains(step))
      )
      switch step {
      case "read": try expectPointReads(store, expected)
      case "iterate": #expect(try store.snapshot() == expected)
      case "checkpoint":
        // Settling the keys written after the file meets the damage: the directory is rebuilt
        // from the log, the damaged file removed, and a new one written from the rebuilt one.
        try store.checkpoint()
        let files = try indexFiles(in: path)
        #expect(files.count == 1 && files != [index])
      case "compact": try store.compact()
      default:
        try store.put(Array("w".utf8), forKey: Array("key5".utf8), in: "a")
        try store.delete(key: Array("key5".utf8), in: "a")
        try store.deletePrefix(Array("nothing".utf8), in: "a")
      }
      var model = expected
      if step == "write" { model["a"]!["key5"] = nil }
      try expectPointReads(store, model, "\(step)")
      #expect(try store.snapshot() == model, "\(step)")
      // (A checkpoint maps the file it wrote.)
      #expect(
        try store.statistics().indexMappedBytes == 0 || step == "checkpoint",
        "\(step): the damaged file is still used")
      try store.close()
      let reopened = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
      #expect(try reopened.snapshot() == model, "\(step)")
    }
  }

  @Test("a writer's open meeting a damaged index file while replaying reads the whole log")
  func writerOpenMeetsDamage() throws {
    let directory = TemporaryDirectory()
    // Several segments: the whole log is read in their order.
    let (path, _, index) = try checkpointedStore(directory, keys: 1_500)
    #expect(try segmentFiles(in: path).count > 1)
    // A prefix deleted after the file: replaying it reads the file's keys in order, which
    // the open cannot leave for later, and meets the damage.
    let expected: [String: [String: String]]
    do {
      let store = try LogStore(path: path, options: Self.options)
      try store.deletePrefix(Array("key1".utf8), in: "a")
      expected = try store.snapshot()
      try store.close()
    }
    #expect(try indexFiles(in: path) == [index])
    // The first half of each table's entries: the open's checks (which read the last entries)
    // pass, and the prefix's place among the keys is found in the damage.
    try writeFile(
      index, Self.damagingSlotGroups(try fileBytes(index), every: 3, entries: true, firstHalf: true)
    )
    let store = try LogStore(path: path, options: Self.options)
    #expect(store.openReport.rejectedIndexFiles.values.contains("a part of it is damaged"))
    #expect(store.openReport.indexFile == nil)
    #expect(try store.snapshot() == expected)
    // The file stays until the close writes a new one in its place.
    #expect(try indexFiles(in: path) == [index])
    try store.put(Array("more".utf8), forKey: Array("key9".utf8), in: "a")
    try store.close()
    let written = try indexFiles(in: path)
    #expect(written.count == 1 && written != [index])
    let reopened = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(reopened.openReport.indexFile != nil)
    #expect(try reopened.value(forKey: Array("key9".utf8), in: "a") == Array("more".utf8))
  }

  @Test(
    "the whole log read after an index file found damaged at open follows the corruption policy: damage in it is counted, or refused"
  )
  func damageInTheLogBehindADamagedIndexFile() throws {
    let directory = TemporaryDirectory()
    let (path, _, index) = try checkpointedStore(directory)
    var expected: [String: [String: String]]
    do {
      let store = try LogStore(path: path, options: Self.options)
      var batch = WriteBatch()
      batch.put(Array("batched".utf8), forKey: Array("key2000".utf8), in: "a")
      batch.delete(key: Array("key2".utf8), in: "a")
      try store.write(batch)
      // Replaying this prefix's delete reads the file's keys, and meets the damage.
      try store.deletePrefix(Array("key1".utf8), in: "a")
      expected = try store.snapshot()
      try store.close()
    }
    try writeFile(
      index, Self.damagingSlotGroups(try fileBytes(index), every: 3, entries: true, firstHalf: true)
    )
    // And a record the index file covered, which only the whole log's reading meets. Found by
    // its key and value together, which a record holds one after the other: the value alone
    // also matched key25's "value 25" when the next record's first byte was "0" (once in a few
    // hundred runs, the checksums varying with the time), and that record was damaged instead.
    let keyAndValue = Array("key250value 250".utf8)
    var damaged = false
    for segment in try segmentFiles(in: path) where !damaged {
      var bytes = try fileBytes(segment)
      guard
        let at = (0...(bytes.count - keyAndValue.count)).first(where: {
          bytes[$0..<$0 + keyAndValue.count].elementsEqual(keyAndValue)
        })
      else { continue }
      // A byte of the value.
      bytes[at + "key250".utf8.count + 2] ^= 0x20
      try writeFile(segment, bytes)
      damaged = true
    }
    #expect(damaged)
    expected["a"]!["key250"] = nil

    let error = #expect(throws: LogStoreError.self) {
      try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    }
    #expect(error?.code == .corrupted)
    let store = try LogStore(path: path, options: .init(readOnly: true))
    #expect(store.openReport.rejectedIndexFiles.values.contains("a part of it is damaged"))
    #expect(try store.statistics().damagedRecords == 1)
    #expect(try store.snapshot() == expected)
    try store.close()
  }

  /// A closed store (tables t and w; t's keys `k0` to `k39`) whose one segment holds, in the
  /// part its index file covers, stray copies of the records written after the file, and has
  /// lost those records themselves: what a write landing at the wrong place, then a power
  /// failure before the right place's pages reached the disk, would leave. The copies are
  /// numbered from the file's next sequence number on, as a writer that opens over the file
  /// numbers its own records. Returns the store's path and its index file.
  private func strayCopiesStore(_ directory: TemporaryDirectory) throws -> (
    path: String, index: String
  ) {
    let path = directory.appending("stray")
    do {
      let store = try LogStore(path: path, options: Self.options)
      for table in ["t", "w"] { try store.createTable(table) }
      for index in 0..<40 {
        try store.put(Array("v\(index)".utf8), forKey: Array("k\(index)".utf8), in: "t")
      }
      try store.checkpoint()
      for index in 0..<6 {
        try store.put(Array("lost \(index)".utf8), forKey: Array("x\(index)".utf8), in: "w")
      }
      try store.close()
    }
    let index = try #require(try indexFiles(in: path).first)
    let segments = try segmentFiles(in: path)
    // No hint or changes file: the log after the file is read from the segment.
    try #require(
      try FileManager.default.contentsOfDirectory(atPath: path).sorted()
        == ["000001.log", index.split(separator: "/").last.map(String.init)!, "LOCK", "MANIFEST"])
    let file = IndexFileBytes(try fileBytes(index))
    try #require(file.field(40, 4) == 1)
    let covered = file.field(IndexFileFormat.headerSize + 8, 8)
    var bytes = try fileBytes(segments[0])
    let strays = Array(bytes[covered..<(try recordBytes(segments[0]).count)])
    let place = covered / 2
    try #require(place > SegmentHeader.size && place + strays.count < covered)
    bytes.replaceSubrange(place..<place + strays.count, with: strays)
    bytes.replaceSubrange(covered..., with: repeatElement(0, count: bytes.count - covered))
    try writeFile(segments[0], bytes)
    return (path, index)
  }

  /// The writes a writer makes over the index file of a ``strayCopiesStore(_:)``: numbered from
  /// the file's next sequence number on, as the stray copies are.
  private func writeOverStrayCopies(_ store: LogStore) throws {
    try store.put(Array("new".utf8), forKey: Array("y0".utf8), in: "w")
    try store.put(Array("newer".utf8), forKey: Array("y1".utf8), in: "t")
  }

  /// Checks that `store` holds the writes made over the index file of a ``strayCopiesStore(_:)``
  /// (``writeOverStrayCopies(_:)``), and the keys of t the damage left (the first ones).
  private func expectWritesOverStrayCopies(
    _ store: LogStore, _ context: String, sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    #expect(
      try store.value(forKey: Array("y0".utf8), in: "w") == Array("new".utf8), "\(context)",
      sourceLocation: sourceLocation)
    #expect(
      try store.value(forKey: Array("y1".utf8), in: "t") == Array("newer".utf8), "\(context)",
      sourceLocation: sourceLocation)
    #expect(
      try store.value(forKey: Array("k0".utf8), in: "t") == Array("v0".utf8), "\(context)",
      sourceLocation: sourceLocation)
  }

  /// Checks that `store`, opened again on a ``strayCopiesStore(_:)`` written over and rebuilt
  /// (or on a copy of one), holds the writes made over its index file and exactly `expected`,
  /// the rebuilt store's snapshot; then closes it.
  private func expectRebuiltAgain(
    _ store: LogStore, _ expected: [String: [String: String]], _ context: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    try expectWritesOverStrayCopies(store, context, sourceLocation: sourceLocation)
    _ = try store.statistics()
    #expect(try store.snapshot() == expected, "\(context)", sourceLocation: sourceLocation)
    try store.close()
  }

  @Test(
    "a directory rebuilt after the open keeps the writes made over the damaged index file, though the part it covered holds stray copies numbered as they are"
  )
  func rebuildBesideStrayCopies() throws {
    let directory = TemporaryDirectory()
    let (path, index) = try strayCopiesStore(directory)
    try writeFile(index, Self.damagingSlotGroups(try fileBytes(index), every: 3))
    let store = try LogStore(path: path, options: Self.options)
    #expect(store.openReport.indexFile != nil)
    try writeOverStrayCopies(store)
    // Reading every table meets the damage: the directory is rebuilt from the log, whose
    // part the file covered now reads as damaged.
    let rebuilt = try store.snapshot()
    #expect(try store.statistics().indexMappedBytes == 0)
    #expect(try store.statistics().damagedRecords > 0)
    try expectWritesOverStrayCopies(store, "rebuilt")
    // Had the process died now: the damaged file is still there, and an open that meets its
    // damage reads the log after it as this store did.
    let died = directory.appending("died")
    try copyDirectory(path, to: died)
    for options in [LogStore.Options(readOnly: true), Self.options] {
      let other = try LogStore(path: died, options: options)
      try expectRebuiltAgain(other, rebuilt, "died, readOnly \(options.readOnly)")
    }
    // A close writes a new index file in place of the damaged one.
    try store.close()
    let written = try indexFiles(in: path)
    #expect(written.count == 1 && written != [index])
    do {
      let reopened = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
      #expect(reopened.openReport.indexFile != nil)
      #expect(try reopened.snapshot() == rebuilt)
    }
    let writer = try LogStore(path: path, options: Self.options)
    try writer.compact()
    #expect(try writer.snapshot() == rebuilt)
    try writer.close()
    let compacted = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(try compacted.snapshot() == rebuilt)
  }

  @Test(
    "a backup of a store whose index file is damaged, before and after the store meets the damage, keeps the writes made over it beside the stray copies"
  )
  func backupBesideStrayCopies() throws {
    let directory = TemporaryDirectory()
    let (path, index) = try strayCopiesStore(directory)
    try writeFile(index, Self.damagingSlotGroups(try fileBytes(index), every: 3))
    let store = try LogStore(path: path, options: Self.options)
    try writeOverStrayCopies(store)
    // Before: the file is in use, and the copy's open uses it too.
    try store.backup(to: directory.appending("before"))
    let rebuilt = try store.snapshot()
    #expect(try store.statistics().indexMappedBytes == 0)
    // After: the damaged file, set aside, is what lets the copy read the log after it.
    try store.backup(to: directory.appending("after"))
    for name in ["before", "after"] {
      for options in [LogStore.Options(readOnly: true), Self.options] {
        let copy = try LogStore(path: directory.appending(name), options: options)
        #expect(copy.openReport.indexFile != nil, "\(name), readOnly \(options.readOnly)")
        try expectRebuiltAgain(copy, rebuilt, "\(name), readOnly \(options.readOnly)")
      }
    }
  }

  @Test(
    "an open that finds the index file damaged while replaying keeps the writes made over it, though the part it covered holds stray copies numbered as they are"
  )
  func openRebuildBesideStrayCopies() throws {
    let directory = TemporaryDirectory()
    let (path, index) = try strayCopiesStore(directory)
    do {
      let store = try LogStore(path: path, options: Self.options)
      try writeOverStrayCopies(store)
      // Replaying this prefix's delete reads the file's keys, and meets the damage.
      try store.deletePrefix(Array("k3".utf8), in: "t")
      try store.close()
    }
    #expect(try indexFiles(in: path) == [index])
    try writeFile(
      index, Self.damagingSlotGroups(try fileBytes(index), every: 3, entries: true, firstHalf: true)
    )
    for options in [LogStore.Options(readOnly: true), Self.options] {
      let store = try LogStore(path: path, options: options)
      #expect(store.openReport.rejectedIndexFiles.values.contains("a part of it is damaged"))
      try expectWritesOverStrayCopies(store, "readOnly \(options.readOnly)")
      #expect(try store.value(forKey: Array("k3".utf8), in: "t") == nil)
      // The writer keeps the file until its close writes a new one: had the process died
      // before, the next open would read the log after the file's position as this one did.
      #expect(try indexFiles(in: path) == [index])
      if !options.readOnly {
        let died = directory.appending("died")
        try copyDirectory(path, to: died)
        let other = try LogStore(path: died, options: .init(readOnly: true))
        try expectWritesOverStrayCopies(other, "died")
      }
      try store.close()
    }
    let written = try indexFiles(in: path)
    #expect(written.count == 1 && written != [index])
    let reopened = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    try expectWritesOverStrayCopies(reopened, "reopened")
  }

  @Test(
    "a close that writes a new index file in place of a damaged one, crashed at each of its calls, leaves the writes made over the damaged file: after a process crash and a power loss"
  )
  func closeReplacingDamagedFileCrashes() throws {
    let directory = TemporaryDirectory()
    let (path, index) = try strayCopiesStore(directory)
    try writeFile(index, Self.damagingSlotGroups(try fileBytes(index), every: 3))
    var files: [String: [UInt8]] = [:]
    for name in try FileManager.default.contentsOfDirectory(atPath: path) where name != "LOCK" {
      files["/store/" + name] = try fileBytes(path + "/" + name)
    }
    func options(_ fileSystem: SimulatedFileSystem, readOnly: Bool = false) -> LogStore.Options {
      var options = LogStore.Options(sync: .always, readOnly: readOnly, compaction: .manual)
      options.fileSystem = fileSystem
      return options
    }
    /// The writes over the damaged file, its rebuild, then the close; returns what the store
    /// held and the calls made before the close began.
    func session(_ fileSystem: SimulatedFileSystem) throws -> ([String: [String: String]], Int) {
      let store = try LogStore(path: "/store", options: options(fileSystem))
      try writeOverStrayCopies(store)
      let held = try store.snapshot()
      #expect(try store.statistics().indexMappedBytes == 0)
      let before = fileSystem.calls
      try store.close()
      return (held, before)
    }
    let probe = SimulatedFileSystem(files: files)
    let (expected, first) = try session(probe)
    // The close wrote a new index file and removed the damaged one.
    let names = probe.files.keys.filter { $0.hasSuffix(".index") }
    #expect(names.count == 1 && names.first != "/store/" + index.split(separator: "/").last!)
    let last = probe.calls
    #expect(last - first > 5)
    for call in first + 1...last {
      for mode in [SimulatedFileSystem.CrashMode.process, .power(seed: UInt64(call))] {
        let fileSystem = SimulatedFileSystem(files: files)
        fileSystem.crash(atCall: call, mode: mode)
        _ = try? session(fileSystem)
        let image = try #require(fileSystem.crashImage, "call \(call) was never reached")
        for readOnly in [true, false] {
          let store = try LogStore(
            path: "/store", options: options(SimulatedFileSystem(files: image), readOnly: readOnly))
          try expectRebuiltAgain(
            store, expected, "crash at call \(call) (\(mode)), readOnly \(readOnly)")
        }
      }
    }
  }

  @Test(
    "verify reads the part of the log the index file covers as damaged where it is, never as a torn tail the next open would clear"
  )
  func verifyBesideStrayCopies() throws {
    let directory = TemporaryDirectory()
    let (path, index) = try strayCopiesStore(directory)
    let covered = IndexFileBytes(try fileBytes(index)).field(IndexFileFormat.headerSize + 8, 8)
    let report = try LogStore.verify(path: path)
    let segment = try #require(try segmentFiles(in: path).first?.split(separator: "/").last)
    // The open over the file does not read those bytes, and a writer's open does not clear
    // them: damage in the log, a problem.
    #expect(
      report.problems.contains {
        $0.file == String(segment) && ($0.offset ?? .max) < covered
      }, "\(report.problems)")
    #expect(!report.notes.contains { $0.message.contains("torn tail") }, "\(report.notes)")
    // After the covered part, the log is read as an open reads it: the zeros after the
    // position are its clean end.
    #expect(!report.problems.contains { ($0.offset ?? 0) >= covered }, "\(report.problems)")
  }

  @Test(
    "a rebuild reads the active segment up to the end the store knows: a record gone bad under the running store is damage, and the records after it stay"
  )
  func rebuildMeetsDamageInItsOwnWrites() throws {
    let directory = TemporaryDirectory()
    let (path, _, index) = try paddedStore(directory)
    let store = try LogStore(path: path, options: Self.options)
    #expect(store.openReport.indexFile != nil)
    for name in ["z0", "z1", "z2"] {
      try store.put(Array("value of \(name)".utf8), forKey: Array(name.utf8), in: "t")
    }
    // A byte of z1's value changes on the disk (no sync mark follows the three records), and
    // the index file is damaged: the next read of every key rebuilds the directory.
    let segment = try #require(try segmentFiles(in: path).last)
    let bytes = try fileBytes(segment)
    let pattern = Array("z1value of z1".utf8)
    let at = try #require(
      (0...(bytes.count - pattern.count)).first {
        bytes[$0..<$0 + pattern.count].elementsEqual(pattern)
      })
    var changed = bytes
    changed[at + pattern.count - 1] ^= 0x01
    try overwriteInPlace(segment, with: changed)
    try overwriteInPlace(
      index, with: Self.damagingSlotGroups(try fileBytes(index), every: 3, entries: true))
    // The keys alone, read first: z1's value would be found damaged before the rebuild.
    #expect(try store.keys(in: "t").count == 102)
    let items = try store.snapshot()
    #expect(try store.statistics().indexMappedBytes == 0)
    #expect(try store.statistics().damagedRecords == 1)
    #expect(items["t"]?["z0"] == "value of z0")
    #expect(items["t"]?["z1"] == nil)
    #expect(items["t"]?["z2"] == "value of z2")
    #expect(items["t"]?.count == 102)
    try store.close()
    let reopened = try LogStore(path: path, options: .init(readOnly: true))
    #expect(try reopened.snapshot() == items)
  }

  @Test("a checkpoint of a read-only store is refused; one with nothing new writes nothing")
  func checkpointEdges() throws {
    let directory = TemporaryDirectory()
    let (path, _, index) = try checkpointedStore(directory)
    let reader = try LogStore(path: path, options: .init(readOnly: true))
    #expect(throws: LogStoreError.self) { try reader.checkpoint() }
    let store = try LogStore(path: path, options: Self.options)
    try store.checkpoint()
    let written = try indexFiles(in: path)
    #expect(written.count == 1 && written != [index])
    try store.checkpoint()
    #expect(try indexFiles(in: path) == written)
    try store.close()
  }

  @Test("an index file cut at any length is not used, and the store opens from its log")
  func truncated() throws {
    let directory = TemporaryDirectory()
    let (path, expected, index) = try checkpointedStore(directory)
    let original = try fileBytes(index)
    // At sample depth, 50 lengths spread over the file and those just around its header.
    let spread = stride(
      from: 0, to: original.count,
      by: max(1, original.count / TestDepth.choose(sample: 50, full: 200)))
    let edges = TestDepth.isFull ? [] : [1, 63, 64, 65, original.count - 1]
    for length in Array(spread) + edges {
      try writeFile(index, Array(original[..<length]))
      let store = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
      #expect(store.openReport.indexFile == nil, "length \(length)")
      #expect(try store.snapshot() == expected)
    }
  }

  @Test("another store's index file, or one of segments since compacted, is not used")
  func foreign() throws {
    let directory = TemporaryDirectory()
    let (path, expected, index) = try checkpointedStore(directory)
    let other = TemporaryDirectory()
    let (otherPath, _, otherIndex) = try checkpointedStore(other)
    _ = otherPath
    try FileManager.default.removeItem(atPath: index)
    try FileManager.default.copyItem(atPath: otherIndex, toPath: index)
    let store = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(store.openReport.indexFile == nil)
    #expect(store.openReport.rejectedIndexFiles.count == 1)
    #expect(try store.snapshot() == expected)
  }

  // MARK: Crashes and I/O errors

  /// The operations the crash and fault tests run on a closed store: writes, a checkpoint,
  /// more writes, a compaction and a checkpoint of its outputs, and a close. With
  /// `compactionIndex`, the compaction writes an index file of its outputs itself, as one of a
  /// store of 4 MiB does. Returns the models after each acknowledged write; stops at the first
  /// error.
  private static func checkpointWorkload(
    _ fileSystem: SimulatedFileSystem, from initial: StoreModel, sync: SyncPolicy = .always,
    compactionIndex: Bool = false
  ) -> (acknowledged: StoreModel, pending: StoreModel?, history: [StoreModel], finished: Bool) {
    var model = initial
    var pending: StoreModel?
    var history = [initial]
    var options = LogStore.Options(sync: sync, compaction: .manual, maxSegmentSize: 8 << 10)
    options.fileSystem = fileSystem
    if compactionIndex { options.indexFileMinimumLiveBytes = 0 }
    do throws(LogStoreError) {
      let store = try LogStore(path: "/store", options: options)
      func put(_ key: String, _ value: String) throws(LogStoreError) {
        var next = model
        next.tables["t", default: [:]][ModelBytes(key)] = ModelBytes(value)
        pending = next
        history.append(next)
        try store.put(Array(value.utf8), forKey: Array(key.utf8), in: "t")
        model = next
        pending = nil
      }
      func delete(_ key: String) throws(LogStoreError) {
        var next = model
        next.tables["t"]?[ModelBytes(key)] = nil
        pending = next
        history.append(next)
        try store.delete(key: Array(key.utf8), in: "t")
        model = next
        pending = nil
      }
      for index in 0..<20 { try put("k\(index)", "overwritten \(index)") }
      try put("k1", "after open")
      try store.checkpoint()
      try put("k2", "after the checkpoint")
      try delete("k3")
      try store.compact()
      try store.checkpoint()
      try put("k4", "after the second checkpoint")
      try store.close()
    } catch {
      return (model, pending, history, false)
    }
    return (model, pending, history, true)
  }

  /// A closed store of 150 keys in table t on the simulated file system, with an index file.
  private static func crashBase() throws -> (files: [String: [UInt8]], model: StoreModel) {
    let fileSystem = SimulatedFileSystem()
    var options = LogStore.Options(compaction: .manual, maxSegmentSize: 8 << 10)
    options.fileSystem = fileSystem
    let store = try LogStore(path: "/store", options: options)
    try store.createTable("t")
    for index in 0..<150 {
      try store.put(Array("value \(index)".utf8), forKey: Array("k\(index)".utf8), in: "t")
    }
    try store.checkpoint()
    let model = try StoreModel.reading(store)
    try store.close()
    return (fileSystem.files, model)
  }

  /// One open of a crash image: the image's files and how it was opened.
  private struct ImageOpen: Hashable {
    var image: [String: [UInt8]]
    var readOnly: Bool
  }

  @Test("a crash or power loss at any call of checkpoints and the compaction between loses nothing")
  func crashAtEveryCall() throws {
    let (base, initial) = try Self.crashBase()
    let reference = SimulatedFileSystem(files: base)
    #expect(Self.checkpointWorkload(reference, from: initial).finished)
    #expect(reference.calls > 50)
    var openedFromIndex = 0
    var opens = 0
    // Under .always every acknowledged write survives; under .never a power loss keeps some
    // prefix of the writes (then an index file must never cover records that did not survive).
    // The last two: the compaction writes its own index file (and a crash may leave its
    // inputs beside it).
    let cases: [(SimulatedFileSystem.Platform, SimulatedFileSystem.CrashMode, SyncPolicy, Bool)] = [
      (.linux, .process, .always, false), (.darwin, .power(seed: 8), .always, false),
      (.linux, .power(seed: 9), .never, false), (.darwin, .power(seed: 10), .never, false),
      (.linux, .process, .always, true), (.darwin, .power(seed: 11), .never, true),
    ]
    for (number, (platform, mode, sync, compactionIndex)) in cases.enumerated() {
      let run = SimulatedFileSystem(files: base, platform: platform)
      #expect(
        Self.checkpointWorkload(run, from: initial, sync: sync, compactionIndex: compactionIndex)
          .finished)
      let calls = run.calls
      // At sample depth, a crash before and after every sync, rename and removal (where what
      // survives changes), and at every third call of the rest, a different third each case.
      let changing = ["fsync", "fdatasync", "msync", "rename", "unlink"]
      func isEdge(_ call: Int) -> Bool {
        // Call `call` is `run.log[call - 1]`: a crash there comes before it, after the one
        // before.
        [call - 1, call - 2].contains { $0 >= 0 && changing.contains(run.log[$0].operation) }
      }
      // What each open of an image saw, and whether it used an index file: an image met
      // before (at a call that changes no file) is not opened again, as opening is
      // deterministic; the allowed states, which depend on the call, are checked anew.
      var opened: [ImageOpen: (found: StoreModel, fromIndex: Bool)] = [:]
      do {
        for call in 1...calls where TestDepth.runs(call + number, every: 3, isEdge: isEdge(call)) {
          let fileSystem = SimulatedFileSystem(files: base, platform: platform)
          fileSystem.crash(atCall: call, mode: mode)
          let (acknowledged, pending, history, finished) = Self.checkpointWorkload(
            fileSystem, from: initial, sync: sync, compactionIndex: compactionIndex)
          #expect(!finished, "call \(call) was never reached")
          let image = try #require(fileSystem.crashImage)
          for readOnly in [true, false] {
            let key = ImageOpen(image: image, readOnly: readOnly)
            if opened[key] == nil {
              var options = LogStore.Options(readOnly: readOnly, corruption: .fail)
              options.fileSystem = SimulatedFileSystem(files: image)
              let store = try LogStore(path: "/store", options: options)
              opened[key] = (try StoreModel.reading(store), store.openReport.indexFile != nil)
              if !readOnly {
                // `verify` finds no problem in what a crash leaves, and judges the index file
                // that the writer's open used as that open did: checked, not stale.
                let report = try LogStore.verify(
                  path: "/store", fileSystem: SimulatedFileSystem(files: image))
                #expect(report.isClean, "call \(call), \(mode): \(report.problems)")
                if let used = store.openReport.indexFile {
                  #expect(report.indexFiles > 0, "call \(call), \(mode)")
                  #expect(
                    !report.notes.contains { $0.file == StoreFileName.index(used) },
                    "call \(call), \(mode): \(report.notes)")
                }
              }
              try store.close()
            }
            let (found, fromIndex) = opened[key]!
            if fromIndex { openedFromIndex += 1 }
            opens += 1
            let allowed = sync == .always ? [acknowledged] + (pending.map { [$0] } ?? []) : history
            #expect(
              allowed.contains(found),
              "call \(call): \(fileSystem.log[call - 1]), \(mode), \(platform), read-only \(readOnly)"
            )
          }
        }
      }
    }
    // More than one open in eight (of the two at each call of the six cases) used an index
    // file.
    #expect(openedFromIndex * 8 > opens)
  }

  @Test("an I/O error at any call of a checkpoint leaves the store whole, readable and writable")
  func failureAtEveryCall() throws {
    let base = try Self.crashBase().files
    var options = LogStore.Options(compaction: .manual, maxSegmentSize: 8 << 10)
    func open(_ fileSystem: SimulatedFileSystem) throws -> LogStore {
      options.fileSystem = fileSystem
      return try LogStore(path: "/store", options: options)
    }
    // The calls a checkpoint makes, after a few writes.
    let reference = SimulatedFileSystem(files: base)
    var store = try open(reference)
    try store.put(Array("x".utf8), forKey: Array("k1".utf8), in: "t")
    let before = reference.calls
    try store.checkpoint()
    let after = reference.calls
    try store.close()
    #expect(after - before >= 5)
    var failed = 0
    for call in before + 1...after {
      let fileSystem = SimulatedFileSystem(files: base)
      store = try open(fileSystem)
      try store.put(Array("x".utf8), forKey: Array("k1".utf8), in: "t")
      fileSystem.inject(.init(call: call, errorNumber: ENOSPC, persistent: false))
      do {
        try store.checkpoint()
      } catch {
        failed += 1
        #expect(error.code == .diskFull, "call \(call): \(error)")
      }
      try store.put(Array("y".utf8), forKey: Array("k2".utf8), in: "t")
      var expected = try StoreModel.reading(store)
      #expect(expected.tables["t"]?["k1"] == "x" && expected.tables["t"]?["k2"] == "y")
      try store.close()
      #expect(
        !fileSystem.files.keys.contains { $0.hasSuffix(".tmp") },
        "call \(call): a temporary file is left")
      let reopened = try open(SimulatedFileSystem(files: fileSystem.files))
      expected = try StoreModel.reading(reopened)
      #expect(expected.tables["t"]?.count == 150, "call \(call)")
      #expect(
        expected.tables["t"]?["k1"] == "x" && expected.tables["t"]?["k2"] == "y", "call \(call)")
      try reopened.close()
    }
    #expect(failed > 0)
  }
}
