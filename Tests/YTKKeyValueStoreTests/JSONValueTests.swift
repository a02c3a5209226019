import Foundation
import Testing

@testable import YTKKeyValueStore

/// JSONValue as users see it: literals, subscripts, typed accessors, description, Codable.
@Suite("JSONValue")
struct JSONValueTests {
  private let user: JSONValue = [
    "id": 1,
    "name": "tangqiao",
    "score": 97.5,
    "tags": ["ios", "swift"],
    "manager": nil,
    "active": true,
  ]

  @Test("literals build the matching cases")
  func literals() {
    #expect(nil as JSONValue == .null)
    #expect(true as JSONValue == .bool(true))
    #expect(42 as JSONValue == .int(42))
    #expect(-9_223_372_036_854_775_808 as JSONValue == .int(.min))
    #expect(2.5 as JSONValue == .double(2.5))
    #expect(2.0 as JSONValue == .double(2))
    #expect("s" as JSONValue == .string("s"))
    #expect([1, "a", nil] as JSONValue == .array([.int(1), .string("a"), .null]))
    #expect(["a": 1] as JSONValue == .object(["a": .int(1)]))
    #expect([] as JSONValue == .array([]))
    #expect([:] as JSONValue == .object([:]))
  }

  @Test("a dictionary literal that repeats a key keeps the last value")
  func duplicateLiteralKeys() {
    let value: JSONValue = ["a": 1, "a": 2]
    #expect(value == .object(["a": 2]))
  }

  @Test("integers and doubles are different values, as they are different text")
  func intIsNotDouble() {
    #expect(JSONValue.int(1) != JSONValue.double(1))
    #expect(Set<JSONValue>([.int(1), .double(1), .int(1)]).count == 2)
    #expect(JSONValue.object(["a": [1, 2]]) == ["a": [1, 2]])
  }

  @Test("subscripts reach into objects and arrays, nil otherwise")
  func subscripts() {
    #expect(user["name"] == "tangqiao")
    #expect(user["missing"] == nil)
    #expect(user["manager"] == .null)
    #expect(user["tags"]?[0] == "ios")
    #expect(user["tags"]?[1] == "swift")
    #expect(user["tags"]?[2] == nil)
    #expect(user["tags"]?[-1] == nil)
    #expect(user[0] == nil)
    #expect(user["tags"]?["ios"] == nil)
    #expect(JSONValue.string("s")["s"] == nil)
  }

  @Test("stringValue, boolValue, arrayValue and objectValue match their case only")
  func plainAccessors() {
    #expect(user["name"]?.stringValue == "tangqiao")
    #expect(user["id"]?.stringValue == nil)
    #expect(user["active"]?.boolValue == true)
    #expect(user["id"]?.boolValue == nil)
    #expect(user["tags"]?.arrayValue == ["ios", "swift"])
    #expect(user["tags"]?.objectValue == nil)
    #expect(user.objectValue?.count == 6)
    #expect(user.arrayValue == nil)
    #expect(user["manager"]?.isNull == true)
    #expect(user["id"]?.isNull == false)
  }

  @Test("intValue and int64Value accept integers and exactly integral doubles")
  func integerAccessors() {
    #expect(JSONValue.int(7).intValue == 7)
    #expect(JSONValue.int(.min).int64Value == .min)
    #expect(JSONValue.int(.max).intValue == Int(Int64.max))
    #expect(JSONValue.double(2.0).intValue == 2)
    #expect(JSONValue.double(-0.0).intValue == 0)
    #expect(JSONValue.double(2.5).intValue == nil)
    #expect(JSONValue.double(2.5).int64Value == nil)
    #expect(JSONValue.double(1e19).int64Value == nil)
    #expect(JSONValue.double(9_223_372_036_854_775_808).intValue == nil)
    #expect(JSONValue.double(-9_223_372_036_854_775_808).int64Value == .min)
    #expect(JSONValue.double(.nan).intValue == nil)
    #expect(JSONValue.double(.infinity).int64Value == nil)
    #expect(JSONValue.string("1").intValue == nil)
    #expect(JSONValue.bool(true).intValue == nil)
    #expect(JSONValue.string("1").int64Value == nil)
    #expect(JSONValue.null.int64Value == nil)
  }

  @Test("doubleValue accepts integers and doubles")
  func doubleAccessor() {
    #expect(JSONValue.int(3).doubleValue == 3)
    #expect(JSONValue.double(0.1).doubleValue == 0.1)
    #expect(JSONValue.int(.max).doubleValue == 9_223_372_036_854_775_808)
    #expect(JSONValue.string("0.1").doubleValue == nil)
    #expect(JSONValue.null.doubleValue == nil)
  }

  @Test("description is the canonical compact JSON text")
  func description() {
    #expect(
      user.description
        == #"{"active":true,"id":1,"manager":null,"name":"tangqiao","score":97.5,"tags":["ios","swift"]}"#
    )
    #expect(JSONValue.string("a\"b\n").description == #""a\"b\n""#)
    #expect(JSONValue.double(2).description == "2.0")
    #expect("\(JSONValue.int(-5))" == "-5")
  }

  @Test("description shows NaN and the infinities instead of failing")
  func nonFiniteDescription() {
    #expect(JSONValue.double(.nan).description == "nan")
    #expect(JSONValue.array([.double(.infinity), .double(-.infinity)]).description == "[inf,-inf]")
  }

  @Test("Codable round-trips through JSONEncoder and JSONDecoder")
  func codableRoundTrip() throws {
    // JSONEncoder writes 2.0 as 2, so integral doubles are left out: they decode as .int.
    let values: [JSONValue] = [
      user, nil, true, false, 0, -1, .int(.min), .int(.max), 1.5, -0.25, 1e-7, "", "é😀\n",
      [], [:], [[1, [2, [3]]], ["a": ["b": nil]]],
    ]
    for value in values {
      let data = try JSONEncoder().encode(value)
      #expect(try JSONDecoder().decode(JSONValue.self, from: data) == value)
    }
  }

  @Test("JSONDecoder turns 1 into .int and 1.5 into .double")
  func decodingNumbers() throws {
    let text = #"{"i":1,"d":1.5,"big":12345678901234567890,"b":true,"n":null,"s":"x","a":[]}"#
    let value = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    #expect(value["i"] == .int(1))
    #expect(value["d"] == .double(1.5))
    #expect(value["big"] == .double(12_345_678_901_234_567_168))
    #expect(value["b"] == .bool(true))
    #expect(value["n"] == .null)
    #expect(value["s"] == .string("x"))
    #expect(value["a"] == .array([]))
  }

  @Test("negative zero keeps its sign through JSONEncoder, which writes it as -0")
  func negativeZeroCodable() throws {
    let data = try JSONEncoder().encode(JSONValue.double(-0.0))
    let decoded = try JSONDecoder().decode(JSONValue.self, from: data)
    #expect(decoded.doubleValue?.sign == .minus)
    #expect(try JSONReader.parse(Array(data)).doubleValue?.sign == .minus)
  }

  @Test(
    "decoding a value JSON has no kind for (a property list's date or data) throws dataCorrupted")
  func decodingAKindJSONLacks() throws {
    for value in ["<date>2020-01-01T00:00:00Z</date>", "<data>AAEC</data>"] {
      let plist = """
        <?xml version="1.0" encoding="UTF-8"?>
        <plist version="1.0"><dict><key>value</key>\(value)</dict></plist>
        """
      let error = #expect(throws: DecodingError.self) {
        try PropertyListDecoder().decode([String: JSONValue].self, from: Data(plist.utf8))
      }
      guard case .dataCorrupted(let context) = error else {
        Issue.record("\(value): expected dataCorrupted, got \(String(describing: error))")
        continue
      }
      #expect(context.codingPath.map(\.stringValue) == ["value"], "\(value)")
      #expect(context.debugDescription.contains("not null, a Boolean, a number"), "\(value)")
    }
  }

  @Test("JSONValue works as a member of a Codable type")
  func nestedInCodable() throws {
    struct Envelope: Codable, Equatable {
      var kind: String
      var payload: JSONValue
    }
    let envelope = Envelope(kind: "user", payload: user)
    let data = try JSONEncoder().encode(envelope)
    #expect(try JSONDecoder().decode(Envelope.self, from: data) == envelope)
  }

  @Test("a value's description reads back as the same value")
  func descriptionReadsBack() throws {
    #expect(try JSONReader.parse(Array(user.description.utf8)) == user)
  }

  @Test("JSONValue(parsing:) reads text, bytes and borrowed bytes as the store reads values")
  func parsingInitializers() throws {
    let text = #" {"tags":["ios","swift"],"id":1,"name":"tangqiao","score":97.5,"manager":null} "#
    let expected: JSONValue = [
      "id": 1, "name": "tangqiao", "score": 97.5, "tags": ["ios", "swift"], "manager": nil,
    ]
    #expect(try JSONValue(parsing: text) == expected)
    #expect(try JSONValue(parsing: Array(text.utf8)) == expected)
    let borrowed = try Array(text.utf8).withUnsafeBytes { try JSONValue(parsing: $0) }
    #expect(borrowed == expected)
    #expect(try JSONValue(parsing: user.description) == user)
  }

  @Test("JSONValue(parsing:) rejects what is not JSON with .invalidArgument and the offset")
  func parsingRejects() {
    for text in ["", "{", "[1,]", "nul", "{\"a\" 1}", "1 2", "\"\u{1}\""] {
      do {
        let value = try JSONValue(parsing: text)
        Issue.record("\(text.debugDescription) parsed as \(value)")
      } catch {
        #expect(error.code == .invalidArgument)
        #expect(error.message.contains("offset"), "\(error.message)")
      }
    }
  }
}
