import Foundation
import Testing
import YTKKeyValueStore

/// Putting and reading values: each put overload and each reader, the form YTKKeyValueStore
/// stored values in, exact round trips of numbers and strings, created times, and the errors
/// for values that cannot be stored or read as asked.
@Suite("KeyValueStore values")
struct KeyValueStoreValuesTests {
  private let directory = TemporaryDirectory("values")
  private let store: KeyValueStore
  private let table = "user_table"

  init() throws {
    store = try KeyValueStore(path: directory.storePath)
    try store.createTable(table)
  }

  // MARK: The seed's example and YTK's stored form

  @Test("the seed's example: an object put under an id reads back equal")
  func seedExample() throws {
    let user: JSONValue = ["id": 1, "name": "tangqiao", "age": 30]
    try store.put(user, id: "1", into: table)
    let queryUser = try #require(try store.object(id: "1", from: table))
    #expect(queryUser == user)
    #expect(queryUser["name"]?.stringValue == "tangqiao")
    #expect(queryUser.description == #"{"age":30,"id":1,"name":"tangqiao"}"#)
  }

  @Test("put(string:) is stored as YTK stored it, an array of one string")
  func stringStoredForm() throws {
    try store.put(string: "s", id: "s", into: table)
    #expect(try store.object(id: "s", from: table) == ["s"])
    #expect(try store.string(id: "s", from: table) == "s")
    #expect(try store.decode([String].self, id: "s", from: table) == ["s"])
  }

  @Test("put(number:) is stored as YTK stored it, an array of one number")
  func numberStoredForm() throws {
    try store.put(number: 42, id: "int", into: table)
    try store.put(number: 2.5, id: "double", into: table)
    #expect(try store.object(id: "int", from: table) == [42])
    #expect(try store.object(id: "double", from: table) == [2.5])
    #expect(try store.decode([Int].self, id: "int", from: table) == [42])
    #expect(try store.decode([Double].self, id: "double", from: table) == [2.5])
  }

  @Test("a bare JSON string or number put as a JSONValue reads through string, number, integer")
  func bareScalars() throws {
    try store.put(.string("bare"), id: "s", into: table)
    try store.put(.int(7), id: "i", into: table)
    try store.put(.double(0.5), id: "d", into: table)
    #expect(try store.string(id: "s", from: table) == "bare")
    #expect(try store.integer(id: "i", from: table) == 7)
    #expect(try store.number(id: "i", from: table) == 7)
    #expect(try store.number(id: "d", from: table) == 0.5)
    #expect(try store.object(id: "s", from: table) == "bare")
  }

  @Test("number(id:) reads integers as doubles; integer(id:) reads whole doubles")
  func numberConversions() throws {
    try store.put(number: 42, id: "int", into: table)
    try store.put(number: 2.0, id: "whole", into: table)
    try store.put(number: -3.0, id: "negative", into: table)
    #expect(try store.number(id: "int", from: table) == 42.0)
    #expect(try store.integer(id: "int", from: table) == 42)
    #expect(try store.integer(id: "whole", from: table) == 2)
    #expect(try store.integer(id: "negative", from: table) == -3)
  }

  @Test("a double stays a double and an integer an integer: 2.0 does not read back as 2")
  func doubleKeepsItsCase() throws {
    try store.put(number: 2.0, id: "double", into: table)
    try store.put(number: 2, id: "int", into: table)
    try store.put(["a": 1.0, "b": 1], id: "object", into: table)
    #expect(try store.object(id: "double", from: table) == .array([.double(2)]))
    #expect(try store.object(id: "int", from: table) == .array([.int(2)]))
    #expect(
      try store.object(id: "object", from: table) == .object(["a": .double(1), "b": .int(1)]))
  }

  @Test("a missing id reads as nil through every reader")
  func missingIDIsNil() throws {
    #expect(try store.object(id: "missing", from: table) == nil)
    #expect(try store.string(id: "missing", from: table) == nil)
    #expect(try store.number(id: "missing", from: table) == nil)
    #expect(try store.integer(id: "missing", from: table) == nil)
    #expect(try store.decode([String: Int].self, id: "missing", from: table) == nil)
    #expect(try store.item(id: "missing", from: table) == nil)
  }

  @Test("a put replaces the value under its id without adding an item")
  func overwrite() throws {
    try store.put(["v": 1], id: "1", into: table)
    try store.put(string: "now a string", id: "1", into: table)
    #expect(try store.string(id: "1", from: table) == "now a string")
    try store.put(number: 3.25, id: "1", into: table)
    #expect(try store.number(id: "1", from: table) == 3.25)
    try store.put(number: 9, id: "1", into: table)
    #expect(try store.integer(id: "1", from: table) == 9)
    #expect(try store.count(in: table) == 1)
    #expect(try store.allItems(in: table).map(\.object) == [[9]])
  }

  // MARK: Reading all items

  @Test("allItems gives every item once, sorted by id bytes, and count agrees")
  func allItemsSorted() throws {
    let ids = ["b", "a", "", "aa", "B", "10", "9", "é", "中", "😀", "a b", "z"]
    for (index, id) in ids.enumerated() {
      try store.put(["n": .int(Int64(index))], id: id, into: table)
    }
    let items = try store.allItems(in: table)
    let sortedIDs = ids.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    #expect(items.map(\.id) == sortedIDs)
    #expect(sortedIDs.first == "")
    for item in items {
      let index = try #require(ids.firstIndex(of: item.id))
      #expect(item.object == ["n": .int(Int64(index))])
      #expect(try store.item(id: item.id, from: table) == item)
    }
    #expect(try store.count(in: table) == ids.count)
  }

  @Test("an empty table has no items and a count of zero")
  func emptyTable() throws {
    #expect(try store.allItems(in: table) == [])
    #expect(try store.count(in: table) == 0)
  }

  @Test(
    "forEachItem visits the items allItems returns, in order, stops when asked, and does not see writes made during the visit"
  )
  func forEachItemVisits() throws {
    for number in 0..<50 {
      try store.put(["n": .int(Int64(number))], id: "id\(100 + number)", into: table)
    }
    let all = try store.allItems(in: table)
    var visited: [KeyValueItem] = []
    try store.forEachItem(in: table) { item in
      visited.append(item)
      try? store.put(["changed": true], id: "id100", into: table)
      try? store.delete(id: "id149", from: table)
      return true
    }
    #expect(visited == all)
    #expect(try store.item(id: "id100", from: table)?.object == ["changed": true])
    var first: [String] = []
    try store.forEachItem(in: table) { item in
      first.append(item.id)
      return first.count < 3
    }
    #expect(first == ["id100", "id101", "id102"])
    #expect(throws: KeyValueStoreError.self) { try store.forEachItem(in: "nowhere") { _ in true } }
  }

  @Test("a stored value that is not JSON ends forEachItem and allItems with .corrupted")
  func forEachItemNotJSON() throws {
    try store.put(["n": 1], id: "a", into: table)
    try store.logStore.put(Array("not json".utf8), forKey: Array("b".utf8), in: table)
    var seen: [String] = []
    let error = #expect(throws: KeyValueStoreError.self) {
      try store.forEachItem(in: table) { item in
        seen.append(item.id)
        return true
      }
    }
    #expect(error?.code == .corrupted)
    #expect(seen == ["a"])
    #expect(throws: KeyValueStoreError.self) { try store.allItems(in: table) }
  }

  @Test("a stored value that is not JSON: object(id:) and the reads built on it throw .corrupted")
  func objectNotJSON() throws {
    try store.logStore.put(Array("not json".utf8), forKey: Array("b".utf8), in: table)
    let mentions = ["\"b\"", "\"\(table)\"", "not valid JSON"]
    expectError(.corrupted, mentioning: mentions) { _ = try store.object(id: "b", from: table) }
    expectError(.corrupted, mentioning: mentions) { _ = try store.string(id: "b", from: table) }
    expectError(.corrupted, mentioning: mentions) { _ = try store.number(id: "b", from: table) }
    // The rest of the table reads on.
    try store.put(["n": 1], id: "a", into: table)
    #expect(try store.object(id: "a", from: table) == ["n": 1])
  }

  // MARK: Integers

  @Test(
    "integers round-trip exactly over all of Int64, through put(JSONValue) and put(number:)",
    arguments: [
      Int64.min, Int64.min + 1, -9_007_199_254_740_993, -1, 0, 1, 9_007_199_254_740_993,
      Int64.max - 1, Int64.max,
    ])
  func integerRoundTrip(value: Int64) throws {
    try store.put(.int(value), id: "json", into: table)
    try store.put(["n": .int(value), "list": [.int(value)]], id: "nested", into: table)
    try store.put(number: Int(value), id: "number", into: table)
    #expect(try store.object(id: "json", from: table) == .int(value))
    #expect(
      try store.object(id: "nested", from: table) == ["n": .int(value), "list": [.int(value)]])
    #expect(try store.object(id: "number", from: table) == .array([.int(value)]))
    #expect(try store.integer(id: "number", from: table) == Int(value))
    #expect(try store.integer(id: "json", from: table) == Int(value))
    #expect(try store.decode([Int64].self, id: "number", from: table) == [value])
  }

  // MARK: Doubles

  private static let doubles: [Double] = [
    0.1, 0.2, 0.30000000000000004, -0.0, 0.0, 1e308, -1e308,
    // Subnormals, written as bit patterns or parsed, since literals of them warn: 5e-324 (the
    // smallest), the largest, and a few between.
    Double(bitPattern: 1), -Double(bitPattern: 1), Double(bitPattern: 0x000F_FFFF_FFFF_FFFF),
    Double("1e-310")!, Double(bitPattern: 100), Double("1.2345678901234567e-315")!,
    -Double(bitPattern: 0x0008_0000_0000_0001),
    Double.leastNormalMagnitude, Double.greatestFiniteMagnitude, -Double.greatestFiniteMagnitude,
    Double.pi, 1.0 / 3.0, 123_456_789.123_456_79, 9_007_199_254_740_993.0, 1e21, 1e-7, 0.5,
    // Whole doubles, which must stay doubles: around 2^53, and at the edges of Int64.
    1.0, -1.0, 1e15, 1e16, 1e17, 123_456_789.0, 9_223_372_036_854_775_808.0,
    -9_223_372_036_854_775_808.0, 18_446_744_073_709_551_616.0,
  ]

  @Test(
    "doubles round-trip bit for bit, through put(number:) and inside objects", arguments: doubles)
  func doubleRoundTrip(value: Double) throws {
    try store.put(number: value, id: "number", into: table)
    try store.put(["d": .double(value), "list": [.double(value)]], id: "nested", into: table)
    let number = try #require(try store.number(id: "number", from: table))
    #expect(number.bitPattern == value.bitPattern)
    let wrapped = try #require(wrappedDouble(try store.object(id: "number", from: table)))
    #expect(wrapped.bitPattern == value.bitPattern)
    let nested = try #require(try store.object(id: "nested", from: table))
    guard case .double(let inObject)? = nested["d"], case .double(let inArray)? = nested["list"]?[0]
    else {
      Issue.record("expected doubles, got \(nested)")
      return
    }
    #expect(inObject.bitPattern == value.bitPattern)
    #expect(inArray.bitPattern == value.bitPattern)
    let decoded = try #require(try store.decode([Double].self, id: "number", from: table))
    #expect(decoded.map(\.bitPattern) == [value.bitPattern])
  }

  @Test("the subnormals written as bit patterns are the ones their decimal forms name")
  func subnormalLiterals() {
    #expect(Double("5e-324") == Double(bitPattern: 1))
    #expect(Double("2.2250738585072009e-308") == Double(bitPattern: 0x000F_FFFF_FFFF_FFFF))
  }

  @Test("-0.0 keeps its sign bit")
  func negativeZero() throws {
    try store.put(number: -0.0, id: "z", into: table)
    let value = try #require(try store.number(id: "z", from: table))
    #expect(value == 0)
    #expect(value.sign == .minus)
  }

  @Test("every subnormal of a sweep across the range reads back bit for bit")
  func subnormalSweep() throws {
    var values: [Double] = []
    var bits: UInt64 = 1
    while bits < Double.leastNormalMagnitude.bitPattern {
      values.append(Double(bitPattern: bits))
      values.append(-Double(bitPattern: bits | 0x5555))
      bits = bits &* 3 &+ 1
    }
    try store.put(.array(values.map { .double($0) }), id: "subnormals", into: table)
    let read = try #require(try store.object(id: "subnormals", from: table)?.arrayValue)
    #expect(read.count == values.count)
    for (stored, original) in zip(read, values) {
      guard case .double(let double) = stored else {
        Issue.record("\(stored) is not a double")
        continue
      }
      #expect(double.bitPattern == original.bitPattern, "\(original)")
    }
  }

  @Test(
    "NaN and the infinities are .invalidArgument naming the id and table, and nothing is stored",
    arguments: [Double.nan, -Double.nan, Double.infinity, -Double.infinity, Double.signalingNaN])
  func nonFiniteDoubles(value: Double) throws {
    try store.put(number: 1, id: "kept", into: table)
    expectError(.invalidArgument, mentioning: ["bad", table]) {
      try store.put(number: value, id: "bad", into: table)
    }
    expectError(.invalidArgument, mentioning: ["bad", table]) {
      try store.put(["x": .double(value)], id: "bad", into: table)
    }
    expectError(.invalidArgument, mentioning: ["kept", table]) {
      try store.put(number: value, id: "kept", into: table)
    }
    #expect(try store.object(id: "bad", from: table) == nil)
    #expect(try store.integer(id: "kept", from: table) == 1)
    #expect(try store.count(in: table) == 1)
  }

  // MARK: Strings

  @Test("strings with every control character, quotes, backslashes and emoji round-trip")
  func controlCharacters() throws {
    let controls = String((0..<0x20).map { Character(Unicode.Scalar(UInt8($0))) })
    let strings = [
      controls, "\u{7F}", "\"", "\\", "\\\"", "\"quoted\" and \\escaped\\", "/", "\u{2028}\u{2029}",
      "😀👨‍👩‍👧‍👦🇨🇳", "e\u{301}", "\u{FEFF}bom", "中文字符串", "", " ", "\u{10FFFF}", "\\u0041",
      controls + "middle" + controls,
    ]
    for (index, string) in strings.enumerated() {
      try store.put(string: string, id: "s\(index)", into: table)
      try store.put(.string(string), id: "j\(index)", into: table)
      try store.put([string: .string(string)], id: "k\(index)", into: table)
    }
    for (index, string) in strings.enumerated() {
      let read = try #require(try store.string(id: "s\(index)", from: table))
      #expect(Array(read.unicodeScalars) == Array(string.unicodeScalars), "string \(index)")
      let bare = try #require(try store.object(id: "j\(index)", from: table)?.stringValue)
      #expect(Array(bare.unicodeScalars) == Array(string.unicodeScalars), "string \(index)")
      let object = try #require(try store.object(id: "k\(index)", from: table)?.objectValue)
      #expect(object.count == 1)
      let key = try #require(object.keys.first)
      #expect(Array(key.unicodeScalars) == Array(string.unicodeScalars), "key \(index)")
      #expect(
        object[key]?.stringValue.map { Array($0.unicodeScalars) } == Array(string.unicodeScalars))
    }
  }

  @Test("nested objects and arrays of every kind of value come back equal, keys included")
  func nestedValues() throws {
    let value: JSONValue = [
      "null": nil, "true": true, "false": false, "int": -12, "double": 1.5, "string": "s",
      "empty array": [], "empty object": [:], "": "empty key",
      "keys": ["é": 1, "e\u{301}x": 2, "😀": 3, "\"q\"": 4, "\\": 5, "\u{1}": 6, "Z": 7, "a": 8],
      "matrix": [[1, 2], [3, [4, [5, ["deep": [nil, true, 0.25]]]]]],
      "users": [["id": 1, "tags": ["ios", "swift"]], ["id": 2, "tags": []]],
    ]
    try store.put(value, id: "tree", into: table)
    let read = try #require(try store.object(id: "tree", from: table))
    #expect(read == value)
    #expect(read.objectValue.map { Set($0.keys) } == value.objectValue.map { Set($0.keys) })
    #expect(
      read["keys"]?.objectValue.map { Set($0.keys) }
        == value["keys"]?.objectValue.map { Set($0.keys) })
    #expect(read["matrix"]?[1]?[1]?[1]?[1]?["deep"]?[2] == 0.25)
  }

  @Test("arrays and objects nested a hundred levels deep round-trip")
  func deepNesting() throws {
    var value: JSONValue = "bottom"
    for level in 0..<100 {
      value = level.isMultiple(of: 2) ? [value] : ["level\(level)": value]
    }
    try store.put(value, id: "deep", into: table)
    #expect(try store.object(id: "deep", from: table) == value)
  }

  @Test("a value of 16 MiB round-trips and survives reopening the store")
  func largeValue() throws {
    let large = asciiString(bytes: 16 << 20)
    try store.put(string: large, id: "large", into: table)
    try store.put(string: "small", id: "small", into: table)
    #expect(try store.string(id: "large", from: table) == large)
    let statistics = try store.statistics()
    #expect(statistics.liveBytes >= 16 << 20)

    let reopened = try reopen(store)
    #expect(try reopened.string(id: "large", from: table) == large)
    #expect(try reopened.string(id: "small", from: table) == "small")
    #expect(try reopened.count(in: table) == 2)
    try reopened.close()
  }

  @Test("a value larger than a whole segment is stored, read and kept across reopen")
  func valueLargerThanSegment() throws {
    let options = StoreOptions(maxSegmentSize: 4096)
    var small = try KeyValueStore(path: directory.appending("small.db"), options: options)
    try small.createTable(table)
    let large = asciiString(bytes: 1 << 20)
    try small.put(string: large, id: "large", into: table)
    try small.put(string: "after", id: "after", into: table)
    #expect(try small.string(id: "large", from: table) == large)
    small = try reopen(small, options: options)
    #expect(try small.string(id: "large", from: table) == large)
    #expect(try small.string(id: "after", from: table) == "after")
    try small.compact()
    #expect(try small.string(id: "large", from: table) == large)
    try small.close()
  }

  @Test("a value of more than 64 MiB of JSON is .invalidArgument, and nothing is stored")
  func valueOverLimit() throws {
    try store.put(string: "kept", id: "big", into: table)
    let tooLarge = asciiString(bytes: (64 << 20) + 1)
    expectError(.invalidArgument) { try store.put(string: tooLarge, id: "big", into: table) }
    #expect(try store.string(id: "big", from: table) == "kept")
  }

  // MARK: Codable

  private struct User: Codable, Equatable {
    var id: Int
    var name: String
    var age: Int?
    var tags: [String]
    var score: Double
  }

  @Test("put(encodable:) stores the JSON JSONEncoder makes, and decode reads it back")
  func encodableRoundTrip() throws {
    let user = User(id: 1, name: "tangqiao", age: 30, tags: ["ios", "\"q\""], score: 0.1)
    try store.put(encodable: user, id: "1", into: table)
    #expect(try store.decode(User.self, id: "1", from: table) == user)
    #expect(
      try store.object(id: "1", from: table)
        == ["id": 1, "name": "tangqiao", "age": 30, "tags": ["ios", "\"q\""], "score": 0.1])

    let noAge = User(id: 2, name: "", age: nil, tags: [], score: -0.0)
    try store.put(encodable: noAge, id: "2", into: table)
    let decoded = try #require(try store.decode(User.self, id: "2", from: table))
    #expect(decoded == noAge)
    #expect(decoded.score.sign == .minus)
  }

  @Test("put(encodable:) takes arrays, strings and dictionaries, and decode reads any JSONValue")
  func encodableKinds() throws {
    try store.put(encodable: ["a", "b"], id: "array", into: table)
    try store.put(encodable: ["k": 1], id: "dictionary", into: table)
    try store.put(encodable: "text", id: "string", into: table)
    #expect(try store.object(id: "array", from: table) == ["a", "b"])
    #expect(try store.object(id: "dictionary", from: table) == ["k": 1])
    #expect(try store.string(id: "string", from: table) == "text")
    #expect(try store.decode(JSONValue.self, id: "dictionary", from: table) == ["k": 1])
    #expect(try store.decode([String: Int].self, id: "dictionary", from: table) == ["k": 1])
  }

  private struct Unencodable: Encodable {
    struct Refusal: Error {}
    func encode(to encoder: any Encoder) throws { throw Refusal() }
  }

  private struct NaNScore: Encodable {
    var score = Double.nan
  }

  @Test("an Encodable that fails to encode is .invalidArgument naming the id; nothing is stored")
  func failingEncodable() throws {
    try store.put(number: 1, id: "kept", into: table)
    expectError(.invalidArgument, mentioning: ["refused"]) {
      try store.put(encodable: Unencodable(), id: "refused", into: table)
    }
    expectError(.invalidArgument, mentioning: ["nan-score"]) {
      try store.put(encodable: NaNScore(), id: "nan-score", into: table)
    }
    expectError(.invalidArgument, mentioning: ["kept"]) {
      try store.put(encodable: Unencodable(), id: "kept", into: table)
    }
    #expect(try store.object(id: "refused", from: table) == nil)
    #expect(try store.object(id: "nan-score", from: table) == nil)
    #expect(try store.integer(id: "kept", from: table) == 1)
  }

  // MARK: Type mismatches

  @Test("string(id:) on a stored number is .typeMismatch naming the id and table")
  func stringOfNumber() throws {
    try store.put(number: 42, id: "answer", into: table)
    expectError(.typeMismatch, mentioning: ["\"answer\"", "\"\(table)\""]) {
      _ = try store.string(id: "answer", from: table)
    }
    try store.put(["a": "b"], id: "object", into: table)
    expectError(.typeMismatch, mentioning: ["\"object\""]) {
      _ = try store.string(id: "object", from: table)
    }
    // A long id and a long value are shown cut to their first 60 characters.
    let longID = String(repeating: "i", count: 70)
    let longValue = JSONValue.array((0..<40).map { .int(Int64($0)) })
    try store.put(longValue, id: longID, into: table)
    let error = expectError(.typeMismatch) { _ = try store.string(id: longID, from: table) }
    let shownID = String(repeating: "i", count: 60) + "…"
    let shownValue = String(longValue.description.prefix(60)) + "…"
    #expect(
      error?.message == "id \"\(shownID)\" in table \"\(table)\" holds \(shownValue), not a string")
  }

  @Test("string(id:) reads [s] and a bare string only; every other shape is .typeMismatch")
  func stringShapes() throws {
    let text =
      "quote \" backslash \\ tab \t nul \u{0} é 中 😀 " + String(repeating: "long ", count: 40)
    try store.put(string: text, id: "wrapped", into: table)
    try store.put(.string(text), id: "bare", into: table)
    #expect(try store.string(id: "wrapped", from: table) == text)
    #expect(try store.string(id: "bare", from: table) == text)
    let others: [JSONValue] = [
      ["a", "b"], [], [["s"]], ["s", 1], [1], [nil], [true], ["s": "t"], [["s": "t"]], 1, nil,
    ]
    for (index, other) in others.enumerated() {
      try store.put(other, id: "other \(index)", into: table)
      expectError(.typeMismatch, mentioning: ["\"other \(index)\""]) {
        _ = try store.string(id: "other \(index)", from: table)
      }
    }
  }

  @Test("integer(id:) on 2.5, a string or an out-of-range double is .typeMismatch")
  func integerMismatch() throws {
    try store.put(number: 2.5, id: "fraction", into: table)
    try store.put(string: "12", id: "text", into: table)
    try store.put(number: 1e300, id: "huge", into: table)
    expectError(.typeMismatch, mentioning: ["\"fraction\"", "\"\(table)\""]) {
      _ = try store.integer(id: "fraction", from: table)
    }
    expectError(.typeMismatch, mentioning: ["\"text\""]) {
      _ = try store.integer(id: "text", from: table)
    }
    expectError(.typeMismatch, mentioning: ["\"huge\""]) {
      _ = try store.integer(id: "huge", from: table)
    }
  }

  @Test("number(id:) on an object, an array of two, a string or a Boolean is .typeMismatch")
  func numberMismatch() throws {
    try store.put(["n": 1], id: "object", into: table)
    try store.put([1, 2], id: "pair", into: table)
    try store.put(string: "1", id: "text", into: table)
    try store.put(true, id: "flag", into: table)
    for id in ["object", "pair", "text", "flag"] {
      expectError(.typeMismatch, mentioning: ["\"\(id)\"", "\"\(table)\""]) {
        _ = try store.number(id: id, from: table)
      }
    }
  }

  @Test("decode of a type the stored JSON is not is .typeMismatch naming the id and table")
  func decodeMismatch() throws {
    try store.put(["id": 1, "name": "tangqiao"], id: "user", into: table)
    try store.put(string: "s", id: "string", into: table)
    expectError(.typeMismatch, mentioning: ["\"user\"", "\"\(table)\""]) {
      _ = try store.decode([Int].self, id: "user", from: table)
    }
    expectError(.typeMismatch, mentioning: ["\"user\""]) {
      _ = try store.decode(User.self, id: "user", from: table)
    }
    expectError(.typeMismatch, mentioning: ["\"string\""]) {
      _ = try store.decode([Int].self, id: "string", from: table)
    }
  }

  // MARK: Created time

  @Test("item(id:) carries a createdTime within seconds of now")
  func createdTimeIsNow() throws {
    let before = Date()
    try store.put(["v": 1], id: "1", into: table)
    let after = Date()
    let item = try #require(try store.item(id: "1", from: table))
    #expect(item.id == "1")
    #expect(item.object == ["v": 1])
    #expect(item.createdTime >= before.addingTimeInterval(-5))
    #expect(item.createdTime <= after.addingTimeInterval(5))
  }

  @Test("a later put of the same id moves its createdTime forward and leaves others alone")
  func createdTimeChangesOnPut() throws {
    try store.put(string: "first", id: "changing", into: table)
    try store.put(string: "other", id: "steady", into: table)
    let first = try #require(try store.item(id: "changing", from: table))
    let steady = try #require(try store.item(id: "steady", from: table))
    // Let the wall clock pass a few of its microseconds.
    Thread.sleep(forTimeInterval: 0.005)
    try store.put(string: "second", id: "changing", into: table)
    let second = try #require(try store.item(id: "changing", from: table))
    #expect(second.createdTime > first.createdTime)
    #expect(second.object == ["second"])
    #expect(try store.item(id: "steady", from: table) == steady)
    let all = try store.allItems(in: table)
    #expect(all.first { $0.id == "changing" }?.createdTime == second.createdTime)
  }
}
