import Testing

@testable import SQLiteReader

/// The pieces of the file format, one at a time: varints, the payload split, records.
@Suite("The file format's pieces")
struct FormatTests {
  static func varint(_ bytes: [UInt8]) -> (UInt64, Int)? {
    bytes.withUnsafeBytes { buffer in
      buffer.varint(at: 0, end: buffer.count).map { ($0.value, $0.length) }
    }
  }

  @Test("varints of 1 to 9 bytes, and ones cut short")
  func varints() {
    #expect(Self.varint([0x00])! == (0, 1))
    #expect(Self.varint([0x7F])! == (127, 1))
    #expect(Self.varint([0x81, 0x00])! == (128, 2))
    #expect(Self.varint([0xFF, 0x7F])! == (16383, 2))
    #expect(Self.varint([0x81, 0x80, 0x00])! == (16384, 3))
    // Nine bytes: the ninth gives all eight of its bits.
    #expect(Self.varint(Array(repeating: 0xFF, count: 9))! == (UInt64.max, 9))
    #expect(Self.varint([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01])! == (1, 9))
    #expect(Self.varint(Array(repeating: 0xFF, count: 10))! == (UInt64.max, 9))
    #expect(Self.varint([0x81]) == nil)
    #expect(Self.varint(Array(repeating: 0x80, count: 8)) == nil)
    #expect(Self.varint([]) == nil)
  }

  @Test("a table leaf keeps all of a payload up to U - 35 bytes, then K or M bytes")
  func payloadSplit() {
    // U = 4096: X = 4061, M = 489, K = M + (P - M) % 4092.
    #expect(localPayloadSize(payloadSize: 0, usableSize: 4096) == 0)
    #expect(localPayloadSize(payloadSize: 4061, usableSize: 4096) == 4061)
    #expect(localPayloadSize(payloadSize: 4062, usableSize: 4096) == 489)  // K = 4062 > X
    #expect(localPayloadSize(payloadSize: 4092 + 489 + 100, usableSize: 4096) == 589)  // K
    #expect(localPayloadSize(payloadSize: 4092 + 489, usableSize: 4096) == 489)
    // U = 512: X = 477, M = 39.
    #expect(localPayloadSize(payloadSize: 477, usableSize: 512) == 477)
    #expect(localPayloadSize(payloadSize: 478, usableSize: 512) == 39)  // K = 478 > X
    #expect(localPayloadSize(payloadSize: 39 + 508 + 10, usableSize: 512) == 49)  // K
    #expect(
      localPayloadSize(payloadSize: 1_000_000, usableSize: 512) == 39 + (1_000_000 - 39) % 508)
    // The largest payload never overflows the arithmetic.
    #expect(localPayloadSize(payloadSize: .max, usableSize: 65536) <= 65536 - 35)
    // U = 480, the smallest: X = 445, M = 35.
    #expect(localPayloadSize(payloadSize: 446, usableSize: 480) == 35)
    #expect(localPayloadSize(payloadSize: 35 + 476 + 445 - 35, usableSize: 480) == 445)
  }

  static func layout(_ bytes: [UInt8]) -> (RecordLayout, String?) {
    var layout = RecordLayout()
    let problem = bytes.withUnsafeBytes { layout.read($0) }
    return (layout, problem)
  }

  static func values(_ bytes: [UInt8], encoding: SQLiteTextEncoding = .utf8) -> [SQLiteValue] {
    let (layout, problem) = layout(bytes)
    #expect(problem == nil)
    let scratch = ByteBuffer(capacity: 16)
    return bytes.withUnsafeBytes { buffer in
      (0..<layout.count).map {
        buffer.recordValue(
          serialType: layout.serialTypes[$0], at: layout.offsets[$0], encoding: encoding,
          scratch: scratch)
      }
    }
  }

  @Test("every serial type")
  func serialTypes() {
    let header: [UInt8] = [15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x13, 0x10]
    let body: [UInt8] =
      [0xFF] + [0x80, 0x00] + [0x7F, 0xFF, 0xFF] + [0xFF, 0xFF, 0xFF, 0xFE]
      + [0x80, 0, 0, 0, 0, 0] + [0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
      + [0x40, 0x09, 0x21, 0xFB, 0x54, 0x44, 0x2D, 0x18] + Array("hi!".utf8) + [0xCA, 0xFE]
    #expect(
      Self.values(header + body) == [
        .null, .integer(-1), .integer(-32768), .integer(8_388_607), .integer(-2),
        .integer(-(1 << 47)), .integer(.max), .real(3.141592653589793), .integer(0), .integer(1),
        .null, .null, SQLiteValue.text("hi!"), .blob([0xCA, 0xFE]),
      ])
    // A stored NaN reads as NULL, as in SQLite.
    #expect(Self.values([2, 7, 0x7F, 0xF8, 0, 0, 0, 0, 0, 0]) == [.null])
  }

  @Test("UTF-16 text in either byte order; unpaired surrogates become U+FFFD")
  func utf16() {
    let text = "aé中😀"
    let units = Array(text.utf16)
    let little = units.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
    let big = units.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    let serialType = UInt8(13 + 2 * little.count)
    #expect(
      Self.values([2, serialType] + little, encoding: .utf16LittleEndian) == [
        SQLiteValue.text(text)
      ])
    #expect(
      Self.values([2, serialType] + big, encoding: .utf16BigEndian) == [SQLiteValue.text(text)])
    // A high surrogate alone, then an odd last byte (ignored).
    #expect(
      Self.values([2, 13 + 2 * 5, 0xD8, 0x3D, 0x00, 0x61, 0x00], encoding: .utf16BigEndian) == [
        SQLiteValue.text("\u{FFFD}a")
      ])
  }

  @Test("text is well-formed as Unicode defines it: UTF-8 sequences, UTF-16 surrogate pairs")
  func wellFormedText() {
    func check(_ bytes: [UInt8], _ encoding: SQLiteTextEncoding) -> Bool {
      bytes.withUnsafeBytes { isWellFormed($0, encoding: encoding) }
    }
    for good in ["", "plain", "aé中😀", "\u{FFFD}", "\u{10FFFF}"] {
      #expect(check(Array(good.utf8), .utf8), "\(good)")
      let units = Array(good.utf16)
      #expect(check(units.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }, .utf16LittleEndian))
      #expect(check(units.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }, .utf16BigEndian))
    }
    // A byte no UTF-8 has, a lone continuation, a sequence cut short, an overlong form, a
    // surrogate (as CESU-8 writes one), a code point above U+10FFFF.
    for bad: [UInt8] in [
      [0x61, 0xFF], [0x80], [0x61, 0xE4, 0xB8], [0xC0, 0xAF], [0xED, 0xA0, 0x80],
      [0xF4, 0x90, 0x80, 0x80],
    ] {
      #expect(!check(bad, .utf8), "\(bad)")
    }
    // A high surrogate alone, at the end or before another unit; a low one alone. An odd
    // last byte is ignored, as reading ignores it.
    for bad: [UInt16] in [[0x61, 0xD800], [0xD800, 0x61], [0xDC00], [0xDBFF, 0xD800]] {
      #expect(!check(bad.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }, .utf16LittleEndian))
      #expect(!check(bad.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }, .utf16BigEndian))
    }
    #expect(check([0x61, 0x00, 0x62], .utf16LittleEndian))
  }

  @Test("records whose header or fields do not fit are refused")
  func damagedRecords() {
    #expect(Self.layout([]).1 == "the record's header size is cut off")
    #expect(Self.layout([5, 1]).1?.contains("does not fit") == true)
    #expect(Self.layout([0, 1]).1?.contains("does not fit") == true)
    #expect(Self.layout([2, 0x81]).1?.contains("runs past its header") == true)
    #expect(Self.layout([2, 6, 1, 2]).1?.contains("runs past its 4 bytes") == true)
    // A BLOB of 2^62 bytes: refused by its size, never allocated.
    #expect(
      Self.layout([10, 0xC0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 1]).1?.contains(
        "runs past") == true)
    // Fields that leave bytes over.
    #expect(Self.layout([2, 1, 5, 6]).1 == "the record's fields fill 3 of its 4 bytes")
  }
}
