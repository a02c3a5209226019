/// Changes files: what the key directory changed since an index file, as of a later position
/// of the log, so that an open maps the index file, puts these changes over it and reads only
/// the log after that later position (docs/FORMAT.md, "Changes files"). A clean close writes
/// one when it writes no index file; each index file has at most one, named after it.
///
/// ```
/// header (56 bytes)
///  0  8  magic          "YTKKVCHG"
///  8  2  version        1
/// 10  2  reserved       0
/// 12  4  indexFile      the number of the index file the changes are over (and in the name)
/// 16  8  nextSequence   the sequence number after the last record covered
/// 24  8  bodyLength     bytes after the header
/// 32  4  segmentCount
/// 36  4  droppedCount
/// 40  4  tableCount
/// 44  4  bodyCRC        masked CRC-32C of the body
/// 48  4  headerCRC      masked CRC-32C of bytes 0..<48
/// 52  4  reserved       0 (checked as zero)
/// body
///   segmentCount × 16: number u32, salt u32, coveredLength u64 (the position: every segment
///     listed, in order, up to its covered length)
///   droppedCount × 4: place u32 of each of the index file's tables dropped or cleared since
///   tableCount × (table header, name, changes), each table of the directory that was made
///     (the index file's tables not listed, and not dropped, are as the index file has them):
///     header (48 bytes): place u32 (the table's place in the index file, whose keys are under
///       these; 0xFFFF_FFFF: none), nameLength u32, lifetime i64 (µs; 0: none), count u64,
///       liveBytes u64 (the table's, as its directory counted them), creation segment u32 (0:
///       none), creation offset u32, creation length u32, changeCount u32
///     name: the table's name (UTF-8)
///     changeCount × change: segment u32, offset u32, length u32, keyLength u16, flags u8
///       (bit 0: a tombstone, the key deleted from the index file's table; bit 1: unsettled,
///       counted as if the index file did not hold it; bit 2: an expiry follows the key), key,
///       expiry i64 (µs since 1970, with bit 2)
/// ```
/// All integers are little-endian. A change's location lies in one of the covered segments,
/// within its covered length (a tombstone's is all zero); a table's keys are distinct. Every
/// CRC is masked (``CRC32C/mask(_:)``).
package enum ChangesFile {
  static let magic: [UInt8] = Array("YTKKVCHG".utf8)
  static let version: UInt16 = 1
  static let headerSize = 56
  static let segmentRecordSize = 16
  static let tableHeaderSize = 48
  static let changeHeaderSize = 15
  /// A table's place when it has none in the index file.
  static let noPlace = UInt32.max
  static let tombstoneFlag: UInt8 = 1
  static let unsettledFlag: UInt8 = 2
  static let expiryFlag: UInt8 = 4

  /// Why a changes file cannot be used.
  package struct Invalid: Error, Equatable {
    package var reason: String
  }

  /// One table of a changes file, checked.
  struct Table {
    var name: UnsafeRawBufferPointer
    /// Its place in the index file, if its keys are over that file's table.
    var place: Int?
    var lifetime: Int64
    var count: Int
    var liveBytes: Int
    var creation: RecordLocation?
    /// Bytes of the keys of its changes.
    var keyBytes: Int
    var changes: Changes
  }

  /// A table's changes, read in the order written: each key, where its record is (nil for a
  /// tombstone), whether it is unsettled, and its expiry if it has one.
  struct Changes: Sequence, IteratorProtocol {
    fileprivate var bytes: UnsafeRawBufferPointer
    fileprivate var position = 0
    let count: Int

    mutating func next() -> (
      key: UnsafeRawBufferPointer, location: RecordLocation?, unsettled: Bool, expiry: Int64?
    )? {
      // `decode` read every change of these bytes, and checked it, before they were handed out.
      guard position < bytes.count, let change = try? RawChange(at: position, of: bytes) else {
        return nil
      }
      position = change.end
      return (
        change.key, change.flags & tombstoneFlag != 0 ? nil : change.location,
        change.flags & unsettledFlag != 0, change.expiry
      )
    }
  }

  /// One change as written, its fields not yet checked, and where the next one starts.
  private struct RawChange {
    var location: RecordLocation
    var flags: UInt8
    var key: UnsafeRawBufferPointer
    var expiry: Int64?
    var end: Int

    /// Reads the change at `position` of `bytes`, refusing one that runs past their end.
    init(at position: Int, of bytes: UnsafeRawBufferPointer) throws(Invalid) {
      var reader = Reader(bytes: bytes, position: position)
      let header = try reader.take(changeHeaderSize)
      location = RecordLocation(
        segment: loadLittleEndian(UInt32.self, header),
        offset: loadLittleEndian(UInt32.self, header + 4),
        length: loadLittleEndian(UInt32.self, header + 8))
      flags = header.load(fromByteOffset: 14, as: UInt8.self)
      let keyLength = Int(loadLittleEndian(UInt16.self, header + 12))
      key = UnsafeRawBufferPointer(start: try reader.take(keyLength), count: keyLength)
      expiry =
        flags & expiryFlag == 0
        ? nil : Int64(bitPattern: loadLittleEndian(UInt64.self, try reader.take(8)))
      end = reader.position
    }
  }

  /// A changes file, checked: every field in range, every location inside the position.
  struct Contents {
    var indexFile: UInt32
    var nextSequence: UInt64
    var segments: [IndexFileFormat.CoveredSegment]
    var dropped: [Int]
    var tables: [Table]
  }

  /// Checks what a crash can leave wrong in a file written without a sync: that `bytes` are a
  /// whole changes file (its magic, its length) whose checksums hold. What ``decode(_:indexFile:)``
  /// finds wrong after this, no crash leaves.
  static func checkFrame(_ bytes: UnsafeRawBufferPointer) throws(Invalid) {
    guard bytes.count >= headerSize, bytes.starts(with: magic) else {
      throw Invalid(reason: "not a changes file")
    }
    let base = bytes.baseAddress!
    guard
      CRC32C.unmask(loadLittleEndian(UInt32.self, base + 48))
        == CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<48]))
    else { throw Invalid(reason: "header checksum mismatch") }
    // The last four bytes are outside the header's checksum: they must be zero.
    guard loadLittleEndian(UInt32.self, base + 52) == 0 else {
      throw Invalid(reason: "not a changes file")
    }
    // Compared in 64 bits: where `Int` is 32 bits, a damaged length must not trap.
    guard loadLittleEndian(UInt64.self, base + 24) == UInt64(bytes.count - headerSize) else {
      throw Invalid(reason: "length does not match the file")
    }
    let body = UnsafeRawBufferPointer(rebasing: bytes[headerSize...])
    guard CRC32C.unmask(loadLittleEndian(UInt32.self, base + 44)) == CRC32C.checksum(body) else {
      throw Invalid(reason: "body checksum mismatch")
    }
  }

  /// Checks `bytes` as the changes file over index file `indexFile`. The contents point into
  /// `bytes`.
  static func decode(_ bytes: UnsafeRawBufferPointer, indexFile: UInt32) throws(Invalid)
    -> Contents
  {
    try checkFrame(bytes)
    let base = bytes.baseAddress!
    guard loadLittleEndian(UInt16.self, base + 8) == version else {
      throw Invalid(reason: "version \(loadLittleEndian(UInt16.self, base + 8)) is not read")
    }
    guard loadLittleEndian(UInt32.self, base + 12) == indexFile else {
      throw Invalid(reason: "it is over another index file")
    }
    let body = UnsafeRawBufferPointer(rebasing: bytes[headerSize...])
    var reader = Reader(bytes: body)
    // Counts and places are taken as `Int`s only if they are ones: where `Int` is 32 bits, a
    // damaged one must be refused, not trap. Each item takes bytes, so a count past the file is
    // refused once its bytes run out.
    guard let segmentCount = Int(exactly: loadLittleEndian(UInt32.self, base + 32)),
      let droppedCount = Int(exactly: loadLittleEndian(UInt32.self, base + 36)),
      let tableCount = Int(exactly: loadLittleEndian(UInt32.self, base + 40))
    else { throw Invalid(reason: "cut short") }
    guard segmentCount > 0 else { throw Invalid(reason: "it covers no segment") }

    var segments: [IndexFileFormat.CoveredSegment] = []
    for _ in 0..<segmentCount {
      let record = try reader.take(segmentRecordSize)
      let number = loadLittleEndian(UInt32.self, record)
      let length = loadLittleEndian(UInt64.self, record + 8)
      guard number > (segments.last?.number ?? 0), length >= UInt64(SegmentHeader.size),
        let coveredLength = Int(exactly: length)
      else { throw Invalid(reason: "malformed position") }
      segments.append(
        .init(
          number: number, salt: loadLittleEndian(UInt32.self, record + 4),
          coveredLength: coveredLength))
    }
    // Most changes point into the last segments: they are looked for from the end.
    func check(_ location: RecordLocation) throws(Invalid) {
      guard
        let length = segments.last(where: { $0.number == location.segment })?.coveredLength,
        location.offset >= SegmentHeader.size,
        location.length >= RecordLayout.headerSize,
        UInt64(location.offset) + UInt64(location.length) <= UInt64(length)
      else { throw Invalid(reason: "a location outside the position") }
    }

    var dropped: [Int] = []
    for _ in 0..<droppedCount {
      guard let place = Int(exactly: loadLittleEndian(UInt32.self, try reader.take(4))) else {
        throw Invalid(reason: "malformed table")
      }
      dropped.append(place)
    }
    var tables: [Table] = []
    for _ in 0..<tableCount {
      let header = try reader.take(tableHeaderSize)
      let place = loadLittleEndian(UInt32.self, header)
      let nameLength = loadLittleEndian(UInt32.self, header + 4)
      guard nameLength <= 255, place == noPlace || Int(exactly: place) != nil,
        let count = Int(exactly: loadLittleEndian(UInt64.self, header + 16)),
        let liveBytes = Int(exactly: loadLittleEndian(UInt64.self, header + 24)),
        let changeCount = Int(exactly: loadLittleEndian(UInt32.self, header + 44))
      else { throw Invalid(reason: "malformed table") }
      let creationSegment = loadLittleEndian(UInt32.self, header + 32)
      var creation: RecordLocation?
      if creationSegment != 0 {
        creation = RecordLocation(
          segment: creationSegment, offset: loadLittleEndian(UInt32.self, header + 36),
          length: loadLittleEndian(UInt32.self, header + 40))
        try check(creation!)
      }
      let name = UnsafeRawBufferPointer(
        start: try reader.take(Int(nameLength)), count: Int(nameLength))
      let start = reader.position
      var keyBytes = 0
      for _ in 0..<changeCount {
        let change = try RawChange(at: reader.position, of: body)
        reader.position = change.end
        keyBytes += change.key.count
        let flags = change.flags
        guard flags & ~(tombstoneFlag | unsettledFlag | expiryFlag) == 0 else {
          throw Invalid(reason: "malformed change")
        }
        if flags & tombstoneFlag != 0 {
          guard change.location == RecordLocation(segment: 0, offset: 0, length: 0),
            flags & expiryFlag == 0
          else {
            throw Invalid(reason: "malformed change")
          }
        } else {
          try check(change.location)
        }
      }
      tables.append(
        Table(
          name: name, place: place == noPlace ? nil : Int(exactly: place),
          lifetime: Int64(
            bitPattern: loadLittleEndian(UInt64.self, header + 8)), count: count,
          liveBytes: liveBytes, creation: creation, keyBytes: keyBytes,
          changes: Changes(
            bytes: UnsafeRawBufferPointer(rebasing: body[start..<reader.position]),
            count: changeCount)))
    }
    guard reader.position == body.count else { throw Invalid(reason: "bytes after the tables") }
    return Contents(
      indexFile: indexFile, nextSequence: loadLittleEndian(UInt64.self, base + 16),
      segments: segments, dropped: dropped, tables: tables)
  }

  /// Reads a buffer front to back, refusing to read past its end.
  private struct Reader {
    let bytes: UnsafeRawBufferPointer
    var position = 0

    mutating func take(_ count: Int) throws(Invalid) -> UnsafeRawPointer {
      guard count <= bytes.count - position else { throw Invalid(reason: "cut short") }
      defer { position += count }
      return bytes.baseAddress! + position
    }
  }

  /// Writes a changes file: its position and dropped tables first, then each table with its
  /// changes, then ``finish()``.
  struct Builder {
    private var bytes: [UInt8]
    private var tableCount: UInt32 = 0
    /// Where the open table's header is, and how many changes it has so far.
    private var openTable: (offset: Int, changes: UInt32)?

    init(
      indexFile: UInt32, nextSequence: UInt64, segments: [IndexFileFormat.CoveredSegment],
      dropped: [Int]
    ) {
      bytes = [UInt8](repeating: 0, count: ChangesFile.headerSize)
      bytes.replaceSubrange(0..<8, with: ChangesFile.magic)
      set(ChangesFile.version, at: 8)
      set(indexFile, at: 12)
      set(nextSequence, at: 16)
      set(UInt32(segments.count), at: 32)
      set(UInt32(dropped.count), at: 36)
      for segment in segments {
        append(segment.number)
        append(segment.salt)
        append(UInt64(segment.coveredLength))
      }
      for place in dropped { append(UInt32(place)) }
    }

    private mutating func set<T: FixedWidthInteger>(_ value: T, at offset: Int) {
      bytes.withUnsafeMutableBytes { storeLittleEndian(value, $0.baseAddress! + offset) }
    }

    private mutating func append<T: FixedWidthInteger>(_ value: T) {
      withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    private mutating func closeTable() {
      guard let table = openTable else { return }
      set(table.changes, at: table.offset + 44)
      openTable = nil
    }

    /// Starts a table; its changes follow.
    mutating func beginTable(
      name: UnsafeRawBufferPointer, place: Int?, lifetime: Int64, count: Int, liveBytes: Int,
      creation: RecordLocation?
    ) {
      closeTable()
      tableCount += 1
      openTable = (bytes.count, 0)
      append(place.map { UInt32($0) } ?? ChangesFile.noPlace)
      append(UInt32(name.count))
      append(lifetime)
      append(UInt64(count))
      append(UInt64(liveBytes))
      append(creation?.segment ?? 0)
      append(creation?.offset ?? 0)
      append(creation?.length ?? 0)
      append(UInt32(0))
      bytes.append(contentsOf: name)
    }

    /// Adds a change of the table begun last: `key` now at `location` (with `expiry`, if it
    /// has one), or deleted (nil).
    mutating func add(
      _ key: UnsafeRawBufferPointer, location: RecordLocation?, unsettled: Bool,
      expiry: Int64? = nil
    ) {
      openTable!.changes += 1
      // Made room for at once and filled in place: a close writes hundreds of thousands.
      let start = bytes.count
      let size = ChangesFile.changeHeaderSize + key.count + (expiry == nil ? 0 : 8)
      bytes.append(contentsOf: repeatElement(0, count: size))
      bytes.withUnsafeMutableBytes { buffer in
        let change = buffer.baseAddress! + start
        storeLittleEndian(location?.segment ?? 0, change)
        storeLittleEndian(location?.offset ?? 0, change + 4)
        storeLittleEndian(location?.length ?? 0, change + 8)
        storeLittleEndian(UInt16(key.count), change + 12)
        change.storeBytes(
          of: (location == nil ? ChangesFile.tombstoneFlag : 0)
            | (unsettled ? ChangesFile.unsettledFlag : 0)
            | (expiry == nil ? 0 : ChangesFile.expiryFlag), toByteOffset: 14, as: UInt8.self)
        if key.count > 0 {
          (change + ChangesFile.changeHeaderSize).copyMemory(
            from: key.baseAddress!, byteCount: key.count)
        }
        if let expiry {
          storeLittleEndian(
            UInt64(bitPattern: expiry), change + ChangesFile.changeHeaderSize + key.count)
        }
      }
    }

    /// The file's bytes.
    mutating func finish() -> [UInt8] {
      closeTable()
      set(tableCount, at: 40)
      set(UInt64(bytes.count - ChangesFile.headerSize), at: 24)
      let bodyCRC = bytes.withUnsafeBytes {
        CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[ChangesFile.headerSize...]))
      }
      set(CRC32C.mask(bodyCRC), at: 44)
      let headerCRC = bytes.withUnsafeBytes {
        CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<48]))
      }
      set(CRC32C.mask(headerCRC), at: 48)
      return bytes
    }
  }
}
