import Foundation
import LogStoreTesting
import Testing

@testable import YTKKeyValueStore

/// StoredJSONDecoder against its oracle: for every text JSONReader accepts, and every type,
/// the same value as `JSONDecoder().decode` (Foundation, default strategies), or an error of
/// the same case; for texts JSONReader rejects, `dataCorrupted` with the reader's message.
@Suite("StoredJSONDecoder")
struct StoredJSONDecoderTests {

  // MARK: The tape

  @Test("the tape lists values and keys in document order; containers say where they end")
  func tapeLayout() throws {
    let text = Array(#"{"a":[1,true],"b":"x\n"}"#.utf8)
    let entries = try text.withUnsafeBytes { bytes in
      try JSONTape.withTape(of: bytes) { tape in
        tape.map { "\($0.kind) \($0.first) \($0.second) \($0.flags)" }
      }
    }
    #expect(
      entries == [
        "object 2 7 0", "string 2 3 0", "array 2 5 0", "number 6 7 4", "true 0 0 0",
        "string 15 16 0", "string 19 22 1",
        // The null that stands for members that are not there.
        "null 0 0 0",
      ])
  }

  // MARK: Numbers

  @Test("integers of every width read what JSONDecoder reads, and fail where it fails")
  func integers() {
    let texts = [
      "0", "-0", "1", "-1", "127", "128", "-128", "-129", "255", "256", "32767", "32768",
      "-32769", "65535", "65536", "2147483647", "2147483648", "-2147483649", "4294967295",
      "4294967296", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
      "-9223372036854775809", "18446744073709551615", "18446744073709551616",
      "100000000000000000000000000000000000000000",
      // Fractions and exponents: JSONDecoder reads them when the double is a whole number.
      "1.0", "1e2", "1E2", "1e+2", "-0.0", "1.5", "-1.5", "0.5", "1e-400", "-1e-400", "2.5e1",
      "1.0000000000000001", "100e-2", "255.0", "256.0", "-128.0", "1e17", "-1e17", "1e19",
      "1e20", "9007199254740993.5", "9007199254740993.0", "9223372036854775807.0",
      "-9223372036854775808.0", "18446744073709551615.0", "10000000000000000.0000",
      "12345678901234567.89", "1.8446744073709551615e19", "0.000000000000000000001e21",
      "123456789012345678901234567890e-10",
      // Integer text of more than 19 digits, read digit by digit: Int128's extremes and past.
      "-10000000000000000000", "-170141183460469231731687303715884105728",
      "-170141183460469231731687303715884105729", "170141183460469231731687303715884105727",
      "340282366920938463463374607431768211455", "340282366920938463463374607431768211456",
      "-100000000000000000000000000000000000000000",
    ]
    for text in texts {
      expectSameAsJSONDecoder(Int.self, text)
      expectSameAsJSONDecoder(Int8.self, text)
      expectSameAsJSONDecoder(Int16.self, text)
      expectSameAsJSONDecoder(Int32.self, text)
      expectSameAsJSONDecoder(Int64.self, text)
      expectSameAsJSONDecoder(UInt.self, text)
      expectSameAsJSONDecoder(UInt8.self, text)
      expectSameAsJSONDecoder(UInt16.self, text)
      expectSameAsJSONDecoder(UInt32.self, text)
      expectSameAsJSONDecoder(UInt64.self, text)
      if #available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *) {
        expectSameAsJSONDecoder(Int128.self, text)
        expectSameAsJSONDecoder(UInt128.self, text)
      }
    }
  }

  @Test("a number that does not fit is dataCorrupted at the number's coding path")
  func integerOverflowPath() {
    let error = decodingError { try decode([String: [UInt8]].self, #"{"a":[1,256]}"#) }
    guard case .dataCorrupted(let context) = error else {
      Issue.record("expected dataCorrupted, got \(String(describing: error))")
      return
    }
    #expect(keys(context.codingPath) == ["a", "Index 1"])
    #expect(context.debugDescription.contains("256"))
  }

  @Test("doubles read the nearest double to the text, integer and huge integer text included")
  func doubles() {
    let texts = [
      "0", "-0", "1", "-1", "0.1", "-0.0", "1e308", "1.7976931348623157e308", "5e-324",
      "2.2250738585072011e-308", "2.2250738585072014e-308", "123456789012345678901234567890",
      "9007199254740993", "18446744073709551616", "1e-400", "-1e-400", "0e0", "0.0e-999",
      "1e22", "1e23", "0.30000000000000004", "4.9406564584124654e-324", "2.4703282292062328e-324",
      "2.4703282292062327e-324", "1.00000000000000011102230246251565404236316680908203125",
      "-9223372036854775808", "9223372036854775807",
      "0.000000000000000000000000000000000000000000000000000000000000000000000000000001",
      // Zeros with exponents: JSONDecoder reads some as zero and refuses others.
      "0e5", "-0e5", "-0.0e5", "0.0e+5", "0e-5", "-0.0E5", "-0.00e1", "0.000e0", "0e00",
      "-0.0e-12", "0.0e123", "0.00000e1", "0E+1", "-0e+10", "0.0e-0", "0e-400", "0e400",
    ]
    for text in ["[1.5,-0.0,1e300,7]", #"[1,"x"]"#, "[1,null]", "[]", "null", "{}"] {
      expectSameAsJSONDecoder([Double].self, text)
    }
    for text in texts {
      expectSameAsJSONDecoder(Double.self, text)
      expectSameAsJSONDecoder(Float.self, text)
      expectSameAsJSONDecoder(JSONValue.self, text)
      expectSameAsJSONDecoder(Date.self, text)
    }
    var generator = SeededGenerator(seed: 1)
    for _ in 0..<2_000 {
      let double = Double(bitPattern: generator.next())
      guard double.isFinite else { continue }
      expectSameAsJSONDecoder(Double.self, double.description)
      expectSameAsJSONDecoder(Double.self, String(Double(Float(double)).description))
    }
  }

  @Test("floats read the nearest float to the text itself, not to its nearest double")
  func floats() {
    var texts = [
      "0", "-0", "1", "0.1", "3.4028235e38", "3.4028236e38", "1e39", "1e-45", "1e-50", "-1e-50",
      "16777217", "1.5e-45", "7e-46", "0.7e-45", "123456789012345678901234567890",
    ]
    // Just below the midpoint of two neighbouring floats whose lower one is odd: the
    // nearest double is the midpoint itself, which rounds (to even) up, while the text
    // rounds down.
    texts += (0..<40).map { step in floatMidpointText(oddSignificandStep: 2 * step + 1) }
    for text in texts {
      expectSameAsJSONDecoder(Float.self, text)
    }
    let text = floatMidpointText(oddSignificandStep: 1)
    #expect(
      (try? decode(Float.self, text)) != Float(Double(text)!),
      "the text must be one where rounding through a double differs")
    var generator = SeededGenerator(seed: 2)
    for _ in 0..<2_000 {
      let float = Float(bitPattern: UInt32(truncatingIfNeeded: generator.next()))
      guard float.isFinite else { continue }
      expectSameAsJSONDecoder(Float.self, float.description)
      expectSameAsJSONDecoder(Float.self, Double(float).nextUp.description)
    }
  }

  @Test("Decimal reads the number text")
  func decimals() {
    let texts = [
      "0", "-0", "1", "0.1", "-1.5", "123456789012345678901234567890.5", "1e200", "1e127",
      "1e-130", "3.14159265358979323846264338327950288419716939937510", "12e-3",
      "99999999999999999999999999999999999999", "999999999999999999999999999999999999999",
    ]
    for text in texts {
      expectSameAsJSONDecoder(Decimal.self, text)
    }
    expectSameAsJSONDecoder(Decimal.self, #""1.5""#)
    expectSameAsJSONDecoder(Decimal.self, "null")
  }

  // MARK: Strings, Booleans, null

  @Test("strings decode every escape, surrogate pairs and raw UTF-8")
  func strings() {
    let texts = [
      #""""#, #""abc""#, #""\"\\\/\b\f\n\r\t""#, #""\u0041\u00e9\u4e2d\ud83d\ude00""#,
      #""\u0000""#, #""a\u0000b""#, "\"é中😀 raw\"", "\"\u{7F}\"", #""e\u0301""#,
      #""\uFFFF\uFFFE""#, #""tab\tand\\backslash""#,
      "\"" + String(repeating: "x", count: 300) + "\"",
    ]
    for text in texts {
      expectSameAsJSONDecoder(String.self, text)
      expectSameAsJSONDecoder([String].self, "[\(text),\(text)]")
      expectSameAsJSONDecoder([String: String].self, "{\(text):\(text)}")
    }
    expectSameAsJSONDecoder(String.self, "1")
    expectSameAsJSONDecoder(String.self, "null")
    expectSameAsJSONDecoder(String.self, "[]")
  }

  @Test("a quote, escape, control character or non-ASCII byte is found at any offset")
  func stringScanning() {
    // The scanner reads plain text eight bytes at a time: every offset of the first byte
    // that needs a look, within and across words and near the end of the input.
    let specials = [#"\""#, #"\\"#, #"\n"#, #"\u00e9"#, "é", "中", "😀", "\u{7F}"]
    for length in 0..<18 {
      for offset in 0...length {
        let before = String(repeating: "a", count: offset)
        let after = String(repeating: "b", count: length - offset)
        for special in specials {
          expectSameAsJSONDecoder(String.self, "\"\(before)\(special)\(after)\"")
          expectSameAsJSONDecoder([String].self, "[\"\(before)\(special)\(after)\",1]")
        }
        for bad: [UInt8] in [[0x01], [0x1F], [0xFF], [0xC3], [0xE4, 0xB8], [0xED, 0xA0, 0x80]] {
          let bytes = Array("\"\(before)".utf8) + bad + Array("\(after)\"".utf8)
          let readerError = #expect(throws: JSONCodecError.self) { try JSONReader.parse(bytes) }
          #expect(readerError?.offset == offset + 1)
          #expect(throws: DecodingError.self) {
            try StoredJSONDecoder.decode(String.self, from: bytes)
          }
          #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(String.self, from: Data(bytes))
          }
        }
      }
    }
  }

  @Test("Bool reads only true and false; null is a type mismatch for Bool, as in JSONDecoder")
  func booleans() {
    for text in ["true", "false", "0", "1", #""true""#, "null", "[]", "{}"] {
      expectSameAsJSONDecoder(Bool.self, text)
      expectSameAsJSONDecoder([Bool].self, "[\(text)]")
      expectSameAsJSONDecoder([String: Bool].self, #"{"k":\#(text)}"#)
      expectSameAsJSONDecoder(Optionals.self, #"{"bool":\#(text)}"#)
    }
    let error = decodingError { try decode(Bool.self, "null") }
    guard case .typeMismatch = error else {
      Issue.record("expected typeMismatch, got \(String(describing: error))")
      return
    }
  }

  @Test("decodeIfPresent: a missing key and null are nil, a wrong type throws")
  func optionals() {
    let texts = [
      "{}", #"{"int":1}"#, #"{"int":null}"#, #"{"int":"1"}"#, #"{"string":"s","double":1.5}"#,
      #"{"nested":null}"#, #"{"nested":{"int":2}}"#, #"{"nested":[]}"#, #"{"list":[1,null]}"#,
      #"{"double":null,"float":null,"uint8":null}"#, #"{"uint8":300}"#, #"{"float":"x"}"#,
      #"{"int":1,"int":"twice"}"#, "[]", "null",
    ]
    for text in texts {
      expectSameAsJSONDecoder(Optionals.self, text)
      expectSameAsJSONDecoder(Optionals?.self, text)
    }
    expectSameAsJSONDecoder(Int?.self, "null")
    expectSameAsJSONDecoder(Int.self, "null")
    expectSameAsJSONDecoder([Int?].self, "[1,null,3]")
  }

  @Test("the deepest documents the reader accepts decode as JSONValue")
  func deepDocuments() {
    let arrays = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
    let objects =
      String(repeating: #"{"a":"#, count: 511) + "[1]" + String(repeating: "}", count: 511)
    expectSameAsJSONDecoder(JSONValue.self, arrays)
    expectSameAsJSONDecoder(JSONValue.self, objects)
  }

  @Test("top-level fragments decode as their type")
  func fragments() {
    expectSameAsJSONDecoder(Int.self, " 42 ")
    expectSameAsJSONDecoder(String.self, #""fragment""#)
    expectSameAsJSONDecoder(Double.self, "-2.5e-3")
    expectSameAsJSONDecoder(Bool.self, "true")
    expectSameAsJSONDecoder(Int?.self, "null")
    expectSameAsJSONDecoder(JSONValue.self, "7")
    expectSameAsJSONDecoder([Int].self, "7")
  }

  // MARK: Containers

  @Test("unkeyed containers: count, isAtEnd, currentIndex, decodeNil, and past the end")
  func unkeyedContainers() {
    for text in [
      "[]", "[null]", "[1]", "[null,1]", #"[1,"a",null,true]"#, "[[1],{}]", "{}", "null",
    ] {
      expectSameAsJSONDecoder(UnkeyedProbe.self, text)
    }
  }

  @Test("keyed containers: allKeys, contains, decodeNil, missing keys, nested containers")
  func keyedContainers() {
    let texts = [
      "{}", #"{"a":1}"#, #"{"a":null,"b":[1,2],"c":{"d":true}}"#, #"{"b":{},"c":[]}"#,
      #"{"z":1,"a":2,"m":3,"a":4}"#, #"{"K":1,"\u212a":2}"#, #"{"\u212a":1,"K":2}"#,
      #"{"a\u0062":1,"b":2}"#, #"{"é":1,"e\u0301":2}"#, "[]", "null", "1",
    ]
    for text in texts {
      expectSameAsJSONDecoder(KeyedProbe.self, text)
    }
  }

  @Test("an object that repeats a key decodes with the key's first value")
  func repeatedKeys() {
    for text in [
      #"{"a":1,"a":2}"#, #"{"a":1,"b":0,"a":2}"#, #"{"b":0,"a":"x","a":2}"#,
      #"{"K":1,"\u212a":2}"#, #"{"\u212a":1,"K":2}"#, #"{"a":1,"\u0061":2}"#,
    ] {
      expectSameAsJSONDecoder([String: JSONValue].self, text)
      expectSameAsJSONDecoder(SingleKey.self, text)
    }
    #expect((try? decode(SingleKey.self, #"{"a":1,"a":2}"#)) == SingleKey(a: 1))
  }

  @Test("nested containers and super decoders, in keyed and unkeyed containers")
  func superDecoders() {
    let texts = [
      #"{"name":"n","super":{"id":7}}"#, #"{"name":"n"}"#, #"{"name":"n","super":null}"#,
      #"{"name":"n","super":{"id":"x"}}"#, #"{"name":"n","super":[]}"#,
    ]
    for text in texts {
      expectSameAsJSONDecoder(Derived.self, text)
    }
    for text in [
      #"{"base":{"id":1},"items":[{"id":2},[3],4]}"#, #"{"items":[{"id":2},[3],4]}"#,
      #"{"base":{"id":1},"items":[]}"#, #"{"base":{"id":1},"items":[{"id":2},[3]]}"#,
      #"{"base":{"id":1},"items":[[],[3],4]}"#,
    ] {
      expectSameAsJSONDecoder(Nesting.self, text)
    }
  }

  // MARK: Every typed call of the containers

  @Test("keyed and unkeyed containers: the typed decode and decodeIfPresent of every scalar")
  func typedScalars() throws {
    for text in Scalars.objects() {
      expectSameAsJSONDecoder(Scalars.self, text)
      expectSameAsJSONDecoder(OptionalScalars.self, text)
    }
    for text in Scalars.arrays() {
      expectSameAsJSONDecoder(ScalarRow.self, text)
      expectSameAsJSONDecoder(OptionalScalarRow.self, text)
    }
    for value in [Scalars.extremes, Scalars.zeros] {
      let object = String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
      #expect(try decode(Scalars.self, object) == value)
      let row = String(decoding: try JSONEncoder().encode(ScalarRow(value)), as: UTF8.self)
      #expect(try decode(ScalarRow.self, row) == ScalarRow(value))
    }
  }

  @Test("Int128 and UInt128 through keyed and unkeyed containers")
  func wideIntegerContainers() {
    guard #available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *) else {
      return
    }
    let texts = [
      "0", "-1", "170141183460469231731687303715884105727",
      "-170141183460469231731687303715884105728", "340282366920938463463374607431768211455",
      "340282366920938463463374607431768211456", "1.5", "null", #""1""#,
    ]
    for signed in texts {
      for unsigned in texts {
        let text =
          #"{"int128":\#(signed),"uint128":\#(unsigned),"row":[\#(signed),\#(unsigned)]}"#
        expectSameAsJSONDecoder(WideIntegers.self, text)
      }
    }
  }

  @Test("coding path keys: an array position is \"Index n\" with the index as intValue")
  func codingPathKeys() {
    // What a user prints or matches: the keys' string and integer values, as JSONDecoder's.
    func path(_ body: () throws -> Any) -> [String] {
      guard let error = decodingError(body) else { return ["no error"] }
      let context: DecodingError.Context
      switch error {
      case .typeMismatch(_, let found), .valueNotFound(_, let found), .dataCorrupted(let found):
        context = found
      case .keyNotFound(let key, let found):
        context = DecodingError.Context(
          codingPath: found.codingPath + [key], debugDescription: "")
      @unknown default: return ["unknown"]
      }
      return context.codingPath.map { "\($0.stringValue) \(String(describing: $0.intValue))" }
    }
    let cases: [(String, (Data) throws -> Any, ([UInt8]) throws -> Any)] = [
      (
        #"[[1],[2,"x"]]"#, { try JSONDecoder().decode([[Int]].self, from: $0) },
        { try StoredJSONDecoder.decode([[Int]].self, from: $0) }
      ),
      (
        #"{"id":1,"name":"n","homepage":"h","scores":[1,"2"],"joined":0}"#,
        { try JSONDecoder().decode(MeasuredProfile.self, from: $0) },
        { try StoredJSONDecoder.decode(MeasuredProfile.self, from: $0) }
      ),
      (
        #"{"name":"n","reports":1,"super":{}}"#,
        { try JSONDecoder().decode(Manager.self, from: $0) },
        { try StoredJSONDecoder.decode(Manager.self, from: $0) }
      ),
    ]
    for (text, theirs, ours) in cases {
      let expected = path { try theirs(Data(text.utf8)) }
      #expect(path { try ours(Array(text.utf8)) } == expected, "\(text)")
      #expect(!expected.isEmpty && expected != ["no error"], "\(text)")
    }
  }

  @Test("a coding path's keys remake themselves: an index from its integer, super from a string")
  func codingPathKeyTypes() {
    // Generic code may rebuild a key through its type. An index key is made from its integer
    // ("Index 2" from 2, not from text); "super" is a string key, which takes any string (as
    // Foundation's is, and the encoder's).
    let error = decodingError { try decode(Manager.self, #"{"name":"n","reports":1,"super":[]}"#) }
    guard case .typeMismatch(_, let context) = error else {
      Issue.record("expected typeMismatch, got \(String(describing: error))")
      return
    }
    #expect(context.codingPath.map(remade) == ["super: super, superx, nil"])
    let indexError = decodingError { try decode([[Int]].self, #"[[1],[2,"x"]]"#) }
    guard case .typeMismatch(_, let indexContext) = indexError else {
      Issue.record("expected typeMismatch, got \(String(describing: indexError))")
      return
    }
    #expect(
      indexContext.codingPath.map(remade) == [
        "Index 1: nil, nil, Index 1", "Index 1: nil, nil, Index 1",
      ])
  }

  @Test("enums with associated values decode as synthesized")
  func enums() throws {
    let values: [Shape] = [
      .point, .circle(radius: 2.5), .rectangle(width: 1, height: 2), .polygon([1, 2, 3]),
      .labelled("x", .circle(radius: 1)),
    ]
    for value in values {
      let text = String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
      expectSameAsJSONDecoder(Shape.self, text)
      expectSameAsJSONDecoder(Shape.self, canonical(text))
    }
    for text in [#"{"circle":{}}"#, #"{"circle":{"radius":1},"point":{}}"#, "{}", #"{"x":{}}"#] {
      expectSameAsJSONDecoder(Shape.self, text)
    }
    for text in [#""red""#, #""purple""#, "1", "null"] {
      expectSameAsJSONDecoder(Color.self, text)
    }
  }

  @Test("a class decodes its superclass's members through superDecoder()")
  func classInheritance() throws {
    let value = Manager(name: "m", id: 3, reports: 4)
    let text = String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
    expectSameAsJSONDecoder(Manager.self, text)
    expectSameAsJSONDecoder(Manager.self, canonical(text))
    #expect(try decode(Manager.self, canonical(text)) == value)
  }

  // MARK: Foundation types

  @Test("Date reads seconds since 2001, as deferredToDate")
  func dates() {
    for text in ["0", "12.5", "-1e9", "978307200", "1e-400", #""2001-01-01T00:00:00Z""#, "null"] {
      expectSameAsJSONDecoder(Date.self, text)
      expectSameAsJSONDecoder([String: Date].self, #"{"d":\#(text)}"#)
      expectSameAsJSONDecoder(Dated.self, #"{"date":\#(text)}"#)
    }
  }

  @Test("Data reads base64 exactly as strictly as JSONDecoder")
  func data() {
    let texts = [
      "", "AQID", "AQI=", "AQ==", "AQI", "AQ", "A", "AQ ID", " AQID", "AQID\n", "AQJ=", "AR==",
      "AQID====", "AQ=D", "+/+/", "-_-_", "AQ\\u0049D", "AQ\\/D", "YWJj\\n", "====", "QQ==QQ==",
    ]
    for text in texts {
      expectSameAsJSONDecoder(Data.self, "\"\(text)\"")
    }
    var generator = SeededGenerator(seed: 3)
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/= -_")
    for _ in 0..<2_000 {
      let length = Int.random(in: 0..<12, using: &generator)
      let text = String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
      expectSameAsJSONDecoder(Data.self, "\"\(text)\"")
    }
    expectSameAsJSONDecoder(Data.self, "[1,2,3]")
    expectSameAsJSONDecoder(Data.self, "null")
  }

  @Test("URL reads a string URL(string:) accepts; any other string is dataCorrupted")
  func urls() {
    for text in [
      "https://example.com/a?b=c#d", "", "http://a b", "relative/path", "mailto:x@y.z",
      "https://例子.测试/路径", "%", "http://[::1]:80/", "a:b", "\\\\", "http://x/%zz",
    ] {
      let json = String(decoding: try! JSONWriter.bytes(.string(text)), as: UTF8.self)
      expectSameAsJSONDecoder(URL.self, json)
      expectSameAsJSONDecoder([URL].self, "[\(json)]")
    }
    expectSameAsJSONDecoder(URL.self, "1")
    expectSameAsJSONDecoder(URL.self, "null")
  }

  // MARK: Dictionaries

  @Test("dictionaries: String and Int keys from objects, other keys from alternating arrays")
  func dictionaries() {
    // Not `{"01":"a","1":"b"}` as [Int: String]: both keys are 1, and which value JSONDecoder
    // keeps depends on the order of its keys, which is the hash order of a dictionary.
    for text in [#"{"1":"a","-2":"b"}"#, #"{"x":"a"}"#, #"{"01":"a"}"#, "{}", "[]"] {
      expectSameAsJSONDecoder([String: String].self, text)
      expectSameAsJSONDecoder([Int: String].self, text)
    }
    for text in [#"[1.5,"a",2,"b"]"#, #"[1.5,"a",2]"#, "[]", #"{"1":"a"}"#] {
      expectSameAsJSONDecoder([Double: String].self, text)
    }
    expectSameAsJSONDecoder([Color: Int].self, #"{"red":1,"green":2}"#)
    expectSameAsJSONDecoder([Color: Int].self, #"{"purple":1}"#)
    expectSameAsJSONDecoder([String: [String: [Int]]].self, #"{"a":{"b":[1,2]},"c":{}}"#)
  }

  @Test("objects with many keys decode in linear time, in stored or any other key order")
  func largeObjects() throws {
    var members: [String: JSONValue] = [:]
    for index in 0..<12_000 {
      members["key\(index)"] = .int(Int64(index))
    }
    // Plain keys in byte order are searched as bytes (binary search past the last member
    // found); a key with an escape or a non-ASCII byte, which may equal another as a Swift
    // string, sends the object to a table of Swift strings.
    var plain = members
    plain["K"] = "K"
    var unusual = members
    unusual["\u{212A}"] = "kelvin"
    unusual["esc\"aped"] = "escaped"
    // Dispatch's clock, not ContinuousClock: that needs macOS 13 / iOS 16, above the targets.
    let start = DispatchTime.now().uptimeNanoseconds
    for (members, kelvin) in [(plain, "K"), (unusual, "kelvin")] {
      let canonical = try JSONWriter.bytes(.object(members))
      let shuffled = text(of: .object(members), sorted: false, spaced: true)
      for bytes in [canonical, Array(shuffled.utf8)] {
        let ours = try StoredJSONDecoder.decode([String: JSONValue].self, from: bytes)
        #expect(ours == members)
        let wide = try StoredJSONDecoder.decode(WideRecord.self, from: bytes)
        #expect(wide == WideRecord(key0: 0, key9999: 9999, key11999: 11999, kelvin: kelvin))
        let missing = decodingError { try StoredJSONDecoder.decode(Missing.self, from: bytes) }
        guard case .keyNotFound(let key, _) = missing else {
          Issue.record("expected keyNotFound, got \(String(describing: missing))")
          continue
        }
        #expect(key.stringValue == "key12000")
      }
      expectSameAsJSONDecoder(WideRecord.self, String(decoding: canonical, as: UTF8.self))
      expectSameAsJSONDecoder(WideRecord.self, shuffled)
      expectSameAsJSONDecoder([String: JSONValue].self, shuffled)
    }
    // Quadratic lookups would take minutes; this is seconds even in a debug build.
    #expect(DispatchTime.now().uptimeNanoseconds - start < 60 * 1_000_000_000)
  }

  @Test(
    "in a large object of plain keys, a member looked up by a name that is not ASCII, then plain ones"
  )
  func largeObjectMixedNames() throws {
    var members: [String: JSONValue] = [:]
    for index in 0..<40 {
      members["key\(index)"] = .int(Int64(index))
    }
    members["K"] = "K"
    // The Kelvin sign equals "K" as a Swift string. Looked up before plain names or after
    // them, each is found.
    let canonical = try JSONWriter.bytes(.object(members))
    let kelvinFirst = try StoredJSONDecoder.decode(KelvinFirst.self, from: canonical)
    #expect(kelvinFirst == KelvinFirst(kelvin: "K", key20: 20, key7: 7))
    let kelvinLast = try StoredJSONDecoder.decode(KelvinLast.self, from: canonical)
    #expect(kelvinLast == KelvinLast(key20: 20, kelvin: "K"))
    expectSameAsJSONDecoder(KelvinFirst.self, String(decoding: canonical, as: UTF8.self))
    expectSameAsJSONDecoder(KelvinLast.self, String(decoding: canonical, as: UTF8.self))
  }

  // MARK: Errors

  @Test("type mismatches and missing values report JSONDecoder's case and coding path")
  func errorPaths() {
    let texts = [
      #"{"id":"1","name":"n","homepage":"h","scores":[],"joined":0}"#,
      #"{"id":1,"name":"n","homepage":"h","scores":[1,"2"],"joined":0}"#,
      #"{"id":1,"name":"n","homepage":"h","scores":[1],"joined":"0"}"#,
      #"{"id":1,"name":"n","homepage":"h","scores":[1],"joined":null}"#,
      #"{"id":1,"name":"n","homepage":"h","scores":null,"joined":0}"#,
      #"{"id":1,"name":"n","homepage":"h","scores":[1],"joined":0,"nickname":5}"#,
      #"{"id":1,"name":"n","homepage":"h","joined":0}"#,
      #"{"id":1,"name":null,"homepage":"h","scores":[],"joined":0}"#,
      #"{"id":1,"name":"n","homepage":"","scores":[],"joined":0}"#,
      #"{"id":1.5,"name":"n","homepage":"h","scores":[],"joined":0}"#,
      #"[{"id":1}]"#, "null", "[]",
    ]
    for text in texts {
      expectSameAsJSONDecoder(MeasuredProfile.self, text)
      expectSameAsJSONDecoder([MeasuredProfile].self, "[\(text)]")
    }
  }

  @Test("text the reader rejects throws dataCorrupted with the reader's message")
  func invalidText() {
    let texts = [
      "", "[1,]", #"{"a":1,}"#, "01", "1e400", #""\ud800""#, "[1 2]", "nul", "{} x",
      String(repeating: "[", count: 513) + String(repeating: "]", count: 513),
    ]
    for text in texts {
      let bytes = Array(text.utf8)
      var readerError: JSONCodecError?
      do { _ = try JSONReader.parse(bytes) } catch { readerError = error }
      let error = decodingError { try StoredJSONDecoder.decode(JSONValue.self, from: bytes) }
      guard case .dataCorrupted(let context) = error, let readerError else {
        Issue.record("\(text): expected dataCorrupted, got \(String(describing: error))")
        continue
      }
      #expect(context.codingPath.isEmpty)
      #expect(context.debugDescription == readerError.message)
      #expect(context.underlyingError as? JSONCodecError == readerError)
    }
    // Errors in values the type never reads are reported too: the whole text is checked.
    let error = decodingError { try decode(SingleKey.self, #"{"a":1,"b":tru}"#) }
    guard case .dataCorrupted = error else {
      Issue.record("expected dataCorrupted, got \(String(describing: error))")
      return
    }
  }

  @Test("a decoder kept past the call still reads its value")
  func escapingDecoder() throws {
    let bytes = Array(#"{"a":{"x":[1,"two"]},"b":"\u00e9t\u00e9"}"#.utf8)
    let kept = try StoredJSONDecoder.decode(KeepsDecoder.self, from: bytes)
    // Overwrite the text the decoder read from; it must have kept its own copy.
    _ = Array(repeating: UInt8(0x20), count: bytes.count)
    let container = try kept.decoder.container(keyedBy: AnyKey.self)
    #expect(try container.decode(String.self, forKey: AnyKey("b")) == "été")
    #expect(
      try container.decode([String: JSONValue].self, forKey: AnyKey("a")) == ["x": [1, "two"]])
  }

  // MARK: Random documents

  @Test("random JSON values, canonical or spaced and unsorted, decode as with JSONDecoder")
  func randomValues() throws {
    var generator = SeededGenerator(seed: 7)
    for round in 0..<3_000 {
      let value = randomValue(using: &generator, depth: 0)
      let canonical = String(decoding: try JSONWriter.bytes(value), as: UTF8.self)
      let spaced = text(of: value, sorted: false, spaced: true, using: &generator)
      for text in [canonical, spaced] {
        expectSameAsJSONDecoder(JSONValue.self, text)
        if round % 3 == 0 {
          expectSameAsJSONDecoder(Record.self, text)
          expectSameAsJSONDecoder([Record].self, text)
          expectSameAsJSONDecoder(Node.self, text)
          expectSameAsJSONDecoder([String: Node].self, text)
          expectSameAsJSONDecoder([Node].self, text)
        }
      }
    }
  }

  @Test("mutated documents decode as with JSONDecoder, or throw the reader's error")
  func mutatedDocuments() throws {
    var generator = SeededGenerator(seed: 11)
    let interesting = Array(#"[]{}",:\u0123456789-+.eEtrufalsnK "#.utf8) + [0x00, 0x1F, 0x80, 0xE2]
    for _ in 0..<3_000 {
      let value = randomValue(using: &generator, depth: 1)
      var bytes = try JSONWriter.bytes(value)
      for _ in 0..<Int.random(in: 1...3, using: &generator) {
        let position = Int.random(in: 0...bytes.count, using: &generator)
        let byte = interesting.randomElement(using: &generator)!
        switch Int.random(in: 0..<3, using: &generator) {
        case 0 where position < bytes.count: bytes[position] = byte
        case 1 where position < bytes.count: bytes.remove(at: position)
        default: bytes.insert(byte, at: position)
        }
      }
      do {
        _ = try JSONReader.parse(bytes)
      } catch {
        let decoderError = decodingError {
          try StoredJSONDecoder.decode(JSONValue.self, from: bytes)
        }
        guard case .dataCorrupted(let context) = decoderError else {
          Issue.record("expected dataCorrupted, got \(String(describing: decoderError))")
          continue
        }
        #expect(context.debugDescription == error.message)
        continue
      }
      let text = String(decoding: bytes, as: UTF8.self)
      expectSameAsJSONDecoder(JSONValue.self, text)
      expectSameAsJSONDecoder(Record.self, text)
      expectSameAsJSONDecoder([Record?].self, text)
    }
  }

  @Test("random Codable values, written as stored text, decode as with JSONDecoder")
  func randomCodableValues() throws {
    var generator = SeededGenerator(seed: 8)
    for _ in 0..<1_000 {
      let node = randomNode(using: &generator, depth: 0)
      let encoded = String(decoding: try JSONEncoder().encode(node), as: UTF8.self)
      expectSameAsJSONDecoder(Node.self, encoded)
      expectSameAsJSONDecoder(Node.self, canonical(encoded))
      #expect(try decode(Node.self, canonical(encoded)) == node)
    }
    for bytes in MeasuredProfile.storedTexts(count: 500) {
      expectSameAsJSONDecoder(MeasuredProfile.self, String(decoding: bytes, as: UTF8.self))
    }
  }
}

// MARK: - The oracle

/// Decodes a `T` from `text` with StoredJSONDecoder.
private func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
  try StoredJSONDecoder.decode(T.self, from: Array(text.utf8))
}

/// The `DecodingError` that `body` throws, or nil.
private func decodingError(_ body: () throws -> Any) -> DecodingError? {
  do {
    _ = try body()
    return nil
  } catch {
    return error as? DecodingError
  }
}

/// Expects StoredJSONDecoder and JSONDecoder to agree on `text` as a `T`: the same value,
/// or errors of the same case. Coding paths must agree too, except where JSONDecoder
/// reports a number that does not fit at the top (with an empty path: StoredJSONDecoder
/// names the number's path), and where several members of a dictionary are wrong
/// (JSONDecoder meets them in hash order).
private func expectSameAsJSONDecoder<T: Decodable>(
  _ type: T.Type, _ text: String, sourceLocation: SourceLocation = #_sourceLocation
) {
  let bytes = Array(text.utf8)
  let ours = Result { try StoredJSONDecoder.decode(T.self, from: bytes) }
  let theirs = Result { try JSONDecoder().decode(T.self, from: Data(bytes)) }
  switch (ours, theirs) {
  case (.success(let ours), .success(let theirs)):
    #expect(
      sameValue(ours, theirs), "\(T.self) from \(text): \(ours) != \(theirs)",
      sourceLocation: sourceLocation)
  case (.failure(let ours), .failure(let theirs)):
    let oursCase = errorCase(ours)
    let theirsCase = errorCase(theirs)
    guard !T.self.isMapWithErrorsInHashOrder else {
      // Of several wrong members, JSONDecoder reports the first in hash order.
      #expect(ours is DecodingError, sourceLocation: sourceLocation)
      return
    }
    #expect(
      oursCase.kind == theirsCase.kind,
      "\(T.self) from \(text): \(ours) but JSONDecoder: \(theirs)", sourceLocation: sourceLocation)
    if oursCase.kind == theirsCase.kind,
      !(oursCase.kind == "dataCorrupted" && theirsCase.path.isEmpty)
    {
      #expect(
        oursCase.path == theirsCase.path,
        "\(T.self) from \(text): path \(oursCase.path), JSONDecoder \(theirsCase.path)",
        sourceLocation: sourceLocation)
    }
  case (.success(let ours), .failure(let theirs)):
    Issue.record(
      "\(T.self) from \(text): decoded \(ours), JSONDecoder throws \(theirs)",
      sourceLocation: sourceLocation)
  case (.failure(let ours), .success(let theirs)):
    Issue.record(
      "\(T.self) from \(text): throws \(ours), JSONDecoder decodes \(theirs)",
      sourceLocation: sourceLocation)
  }
}

extension Decodable {
  /// Whether this is a dictionary type, or holds one, whose members JSONDecoder decodes in
  /// hash order, so that which of several failing members it reports varies.
  fileprivate static var isMapWithErrorsInHashOrder: Bool {
    String(describing: Self.self).contains("Dictionary") || Self.self == Node.self
      || Self.self == [Node].self || Self.self == Optionals.self
      || Self.self == Optionals?.self
  }
}

/// A DecodingError's case and coding path (as string values).
private func errorCase(_ error: any Error) -> (kind: String, path: [String]) {
  guard let error = error as? DecodingError else { return ("not a DecodingError: \(error)", []) }
  switch error {
  case .typeMismatch(_, let context): return ("typeMismatch", keys(context.codingPath))
  case .valueNotFound(_, let context): return ("valueNotFound", keys(context.codingPath))
  case .keyNotFound(let key, let context):
    return ("keyNotFound", keys(context.codingPath) + [key.stringValue])
  case .dataCorrupted(let context): return ("dataCorrupted", keys(context.codingPath))
  @unknown default: return ("unknown", [])
  }
}

/// What a key's own type makes of it: `key: from its string, from another string, from
/// its integer (0 for a key without one)` (nil where the type makes no key).
func remade(_ key: any CodingKey) -> String {
  func remade<Key: CodingKey>(_ key: Key) -> String {
    let fromString = Key(stringValue: key.stringValue)?.stringValue
    let fromOther = Key(stringValue: key.stringValue + "x")?.stringValue
    let fromInteger = Key(intValue: key.intValue ?? 0)?.stringValue
    return "\(key.stringValue): "
      + [fromString, fromOther, fromInteger].map {
        $0 ?? "nil"
      }.joined(separator: ", ")
  }
  return remade(key)
}

private func keys(_ path: [any CodingKey]) -> [String] {
  path.map { $0.intValue.map { "Index \($0)" } ?? $0.stringValue }
}

/// Equality that tells doubles apart bit for bit (`-0.0` from `0.0`), and JSON values by
/// their canonical text.
private func sameValue<T>(_ lhs: T, _ rhs: T) -> Bool {
  switch (lhs, rhs) {
  case (let lhs as Double, let rhs as Double): return lhs.bitPattern == rhs.bitPattern
  case (let lhs as Float, let rhs as Float): return lhs.bitPattern == rhs.bitPattern
  case (let lhs as Date, let rhs as Date):
    return lhs.timeIntervalSinceReferenceDate.bitPattern
      == rhs.timeIntervalSinceReferenceDate.bitPattern
  case (let lhs as JSONValue, let rhs as JSONValue):
    return (try? JSONWriter.bytes(lhs)) == (try? JSONWriter.bytes(rhs))
  case (let lhs as [String: JSONValue], let rhs as [String: JSONValue]):
    return (try? JSONWriter.bytes(.object(lhs))) == (try? JSONWriter.bytes(.object(rhs)))
  case (let lhs as any Equatable, _):
    return lhs.isEqual(to: rhs)
  default:
    return String(describing: lhs) == String(describing: rhs)
  }
}

extension Equatable {
  fileprivate func isEqual(to other: Any) -> Bool {
    guard let other = other as? Self else { return false }
    return self == other
  }
}

/// `text` as stored: parsed and written canonically.
private func canonical(_ text: String) -> String {
  String(decoding: try! JSONWriter.bytes(JSONReader.parse(Array(text.utf8))), as: UTF8.self)
}

/// Text just below the midpoint between 1 + step·2⁻²³ (whose significand is odd when step
/// is) and the next float: 1 + (2·step + 1)·2⁻²⁴, whose decimal digits end in 5, with that 5
/// turned into 4999….
private func floatMidpointText(oddSignificandStep step: Int) -> String {
  // (2·step + 1)·5²⁴ as decimal digits, then placed 24 places after the point.
  var digits = Array(String(2 * step + 1).utf8).map { Int($0) - 48 }
  for _ in 0..<24 {
    var carry = 0
    for index in digits.indices.reversed() {
      let product = digits[index] * 5 + carry
      digits[index] = product % 10
      carry = product / 10
    }
    while carry > 0 {
      digits.insert(carry % 10, at: 0)
      carry /= 10
    }
  }
  let fraction = String(repeating: "0", count: 24 - digits.count) + digits.map(String.init).joined()
  return "1." + fraction.dropLast() + "4999999999999999999999"
}

// MARK: - Text of random values

/// `value` as JSON text: keys in dictionary order or sorted, with whitespace or not.
private func text(
  of value: JSONValue, sorted: Bool, spaced: Bool,
  using generator: inout SeededGenerator
) -> String {
  func space() -> String {
    guard spaced else { return "" }
    return ["", " ", "\n", "\t ", "\r\n"].randomElement(using: &generator)!
  }
  switch value {
  case .array(let elements):
    return "[" + space()
      + elements.map { text(of: $0, sorted: sorted, spaced: spaced, using: &generator) + space() }
      .joined(separator: "," + space()) + "]"
  case .object(let members):
    let pairs = sorted ? members.sorted { $0.key < $1.key } : Array(members)
    return "{" + space()
      + pairs.map { key, member in
        String(decoding: try! JSONWriter.bytes(.string(key)), as: UTF8.self) + space() + ":"
          + space() + text(of: member, sorted: sorted, spaced: spaced, using: &generator)
          + space()
      }.joined(separator: "," + space()) + "}"
  default:
    return String(decoding: try! JSONWriter.bytes(value), as: UTF8.self)
  }
}

private func text(of value: JSONValue, sorted: Bool, spaced: Bool) -> String {
  var generator = SeededGenerator(seed: 0)
  return text(of: value, sorted: sorted, spaced: spaced, using: &generator)
}

/// A random value of every kind, at most four levels deep, with the numbers JSONDecoder
/// reads in surprising ways (-0, 1.0, 1e17, 1e-400-like tiny doubles) among them.
private func randomValue(using generator: inout SeededGenerator, depth: Int) -> JSONValue {
  let kind = Int.random(in: 0..<(depth < 4 ? 9 : 7), using: &generator)
  switch kind {
  case 0: return nil
  case 1: return .bool(Bool.random(using: &generator))
  case 2:
    return .int(
      Int64.random(in: .min ... .max, using: &generator)
        >> Int64.random(in: 0...63, using: &generator))
  case 3:
    let special: [Double] = [
      -0.0, 0, 1, 1e17, 1e19, 1e20, 0x1p53 + 2, 0x1p63, -0x1p63, 0x1p64, 2.5,
      .leastNonzeroMagnitude, 1e300, 0.1,
    ]
    if Bool.random(using: &generator) { return .double(special.randomElement(using: &generator)!) }
    while true {
      let double =
        Bool.random(using: &generator)
        ? Double(bitPattern: generator.next()) : Double.random(in: -1e6...1e6, using: &generator)
      if double.isFinite { return .double(double) }
    }
  case 4, 5, 6:
    let characters = Array("aZ09 \"\\/\n\t\u{0}\u{1F}é中😀\u{301}K\u{212A}")
    var string = ""
    for _ in 0..<Int.random(in: 0..<8, using: &generator) {
      string.append(characters.randomElement(using: &generator)!)
    }
    return .string(string)
  case 7:
    return .array(
      (0..<Int.random(in: 0..<5, using: &generator)).map { _ in
        randomValue(using: &generator, depth: depth + 1)
      })
  default:
    var members: [String: JSONValue] = [:]
    let names = ["name", "value", "children", "flags", "a", "b", "K", "\u{212A}", "é", "e\u{301}"]
    for _ in 0..<Int.random(in: 0..<6, using: &generator) {
      members[names.randomElement(using: &generator)!] = randomValue(
        using: &generator, depth: depth + 1)
    }
    return .object(members)
  }
}

private func randomNode(using generator: inout SeededGenerator, depth: Int) -> Node {
  var node = Node()
  if Bool.random(using: &generator) {
    node.name = ["a", "\u{0}é\"", "", "中"].randomElement(using: &generator)
  }
  if Bool.random(using: &generator) {
    node.value = [0.1, -0.0, 1e300, 42, -7.25, .leastNonzeroMagnitude].randomElement(
      using: &generator)
  }
  if depth < 3, Bool.random(using: &generator) {
    node.children = (0..<Int.random(in: 0..<3, using: &generator)).map { _ in
      randomNode(using: &generator, depth: depth + 1)
    }
  }
  if Bool.random(using: &generator) {
    node.flags = ["x": true, "y": false].filter { _ in Bool.random(using: &generator) }
  }
  return node
}

// MARK: - Types decoded in the tests

private struct Node: Codable, Equatable {
  var name: String?
  var value: Double?
  var children: [Node]?
  var flags: [String: Bool]?
}

/// Like Node, without dictionaries: errors are reported in document order, so their case
/// and path must match JSONDecoder's exactly.
private struct Record: Codable, Equatable {
  var name: String?
  var value: Double?
  var count: Int64?
  var children: [Record]?
  var a: [String]?
  var b: Bool?
}

private struct SingleKey: Codable, Equatable {
  var a: Int
}

private struct Dated: Codable, Equatable {
  var date: Date
}

/// A member that the large objects do not have, between two that they do.
private struct Missing: Decodable {
  var key1999: Int
  var key12000: Int
}

private struct WideRecord: Codable, Equatable {
  var key0: Int
  var key9999: Int
  var key11999: Int
  var kelvin: String

  enum CodingKeys: String, CodingKey {
    case key0, key9999, key11999
    case kelvin = "K"
  }
}

/// A key that is not ASCII, decoded before plain ones.
private struct KelvinFirst: Codable, Equatable {
  var kelvin: String
  var key20: Int
  var key7: Int

  enum CodingKeys: String, CodingKey {
    case kelvin = "\u{212A}"
    case key20, key7
  }
}

/// A key that is not ASCII, decoded after a plain one.
private struct KelvinLast: Codable, Equatable {
  var key20: Int
  var kelvin: String

  enum CodingKeys: String, CodingKey {
    case key20
    case kelvin = "\u{212A}"
  }
}

private enum Color: String, Codable {
  case red
  case green
}

// Where the protocol is missing (before macOS 12.3 / iOS 15.4), the standard library's
// Dictionary coding, which JSONDecoder and StoredJSONDecoder both use for such keys, reads
// `[Color: Int]` as an array of alternating keys and values.
@available(macOS 12.3, iOS 15.4, tvOS 15.4, watchOS 8.5, *)
extension Color: CodingKeyRepresentable {}

private indirect enum Shape: Codable, Equatable {
  case point
  case circle(radius: Double)
  case rectangle(width: Double, height: Double)
  case polygon([Int])
  case labelled(String, Shape)
}

/// Every kind of optional member.
private struct Optionals: Codable, Equatable {
  var int: Int?
  var string: String?
  var double: Double?
  var float: Float?
  var uint8: UInt8?
  var bool: Bool?
  var nested: SingleKey?
  var list: [Int?]?

  enum CodingKeys: String, CodingKey {
    case int, string, double, float, uint8, bool, nested, list
  }

  init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    int = try container.decodeIfPresent(Int.self, forKey: .int)
    string = try container.decodeIfPresent(String.self, forKey: .string)
    double = try container.decodeIfPresent(Double.self, forKey: .double)
    float = try container.decodeIfPresent(Float.self, forKey: .float)
    uint8 = try container.decodeIfPresent(UInt8.self, forKey: .uint8)
    bool = try container.decodeIfPresent(Bool.self, forKey: .bool)
    nested = try container.decodeIfPresent(SingleKey.self, forKey: .nested)
    list = try container.decodeIfPresent([Int?].self, forKey: .list)
  }
}

/// What a decoder answered, step by step, or the error of a step (case and path).
private func step(_ body: () throws -> Any) -> String {
  do {
    return "\(try body())"
  } catch {
    let (kind, path) = errorCase(error)
    return "\(kind) \(path)"
  }
}

/// Records what an unkeyed container reports as it is read to its end and beyond.
private struct UnkeyedProbe: Decodable, Equatable {
  var log: [String] = []

  init(from decoder: any Decoder) throws {
    var container = try decoder.unkeyedContainer()
    log.append("count \(String(describing: container.count)) at end \(container.isAtEnd)")
    var steps = 0
    while steps < 8 {
      steps += 1
      log.append("index \(container.currentIndex) at end \(container.isAtEnd)")
      log.append("nil " + step { try container.decodeNil() })
      log.append("index \(container.currentIndex)")
      log.append("int? " + step { try container.decodeIfPresent(Int.self) as Any })
      log.append("index \(container.currentIndex)")
      log.append("value? " + step { try container.decodeIfPresent(JSONValue.self) as Any })
      log.append("index \(container.currentIndex)")
      if container.isAtEnd {
        log.append("string " + step { try container.decode(String.self) })
        log.append("nested " + step { try container.nestedUnkeyedContainer().count as Any })
        log.append("super " + step { try container.superDecoder().codingPath.count })
        log.append("value " + step { try container.decode(JSONValue.self) })
        break
      }
      log.append("value " + step { try container.decode(JSONValue.self) })
    }
  }
}

private struct AnyKey: CodingKey {
  var stringValue: String
  var intValue: Int? { nil }

  init(_ string: String) {
    stringValue = string
  }

  init?(stringValue: String) {
    self.stringValue = stringValue
  }

  init?(intValue: Int) {
    return nil
  }
}

/// Records what a keyed container reports: its keys, membership, null checks, nested
/// containers, and the errors of missing members.
private struct KeyedProbe: Decodable, Equatable {
  var log: [String] = []

  init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: AnyKey.self)
    log.append("userInfo \(decoder.userInfo.count)")
    log.append("keys " + container.allKeys.map(\.stringValue).sorted().joined(separator: ","))
    for name in ["a", "b", "c", "d", "K", "\u{212A}", "ab", "é", "e\u{301}", "z", "m"] {
      let key = AnyKey(name)
      log.append("\(name): contains \(container.contains(key))")
      log.append("nil " + step { try container.decodeNil(forKey: key) })
      log.append("value " + step { try container.decode(JSONValue.self, forKey: key) })
      log.append("int " + step { try container.decode(Int.self, forKey: key) })
      log.append("int? " + step { try container.decodeIfPresent(Int.self, forKey: key) as Any })
      log.append(
        "keyed "
          + step { try container.nestedContainer(keyedBy: AnyKey.self, forKey: key).allKeys.count })
      log.append(
        "unkeyed " + step { try container.nestedUnkeyedContainer(forKey: key).count as Any })
      log.append("super " + step { try keys(container.superDecoder(forKey: key).codingPath) })
    }
  }
}

/// A class whose superclass's members live under "super".
private class Base: Codable, Equatable {
  var id: Int

  init(id: Int) {
    self.id = id
  }

  static func == (lhs: Base, rhs: Base) -> Bool {
    type(of: lhs) == type(of: rhs) && lhs.isEqual(rhs)
  }

  func isEqual(_ other: Base) -> Bool { id == other.id }
}

private final class Manager: Base {
  var name: String
  var reports: Int

  init(name: String, id: Int, reports: Int) {
    self.name = name
    self.reports = reports
    super.init(id: id)
  }

  enum CodingKeys: String, CodingKey {
    case name, reports
  }

  required init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    name = try container.decode(String.self, forKey: .name)
    reports = try container.decode(Int.self, forKey: .reports)
    try super.init(from: container.superDecoder())
  }

  override func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(name, forKey: .name)
    try container.encode(reports, forKey: .reports)
    try super.encode(to: container.superEncoder())
  }

  override func isEqual(_ other: Base) -> Bool {
    guard let other = other as? Manager else { return false }
    return name == other.name && reports == other.reports && super.isEqual(other)
  }
}

/// A type that reads its superclass part from "super", which may be missing or null.
private struct Derived: Decodable, Equatable {
  var name: String
  var superID: String

  enum CodingKeys: String, CodingKey {
    case name
  }

  init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    name = try container.decode(String.self, forKey: .name)
    let superDecoder = try container.superDecoder()
    superID =
      keys(superDecoder.codingPath).joined(separator: "/") + ": "
      + step { try SingleID(from: superDecoder).id }
  }
}

private struct SingleID: Decodable {
  var id: Int
}

/// Nested keyed and unkeyed containers, and super decoders of array elements.
private struct Nesting: Decodable, Equatable {
  var log: [String] = []

  enum CodingKeys: String, CodingKey {
    case base, items
  }

  init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    log.append(
      "base "
        + step {
          try container.nestedContainer(keyedBy: AnyKey.self, forKey: .base).decode(
            Int.self, forKey: AnyKey("id"))
        })
    var items = try container.nestedUnkeyedContainer(forKey: .items)
    log.append("items at " + keys(items.codingPath).joined(separator: "/"))
    log.append(
      "first "
        + step {
          let nested = try items.nestedContainer(keyedBy: AnyKey.self)
          return keys(nested.codingPath + [AnyKey("id")]).joined(separator: "/") + " "
            + String(try nested.decode(Int.self, forKey: AnyKey("id")))
        })
    log.append(
      "second "
        + step {
          var nested = try items.nestedUnkeyedContainer()
          return try nested.decode(Int.self)
        })
    log.append(
      "third "
        + step {
          let superDecoder = try items.superDecoder()
          return keys(superDecoder.codingPath).joined(separator: "/") + " "
            + String(try superDecoder.singleValueContainer().decode(Int.self))
        })
    log.append("end \(items.isAtEnd) \(items.currentIndex)")
  }
}

/// Keeps the decoder it was given, past the end of the decoding call.
private struct KeepsDecoder: Decodable {
  var decoder: any Decoder

  init(from decoder: any Decoder) throws {
    self.decoder = decoder
  }
}

// MARK: - Measurement

/// The benchmark value of the decoder's target: stored texts of a typical record.
struct MeasuredProfile: Codable, Equatable {
  var id: Int
  var name: String
  var homepage: URL
  var scores: [Int]
  var joined: Date
  var nickname: String?

  /// `count` canonical stored texts of varied profiles, half without a nickname.
  static func storedTexts(count: Int) -> [[UInt8]] {
    var generator = SeededGenerator(seed: 42)
    let encoder = JSONEncoder()
    let names = ["tangqiao", "li", "wang", "zhang wei", "Ana María", "Bob", "東京", "x"]
    return (0..<count).map { index in
      let profile = MeasuredProfile(
        id: Int.random(in: 1...10_000_000, using: &generator),
        name: names[index % names.count] + String(index),
        homepage: URL(string: "https://example.com/users/\(index)")!,
        scores: (0..<Int.random(in: 0...6, using: &generator)).map { _ in
          Int.random(in: -1000...100_000, using: &generator)
        },
        joined: Date(
          timeIntervalSinceReferenceDate: Double.random(in: 0...800_000_000, using: &generator)),
        nickname: index % 2 == 0 ? nil : "nick\(index)")
      return try! JSONWriter.bytes(JSONReader.parse(Array(encoder.encode(profile))))
    }
  }
}

/// Decoding speed against JSONDecoder: prints, asserts nothing. Runs only with
/// STORED_JSON_MEASURE=1, in a release build:
///
///     STORED_JSON_MEASURE=1 swift test -c release --scratch-path .build-release \
///       --filter StoredJSONDecoderMeasurement
@Suite(
  "StoredJSONDecoder measurement",
  .enabled(if: ProcessInfo.processInfo.environment["STORED_JSON_MEASURE"] == "1"))
struct StoredJSONDecoderMeasurement {
  @Test("decoding 100k stored profiles: StoredJSONDecoder against JSONDecoder (prints only)")
  func measure() throws {
    let texts = MeasuredProfile.storedTexts(count: 100_000)
    let datas = texts.map { Data($0) }
    let shared = JSONDecoder()
    var ours: [Double] = []
    var theirsShared: [Double] = []
    var theirsFresh: [Double] = []
    for _ in 0..<5 {
      ours.append(
        seconds {
          var sum = 0
          for bytes in texts {
            sum &+= try StoredJSONDecoder.decode(MeasuredProfile.self, from: bytes).id
          }
          return sum
        })
      theirsShared.append(
        seconds {
          var sum = 0
          for data in datas { sum &+= try shared.decode(MeasuredProfile.self, from: data).id }
          return sum
        })
      theirsFresh.append(
        seconds {
          var sum = 0
          for data in datas {
            sum &+= try JSONDecoder().decode(MeasuredProfile.self, from: data).id
          }
          return sum
        })
    }
    let oursMedian = median(ours)
    let sharedMedian = median(theirsShared)
    let freshMedian = median(theirsFresh)
    print(
      """
      100,000 stored profiles, median of 5 runs:
        StoredJSONDecoder.decode:          \(nanoseconds(oursMedian)) ns each \(milliseconds(ours))
        JSONDecoder, one instance:         \(nanoseconds(sharedMedian)) ns each \(milliseconds(theirsShared))
        JSONDecoder() for each value:      \(nanoseconds(freshMedian)) ns each \(milliseconds(theirsFresh))
        speedup: \(ratio(sharedMedian / oursMedian))x (one instance), \
      \(ratio(freshMedian / oursMedian))x (JSONDecoder() each)
      """)
  }

  private func seconds(_ body: () throws -> Int) -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    let checksum = try! body()
    let elapsed = DispatchTime.now().uptimeNanoseconds - start
    withExtendedLifetime(checksum) {}
    return Double(elapsed) / 1e9
  }

  private func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
  private func nanoseconds(_ total: Double) -> Int { Int(total * 1e9 / 100_000) }
  private func milliseconds(_ runs: [Double]) -> String {
    "(runs: " + runs.map { "\(Int($0 * 1000)) ms" }.joined(separator: ", ") + ")"
  }
  private func ratio(_ value: Double) -> String { String(format: "%.2f", value) }
}
