import Foundation
import LogStoreTesting
import Testing

@testable import LogStore

/// Damage to a small store's real files — every byte flipped, every length cut short, in every
/// segment and hint file — checked against a model of what recovery can know. The two ways of
/// reading the store run side by side, each in a directory of its own: at full depth each is
/// over a minute.
@Suite("Damage to real files")
struct DamageTests {
  /// One record (or batch member) of the store, where it is, and what it does.
  struct Placed {
    var file: String
    /// The bytes whose damage loses the record: the whole batch for a member.
    var range: Range<Int>
    /// The record's own bytes (a member's, within its batch): all a read through a hint
    /// checks, since the hint points at the member itself.
    var own: Range<Int>
    var kind: RecordKind
    var table: String
    var key: String
    var value: String
    /// A put's expiry, a table creation's lifetime.
    var expiry: Int64?
    /// A member of a batch.
    var member: Bool
  }

  /// A store with sealed compaction outputs (with hints) and an active segment written after
  /// (with the hint a clean close writes).
  /// Records with expiry fields are among them (format version 2): table "u" has a default
  /// lifetime, its puts get an expiry, and a few puts name one; all far ahead, so that they
  /// read as any put.
  static func makeStore(at path: String) throws {
    var options = LogStore.Options(compaction: .manual, maxSegmentSize: 4096)
    // The close writes the active segment's hint too: its damage, and the segment's under it,
    // are among the cases.
    options.activeHintMinimumBytes = 0
    let store = try LogStore(path: path, options: options)
    let farAhead = StoreOperation.expiry(expired: false)
    try store.createTable("t")
    try store.createTable("u", defaultLifetime: 365 * 86_400 * 1_000_000)
    // Enough for compaction to write two outputs of at most 4 KiB.
    for index in 0..<36 {
      try store.put(
        Array("value \(index) \(String(repeating: "v", count: 60 + index % 50))".utf8),
        forKey: Array("k\(index)".utf8), in: "t", expiresAt: index % 5 == 0 ? farAhead : nil)
    }
    try store.put(Array("u-one".utf8), forKey: Array("one".utf8), in: "u")
    try store.delete(key: Array("k3".utf8), in: "t")
    try store.compact()
    try store.put(Array("new 5".utf8), forKey: Array("k5".utf8), in: "t")
    var batch = WriteBatch()
    batch.put(Array("batch a".utf8), forKey: Array("ba".utf8), in: "t")
    batch.delete(key: Array("k7".utf8), in: "t")
    batch.put(Array("batch u".utf8), forKey: Array("two".utf8), in: "u", expiresAt: farAhead)
    try store.write(batch)
    try store.deletePrefix(Array("k1".utf8), in: "t")
    try store.put(Array("last".utf8), forKey: Array("k2".utf8), in: "t")
    try store.close()
  }

  /// Every record of every segment of the store at `path`, in replay order; its segments are
  /// read as `extent` says (an unsealed store's last one ends without a sync mark).
  static func records(at path: String, extent: SegmentScanner.Extent = .sealed) throws
    -> [Placed]
  {
    var placed: [Placed] = []
    for file in try segmentFiles(in: path) {
      let bytes = try fileBytes(file)
      let name = URL(fileURLWithPath: file).lastPathComponent
      try bytes.withUnsafeBytes { buffer in
        let header = try SegmentHeader.decode(buffer)
        var scanner = SegmentScanner(
          bytes: buffer, owner: nil, salt: header.salt, baseSequence: header.baseSequence,
          extent: extent)
        while let event = scanner.next() {
          guard case .record(let record, let offset) = event else {
            Issue.record("the undamaged store has damage in \(name)")
            continue
          }
          let range = offset..<offset + record.length
          func place(_ member: Record, at start: Int) {
            placed.append(
              Placed(
                file: name, range: range, own: start..<start + member.length, kind: member.kind,
                table: String(decoding: member.table, as: UTF8.self),
                key: String(decoding: member.key, as: UTF8.self),
                value: String(decoding: member.value, as: UTF8.self), expiry: member.expiry,
                member: record.kind == .batch))
          }
          if record.kind == .batch {
            let valueStart = offset + record.length - record.value.count
            try RecordCodec.forEachMember(of: record, salt: header.salt) {
              member, memberOffset throws(LogStoreError) in
              place(member, at: valueStart + memberOffset)
            }
          } else {
            place(record, at: offset)
          }
        }
      }
    }
    return placed
  }

  /// What a store holds after replaying `records`: per table, each key's record index.
  static func replay(_ records: [Placed], applying applies: (Int) -> Bool) -> [String: [String:
    Int]]
  {
    var tables: [String: [String: Int]] = [:]
    for (index, record) in records.enumerated() where applies(index) {
      switch record.kind {
      case .put: tables[record.table, default: [:]][record.key] = index
      case .delete: tables[record.table]?[record.key] = nil
      case .deletePrefix:
        tables[record.table] = tables[record.table]?.filter {
          !$0.key.utf8.starts(with: record.key.utf8)
        }
      case .createTable: if tables[record.table] == nil { tables[record.table] = [:] }
      case .clearTable: if tables[record.table] != nil { tables[record.table] = [:] }
      case .dropTable: tables[record.table] = nil
      case .batch, .syncMark: break
      }
    }
    return tables
  }

  /// A kind of damage: the file and what happens to its bytes.
  enum Damage: CustomStringConvertible {
    case flip(String, Int)
    case cut(String, Int)
    /// The 512-byte page (a disk sector) at this offset reads as zeros: lost, or zeroed.
    case zeroedPage(String, Int)

    static let pageSize = 512

    var file: String {
      switch self {
      case .flip(let file, _), .cut(let file, _), .zeroedPage(let file, _): file
      }
    }

    var description: String {
      switch self {
      case .flip(let file, let offset): "byte \(offset) of \(file) flipped"
      case .cut(let file, let length): "\(file) cut to \(length) bytes"
      case .zeroedPage(let file, let offset): "page at \(offset) of \(file) zeroed"
      }
    }

    func apply(to bytes: [UInt8]) -> [UInt8] {
      var damaged = bytes
      switch self {
      case .flip(_, let offset):
        damaged[offset] ^= 0x5A
      case .cut(_, let length):
        damaged.removeSubrange(length...)
      case .zeroedPage(_, let offset):
        let end = min(offset + Self.pageSize, bytes.count)
        damaged.replaceSubrange(offset..<end, with: repeatElement(0, count: end - offset))
      }
      return damaged
    }

    /// Whether the damage touches `range` of the file.
    func hits(_ range: Range<Int>, in file: String) -> Bool {
      guard file == self.file else { return false }
      switch self {
      case .flip(_, let offset): return range.contains(offset)
      case .cut(_, let length): return range.upperBound > length
      case .zeroedPage(_, let offset):
        return range.overlaps(offset..<offset + Self.pageSize)
      }
    }
  }

  /// How the store's log is read at open.
  enum Reading: String, CaseIterable, CustomStringConvertible {
    /// Through the hint files compaction and the close wrote, where they are intact.
    case throughHints
    /// Every segment scanned, as when hint files are missing or damaged: they are removed.
    case scanned

    var description: String { rawValue }
  }

  /// The offsets of file `name` where damage changes meaning, flipped and cut at even at
  /// sample depth: every byte of a header (a segment's, a hint file's; all of the manifest),
  /// and in every record, batch member and hint entry its first byte, the first byte of each
  /// field that says what it is or how long (kind, lengths, offset), of its payload, and its
  /// last byte; and the byte after it (where the next one starts, or the file's tail).
  static func edges(of name: String, _ bytes: [UInt8], records: [Placed]) -> Set<Int> {
    var edges: Set<Int> = [0, bytes.count - 1]
    func fields(at start: Int, _ fieldStarts: [Int], end: Int) {
      for field in fieldStarts { edges.insert(start + field) }
      edges.formUnion([end - 1, end])
    }
    if name.hasSuffix(".log") {
      edges.formUnion(0..<SegmentHeader.size)
      let recordFields = [
        RecordLayout.checksumOffset, RecordLayout.kindOffset, RecordLayout.tableLengthOffset,
        RecordLayout.keyLengthOffset, RecordLayout.valueLengthOffset, RecordLayout.headerSize,
      ]
      for record in records where record.file == name {
        fields(at: record.range.lowerBound, recordFields, end: record.range.upperBound)
        fields(at: record.own.lowerBound, recordFields, end: record.own.upperBound)
      }
    } else if name.hasSuffix(".hint") {
      // Entries: kind, table length, key length, offset, length, sequence, timestamp, then
      // table, key and the expiry field when the kind says so (HintFile.swift).
      edges.formUnion(0..<HintFile.headerSize)
      var entry = HintFile.headerSize
      while entry + HintFile.entryHeaderSize <= bytes.count {
        let expiry = bytes[entry] & RecordLayout.expiryFlag == 0 ? 0 : RecordLayout.expirySize
        let end =
          entry + HintFile.entryHeaderSize + Int(bytes[entry + 1]) + Int(bytes[entry + 2])
          + Int(bytes[entry + 3]) << 8 + expiry
        fields(at: entry, [0, 1, 2, 4, 8, HintFile.entryHeaderSize], end: end)
        entry = end
      }
    } else {
      edges.formUnion(bytes.indices)
    }
    return edges.filter { bytes.indices.contains($0) }
  }

  @Test(
    "every flipped byte, every cut and every zeroed page: never a wrong value, a trap or a lost undamaged record; verify reports what reads would meet; recover keeps every readable item",
    arguments: Reading.allCases)
  func everyByte(reading: Reading) throws {
    let directory = TemporaryDirectory("damage")
    let original = directory.appending("original")
    try Self.makeStore(at: original)
    if reading == .scanned {
      for name in try FileManager.default.contentsOfDirectory(atPath: original)
      where name.hasSuffix(".hint") || name.hasSuffix(".index") {
        try FileManager.default.removeItem(atPath: original + "/" + name)
      }
    }
    let records = try Self.records(at: original)
    let names = try FileManager.default.contentsOfDirectory(atPath: original).filter {
      $0 != "LOCK"
    }.sorted()
    let segments = names.filter { $0.hasSuffix(".log") }
    #expect(segments.count >= 3)
    #expect(names.contains { $0.hasSuffix(".hint") } == (reading == .throughHints))
    // Expiring records among those the scan reads (format version 2): puts with an expiry,
    // a table's lifetime, a batch member with an expiry.
    #expect(records.contains { $0.kind == .put && $0.expiry != nil && $0.member })
    #expect(records.contains { $0.kind == .createTable && $0.expiry != nil })
    let lastSegment = segments.last!
    var contents: [String: [UInt8]] = [:]
    for name in names { contents[name] = try fileBytes(original + "/" + name) }

    // At full depth every byte of every file is flipped and cut at; at sample depth the
    // edges and every 53rd byte (a prime, so that the spread meets every field of the
    // records in turn). Every page is zeroed at either depth.
    var damages: [Damage] = []
    for name in names {
      let edges = Self.edges(of: name, contents[name]!, records: records)
      for offset in 0..<contents[name]!.count
      where TestDepth.runs(offset, every: 53, isEdge: edges.contains(offset)) {
        damages.append(.flip(name, offset))
        damages.append(.cut(name, offset))
      }
      for offset in stride(from: 0, to: contents[name]!.count, by: Damage.pageSize) {
        damages.append(.zeroedPage(name, offset))
      }
    }
    var checked = 0
    // One copy of the store serves the trials: each damages one file and the next puts it
    // back, unless the trial changed more (a recover, or files that reads left behind), after
    // which the whole store is copied again.
    let trial = directory.appending("trial")
    var damagedFile: String?
    var needsCopy = true
    for (number, damage) in damages.enumerated() {
      if !needsCopy, let damagedFile {
        try writeFile(trial + "/" + damagedFile, contents[damagedFile]!)
        let left = try FileManager.default.contentsOfDirectory(atPath: trial).filter {
          $0 != "LOCK"
        }
        needsCopy = left.sorted() != names
      }
      if needsCopy {
        try copyDirectory(original, to: trial)
        needsCopy = false
      }
      damagedFile = damage.file
      try writeFile(trial + "/" + damage.file, damage.apply(to: contents[damage.file]!))

      // What recovery can know. A segment's records are lost with its whole header cut off;
      // when the header is damaged (its salt too, or zeroed), the salt is found from two
      // intact records in a row, which every damage here leaves. A segment is read through its
      // hint only while the hint, the segment's header and its covered length are intact.
      func segmentLost(_ name: String) -> Bool {
        if case .cut(let file, let length) = damage {
          return file == name && length < SegmentHeader.size
        }
        return false
      }
      func hinted(_ name: String) -> Bool {
        let hint = String(name.dropLast(4)) + ".hint"
        guard contents[hint] != nil, damage.file != hint else { return false }
        if damage.hits(0..<SegmentHeader.size, in: name) { return false }
        if case .cut(let file, _) = damage, file == name { return false }
        return true
      }
      // Whether a read of record `index` meets damage: through a hint, only its own bytes
      // are read and checked; a scanned batch with damage anywhere is not applied at all.
      func readMeetsDamage(_ index: Int) -> Bool {
        let record = records[index]
        return damage.hits(hinted(record.file) ? record.own : record.range, in: record.file)
      }
      let present = Self.replay(records) { index in
        let record = records[index]
        if segmentLost(record.file) { return false }
        return hinted(record.file) || !damage.hits(record.range, in: record.file)
      }
      let store: LogStore
      do {
        store = try LogStore(path: trial, options: .init(readOnly: true))
      } catch {
        Issue.record("salvage did not open with \(damage): \(error)")
        continue
      }
      var unreadable = 0
      #expect(try Set(store.tableNames()) == Set(present.keys), "tables, \(damage)")
      for (table, keys) in present {
        #expect(try store.count(in: table) == keys.count, "count of \(table), \(damage)")
        for (key, index) in keys {
          let damaged = readMeetsDamage(index)
          do {
            let value = try store.value(forKey: Array(key.utf8), in: table)
            #expect(
              !damaged && value == Array(records[index].value.utf8), "\(table)/\(key), \(damage)")
          } catch {
            // A damaged record the index reached through a hint: reported, never returned.
            #expect(damaged && error.code == .corrupted, "\(table)/\(key): \(error), \(damage)")
            unreadable += 1
          }
        }
      }
      try store.close()

      let report = try LogStore.verify(path: trial)
      if unreadable > 0 { #expect(!report.isClean, "verify missed damage a read meets: \(damage)") }
      // Damage anywhere but the last segment (whose end may be a crash's torn tail) is found,
      // but for one cut: a sealed segment cut to its header and nothing but zero bytes, with no
      // hint file to tell, reads as the empty segment a writer leaves when creating a segment
      // and removing it both failed (docs/FORMAT.md, "Recovery", rule 6). A record's first
      // byte is its checksum's, which the segment's random salt seeds: one cut in 256 leaves
      // a zero byte behind the header.
      var emptied = false
      if case .cut(let file, let length) = damage, file.hasSuffix(".log"),
        length >= SegmentHeader.size
      {
        emptied =
          !hinted(file) && contents[file]![SegmentHeader.size..<length].allSatisfy { $0 == 0 }
      }
      // A hint a close wrote (of a segment no compaction made) is not synced: a crash may leave
      // it so, and `verify` names it in a note (the segment is scanned instead).
      let segmentOfHint = String(damage.file.dropLast(5)) + ".log"
      let closeHint =
        damage.file.hasSuffix(".hint")
        && (try? contents[segmentOfHint]!.withUnsafeBytes { try SegmentHeader.decode($0) })?
          .compaction == nil
      if closeHint {
        #expect(
          report.notes.contains { $0.file == damage.file && $0.message.contains("a crash may") },
          "verify: \(damage): \(report)")
      } else if damage.file != lastSegment && !emptied {
        #expect(!report.isClean, "verify: \(damage)")
      }

      if number % 9 == 0 {
        needsCopy = true
        let report = try LogStore.recover(path: trial)
        #expect(report.unreadableItems == unreadable, "\(damage)")
        let recovered = try LogStore(path: trial, options: .init(readOnly: true, corruption: .fail))
        for (table, keys) in present {
          let readable = keys.filter { !readMeetsDamage($0.value) }
          #expect(try recovered.count(in: table) == readable.count, "recovered \(table), \(damage)")
          for (key, index) in readable {
            #expect(
              try recovered.value(forKey: Array(key.utf8), in: table)
                == Array(records[index].value.utf8))
          }
        }
        try? FileManager.default.removeItem(atPath: report.damagedStorePath)
      }
      checked += 1
    }
    print(
      "damaged stores checked, \(TestDepth.current): \(checked) (\(names.count) files, \(reading))"
    )
    #expect(checked == damages.count)
  }
}
