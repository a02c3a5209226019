import Foundation
import LogStoreTesting
import Testing

@testable import YTKKeyValueStore

/// The stored JSON format: what JSONWriter writes, what JSONReader accepts, and agreement
/// with Foundation's JSONSerialization, used here as the oracle.
@Suite("JSON codec")
struct JSONCodecTests {

  // MARK: Exact bytes of the stored format

  @Test(
    "the writer orders members by their keys' bytes, at every depth, as a plain recursive writer does"
  )
  func writerAgainstRecursiveReference() throws {
    var generator = SeededGenerator(seed: 1408)
    for round in 0..<3000 {
      let value = randomWriterValue(using: &generator, depth: 0)
      #expect(
        try JSONWriter.bytes(value) == referenceText(value), "round \(round): \(value)")
    }
  }

  @Test(
    "ordering keys keeps the last of each repeated key, for runs sorted by insertion and by sort")
  func keyOrderKeepsTheLast() {
    var generator = SeededGenerator(seed: 30)
    for round in 0..<400 {
      let count = Int.random(in: 0..<40, using: &generator)
      // Keys from a small set, so that many repeat; some share their first eight bytes.
      let stems = ["", "a", "ab", "same-prefix-1", "same-prefix-2", "same-prefix-", "z", "\u{0}"]
      let keys = (0..<count).map { _ in
        Array(stems.randomElement(using: &generator)!.utf8)
          + (Bool.random(using: &generator) ? [UInt8.random(in: 0...255, using: &generator)] : [])
      }
      var run = keys.indices.map { index in
        keys[index].withUnsafeBytes {
          OrderedKey(prefix: KeyOrder.prefix(of: $0), position: index, payload: index)
        }
      }
      let kept = run.withUnsafeMutableBufferPointer { run in
        KeyOrder.sortKeepingLast(run) { a, b in
          keys[a].withUnsafeBytes { a in keys[b].withUnsafeBytes { b in bytesOrder(a, b) } }
        }
      }
      // The reference: for each distinct key, its last position, in the keys' byte order.
      var last: [[UInt8]: Int] = [:]
      for (index, key) in keys.enumerated() { last[key] = index }
      let expected = last.sorted { $0.key.lexicographicallyPrecedes($1.key) }.map(\.value)
      #expect(run[..<kept].map(\.payload) == expected, "round \(round)")
    }
  }

  @Test("values are written as compact canonical text, byte for byte")
  func exactOutput() throws {
    let cases: [(JSONValue, String)] = [
      (["s"], #"["s"]"#),
      ([42], "[42]"),
      (["b": [true, nil], "a": 1], #"{"a":1,"b":[true,null]}"#),
      (nil, "null"),
      (false, "false"),
      ([], "[]"),
      ([:], "{}"),
      ([[], [:], [[]]], "[[],{},[[]]]"),
      (.int(Int64.min), "-9223372036854775808"),
      (.int(Int64.max), "9223372036854775807"),
      (0, "0"),
      (-1, "-1"),
      (0.1, "0.1"),
      (2.0, "2.0"),
      (-0.0, "-0.0"),
      (1e308, "1e+308"),
      (.double(Double.leastNonzeroMagnitude), "5e-324"),
      (1e16, "1e+16"),
      (1e-5, "1e-05"),
      (["x": ["y": ["z": -2.5]]], #"{"x":{"y":{"z":-2.5}}}"#),
    ]
    for (value, expected) in cases {
      #expect(try text(of: value) == expected)
    }
  }

  @Test("doubles are positional from 1e-4 through 2^53 and scientific outside")
  func doubleLayout() throws {
    let cases: [(Double, String)] = [
      (0, "0.0"),
      (1e-4, "0.0001"),
      (Double(1e-4).nextDown, "9.999999999999999e-05"),
      (0.000_12, "0.00012"),
      (0x1p53, "9007199254740992.0"),
      (Double(0x1p53).nextUp, "9.007199254740994e+15"),
      (1e15, "1000000000000000.0"),
      (123.456, "123.456"),
      (-1.5e-10, "-1.5e-10"),
      (1.7976931348623157e308, "1.7976931348623157e+308"),
      (1e22, "1e+22"),
    ]
    for (double, expected) in cases {
      #expect(try text(of: .double(double)) == expected)
    }
  }

  @Test("the double layout is the one Swift's description has today")
  func doubleLayoutMatchesDescription() throws {
    // The writer lays digits out itself so that stored bytes never depend on how a future
    // Swift formats numbers. If this fails, Swift's formatting changed: the stored format
    // must not, so keep the writer as it is and update this test's reference instead.
    var generator = SeededGenerator(seed: 10)
    for _ in 0..<20_000 {
      let anyBits = Double(bitPattern: generator.next())
      let everyday = Double.random(in: -1e7...1e7, using: &generator)
      let integral = Double(Int64.random(in: -(1 << 55)...(1 << 55), using: &generator))
      let tiny = Double.random(in: 0..<0.001, using: &generator)
      for double in [anyBits, everyday, integral, tiny] where double.isFinite {
        #expect(try text(of: .double(double)) == double.description)
      }
    }
  }

  @Test("strings escape quote, backslash and control characters only, in lowercase hex")
  func stringEscapes() throws {
    let value = JSONValue.string("\u{0}\u{1}\u{1F}\u{7F}\u{8}\u{C}\n\r\t\"\\/é中😀")
    #expect(try text(of: value) == #""\u0000\u0001\u001f"# + "\u{7F}" + #"\b\f\n\r\t\"\\/é中😀""#)
  }

  @Test("every control character has exactly one spelling")
  func controlCharacterSpellings() throws {
    let short: [UInt8: String] = [
      0x08: #"\b"#, 0x0C: #"\f"#, 0x0A: #"\n"#, 0x0D: #"\r"#, 0x09: #"\t"#,
    ]
    for byte in UInt8(0)..<0x20 {
      let value = JSONValue.string(String(UnicodeScalar(byte)))
      let hex = String(byte, radix: 16)
      let expected = short[byte] ?? #"\u00"# + (hex.count == 1 ? "0" + hex : hex)
      #expect(try text(of: value) == "\"" + expected + "\"")
    }
  }

  @Test("escapes are found at every position of long strings, next to any other byte")
  func escapesAtEveryPosition() throws {
    // The writer looks for bytes to escape eight at a time: put each kind of byte at every
    // offset of strings of every length up to 40, among ASCII, multi-byte UTF-8 and 0x7F.
    let specials: [Character] = [
      "\u{0}", "\u{1F}", "\u{8}", "\"", "\\", "\u{7F}", " ", "!", "#", "]", "é", "中", "😀",
    ]
    let fillers: [Character] = ["a", "\u{7F}", "é", "~"]
    func expected(_ string: String) -> String {
      var text = "\""
      for scalar in string.unicodeScalars {
        switch scalar {
        case "\"": text += #"\""#
        case "\\": text += #"\\"#
        case "\u{8}": text += #"\b"#
        case "\u{C}": text += #"\f"#
        case "\n": text += #"\n"#
        case "\r": text += #"\r"#
        case "\t": text += #"\t"#
        case let scalar where scalar.value < 0x20:
          let hex = String(scalar.value, radix: 16)
          text += #"\u00"# + (hex.count == 1 ? "0" + hex : hex)
        default: text.unicodeScalars.append(scalar)
        }
      }
      return text + "\""
    }
    for length in 1...40 {
      for filler in fillers {
        for special in specials {
          for position in 0..<length {
            var characters = Array(repeating: filler, count: length)
            characters[position] = special
            let string = String(characters)
            #expect(try text(of: .string(string)) == expected(string), "\(length) \(position)")
          }
        }
      }
    }
  }

  @Test(
    "escapes are decoded at every position of strings up to 24 characters, next to any other character, by the reader and by the Codable decoder"
  )
  func escapesDecodedAtEveryPosition() throws {
    // The reader decodes a string with escapes eight bytes at a time: put each spelling of an
    // escape at every offset among ASCII, multi-byte UTF-8 and 0x7F.
    let escapes: [(text: String, means: String)] = [
      (#"\""#, "\""), (#"\\"#, "\\"), (#"\/"#, "/"), (#"\b"#, "\u{8}"), (#"\f"#, "\u{C}"),
      (#"\n"#, "\n"), (#"\r"#, "\r"), (#"\t"#, "\t"), (#"\u0000"#, "\u{0}"),
      (#"\u0041"#, "A"), (#"\u00e9"#, "é"), (#"\u00E9"#, "é"), (#"\u4e2D"#, "中"),
      (#"\uFFFF"#, "\u{FFFF}"), (#"\ud83d\ude00"#, "😀"), (#"\uD83D\uDE00"#, "😀"),
    ]
    let fillers: [Character] = ["a", "\u{7F}", "é", "😀"]
    var checked = 0
    for length in 1...24 {
      for filler in fillers {
        for escape in escapes {
          for position in 0..<length {
            var text = ""
            var expected = ""
            for index in 0..<length {
              if index == position {
                text += escape.text
                expected += escape.means
              } else {
                text.append(filler)
                expected.append(filler)
              }
            }
            let bytes = Array(("\"" + text + "\"").utf8)
            #expect(try JSONReader.parse(bytes) == .string(expected), "\(length) \(position)")
            #expect(
              try StoredJSONDecoder.decode(String.self, from: bytes) == expected,
              "\(length) \(position)")
            checked += 1
          }
        }
      }
    }
    #expect(checked == 4 * 16 * 300)
  }

  @Test(
    "strings with escapes around the size decoded as they are read (512 bytes) decode the same by every reader"
  )
  func escapedStringsAroundTheScratchSize() throws {
    // The reader decodes a string with escapes into scratch space as it checks it, and
    // reads a longer one again once its length is known; the Codable decoder, the
    // canonicalizer and `string(id:)`'s reading of `["…"]` each decode in their own place.
    let escapes: [(text: String, means: String)] = [
      (#"\n"#, "\n"), (#"\u00e9"#, "é"), (#"\u4e2D"#, "中"), (#"\ud83d\ude00"#, "😀"),
    ]
    for length in 490...530 {
      for escape in escapes {
        for place in [0, length / 2, length - 1] {
          var text = ""
          var expected = ""
          for index in 0..<length {
            if index == place || index == length - 1 {
              text += escape.text
              expected += escape.means
            } else {
              text += index % 7 == 0 ? "é" : "a"
              expected += index % 7 == 0 ? "é" : "a"
            }
          }
          let bytes = Array(("\"" + text + "\"").utf8)
          let label = "\(length) \(escape.text) at \(place)"
          #expect(try JSONReader.parse(bytes) == .string(expected), "\(label)")
          #expect(
            try JSONReader.parse(
              Array("[1,{\"k\":\(text.isEmpty ? "" : "\"" + text + "\"")}]".utf8)) == [
                1, ["k": .string(expected)],
              ], "\(label)")
          #expect(try StoredJSONDecoder.decode(String.self, from: bytes) == expected, "\(label)")
          let wrapped = Array(("[\"" + text + "\"]").utf8)
          #expect(try wrapped.withUnsafeBytes { try JSONReader.wrappedString($0) } == expected)
          let stored = try JSONWriter.bytes(.string(expected))
          #expect(
            try bytes.withUnsafeBytes { try JSONCanonicalizer.canonicalText(of: $0) } == stored,
            "\(label)")
        }
      }
    }
    // A run of plain text that fills the scratch space to within a few bytes, then each kind
    // of escape: the escape is the first thing that does not fit.
    for plain in 505...515 {
      for escape in escapes {
        let text = String(repeating: "a", count: plain) + escape.text
        let expected = String(repeating: "a", count: plain) + escape.means
        let bytes = Array(("[\"" + text + "\"]").utf8)
        #expect(try JSONReader.parse(bytes) == [.string(expected)], "\(plain) \(escape.text)")
        #expect(try bytes.withUnsafeBytes { try JSONReader.wrappedString($0) } == expected)
      }
    }
  }

  @Test("object members are sorted by the UTF-8 bytes of their keys")
  func keyOrder() throws {
    let value: JSONValue = ["b": 1, "a": 2, "aa": 3, "B": 4, "": 5, "é": 6, "z": 7, "😀": 8]
    #expect(try text(of: value) == #"{"":5,"B":4,"a":2,"aa":3,"b":1,"z":7,"é":6,"😀":8}"#)

    // Swift orders strings by normalized scalars, which would put the decomposed "á" after
    // "b"; its bytes (61 CC 81) sort before "b" (62).
    let decomposed = "a\u{301}"
    let object = JSONValue.object(["b": 1, decomposed: 2])
    #expect(try text(of: object) == "{\"" + decomposed + "\":2,\"b\":1}")
  }

  @Test("equal objects give equal bytes whatever order they were built in")
  func canonicalBytes() throws {
    var generator = SeededGenerator(seed: 7)
    for _ in 0..<200 {
      let members = (0..<8).map { ("k\($0)", randomValue(using: &generator, depth: 1)) }
      var forward: [String: JSONValue] = [:]
      for (key, member) in members { forward[key] = member }
      var backward: [String: JSONValue] = [:]
      for (key, member) in members.reversed() { backward[key] = member }
      #expect(try JSONWriter.bytes(.object(forward)) == JSONWriter.bytes(.object(backward)))
    }
  }

  @Test("NaN and the infinities cannot be written")
  func nonFiniteDoubles() {
    let cases: [(Double, String)] = [
      (.nan, "JSON cannot represent the number nan"),
      (.infinity, "JSON cannot represent the number inf"),
      (-.infinity, "JSON cannot represent the number -inf"),
    ]
    for (double, message) in cases {
      for value: JSONValue in [.double(double), [1, .double(double)], ["k": [.double(double)]]] {
        #expect(throws: JSONCodecError(message: message, offset: 0)) {
          try JSONWriter.bytes(value)
        }
      }
    }
  }

  @Test("nesting is written up to the depth the reader accepts, and no deeper")
  func writerDepthLimit() throws {
    let deepest = nested(levels: JSONReader.maximumDepth)
    let bytes = try JSONWriter.bytes(deepest)
    #expect(try JSONReader.parse(bytes) == deepest)
    let tooDeep = nested(levels: JSONReader.maximumDepth + 1)
    let error = #expect(throws: JSONCodecError.self) { try JSONWriter.bytes(tooDeep) }
    #expect(error?.offset == 0)
    #expect(error?.message.contains("512") == true)
  }

  // MARK: Round trips

  @Test("integers round-trip exactly over all of Int64")
  func integerRoundTrips() throws {
    var generator = SeededGenerator(seed: 1)
    var integers: [Int64] = [.min, .min + 1, .max, .max - 1, 0, -1, 1, 9, 10, -10, 1 << 53]
    for _ in 0..<2000 {
      integers.append(Int64.random(in: .min ... .max, using: &generator))
      integers.append(Int64.random(in: -1000...1000, using: &generator))
    }
    for integer in integers {
      let bytes = try JSONWriter.bytes(.int(integer))
      #expect(String(decoding: bytes, as: UTF8.self) == String(integer))
      #expect(try JSONReader.parse(bytes) == .int(integer))
    }
  }

  @Test("doubles round-trip bit for bit and stay doubles")
  func doubleRoundTrips() throws {
    var generator = SeededGenerator(seed: 2)
    var doubles: [Double] = [
      0.1, -0.0, 0.0, 1e308, -1e308, 2.0, 1e16, 1e15, 1e22, 1e23, -2.5, 0.3,
      .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .leastNonzeroMagnitude,
      -.leastNonzeroMagnitude, .leastNormalMagnitude, .leastNormalMagnitude.nextDown,
      Double.leastNormalMagnitude / 3, 9_007_199_254_740_992, 9_007_199_254_740_992.nextUp,
      .pi, .ulpOfOne, 1 / 3, 123_456_789.123_456_789,
    ]
    for _ in 0..<5000 {
      // Any finite bit pattern, and separately subnormals and everyday magnitudes.
      let any = Double(bitPattern: generator.next())
      if any.isFinite { doubles.append(any) }
      doubles.append(Double(bitPattern: generator.next() & 0x800F_FFFF_FFFF_FFFF))
      doubles.append(Double.random(in: -1e6...1e6, using: &generator))
    }
    for double in doubles {
      let bytes = try JSONWriter.bytes(.double(double))
      let parsed = try JSONReader.parse(bytes)
      guard case .double(let back) = parsed else {
        Issue.record("\(double) read back as \(parsed)")
        continue
      }
      #expect(back.bitPattern == double.bitPattern, "\(double) read back as \(back)")
      // JSONDecoder reads the same text as the same number, bit for bit.
      let decoded = try JSONDecoder().decode(Double.self, from: Data(bytes))
      #expect(decoded.bitPattern == double.bitPattern, "JSONDecoder read \(double) as \(decoded)")
      let foundation = try JSONSerialization.jsonObject(
        with: Data(bytes), options: .fragmentsAllowed)
      #expect(nearlyEqual((foundation as? NSNumber)?.doubleValue, double))
    }
  }

  @Test("the quick decimal path agrees with the general double parser")
  func shortDecimals() throws {
    var generator = SeededGenerator(seed: 3)
    for _ in 0..<20_000 {
      let digits = String(UInt64.random(in: 0...UInt64(1) << 54, using: &generator))
      let point = Int.random(in: 0...digits.count, using: &generator)
      var text =
        point == digits.count
        ? digits : String(digits.prefix(point)) + "." + digits.dropFirst(point)
      if text.hasPrefix(".") { text = "0" + text }
      if text.count > 1, text.hasPrefix("0"), !text.hasPrefix("0.") { continue }
      if Bool.random(using: &generator) {
        text += "e" + String(Int.random(in: -30...30, using: &generator))
      }
      if Bool.random(using: &generator) { text = "-" + text }
      let parsed = try parse(text)
      let expected = Double(text)!
      switch parsed {
      case .double(let double): #expect(double.bitPattern == expected.bitPattern, "\(text)")
      case .int(let integer): #expect(Double(integer) == expected, "\(text)")
      default: Issue.record("\(text) read as \(parsed)")
      }
    }
  }

  @Test("strings round-trip byte for byte")
  func stringRoundTrips() throws {
    var strings = [
      "", "\"", "\\", "/", "\\\"", "\"\\/\u{8}\u{C}\n\r\t", "hello world",
      "😀", "👨‍👩‍👧‍👦", "🇨🇳", "唐巧", "こんにちは", "한국어", "e\u{301}", "\u{E9}", "a\u{300}\u{301}\u{302}",
      "\u{FEFF}BOM", "\u{FFFF}", "\u{10FFFF}", "\u{7F}", "\u{80}", "\u{2028}\u{2029}",
      String(repeating: "x", count: 10_000),
    ]
    strings.append(String((0..<0x20).map { Character(UnicodeScalar(UInt8($0))) }))
    var generator = SeededGenerator(seed: 4)
    for _ in 0..<500 {
      var scalars = String.UnicodeScalarView()
      for _ in 0..<Int.random(in: 0..<20, using: &generator) {
        let ranges: [ClosedRange<UInt32>] = [
          0...0x7F, 0x80...0x7FF, 0x800...0xD7FF, 0xE000...0xFFFF, 0x10000...0x10FFFF,
        ]
        let range = ranges.randomElement(using: &generator)!
        scalars.append(UnicodeScalar(UInt32.random(in: range, using: &generator))!)
      }
      strings.append(String(scalars))
    }
    for string in strings {
      for value: JSONValue in [.string(string), [.string(string)], [string: .string(string)]] {
        let bytes = try JSONWriter.bytes(value)
        // Valid UTF-8: decoding replaces nothing, so the bytes come back.
        #expect(Array(String(decoding: bytes, as: UTF8.self).utf8) == bytes)
        let back = try JSONReader.parse(bytes)
        #expect(back == value)
        // String equality is canonical equivalence; writing again proves the bytes are kept.
        #expect(try JSONWriter.bytes(back) == bytes)
      }
    }
  }

  @Test("nested and empty containers round-trip")
  func containerRoundTrips() throws {
    let values: [JSONValue] = [
      [], [:], [[]], [[:]], ["": [:]], [[[[[[1]]]]]],
      [
        "id": 12345, "name": "tangqiao", "tags": ["ios", "swift", "kv"],
        "geo": ["lat": 39.9, "lng": 116.4],
      ],
      [nil, true, false, 0, -0.0, "", [], [:]],
    ]
    for value in values {
      #expect(try JSONReader.parse(JSONWriter.bytes(value)) == value)
    }
    var generator = SeededGenerator(seed: 5)
    for _ in 0..<1000 {
      let value = randomValue(using: &generator, depth: 0)
      #expect(try JSONReader.parse(JSONWriter.bytes(value)) == value)
    }
  }

  // MARK: Agreement with Foundation

  @Test("JSONSerialization reads the writer's output as the same value")
  func writerAgreesWithFoundation() throws {
    var generator = SeededGenerator(seed: 6)
    for _ in 0..<1000 {
      let value = randomValue(using: &generator, depth: 0)
      let bytes = try JSONWriter.bytes(value)
      let foundation = try JSONSerialization.jsonObject(
        with: Data(bytes), options: .fragmentsAllowed)
      #expect(matches(value, foundation), "\(value)")
    }
  }

  @Test("JSONDecoder reads the writer's output as the same value")
  func writerAgreesWithJSONDecoder() throws {
    var generator = SeededGenerator(seed: 8)
    for _ in 0..<300 {
      // JSONDecoder cannot tell 2.0 from 2, so only non-integral doubles take part.
      let value = randomValue(using: &generator, depth: 0, integralDoubles: false)
      let decoded = try JSONDecoder().decode(JSONValue.self, from: Data(JSONWriter.bytes(value)))
      #expect(decoded == value)
    }
  }

  @Test("the reader and JSONSerialization agree on a corpus of valid texts")
  func readerAgreesWithFoundation() throws {
    for text in validCorpus {
      let ours = try parse(text)
      let foundation = try JSONSerialization.jsonObject(
        with: Data(text.utf8), options: .fragmentsAllowed)
      #expect(matches(ours, foundation), "\(text)")
    }
  }

  @Test("numbers read as .int when integer syntax fits Int64 (-0 aside), otherwise as .double")
  func numberKinds() throws {
    #expect(try parse("0") == .int(0))
    #expect(try parse("-0") == .double(-0.0))
    #expect(try parse("-0").doubleValue?.sign == .minus)
    #expect(try parse("-9223372036854775808") == .int(.min))
    #expect(try parse("9223372036854775807") == .int(.max))
    #expect(try parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
    #expect(try parse("-9223372036854775809") == .double(-9_223_372_036_854_775_808))
    #expect(try parse("123456789012345678901234567890") == .double(1.2345678901234568e29))
    #expect(try parse("1.0") == .double(1))
    #expect(try parse("1e2") == .double(100))
    #expect(try parse("1E+2") == .double(100))
    #expect(try parse("-0.0") == .double(-0.0))
    #expect(try parse("-0.0").doubleValue?.sign == .minus)
    #expect(try parse("1e-400") == .double(0))
    #expect(try parse("2.2250738585072011e-308") == .double(Double.leastNormalMagnitude.nextDown))
    #expect(try parse("0.30000000000000004") == .double(0.1 + 0.2))
    #expect(try parse("1.7976931348623157e308") == .double(.greatestFiniteMagnitude))
    #expect(try parse("4.9e-324") == .double(.leastNonzeroMagnitude))
  }

  @Test("strings decode every escape, including surrogate pairs")
  func stringEscapesRead() throws {
    #expect(try parse(#""\"\\\/\b\f\n\r\t""#) == .string("\"\\/\u{8}\u{C}\n\r\t"))
    #expect(try parse(#""\u0000\u001F\u0041\u00e9\u4E2D""#) == .string("\u{0}\u{1F}Aé中"))
    #expect(try parse(#""\uD83D\uDE00""#) == .string("😀"))
    #expect(try parse(#""\udbff\udfff""#) == .string("\u{10FFFF}"))
    #expect(try parse(#""a\u0301""#).stringValue.map { Array($0.utf8) } == [0x61, 0xCC, 0x81])
  }

  @Test("a stored string reads back by the one-pass path exactly as the scanner reads it")
  func wrappedStringsReadLikeTheScanner() throws {
    // `string(id:)` reads `["…"]` in one pass of its own and leaves any other text to the
    // scanner; both must give the same string, or the same error, for every text. Each kind
    // of byte at every offset (the pass works eight bytes at a time), then every cut and
    // every single-byte change of those texts.
    let specials: [Character] = ["\u{1}", "\"", "\\", "/", "\n", "\u{7F}", "é", "中", "😀"]
    var texts: [[UInt8]] = [
      Array(#"["\u00e9\/\b"]"#.utf8), Array(#"["\f\r\t\n\\\""]"#.utf8),
      Array(#"[ "a" ]"#.utf8), Array(#""bare""#.utf8),
      Array(#"["a","b"]"#.utf8), Array(#"["a\"]"#.utf8), Array(#"[""]"#.utf8),
      Array(#"["\x"]"#.utf8), [0x5B, 0x22, 0xC3, 0x22, 0x5D], [0x5B, 0x22, 0xE4, 0xB8, 0x22, 0x5D],
    ]
    for length in 1...19 {
      for special in specials {
        for position in 0..<length {
          var characters = Array(repeating: Character("a"), count: length)
          characters[position] = special
          let string = String(characters)
          let text = JSONWriter.withText(wrapping: string) { Array($0) }
          let read = try text.withUnsafeBytes { try JSONReader.wrappedString($0) }
          #expect(read.map { Array($0.utf8) } == Array(string.utf8), "\(string.debugDescription)")
          if length % 4 == 3, position % 3 == 0 { texts.append(text) }
        }
      }
    }
    func reading<R>(
      _ text: [UInt8], _ body: (UnsafeRawBufferPointer) throws(JSONCodecError) -> R
    ) -> Result<R, JSONCodecError> {
      text.withUnsafeBytes { bytes in Result { () throws(JSONCodecError) in try body(bytes) } }
    }
    func check(_ text: [UInt8]) {
      let quick = reading(text) { bytes throws(JSONCodecError) in
        try JSONReader.wrappedString(bytes)
      }
      let scanned = reading(text) { bytes throws(JSONCodecError) -> String? in
        let value = try JSONReader.parse(bytes)
        if case .string(let string) = value { return string }
        if case .array(let elements) = value, elements.count == 1,
          case .string(let string) = elements[0]
        {
          return string
        }
        return nil
      }
      switch (quick, scanned) {
      case (.success(let a), .success(let b)):
        #expect(a.map { Array($0.utf8) } == b.map { Array($0.utf8) }, "\(text)")
      case (.failure(let a), .failure(let b)):
        #expect(a.message == b.message && a.offset == b.offset, "\(text)")
      case (let a, let b):
        Issue.record("\(text): the string path gave \(a), the scanner \(b)")
      }
    }
    for text in texts {
      check(text)
      for cut in 0..<text.count { check(Array(text[..<cut])) }
      for position in text.indices {
        for byte: UInt8 in [0x22, 0x5C, 0x01, 0x20, 0x5D, 0xFF, 0x80, 0x75] {
          var changed = text
          changed[position] = byte
          check(changed)
        }
      }
    }
  }

  @Test("objects keep the last of duplicate keys; whitespace is allowed between tokens")
  func duplicatesAndWhitespace() throws {
    #expect(try parse(#"{"a":1,"a":2}"#) == ["a": 2])
    #expect(
      try parse(" \t\r\n{ \"a\" : [ 1 , 2 ] , \"b\" : null } \n") == ["a": [1, 2], "b": nil])
  }

  @Test("the reader accepts nesting up to 512 levels")
  func readerDepthLimit() throws {
    let deepest = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
    #expect(try parse(deepest) == nested(levels: 512))
    let objects =
      String(repeating: #"{"a":"#, count: 512) + "1" + String(repeating: "}", count: 512)
    #expect(try parse(objects)["a"]?["a"] != nil)
  }

  @Test("the deepest documents are read and written on a thread with a small stack")
  func deepDocumentsOnSmallStack() async {
    // Neither the reader nor the writer recurses, so depth costs no stack even in a debug
    // build; 256 KiB is half of what a secondary thread gets on Apple platforms.
    let arrays = Array(
      (String(repeating: "[", count: 512) + String(repeating: "]", count: 512)).utf8)
    let objects = Array(
      (String(repeating: #"{"a":"#, count: 512) + "1" + String(repeating: "}", count: 512)).utf8)
    let succeeded = await withCheckedContinuation { continuation in
      let thread = Thread {
        let roundTrips = [arrays, objects].allSatisfy { bytes in
          guard let value = try? JSONReader.parse(bytes) else { return false }
          return (try? JSONWriter.bytes(value)) == bytes
            && value.description.utf8.count == bytes.count
        }
        continuation.resume(returning: roundTrips)
      }
      thread.stackSize = 256 * 1024
      thread.start()
    }
    #expect(succeeded)
  }

  @Test("the reader works on any raw buffer, including an empty one")
  func rawBuffers() throws {
    let bytes = Array(#"  [1, "two"]  "#.utf8)
    let value = try bytes.withUnsafeBytes { raw in try JSONReader.parse(raw) }
    #expect(value == [1, "two"])
    #expect(throws: JSONCodecError.self) {
      try JSONReader.parse(UnsafeRawBufferPointer(start: nil, count: 0))
    }
  }

  // MARK: Rejection

  @Test("invalid texts are rejected with the offset of the fault", arguments: invalidCorpus)
  func rejection(_ invalid: JSONInvalidText) {
    let error = #expect(throws: JSONCodecError.self, "\(invalid.label)") {
      try JSONReader.parse(invalid.bytes)
    }
    #expect(error?.offset == invalid.offset, "\(invalid.label): \(error?.message ?? "")")
    #expect(error?.message.contains("at offset \(invalid.offset)") == true)
  }

  @Test("error messages say what was expected")
  func errorMessages() {
    let cases: [(String, String)] = [
      (#"{"id" 1}"#, "expected ':' after object key at offset 6"),
      ("[1 2]", "expected ',' or ']' after an array element but found '2' at offset 3"),
      ("[1,]", "expected a JSON value after ',' but found ']' (no trailing commas) at offset 3"),
      ("01", "leading zeros are not allowed in numbers at offset 0"),
      ("1e400", "the number 1e400 is too large for a double at offset 0"),
      (#""abc"#, "unexpected end of input at offset 4, inside the string that starts at offset 0"),
      ("[1,2", "unexpected end of input at offset 4, inside the array that starts at offset 0"),
      ("nul", "invalid literal, expected 'null' at offset 0"),
      ("\"\u{1}\"", "raw control character 0x01 in string (it must be escaped) at offset 1"),
    ]
    for (text, message) in cases {
      let error = #expect(throws: JSONCodecError.self) { try parse(text) }
      #expect(error?.message == message)
    }
  }

  /// A document is its value's text between optional whitespace. Cut short, it is valid JSON
  /// only where the cut leaves a whole value: in the trailing whitespace (the same value), or in
  /// a number right after a digit (a shorter number: "-1.25e-3" reads cut to "-1", "-1.2" and
  /// "-1.25", and throws cut to "-", "-1.", "-1.25e" and "-1.25e-"). Every other cut throws:
  /// inside an array or object (even right after a complete element), a string or a literal,
  /// or in the leading whitespace.
  @Test(
    "a proper prefix of a document throws unless it ends in its trailing whitespace or after a digit of a number; no prefix of an array or object reads"
  )
  func truncation() throws {
    let documents =
      validCorpus + [
        #"{"id":12345,"name":"tangqiao","age":30,"city":"Beijing","tags":["ios","swift","kv"],"bio":"hello world"}"#,
        #"{"a":[1,2.5e-3,{"b":"\u00e9\ud83d\ude00\n"}],"c":true,"d":false,"e":null,"f":"中文😀"}"#,
        "[10]", #"{"n":-12.5e+30}"#, "  -7.25e-2\n", "[true] ",
      ]
    let whitespace = Array(" \t\n\r".utf8)
    let digits = UInt8(ascii: "0")...UInt8(ascii: "9")
    for document in documents {
      let bytes = Array(document.utf8)
      let whole = try JSONReader.parse(bytes)
      let start = try #require(bytes.firstIndex { !whitespace.contains($0) })
      let end = try #require(bytes.lastIndex { !whitespace.contains($0) }) + 1
      let isNumber = bytes[start] == UInt8(ascii: "-") || digits.contains(bytes[start])
      for length in 0..<bytes.count {
        let prefix = Array(bytes[..<length])
        let label = "\(document.debugDescription) cut to \(length) bytes"
        if length >= end {
          #expect(try JSONReader.parse(prefix) == whole, "\(label)")
        } else if isNumber && length > start && digits.contains(bytes[length - 1]) {
          let foundation = try JSONSerialization.jsonObject(
            with: Data(prefix), options: .fragmentsAllowed)
          #expect(matches(try JSONReader.parse(prefix), foundation), "\(label)")
        } else {
          #expect(throws: JSONCodecError.self, "\(label)") { try JSONReader.parse(prefix) }
        }
      }
    }
  }

  @Test("random corruptions of valid documents never trap")
  func mutations() {
    var generator = SeededGenerator(seed: 9)
    let interesting: [UInt8] =
      Array(#"[]{}",:\u0123456789-+.eEtrufalsn "#.utf8) + [
        0, 0x1F, 0x7F, 0x80, 0xBF, 0xC0, 0xED, 0xF4, 0xFF,
      ]
    for document in validCorpus {
      let original = Array(document.utf8)
      for _ in 0..<300 {
        var bytes = original
        for _ in 0..<Int.random(in: 1...4, using: &generator) {
          let position = Int.random(in: 0...bytes.count, using: &generator)
          let byte = interesting.randomElement(using: &generator)!
          switch Int.random(in: 0..<3, using: &generator) {
          case 0 where position < bytes.count: bytes[position] = byte
          case 1 where position < bytes.count: bytes.remove(at: position)
          default: bytes.insert(byte, at: position)
          }
        }
        if let value = try? JSONReader.parse(bytes) {
          // Whatever is accepted is valid JSON to Foundation too, and writes back.
          #expect((try? JSONWriter.bytes(value)) != nil)
          #expect(
            (try? JSONSerialization.jsonObject(with: Data(bytes), options: .fragmentsAllowed))
              != nil)
        }
      }
    }
  }

  // MARK: Helpers

  private func parse(_ text: String) throws(JSONCodecError) -> JSONValue {
    try JSONReader.parse(Array(text.utf8))
  }

  private func text(of value: JSONValue) throws -> String {
    String(decoding: try JSONWriter.bytes(value), as: UTF8.self)
  }
}

// MARK: - Fixtures

/// Valid JSON texts covering every construct, for comparison with JSONSerialization.
private let validCorpus: [String] = [
  "null", "true", "false", "0", "-0", "1", "-1", "123456789", "-9223372036854775808",
  "9223372036854775807", "9223372036854775808", "18446744073709551616",
  "1.5", "-1.5", "0.1", "1e10", "1E10", "1e-10", "1e+10", "-1.25e-3", "0e0", "0.0",
  "1.7976931348623157e308", "5e-324", "2.2250738585072014e-308", "123.456e7",
  "\"\"", "\"abc\"", #""\"\\\/\b\f\n\r\t""#, #""\u0041\u00e9\u4e2d\ud83d\ude00""#,
  "\"é中😀 raw\"", "\"\u{7F}\"",
  "[]", "{}", "[[]]", "[{}]", #"{"a":{}}"#, "[1,2,3]", #"[1,"a",true,null,1.5,[],{}]"#,
  #"{"a":1,"b":2}"#, #"{"a":1,"a":2}"#, #"{"":0}"#, #"{"nested":{"deeper":[1,{"x":null}]}}"#,
  " \t\n\r[ 1 , 2 ] \n", "  \"padded\"  ",
  #"{"id":12345,"name":"tangqiao","age":30,"tags":["ios","swift"]}"#,
]

/// An invalid text and the byte offset the reader must report.
struct JSONInvalidText: Sendable, CustomTestStringConvertible {
  var label: String
  var bytes: [UInt8]
  var offset: Int

  init(_ text: String, _ offset: Int) {
    label = text
    bytes = Array(text.utf8)
    self.offset = offset
  }

  init(_ label: String, bytes: [UInt8], _ offset: Int) {
    self.label = label
    self.bytes = bytes
    self.offset = offset
  }

  var testDescription: String { label.debugDescription }
}

private let invalidCorpus: [JSONInvalidText] = [
  // Empty and whitespace-only input.
  JSONInvalidText("", 0),
  JSONInvalidText(" \n", 2),
  // Separators and trailing commas.
  JSONInvalidText("[1,]", 3),
  JSONInvalidText(#"{"a":1,}"#, 7),
  JSONInvalidText("[,1]", 1),
  JSONInvalidText("[1,,2]", 3),
  JSONInvalidText("[1 2]", 3),
  JSONInvalidText(#"{"a" 1}"#, 5),
  JSONInvalidText(#"{"a":1 "b":2}"#, 7),
  JSONInvalidText("{1:2}", 1),
  JSONInvalidText(#"{"a",1}"#, 4),
  // Quotes and literals.
  JSONInvalidText("['a']", 1),
  JSONInvalidText(#"{'a':1}"#, 1),
  JSONInvalidText("tru", 0),
  JSONInvalidText("nul", 0),
  JSONInvalidText("True", 0),
  JSONInvalidText("nulll", 4),
  JSONInvalidText("undefined", 0),
  // Numbers.
  JSONInvalidText("01", 0),
  JSONInvalidText("-01", 1),
  JSONInvalidText("00", 0),
  JSONInvalidText(".5", 0),
  JSONInvalidText("1.", 2),
  JSONInvalidText("+1", 0),
  JSONInvalidText("-", 1),
  JSONInvalidText("--1", 1),
  JSONInvalidText("1e", 2),
  JSONInvalidText("1e+", 3),
  JSONInvalidText("1.e5", 2),
  JSONInvalidText("NaN", 0),
  JSONInvalidText("Infinity", 0),
  JSONInvalidText("-Infinity", 1),
  JSONInvalidText("0x10", 1),
  JSONInvalidText("1_000", 1),
  JSONInvalidText("1e400", 0),
  JSONInvalidText("-1e400", 0),
  JSONInvalidText("[1e309]", 1),
  // Escapes and surrogates.
  JSONInvalidText(#""\uD800""#, 1),
  JSONInvalidText(#""\uDC00""#, 1),
  JSONInvalidText(#""\uDC00\uD800""#, 1),
  JSONInvalidText(#""\uD800\u0041""#, 7),
  JSONInvalidText(#""\uD800x""#, 1),
  JSONInvalidText(#""\uD83D\uD83D""#, 7),
  JSONInvalidText(#""\x""#, 1),
  JSONInvalidText(#""\u12G4""#, 1),
  JSONInvalidText(#""\u12""#, 1),
  JSONInvalidText(#""\"#, 1),
  // Raw control characters and unterminated strings.
  JSONInvalidText("\"a\nb\"", 2),
  JSONInvalidText("\"\u{0}\"", 1),
  JSONInvalidText("\"\t\"", 1),
  JSONInvalidText("\"\u{1F}\"", 1),
  JSONInvalidText(#""abc"#, 4),
  JSONInvalidText("\"", 1),
  // Invalid UTF-8.
  JSONInvalidText("0xFF in a string", bytes: [0x5B, 0x22, 0xFF, 0x22, 0x5D], 2),
  JSONInvalidText("overlong NUL", bytes: [0x22, 0xC0, 0x80, 0x22], 1),
  JSONInvalidText("encoded surrogate", bytes: [0x22, 0x61, 0xED, 0xA0, 0x80, 0x22], 2),
  JSONInvalidText("beyond U+10FFFF", bytes: [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], 1),
  JSONInvalidText("truncated sequence", bytes: [0x22, 0x61, 0x62, 0x63, 0xE2, 0x82, 0x22], 4),
  JSONInvalidText("lone continuation", bytes: [0x22, 0x5C, 0x6E, 0x80, 0x22], 3),
  JSONInvalidText("0xFF outside a string", bytes: [0xFF], 0),
  JSONInvalidText("UTF-8 byte order mark", bytes: [0xEF, 0xBB, 0xBF, 0x31], 0),
  // Unterminated containers.
  JSONInvalidText("[", 1),
  JSONInvalidText("[1,2", 4),
  JSONInvalidText("{", 1),
  JSONInvalidText(#"{"a":1"#, 6),
  JSONInvalidText(#"{"a""#, 4),
  JSONInvalidText(#"{"a":"#, 5),
  JSONInvalidText("[[]", 3),
  // Trailing garbage, and whitespace JSON does not allow.
  JSONInvalidText("1 2", 2),
  JSONInvalidText("{} x", 3),
  JSONInvalidText("[]]", 2),
  JSONInvalidText(#""a""b""#, 3),
  JSONInvalidText("\u{C}1", 0),
  JSONInvalidText("1\u{B}", 1),
  // Nesting deeper than 512 levels: the offset is the 513th opening bracket.
  JSONInvalidText(String(repeating: "[", count: 513) + String(repeating: "]", count: 513), 512),
  JSONInvalidText(
    String(repeating: #"{"a":"#, count: 513) + "1" + String(repeating: "}", count: 513), 2560),
  JSONInvalidText(String(repeating: "[", count: 100_000), 512),
]

/// Whether `value` is what JSONSerialization returned as `foundation`: the same structure,
/// strings equal byte for byte, numbers equal numerically.
private func matches(_ value: JSONValue, _ foundation: Any) -> Bool {
  switch value {
  case .null:
    return foundation is NSNull
  case .bool(let bool):
    guard let number = foundation as? NSNumber, isBoolean(number) else { return false }
    return number.boolValue == bool
  case .int(let integer):
    guard let number = foundation as? NSNumber, !isBoolean(number) else { return false }
    switch String(cString: number.objCType) {
    case "d", "f": return number.doubleValue == Double(integer)
    case "Q": return integer >= 0 && number.uint64Value == UInt64(integer)
    default: return number.int64Value == integer
    }
  case .double(let double):
    guard let number = foundation as? NSNumber, !isBoolean(number) else { return false }
    return nearlyEqual(number.doubleValue, double)
  case .string(let string):
    guard let other = foundation as? String else { return false }
    return Array(other.utf8) == Array(string.utf8)
  case .array(let array):
    guard let other = foundation as? [Any], other.count == array.count else { return false }
    return zip(array, other).allSatisfy { matches($0, $1) }
  case .object(let object):
    guard let other = foundation as? [String: Any], other.count == object.count else {
      return false
    }
    return object.allSatisfy { key, member in other[key].map { matches(member, $0) } ?? false }
  }
}

/// Whether two doubles agree to about 14 significant digits.
///
/// JSONSerialization in swift-corelibs-foundation does not round 17-digit numbers correctly
/// (it is often several ulps off), so it is only an approximate oracle for doubles;
/// JSONDecoder is the bit-exact one.
private func nearlyEqual(_ lhs: Double?, _ rhs: Double) -> Bool {
  guard let lhs else { return false }
  let tolerance = max(1e-14 * max(abs(lhs), abs(rhs)), 64 * Double.leastNonzeroMagnitude)
  return lhs == rhs || abs(lhs - rhs) <= tolerance
}

private func isBoolean(_ number: NSNumber) -> Bool {
  String(cString: number.objCType) == "c"
}

/// `levels` arrays nested in one another, the innermost empty.
private func nested(levels: Int) -> JSONValue {
  var value: JSONValue = []
  for _ in 1..<levels { value = [value] }
  return value
}

/// A random value of every kind, at most four levels deep.
private func randomValue(
  using generator: inout SeededGenerator, depth: Int, integralDoubles: Bool = true
) -> JSONValue {
  let kind = Int.random(in: 0..<(depth < 4 ? 8 : 6), using: &generator)
  switch kind {
  case 0: return nil
  case 1: return .bool(Bool.random(using: &generator))
  case 2:
    return .int(
      Int64.random(in: .min ... .max, using: &generator)
        >> Int64.random(in: 0...63, using: &generator))
  case 3:
    while true {
      let double =
        Bool.random(using: &generator)
        ? Double(bitPattern: generator.next()) : Double.random(in: -1000...1000, using: &generator)
      if double.isFinite, integralDoubles || double != double.rounded() { return .double(double) }
    }
  case 4, 5:
    // Escaped, raw ASCII, multi-byte and combining characters.
    let characters = Array("aZ09 \"\\/\n\t\u{0}\u{1F}é中😀\u{301}")
    var string = ""
    for _ in 0..<Int.random(in: 0..<8, using: &generator) {
      string.append(characters.randomElement(using: &generator)!)
    }
    return .string(string)
  case 6:
    return .array(
      (0..<Int.random(in: 0..<5, using: &generator)).map { _ in
        randomValue(using: &generator, depth: depth + 1, integralDoubles: integralDoubles)
      })
  default:
    var object: [String: JSONValue] = [:]
    for _ in 0..<Int.random(in: 0..<5, using: &generator) {
      object["k\(Int.random(in: 0..<10, using: &generator))é"] = randomValue(
        using: &generator, depth: depth + 1, integralDoubles: integralDoubles)
    }
    return .object(object)
  }
}

/// A random value for the writer: objects whose keys share long prefixes, differ in their
/// last byte or need escapes, nested up to eleven levels.
private func randomWriterValue(using generator: inout SeededGenerator, depth: Int) -> JSONValue {
  let kind = Int.random(in: 0..<(depth < 11 ? 7 : 4), using: &generator)
  switch kind {
  case 0: return .int(Int64.random(in: -100_000...100_000, using: &generator))
  case 1: return .double(Double.random(in: -10...10, using: &generator))
  case 2:
    let characters = Array("ab\"\n😀 ")
    return .string(
      String(
        (0..<Int.random(in: 0..<20, using: &generator)).map { _ in
          characters.randomElement(using: &generator)!
        }))
  case 3: return Bool.random(using: &generator) ? nil : .bool(true)
  case 4:
    return .array(
      (0..<Int.random(in: 0..<4, using: &generator)).map { _ in
        randomWriterValue(using: &generator, depth: depth + 1)
      })
  default:
    var object: [String: JSONValue] = [:]
    let stems = ["", "a", "same-prefix-", "same-prefix-longer", "zz", "é", "tab\t"]
    for _ in 0..<Int.random(in: 0..<7, using: &generator) {
      var key = stems.randomElement(using: &generator)!
      if Int.random(in: 0..<40, using: &generator) > 0 {
        key = key.replacingOccurrences(of: "\t", with: "t")
      }
      key += String(Int.random(in: 0..<12, using: &generator))
      object[key] = randomWriterValue(using: &generator, depth: depth + 1)
    }
    return .object(object)
  }
}

/// The canonical text of `value` by a plain recursive writer: members sorted by their keys'
/// UTF-8, the format's escapes one byte at a time; doubles as the writer writes them alone.
private func referenceText(_ value: JSONValue) throws -> [UInt8] {
  func quoted(_ string: String) -> [UInt8] {
    var text: [UInt8] = [UInt8(ascii: "\"")]
    for byte in string.utf8 {
      switch byte {
      case UInt8(ascii: "\""), UInt8(ascii: "\\"): text += [UInt8(ascii: "\\"), byte]
      case 0x0A: text += Array("\\n".utf8)
      case 0x09: text += Array("\\t".utf8)
      case 0x0D: text += Array("\\r".utf8)
      case 0x08: text += Array("\\b".utf8)
      case 0x0C: text += Array("\\f".utf8)
      case ..<0x20: text += Array(String(format: "\\u%04x", byte).utf8)
      default: text.append(byte)
      }
    }
    return text + [UInt8(ascii: "\"")]
  }
  switch value {
  case .array(let elements):
    let parts = try elements.map(referenceText)
    return Array("[".utf8) + Array(parts.joined(separator: Array(",".utf8))) + Array("]".utf8)
  case .object(let members):
    let sorted = members.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }
    let parts = try sorted.map { try quoted($0.key) + Array(":".utf8) + referenceText($0.value) }
    return Array("{".utf8) + Array(parts.joined(separator: Array(",".utf8))) + Array("}".utf8)
  case .string(let string): return quoted(string)
  default: return try JSONWriter.bytes(value)
  }
}
