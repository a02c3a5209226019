/// Text of the database's encoding as a `String`: UTF-8 as it is, UTF-16 converted through
/// `scratch`. Ill-formed sequences become U+FFFD (where SQLite, converting for a UTF-8 caller,
/// would pass some of them on as ill-formed UTF-8).
func decodeText(
  _ bytes: UnsafeRawBufferPointer, encoding: SQLiteTextEncoding, scratch: ByteBuffer
) -> String {
  switch encoding {
  case .utf8:
    return String(decoding: bytes, as: UTF8.self)
  case .utf16LittleEndian, .utf16BigEndian:
    scratch.count = 0
    appendUTF8(fromUTF16: bytes, bigEndian: encoding == .utf16BigEndian, to: scratch)
    return String(decoding: scratch.bytes, as: UTF8.self)
  }
}

/// Appends the UTF-8 form of UTF-16 text to `output`. An odd last byte is ignored, as SQLite
/// ignores it; an unpaired surrogate becomes U+FFFD.
func appendUTF8(fromUTF16 bytes: UnsafeRawBufferPointer, bigEndian: Bool, to output: ByteBuffer) {
  let units = bytes.count / 2
  output.reserve(output.count + units * 3)
  @inline(__always) func unit(_ index: Int) -> UInt32 {
    let first = UInt32(bytes[2 * index])
    let second = UInt32(bytes[2 * index + 1])
    return bigEndian ? first << 8 | second : second << 8 | first
  }
  var index = 0
  while index < units {
    var scalar = unit(index)
    index += 1
    if scalar & 0xF800 == 0xD800 {
      if scalar < 0xDC00, index < units, unit(index) & 0xFC00 == 0xDC00 {
        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (unit(index) - 0xDC00)
        index += 1
      } else {
        scalar = 0xFFFD
      }
    }
    appendUTF8(scalar: scalar, to: output)
  }
}

@inline(__always)
private func appendUTF8(scalar: UInt32, to output: ByteBuffer) {
  switch scalar {
  case 0..<0x80:
    output.append(UInt8(scalar))
  case 0x80..<0x800:
    output.append(UInt8(0xC0 | scalar >> 6))
    output.append(UInt8(0x80 | scalar & 0x3F))
  case 0x800..<0x10000:
    output.append(UInt8(0xE0 | scalar >> 12))
    output.append(UInt8(0x80 | scalar >> 6 & 0x3F))
    output.append(UInt8(0x80 | scalar & 0x3F))
  default:
    output.append(UInt8(0xF0 | scalar >> 18))
    output.append(UInt8(0x80 | scalar >> 12 & 0x3F))
    output.append(UInt8(0x80 | scalar >> 6 & 0x3F))
    output.append(UInt8(0x80 | scalar & 0x3F))
  }
}
