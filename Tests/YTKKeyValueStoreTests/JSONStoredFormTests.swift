import Foundation
import Testing

@testable import YTKKeyValueStore

/// The stored form, byte for byte, against the writer of commit 64e365e (before issue 30
/// reworked the JSON layer): every store written then must read and rewrite identically.
///
/// `Fixtures/stored-form.txt` holds one case per line, the input text and the bytes that
/// writer wrote for it, both in base64: 2,627 distinct inputs. They are the `json` fuzz
/// target's seeds and the 961 inputs that parse of a corpus it grew in seven minutes, the
/// values of `../shared/fixtures`, and 2,500 texts made by Python's `json` module from random
/// values (doubles from every
/// bit pattern and decade, 64-bit integers and beyond, strings of escapes, control
/// characters, non-ASCII text and canonically equivalent keys, in both key orders and with
/// `\u` escapes or raw UTF-8).
@Suite("The stored form against the writer of 64e365e")
struct JSONStoredFormTests {
  struct Case {
    var line: Int
    var input: [UInt8]
    var stored: [UInt8]
  }

  static let cases: [Case] = {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .appendingPathComponent("Fixtures/stored-form.txt")
    guard let text = try? String(contentsOf: url, encoding: .utf8) else { return [] }
    return text.split(separator: "\n").enumerated().map { index, line in
      let fields = line.split(separator: " ")
      return Case(
        line: index + 1, input: [UInt8](Data(base64Encoded: String(fields[0])) ?? Data()),
        stored: [UInt8](Data(base64Encoded: String(fields[1])) ?? Data()))
    }
  }()

  @Test("the fixture holds the cases")
  func fixtureIsThere() {
    #expect(Self.cases.count > 2500)
    #expect(Self.cases.allSatisfy { !$0.input.isEmpty && !$0.stored.isEmpty })
  }

  @Test(
    "every input is stored as the old writer stored it, by every path that writes the stored form"
  )
  func sameBytes() throws {
    for test in Self.cases {
      let value = try JSONReader.parse(test.input)
      #expect(try JSONWriter.bytes(value) == test.stored, "line \(test.line): the writer")
      #expect(
        try test.input.withUnsafeBytes { try JSONCanonicalizer.canonicalText(of: $0) }
          == test.stored, "line \(test.line): the canonicalizer")
      #expect(
        try JSONWriter.withText(
          of: value, writeError: { $0 }, body: { (text) throws(JSONCodecError) in Array(text) })
          == test.stored,
        "line \(test.line): the writer into its scratch space")
    }
  }

  @Test("every stored text reads and rewrites to the same bytes")
  func rewritesIdentically() throws {
    for test in Self.cases {
      #expect(
        try JSONWriter.bytes(JSONReader.parse(test.stored)) == test.stored, "line \(test.line)")
      #expect(
        try test.stored.withUnsafeBytes { try JSONCanonicalizer.canonicalText(of: $0) }
          == test.stored, "line \(test.line): the canonicalizer")
    }
  }
}
