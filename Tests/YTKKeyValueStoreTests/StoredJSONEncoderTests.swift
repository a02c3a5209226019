import Foundation
import LogStoreTesting
import Testing

@testable import YTKKeyValueStore

/// StoredJSONEncoder against its oracle: Foundation's `JSONEncoder` (default strategies),
/// then the store's reader and canonical writer, which is how `put(encodable:)` stored a
/// value before. Every test compares the two byte for byte, or checks that both throw.
@Suite("StoredJSONEncoder")
struct StoredJSONEncoderTests {

  // MARK: Layout

  @Test("members are sorted by the UTF-8 bytes of their keys, with no whitespace")
  func sortedMembers() throws {
    let profile = Profile(
      id: 7, name: "Zoë \"Z\"", homepage: URL(string: "https://example.com/z?q=1")!,
      scores: [3, -1, 0], joined: Date(timeIntervalSinceReferenceDate: 12.5), nickname: nil)
    try expectSame(profile)
    #expect(
      try text(profile)
        == #"{"homepage":"https://example.com/z?q=1","id":7,"joined":12.5,"name":"Zoë \"Z\"","#
        + #""scores":[3,-1,0]}"#)
    try expectSame(["b": 1, "a": 2, "aa": 3, "B": 4, "": 5, "é": 6, "z": 7, "😀": 8])
    // Bytes, not Swift's string order: decomposed "á" (61 CC 81) sorts before "b".
    try expectSame(["b": 1, "a\u{301}": 2])
  }

  @Test("keys and strings are escaped as JSONWriter escapes them")
  func escapes() throws {
    let awkward = [
      "\"", "\\", "/", "\n", "\r", "\t", "\u{8}", "\u{C}", "\u{0}", "\u{1F}", "\u{7F}",
    ]
    for string in awkward {
      try expectSame(string)
      try expectSame([string: string])
      try expectSame(["a" + string + "b": [string]])
    }
    // A control character sorts by its raw byte, before its escaped text would.
    try expectSame(["\u{1}": 1, "\\": 2, "0": 3])
  }

  @Test("top-level fragments, empty containers and nil")
  func fragments() throws {
    try expectSame(42)
    try expectSame("text")
    try expectSame(true)
    try expectSame(Int?.none)
    try expectSame([Int]())
    try expectSame([String: Int]())
    try expectSame(Empty())
    try expectSame([Empty()])
    try expectSame(["e": Empty()])
    #expect(try text(Empty()) == "{}")
  }

  // MARK: Numbers

  @Test("integers of every width, Int64.min through UInt64.max beyond which a double is stored")
  func integers() throws {
    try expectSame([Int64.min, Int64.min + 1, -1, 0, 1, Int64.max - 1, Int64.max])
    for integer: Int64 in [1 << 53, (1 << 53) + 1, (1 << 53) - 1, (1 << 53) + 2, -(1 << 53) - 1] {
      try expectSame(integer)
      try expectSame(Wrapped(integer))
      #expect(try text(integer) == String(integer))
    }
    try expectSame([Int.min, Int.max])
    try expectSame([Int8.min, Int8.max])
    try expectSame([Int16.min, Int16.max])
    try expectSame([Int32.min, Int32.max])
    try expectSame([UInt8.max])
    try expectSame([UInt16.max])
    try expectSame([UInt32.max])
    let bigUnsigned: [UInt64] = [
      0, UInt64(Int64.max), UInt64(Int64.max) + 1, UInt64(Int64.max) + 1025, UInt64.max - 1,
      UInt64.max, 18_446_744_073_709_550_591, 18_446_744_073_709_550_592,
      9_223_372_036_854_776_832, 9_223_372_036_854_776_833,
    ]
    for unsigned in bigUnsigned {
      try expectSame(unsigned)
      try expectSame(UInt(unsigned))
      try expectSame(["k": unsigned])
      try expectSame(Wrapped(unsigned))
    }
    #expect(try text(UInt64.max) == "1.8446744073709552e+19")
    var generator = SeededGenerator(seed: 11)
    for _ in 0..<2000 {
      let bits = generator.next()
      try expectSame(Wrapped(Int64(bitPattern: bits) >> (bits & 63)))
      try expectSame(Wrapped(bits >> (bits >> 58)))
    }
  }

  @Test("Int128 and UInt128: integers within Int64, the nearest double beyond")
  func wideIntegers() throws {
    guard #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
      return
    }
    let signed: [Int128] = [
      .min, .max, 0, -1, Int128(Int64.min), Int128(Int64.min) - 1, Int128(Int64.max),
      Int128(Int64.max) + 1,
    ]
    for integer in signed {
      try expectSame(integer)
      try expectSame([integer])
      try expectSame(Wrapped(integer))
    }
    for integer: UInt128 in [.max, 0, UInt128(UInt64.max), UInt128(Int64.max) + 1] {
      try expectSame(integer)
      try expectSame([integer])
      try expectSame(Wrapped(integer))
    }
  }

  @Test("a whole Double up to 2^53 is stored as an integer, as JSONEncoder and the reader made it")
  func wholeDoubles() throws {
    #expect(try text(1.0) == "1")
    #expect(try text(-0.0) == "-0.0")
    #expect(try text(0.0) == "0")
    #expect(try text(0x1p53) == "9007199254740992")
    #expect(try text(Double(0x1p53).nextUp) == "9.007199254740994e+15")
    #expect(try text(1e16) == "1e+16")
    let doubles: [Double] = [
      0, -0.0, 1, -1, 0.5, 1e-5, 1e-4, 0.1, 1e15, 1e16, 1e22, 1e23, .leastNonzeroMagnitude,
      -.leastNonzeroMagnitude,
      0x1p53, -0x1p53, 0x1p53 + 2, -0x1p53 - 2, 0x1p53 - 1, -0x1p53 + 1, 0x1p53 + 4,
      Double(0x1p53).nextDown, Double(0x1p53).nextUp, 0x1p63, -0x1p63, 0x1p64,
      .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .leastNormalMagnitude,
      .leastNonzeroMagnitude, .pi, 123_456_789.125, -2.5, 1.7976931348623157e308,
    ]
    for double in doubles {
      try expectSame(double)
      try expectSame([double])
      try expectSame(["d": double])
      try expectSame(Wrapped(double))
    }
  }

  @Test("random doubles, of any bit pattern and everyday magnitudes")
  func randomDoubles() throws {
    var generator = SeededGenerator(seed: 12)
    for _ in 0..<3000 {
      let anyBits = Double(bitPattern: generator.next())
      let integral = Double(Int64.random(in: -(1 << 55)...(1 << 55), using: &generator))
      let everyday = Double.random(in: -1e6...1e6, using: &generator)
      for double in [anyBits, integral, everyday] where double.isFinite {
        try expectSame(Wrapped(double))
      }
    }
  }

  @Test(
    "an array of each scalar type is written in one go as JSONEncoder writes it, alone and in a struct"
  )
  func arraysOfScalars() throws {
    try expectSame([true, false])
    try expectSame(["a", "\u{0}\"é"])
    try expectSame([1.5, -0.0, 2, 1e300])
    try expectSame([Float(0.1), 3])
    try expectSame([Int.min, 0, Int.max])
    try expectSame([Int8.min, Int8.max])
    try expectSame([Int16.min, Int16.max])
    try expectSame([Int32.min, Int32.max])
    try expectSame([Int64.min, Int64.max])
    try expectSame([UInt.max, 0])
    try expectSame([UInt8.max, 0])
    try expectSame([UInt16.max])
    try expectSame([UInt32.max])
    try expectSame([UInt64.max, 1 << 63, 0])
    try expectSame(Wrapped([Int8(1), 2]))
    try expectSame([[1, 2], [3]])
    try expectSame([Int]())
    try expectSame(Wrapped([String]()))
    // A non-finite element: the error names its index.
    try expectBothThrow([1.0, .nan])
    try expectBothThrow(Wrapped([Float(1), .infinity]))
  }

  @Test("Float goes through its own description, then is read as a Double")
  func floats() throws {
    #expect(try text(Float(0.1)) == "0.1")
    #expect(try text(Float(1)) == "1")
    let floats: [Float] = [
      0, -0.0, 0.1, 1, -1, 16_777_215, 16_777_216, Float(16_777_216).nextUp, 16_777_218, 33_554_432,
      1e-5, 1e10, 1e20,
      .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .leastNormalMagnitude,
      .leastNonzeroMagnitude, .pi, 3.4028235e38, Float(0x1p24).nextDown,
    ]
    for float in floats {
      try expectSame(float)
      try expectSame([float])
      try expectSame(Wrapped(float))
    }
    var generator = SeededGenerator(seed: 13)
    for _ in 0..<3000 {
      let float = Float(bitPattern: UInt32(truncatingIfNeeded: generator.next()))
      if float.isFinite { try expectSame(Wrapped(float)) }
    }
  }

  @Test("NaN and the infinities throw EncodingError.invalidValue with the coding path")
  func nonFinite() throws {
    for double in [Double.nan, .infinity, -.infinity] {
      try expectBothThrow(double)
      try expectBothThrow([double])
      try expectBothThrow(Wrapped(double))
      try expectBothThrow(Wrapped([1, double]))
      try expectBothThrow(Wrapped(Float(double)))
      try expectBothThrow([Float(double)])
    }
    try expectBothThrow(Date(timeIntervalSinceReferenceDate: .nan))
    try expectBothThrow(Wrapped(Date(timeIntervalSinceReferenceDate: .infinity)))
    let error = #expect(throws: EncodingError.self) {
      try StoredJSONEncoder.encode(["outer": Wrapped(Double.nan)])
    }
    guard case .invalidValue(_, let context)? = error else { return }
    #expect(context.codingPath.map(\.stringValue) == ["outer", "value"])
  }

  @Test("Decimal is stored as the number its description reads as; NaN throws")
  func decimals() throws {
    let texts = [
      "0", "1", "-1", "0.1", "3.14159", "-2.5", "123456789012345678901234567890",
      "9223372036854775807", "9223372036854775808", "-9223372036854775808",
      "-9223372036854775809", "1e100", "1e-100", "12345678901234567890123456789012345678",
      "0.00001", "9007199254740993",
    ]
    for text in texts {
      let decimal = try #require(Decimal(string: text))
      try expectSame(decimal)
      try expectSame([decimal])
      try expectSame(Wrapped(decimal))
    }
    try expectSame(Decimal.greatestFiniteMagnitude)
    try expectSame(Decimal.leastNonzeroMagnitude)
    try expectBothThrow(Decimal.nan)
    try expectBothThrow(Wrapped(Decimal.nan))
  }

  // MARK: Foundation types

  @Test("Date as seconds since 2001, Data as base64, URL as its absolute string")
  func foundationTypes() throws {
    let dates = [
      Date(timeIntervalSinceReferenceDate: 0), Date(timeIntervalSinceReferenceDate: -1.5),
      Date(timeIntervalSince1970: 1_700_000_000.123), Date.distantPast, Date.distantFuture,
    ]
    for date in dates {
      try expectSame(date)
      try expectSame([date])
      try expectSame(Wrapped(date))
      try expectSame(Wrapped(Optional(date)))
    }
    for data in [Data(), Data([0]), Data([0xFF, 0xFE, 0xFD]), Data((0..<200).map { UInt8($0) })] {
      try expectSame(data)
      try expectSame([data])
      try expectSame(Wrapped(data))
    }
    let base = URL(string: "https://example.com/a/")!
    let urls = [
      URL(string: "https://example.com/path?q=1&r=\"2\"#frag")!,
      URL(string: "b/c?d", relativeTo: base)!, URL(fileURLWithPath: "/tmp/some file"),
      URL(string: "mailto:someone@example.com")!,
    ]
    for url in urls {
      try expectSame(url)
      try expectSame([url])
      try expectSame(Wrapped(url))
      try expectSame(Wrapped(Optional(url)))
    }
    // Not URL's own keyed form.
    #expect(try text(URL(string: "b", relativeTo: base)!) == #""https://example.com/a/b""#)
  }

  // MARK: Collections

  @Test("dictionaries keyed by String, Int and other types, sets and optionals")
  func collections() throws {
    try expectSame([3: "c", 1: "a", -2: "b"])
    try expectSame([true: 1, false: 0])
    try expectSame([1.5: "x"])
    if #available(macOS 12.3, iOS 15.4, tvOS 15.4, watchOS 8.5, *) {
      try expectSame([Color.red: 1, Color.blue: 2])
    }
    try expectSame(Set(["x", "y", "z", "é"]))
    try expectSame(Set([1, 2, 3]))
    try expectSame([1, nil, 3] as [Int?])
    try expectSame([nil, "a"] as [String?])
    try expectSame(["a": nil, "b": 1] as [String: Int?])
    try expectSame(Optionals(skipped: nil, written: nil))
    try expectSame(Optionals(skipped: 1, written: 2))
    try expectSame([[1, 2], [], [3]])
    try expectSame(ContiguousArray([1.5, 2]))
    try expectSame([[String: [Int]]]([["a": [1]], [:]]))
  }

  @Test("enums with associated values use nested keyed and unkeyed containers")
  func enums() throws {
    let shapes: [Shape] = [
      .circle(radius: 1.5), .point, .polygon([1, 2], closed: true), .labelled("x", nil),
      .nested(.circle(radius: 0)),
    ]
    try expectSame(shapes)
    for shape in shapes { try expectSame(shape) }
  }

  @Test("class inheritance with superEncoder() and superEncoder(forKey:)")
  func inheritance() throws {
    try expectSame(Child(base: 1, extra: "x"))
    try expectSame([Child(base: 2, extra: "y")])
    try expectSame(KeyedSuper(base: 3, extra: "z"))
    try expectSame(UnkeyedSuper(base: 4, extra: "w"))
    try expectSame(EmptySuper())
  }

  // MARK: Every typed call of the containers

  @Test("the typed encode of every scalar type, in keyed, unkeyed and single-value containers")
  func typedScalars() throws {
    for value in [Scalars.extremes, Scalars.zeros] {
      try expectSame(value)
      try expectSame(ScalarRow(value))
      try expectSame(["rows": [ScalarRow(value)]])
      try expectSame(
        try JSONDecoder().decode(OptionalScalars.self, from: JSONEncoder().encode(value)))
      // Each member alone, through its type's own encode(to:) and a single-value container.
      for member in Mirror(reflecting: value).children {
        let encodable = member.value as? any Encodable
        #expect(encodable != nil)
        if let encodable { try expectSame(encodable) }
      }
    }
    try expectSame(OptionalScalars())
    #expect(try text(OptionalScalars()) == "{}")
    #expect(try text(ScalarRow(.zeros)) == #"[false,"",0,0,0,0,0,0,0,0,0,0,0,0]"#)
    if #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) {
      for (signed, unsigned) in [(Int128.min, UInt128.max), (0, 0), (-1, UInt128(UInt64.max))] {
        let value = WideIntegers(
          int128: signed, uint128: unsigned, row: .init(int128: signed, uint128: unsigned))
        try expectSame(value)
      }
    }
  }

  @Test("an invalid value inside a container throws at JSONEncoder's coding path")
  func invalidValuePaths() throws {
    var nanRow = Scalars.zeros
    nanRow.double = .nan
    var infiniteRow = Scalars.zeros
    infiniteRow.float = -.infinity
    var infiniteMember = Scalars.zeros
    infiniteMember.float = .infinity
    let nanDate = Date(timeIntervalSinceReferenceDate: .nan)
    let cases: [any Encodable] = [
      ["rows": [ScalarRow(nanRow)]], [ScalarRow(infiniteRow)], ["dates": [nanDate]],
      [infiniteMember], ["nan": nanRow],
      Wrapped(Transparent(inner: nanDate)), Wrapped([1, Float.nan]),
    ]
    for value in cases {
      let ours = encodingErrorPath { try StoredJSONEncoder.encode(value) }
      let theirs = encodingErrorPath { try JSONEncoder().encode(value) }
      #expect(ours != nil && ours == theirs, "\(value)")
    }
    // JSONEncoder writes a NaN Decimal as the text NaN, which the reader then refuses (so
    // the old path threw too, without a path); this encoder throws at the value's path.
    let decimal = encodingErrorPath {
      try StoredJSONEncoder.encode([Wrapped([Transparent(inner: Decimal.nan)])])
    }
    #expect(decimal == ["Index 0 Optional(0)", "value nil", "Index 0 Optional(0)"])
  }

  @Test("super encoders: coding paths, scalars and arrays in them, as with JSONEncoder")
  func superEncoders() throws {
    let recorder = PathRecorder()
    let probe = Scripted { encoder in
      recorder.paths.append(["userInfo \(encoder.userInfo.count)"])
      var keyed = encoder.container(keyedBy: AnyKey.self)
      try keyed.encode(1, forKey: AnyKey("a"))
      // A superclass that encodes a single value, and one that encodes an array.
      let superEncoder = keyed.superEncoder()
      recorder.paths.append(
        described(superEncoder.codingPath) + ["userInfo \(superEncoder.userInfo.count)"])
      try 5.encode(to: superEncoder)
      let listEncoder = keyed.superEncoder(forKey: AnyKey("list"))
      recorder.paths.append(described(listEncoder.codingPath))
      try [Int8(1), nil].encode(to: listEncoder)
      var list = keyed.nestedUnkeyedContainer(forKey: AnyKey("l"))
      try list.encode("first")
      let element = list.superEncoder()
      recorder.paths.append(described(element.codingPath))
      try "second".encode(to: element)
    }
    _ = try JSONEncoder().encode(["top": probe])
    var expected = recorder.paths
    recorder.paths = []
    try expectSame(["top": probe])
    // JSONEncoder leaves the key of a nested container out of its elements' paths; this
    // encoder keeps it (see codingPaths).
    #expect(expected.count == 4)
    expected[3] = ["top nil", "l nil", "Index 1 Optional(1)"]
    #expect(Array(recorder.paths.prefix(4)) == expected)
    #expect(try text(probe) == #"{"a":1,"l":["first","second"],"list":[1,null],"super":5}"#)
  }

  @Test("a subclass and its superclass may share one encoder and its container")
  func sharedEncoder() throws {
    try expectSame(Child(base: 1, extra: "x", sharesEncoder: true))
    try expectSame([Child(base: 2, extra: "y", sharesEncoder: true)])
    #expect(try text(Child(base: 1, extra: "x", sharesEncoder: true)) == #"{"base":1,"extra":"x"}"#)
    let twoArrays = Scripted { encoder in
      var first = encoder.unkeyedContainer()
      try first.encode(1)
      var second = encoder.unkeyedContainer()
      try second.encode(2)
      try first.encode(3)
    }
    try expectSame(twoArrays)
    #expect(try text(twoArrays) == "[1,2,3]")
  }

  @Test("objects of more than 16 members: sorted, one member per key")
  func largeObjects() throws {
    var members: [String: Int] = [:]
    for index in 0..<40 { members["k\(index)"] = index }
    try expectSame(members)
    members["é"] = -1
    members["e\u{301}x"] = -2
    try expectSame(members)
    let repeated = Scripted { encoder in
      var container = encoder.container(keyedBy: AnyKey.self)
      for index in 0..<20 { try container.encode(index, forKey: AnyKey("m\(index % 17)")) }
    }
    try expectSame(repeated)
    // Keys alike in their first eight bytes are ordered by the rest.
    let alike = ["abcdefgh2": 1, "abcdefgh10": 2, "abcdefgh": 3, "abcdefgi": 4]
    try expectSame(alike)
    #expect(try text(alike) == #"{"abcdefgh":3,"abcdefgh10":2,"abcdefgh2":1,"abcdefgi":4}"#)
    #expect(try text(repeated).hasPrefix(#"{"m0":17,"m1":18,"m10":10,"#))
  }

  @Test("long strings and keys, and arrays of UInt and UInt64, are written as JSONEncoder's")
  func longAndUnsigned() throws {
    let long = String(repeating: "ab\"é", count: 3000)
    try expectSame(long)
    try expectSame([long: [long]])
    try expectSame([UInt(0), UInt.max, UInt(Int.max)])
    try expectSame([UInt64(0), UInt64.max, UInt64(Int64.max) + 1])
  }

  // MARK: Container semantics

  @Test("a nested container written after its parent's later members still lands inside it")
  func interleaving() throws {
    try expectSame(Scripted.interleavedKeyed)
    try expectSame(Scripted.interleavedUnkeyed)
    try expectSame(Scripted.superElementLater)
    #expect(try text(Scripted.superElementLater) == #"["S",1,2]"#)
    #expect(try text(Scripted.interleavedKeyed) == #"{"a":{"x":2,"y":[3]},"b":1}"#)
  }

  @Test("a key encoded twice keeps its last value")
  func duplicateKeys() throws {
    for script in Scripted.duplicates {
      try expectSame(script)
    }
    #expect(try text(Scripted.duplicates[0]) == #"{"a":2}"#)
  }

  @Test("canonically equivalent keys are one member: the first spelling, the last value")
  func equivalentKeys() throws {
    let precomposed = "\u{E9}"
    let decomposed = "e\u{301}"
    for (first, second) in [
      (precomposed, decomposed), (decomposed, precomposed), ("K", "\u{212A}"),
    ] {
      try expectSame(Scripted.twoKeys(first, second))
      try expectSame(Scripted.twoNested(first, second))
      #expect(try text(Scripted.twoKeys(first, second)) == "{\"\(first)\":2}")
    }
  }

  @Test("values that encode nothing are {} when nested and an error at the top level")
  func emptyValues() throws {
    try expectSame(Wrapped(Nothing()))
    try expectSame([Nothing()])
    try expectSame(Wrapped(Optional(Nothing())))
    try expectBothThrow(Nothing())
    let error = #expect(throws: EncodingError.self) { try StoredJSONEncoder.encode(Nothing()) }
    guard case .invalidValue(_, let context)? = error else { return }
    #expect(context.debugDescription.contains("did not encode any values"))
  }

  @Test("single-value containers encode nested values at the same coding path")
  func singleValueNesting() throws {
    try expectSame(Scripted.singleThenKeyed)
    try expectSame(Scripted.singleArrayThenUnkeyed)
    try expectSame(Scripted.singleIntsThenUnkeyed)
    try expectSame(Transparent(inner: Wrapped([1, 2])))
  }

  @Test("an error thrown by encode(to:) comes out unchanged")
  func userErrors() {
    struct Refusal: Error, Equatable {}
    let refusing = Scripted { encoder in
      var container = encoder.container(keyedBy: AnyKey.self)
      try container.encode(1, forKey: AnyKey("a"))
      throw Refusal()
    }
    #expect(throws: Refusal()) { try StoredJSONEncoder.encode(refusing) }
    #expect(throws: Refusal()) { try StoredJSONEncoder.encode(["deep": [Wrapped(refusing)]]) }
    #expect(throws: Refusal()) { try JSONEncoder().encode(["deep": [Wrapped(refusing)]]) }
  }

  @Test("misusing the containers throws where JSONEncoder would stop the process")
  func misuse() {
    for script in Scripted.misuses {
      #expect(throws: EncodingError.self) { try StoredJSONEncoder.encode(script) }
    }
  }

  @Test("an encoder kept past its value's end reports no coding path, and using it throws")
  func staleEncoder() {
    final class Kept: @unchecked Sendable {
      var encoder: (any Encoder)?
    }
    let uses: [@Sendable (any Encoder) throws -> Void] = [
      { encoder in
        var container = encoder.container(keyedBy: AnyKey.self)
        try container.encode(1, forKey: AnyKey("x"))
      },
      { encoder in
        var container = encoder.unkeyedContainer()
        try container.encode(1)
      },
      { encoder in
        var container = encoder.singleValueContainer()
        try container.encode(1)
      },
    ]
    for use in uses {
      let kept = Kept()
      let keeping = Scripted { encoder in
        kept.encoder = encoder
        var container = encoder.singleValueContainer()
        try container.encode(0)
      }
      let script = Scripted { encoder in
        var container = encoder.unkeyedContainer()
        try container.encode(keeping)
        let stale = try #require(kept.encoder)
        #expect(stale.codingPath.isEmpty)
        try use(stale)
      }
      let error = #expect(throws: EncodingError.self) { try StoredJSONEncoder.encode(script) }
      guard case .invalidValue(_, let context)? = error else { continue }
      #expect(
        context.debugDescription == "an Encoder was used after the value it encodes was finished")
      #expect(context.codingPath.isEmpty)
    }
  }

  @Test("a coding path's keys remake themselves: an index from its integer, super from its name")
  func codingPathKeyTypes() throws {
    let script = Scripted { encoder in
      var container = encoder.container(keyedBy: AnyKey.self)
      var list = container.superEncoder().unkeyedContainer()
      try list.encode(1)
      try list.encode(Double.nan)
    }
    let error = #expect(throws: EncodingError.self) { try StoredJSONEncoder.encode(script) }
    guard case .invalidValue(_, let context)? = error else { return }
    #expect(
      context.codingPath.map(remade) == ["super: super, superx, nil", "Index 1: nil, nil, Index 1"])
  }

  @Test("coding paths: encoders and containers report where they are")
  func codingPaths() throws {
    let recorder = PathRecorder()
    _ = try StoredJSONEncoder.encode(["top": [PathProbe(recorder: recorder)]])
    // JSONEncoder leaves the keys of nested containers out of the paths of the values
    // encoded in them ("top", "Index 0", "deep"); this encoder keeps them.
    let expected = [
      ["top", "Index 0"], ["top", "Index 0"], ["top", "Index 0", "n"],
      ["top", "Index 0", "n", "Index 0"], ["top", "Index 0", "n", "Index 0", "deep"],
      ["top", "Index 0", "n", "Index 0", "deep"], ["top", "Index 0", "n", "Index 1"],
      ["top", "Index 0", "n", "Index 1"],
    ]
    #expect(recorder.paths == expected)
    let error = #expect(throws: EncodingError.self) {
      try StoredJSONEncoder.encode(["a": Wrapped([1, 2, Double.infinity])])
    }
    guard case .invalidValue(_, let context)? = error else { return }
    #expect(context.codingPath.map(\.stringValue) == ["a", "value", "Index 2"])
  }

  @Test("encodings at once on many threads, and one inside another, do not mix")
  func concurrentAndNested() throws {
    var generator = SeededGenerator(seed: 23)
    let orders = (0..<200).map { _ in Order.random(using: &generator) }
    // Nil for the few orders with no JSON form (a price too large for a Float).
    let expected = orders.map { try? oracle($0) }
    let mismatches = Mismatches()
    DispatchQueue.concurrentPerform(iterations: 8) { round in
      for (index, order) in orders.enumerated() where index % 8 != round {
        if (try? StoredJSONEncoder.encode(order)) != expected[index] { mismatches.add() }
      }
    }
    #expect(mismatches.count == 0)

    // An encode(to:) that runs the encoder itself, while its own encoding is under way.
    let inner = Scripted { encoder in
      var container = encoder.container(keyedBy: AnyKey.self)
      let text = try StoredJSONEncoder.encode(["z": [1, 2], "a": [3]])
      try container.encode(String(decoding: text, as: UTF8.self), forKey: AnyKey("text"))
      try container.encode(Wrapped([1.5, 2]), forKey: AnyKey("order"))
    }
    try expectSame([inner, inner])
  }

  // MARK: Depth

  @Test("arrays and objects nest 511 levels deep, JSONEncoder's limit, one short of the reader's")
  func depth() throws {
    for levels in [1, 510, 511, 512, 513] {
      try expectSame(Nest(levels: levels, leaf: .none))
      try expectSame(Nest(levels: levels, leaf: .object))
      try expectSame(Nest(levels: levels, leaf: .directArray))
      try expectSame(Nest(levels: levels, leaf: .optionalArray))
      try expectSame(nestedValue(levels: levels))
    }
    #expect(throws: EncodingError.self) {
      try StoredJSONEncoder.encode(Nest(levels: 512, leaf: .none))
    }
    _ = try StoredJSONEncoder.encode(Nest(levels: 511, leaf: .none))
    _ = try StoredJSONEncoder.encode(Nest(levels: 510, leaf: .directArray))
  }

  // MARK: Random values

  @Test("random JSONValue trees, encoded through JSONValue's own Codable conformance")
  func randomJSONValues() throws {
    var generator = SeededGenerator(seed: 21)
    for _ in 0..<3000 {
      try expectSame(randomJSONValue(using: &generator, depth: 0))
    }
  }

  @Test("random instances of nested Codable types")
  func randomInstances() throws {
    var generator = SeededGenerator(seed: 22)
    for _ in 0..<2000 {
      try expectSame(Order.random(using: &generator))
    }
  }

  // MARK: Measurement

  /// Prints the time this encoder and `JSONEncoder` alone take for 100,000 profiles, and
  /// the time of storing them through `put(encodable:)` today, through this encoder and
  /// `putEncoded`, and through `putEncoded` alone (medians of 5 rounds). Set STORED_JSON_MEASURE=1 and build with -c release;
  /// STORED_JSON_MEASURE_COUNT sets another number of profiles.
  @Test(
    "throughput against JSONEncoder (prints; STORED_JSON_MEASURE=1)",
    .enabled(if: ProcessInfo.processInfo.environment["STORED_JSON_MEASURE"] == "1"))
  func measure() throws {
    let environment = ProcessInfo.processInfo.environment
    let count = environment["STORED_JSON_MEASURE_COUNT"].flatMap { Int($0) } ?? 100_000
    let profiles = Profile.samples(count: count)
    let ids = (0..<count).map { "p\($0)" }
    let texts = try profiles.map { try StoredJSONEncoder.encode($0) }
    var rounds: [String: [Double]] = [:]
    func time(_ name: String, _ body: () throws -> Void) rethrows {
      let start = ProcessInfo.processInfo.systemUptime
      try body()
      rounds[name, default: []].append(ProcessInfo.processInfo.systemUptime - start)
    }
    var bytes = 0
    // The encoders first, before the store exists: its background work would share the CPU.
    for _ in 0..<5 {
      try time("JSONEncoder alone") {
        let encoder = JSONEncoder()
        for profile in profiles { bytes &+= try encoder.encode(profile).count }
      }
      try time("StoredJSONEncoder") {
        for profile in profiles { bytes &+= try StoredJSONEncoder.encode(profile).count }
      }
    }
    // Each store round on a fresh store, closed after it, so that no round pays for the
    // background work of another.
    func timeStoring(_ name: String, _ put: (KeyValueStore, Int) throws -> Void) throws {
      let directory = TemporaryDirectory("stored-json-measure")
      let store = try KeyValueStore(path: directory.storePath)
      try store.createTable("profiles")
      try time(name) {
        for index in 0..<count { try put(store, index) }
      }
      try store.close()
    }
    for _ in 0..<5 {
      try timeStoring("put(encodable:) today") { store, index in
        try store.put(encodable: profiles[index], id: ids[index], into: "profiles")
      }
      try timeStoring("StoredJSONEncoder + putEncoded") { store, index in
        try store.putEncoded(
          StoredJSONEncoder.encode(profiles[index]), id: ids[index], into: "profiles")
      }
      try timeStoring("putEncoded alone") { store, index in
        try store.putEncoded(texts[index], id: ids[index], into: "profiles")
      }
    }
    let medians = rounds.mapValues { $0.sorted()[$0.count / 2] }
    let baseline = medians["JSONEncoder alone"]!
    for name in [
      "JSONEncoder alone", "StoredJSONEncoder", "put(encodable:) today",
      "StoredJSONEncoder + putEncoded", "putEncoded alone",
    ] {
      let median = medians[name]!
      let all = rounds[name]!.map { Int(($0 * 1000).rounded()) }
      print(
        "\(name): \(Int((median * 1000).rounded())) ms for \(count) (rounds \(all) ms), "
          + "\((baseline / median * 100).rounded() / 100)x JSONEncoder alone's throughput")
    }
    #expect(bytes > 0)
  }
}

// MARK: - The oracle

/// What `put(encodable:)` stored before this encoder: JSONEncoder, the reader, the writer.
private func oracle<T: Encodable>(_ value: T) throws -> [UInt8] {
  try JSONWriter.bytes(JSONReader.parse(Array(JSONEncoder().encode(value))))
}

private func text<T: Encodable>(_ value: T) throws -> String {
  String(decoding: try StoredJSONEncoder.encode(value), as: UTF8.self)
}

/// Expects the encoder and the oracle to give the same bytes, or both to throw.
private func expectSame<T: Encodable>(
  _ value: T, sourceLocation: SourceLocation = #_sourceLocation
) throws {
  let ours = Result { try StoredJSONEncoder.encode(value) }
  let expected = Result { try oracle(value) }
  switch (ours, expected) {
  case (.success(let ours), .success(let expected)):
    #expect(
      String(decoding: ours, as: UTF8.self) == String(decoding: expected, as: UTF8.self),
      sourceLocation: sourceLocation)
    #expect(ours == expected, sourceLocation: sourceLocation)
  case (.failure(let error), .failure):
    #expect(error is EncodingError, "\(error)", sourceLocation: sourceLocation)
  case (.success(let ours), .failure(let error)):
    Issue.record(
      "encoded \(String(decoding: ours, as: UTF8.self)) where the oracle threw \(error)",
      sourceLocation: sourceLocation)
  case (.failure(let error), .success(let expected)):
    Issue.record(
      "threw \(error) where the oracle gave \(String(decoding: expected, as: UTF8.self))",
      sourceLocation: sourceLocation)
  }
}

private func expectBothThrow<T: Encodable>(
  _ value: T, sourceLocation: SourceLocation = #_sourceLocation
) throws {
  #expect(throws: (any Error).self, sourceLocation: sourceLocation) { try oracle(value) }
  #expect(throws: EncodingError.self, sourceLocation: sourceLocation) {
    try StoredJSONEncoder.encode(value)
  }
}

// MARK: - Types to encode

private struct Profile: Codable {
  var id: Int
  var name: String
  var homepage: URL
  var scores: [Int]
  var joined: Date
  var nickname: String?

  /// Varied profiles, half of them without a nickname.
  static func samples(count: Int) -> [Profile] {
    var generator = SeededGenerator(seed: 99)
    let names = ["Ada", "Grace Hopper", "Linus", "Zoë", "Tang Qiao", "Émile", "李雷"]
    return (0..<count).map { index in
      let scoreCount = Int.random(in: 0...8, using: &generator)
      return Profile(
        id: index &* 7919,
        name: names[index % names.count] + " \(index)",
        homepage: URL(string: "https://example.com/users/\(index)?tab=profile")!,
        scores: (0..<scoreCount).map { _ in Int.random(in: -1000...100_000, using: &generator) },
        joined: Date(
          timeIntervalSinceReferenceDate: Double.random(in: 0...800_000_000, using: &generator)),
        nickname: index % 2 == 0 ? nil : "nick\(index)")
    }
  }
}

/// One value under the key "value", through the generic `encode(_:forKey:)`.
private struct Wrapped<T: Encodable>: Encodable {
  var value: T
  init(_ value: T) { self.value = value }
}

private struct Empty: Encodable {}

/// Encodes nothing at all: not even a container.
private struct Nothing: Encodable {
  func encode(to encoder: any Encoder) throws {}
}

/// Encodes its inner value through a single-value container.
private struct Transparent<T: Encodable>: Encodable {
  var inner: T
  func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(inner)
  }
}

private struct Optionals: Encodable {
  var skipped: Int?
  var written: Int?

  enum CodingKeys: String, CodingKey { case skipped, written }

  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encodeIfPresent(skipped, forKey: .skipped)
    try container.encode(written, forKey: .written)
  }
}

private enum Color: String, Codable {
  case red, blue
}

@available(macOS 12.3, iOS 15.4, tvOS 15.4, watchOS 8.5, *)
extension Color: CodingKeyRepresentable {}

private indirect enum Shape: Codable {
  case circle(radius: Double)
  case point
  case polygon([Int], closed: Bool)
  case labelled(String, Int?)
  case nested(Shape)
}

private class Base: Encodable {
  var base: Int
  init(base: Int) { self.base = base }
}

private final class Child: Base {
  var extra: String
  /// Whether the superclass writes into this class's encoder, as subclasses often have it
  /// do, rather than into a super encoder.
  var sharesEncoder: Bool
  init(base: Int, extra: String, sharesEncoder: Bool = false) {
    self.extra = extra
    self.sharesEncoder = sharesEncoder
    super.init(base: base)
  }
  enum CodingKeys: String, CodingKey { case extra }
  override func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(extra, forKey: .extra)
    try super.encode(to: sharesEncoder ? encoder : container.superEncoder())
  }
}

private final class KeyedSuper: Base {
  var extra: String
  init(base: Int, extra: String) {
    self.extra = extra
    super.init(base: base)
  }
  enum CodingKeys: String, CodingKey { case extra, parent }
  override func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try super.encode(to: container.superEncoder(forKey: .parent))
    try container.encode(extra, forKey: .extra)
  }
}

private final class UnkeyedSuper: Base {
  var extra: String
  init(base: Int, extra: String) {
    self.extra = extra
    super.init(base: base)
  }
  override func encode(to encoder: any Encoder) throws {
    var container = encoder.unkeyedContainer()
    try container.encode(extra)
    try super.encode(to: container.superEncoder())
    try container.encode(extra + "!")
  }
}

/// A super encoder that nothing is encoded into: `{}` under "super".
private struct EmptySuper: Encodable {
  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: AnyKey.self)
    try container.encode(1, forKey: AnyKey("a"))
    _ = container.superEncoder()
  }
}

private struct AnyKey: CodingKey {
  var stringValue: String
  init(_ string: String) { stringValue = string }
  init?(stringValue: String) { self.stringValue = stringValue }
  init?(intValue: Int) { nil }
  var intValue: Int? { nil }
}

/// A value whose `encode(to:)` is given as a closure, for container sequences that
/// synthesized conformances never produce.
private struct Scripted: Encodable, Sendable {
  var script: @Sendable (any Encoder) throws -> Void
  func encode(to encoder: any Encoder) throws { try script(encoder) }

  static let interleavedKeyed = Scripted { encoder in
    var container = encoder.container(keyedBy: AnyKey.self)
    var nested = container.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey("a"))
    var list = nested.nestedUnkeyedContainer(forKey: AnyKey("y"))
    try container.encode(1, forKey: AnyKey("b"))
    try nested.encode(2, forKey: AnyKey("x"))
    try list.encode(3)
  }

  static let interleavedUnkeyed = Scripted { encoder in
    var container = encoder.unkeyedContainer()
    var first = container.nestedUnkeyedContainer()
    var second = container.nestedContainer(keyedBy: AnyKey.self)
    try container.encode("last")
    try second.encode(2, forKey: AnyKey("two"))
    try first.encode(1)
    try container.encodeNil()
  }

  /// A super encoder's element goes where the array ended when it was made, whatever was
  /// added since.
  static let superElementLater = Scripted { encoder in
    var container = encoder.unkeyedContainer()
    let superEncoder = container.superEncoder()
    try container.encode(1)
    try container.encode(2)
    try "S".encode(to: superEncoder)
  }

  static let duplicates: [Scripted] = [
    Scripted { encoder in
      var container = encoder.container(keyedBy: AnyKey.self)
      try container.encode(1, forKey: AnyKey("a"))
      try container.encode(2, forKey: AnyKey("a"))
    },
    // A value replaces a nested container; the container's later contents are lost.
    Scripted { encoder in
      var container = encoder.container(keyedBy: AnyKey.self)
      var nested = container.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey("a"))
      try nested.encode(1, forKey: AnyKey("x"))
      try container.encode(5, forKey: AnyKey("a"))
      try nested.encode(2, forKey: AnyKey("y"))
    },
    // A nested container asked for twice is the same container.
    Scripted { encoder in
      var container = encoder.container(keyedBy: AnyKey.self)
      var first = container.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey("a"))
      try first.encode(1, forKey: AnyKey("x"))
      var second = container.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey("a"))
      try second.encode(2, forKey: AnyKey("y"))
      var list = container.nestedUnkeyedContainer(forKey: AnyKey("l"))
      try list.encode(1)
      var again = container.nestedUnkeyedContainer(forKey: AnyKey("l"))
      try again.encode(2)
    },
    // A nested container for a key holding an encoded object goes on with that object.
    Scripted { encoder in
      var container = encoder.container(keyedBy: AnyKey.self)
      try container.encode(["q": 1], forKey: AnyKey("n"))
      var nested = container.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey("n"))
      try nested.encode(2, forKey: AnyKey("x"))
      try container.encode(Wrapped([1]), forKey: AnyKey("w"))
      var list = container.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey("w"))
      try list.encode(true, forKey: AnyKey("z"))
    },
    // The same for arrays, those written in one go included.
    Scripted { encoder in
      var container = encoder.container(keyedBy: AnyKey.self)
      try container.encode([Int?.none], forKey: AnyKey("n"))
      var nested = container.nestedUnkeyedContainer(forKey: AnyKey("n"))
      try nested.encode(2)
      try container.encode([1, 2], forKey: AnyKey("a"))
      var more = container.nestedUnkeyedContainer(forKey: AnyKey("a"))
      try more.encode(3)
      try Wrapped(4).encode(to: more.superEncoder())
      try more.encode(5)
    },
    // A super encoder sets its member when it is released, over a value set before.
    Scripted { encoder in
      var container = encoder.container(keyedBy: AnyKey.self)
      try container.encode(1, forKey: AnyKey("super"))
      try Wrapped(2).encode(to: container.superEncoder())
      try container.encode(3, forKey: AnyKey("b"))
    },
    // Two encoded values under one key: the later one, whatever the kinds.
    Scripted { encoder in
      var container = encoder.container(keyedBy: AnyKey.self)
      try container.encode([1, 2], forKey: AnyKey("a"))
      try container.encode(Wrapped("x"), forKey: AnyKey("a"))
      try container.encodeNil(forKey: AnyKey("b"))
      try container.encode(Date(timeIntervalSinceReferenceDate: 1), forKey: AnyKey("b"))
    },
  ]

  static func twoKeys(_ first: String, _ second: String) -> Scripted {
    Scripted { encoder in
      var container = encoder.container(keyedBy: AnyKey.self)
      try container.encode(1, forKey: AnyKey(first))
      try container.encode(2, forKey: AnyKey(second))
    }
  }

  static func twoNested(_ first: String, _ second: String) -> Scripted {
    Scripted { encoder in
      var container = encoder.container(keyedBy: AnyKey.self)
      var one = container.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey(first))
      try one.encode(1, forKey: AnyKey("a"))
      var two = container.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey(second))
      try two.encode(2, forKey: AnyKey("b"))
      try container.encode(3, forKey: AnyKey("z"))
    }
  }

  static let singleThenKeyed = Scripted { encoder in
    var single = encoder.singleValueContainer()
    try single.encode(["z": 1])
    var container = encoder.container(keyedBy: AnyKey.self)
    try container.encode(2, forKey: AnyKey("a"))
  }

  static let singleArrayThenUnkeyed = Scripted { encoder in
    var single = encoder.singleValueContainer()
    try single.encode([Wrapped(1)])
    var container = encoder.unkeyedContainer()
    try container.encode(2)
  }

  static let singleIntsThenUnkeyed = Scripted { encoder in
    var single = encoder.singleValueContainer()
    try single.encode([1, 2])
    var container = encoder.unkeyedContainer()
    try container.encode(3)
    try Wrapped(4).encode(to: container.superEncoder())
  }

  /// Sequences JSONEncoder stops the process on.
  static let misuses: [Scripted] = [
    Scripted { encoder in
      var single = encoder.singleValueContainer()
      try single.encode(1)
      try single.encode(2)
    },
    Scripted { encoder in
      _ = encoder.container(keyedBy: AnyKey.self)
      var list = encoder.unkeyedContainer()
      try list.encode(1)
    },
    Scripted { encoder in
      var single = encoder.singleValueContainer()
      try single.encode(1)
      var container = encoder.container(keyedBy: AnyKey.self)
      try container.encode(1, forKey: AnyKey("a"))
    },
    Scripted { encoder in
      var container = encoder.container(keyedBy: AnyKey.self)
      try container.encode(1, forKey: AnyKey("a"))
      var nested = container.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey("a"))
      try nested.encode(1, forKey: AnyKey("b"))
    },
    Scripted { encoder in
      var container = encoder.container(keyedBy: AnyKey.self)
      try container.encode(1, forKey: AnyKey("a"))
      var nested = container.nestedUnkeyedContainer(forKey: AnyKey("a"))
      try nested.encode(1)
    },
    Scripted { encoder in
      var list = encoder.unkeyedContainer()
      try list.encode(1)
      var container = encoder.container(keyedBy: AnyKey.self)
      try container.encode(1, forKey: AnyKey("a"))
    },
  ]
}

/// The keys of `path` as a user sees them: string and integer values.
private func described(_ path: [any CodingKey]) -> [String] {
  path.map { "\($0.stringValue) \(String(describing: $0.intValue))" }
}

/// The coding path of the `EncodingError.invalidValue` that `body` throws, or nil.
private func encodingErrorPath(_ body: () throws -> Any) -> [String]? {
  do {
    _ = try body()
    return nil
  } catch EncodingError.invalidValue(_, let context) {
    return described(context.codingPath)
  } catch {
    return nil
  }
}

/// Counts failures from many threads.
private final class Mismatches: @unchecked Sendable {
  private let lock = NSLock()
  private var failures = 0

  func add() {
    lock.lock()
    failures += 1
    lock.unlock()
  }

  var count: Int {
    lock.lock()
    defer { lock.unlock() }
    return failures
  }
}

/// Records the coding paths its encoder and containers report.
private final class PathRecorder: @unchecked Sendable {
  var paths: [[String]] = []
}

private struct PathProbe: Encodable {
  let recorder: PathRecorder
  func encode(to encoder: any Encoder) throws {
    recorder.paths.append(encoder.codingPath.map(\.stringValue))
    var container = encoder.container(keyedBy: AnyKey.self)
    recorder.paths.append(container.codingPath.map(\.stringValue))
    var nested = container.nestedUnkeyedContainer(forKey: AnyKey("n"))
    recorder.paths.append(nested.codingPath.map(\.stringValue))
    var inner = nested.nestedContainer(keyedBy: AnyKey.self)
    recorder.paths.append(inner.codingPath.map(\.stringValue))
    try inner.encode(Probe(recorder: recorder), forKey: AnyKey("deep"))
    try nested.encode(Probe(recorder: recorder))
  }

  struct Probe: Encodable {
    let recorder: PathRecorder
    func encode(to encoder: any Encoder) throws {
      recorder.paths.append(encoder.codingPath.map(\.stringValue))
      var single = encoder.singleValueContainer()
      recorder.paths.append(single.codingPath.map(\.stringValue))
      try single.encode(1)
    }
  }
}

/// `levels` arrays nested in one another around a leaf.
private struct Nest: Encodable {
  enum Leaf {
    /// The innermost array is empty.
    case none
    /// The innermost array holds an empty object.
    case object
    /// The innermost array holds an `[Int]`, which the encoder writes in one go.
    case directArray
    /// The innermost array holds an `[Int?]`, which it writes element by element.
    case optionalArray
  }

  var levels: Int
  var leaf: Leaf

  func encode(to encoder: any Encoder) throws {
    var container = encoder.unkeyedContainer()
    if levels > 1 {
      try container.encode(Nest(levels: levels - 1, leaf: leaf))
      return
    }
    switch leaf {
    case .none: break
    case .object: try container.encode(Empty())
    case .directArray: try container.encode([1, 2])
    case .optionalArray: try container.encode([1, nil] as [Int?])
    }
  }
}

private func nestedValue(levels: Int) -> JSONValue {
  var value: JSONValue = ["leaf": []]
  for level in 1..<levels { value = level.isMultiple(of: 2) ? ["k": value] : [value] }
  return value
}

/// A random value of every kind, at most four levels deep, with awkward strings and keys.
private func randomJSONValue(using generator: inout SeededGenerator, depth: Int) -> JSONValue {
  switch Int.random(in: 0..<(depth < 4 ? 8 : 6), using: &generator) {
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
      if double.isFinite { return .double(double) }
    }
  case 4, 5:
    return .string(randomString(using: &generator))
  case 6:
    return .array(
      (0..<Int.random(in: 0..<5, using: &generator)).map { _ in
        randomJSONValue(using: &generator, depth: depth + 1)
      })
  default:
    var object: [String: JSONValue] = [:]
    for _ in 0..<Int.random(in: 0..<6, using: &generator) {
      object[randomString(using: &generator)] = randomJSONValue(using: &generator, depth: depth + 1)
    }
    return .object(object)
  }
}

private func randomString(using generator: inout SeededGenerator) -> String {
  // Escaped, raw ASCII, multi-byte and combining characters, and "é" both ways.
  let pieces = [
    "a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\u{0}", "\u{1F}", "é", "e\u{301}",
    "中", "😀", "\u{301}", "K", "\u{212A}", "key",
  ]
  var string = ""
  for _ in 0..<Int.random(in: 0..<6, using: &generator) {
    string += pieces.randomElement(using: &generator)!
  }
  return string
}

private struct Order: Codable {
  var id: UInt64
  var items: [Item]
  var note: String?
  var total: Double
  var tags: Set<String>
  var counts: [String: Int]
  var byNumber: [Int: Bool]
  var kind: Kind
  var created: Date
  var attachment: Data?
  var link: URL?
  var ratios: [Float]

  struct Item: Codable {
    var sku: String
    var quantity: Int16
    var price: Float
    var discount: Decimal?
    var options: [String?]
  }

  enum Kind: Codable {
    case pickup(store: Int)
    case delivery(address: String, floor: Int?)
    case digital
  }

  static func random(using generator: inout SeededGenerator) -> Order {
    func string() -> String { randomString(using: &generator) }
    func double() -> Double {
      switch Int.random(in: 0..<3, using: &generator) {
      case 0: return Double(Int.random(in: -100...100, using: &generator))
      case 1: return Double.random(in: -1e6...1e6, using: &generator)
      default:
        let any = Double(bitPattern: generator.next())
        return any.isFinite ? any : 0
      }
    }
    let items = (0..<Int.random(in: 0...3, using: &generator)).map { _ in
      Item(
        sku: string(), quantity: Int16.random(in: .min ... .max, using: &generator),
        price: Float(double()),
        discount: Bool.random(using: &generator)
          ? Decimal(string: "\(Int.random(in: -999...999, using: &generator)).25") : nil,
        options: (0..<Int.random(in: 0...2, using: &generator)).map { _ in
          Bool.random(using: &generator) ? string() : nil
        })
    }
    let kinds: [Kind] = [
      .pickup(store: Int.random(in: 0...99, using: &generator)),
      .delivery(address: string(), floor: Bool.random(using: &generator) ? 3 : nil), .digital,
    ]
    var counts: [String: Int] = [:]
    for _ in 0..<Int.random(in: 0...3, using: &generator) {
      counts[string()] = Int.random(in: .min ... .max, using: &generator)
    }
    return Order(
      id: generator.next() >> (generator.next() & 63), items: items,
      note: Bool.random(using: &generator) ? string() : nil, total: double(),
      tags: Set((0..<Int.random(in: 0...3, using: &generator)).map { _ in string() }),
      counts: counts,
      byNumber: [Int.random(in: -5...5, using: &generator): Bool.random(using: &generator)],
      kind: kinds.randomElement(using: &generator)!,
      created: Date(timeIntervalSinceReferenceDate: double()),
      attachment: Bool.random(using: &generator)
        ? Data(
          (0..<Int.random(in: 0...5, using: &generator)).map { _ in
            UInt8.random(in: 0...255, using: &generator)
          }) : nil,
      link: Bool.random(using: &generator) ? URL(string: "https://example.com/o") : nil,
      ratios: (0..<Int.random(in: 0...2, using: &generator)).map { _ in Float(double()) })
  }
}
