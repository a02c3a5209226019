import Foundation
import Testing
import YTKKeyValueStore

/// Ids (any string up to 65,535 bytes of UTF-8, the empty one included) and the three ways
/// of deleting by id: one id, a list of ids, and an exact byte prefix.
@Suite("KeyValueStore ids and deletes")
struct KeyValueStoreIDsAndDeletesTests {
  private let directory = TemporaryDirectory("ids")
  private let store: KeyValueStore
  private let table = "t"

  init() throws {
    store = try KeyValueStore(path: directory.storePath)
    try store.createTable(table)
  }

  private func ids() throws -> [String] {
    try store.allItems(in: table).map(\.id)
  }

  // MARK: Ids

  @Test(
    "any id round-trips: empty, CJK, emoji, combining marks, control characters, quotes",
    arguments: [
      "", " ", "用户", "ユーザー", "사용자", "😀", "👨‍👩‍👧‍👦", "🇨🇳", "e\u{301}", "a\u{0}b", "\u{0}",
      "\n\t\r", "it's \"quoted\"", "back\\slash", "%", "_", "100%_done", "\u{FEFF}", "\u{10FFFF}",
    ])
  func unusualIDs(id: String) throws {
    try store.put(string: "value of \(id)", id: id, into: table)
    #expect(try store.string(id: id, from: table) == "value of \(id)")
    let item = try #require(try store.item(id: id, from: table))
    #expect(Array(item.id.utf8) == Array(id.utf8))
    #expect(try store.allItems(in: table).map { Array($0.id.utf8) } == [Array(id.utf8)])
    try store.delete(id: id, from: table)
    #expect(try store.object(id: id, from: table) == nil)
    #expect(try store.count(in: table) == 0)
  }

  @Test("ids are compared byte for byte: composed and decomposed é are two ids")
  func idsAreBytes() throws {
    try store.put(number: 1, id: "\u{E9}", into: table)
    try store.put(number: 2, id: "e\u{301}", into: table)
    #expect(try store.count(in: table) == 2)
    #expect(try store.integer(id: "\u{E9}", from: table) == 1)
    #expect(try store.integer(id: "e\u{301}", from: table) == 2)
    let stored = try store.allItems(in: table).map { Array($0.id.utf8) }
    #expect(stored == [Array("e\u{301}".utf8), Array("\u{E9}".utf8)])
  }

  @Test("the empty id is an ordinary id, distinct from every other")
  func emptyID() throws {
    try store.put(["empty": true], id: "", into: table)
    try store.put(["empty": false], id: " ", into: table)
    #expect(try store.object(id: "", from: table) == ["empty": true])
    #expect(try store.object(id: " ", from: table) == ["empty": false])
    #expect(try ids() == ["", " "])
    try store.delete(id: "", from: table)
    #expect(try ids() == [" "])
  }

  @Test("an id of 65,535 bytes is fine for put, read and delete")
  func longestID() throws {
    let id = asciiString(bytes: 65_535)
    try store.put(string: "long", id: id, into: table)
    #expect(try store.string(id: id, from: table) == "long")
    #expect(try store.item(id: id, from: table)?.id == id)
    try store.delete(ids: [id], from: table)
    #expect(try store.count(in: table) == 0)
    try store.put(string: "long", id: id, into: table)
    try store.delete(id: id, from: table)
    #expect(try store.count(in: table) == 0)
  }

  @Test("an id of 65,536 bytes is .invalidArgument for every put and delete, saying why")
  func idTooLong() throws {
    let id = asciiString(bytes: 65_536)
    let multiByte = String(repeating: "😀", count: 16_384)  // 4 bytes each
    #expect(multiByte.utf8.count == 65_536)
    for tooLong in [id, multiByte] {
      let error = expectError(.invalidArgument) {
        try store.put(string: "x", id: tooLong, into: table)
      }
      #expect(error?.message.contains("65536") == true || error?.message.contains("65,536") == true)
      expectError(.invalidArgument) { try store.put(["a": 1], id: tooLong, into: table) }
      expectError(.invalidArgument) { try store.put(number: 1, id: tooLong, into: table) }
      expectError(.invalidArgument) { try store.put(number: 1.5, id: tooLong, into: table) }
      expectError(.invalidArgument) { try store.put(encodable: [1], id: tooLong, into: table) }
      expectError(.invalidArgument) { try store.delete(id: tooLong, from: table) }
      expectError(.invalidArgument) { try store.delete(ids: [tooLong], from: table) }
    }
    #expect(try store.count(in: table) == 0)
  }

  // MARK: delete(id:)

  @Test("delete(id:) removes that id only")
  func deleteOne() throws {
    for id in ["a", "b", "c"] { try store.put(string: id, id: id, into: table) }
    try store.delete(id: "b", from: table)
    #expect(try ids() == ["a", "c"])
    #expect(try store.object(id: "b", from: table) == nil)
    #expect(try store.item(id: "b", from: table) == nil)
  }

  @Test("delete(id:) of a missing id is no error and changes nothing")
  func deleteMissing() throws {
    try store.put(string: "a", id: "a", into: table)
    try store.delete(id: "missing", from: table)
    try store.delete(id: "", from: table)
    try store.delete(id: "a", from: table)
    try store.delete(id: "a", from: table)
    #expect(try store.count(in: table) == 0)
  }

  @Test("a deleted id can be put again")
  func putAfterDelete() throws {
    try store.put(number: 1, id: "a", into: table)
    try store.delete(id: "a", from: table)
    try store.put(number: 2, id: "a", into: table)
    #expect(try store.integer(id: "a", from: table) == 2)
    #expect(try store.count(in: table) == 1)
  }

  // MARK: delete(ids:)

  @Test("delete(ids:) removes every listed id, skipping missing and repeated ones")
  func deleteMany() throws {
    for index in 0..<10 { try store.put(number: index, id: "id\(index)", into: table) }
    try store.delete(ids: ["id1", "id3", "missing", "id3", "id9", ""], from: table)
    #expect(try ids() == ["id0", "id2", "id4", "id5", "id6", "id7", "id8"])
    try store.delete(ids: [], from: table)
    #expect(try store.count(in: table) == 7)
  }

  @Test("delete(ids:) with an invalid id among them deletes none of them")
  func deleteManyIsAtomic() throws {
    for id in ["a", "b", "c"] { try store.put(string: id, id: id, into: table) }
    expectError(.invalidArgument) {
      try store.delete(ids: ["a", "b", asciiString(bytes: 65_536), "c"], from: table)
    }
    #expect(try ids() == ["a", "b", "c"])
  }

  @Test("delete(ids:) of thousands of ids removes them all")
  func deleteManyLarge() throws {
    let all = (0..<3_000).map { "item-\($0)" }
    for id in all { try store.put(string: id, id: id, into: table) }
    let doomed = all.enumerated().filter { $0.offset % 3 != 0 }.map(\.element)
    try store.delete(ids: doomed, from: table)
    let expected = all.enumerated().filter { $0.offset % 3 == 0 }.map(\.element)
    #expect(Set(try ids()) == Set(expected))
    #expect(try store.count(in: table) == 1_000)
  }

  // MARK: delete(prefix:)

  @Test("delete(prefix:) removes exactly the ids that start with the prefix")
  func deletePrefix() throws {
    let all = ["user_1", "user_2", "user_", "user", "users", "use", "User_1", "x-user_1", "1"]
    for id in all { try store.put(string: id, id: id, into: table) }
    try store.delete(prefix: "user_", from: table)
    #expect(try ids() == ["1", "User_1", "use", "user", "users", "x-user_1"])
  }

  @Test("`_` in a prefix is an ordinary character: prefix \"a_\" does not delete \"ab\"")
  func underscoreIsLiteral() throws {
    for id in ["a_", "a_b", "ab", "abc", "a", "a__", "ba_"] {
      try store.put(number: 1, id: id, into: table)
    }
    try store.delete(prefix: "a_", from: table)
    #expect(try ids() == ["a", "ab", "abc", "ba_"])
  }

  @Test("`%` in a prefix is an ordinary character: prefix \"%\" deletes only ids starting with %")
  func percentIsLiteral() throws {
    for id in ["%", "%d", "100%", "abc", "", "%%", "_%"] {
      try store.put(number: 1, id: id, into: table)
    }
    try store.delete(prefix: "%", from: table)
    #expect(try ids() == ["", "100%", "_%", "abc"])
    try store.delete(prefix: "_", from: table)
    #expect(try ids() == ["", "100%", "abc"])
    try store.delete(prefix: "100%", from: table)
    #expect(try ids() == ["", "abc"])
  }

  @Test("delete(prefix:) matches bytes: a prefix ending inside a character, and unicode prefixes")
  func unicodePrefix() throws {
    for id in ["中文", "中国", "中", "日本", "😀a", "😀", "e\u{301}", "e", "ex"] {
      try store.put(number: 1, id: id, into: table)
    }
    try store.delete(prefix: "中", from: table)
    #expect(Set(try ids()) == ["日本", "😀a", "😀", "e\u{301}", "e", "ex"])
    try store.delete(prefix: "😀", from: table)
    #expect(Set(try ids()) == ["日本", "e\u{301}", "e", "ex"])
    // "e" is a byte prefix of "e\u{301}", though not a prefix in characters.
    try store.delete(prefix: "e", from: table)
    #expect(try ids() == ["日本"])
  }

  @Test("delete(prefix:) with the highest code points deletes only ids that start with them")
  func highestBytePrefix() throws {
    let all = ["\u{10FFFF}", "\u{10FFFF}a", "\u{10FFFF}\u{10FFFF}", "\u{10FFFE}", "\u{FFFF}", "z"]
    for id in all { try store.put(number: 1, id: id, into: table) }
    try store.delete(prefix: "\u{10FFFF}", from: table)
    #expect(try ids() == ["z", "\u{FFFF}", "\u{10FFFE}"])
    try store.delete(prefix: "\u{FFFF}", from: table)
    #expect(try ids() == ["z", "\u{10FFFE}"])
  }

  @Test("delete(prefix:) with an empty prefix clears the table and keeps it")
  func emptyPrefixClears() throws {
    for id in ["", "a", "b", "%"] { try store.put(number: 1, id: id, into: table) }
    try store.createTable("other")
    try store.put(number: 1, id: "a", into: "other")
    try store.delete(prefix: "", from: table)
    #expect(try store.count(in: table) == 0)
    #expect(try store.tableExists(table))
    #expect(try store.count(in: "other") == 1)
  }

  @Test("delete(prefix:) that matches nothing, or only the prefix itself, works")
  func prefixEdgeCases() throws {
    for id in ["abc", "abd"] { try store.put(number: 1, id: id, into: table) }
    try store.delete(prefix: "zz", from: table)
    #expect(try ids() == ["abc", "abd"])
    try store.delete(prefix: "abc", from: table)
    #expect(try ids() == ["abd"])
    try store.delete(prefix: "abdx", from: table)
    #expect(try ids() == ["abd"])
  }

  @Test("delete(prefix:) acts on its own table only")
  func prefixStaysInTable() throws {
    try store.createTable("other")
    for id in ["p1", "p2", "q"] {
      try store.put(number: 1, id: id, into: table)
      try store.put(number: 1, id: id, into: "other")
    }
    try store.delete(prefix: "p", from: table)
    #expect(try ids() == ["q"])
    #expect(try store.allItems(in: "other").map(\.id) == ["p1", "p2", "q"])
  }
}
