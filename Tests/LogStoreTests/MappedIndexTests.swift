import Foundation
import Testing

@testable import LogStore

extension MappedIndex {
  /// The table named `name`, if the file has one; throws as ``table(at:)``.
  fileprivate func table(named name: String) throws(Rejection) -> FileTable? {
    var name = name
    guard let place = name.withUTF8({ place(ofTable: UnsafeRawBufferPointer($0)) }) else {
      return nil
    }
    return try table(at: place)
  }
}

/// An index file read in place (`MappedIndex`, `MappedTable`): what its open refuses, and what
/// a read does with each part that fails its check.
@Suite("Mapped index files")
struct MappedIndexTests {
  /// Bytes kept at one address while a `MappedIndex` reads them, as a mapping would be.
  final class Held {
    let buffer: UnsafeMutableRawBufferPointer
    init(_ bytes: [UInt8]) {
      buffer = .allocate(byteCount: max(bytes.count, 1), alignment: 64)
      buffer.copyBytes(from: bytes)
    }
    deinit { buffer.deallocate() }
    var view: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: buffer[0..<buffer.count]) }
  }

  /// The index file of a store of two tables (a: 400 keys, b: 3), its number, and the keys.
  private static func indexFile() throws -> (bytes: [UInt8], number: UInt32) {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let store = try LogStore(path: path, options: .init(compaction: .manual))
    try store.createTable("a")
    try store.createTable("b")
    for index in 0..<400 {
      try store.put(Array("v\(index)".utf8), forKey: Array("key\(index)".utf8), in: "a")
    }
    for index in 0..<3 { try store.put([1], forKey: Array("b\(index)".utf8), in: "b") }
    try store.checkpoint()
    try store.close()
    let name = try #require(
      try FileManager.default.contentsOfDirectory(atPath: path).first { $0.hasSuffix(".index") })
    return (try fileBytes(path + "/" + name), UInt32(name.dropLast(6))!)
  }

  private static func open(_ bytes: [UInt8], number: UInt32) -> Result<
    MappedIndex, MappedIndex.Rejection
  > {
    let held = Held(bytes)
    return Result { () throws(MappedIndex.Rejection) -> MappedIndex in
      try MappedIndex(number: number, path: "index", bytes: held.view, owner: held)
    }
  }

  /// `bytes` with every table record's, the directory's and the header's checksums made to
  /// match again (only the directory's and the header's with `records` false).
  private static func resealed(_ bytes: [UInt8], records: Bool = true) -> [UInt8] {
    var file = IndexFileBytes(bytes)
    let directoryLength = file.field(48, 8)
    if records {
      let tableCount = min(file.field(44, 4), 1_000)
      for place in 0..<tableCount {
        let record = 64 + directoryLength + place * IndexFileFormat.tableRecordSize
        if record + IndexFileFormat.tableRecordSize <= bytes.count { file.resealRecord(record) }
      }
    }
    if 64 + directoryLength <= bytes.count {
      storeChecksum(&file.bytes, at: 56, of: 64..<64 + directoryLength)
    }
    storeChecksum(&file.bytes, at: 60, of: 0..<60)
    return file.bytes
  }

  private static func setting<T: FixedWidthInteger>(
    _ value: T, at offset: Int, in bytes: [UInt8], resealingRecords: Bool = true
  ) -> [UInt8] {
    var bytes = bytes
    bytes.replaceSubrange(offset..<offset + MemoryLayout<T>.size, with: littleEndianBytes(value))
    return resealed(bytes, records: resealingRecords)
  }

  /// Where table `name`'s record is in `bytes`.
  static func record(of name: String, in bytes: [UInt8]) -> Int {
    IndexFileBytes(bytes).tableRecord(name)!
  }

  /// Where table `name`'s reference is in the directory of `bytes`, and where its name is.
  static func reference(of name: String, in bytes: [UInt8]) -> (at: Int, name: Range<Int>) {
    let file = IndexFileBytes(bytes)
    let tableCount = file.field(44, 4)
    let references = 64 + 16 * file.field(40, 4) + IndexFileFormat.totalsSize
    let names = references + tableCount * IndexFileFormat.tableReferenceSize
    var start = 0
    for place in 0..<tableCount {
      let at = references + place * IndexFileFormat.tableReferenceSize
      let end = file.field(at, 4)
      if bytes[names + start..<names + end].elementsEqual(name.utf8) {
        return (at, names + start..<names + end)
      }
      start = end
    }
    preconditionFailure("no table \(name)")
  }

  /// The names of `index`'s tables, sorted.
  static func tableNames(_ index: MappedIndex) -> [String] {
    (0..<index.tableCount).map { index.name(ofTable: $0) }.sorted()
  }

  @Test("an open refuses every header and directory that does not describe a whole file")
  func refusals() throws {
    let (bytes, number) = try Self.indexFile()
    guard case .success(let index) = Self.open(bytes, number: number) else {
      Issue.record("a good file was refused")
      return
    }
    #expect(Self.tableNames(index) == ["a", "b"])
    let table = Self.record(of: "a", in: bytes)
    let (referenceA, nameA) = Self.reference(of: "a", in: bytes)
    let (referenceB, nameB) = Self.reference(of: "b", in: bytes)
    let totals = 64 + 16 * Int(bytes[40])
    let entriesLength = IndexFileBytes(bytes).unsignedField(table + 24, 8)
    let refused: [(String, [UInt8])] = [
      ("shorter than a header", Array(bytes[0..<40])),
      ("another magic", Self.resealed([0x58] + bytes[1...])),
      ("a newer version", Self.setting(UInt16(4), at: 8, in: bytes)),
      ("version 2", Self.setting(UInt16(2), at: 8, in: bytes)),
      ("version 1", Self.setting(UInt16(1), at: 8, in: bytes)),
      ("another file number", Self.setting(number + 1, at: 12, in: bytes)),
      ("another length", Self.setting(UInt64(bytes.count + 64), at: 32, in: bytes)),
      ("a directory past the end", Self.setting(UInt64(bytes.count), at: 48, in: bytes)),
      ("a directory without its totals", Self.setting(UInt64(totals - 64), at: 48, in: bytes)),
      ("a directory cut short", Self.setting(UInt64(nameB.upperBound - 65), at: 48, in: bytes)),
      (
        "a directory with bytes left over",
        Self.setting(UInt64(nameB.upperBound - 64 + 1), at: 48, in: bytes)
      ),
      ("more segments than the directory holds", Self.setting(UInt32(1000), at: 40, in: bytes)),
      ("more tables than the directory holds", Self.setting(UInt32(3), at: 44, in: bytes)),
      (
        "table records past the end",
        Self.setting(
          UInt64(0), at: totals,
          in: Self.setting(UInt64(table + 84), at: 32, in: Array(bytes[0..<table + 84])))
      ),
      ("a segment covered past 4 GiB", Self.setting(UInt64(1) << 33, at: 64 + 8, in: bytes)),
      ("a key count the file cannot hold", Self.setting(UInt64(1) << 40, at: totals, in: bytes)),
      ("live bytes past Int.max", Self.setting(UInt64.max, at: totals + 8, in: bytes)),
      (
        "a table without a name",
        Self.setting(UInt32(nameA.upperBound - nameA.lowerBound), at: referenceB, in: bytes)
      ),
      ("a table named twice", Self.setting(UInt8(ascii: "a"), at: nameB.lowerBound, in: bytes)),
      ("names out of order", Self.setting(UInt8(ascii: "c"), at: nameA.lowerBound, in: bytes)),
      ("a name that is not UTF-8", Self.setting(UInt8(0xFF), at: nameB.lowerBound, in: bytes)),
      ("a name past the names", Self.setting(UInt32(1000), at: referenceB, in: bytes)),
      // Found when the table is first read.
      (
        "a table record that fails its checksum",
        Self.setting(UInt64(3), at: table, in: bytes, resealingRecords: false)
      ),
      ("a count the file cannot hold", Self.setting(UInt64(1) << 40, at: table, in: bytes)),
      ("a count the groups do not fit", Self.setting(UInt64(401), at: table, in: bytes)),
      ("entries past the end", Self.setting(UInt64(bytes.count), at: table + 16, in: bytes)),
      ("entries too short for the count", Self.setting(UInt64(100), at: table + 24, in: bytes)),
      (
        "entries longer than their keys",
        Self.setting(entriesLength + 64, at: table + 24, in: bytes)
      ),
      ("groups off their alignment", Self.setting(UInt64(65), at: table + 32, in: bytes)),
      ("groups past the end", Self.setting(UInt64(bytes.count - 64), at: table + 32, in: bytes)),
      ("samples off their alignment", Self.setting(UInt64(65), at: table + 40, in: bytes)),
      ("another group count", Self.setting(UInt32(7), at: table + 48, in: bytes)),
      (
        "more expiring entries than entries",
        Self.setting(
          UInt32(1), at: referenceA + 4, in: Self.setting(UInt64(1000), at: table + 64, in: bytes))
      ),
      (
        "expiring entries the directory does not know of",
        Self.setting(UInt64(1), at: table + 64, in: bytes)
      ),
      (
        "expiring entries the entries do not hold",
        Self.setting(
          UInt32(1), at: referenceA + 4, in: Self.setting(UInt64(1), at: table + 64, in: bytes))
      ),
      ("a lifetime the directory does not say", Self.setting(Int64(5), at: table + 72, in: bytes)),
    ]
    for (what, damaged) in refused {
      // Refused at open, or (what only a table's own part of the file can say) when the
      // table is first read.
      if case .success(let index) = Self.open(damaged, number: number),
        (0..<index.tableCount).allSatisfy({ (try? index.table(at: $0)) != nil })
      {
        Issue.record("\(what): the file was used")
      }
    }
  }

  @Test(
    "a directory of hundreds of tables is read whole, and refused when any two share a name (or any is out of order)"
  )
  func repeatedNamesAmongMany() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let store = try LogStore(path: path, options: .init(compaction: .manual))
    let names = (0..<300).map { "t" + $0.zeroPadded(width: 3) }
    for (index, name) in names.enumerated() {
      try store.createTable(name)
      try store.put([UInt8(truncatingIfNeeded: index)], forKey: Array(name.utf8), in: name)
    }
    try store.checkpoint()
    try store.close()
    let file = try #require(
      try FileManager.default.contentsOfDirectory(atPath: path).first { $0.hasSuffix(".index") })
    let (bytes, number) = (try fileBytes(path + "/" + file), UInt32(file.dropLast(6))!)
    guard case .success(let index) = Self.open(bytes, number: number) else {
      Issue.record("a good file was refused")
      return
    }
    #expect(Self.tableNames(index) == names)
    // One name made another's, for pairs at both ends of the directory and between: each
    // differs in its last three bytes.
    for (renamed, other) in [(0, 299), (299, 0), (150, 151), (7, 270)] {
      var damaged = bytes
      let name = Self.reference(of: names[renamed], in: bytes).name
      damaged.replaceSubrange(name, with: Array(names[other].utf8))
      if case .success = Self.open(Self.resealed(damaged), number: number) {
        Issue.record("\(names[renamed]) renamed \(names[other]): the file was used")
      }
    }
  }

  @Test(
    "a stand-in for a table found damaged when first made answers every read that it is damaged, with its record's counts"
  )
  func standIn() throws {
    let (bytes, number) = try Self.indexFile()
    // Table a's entries said 64 bytes longer than they are: the directory is intact, and the
    // table is found damaged when it is made.
    let record = Self.record(of: "a", in: bytes)
    let entriesLength = IndexFileBytes(bytes).unsignedField(record + 24, 8)
    let damaged = Self.setting(entriesLength + 64, at: record + 24, in: bytes)
    guard case .success(let index) = Self.open(damaged, number: number),
      let a = Array("a".utf8).withUnsafeBytes({ index.place(ofTable: $0) }),
      let b = Array("b".utf8).withUnsafeBytes({ index.place(ofTable: $0) })
    else {
      Issue.record("a file with a good directory was refused")
      return
    }
    #expect(!index.tableOrStandIn(at: b).damaged)
    let (file, wasDamaged) = index.tableOrStandIn(at: a)
    #expect(wasDamaged && file.name == "a" && file.creation == nil)
    let standIn = file.table
    #expect(standIn.count == 400 && standIn.keyBytes == 0)
    #expect(Array("key1".utf8).withUnsafeBytes { standIn.find($0) } == .damaged)
    #expect(Array("key1".utf8).withUnsafeBytes { standIn.lowerBound($0) } == nil)
    #expect(!standIn.forEachEntry { _ in true })
    #expect(!standIn.verifyAll())
  }

  @Test("each part of a table that fails its check is reported, never used")
  func damagedParts() throws {
    let (bytes, number) = try Self.indexFile()
    guard case .success(let good) = Self.open(bytes, number: number),
      let table = (try? good.table(named: "a"))?.table
    else {
      Issue.record("a good file was refused")
      return
    }
    #expect(table.verifyAll())
    #expect(table.entry(at: -1) == nil)
    #expect(table.entry(at: Int(UInt32.max)) == nil)
    let place = try #require(Array("key2".utf8).withUnsafeBytes { table.lowerBound($0) })
    #expect(place.rank > 0)
    // Past every key, before every key; loads ahead of lookups never trust what they read.
    #expect(Array("zzz".utf8).withUnsafeBytes { table.lowerBound($0) }?.rank == table.count)
    #expect([UInt8]().withUnsafeBytes { table.lowerBound($0) }?.rank == 0)
    for hash in [UInt64(0), .max, 0x1234_5678_9ABC_DEF0] {
      _ = table.warmGroup(hash)
      _ = table.warmEntry(hash)
    }
    let first = try #require(table.entry(at: 0))
    #expect(String(decoding: first.key, as: UTF8.self) == "key0")
    // The regions of table a, from its directory record.
    let record = Self.record(of: "a", in: bytes)
    let file = IndexFileBytes(bytes)
    let (entries, samples) = (file.field(record + 16, 8), file.field(record + 40, 8))
    // The slot group where key0's probe starts: the file's seed is random, and a fixed group
    // may be one that no key's probe reaches (group 0, a few runs in a thousand).
    let probed = file.firstSlot(file.hash(Array("key0".utf8)), ofTable: record)
    for (what, offset) in [
      ("a slot group", probed + 3),
      ("a sample group", samples + 1), ("an entry", entries + 20),
    ] {
      var damaged = bytes
      damaged[offset] ^= 0x40
      guard case .success(let index) = Self.open(damaged, number: number),
        let damagedTable = (try? index.table(named: "a"))?.table
      else {
        Issue.record("\(what): refused at open, but only the directory is checked there")
        continue
      }
      #expect(!damagedTable.verifyAll(), "\(what)")
      var answers: Set<String> = []
      for key in 0..<400 {
        let answer = Array("key\(key)".utf8).withUnsafeBytes { damagedTable.find($0) }
        switch answer {
        case .found(let location):
          let expected = Array("key\(key)".utf8).withUnsafeBytes { table.find($0) }
          #expect(.found(location) == expected, "\(what): key\(key)")
          answers.insert("found")
        case .absent: Issue.record("\(what): key\(key) read as absent")
        case .damaged: answers.insert("damaged")
        }
      }
      let walked = damagedTable.forEachEntry { _ in true }
      let bound = Array("key3".utf8).withUnsafeBytes { damagedTable.lowerBound($0) }
      #expect(answers.contains("damaged") || !walked || bound == nil, "\(what): never noticed")
      // A table over the damaged file notices too when a prefix deletion walks it.
      let totals = IndexTotals()
      let overlay = TableIndex(totals: totals, base: damagedTable)
      _ = Array("key".utf8).withUnsafeBytes { overlay.removeAll(withPrefix: $0) }
      #expect(totals.baseDamaged || what == "a slot group", "\(what)")
    }
  }

  @Test(
    "compaction's second look at a listed key: trusts the file it was listed from, asks another file (and reports one found damaged), and follows the changes made since"
  )
  func stillPoints() throws {
    let (bytes, number) = try Self.indexFile()
    guard case .success(let listedIndex) = Self.open(bytes, number: number),
      case .success(let rereadIndex) = Self.open(bytes, number: number),
      let listedFrom = (try? listedIndex.table(named: "a"))?.table,
      let reread = (try? rereadIndex.table(named: "a"))?.table
    else {
      Issue.record("a good file was refused")
      return
    }
    func ask(
      _ table: TableIndex, _ key: String, at location: RecordLocation, _ base: MappedTable?
    ) -> Bool? {
      Array(key.utf8).withUnsafeBytes {
        table.stillPoints(
          $0, hash: KeyHash.hash($0), at: location, listedFrom: base.map(ObjectIdentifier.init))
      }
    }
    guard case .found(let location) = Array("key5".utf8).withUnsafeBytes({ listedFrom.find($0) })
    else {
      Issue.record("key5 is not in the file")
      return
    }
    let elsewhere = RecordLocation(
      segment: location.segment, offset: location.offset + 1, length: location.length)
    // Over the file it was listed from: trusted, whatever the location (nothing is read).
    let table = TableIndex(base: listedFrom)
    #expect(ask(table, "key5", at: location, listedFrom) == true)
    // The directory read anew: another file object, which is asked.
    let anew = TableIndex(base: reread)
    #expect(ask(anew, "key5", at: location, listedFrom) == true)
    #expect(ask(anew, "key5", at: elsewhere, listedFrom) == false)
    #expect(ask(anew, "nokey", at: location, listedFrom) == false)
    // Listed as a change (no base): gone once it has no entry here.
    #expect(ask(anew, "key5", at: location, nil) == true)
    #expect(ask(TableIndex(), "key5", at: location, nil) == false)
    // Changed since: the entry here decides.
    Array("key5".utf8).withUnsafeBytes {
      _ = table.upsert($0, hash: KeyHash.hash($0), location: elsewhere)
    }
    #expect(ask(table, "key5", at: location, listedFrom) == false)
    #expect(ask(table, "key5", at: elsewhere, listedFrom) == true)
    Array("key5".utf8).withUnsafeBytes { _ = table.remove($0, hash: KeyHash.hash($0)) }
    #expect(ask(table, "key5", at: elsewhere, listedFrom) == false)
    // Another file that is damaged where the key is: neither yes nor no.
    let record = Self.record(of: "a", in: bytes)
    let entries = Int(
      bytes[record + 16..<record + 24].enumerated().reduce(UInt64(0)) {
        $0 | UInt64($1.element) << (8 * $1.offset)
      })
    var damaged = bytes
    // The first third of the entries: the open reads only the last ones.
    for offset in stride(from: entries, to: entries + 4_000, by: 7) {
      damaged[offset] ^= 0x40
    }
    guard case .success(let damagedIndex) = Self.open(damaged, number: number),
      let damagedTable = (try? damagedIndex.table(named: "a"))?.table
    else {
      Issue.record("refused at open, but only the directory is checked there")
      return
    }
    let overDamage = TableIndex(base: damagedTable)
    let answers = (0..<400).map { ask(overDamage, "key\($0)", at: location, listedFrom) }
    #expect(answers.contains(nil))
  }

  @Test(
    "keys whose slots' tags collide are told apart by their bytes; a slot pointing past the entries is damage"
  )
  func slotTags() throws {
    let (bytes, number) = try Self.indexFile()
    guard case .success(let good) = Self.open(bytes, number: number),
      let goodTable = (try? good.table(named: "a"))?.table
    else {
      Issue.record("a good file was refused")
      return
    }
    let file = IndexFileBytes(bytes)
    let record = try #require(file.tableRecord("a"))
    // A key whose slot comes after another in the group its probe starts at: that one is given
    // the key's tag, as another key's tag may be.
    var chosen: (key: [UInt8], other: Int)?
    for rank in 0..<400 where chosen == nil {
      let entry = file.entry(rank, ofTable: record)
      let key = Array(file.bytes[entry + 18..<entry + 18 + file.field(entry + 16, 2)])
      let start = file.firstSlot(file.hash(key), ofTable: record)
      let slot = try #require(file.slot(of: key, entry: entry, ofTable: record))
      if slot > start && slot < start + 56 { chosen = (key, start) }
    }
    let (key, other) = try #require(chosen)
    let hash = file.hash(key)
    let location = key.withUnsafeBytes { goodTable.find($0) }
    guard case .found = location else {
      Issue.record("\(key) not found in the good file")
      return
    }
    var collided = file
    collided.store(IndexFileFormat.tag(hash), at: other)
    collided.resealGroup(holding: other, ofTable: record)
    // The same slot, its entry past the end of the entries.
    var pointingOut = collided
    pointingOut.store(UInt32.max, at: other + 4)
    pointingOut.resealGroup(holding: other, ofTable: record)
    for (what, damaged, expected) in [
      ("a tag collision", collided, location), ("a slot pointing out", pointingOut, .damaged),
    ] {
      guard case .success(let index) = Self.open(damaged.bytes, number: number),
        let table = (try? index.table(named: "a"))?.table
      else {
        Issue.record("\(what): refused at open")
        continue
      }
      #expect(key.withUnsafeBytes { table.find($0) } == expected, "\(what)")
      // The load ahead of a lookup reads the first slot with the tag, and trusts nothing.
      if what == "a slot pointing out" { #expect(table.warmEntry(hash) == 0) }
    }
  }
}
