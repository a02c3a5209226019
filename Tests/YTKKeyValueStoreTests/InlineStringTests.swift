import Foundation
import LogStoreTesting
import Testing

@testable import YTKKeyValueStore

/// The reader makes short strings, and the writer reads them, in the form a `String` keeps
/// them in line. These tests hold that form to the standard library's own strings: if a
/// toolchain ever laid them out differently, the store would make wrong strings, and this is
/// where it would show.
@Suite("In-line strings")
struct InlineStringTests {
  /// Strings the standard library makes at run time, not literals.
  static func madeByStandardLibrary(_ utf8: [UInt8]) -> String {
    String(decoding: utf8, as: UTF8.self)
  }

  /// The 16 bytes a `String` is made of on a 64-bit platform.
  static func form(of string: String) -> [UInt8] {
    withUnsafeBytes(of: string) { Array($0) }
  }

  static func made(_ utf8: [UInt8]) -> String {
    utf8.withUnsafeBufferPointer { InlineString.string(validUTF8: $0) }
  }

  @Test("is available on the 64-bit little-endian platforms the package builds for")
  func availability() {
    #if arch(x86_64) || arch(arm64)
      #expect(InlineString.isAvailable)
    #else
      #expect(!InlineString.isAvailable)
    #endif
  }

  @Test("a string made in line equals the standard library's, for every length up to 15")
  func madeStringsEqualTheStandardLibrarys() {
    var generator = SeededGenerator(seed: 15)
    // ASCII, two-byte, three-byte and four-byte characters, mixed.
    let alphabet: [String] = [
      "a", "Z", "0", " ", "~", "\u{7F}", "é", "ß", "中", "€", "😀", "\u{301}",
    ]
    var checked = 0
    for _ in 0..<4000 {
      var text = ""
      let target = Int.random(in: 0...15, using: &generator)
      while true {
        let next = alphabet.randomElement(using: &generator)!
        if text.utf8.count + next.utf8.count > target { break }
        text += next
      }
      let utf8 = Array(text.utf8)
      let expected = Self.madeByStandardLibrary(utf8)
      let string = Self.made(utf8)
      #expect(string == expected, "\(utf8)")
      // Equal strings of different forms compare equal too (by their characters), so the
      // forms themselves are compared: the flags and padding must be exactly the library's.
      if InlineString.isAvailable {
        #expect(Self.form(of: string) == Self.form(of: expected), "\(utf8)")
      }
      #expect(string.hashValue == expected.hashValue, "\(utf8)")
      #expect(Array(string.utf8) == utf8)
      #expect(string.utf8.count == utf8.count)
      #expect(string.count == expected.count, "\(utf8)")
      #expect(Array(string.unicodeScalars) == Array(expected.unicodeScalars))
      #expect((string < "m") == (expected < "m"))
      #expect(string + "!" == expected + "!")
      var dictionary = [expected: 1]
      dictionary[string, default: 0] += 1
      #expect(dictionary == [expected: 2], "\(utf8)")
      checked += 1
    }
    #expect(checked == 4000)
  }

  @Test("a string made in line compares equal to the literal of the same text")
  func madeStringsEqualLiterals() {
    #expect(Self.made(Array("".utf8)) == "")
    #expect(InlineString.string(validUTF8: UnsafeBufferPointer(start: nil, count: 0)) == "")
    #expect(Self.made(Array("id".utf8)) == "id")
    #expect(Self.made(Array("tangqiao".utf8)) == "tangqiao")
    #expect(Self.made(Array("hello world".utf8)) == "hello world")
    #expect(Self.made(Array("123456789012345".utf8)) == "123456789012345")
    #expect(Self.made(Array("héllo".utf8)) == "héllo")
    #expect(Self.made(Array("東京都".utf8)) == "東京都")
    // Longer than in line: made by the standard library.
    #expect(Self.made(Array("1234567890123456".utf8)) == "1234567890123456")
    #expect(
      Self.made(Array("a string well past fifteen bytes".utf8))
        == "a string well past fifteen bytes")
  }

  @Test("a string's in-line bytes are its UTF-8, and strings held elsewhere have none")
  func bytesOfStrings() throws {
    guard InlineString.isAvailable else { return }
    for text in ["", "a", "id", "tangqiao", "hello world", "123456789012345", "é", "中文字", "😀😀😀"] {
      for string in [
        text, Self.madeByStandardLibrary(Array(text.utf8)), Self.made(Array(text.utf8)),
      ] {
        let inLine = try #require(InlineString.bytes(of: string), "\(text)")
        #expect(inLine.count == text.utf8.count)
        var bytes: [UInt8] = []
        for index in 0..<16 {
          let word = index < 8 ? inLine.low : inLine.high
          bytes.append(UInt8(truncatingIfNeeded: word >> (UInt64(index % 8) * 8)))
        }
        // The flags byte is not part of `high`; everything past the text is zero.
        #expect(Array(bytes[..<inLine.count]) == Array(text.utf8))
        #expect(bytes[inLine.count...].allSatisfy { $0 == 0 }, "\(text)")
      }
    }
    var long = Self.madeByStandardLibrary(Array("1234567890123456".utf8))
    #expect(InlineString.bytes(of: long) == nil)
    long = String(repeating: "x", count: 100)
    #expect(InlineString.bytes(of: long) == nil)
    // A substring made a string, and a string grown in place past 15 bytes.
    var grown = "short"
    #expect(InlineString.bytes(of: grown) != nil)
    grown += " and then some more"
    #expect(InlineString.bytes(of: grown) == nil)
  }

  @Test("the writer writes in-line strings as it writes any other")
  func writerWritesInLineStrings() throws {
    // Keys and values of every short length, some needing escapes, some not ASCII.
    let texts = [
      "", "a", "ab", "abcdefg", "abcdefgh", "abcdefghi", "abcdefghijklmno", "abcdefghijklmnop",
      "a\"b", "\\", "tab\there", "\u{1}", "abcdefgh\"", "abcdefghijklmn\n", "é", "日本語",
    ]
    for text in texts {
      let inLine = Self.made(Array(text.utf8))
      // The same string as a buffer, which the writer escapes byte by byte.
      for capacity in [1, 17, 18, 64] {
        let utf8 = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: text.utf8.count)
        defer { utf8.deallocate() }
        _ = utf8.initialize(from: text.utf8)
        var viaBuffer = JSONOutput(capacity: capacity)
        viaBuffer.appendQuoted(UnsafeBufferPointer(utf8))
        var viaInLine = JSONOutput(capacity: capacity)
        JSONWriter.appendString(inLine, into: &viaInLine)
        let (inLineBytes, bufferBytes) = (viaInLine.bytes(), viaBuffer.bytes())
        #expect(inLineBytes == bufferBytes, "\(text), capacity \(capacity)")
      }
      let long = text + String(repeating: "-", count: 20)
      let written = try JSONWriter.bytes(
        .object([inLine: .string(inLine), long: .array([.string(inLine)])]))
      let parsed = try JSONReader.parse(written)
      #expect(parsed == .object([text: .string(text), long: .array([.string(text)])]), "\(text)")
      // Foundation's reading of the same text agrees.
      let oracle = try #require(
        JSONSerialization.jsonObject(with: Data(written)) as? [String: Any])
      #expect(oracle[text] as? String == text, "\(text)")
    }
  }
}
