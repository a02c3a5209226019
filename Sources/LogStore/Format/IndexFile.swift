/// Index files: the key directory as of one position in the log, laid out to be used in place
/// through a read-only mapping, so that an open maps it and reads only the log written after
/// that position (docs/FORMAT.md, "Index files").
///
/// ```
/// header (64 bytes)
///  0  8  magic            "YTKKVIDX"
///  8  2  version          3 (versions 1 and 2 are not used: the log is read, and the next
///                         checkpoint writes version 3)
/// 10  2  reserved         0
/// 12  4  fileNumber       the number in the file's name
/// 16  8  nextSequence     the sequence number after the last record covered
/// 24  8  hashSeed         the KeyHash seed the slot groups were built with
/// 32  8  fileLength       the file's length
/// 40  4  segmentCount
/// 44  4  tableCount
/// 48  8  directoryLength  bytes of directory after the header
/// 56  4  directoryCRC     masked CRC-32C of the directory
/// 60  4  headerCRC        masked CRC-32C of bytes 0..<60
/// directory (checked when the file is opened)
///   segmentCount × 16: number u32, salt u32, coveredLength u64 (the position: every segment
///     listed, in order, up to its covered length)
///   totals: keyCount u64, liveBytes u64 (of all tables)
///   tableCount × 16, in the byte order of the tables' names: nameEnd u32 (where the name
///     ends in `names`), flags u32 (bit 0: the table has keys with an expiry), lifetime i64
///     (the table's default, µs; 0: none)
///   names: the tables' names (UTF-8), one after another
/// table records, right after the directory (each checked when its table is first used)
///   tableCount × 84, in the same order: count u64, liveBytes u64, entriesOffset u64,
///     entriesLength u64, groupsOffset u64, ranksOffset u64, groupCount u32, creation segment
///     u32 (0: none), creation offset u32, creation length u32, expiringCount u64 (entries with
///     an expiry), lifetime i64 (as in the directory), CRC u32 of bytes 0..<80
/// per table, at the offsets the directory gives (groups and ranks 64-byte aligned):
///   groups   groupCount × 64: 7 slots of (tag u32, entry u32), 0 u32, CRC u32 of bytes 0..<60
///   samples  ⌈⌈count / 16⌉ / 15⌉ × 64: the offsets (u32) of entries 0, 16, 32, … 15 to a
///            group, zeros after the last, CRC u32 of bytes 0..<60
///   entries  in key order: CRC u32 of the rest of the entry, segment u32 (bit 31: an
///            expiry follows the key), offset u32, length u32, keyLength u16, key, expiry i64
/// ```
/// `groupCount` is ⌈count / (7 × 0.85)⌉. A slot's tag is the high 32 bits of the key's hash
/// (1 if they are 0; 0 marks an empty slot), its entry the offset of the key's entry in
/// `entries` plus one; a key's probe starts at group ⌊(low 32 bits of the hash) × groupCount /
/// 2^32⌋ and goes on group by group, from the last to the first. Every CRC is masked
/// (``CRC32C/mask(_:)``). The header and directory are checked when the file is opened; a
/// table record when its table is first used; a group, a rank group and an entry each time
/// they are read.
package enum IndexFileFormat {
  static let magic: [UInt8] = Array("YTKKVIDX".utf8)
  static let version: UInt16 = 3
  static let headerSize = 64
  static let segmentRecordSize = 16
  /// The directory's totals: the keys and the live bytes of all tables.
  static let totalsSize = 16
  /// A table's reference in the directory: where its name ends, its flags, its lifetime.
  static let tableReferenceSize = 16
  /// Set in a table reference's flags when the table has keys with an expiry.
  static let hasExpiriesFlag: UInt32 = 1
  static let tableRecordSize = 84
  /// Where a table record's checksum is: after its 80 bytes of fields, which it covers.
  static let recordChecksumOffset = 80
  /// Set in an entry's segment number (segment numbers are below 2^31) when the key's expiry
  /// follows its key.
  static let expiryBit: UInt32 = 1 << 31
  static let groupSize = 64
  static let slotsPerGroup = 7
  static let samplesPerGroup = 15
  /// Every this many entries, the samples give the offset of one.
  static let sampleInterval = 16
  static let entryHeaderSize = 18
  /// Slot groups are about this full (of 7 slots each): a probe mostly reads one group, and
  /// the slots cost about 10 bytes a key.
  static let load = 0.85

  /// One segment of the position an index file covers.
  struct CoveredSegment: Equatable {
    var number: UInt32
    var salt: UInt32
    var coveredLength: Int
  }

  /// The number of slot groups for `count` keys (0 for none). Integer arithmetic, so that every
  /// platform computes the same number: ⌈count × 100 / (7 × 85)⌉.
  static func groupCount(for count: Int) -> Int {
    let divisor = Int64(slotsPerGroup * 85)
    return Int((Int64(count) * 100 + divisor - 1) / divisor)
  }

  static func sampleCount(for count: Int) -> Int {
    (count + sampleInterval - 1) / sampleInterval
  }

  static func sampleGroupCount(for count: Int) -> Int {
    (sampleCount(for: count) + samplesPerGroup - 1) / samplesPerGroup
  }

  /// The group where the probe for `hash` starts, of `groupCount`.
  @inline(__always)
  static func firstGroup(_ hash: UInt64, of groupCount: Int) -> Int {
    Int(truncatingIfNeeded: ((hash & 0xFFFF_FFFF) &* UInt64(truncatingIfNeeded: groupCount)) >> 32)
  }

  /// `value` rounded up to a multiple of `multiple`.
  static func roundUp(_ value: Int, to multiple: Int) -> Int {
    (value + multiple - 1) / multiple * multiple
  }

  @inline(__always)
  static func tag(_ hash: UInt64) -> UInt32 {
    let high = UInt32(truncatingIfNeeded: hash >> 32)
    return high == 0 ? 1 : high
  }

  @inline(__always)
  static func groupChecksum(_ group: UnsafeRawPointer) -> UInt32 {
    CRC32C.mask(CRC32C.update(0, group, groupSize - 4))
  }

  /// The masked CRC-32C of the table record at `record`'s fields.
  static func recordChecksum(_ record: UnsafeRawPointer) -> UInt32 {
    CRC32C.mask(CRC32C.update(0, record, recordChecksumOffset))
  }
}

/// What a checkpoint writes: the key directory copied at one position of the log.
struct IndexSnapshot {
  struct Table {
    var name: [UInt8]
    var creation: RecordLocation?
    var keys: TableKeys
    var liveBytes: Int
    /// The keys that have an expiry, with it.
    var expiries: [[UInt8]: Int64]
    var lifetime: Int64
  }
  var segments: [IndexFileFormat.CoveredSegment]
  var nextSequence: UInt64
  var tables: [Table]

  /// The keys and locations of tables copied by ``KeyDirectory/copyTables()``, base first;
  /// nil if a base was found damaged on the way.
  static func tables(of copies: [(name: String, table: TableIndex, creation: RecordLocation?)])
    -> [Table]?
  {
    var result: [Table] = []
    result.reserveCapacity(copies.count)
    for (name, table, creation) in copies {
      guard let keys = TableKeys(of: table) else { return nil }
      var expiries: [[UInt8]: Int64] = [:]
      table.expiring?.forEachKey { key, expiry in expiries[Array(key)] = expiry }
      result.append(
        Table(
          name: Array(name.utf8), creation: creation, keys: keys, liveBytes: table.liveBytes,
          expiries: expiries, lifetime: table.lifetime))
    }
    return result
  }

  /// Sorts every table's items by their keys' bytes.
  mutating func sortKeys() {
    for index in tables.indices {
      tables[index].keys.sort()
    }
  }

  /// The whole file for `snapshot` (sorted), numbered `number`, with slot groups built with
  /// `seed`; nil when a table is too large for the format's 32-bit entry offsets.
  func encoded(number: UInt32, seed: UInt64) -> [UInt8]? {
    typealias F = IndexFileFormat
    // The tables in the byte order of their names: an open finds a table by a binary search of
    // the names.
    let tables = tables.sorted { a, b in
      a.name.withUnsafeBytes { a in b.name.withUnsafeBytes { b in bytesPrecede(a, b) } }
    }
    let nameBytes = tables.reduce(0) { $0 + $1.name.count }
    let directoryLength =
      segments.count * F.segmentRecordSize + F.totalsSize + tables.count * F.tableReferenceSize
      + nameBytes
    let records = F.headerSize + directoryLength
    var offset = F.roundUp(records + tables.count * F.tableRecordSize, to: F.groupSize)
    var layout: [(groups: Int, ranks: Int, entries: Int, entriesLength: Int, groupCount: Int)] = []
    var keyCount = 0
    var liveBytes = 0
    for table in tables {
      let groupCount = F.groupCount(for: table.keys.items.count)
      let groups = offset
      let ranks = groups + groupCount * F.groupSize
      let entries = ranks + F.sampleGroupCount(for: table.keys.items.count) * F.groupSize
      let entriesLength =
        table.keys.items.count * F.entryHeaderSize + table.keys.keys.count
        + table.expiries.count * RecordLayout.expirySize
      // Entry offsets are 32 bits (compared in 64 bits: where `Int` is 32 bits, UInt32.max is
      // not an `Int`).
      guard UInt64(entriesLength) < UInt64(UInt32.max) else { return nil }
      layout.append((groups, ranks, entries, entriesLength, groupCount))
      offset = F.roundUp(entries + entriesLength, to: F.groupSize)
      keyCount += table.keys.items.count
      liveBytes += table.liveBytes
    }
    let fileLength = offset
    var bytes = [UInt8](repeating: 0, count: fileLength)
    bytes.withUnsafeMutableBytes { buffer in
      let base = buffer.baseAddress!
      // Directory: the position, the totals, a reference to each table, the names.
      var cursor = base + F.headerSize
      for segment in segments {
        storeLittleEndian(segment.number, cursor)
        storeLittleEndian(segment.salt, cursor + 4)
        storeLittleEndian(UInt64(segment.coveredLength), cursor + 8)
        cursor += F.segmentRecordSize
      }
      storeLittleEndian(UInt64(keyCount), cursor)
      storeLittleEndian(UInt64(liveBytes), cursor + 8)
      cursor += F.totalsSize
      var names = cursor + tables.count * F.tableReferenceSize
      var nameEnd = 0
      for table in tables {
        table.name.withUnsafeBytes { name in
          names.copyMemory(from: name.baseAddress!, byteCount: name.count)
        }
        names += table.name.count
        nameEnd += table.name.count
        storeLittleEndian(UInt32(nameEnd), cursor)
        storeLittleEndian(UInt32(table.expiries.isEmpty ? 0 : 1), cursor + 4)
        storeLittleEndian(UInt64(bitPattern: table.lifetime), cursor + 8)
        cursor += F.tableReferenceSize
      }
      // The tables' records, in the same order, each with its checksum.
      cursor = base + records
      for (table, place) in zip(tables, layout) {
        storeLittleEndian(UInt64(table.keys.items.count), cursor)
        storeLittleEndian(UInt64(table.liveBytes), cursor + 8)
        storeLittleEndian(UInt64(place.entries), cursor + 16)
        storeLittleEndian(UInt64(place.entriesLength), cursor + 24)
        storeLittleEndian(UInt64(place.groups), cursor + 32)
        storeLittleEndian(UInt64(place.ranks), cursor + 40)
        storeLittleEndian(UInt32(place.groupCount), cursor + 48)
        storeLittleEndian(table.creation?.segment ?? 0, cursor + 52)
        storeLittleEndian(table.creation?.offset ?? 0, cursor + 56)
        storeLittleEndian(table.creation?.length ?? 0, cursor + 60)
        storeLittleEndian(UInt64(table.expiries.count), cursor + 64)
        storeLittleEndian(UInt64(bitPattern: table.lifetime), cursor + 72)
        storeLittleEndian(F.recordChecksum(cursor), cursor + F.recordChecksumOffset)
        cursor += F.tableRecordSize
        Self.writeTable(table, at: place, seed: seed, into: base)
      }
      // Header.
      base.copyMemory(from: F.magic, byteCount: 8)
      storeLittleEndian(F.version, base + 8)
      storeLittleEndian(number, base + 12)
      storeLittleEndian(nextSequence, base + 16)
      storeLittleEndian(seed, base + 24)
      storeLittleEndian(UInt64(fileLength), base + 32)
      storeLittleEndian(UInt32(segments.count), base + 40)
      storeLittleEndian(UInt32(tables.count), base + 44)
      storeLittleEndian(UInt64(directoryLength), base + 48)
      let directoryCRC = CRC32C.update(0, base + F.headerSize, directoryLength)
      storeLittleEndian(CRC32C.mask(directoryCRC), base + 56)
      storeLittleEndian(CRC32C.mask(CRC32C.update(0, base, 60)), base + 60)
    }
    return bytes
  }

  /// A key's slot to fill: the group its probe starts at, its tag, and its entry's offset + 1.
  private struct SlotPlacement: RadixSorted {
    var group: UInt32
    var tag: UInt32
    var reference: UInt32
    var radixKey: UInt64 { UInt64(group) }
  }

  /// How many keys' slots are placed together (``SlotPlacement``): enough that each chunk
  /// sweeps the groups in order, few enough that the list stays small (3 MiB, and as much again
  /// while it is sorted).
  private static let placementChunk = 1 << 18

  /// Fills the slots of `placements`, in the order of their groups, in the `groupCount`
  /// groups at `groups`, and empties the list.
  private static func place(
    _ placements: inout [SlotPlacement], in groups: UnsafeMutableRawPointer, groupCount: Int
  ) {
    typealias F = IndexFileFormat
    radixSort(&placements)
    for placement in placements {
      var group = Int(placement.group)
      placing: while true {
        let slots = groups + group * F.groupSize
        for slot in 0..<F.slotsPerGroup where loadLittleEndian(UInt32.self, slots + slot * 8) == 0 {
          storeLittleEndian(placement.tag, slots + slot * 8)
          storeLittleEndian(placement.reference, slots + slot * 8 + 4)
          break placing
        }
        group = group + 1 == groupCount ? 0 : group + 1
      }
    }
    placements.removeAll(keepingCapacity: true)
  }

  private static func writeTable(
    _ table: Table,
    at place: (groups: Int, ranks: Int, entries: Int, entriesLength: Int, groupCount: Int),
    seed: UInt64, into base: UnsafeMutableRawPointer
  ) {
    typealias F = IndexFileFormat
    // Each key's slot, placed a chunk of keys at a time in the order of the groups their probes
    // start at: placed in key order, each store landed in a random group of the file's
    // (megabytes of them for a large table) and waited for memory.
    var placements: [SlotPlacement] = []
    placements.reserveCapacity(min(table.keys.items.count, Self.placementChunk))
    let groups = base + place.groups
    table.keys.keys.withUnsafeBytes { keys in
      var entryOffset = 0
      // A key of at most 16 bytes is whole in its sort item's prefix, and is read from there:
      // the keys' bytes lie in the order they were gathered, not in key order, and reading
      // each from them missed the cache (most of the encoding of a million keys).
      let short = UnsafeMutableRawBufferPointer.allocate(byteCount: 16, alignment: 8)
      defer { short.deallocate() }
      for (rank, item) in table.keys.items.enumerated() {
        let key: UnsafeRawBufferPointer
        if item.keyLength <= 16 {
          short.storeBytes(of: item.prefix.high.bigEndian, as: UInt64.self)
          short.storeBytes(of: item.prefix.low.bigEndian, toByteOffset: 8, as: UInt64.self)
          key = UnsafeRawBufferPointer(rebasing: short[0..<item.keyLength])
        } else {
          key = UnsafeRawBufferPointer(
            start: keys.baseAddress.map { $0 + item.keyStart }, count: item.keyLength)
        }
        // The entry.
        let entry = base + place.entries + entryOffset
        let expiry = table.expiries.isEmpty ? nil : table.expiries[Array(key)]
        precondition(item.location.segment & F.expiryBit == 0, "a segment number of 2^31 or more")
        storeLittleEndian(item.location.segment | (expiry == nil ? 0 : F.expiryBit), entry + 4)
        storeLittleEndian(item.location.offset, entry + 8)
        storeLittleEndian(item.location.length, entry + 12)
        storeLittleEndian(UInt16(key.count), entry + 16)
        if key.count > 0 {
          (entry + F.entryHeaderSize).copyMemory(from: key.baseAddress!, byteCount: key.count)
        }
        let entryLength =
          F.entryHeaderSize + key.count + (expiry == nil ? 0 : RecordLayout.expirySize)
        if let expiry {
          storeLittleEndian(UInt64(bitPattern: expiry), entry + F.entryHeaderSize + key.count)
        }
        let crc = CRC32C.update(0, entry + 4, entryLength - 4)
        storeLittleEndian(CRC32C.mask(crc), entry)
        // Its sample.
        if rank % F.sampleInterval == 0 {
          let sample = rank / F.sampleInterval
          let group = base + place.ranks + (sample / F.samplesPerGroup) * F.groupSize
          storeLittleEndian(UInt32(entryOffset), group + (sample % F.samplesPerGroup) * 4)
        }
        // Its slot, placed with the rest of its chunk.
        let hash = KeyHash.hash(key, seed: seed)
        placements.append(
          SlotPlacement(
            group: UInt32(F.firstGroup(hash, of: place.groupCount)), tag: F.tag(hash),
            reference: UInt32(entryOffset + 1)))
        if placements.count == Self.placementChunk {
          Self.place(&placements, in: groups, groupCount: place.groupCount)
        }
        entryOffset += entryLength
      }
      Self.place(&placements, in: groups, groupCount: place.groupCount)
      for group in 0..<place.groupCount {
        let start = base + place.groups + group * F.groupSize
        storeLittleEndian(F.groupChecksum(start), start + 60)
      }
      for group in 0..<F.sampleGroupCount(for: table.keys.items.count) {
        let start = base + place.ranks + group * F.groupSize
        storeLittleEndian(F.groupChecksum(start), start + 60)
      }
    }
  }
}
