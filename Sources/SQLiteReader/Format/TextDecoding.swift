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

/// Whether `bytes` are well-formed text in `encoding`: UTF-8 by Unicode's table of
/// well-formed sequences (no surrogate, overlong form or code point above U+10FFFF), UTF-16
/// without an unpaired surrogate (an odd last byte is ignored, as the conversion ignores it).
/// Text that is not is read with U+FFFD in place of its ill-formed sequences, so two different
/// texts can read as the same; a caller for whom that matters asks this first.
func isWellFormed(_ bytes: UnsafeRawBufferPointer, encoding: SQLiteTextEncoding) -> Bool {
  switch encoding {
  case .utf8:
    // Most text is ASCII: checked a byte at a time before the parser is needed.
    guard let first = bytes.firstIndex(where: { $0 >= 0x80 }) else { return true }
    var iterator = UnsafeRawBufferPointer(rebasing: bytes[first...]).makeIterator()
    var parser = Unicode.UTF8.ForwardParser()
    while true {
      switch parser.parseScalar(from: &iterator) {
      case .valid: continue
      case .emptyInput: return true
      case .error: return false
      }
    }
  case .utf16LittleEndian, .utf16BigEndian:
    let units = bytes.count / 2
    func unit(_ index: Int) -> UInt16 {
      let first = UInt16(bytes[2 * index])
      let second = UInt16(bytes[2 * index + 1])
      return encoding == .utf16BigEndian ? first << 8 | second : second << 8 | first
    }
    var index = 0
    while index < units {
      let scalar = unit(index)
      index += 1
      guard scalar & 0xF800 == 0xD800 else { continue }
      // A high surrogate followed by a low one is a pair; anything else is unpaired.
      guard scalar < 0xDC00, index < units, unit(index) & 0xFC00 == 0xDC00 else { return false }
      index += 1
    }
    return true
  }
}
