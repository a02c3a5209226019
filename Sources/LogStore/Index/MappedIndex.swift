/// An index file opened for use in place: its header and directory checked, its tables ready
/// to be looked up through the file's read-only mapping.
///
/// Nothing in it changes after it is opened, so any number of threads may read it at once.
/// The mapping is clean, file-backed memory: the system can drop its pages under pressure and
/// read them back from the file, which is why an index used this way costs the process no
/// heap. Each part of a table is checked each time it is read (``MappedTable``), so a file
/// damaged after it was opened is found out, never trusted.
final class MappedIndex: @unchecked Sendable {
  typealias F = IndexFileFormat
  let number: UInt32
  let path: String
  let nextSequence: UInt64
  let seed: UInt64
  /// The position covered: these segments, in order, each up to its covered length.
  let segments: [F.CoveredSegment]
  let fileLength: Int
  /// The whole file's bytes.
  private let file: UnsafeRawBufferPointer
  /// The keys and live bytes of all the tables together.
  let keyCount: Int
  let liveBytes: Int
  let tableCount: Int
  /// The directory's table references (in the byte order of the tables' names), and the names
  /// they end in (checked at open, with the directory).
  private let references: UnsafeRawPointer
  private let names: UnsafeRawPointer
  /// The tables' records, in the same order, each checked when its table is first read
  /// (``table(at:)``), so that a store of thousands of tables opens without visiting each.
  private let records: UnsafeRawPointer
  /// The places of the tables that have keys with an expiry.
  let placesWithExpiries: [Int]
  /// Keeps the bytes mapped.
  private let owner: AnyObject

  /// One table of the file, read from its place.
  struct FileTable {
    var name: String
    var table: MappedTable
    var creation: RecordLocation?
  }

  /// Why an index file is not used: the store is opened from its log instead.
  struct Rejection: Error {
    let reason: String
  }

  /// Checks the header and directory of the index file `number` whose bytes are `bytes`
  /// (at least a header's worth), kept readable by `owner` (its mapping).
  ///
  /// Only the header and the directory are read: the position, the totals, and each table's
  /// name, in order. A table's record and parts are checked when the table is first read
  /// (``table(at:)``), and one found wrong then is damage found after the open (the store
  /// rebuilds its directory from the log): an open of a store of thousands of tables visits
  /// none of them.
  init(number: UInt32, path: String, bytes: UnsafeRawBufferPointer, owner: AnyObject)
    throws(Rejection)
  {
    self.number = number
    self.path = path
    self.owner = owner
    let size = bytes.count
    guard size >= F.headerSize else { throw Rejection(reason: "shorter than its header") }
    let base = bytes.baseAddress!
    guard bytesEqual(UnsafeRawBufferPointer(start: base, count: 8), F.magic) else {
      throw Rejection(reason: "not an index file")
    }
    guard CRC32C.mask(CRC32C.update(0, base, 60)) == loadLittleEndian(UInt32.self, base + 60)
    else { throw Rejection(reason: "its header is damaged") }
    let version = loadLittleEndian(UInt16.self, base + 8)
    guard version == F.version else {
      throw Rejection(reason: "it is in version \(version); this library reads \(F.version)")
    }
    guard loadLittleEndian(UInt32.self, base + 12) == number else {
      throw Rejection(reason: "its header names another file number")
    }
    nextSequence = loadLittleEndian(UInt64.self, base + 16)
    seed = loadLittleEndian(UInt64.self, base + 24)
    guard loadLittleEndian(UInt64.self, base + 32) == UInt64(size) else {
      throw Rejection(reason: "it is \(size) bytes long, not as long as its header says")
    }
    fileLength = size
    file = bytes
    // (Clamped where `Int` is 32 bits: no directory holds that many records, which the reads
    // below find.)
    let segmentCount = Int(clamping: loadLittleEndian(UInt32.self, base + 40))
    let tableCount = Int(clamping: loadLittleEndian(UInt32.self, base + 44))
    let directoryLength = loadLittleEndian(UInt64.self, base + 48)
    guard directoryLength <= UInt64(size - F.headerSize) else {
      throw Rejection(reason: "its directory runs past its end")
    }
    let directory = UnsafeRawBufferPointer(
      rebasing: bytes[F.headerSize..<F.headerSize + Int(directoryLength)])
    guard CRC32C.mask(CRC32C.checksum(directory)) == loadLittleEndian(UInt32.self, base + 56)
    else { throw Rejection(reason: "its directory is damaged") }

    var reader = DirectoryReader(bytes: directory)
    var segments: [F.CoveredSegment] = []
    for _ in 0..<segmentCount {
      guard let record = reader.take(F.segmentRecordSize) else {
        throw Rejection(reason: "its directory is cut short")
      }
      let covered = loadLittleEndian(UInt64.self, record + 8)
      guard covered <= UInt64(UInt32.max) else {
        throw Rejection(reason: "it covers more of a segment than a segment holds")
      }
      segments.append(
        F.CoveredSegment(
          number: loadLittleEndian(UInt32.self, record),
          salt: loadLittleEndian(UInt32.self, record + 4),
          coveredLength: Int(covered)))
    }
    self.segments = segments
    guard let totals = reader.take(F.totalsSize) else {
      throw Rejection(reason: "its directory is cut short")
    }
    let keyCount = loadLittleEndian(UInt64.self, totals)
    let liveBytes = loadLittleEndian(UInt64.self, totals + 8)
    // Every key's entry takes at least its header, so the count is bounded by the file.
    guard keyCount <= UInt64(size / F.entryHeaderSize), liveBytes <= UInt64(Int.max) else {
      throw Rejection(reason: "its directory's totals are impossible")
    }
    self.keyCount = Int(keyCount)
    self.liveBytes = Int(liveBytes)
    // Compared before multiplying, so that no product overflows a 32-bit `Int`.
    guard tableCount <= directory.count / F.tableReferenceSize,
      let references = reader.take(tableCount * F.tableReferenceSize)
    else { throw Rejection(reason: "its directory is cut short") }
    let names = reader.rest
    let recordsStart = F.headerSize + directory.count
    guard tableCount <= (size - recordsStart) / F.tableRecordSize else {
      throw Rejection(reason: "its table records run past its end")
    }
    self.tableCount = tableCount
    self.references = references
    self.names = names.baseAddress!
    records = base + recordsStart
    // Each name after the one before in byte order: none is empty or repeated, and a binary
    // search finds each.
    var withExpiries: [Int] = []
    var previous = UnsafeRawBufferPointer(start: names.baseAddress, count: 0)
    var start = 0
    for place in 0..<tableCount {
      let reference = references + place * F.tableReferenceSize
      // Compared before it is made an `Int`, which may be 32 bits.
      let rawEnd = loadLittleEndian(UInt32.self, reference)
      guard UInt64(rawEnd) <= UInt64(names.count), Int(rawEnd) > start, Int(rawEnd) - start <= 255
      else {
        throw Rejection(reason: "its directory names a table without a name, or past its end")
      }
      let end = Int(rawEnd)
      let name = UnsafeRawBufferPointer(rebasing: names[start..<end])
      guard place == 0 || bytesPrecede(previous, name) else {
        throw Rejection(reason: "its directory names a table twice, or out of order")
      }
      // Names are written from strings: bytes that are not UTF-8 (which decoding would repair,
      // so that two names could decode alike) are damage.
      guard Self.isUTF8(name) else {
        throw Rejection(reason: "its directory names a table not in UTF-8")
      }
      if loadLittleEndian(UInt32.self, reference + 4) & F.hasExpiriesFlag != 0 {
        withExpiries.append(place)
      }
      previous = name
      start = end
    }
    guard start == names.count else {
      throw Rejection(reason: "its directory has bytes left over")
    }
    placesWithExpiries = withExpiries
  }

  /// Whether `name` is UTF-8 as a `String` would keep it: ASCII is, anything else is decoded.
  private static func isUTF8(_ name: UnsafeRawBufferPointer) -> Bool {
    // ASCII, eight bytes at a time (the last eight overlapping the ones before).
    var high: UInt64 = 0
    if name.count >= 8 {
      for index in stride(from: 0, to: name.count - 8, by: 8) {
        high |= name.loadUnaligned(fromByteOffset: index, as: UInt64.self)
      }
      high |= name.loadUnaligned(fromByteOffset: name.count - 8, as: UInt64.self)
    } else {
      for byte in name { high |= UInt64(byte) }
    }
    guard high & 0x8080_8080_8080_8080 != 0 else { return true }
    var decoded = String(decoding: name, as: UTF8.self)
    return decoded.withUTF8 { bytesEqual(UnsafeRawBufferPointer($0), name) }
  }

  /// The place of the table named `name` (by its UTF-8 bytes), if the file has one: a binary
  /// search of the names.
  func place(ofTable name: UnsafeRawBufferPointer) -> Int? {
    var low = 0
    var high = tableCount
    while low < high {
      let middle = low + (high - low) / 2
      if bytesPrecede(nameBytes(ofTable: middle), name) { low = middle + 1 } else { high = middle }
    }
    return low < tableCount && bytesEqual(nameBytes(ofTable: low), name) ? low : nil
  }

  /// The bytes of the name of the table at `place`.
  func nameBytes(ofTable place: Int) -> UnsafeRawBufferPointer {
    let start =
      place == 0
      ? 0 : Int(loadLittleEndian(UInt32.self, references + (place - 1) * F.tableReferenceSize))
    let end = Int(loadLittleEndian(UInt32.self, references + place * F.tableReferenceSize))
    return UnsafeRawBufferPointer(start: names + start, count: end - start)
  }

  /// The name of the table at `place`.
  func name(ofTable place: Int) -> String {
    String(decoding: nameBytes(ofTable: place), as: UTF8.self)
  }

  /// The default lifetime of the table at `place` (µs; 0: none), from the directory.
  func lifetime(ofTable place: Int) -> Int64 {
    Int64(bitPattern: loadLittleEndian(UInt64.self, references + place * F.tableReferenceSize + 8))
  }

  /// The table at `place`, read from the file: a new ``MappedTable`` each time. Throws when its
  /// record fails its checksum or disagrees with the directory, or its part of the file
  /// contradicts its record (damage found after the open).
  func table(at place: Int) throws(Rejection) -> FileTable {
    let record = records + place * F.tableRecordSize
    guard F.recordChecksum(record) == loadLittleEndian(UInt32.self, record + F.recordChecksumOffset)
    else { throw Rejection(reason: "a table's record is damaged") }
    // The directory says the same of it: the open made the tables it says have expiring keys.
    let expiring = loadLittleEndian(UInt64.self, record + 64) > 0
    let reference = references + place * F.tableReferenceSize
    guard Int64(bitPattern: loadLittleEndian(UInt64.self, record + 72)) == lifetime(ofTable: place),
      expiring == (loadLittleEndian(UInt32.self, reference + 4) & F.hasExpiriesFlag != 0)
    else { throw Rejection(reason: "a table's record and its directory disagree") }
    let table = try MappedTable(record: record, file: file, seed: seed, owner: owner)
    let creationSegment = loadLittleEndian(UInt32.self, record + 52)
    let creation =
      creationSegment == 0
      ? nil
      : RecordLocation(
        segment: creationSegment, offset: loadLittleEndian(UInt32.self, record + 56),
        length: loadLittleEndian(UInt32.self, record + 60))
    return FileTable(name: name(ofTable: place), table: table, creation: creation)
  }

  /// The table at `place` as ``table(at:)`` reads it; if that finds it damaged, a stand-in for
  /// it (``MappedTable/init(damaged:file:seed:owner:)``, with no creation record) and `damaged`
  /// true.
  func tableOrStandIn(at place: Int) -> (file: FileTable, damaged: Bool) {
    do throws(Rejection) {
      return (try table(at: place), false)
    } catch {
      let standIn = MappedTable(
        damaged: records + place * F.tableRecordSize, file: file, seed: seed, owner: owner)
      return (FileTable(name: name(ofTable: place), table: standIn, creation: nil), true)
    }
  }

  /// Reads fixed-size records off the directory, refusing to run past its end.
  private struct DirectoryReader {
    let bytes: UnsafeRawBufferPointer
    var position = 0
    /// The bytes not taken yet.
    var rest: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[position...]) }

    /// The next `count` bytes, or nil if the directory ends first. The directory is a part of
    /// a mapping, so its address is never nil, even when it is empty.
    mutating func take(_ count: Int) -> UnsafeRawPointer? {
      guard count <= bytes.count - position else { return nil }
      defer { position += count }
      return bytes.baseAddress! + position
    }
  }
}

/// What a mapped table says about a key.
enum MappedLookup: Equatable {
  case found(RecordLocation)
  case absent
  /// The part of the file that answers this failed its check: the file must not be trusted.
  case damaged
}

/// One table of a ``MappedIndex``: a hash table of slot groups, the keys in order with their
/// record locations, and samples of that order for finding a key's place in it.
///
/// Every read checks what it reads: a slot group or sample group against its CRC, an entry
/// against its own, and every offset against the bounds of its region. A failed check
/// answers ``MappedLookup/damaged``, never a wrong location or a wrongly absent key.
final class MappedTable: @unchecked Sendable {
  typealias F = IndexFileFormat
  let count: Int
  let liveBytes: Int
  let seed: UInt64
  /// The table's default lifetime (µs; 0: none), from its creation record.
  let lifetime: Int64
  /// Where the entries with an expiry are, checked at open (their number is in the
  /// directory, so only a table that has some is walked).
  private(set) var expiringEntries: [Int] = []
  private let groups: UnsafeRawPointer
  private let groupCount: Int
  private let samples: UnsafeRawPointer
  private let entries: UnsafeRawBufferPointer
  /// Keeps the bytes above mapped.
  private let owner: AnyObject
  /// A stand-in for a table found damaged (``init(damaged:file:seed:owner:)``).
  private let isDamaged: Bool

  /// The bytes of all the table's keys (its entries less their fixed-size headers).
  var keyBytes: Int {
    // (None for a stand-in, which has no entries.)
    max(
      entries.count - count * F.entryHeaderSize - expiringEntries.count * RecordLayout.expirySize, 0
    )
  }

  /// A table record's fields, checked against the file's size and the format's rules: where
  /// its parts lie and how large they are, as far as the record alone can say.
  struct Layout {
    var count: Int
    var liveBytes: Int
    var entriesOffset: Int
    var entriesLength: Int
    var groupsOffset: Int
    var groupCount: Int
    var samplesOffset: Int
    var expiringCount: Int

    init(record: UnsafeRawPointer, fileSize: Int) throws(MappedIndex.Rejection) {
      func field(_ offset: Int) -> UInt64 { loadLittleEndian(UInt64.self, record + offset) }
      let size = UInt64(fileSize)
      let count = field(0)
      let liveBytes = field(8)
      let entriesOffset = field(16)
      let entriesLength = field(24)
      let groupsOffset = field(32)
      let ranksOffset = field(40)
      let groupCount = UInt64(loadLittleEndian(UInt32.self, record + 48))
      let expiringCount = field(64)
      // Every key's entry takes at least its header, so the count is bounded by the file.
      guard count <= size / UInt64(F.entryHeaderSize), liveBytes <= UInt64(Int.max),
        entriesLength <= UInt64(UInt32.max - 1),
        entriesOffset <= size, entriesLength <= size - entriesOffset,
        entriesLength >= count * UInt64(F.entryHeaderSize),
        groupCount == UInt64(F.groupCount(for: Int(count))),
        groupsOffset % UInt64(F.groupSize) == 0, groupsOffset <= size,
        groupCount * UInt64(F.groupSize) <= size - groupsOffset,
        ranksOffset % UInt64(F.groupSize) == 0, ranksOffset <= size,
        UInt64(F.sampleGroupCount(for: Int(count))) * UInt64(F.groupSize) <= size - ranksOffset,
        expiringCount <= count
      else {
        throw MappedIndex.Rejection(reason: "a table's layout in its record is impossible")
      }
      self.count = Int(count)
      self.liveBytes = Int(liveBytes)
      self.entriesOffset = Int(entriesOffset)
      self.entriesLength = Int(entriesLength)
      self.groupsOffset = Int(groupsOffset)
      self.groupCount = Int(groupCount)
      samplesOffset = Int(ranksOffset)
      self.expiringCount = Int(expiringCount)
    }
  }

  /// The table `record` describes, in `file`: its layout checked (``Layout``), then that its
  /// last entries end where its entries do and, if it has keys with an expiry, where those are.
  init(record: UnsafeRawPointer, file: UnsafeRawBufferPointer, seed: UInt64, owner: AnyObject)
    throws(MappedIndex.Rejection)
  {
    let layout = try Layout(record: record, fileSize: file.count)
    let reject = MappedIndex.Rejection(
      reason: "a table's entries do not end where its record says")
    lifetime = Int64(bitPattern: loadLittleEndian(UInt64.self, record + 72))
    let base = file.baseAddress!
    count = layout.count
    liveBytes = layout.liveBytes
    self.seed = seed
    groups = base + layout.groupsOffset
    groupCount = layout.groupCount
    samples = base + layout.samplesOffset
    entries = UnsafeRawBufferPointer(
      start: base + layout.entriesOffset, count: layout.entriesLength)
    self.owner = owner
    isDamaged = false
    guard endsWhereItSays() else { throw reject }
    if layout.expiringCount > 0 {
      var found: [Int] = []
      var offset = 0
      while offset < entries.count {
        guard let entry = entry(at: offset) else { throw reject }
        if entry.expiry != nil { found.append(offset) }
        offset = entry.end
      }
      guard found.count == layout.expiringCount else { throw reject }
      expiringEntries = found
    }
  }

  /// A stand-in for the table `record` describes, whose part of `file` was found damaged when
  /// it was first read (``KeyDirectory``): its counts are the record's, and every lookup and
  /// walk answers that it is damaged, until the store has rebuilt its directory from the log.
  init(
    damaged record: UnsafeRawPointer, file: UnsafeRawBufferPointer, seed: UInt64, owner: AnyObject
  ) {
    // The record may be the damage itself: its counts are then taken as none.
    let layout = try? Layout(record: record, fileSize: file.count)
    lifetime = Int64(bitPattern: loadLittleEndian(UInt64.self, record + 72))
    count = layout?.count ?? 0
    liveBytes = layout?.liveBytes ?? 0
    self.seed = seed
    groups = file.baseAddress!
    groupCount = 0
    samples = file.baseAddress!
    entries = UnsafeRawBufferPointer(start: file.baseAddress!, count: 0)
    self.owner = owner
    isDamaged = true
  }

  /// Whether the last entries, walked from the last sample, end exactly where the entries do:
  /// a cheap check at open that `count` and the entries' length agree (at most 16 entries).
  /// Their lengths are read without checking their checksums, which every use of an entry
  /// checks: a store of many tables opens without reading each table's entries through.
  private func endsWhereItSays() -> Bool {
    guard count > 0 else { return entries.count == 0 }
    let lastSample = (count - 1) / F.sampleInterval
    guard var offset = sampleOffset(lastSample) else { return false }
    for _ in lastSample * F.sampleInterval..<count {
      guard let entry = entry(at: offset, verify: false) else { return false }
      offset = entry.end
    }
    return offset == entries.count
  }

  // MARK: Entries

  /// A checked entry: its key, its record's location, and where the next entry starts.
  struct Entry {
    var key: UnsafeRawBufferPointer
    var location: RecordLocation
    var end: Int
    /// The key's expiry, when it has one.
    var expiry: Int64?
  }

  /// The entry at `offset` of the entries region, checked; nil if it fails a check. With
  /// `verify` false its checksum is not checked (its bounds are).
  @inline(__always)
  func entry(at offset: Int, verify: Bool = true) -> Entry? {
    guard offset >= 0, entries.count - offset >= F.entryHeaderSize else { return nil }
    let start = entries.baseAddress! + offset
    let keyLength = Int(loadLittleEndian(UInt16.self, start + 16))
    let segment = loadLittleEndian(UInt32.self, start + 4)
    let hasExpiry = segment & F.expiryBit != 0
    let length = F.entryHeaderSize + keyLength + (hasExpiry ? RecordLayout.expirySize : 0)
    guard entries.count - offset >= length,
      !verify
        || CRC32C.mask(CRC32C.update(0, start + 4, length - 4))
          == loadLittleEndian(UInt32.self, start)
    else { return nil }
    return Entry(
      key: UnsafeRawBufferPointer(start: start + F.entryHeaderSize, count: keyLength),
      location: RecordLocation(
        segment: segment & ~F.expiryBit,
        offset: loadLittleEndian(UInt32.self, start + 8),
        length: loadLittleEndian(UInt32.self, start + 12)),
      end: offset + length,
      expiry: hasExpiry
        ? Int64(
          bitPattern: loadLittleEndian(UInt64.self, start + F.entryHeaderSize + keyLength))
        : nil)
  }

  // MARK: Lookup

  /// The location of `key`'s record; `hash` is ``KeyHash`` of the key with this table's seed.
  func find(_ key: UnsafeRawBufferPointer, hash: UInt64) -> MappedLookup {
    guard !isDamaged else { return .damaged }
    guard groupCount > 0 else { return .absent }
    let tag = F.tag(hash)
    var group = F.firstGroup(hash, of: groupCount)
    // A valid table always has an empty slot; one probed all round without finding one is
    // damaged.
    for _ in 0..<groupCount {
      let slots = groups + group * F.groupSize
      guard F.groupChecksum(slots) == loadLittleEndian(UInt32.self, slots + 60) else {
        return .damaged
      }
      for slot in 0..<F.slotsPerGroup {
        let slotTag = loadLittleEndian(UInt32.self, slots + slot * 8)
        if slotTag == 0 { return .absent }
        guard slotTag == tag else { continue }
        let reference = Int(loadLittleEndian(UInt32.self, slots + slot * 8 + 4))
        guard let entry = entry(at: reference - 1) else { return .damaged }
        if bytesEqual(entry.key, key) { return .found(entry.location) }
      }
      group = group + 1 == groupCount ? 0 : group + 1
    }
    return .damaged
  }

  func find(_ key: UnsafeRawBufferPointer) -> MappedLookup {
    find(key, hash: KeyHash.hash(key, seed: seed))
  }

  /// Loads the group where the probe for `hash` starts, so that a lookup soon after finds it
  /// in the cache (as ``KeyDirectory`` loads the slots of the puts a replay keeps back); returns a value to keep, so that the
  /// load is not optimized away. Nothing is trusted here: the lookup checks what it reads.
  @inline(__always)
  func warmGroup(_ hash: UInt64) -> UInt32 {
    guard groupCount > 0 else { return 0 }
    return groups.load(
      fromByteOffset: F.firstGroup(hash, of: groupCount) * F.groupSize, as: UInt32.self)
  }

  /// Loads the entry of the first slot of the start group whose tag matches `hash` (the group
  /// is in the cache after ``warmGroup(_:)``); returns a value to keep, as that does.
  @inline(__always)
  func warmEntry(_ hash: UInt64) -> UInt32 {
    guard groupCount > 0 else { return 0 }
    let slots = groups + F.firstGroup(hash, of: groupCount) * F.groupSize
    let tag = F.tag(hash)
    for slot in 0..<F.slotsPerGroup where loadLittleEndian(UInt32.self, slots + slot * 8) == tag {
      let reference = Int(loadLittleEndian(UInt32.self, slots + slot * 8 + 4))
      guard reference > 0, reference <= entries.count else { return 0 }
      return UInt32(entries[reference - 1])
    }
    return 0
  }

  // MARK: Order

  /// A place in the key order: the entry of rank `rank`, which starts at `offset`.
  struct Place {
    var rank: Int
    var offset: Int
  }

  /// The offset of the entry of rank `16 × sample`; nil if its sample group is damaged.
  private func sampleOffset(_ sample: Int) -> Int? {
    let group = samples + (sample / F.samplesPerGroup) * F.groupSize
    guard F.groupChecksum(group) == loadLittleEndian(UInt32.self, group + 60) else { return nil }
    return Int(loadLittleEndian(UInt32.self, group + (sample % F.samplesPerGroup) * 4))
  }

  /// The place of the first key that is not below `key` in byte order (rank `count` if none);
  /// nil if a part read on the way is damaged. Binary search over the samples, then a walk of
  /// at most 16 entries.
  func lowerBound(_ key: UnsafeRawBufferPointer) -> Place? {
    guard !isDamaged else { return nil }
    var low = 0
    var high = F.sampleCount(for: count)
    // The first sample whose key is not below `key`.
    while low < high {
      let middle = low + (high - low) / 2
      guard let offset = sampleOffset(middle), let entry = entry(at: offset) else { return nil }
      if bytesPrecede(entry.key, key) { low = middle + 1 } else { high = middle }
    }
    guard low > 0 else { return Place(rank: 0, offset: 0) }
    guard var offset = sampleOffset(low - 1) else { return nil }
    var rank = (low - 1) * F.sampleInterval
    while rank < count {
      guard let entry = entry(at: offset) else { return nil }
      if !bytesPrecede(entry.key, key) { break }
      offset = entry.end
      rank += 1
    }
    return Place(rank: rank, offset: offset)
  }

  /// Calls `body` with each entry in key order from `place` on (the first by default), until
  /// it returns false. Returns false if an entry was damaged (the walk stops there), true
  /// otherwise.
  @discardableResult
  func forEachEntry<E: Error>(
    from place: Place = Place(rank: 0, offset: 0), verify: Bool = true,
    _ body: (Entry) throws(E) -> Bool
  ) throws(E) -> Bool {
    guard !isDamaged else { return false }
    var offset = place.offset
    for _ in place.rank..<max(place.rank, count) {
      guard let entry = entry(at: offset, verify: verify) else { return false }
      guard try body(entry) else { return true }
      offset = entry.end
    }
    return true
  }

  /// Checks every part of the table; false if one is damaged (or the parts disagree: a key
  /// out of order, a slot that does not lead to its key).
  func verifyAll() -> Bool {
    guard !isDamaged else { return false }
    for group in 0..<groupCount {
      let slots = groups + group * F.groupSize
      guard F.groupChecksum(slots) == loadLittleEndian(UInt32.self, slots + 60) else {
        return false
      }
    }
    var previous: UnsafeRawBufferPointer?
    var rank = 0
    // Where the entry walked starts: the entries lie one after another (an entry with an
    // expiry is longer than its header and key).
    var start = 0
    var intact = true
    let walked = forEachEntry { entry in
      if let previous, !bytesPrecede(previous, entry.key) { intact = false }
      if rank % F.sampleInterval == 0, sampleOffset(rank / F.sampleInterval) != start {
        intact = false
      }
      if find(entry.key) != .found(entry.location) { intact = false }
      previous = entry.key
      rank += 1
      start = entry.end
      return intact
    }
    return walked && intact
  }
}
