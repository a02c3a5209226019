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
  /// The tables by name, with where each one's creation record is.
  let tables: [(name: String, table: MappedTable, creation: RecordLocation?)]
  let fileLength: Int
  /// Keeps the bytes mapped.
  private let owner: AnyObject

  /// Why an index file is not used: the store is opened from its log instead.
  struct Rejection: Error {
    let reason: String
  }

  /// Checks the header and directory of the index file `number` whose bytes are `bytes`
  /// (at least a header's worth), kept readable by `owner` (its mapping).
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
    let segmentCount = Int(loadLittleEndian(UInt32.self, base + 40))
    let tableCount = Int(loadLittleEndian(UInt32.self, base + 44))
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
    var tables: [(name: String, table: MappedTable, creation: RecordLocation?)] = []
    tables.reserveCapacity(min(tableCount, directory.count / F.tableRecordSize))
    // The names so far, by their bytes: a store of thousands of tables opens without a set of
    // their names as strings.
    let names = NameTable<Bool>()
    names.reserveCapacity(tables.capacity, nameBytes: directory.count)
    for _ in 0..<tableCount {
      guard let record = reader.take(F.tableRecordSize),
        let nameBytes = reader.take(
          Int(record.load(fromByteOffset: F.nameLengthOffset, as: UInt8.self)))
      else { throw Rejection(reason: "its directory is cut short") }
      let nameLength = Int(record.load(fromByteOffset: F.nameLengthOffset, as: UInt8.self))
      let nameBuffer = UnsafeRawBufferPointer(start: nameBytes, count: nameLength)
      var name = String(decoding: nameBuffer, as: UTF8.self)
      // Names are written from strings: bytes that are not UTF-8 (which decoding would repair,
      // so that two names could decode alike) are damage.
      guard nameLength > 0, name.withUTF8({ bytesEqual(UnsafeRawBufferPointer($0), nameBuffer) })
      else {
        throw Rejection(reason: "its directory names a table without a name, or not in UTF-8")
      }
      guard names.set(nameBuffer, true) == nil else {
        throw Rejection(reason: "its directory names a table twice")
      }
      let table = try MappedTable(record: record, file: bytes, seed: seed, owner: owner)
      let creationSegment = loadLittleEndian(UInt32.self, record + 52)
      let creation =
        creationSegment == 0
        ? nil
        : RecordLocation(
          segment: creationSegment, offset: loadLittleEndian(UInt32.self, record + 56),
          length: loadLittleEndian(UInt32.self, record + 60))
      tables.append((name, table, creation))
    }
    guard reader.isAtEnd else { throw Rejection(reason: "its directory has bytes left over") }
    self.tables = tables
  }

  /// Reads fixed-size records off the directory, refusing to run past its end.
  private struct DirectoryReader {
    let bytes: UnsafeRawBufferPointer
    var position = 0
    var isAtEnd: Bool { position == bytes.count }

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

  /// The bytes of all the table's keys (its entries less their fixed-size headers).
  var keyBytes: Int {
    entries.count - count * F.entryHeaderSize - expiringEntries.count * RecordLayout.expirySize
  }

  init(record: UnsafeRawPointer, file: UnsafeRawBufferPointer, seed: UInt64, owner: AnyObject)
    throws(MappedIndex.Rejection)
  {
    func field(_ offset: Int) -> UInt64 { loadLittleEndian(UInt64.self, record + offset) }
    let size = UInt64(file.count)
    let count = field(0)
    let liveBytes = field(8)
    let entriesOffset = field(16)
    let entriesLength = field(24)
    let groupsOffset = field(32)
    let ranksOffset = field(40)
    let groupCount = UInt64(loadLittleEndian(UInt32.self, record + 48))
    let expiringCount = field(64)
    let reject = MappedIndex.Rejection(reason: "a table's layout in its directory is impossible")
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
    else { throw reject }
    lifetime = Int64(bitPattern: field(72))
    let base = file.baseAddress!
    self.count = Int(count)
    self.liveBytes = Int(liveBytes)
    self.seed = seed
    groups = base + Int(groupsOffset)
    self.groupCount = Int(groupCount)
    samples = base + Int(ranksOffset)
    entries = UnsafeRawBufferPointer(start: base + Int(entriesOffset), count: Int(entriesLength))
    self.owner = owner
    guard endsWhereItSays() else { throw reject }
    if expiringCount > 0 {
      var found: [Int] = []
      var offset = 0
      while offset < entries.count {
        guard let entry = entry(at: offset) else { throw reject }
        if entry.expiry != nil { found.append(offset) }
        offset = entry.end
      }
      guard found.count == Int(expiringCount) else { throw reject }
      expiringEntries = found
    }
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
