import LogStoreTesting
import Testing

@testable import YTKKeyValueStore

/// The canonicalizer, which turns JSON text into the stored form without a `JSONValue`, has
/// one oracle: the parse-and-write path (`JSONWriter.bytes(JSONReader.parse(text))`), whose
/// stored form the JSON codec's tests pin down. Every text must give the same bytes, or the
/// same error.
@Suite("JSON canonical text")
struct JSONCanonicalTextTests {
  @Test("texts of every construct give the parse-and-write bytes")
  func corpus() throws {
    let texts = [
      "null", "true", "false", "0", "-0", "1", "-1", "-0.0", "0.0", "1.0", "1e2", "1E+2",
      "-1.5e-3", "123456789012345678", "-123456789012345678", "1234567890123456789",
      "-9223372036854775808", "9223372036854775807", "9223372036854775808",
      "18446744073709551616", "5e-324", "1e-400", "0.1", "100000000000000000000",
      #""""#, #""abc""#, #""\"\\\/\b\f\n\r\t""#, #""\u0041\u00e9\u4e2d\ud83d\ude00\u0000""#,
      "\"é中😀\u{7F}\"", "[]", "{}", "[[],{}]", " \t\n\r[ 1 , 2 ] \n",
      #"{"b":1,"a":2}"#, #"{"a":1,"a":2}"#, #"{"a":1,"b":2,"a":3}"#, #"{"":0,"a":[]}"#,
      #"{"ab":1,"a":2,"abc":3,"b":{}}"#, #"{"z":{"y":1,"x":[{"d":1,"c":2}]},"a":null}"#,
      #"{"a\"":1,"a#":2}"#, #"{"\u0041":1,"A":2}"#, #"{"K":1,"\u212a":2}"#,
      #"{"é":1,"e\u0301":2}"#, #"{"é":1,"a":2}"#, #"[{"b":1,"a":2},{"é":1,"e":2}]"#,
      #"{"id":12345,"name":"tangqiao","age":30,"tags":["ios","swift"]}"#,
      // Keys that share their first eight bytes, and are compared in full.
      #"{"abcdefgh_2":1,"abcdefgh_1":2,"abcdefgh":3,"abcdefgh_1":4,"abcdefgi":5,"abcdefgh_10":6}"#,
      #"{"created_time":1,"created_at":2,"created":3}"#,
      String(repeating: "[", count: 512) + String(repeating: "]", count: 512),
    ]
    var canonicalizer = JSONCanonicalizer()
    for text in texts {
      let bytes = Array(text.utf8)
      #expect(
        try canonical(bytes, with: &canonicalizer) == JSONWriter.bytes(JSONReader.parse(bytes)),
        "\(text)")
    }
  }

  @Test("members are sorted by key bytes and a repeated key keeps its last value")
  func memberOrder() throws {
    var canonicalizer = JSONCanonicalizer()
    let members = (0..<40).map { #""k\#($0 * 7 % 40)":\#($0)"# }
    let text = "{" + (members + [#""k3":"last""#, #""k":0"#]).joined(separator: ",") + "}"
    let output = try canonical(Array(text.utf8), with: &canonicalizer)
    let keys = (0..<40).map { "k\($0)" }.sorted(by: {
      Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8))
    })
    let expected =
      #"{"k":0,"#
      + keys.map { #""\#($0)":"# + ($0 == "k3" ? #""last""# : "\(sourceIndex(of: $0))") }
      .joined(separator: ",") + "}"
    #expect(String(decoding: output, as: UTF8.self) == expected)
  }

  @Test("invalid texts give the reader's error, and the output is left as it was")
  func errors() throws {
    var canonicalizer = JSONCanonicalizer()
    for text in [
      "", "[1,]", #"{"a":1,}"#, #"{"a"}"#, "01", "-", "1e999", "[1e400]", #""\ud800""#, "[1] 2",
      String(repeating: "[", count: 513) + String(repeating: "]", count: 513),
    ] {
      let bytes = Array(text.utf8)
      var expected: JSONCodecError?
      do { _ = try JSONReader.parse(bytes) } catch { expected = error }
      try #require(expected != nil, "\(text)")
      var output = JSONOutput(capacity: 16)
      defer { output.release() }
      output.append(JSONByte.openBracket)
      let result = bytes.withUnsafeBytes { raw in
        Result { () throws(JSONCodecError) in
          try canonicalizer.append(canonicalTextOf: raw, to: &output)
        }
      }
      var found: JSONCodecError?
      if case .failure(let error) = result { found = error }
      #expect(found?.message == expected?.message, "\(text)")
      #expect(found?.offset == expected?.offset, "\(text)")
      #expect(output.count == 1)
    }
  }

  @Test("random texts, written every way JSON allows, give the parse-and-write bytes")
  func randomTexts() throws {
    var generator = SeededGenerator(seed: 15)
    var canonicalizer = JSONCanonicalizer()
    for round in 0..<4000 {
      var text: [UInt8] = []
      appendRandomText(into: &text, depth: 0, using: &generator)
      let expected = try JSONWriter.bytes(JSONReader.parse(text))
      #expect(try canonical(text, with: &canonicalizer) == expected, "round \(round)")
    }
  }

  @Test("random damage to texts gives the same bytes or the same error")
  func mutatedTexts() throws {
    var generator = SeededGenerator(seed: 16)
    var canonicalizer = JSONCanonicalizer()
    let interesting =
      Array(#"[]{}",:\u0123456789-+.eEtrufalsnK "#.utf8) + [0, 0x1F, 0x80, 0xC3, 0xFF]
    var accepted = 0
    for _ in 0..<3000 {
      var text: [UInt8] = []
      appendRandomText(into: &text, depth: 0, using: &generator)
      for _ in 0..<Int.random(in: 1...3, using: &generator) {
        let position = Int.random(in: 0...text.count, using: &generator)
        let byte = interesting.randomElement(using: &generator)!
        if position < text.count, Bool.random(using: &generator) {
          text[position] = byte
        } else {
          text.insert(byte, at: position)
        }
      }
      let expected = Result { () throws(JSONCodecError) in
        try JSONWriter.bytes(JSONReader.parse(text))
      }
      let found = Result { () throws(JSONCodecError) in try canonical(text, with: &canonicalizer) }
      switch (expected, found) {
      case (.success(let a), .success(let b)):
        #expect(a == b, "\(String(decoding: text, as: UTF8.self))")
        accepted += 1
      case (.failure(let a), .failure(let b)):
        #expect(a.message == b.message && a.offset == b.offset)
      default:
        Issue.record(
          "one path accepted what the other refused: \(String(decoding: text, as: UTF8.self))")
      }
    }
    // Both outcomes are exercised.
    #expect(accepted > 100 && accepted < 2900)
  }

  // MARK: Helpers

  private func canonical(_ bytes: [UInt8], with canonicalizer: inout JSONCanonicalizer)
    throws(JSONCodecError) -> [UInt8]
  {
    var output = JSONOutput(capacity: 16)
    defer { output.release() }
    let result = bytes.withUnsafeBytes { raw in
      Result { () throws(JSONCodecError) in
        try canonicalizer.append(canonicalTextOf: raw, to: &output)
      }
    }
    try result.get()
    return output.bytes()
  }

  private func sourceIndex(of key: String) -> Int {
    let number = Int(key.dropFirst())!
    return (0..<40).first { $0 * 7 % 40 == number }!
  }
}

/// Appends random JSON text: every kind of value, whitespace between tokens, keys out of
/// order and repeated, escapes where none are needed, numbers in every spelling, and now and
/// then a key the canonicalizer leaves to the parse (escaped or not ASCII).
private func appendRandomText(
  into text: inout [UInt8], depth: Int, using generator: inout SeededGenerator
) {
  func space() {
    if Int.random(in: 0..<6, using: &generator) == 0 {
      text += Array([" ", "\n", "\t", "\r", "  "].randomElement(using: &generator)!.utf8)
    }
  }
  func string(_ pieces: [String]) {
    text.append(JSONByte.quote)
    for _ in 0..<Int.random(in: 0..<6, using: &generator) {
      text += Array(pieces.randomElement(using: &generator)!.utf8)
    }
    text.append(JSONByte.quote)
  }
  space()
  switch Int.random(in: 0..<(depth < 4 ? 9 : 6), using: &generator) {
  case 0: text += Array(["null", "true", "false"].randomElement(using: &generator)!.utf8)
  case 1:
    let numbers = [
      "0", "-0", "7", "-12", "1.0", "-0.0", "2.50", "1e2", "1E-2", "3.25e+10", "0.1",
      "-1e-400", "123456789012345678", "1234567890123456789", "-9223372036854775808",
      "9223372036854775808", "99999999999999999999", "5e-324", "1.7976931348623157e308",
    ]
    text += Array(numbers.randomElement(using: &generator)!.utf8)
  case 2:
    text += Array(
      String(
        Int64.random(in: .min ... .max, using: &generator)
          >> Int64.random(in: 0...63, using: &generator)
      ).utf8)
  case 3, 4:
    string([
      "a", "Z", " ", "é", "中", "😀", "\\\"", "\\\\", "\\/", "\\n", "\\u0000", "\\u00e9",
      "\\ud83d\\ude00", "\u{7F}",
    ])
  case 5:
    // Swift's description of a double is JSON number syntax ("0.1", "1e-05").
    let scale = [1e-9, 1, 1e6, 1e20].randomElement(using: &generator)!
    text += Array(String(Double.random(in: -1...1, using: &generator) * scale).utf8)
  case 6, 7:
    text.append(JSONByte.openBrace)
    for member in 0..<Int.random(in: 0..<6, using: &generator) {
      if member > 0 { text.append(JSONByte.comma) }
      space()
      if Int.random(in: 0..<12, using: &generator) == 0 {
        string(["K", "\u{212A}", "\\u0041", "é", "e\u{301}", "a\\\"", "\\n"])
      } else {
        text += Array(
          "\"\(["a", "b", "ab", "", "B", "a0", "k\(Int.random(in: 0..<4, using: &generator))"].randomElement(using: &generator)!)\""
            .utf8)
      }
      space()
      text.append(JSONByte.colon)
      appendRandomText(into: &text, depth: depth + 1, using: &generator)
    }
    space()
    text.append(JSONByte.closeBrace)
  default:
    text.append(JSONByte.openBracket)
    for element in 0..<Int.random(in: 0..<5, using: &generator) {
      if element > 0 { text.append(JSONByte.comma) }
      appendRandomText(into: &text, depth: depth + 1, using: &generator)
    }
    space()
    text.append(JSONByte.closeBracket)
  }
  space()
}
