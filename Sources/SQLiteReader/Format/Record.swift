/// Where the fields of one record are: the record format's header, read once per row into
/// arrays that are reused from row to row.
///
/// ```
/// record: header size (varint, counting itself), serial type of each field (varints), bodies
/// serial type  0 NULL   1..6 big-endian signed integer of 1, 2, 3, 4, 6, 8 bytes
///              7 IEEE 754 double, big-endian   8 the integer 0   9 the integer 1
///             10, 11 reserved (SQLite reads NULL)
///             N >= 12 even: BLOB of (N - 12) / 2 bytes   N >= 13 odd: text of (N - 13) / 2 bytes
/// ```
struct RecordLayout {
  /// SQLite refuses record headers longer than this (a header of 32767 columns of 3-byte
  /// varints, and change): the bound keeps a damaged size from making a long loop.
  static let maximumHeaderSize: UInt64 = 98307

  /// The serial type and body offset of each field: the first ``count`` entries (the arrays
  /// keep the entries of longer records read before, so that they are not reallocated).
  private(set) var serialTypes: [UInt64] = []
  private(set) var offsets: [Int] = []
  /// The number of fields in the record.
  private(set) var count = 0

  /// Reads the header of the record in `payload`; nil when it is whole, else what is wrong.
  /// Every field's body lies inside the payload, and the bodies fill it exactly.
  mutating func read(_ payload: UnsafeRawBufferPointer) -> String? {
    count = 0
    guard let (headerSize, sizeLength) = payload.varint(at: 0, end: payload.count) else {
      return "the record's header size is cut off"
    }
    guard headerSize <= UInt64(payload.count), headerSize <= Self.maximumHeaderSize,
      headerSize >= UInt64(sizeLength)
    else { return "the record's header size \(headerSize) does not fit its \(payload.count) bytes" }
    let headerEnd = Int(headerSize)
    var position = sizeLength
    var body = headerEnd
    while position < headerEnd {
      guard let (serialType, length) = payload.varint(at: position, end: headerEnd) else {
        return "serial type \(count) of the record runs past its header"
      }
      position += length
      let size = Self.bodySize(of: serialType)
      guard size <= UInt64(payload.count - body) else {
        return "field \(count) of the record (serial type \(serialType)) runs past "
          + "its \(payload.count) bytes"
      }
      if count < serialTypes.count {
        serialTypes[count] = serialType
        offsets[count] = body
      } else {
        serialTypes.append(serialType)
        offsets.append(body)
      }
      count += 1
      body += Int(size)
    }
    guard body == payload.count else {
      return "the record's fields fill \(body) of its \(payload.count) bytes"
    }
    return nil
  }

  /// The size of a field's body for its serial type.
  @inline(__always)
  static func bodySize(of serialType: UInt64) -> UInt64 {
    switch serialType {
    case 0, 8, 9, 10, 11: return 0
    case 1, 2, 3, 4: return serialType
    case 5: return 6
    case 6, 7: return 8
    default: return (serialType - 12) / 2
    }
  }

  /// The length of the text or BLOB of field `index`.
  func bodySize(_ index: Int) -> Int { Int(Self.bodySize(of: serialTypes[index])) }
}

extension UnsafeRawBufferPointer {
  /// The value of a field of serial type `serialType` whose body starts at `offset` (checked
  /// by ``RecordLayout/read(_:)``), text decoded from `encoding`.
  func recordValue(
    serialType: UInt64, at offset: Int, encoding: SQLiteTextEncoding, scratch: ByteBuffer
  ) -> SQLiteValue {
    switch serialType {
    case 0, 10, 11: return .null
    case 1, 2, 3, 4: return .integer(bigEndianSignedInteger(at: offset, count: Int(serialType)))
    case 5: return .integer(bigEndianSignedInteger(at: offset, count: 6))
    case 6: return .integer(bigEndianSignedInteger(at: offset, count: 8))
    case 7:
      let bits = UInt64(bitPattern: bigEndianSignedInteger(at: offset, count: 8))
      let value = Double(bitPattern: bits)
      return value.isNaN ? .null : .real(value)
    case 8: return .integer(0)
    case 9: return .integer(1)
    default:
      let size = Int((serialType - 12) / 2)
      let body = UnsafeRawBufferPointer(rebasing: self[offset..<offset + size])
      if serialType & 1 == 0 { return .blob(Array(body)) }
      return .text(decodeText(body, encoding: encoding, scratch: scratch))
    }
  }
}
