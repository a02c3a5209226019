/// Hint files: the records of one segment without their values, so that opening a store
/// rebuilds the index from a few bytes per key instead of reading every value.
///
/// ```
/// header (48 bytes)
///  0  8  magic          "YTKKVHNT"
///  8  2  version        2 (1: written before expiry; read alike)
/// 10  2  reserved       0
/// 12  4  fileNumber     the segment described
/// 16  4  salt           that segment's salt
/// 20  4  entryCount
/// 24  8  coveredLength  segment bytes the entries describe
/// 32  8  entriesLength  bytes of entries after the header
/// 40  4  entriesCRC     masked CRC-32C of the entries
/// 44  4  headerCRC      masked CRC-32C of bytes 0..<44
/// entry (28 bytes + table + key, + 8 with an expiry)
///  0  1  kind           RecordKind (batches appear as their members), | 0x40 when an expiry
///                       field (i64: a put's expiry, a creation's lifetime) follows the key
///  1  1  tableLength
///  2  2  keyLength
///  4  4  offset         of the record in the segment
///  8  4  length         of the record
/// 12  8  sequence
/// 20  8  timestamp
/// 28  -  table, key, expiry
/// ```
/// A hint that fails any check is ignored: the segment is scanned instead.
package enum HintFile {
  static let headerSize = 48
  static let entryHeaderSize = 28
  static let magic: [UInt8] = Array("YTKKVHNT".utf8)
  static let version: UInt16 = 2
  /// The oldest version read: version 1 has no expiry fields, and is otherwise the same.
  static let oldestVersion: UInt16 = 1

  /// Collects the entries of a hint file as a segment is written.
  struct Builder {
    private(set) var entries: [UInt8] = []
    private(set) var count = 0

    /// Adds `record`, found at `offset` in the segment (a batch member's own offset).
    mutating func add(_ record: Record, offset: Int) {
      let start = entries.count
      let expirySize = record.expiry == nil ? 0 : RecordLayout.expirySize
      entries.append(
        contentsOf: repeatElement(
          0, count: HintFile.entryHeaderSize + record.table.count + record.key.count + expirySize))
      entries.withUnsafeMutableBytes { buffer in
        let base = buffer.baseAddress! + start
        base.storeBytes(
          of: record.kind.rawValue | (expirySize > 0 ? RecordLayout.expiryFlag : 0),
          as: UInt8.self)
        base.storeBytes(of: UInt8(record.table.count), toByteOffset: 1, as: UInt8.self)
        storeLittleEndian(UInt16(record.key.count), base + 2)
        storeLittleEndian(UInt32(offset), base + 4)
        storeLittleEndian(UInt32(record.length), base + 8)
        storeLittleEndian(record.sequence, base + 12)
        storeLittleEndian(UInt64(bitPattern: record.timestamp), base + 20)
        var cursor = base + HintFile.entryHeaderSize
        if record.table.count > 0 {
          cursor.copyMemory(from: record.table.baseAddress!, byteCount: record.table.count)
          cursor += record.table.count
        }
        if record.key.count > 0 {
          cursor.copyMemory(from: record.key.baseAddress!, byteCount: record.key.count)
          cursor += record.key.count
        }
        if let expiry = record.expiry { storeLittleEndian(UInt64(bitPattern: expiry), cursor) }
      }
      count += 1
    }

    /// The whole file: header and entries.
    func encoded(fileNumber: UInt32, salt: UInt32, coveredLength: Int) -> [UInt8] {
      var bytes = [UInt8](repeating: 0, count: HintFile.headerSize)
      bytes.withUnsafeMutableBytes { buffer in
        let base = buffer.baseAddress!
        base.copyMemory(from: HintFile.magic, byteCount: 8)
        storeLittleEndian(HintFile.version, base + 8)
        storeLittleEndian(fileNumber, base + 12)
        storeLittleEndian(salt, base + 16)
        storeLittleEndian(UInt32(count), base + 20)
        storeLittleEndian(UInt64(coveredLength), base + 24)
        storeLittleEndian(UInt64(entries.count), base + 32)
        let entriesCRC = entries.withUnsafeBytes { CRC32C.checksum($0) }
        storeLittleEndian(CRC32C.mask(entriesCRC), base + 40)
        let headerCRC = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buffer[0..<44]))
        storeLittleEndian(CRC32C.mask(headerCRC), base + 44)
      }
      return bytes + entries
    }
  }

  /// One entry, pointing into the hint file's bytes.
  package struct Entry {
    var kind: RecordKind
    var offset: Int
    var length: Int
    var sequence: UInt64
    var timestamp: Int64
    var table: UnsafeRawBufferPointer
    var key: UnsafeRawBufferPointer
    /// As in ``Record/expiry``.
    var expiry: Int64?
  }

  /// A hint file checked against the segment it claims to describe.
  package struct Contents {
    var coveredLength: Int
    var entries: [Entry]
  }

  /// Why a hint file cannot be used.
  package struct Invalid: Error, Equatable {
    package var reason: String
  }

  /// The length of segment `fileNumber` (with `salt`) that the hint whose first
  /// ``headerSize`` bytes are `header` covers; nil unless the header checks and names that
  /// segment. The entries are not read.
  static func coveredLength(
    ofHeader header: UnsafeRawBufferPointer, fileNumber: UInt32, salt: UInt32
  ) -> Int? {
    guard (try? checkHeader(header, fileNumber: fileNumber, salt: salt)) != nil else {
      return nil
    }
    return Int(clamping: loadLittleEndian(UInt64.self, header.baseAddress! + 24))
  }

  /// Checks the frame of the header at the start of `bytes`: its length, magic and checksum;
  /// returns its address.
  private static func checkHeaderFrame(_ bytes: UnsafeRawBufferPointer) throws(Invalid)
    -> UnsafeRawPointer
  {
    guard bytes.count >= headerSize, let base = bytes.baseAddress else {
      throw Invalid(reason: "shorter than its header")
    }
    guard bytesEqual(UnsafeRawBufferPointer(rebasing: bytes[0..<8]), magic) else {
      throw Invalid(reason: "bad magic")
    }
    let storedHeaderCRC = CRC32C.unmask(loadLittleEndian(UInt32.self, base + 44))
    guard storedHeaderCRC == CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<44]))
    else { throw Invalid(reason: "header checksum mismatch") }
    return base
  }

  /// Checks what a crash can leave wrong in a hint written without a sync (the active
  /// segment's, at a clean close): that `bytes` are a whole hint file whose checksums hold.
  /// What ``decode(_:fileNumber:salt:segmentLength:)`` finds wrong besides, no crash leaves.
  /// Returns the header's address.
  @discardableResult
  static func checkFrame(_ bytes: UnsafeRawBufferPointer) throws(Invalid) -> UnsafeRawPointer {
    let base = try checkHeaderFrame(bytes)
    guard loadLittleEndian(UInt64.self, base + 32) == UInt64(bytes.count - headerSize) else {
      throw Invalid(reason: "length does not match the file")
    }
    let entryBytes = UnsafeRawBufferPointer(rebasing: bytes[headerSize...])
    guard CRC32C.unmask(loadLittleEndian(UInt32.self, base + 40)) == CRC32C.checksum(entryBytes)
    else { throw Invalid(reason: "entries checksum mismatch") }
    return base
  }

  /// Checks the header at the start of `bytes` (its magic, checksum and version, and that it
  /// names segment `fileNumber` with `salt`); returns its address.
  private static func checkHeader(
    _ bytes: UnsafeRawBufferPointer, fileNumber: UInt32, salt: UInt32
  ) throws(Invalid) -> UnsafeRawPointer {
    let base = try checkHeaderFrame(bytes)
    try checkNames(base, fileNumber: fileNumber, salt: salt)
    return base
  }

  /// Checks that the checked header at `base` is of a version read here and names segment
  /// `fileNumber` with `salt`.
  private static func checkNames(_ base: UnsafeRawPointer, fileNumber: UInt32, salt: UInt32)
    throws(Invalid)
  {
    guard (oldestVersion...version).contains(loadLittleEndian(UInt16.self, base + 8)) else {
      throw Invalid(reason: "unknown version")
    }
    guard loadLittleEndian(UInt32.self, base + 12) == fileNumber,
      loadLittleEndian(UInt32.self, base + 16) == salt
    else { throw Invalid(reason: "describes another segment") }
  }

  /// Checks `bytes` as the hint of segment `fileNumber` with `salt` and `segmentLength`
  /// bytes, and decodes its entries (which point into `bytes`).
  package static func decode(
    _ bytes: UnsafeRawBufferPointer, fileNumber: UInt32, salt: UInt32, segmentLength: Int
  ) throws(Invalid) -> Contents {
    let base = try checkFrame(bytes)
    try checkNames(base, fileNumber: fileNumber, salt: salt)
    let count = loadLittleEndian(UInt32.self, base + 20)
    let covered = loadLittleEndian(UInt64.self, base + 24)
    guard covered <= UInt64(segmentLength), covered >= UInt64(SegmentHeader.size) else {
      throw Invalid(reason: "covers more than the segment holds")
    }
    let entryBytes = UnsafeRawBufferPointer(rebasing: bytes[headerSize...])

    var entries: [Entry] = []
    entries.reserveCapacity(min(Int(clamping: count), entryBytes.count / entryHeaderSize))
    var position = 0
    var lastSequence: UInt64 = 0
    while position < entryBytes.count {
      guard entryBytes.count - position >= entryHeaderSize else {
        throw Invalid(reason: "entry cut short")
      }
      let entry = entryBytes.baseAddress! + position
      let tableLength = Int(entry.load(fromByteOffset: 1, as: UInt8.self))
      let keyLength = Int(loadLittleEndian(UInt16.self, entry + 2))
      let rawKind = entry.load(as: UInt8.self)
      let hasExpiry = rawKind & RecordLayout.expiryFlag != 0
      let size =
        entryHeaderSize + tableLength + keyLength + (hasExpiry ? RecordLayout.expirySize : 0)
      // Entries are of records that change the store: a batch is listed as its members, and
      // a sync mark not at all.
      guard size <= entryBytes.count - position,
        let (kind, _) = RecordLayout.kind(ofRaw: rawKind, member: false), kind != .batch,
        kind != .syncMark
      else { throw Invalid(reason: "malformed entry") }
      // Checked in 64 bits before they become Ints: where Int is 32 bits a damaged offset
      // or length must be refused, not trap.
      let rawOffset = loadLittleEndian(UInt32.self, entry + 4)
      let rawLength = loadLittleEndian(UInt32.self, entry + 8)
      let sequence = loadLittleEndian(UInt64.self, entry + 12)
      guard rawOffset >= SegmentHeader.size, rawLength >= RecordLayout.headerSize,
        UInt64(rawOffset) + UInt64(rawLength) <= covered, sequence > lastSequence,
        sequence < RecordLayout.sequenceLimit
      else { throw Invalid(reason: "entry points outside the segment") }
      let offset = Int(rawOffset)  // below `covered`, which is below the segment's length
      let length = Int(rawLength)
      lastSequence = sequence
      let tableStart = position + entryHeaderSize
      entries.append(
        Entry(
          kind: kind, offset: offset, length: length, sequence: sequence,
          timestamp: Int64(bitPattern: loadLittleEndian(UInt64.self, entry + 20)),
          table: UnsafeRawBufferPointer(
            rebasing: entryBytes[tableStart..<tableStart + tableLength]),
          key: UnsafeRawBufferPointer(
            rebasing: entryBytes[tableStart + tableLength..<tableStart + tableLength + keyLength]),
          expiry: hasExpiry
            ? Int64(
              bitPattern: loadLittleEndian(
                UInt64.self, entry + entryHeaderSize + tableLength + keyLength)) : nil))
      position += size
    }
    guard entries.count == count else { throw Invalid(reason: "entry count mismatch") }
    return Contents(coveredLength: Int(covered), entries: entries)
  }
}
