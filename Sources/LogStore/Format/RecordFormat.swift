/// The byte layout of a record, the unit of every segment file.
///
/// ```
/// offset size field
///  0      4   checksum     masked CRC-32C of the segment's salt (4 bytes, little-endian)
///                           followed by every byte of the record after this field
///  4      1   kind         RecordKind; batch members have bit 0x80 set; bit 0x40: the value
///                           starts with an 8-byte expiry field (puts and table creations)
///  5      1   tableLength  bytes of table name (0 only for a batch)
///  6      2   keyLength    bytes of key
///  8      4   valueLength  bytes of value
/// 12      8   sequence     the write's sequence number; strictly increasing within a segment
/// 20      8   timestamp    microseconds since 1970-01-01 UTC when the write was made
/// 28      -   table, key, value bytes, in that order
/// ```
///
/// All integers are little-endian. A record is `headerSize + tableLength + keyLength +
/// valueLength` bytes long; there is no padding between records. A batch record's value is
/// the concatenation of its member records, each a complete record in this same layout
/// (with its own checksum and consecutive sequence numbers starting at the batch's), so the
/// batch's checksum covers all of them and a member can be read alone. See docs/FORMAT.md.
enum RecordLayout {
  static let headerSize = 28
  static let checksumOffset = 0
  static let kindOffset = 4
  static let tableLengthOffset = 5
  static let keyLengthOffset = 6
  static let valueLengthOffset = 8
  static let sequenceOffset = 12
  static let timestampOffset = 20

  /// Marks a record as a member of a batch; a member is never valid at the top level, so a
  /// torn batch can never be mistaken for the members it holds.
  static let memberFlag: UInt8 = 0x80
  /// Marks a record whose value starts with an 8-byte field (`i64`, little-endian) before
  /// the value proper: for a put, when the value expires (microseconds since 1970); for a
  /// table's creation, the lifetime its puts get by default (microseconds; 0: none). Only
  /// those two kinds may carry it; format version 2 added it.
  static let expiryFlag: UInt8 = 0x40
  /// Bytes of the expiry field.
  static let expirySize = 8

  /// The longest table name, in bytes of UTF-8.
  static let maxTableLength = 255
  /// The longest key, in bytes.
  static let maxKeyLength = Int(UInt16.max)
  /// The largest value, in bytes (64 MiB).
  static let maxValueLength = 64 << 20
  /// The largest batch, in bytes of encoded members (256 MiB).
  static let maxBatchLength = 256 << 20
  /// Sequence numbers stay below 2^62: a store would take centuries to get there, and a
  /// damaged or crafted number above it is refused as damage instead of overflowing the next
  /// one the writer hands out.
  static let sequenceLimit: UInt64 = 1 << 62

  /// A sync mark's length: a header and its 8-byte value (``RecordKind/syncMark``).
  static let syncMarkLength = headerSize + 8

  /// What a record's kind byte says, if it is a kind a record may have where it is met (at
  /// the top level of a segment, or as a member of a batch): the kind, and whether the value
  /// starts with an expiry field. The one rule for kind bytes: decoding a record, the
  /// scanner's search for the next record after damage, and hint entries all ask it.
  @inline(__always)
  static func kind(ofRaw raw: UInt8, member: Bool) -> (kind: RecordKind, hasExpiry: Bool)? {
    guard (raw & memberFlag != 0) == member,
      let kind = RecordKind(rawValue: raw & ~(memberFlag | expiryFlag))
    else { return nil }
    let hasExpiry = raw & expiryFlag != 0
    if hasExpiry && kind != .put && kind != .createTable { return nil }
    // A batch holds no batch, and a sync mark speaks of the segment, never of a batch.
    if member && (kind == .batch || kind == .syncMark) { return nil }
    return (kind, hasExpiry)
  }

  /// The encoded length of a record with these field sizes.
  @inline(__always)
  static func length(table: Int, key: Int, value: Int, expiry: Int64? = nil) -> Int {
    headerSize + table + key + value + (expiry == nil ? 0 : expirySize)
  }
}

/// What a record does. The raw values are part of the on-disk format. Not public: no public
/// call takes or returns one; the package's fuzz targets read decoded records' kinds.
package enum RecordKind: UInt8, Sendable, CaseIterable {
  /// Sets the value of a key in a table.
  case put = 1
  /// Removes a key from a table.
  case delete = 2
  /// Creates a table (idempotent).
  case createTable = 3
  /// Removes every key of a table, keeping the table.
  case clearTable = 4
  /// Removes a table and every key in it.
  case dropTable = 5
  /// Removes every key of a table that starts with the record's key bytes.
  case deletePrefix = 6
  /// A group of member records applied all together or not at all.
  case batch = 7
  /// Changes nothing: says that the segment's bytes before the offset it holds (its 8-byte
  /// value) were on stable storage before the mark was written. Written after each sync of
  /// the active segment (format version 3); a scan reads it to tell data a power loss may
  /// have lost out of order from damage (docs/FORMAT.md, "Recovery").
  case syncMark = 8
}
