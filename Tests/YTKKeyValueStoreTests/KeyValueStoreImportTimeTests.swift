import LogStore
import Testing

@testable import YTKKeyValueStore

/// `YTKTime.timestamp(utf8:)`, the import's reading of `createdTime` from the row's bytes,
/// against `YTKTime.timestamp(seconds:)`, the reading of a String it stands for.
extension KeyValueStoreImportTests {
  @Test("createdTime read from its bytes is what reading it as a String gives, for any text")
  func createdTimeFromBytes() {
    func check(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
      let fromBytes = bytes.withUnsafeBytes { YTKTime.timestamp(utf8: $0) }
      let fromString = YTKTime.timestamp(seconds: String(decoding: bytes, as: UTF8.self))
      #expect(
        fromBytes == fromString, "\(String(decoding: bytes, as: UTF8.self).debugDescription)",
        sourceLocation: sourceLocation)
    }
    let texts = [
      "1448000061.25", "1448000061", "1448000061.2512345", "1448000061.2512355",
      "1448000061.9999995", "1448000061.0000004", "1448000061.0000005", "  12.5  ", " 12.5",
      "-12.5", "-0.0000005", "-0", "0", "0.0", "00012.50", "8999999999999.9999995",
      "9000000000000", "9000000000000.5", "-8999999999999.999999", "123456789012345678",
      "1234567890123456789", "00000000000000000000001.5", "1e9", "1.5e3", "1E9", "", " ", "-",
      "--5", "- 5", ".5", "5.", "1.2.3", "+5", "5 5", "\t5", "5\n", "nan", "inf", "-inf",
      "0x10", "１２", "12\u{301}", " \u{301}12", "12 \u{301}", "-\u{301}12", "1448000061.25\r\n",
    ]
    for text in texts { check(Array(text.utf8)) }
    // Ill-formed UTF-8 reads as U+FFFD, as the SQLite reader's Strings do.
    check([0x31, 0x32, 0xFF])
    check([0x31, 0x2E, 0xC3])
    check([0x80, 0x31])
    // Random texts of the characters that matter.
    var generator = SystemRandomNumberGenerator()
    let alphabet = Array("0123456789.- e+5".utf8)
    for _ in 0..<20_000 {
      let count = Int.random(in: 0...24, using: &generator)
      check((0..<count).map { _ in alphabet.randomElement(using: &generator)! })
    }
  }
}
