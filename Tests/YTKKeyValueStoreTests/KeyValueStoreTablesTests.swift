import Foundation
import Testing
import YTKKeyValueStore

/// Tables: creating, listing, clearing and dropping them; which names are allowed; and
/// `.tableNotFound` for every call on a table that is not there.
@Suite("KeyValueStore tables")
struct KeyValueStoreTablesTests {
  private let directory = TemporaryDirectory("tables")
  private let store: KeyValueStore

  init() throws {
    store = try KeyValueStore(path: directory.storePath)
  }

  @Test("a new store has no tables")
  func newStoreIsEmpty() throws {
    #expect(try store.tableNames() == [])
    #expect(try store.tableExists("user_table") == false)
  }

  @Test("createTable makes the table exist, and creating it again keeps its items")
  func createTableIsIdempotent() throws {
    try store.createTable("user_table")
    #expect(try store.tableExists("user_table"))
    try store.put(["id": 1], id: "1", into: "user_table")
    try store.createTable("user_table")
    #expect(try store.tableExists("user_table"))
    #expect(try store.count(in: "user_table") == 1)
    #expect(try store.object(id: "1", from: "user_table") == ["id": 1])
    #expect(try store.tableNames() == ["user_table"])
  }

  @Test("tableNames lists every table once, sorted")
  func tableNamesAreSorted() throws {
    for name in ["zeta", "alpha", "Mid", "beta", "alpha", "_under", "10", "9"] {
      try store.createTable(name)
    }
    #expect(try store.tableNames() == ["10", "9", "Mid", "_under", "alpha", "beta", "zeta"])
  }

  @Test("table names are case-sensitive")
  func namesAreCaseSensitive() throws {
    try store.createTable("Users")
    #expect(try store.tableExists("users") == false)
    try store.createTable("users")
    try store.put(string: "upper", id: "1", into: "Users")
    try store.put(string: "lower", id: "1", into: "users")
    #expect(try store.string(id: "1", from: "Users") == "upper")
    #expect(try store.string(id: "1", from: "users") == "lower")
  }

  @Test("tables are separate: the same id in two tables holds two values")
  func tablesAreSeparate() throws {
    try store.createTable("a")
    try store.createTable("b")
    try store.put(number: 1, id: "x", into: "a")
    try store.put(number: 2, id: "x", into: "b")
    #expect(try store.integer(id: "x", from: "a") == 1)
    #expect(try store.integer(id: "x", from: "b") == 2)
    try store.delete(id: "x", from: "a")
    #expect(try store.integer(id: "x", from: "b") == 2)
    try store.clearTable("b")
    try store.put(number: 3, id: "y", into: "a")
    #expect(try store.count(in: "a") == 1)
    #expect(try store.count(in: "b") == 0)
  }

  @Test("clearTable removes every item and keeps the table, empty and usable")
  func clearTableKeepsTable() throws {
    try store.createTable("t")
    try store.createTable("other")
    for index in 0..<50 {
      try store.put(number: index, id: "id\(index)", into: "t")
    }
    try store.put(string: "stays", id: "id1", into: "other")
    try store.clearTable("t")
    #expect(try store.tableExists("t"))
    #expect(try store.count(in: "t") == 0)
    #expect(try store.allItems(in: "t") == [])
    #expect(try store.object(id: "id1", from: "t") == nil)
    #expect(try store.string(id: "id1", from: "other") == "stays")
    try store.put(number: 7, id: "id1", into: "t")
    #expect(try store.integer(id: "id1", from: "t") == 7)
    #expect(try store.count(in: "t") == 1)
  }

  @Test("clearing an empty table is fine")
  func clearEmptyTable() throws {
    try store.createTable("t")
    try store.clearTable("t")
    #expect(try store.count(in: "t") == 0)
  }

  @Test("dropTable removes the table and its items; re-creating it gives an empty table")
  func dropTableRemovesItems() throws {
    try store.createTable("t")
    try store.createTable("other")
    for index in 0..<20 {
      try store.put(string: "v\(index)", id: "\(index)", into: "t")
    }
    try store.put(string: "stays", id: "1", into: "other")
    try store.dropTable("t")
    #expect(try store.tableExists("t") == false)
    #expect(try store.tableNames() == ["other"])
    #expect(try store.string(id: "1", from: "other") == "stays")

    try store.createTable("t")
    #expect(try store.count(in: "t") == 0)
    #expect(try store.allItems(in: "t") == [])
    #expect(try store.object(id: "1", from: "t") == nil)
  }

  // MARK: Names

  @Test(
    "names with spaces, quotes, unicode and punctuation are ordinary names",
    arguments: [
      "user table", " leading and trailing ", "it's \"quoted\"", "Robert'); DROP TABLE x;--",
      "用户表", "tâble 🗄️", "e\u{301}", "back\\slash", "tab\there", "line\nbreak", "%_*?",
      "[brackets]", "a.b.c", "/slash/", String(repeating: "é", count: 127),
    ])
  func unusualNames(name: String) throws {
    try store.createTable(name)
    #expect(try store.tableExists(name))
    #expect(try store.tableNames() == [name])
    try store.put(["name": .string(name)], id: name, into: name)
    #expect(try store.object(id: name, from: name) == ["name": .string(name)])
    #expect(try store.allItems(in: name).map(\.id) == [name])
    try store.clearTable(name)
    #expect(try store.count(in: name) == 0)
    try store.dropTable(name)
    #expect(try store.tableExists(name) == false)
  }

  @Test("a name of 255 bytes of UTF-8 is allowed, including multi-byte characters")
  func longestName() throws {
    let ascii = asciiString(bytes: 255)
    let multiByte = String(repeating: "中", count: 85)  // 3 bytes each
    #expect(multiByte.utf8.count == 255)
    for name in [ascii, multiByte] {
      try store.createTable(name)
      try store.put(number: 1, id: "1", into: name)
      #expect(try store.integer(id: "1", from: name) == 1)
    }
    #expect(try store.tableNames() == [ascii, multiByte])
  }

  @Test(
    "an empty name, a name over 255 bytes or a name with NUL is .invalidTableName",
    arguments: [
      "", asciiString(bytes: 256), String(repeating: "中", count: 86), "nul\u{0}inside",
      "\u{0}", "trailing\u{0}",
    ])
  func invalidNames(name: String) throws {
    expectError(.invalidTableName, mentioning: ["table name"]) { try store.createTable(name) }
    #expect(try store.tableNames() == [])
    expectError(.invalidTableName) { try store.put(number: 1, id: "1", into: name) }
    expectError(.invalidTableName) { try store.put(string: "s", id: "1", into: name) }
    expectError(.invalidTableName) { try store.clearTable(name) }
    expectError(.invalidTableName) { try store.dropTable(name) }
  }

  @Test("the message of .invalidTableName says how long the name is")
  func invalidNameMessage() throws {
    expectError(.invalidTableName, mentioning: ["256"]) {
      try store.createTable(asciiString(bytes: 256))
    }
    expectError(.invalidTableName, mentioning: ["0 bytes"]) { try store.createTable("") }
    // A NUL (or any control character) is shown escaped, never printed raw to a terminal.
    let error = expectError(.invalidTableName, mentioning: [#""nul\0in\tside""#]) {
      try store.createTable("nul\u{0}in\tside")
    }
    #expect(error.map { !$0.description.unicodeScalars.contains { $0.value < 0x20 } } == true)
  }

  // MARK: Missing tables

  @Test("every read of a table that was never created throws .tableNotFound naming it")
  func readsOfMissingTable() throws {
    let name = "no_such_table"
    let named = ["\"\(name)\""]
    expectError(.tableNotFound, mentioning: named) { _ = try store.object(id: "1", from: name) }
    expectError(.tableNotFound, mentioning: named) { _ = try store.string(id: "1", from: name) }
    expectError(.tableNotFound, mentioning: named) { _ = try store.number(id: "1", from: name) }
    expectError(.tableNotFound, mentioning: named) {
      _ = try store.integer(id: "1", from: name)
    }
    expectError(.tableNotFound, mentioning: named) {
      _ = try store.decode([Int].self, id: "1", from: name)
    }
    expectError(.tableNotFound, mentioning: named) { _ = try store.item(id: "1", from: name) }
    expectError(.tableNotFound, mentioning: named) { _ = try store.allItems(in: name) }
    expectError(.tableNotFound, mentioning: named) { _ = try store.count(in: name) }
  }

  @Test("every write to a table that was never created throws .tableNotFound and creates nothing")
  func writesToMissingTable() throws {
    let name = "no_such_table"
    let named = ["\"\(name)\""]
    expectError(.tableNotFound, mentioning: named) { try store.put(["a": 1], id: "1", into: name) }
    expectError(.tableNotFound, mentioning: named) {
      try store.put(string: "s", id: "1", into: name)
    }
    expectError(.tableNotFound, mentioning: named) { try store.put(number: 1, id: "1", into: name) }
    expectError(.tableNotFound, mentioning: named) {
      try store.put(number: 1.5, id: "1", into: name)
    }
    expectError(.tableNotFound, mentioning: named) {
      try store.put(encodable: [1, 2], id: "1", into: name)
    }
    expectError(.tableNotFound, mentioning: named) { try store.delete(id: "1", from: name) }
    expectError(.tableNotFound, mentioning: named) {
      try store.delete(ids: ["1", "2"], from: name)
    }
    expectError(.tableNotFound, mentioning: named) { try store.delete(ids: [], from: name) }
    expectError(.tableNotFound, mentioning: named) { try store.delete(prefix: "1", from: name) }
    expectError(.tableNotFound, mentioning: named) { try store.delete(prefix: "", from: name) }
    expectError(.tableNotFound, mentioning: named) { try store.clearTable(name) }
    expectError(.tableNotFound, mentioning: named) { try store.dropTable(name) }
    #expect(try store.tableNames() == [])
    #expect(try store.tableExists(name) == false)
  }

  @Test("a dropped table is missing for reads, writes, deletes and counts")
  func droppedTableIsMissing() throws {
    try store.createTable("gone")
    try store.put(number: 1, id: "1", into: "gone")
    try store.dropTable("gone")
    let named = ["\"gone\""]
    expectError(.tableNotFound, mentioning: named) { _ = try store.object(id: "1", from: "gone") }
    expectError(.tableNotFound, mentioning: named) { _ = try store.allItems(in: "gone") }
    expectError(.tableNotFound, mentioning: named) { _ = try store.count(in: "gone") }
    expectError(.tableNotFound, mentioning: named) {
      try store.put(number: 2, id: "2", into: "gone")
    }
    expectError(.tableNotFound, mentioning: named) { try store.delete(id: "1", from: "gone") }
    expectError(.tableNotFound, mentioning: named) { try store.delete(ids: ["1"], from: "gone") }
    expectError(.tableNotFound, mentioning: named) { try store.delete(prefix: "", from: "gone") }
    expectError(.tableNotFound, mentioning: named) { try store.clearTable("gone") }
    expectError(.tableNotFound, mentioning: named) { try store.dropTable("gone") }
    #expect(try store.tableExists("gone") == false)
  }

  @Test(
    "names equal as strings but not as bytes are two tables: each its own items, counts, lifetime, batch puts, clear and drop; both listed, in byte order; both survive a compaction"
  )
  func equivalentNamesAreTwoTables() throws {
    // "café", its é precomposed (NFC) and decomposed (NFD): equal as `String`s.
    let (composed, decomposed) = ("caf\u{E9}", "cafe\u{301}")
    try store.createTable(composed)
    #expect(try !store.tableExists(decomposed))
    try store.createTable(decomposed, expiresAfter: 3600)
    #expect(try store.defaultLifetime(of: composed) == nil)
    #expect(try store.defaultLifetime(of: decomposed) == 3600)
    // In byte order: "cafe" before "caf\xC3".
    let listed = [Array(decomposed.utf8), Array(composed.utf8)]
    #expect(try store.tableNames().map { Array($0.utf8) } == listed)
    try store.put(["from": "composed"], id: "1", into: composed)
    try store.put(["from": "decomposed"], id: "1", into: decomposed)
    try store.put(["2": ["n": 2], "3": ["n": 3]], into: composed)
    try store.put(encodables: ["4": 4], into: decomposed)
    #expect(try store.object(id: "1", from: composed) == ["from": "composed"])
    #expect(try store.object(id: "1", from: decomposed) == ["from": "decomposed"])
    #expect(try store.allItems(in: composed).map(\.id) == ["1", "2", "3"])
    #expect(try store.allItems(in: decomposed).map(\.id) == ["1", "4"])
    #expect(try store.count(in: composed) == 3)
    #expect(try store.count(in: decomposed) == 2)
    // Each table's puts get its own default lifetime.
    #expect(try store.item(id: "1", from: composed)?.expiresTime == nil)
    #expect(try store.item(id: "1", from: decomposed)?.expiresTime != nil)
    try store.compact()
    #expect(try store.tableNames().map { Array($0.utf8) } == listed)
    #expect(try store.count(in: composed) == 3)
    #expect(try store.count(in: decomposed) == 2)
    #expect(try store.object(id: "1", from: decomposed) == ["from": "decomposed"])
    try store.clearTable(composed)
    #expect(try store.count(in: decomposed) == 2)
    try store.put(number: 5, id: "5", into: composed)
    try store.dropTable(decomposed)
    #expect(try store.tableNames().map { Array($0.utf8) } == [Array(composed.utf8)])
    #expect(try store.integer(id: "5", from: composed) == 5)
  }
}
