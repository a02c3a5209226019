import Foundation
import Testing
import YTKKeyValueStore

@Suite("ytkkv load")
struct LoadCommandTests {
  static let usage = "Usage: ytkkv load PATH [--ytk-table NAME]"

  /// Several tables (one empty) and ids that need escaping in JSON.
  static let fixture = StoreFixture { store in
    for table in ["user_table", "cache_table", "empty table", "表"] { try store.createTable(table) }
    try store.put(["id": 1, "name": "tangqiao", "age": 30], id: "1", into: "user_table")
    try store.put(string: "a plain string", id: "user_name", into: "user_table")
    try store.put(number: 98.5, id: "user_score", into: "user_table")
    try store.put(number: 7, id: #"quote " and \ and"#, into: "user_table")
    try store.put(string: "x\u{0}y", id: "new\nline\ttab\u{1}", into: "user_table")
    try store.put(["nested": ["a": [1, 2.25, nil, true]]], id: "emoji 😀", into: "表")
    for index in 0..<30 {
      try store.put(["index": .int(Int64(index))], id: "feed_\(index)", into: "cache_table")
    }
  }

  static func data(_ text: String) -> Data { Data(text.utf8) }

  @Test("dump | load into a new store reproduces every table, id, value and createdTime")
  func roundTrip() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let source = try Self.fixture.make(in: scratch, named: "source.db")
    let copy = scratch.appending("copy.db")

    let dump = try Tool.run(["dump", source])
    try #require(dump.status == 0)
    let load = try Tool.run(["load", copy], input: Self.data(dump.standardOutput))
    #expect(load.status == 0)
    #expect(load.standardError == "")
    #expect(load.outputLines == ["loaded 36 items into 4 tables"])

    let again = try Tool.run(["dump", copy])
    #expect(again.status == 0)
    #expect(again.standardOutput == dump.standardOutput)
    #expect(
      try Tool.run(["tables", copy]).outputLines == [
        "cache_table\t30", "empty table\t0", "user_table\t5", "表\t1",
      ])

    // The library sees the same items, created times included, in both stores.
    let original = try KeyValueStore(path: source, options: StoreOptions(readOnly: true))
    defer { try? original.close() }
    let loaded = try KeyValueStore(path: copy, options: StoreOptions(readOnly: true))
    defer { try? loaded.close() }
    #expect(try loaded.tableNames() == original.tableNames())
    for table in try original.tableNames() {
      #expect(try loaded.allItems(in: table) == original.allItems(in: table), "\(table)")
    }
  }

  @Test(
    "tables whose names are equal as strings but not as bytes are two: put, get, tables, compact and verify, and dump | load keeps both"
  )
  func equivalentTableNames() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let source = scratch.appending("source.db")
    let copy = scratch.appending("copy.db")
    // "café", its é precomposed (NFC) and decomposed (NFD): equal as `String`s. The review's
    // steps: the item put under the second spelling was gone after the compaction.
    let (composed, decomposed) = ("caf\u{E9}", "cafe\u{301}")
    #expect(try Tool.run(["put", source, composed, "b", "[2]", "--create"]).status == 0)
    // The other spelling names no table yet.
    let missing = try Tool.run(["put", source, decomposed, "a", "[1]"])
    #expect(missing.status == 1)
    #expect(try Tool.run(["put", source, decomposed, "a", "[1]", "--create"]).status == 0)
    #expect(try Tool.run(["compact", source]).status == 0)
    #expect(try Tool.run(["verify", source]).status == 0)
    // (Compared as bytes: `==` of the lines would take either spelling for the other.)
    func bytes(_ lines: [String]) -> [[UInt8]] { lines.map { Array($0.utf8) } }
    let tables = bytes(["\(decomposed)\t1", "\(composed)\t1"])
    #expect(bytes(try Tool.run(["tables", source]).outputLines) == tables)
    #expect(try Tool.run(["get", source, decomposed, "a"]).outputLines == ["[1]"])
    #expect(try Tool.run(["get", source, composed, "b"]).outputLines == ["[2]"])
    #expect(try Tool.run(["get", source, composed, "a"]).status == 1)

    let dump = try Tool.run(["dump", source])
    try #require(dump.status == 0)
    #expect(dump.outputLines.count == 2)
    let load = try Tool.run(["load", copy], input: Self.data(dump.standardOutput))
    #expect(load.status == 0)
    #expect(load.outputLines == ["loaded 2 items into 2 tables"])
    #expect(bytes(try Tool.run(["tables", copy]).outputLines) == tables)
    #expect(bytes(try Tool.run(["dump", copy]).outputLines) == bytes(dump.outputLines))
  }

  @Test("keeps each createdTime to the microsecond and stores values in canonical form")
  func keepsCreatedTimes() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("test.db")
    let input = [
      #"{"table":"t","id":"a","value":{"b": 1, "a": [2, 3]},"createdTime":1448000061.25}"#,
      #"{"createdTime":1448000000.000001,"value":[],"id":"b","table":"t"}"#,
      #"{"table":"t","id":"c","value":"s","createdTime":1448000000}"#,
      #"{"table":"t","id":"d","value":null,"createdTime":1.999999}"#,
    ]
    let load = try Tool.run(["load", path], input: Self.data(input.joined(separator: "\n")))
    #expect(load.status == 0)
    #expect(load.outputLines == ["loaded 4 items into 1 table"])

    #expect(
      try Tool.run(["dump", path]).outputLines == [
        #"{"table":"t","id":"a","value":{"a":[2,3],"b":1},"createdTime":1448000061.25}"#,
        #"{"table":"t","id":"b","value":[],"createdTime":1448000000.000001}"#,
        #"{"table":"t","id":"c","value":"s","createdTime":1448000000}"#,
        #"{"table":"t","id":"d","value":null,"createdTime":1.999999}"#,
      ])
    let store = try KeyValueStore(path: path, options: StoreOptions(readOnly: true))
    defer { try? store.close() }
    let item = try #require(try store.item(id: "a", from: "t"))
    #expect(Microseconds.of(item.createdTime) == 1_448_000_061_250_000)
  }

  @Test("a line {\"table\":…} creates an empty table; blank lines are ignored")
  func emptyTablesAndBlankLines() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("test.db")
    let input =
      "\n" + #"{"table":"empty"}"# + "\n   \n\t\r\n"
      + #"{"table":"t","id":"1","value":1}"# + "\n\n" + #"{"table":"t","id":"2","value":2}"#
      + "\n\n"
    let load = try Tool.run(["load", path], input: Self.data(input))
    #expect(load.status == 0)
    #expect(load.outputLines == ["loaded 2 items into 2 tables"])
    #expect(try Tool.run(["tables", path]).outputLines == ["empty\t0", "t\t2"])
    #expect(try Tool.run(["dump", path, "empty"]).outputLines == [#"{"table":"empty"}"#])
  }

  @Test("loads into an existing store, keeping what it holds")
  func existingStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    let load = try Tool.run(
      ["load", path], input: Self.data(#"{"table":"user_table","id":"2","value":{"id":2}}"#))
    #expect(load.status == 0)
    #expect(load.outputLines == ["loaded 1 item into 1 table"])
    #expect(try Tool.run(["tables", path]).outputLines.contains("user_table\t6"))
    #expect(try Tool.run(["get", path, "user_table", "2"]).outputLines == [#"{"id":2}"#])
  }

  @Test("a malformed line exits 1 naming its number")
  func malformedLines() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let good = #"{"table":"t","id":"1","value":1}"#
    let cases: [(input: String, line: Int)] = [
      (good + "\n" + #"{"table":"t","id":"#, 2),
      ("\n\n" + "not json", 3),
      (good + "\n" + #"["t","2",2]"#, 2),
      (#"{"id":"1","value":1}"#, 1),
      (#"{"table":"t","id":"1"}"#, 1),
      (#"{"table":"t","id":1,"value":1}"#, 1),
      (good + "\n" + good + "\n" + #"{"table":"t","id":"3","value":3,"createdTime":"soon"}"#, 3),
    ]
    for (index, (input, line)) in cases.enumerated() {
      let path = scratch.appending("case\(index).db")
      let result = try Tool.run(["load", path], input: Self.data(input))
      #expect(result.status == 1, "\(input)")
      #expect(result.standardOutput == "", "\(input)")
      #expect(result.standardError.hasPrefix("ytkkv load: line \(line): "), "\(input)")
      #expect(result.errorLines.count == 1, "\(input)")
    }
  }

  @Test("a line the store cannot take (a bad table name, an id over 65,535 bytes) is named")
  func rejectedLines() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let good = #"{"table":"t","id":"1","value":1}"#
    let longID = String(repeating: "x", count: KeyValueStore.maxIDLength + 1)
    let cases: [(input: String, line: Int)] = [
      (good + "\n" + #"{"table":"","id":"1","value":1}"#, 2),
      (
        good + "\n" + #"{"table":""# + String(repeating: "t", count: 256)
          + #"","id":"1","value":1}"#, 2
      ),
      (good + "\n" + good + "\n" + #"{"table":"t","id":"\#(longID)","value":1}"#, 3),
    ]
    for (index, (input, line)) in cases.enumerated() {
      let result = try Tool.run(
        ["load", scratch.appending("case\(index).db")], input: Self.data(input))
      #expect(result.status == 1, "case \(index)")
      #expect(result.standardError.hasPrefix("ytkkv load: line \(line): "), "case \(index)")
    }
  }

  @Test("after a malformed line, the complete batches before it are kept, its own is not")
  func keepsEarlierBatches() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("test.db")
    let store = try KeyValueStore(path: path)
    try store.createTable("t")
    try store.close()

    // Batches hold 1,000 items: lines 1-1000 are one, 1001-1100 the start of the next.
    // (The table exists already, so no table creation shares the first batch.)
    func id(_ number: Int) -> String {
      String(repeating: "0", count: 4 - String(number).count) + String(number)
    }
    var lines = (1...1100).map { #"{"table":"t","id":"\#(id($0))","value":\#($0)}"# }
    lines.append(#"{"table":"t","id":"1101","value":"#)
    let result = try Tool.run(["load", path], input: Self.data(lines.joined(separator: "\n")))
    #expect(result.status == 1)
    #expect(result.standardError.hasPrefix("ytkkv load: line 1101: "))

    let loaded = try KeyValueStore(path: path, options: StoreOptions(readOnly: true))
    defer { try? loaded.close() }
    #expect(try loaded.allItems(in: "t").map(\.id) == (1...1000).map(id))
  }

  @Test("--ytk-table loads a table of the SQLite YTKKeyValueStore with every createdTime")
  func migratesYTKTables() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("migrated.db")

    for (table, summary) in [
      ("user_table", "loaded 6 items into 1 table"), ("cache_table", "loaded 2 items into 1 table"),
    ] {
      let fixture = try Self.ytkFixture(table)
      let result = try Tool.run(["load", path, "--ytk-table", table], input: fixture)
      #expect(result.status == 0, "\(table)")
      #expect(result.outputLines == [summary])
      #expect(result.standardError == "")

      let rows = try #require(
        try JSONSerialization.jsonObject(with: fixture) as? [[String: String]])
      let store = try KeyValueStore(path: path, options: StoreOptions(readOnly: true))
      defer { try? store.close() }
      #expect(try store.count(in: table) == rows.count)
      for row in rows {
        let id = try #require(row["id"])
        let json = try #require(row["json"], "\(row)")
        let seconds = try #require(row["createdTime"], "\(row)")
        let item = try #require(try store.item(id: id, from: table), "\(table) \(id)")
        // The same JSON value as the json column, whatever its key order and spacing.
        #expect(try Self.parsed(item.object.description) == Self.parsed(json), "\(table) \(id)")
        // The createdTime text, to the microsecond: "1448000061.25" is 1448000061.250000.
        let createdTime = try #require(Microseconds.fromSeconds(seconds), "\(row)")
        #expect(Microseconds.of(item.createdTime) == createdTime, "\(table) \(id)")
      }
    }

    #expect(
      try Tool.run(["get", path, "user_table", "string_key"]).outputLines == [
        #"["a plain string with \"quotes\" and \\ backslash"]"#
      ])
    #expect(
      try Tool.run(["get", path, "user_table", "2"]).outputLines == [
        #"{"age":31,"id":2,"manager":null,"name":"唐巧","score":98.5,"tags":["ios","kv"],"vip":true}"#
      ])
    let dump = try Tool.run(["dump", path, "user_table"]).outputLines
    #expect(
      dump.contains {
        $0.hasPrefix(#"{"table":"user_table","id":"2","#)
          && $0.hasSuffix(#","createdTime":1448000061.25}"#)
      })
  }

  @Test("--ytk-table: a row whose json column is not JSON exits 1 naming the row")
  func ytkRowNotJSON() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("migrated.db")
    let rows = #"""
      [{"id":"good","json":"[1]","createdTime":"1448000000.5"},
      {"id":"bad","json":"{\"name\": tangqiao}","createdTime":"1448000001.5"}]
      """#
    let result = try Tool.run(["load", path, "--ytk-table", "user_table"], input: Self.data(rows))
    #expect(result.status == 1)
    #expect(result.standardOutput == "")
    #expect(
      result.standardError.hasPrefix(#"ytkkv load: row 2 (id "bad"): the json column is not JSON"#))

    let notRows = try Tool.run(["load", path, "--ytk-table", "user_table"], input: Self.data("{}"))
    #expect(notRows.status == 1)
    #expect(notRows.standardError.contains("not an array"))
    #expect(notRows.standardError.contains("sqlite3 -json DB"))
  }

  @Test("--ytk-table given text that is not JSON says what it expected, and creates nothing")
  func ytkInputNotJSON() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("migrated.db")
    let result = try Tool.run(
      ["load", path, "--ytk-table", "user_table"], input: Self.data("id|json|createdTime\n1|[1]|0"))
    #expect(result.status == 1)
    #expect(result.standardError.hasPrefix("ytkkv load: standard input is not JSON"))
    #expect(
      result.standardError.contains(
        "reads what `sqlite3 -json DB 'SELECT * FROM TABLE'` prints: a JSON array of rows"))
    let store = try KeyValueStore(path: path, options: StoreOptions(readOnly: true))
    #expect(try store.tableNames() == [])
  }

  @Test(
    "--ytk-table: an empty table (sqlite3 -json prints nothing for one) loads as an empty table")
  func ytkEmptyTable() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("migrated.db")
    for input in ["", "\n", "[]"] {
      let result = try Tool.run(
        ["load", path, "--ytk-table", "empty_table"], input: Self.data(input))
      #expect(result.status == 0, "\(input.debugDescription): \(result.standardError)")
      #expect(result.standardOutput == "loaded 0 items into 1 table\n")
    }
    let store = try KeyValueStore(path: path, options: StoreOptions(readOnly: true))
    #expect(try store.tableNames() == ["empty_table"])
    #expect(try store.allItems(in: "empty_table").isEmpty)
    try store.close()
  }

  @Test("missing or extra arguments and unknown options are usage errors (64)")
  func badArguments() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("test.db")

    try expectUsageErrors(
      [
        (["load"], "missing arguments"),
        (["load", path, "other.db"], "unexpected argument other.db"),
        (["load", path, "--ytk-table"], "--ytk-table needs a value"),
        (["load", path, "--replace"], "unknown option --replace"),
      ], usage: Self.usage)
    #expect(!StoreFiles.exists(path))
  }

  @Test("a missing store is created")
  func createsStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("new.db")

    let result = try Tool.run(
      ["load", path], input: Self.data(#"{"table":"t","id":"1","value":[]}"#))
    #expect(result.status == 0)
    #expect(result.outputLines == ["loaded 1 item into 1 table"])
    #expect(try Tool.run(["get", path, "t", "1"]).outputLines == ["[]"])

    let empty = scratch.appending("empty.db")
    let nothing = try Tool.run(["load", empty], input: Data())
    #expect(nothing.status == 0)
    #expect(nothing.outputLines == ["loaded 0 items into 0 tables"])
    #expect(try Tool.run(["tables", empty]).status == 0)
  }

  @Test("a store another process has open for writing exits 1: locked")
  func lockedStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    // No input: the command stops before reading it.
    try withStoreOpenForWriting(at: path) { _ in
      try expectLockedStoreRefused(["load", path], ["load", path, "--ytk-table", "user_table"])
    }
  }

  /// A JSON text as a `JSONValue`, read the same way whichever side it comes from.
  static func parsed(_ text: String) throws -> JSONValue {
    try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
  }

  /// What `sqlite3 -json ytk-sqlite.db 'SELECT * FROM TABLE'` prints: the shared fixture,
  /// or this copy of it when the fixtures folder is not there.
  static func ytkFixture(_ table: String) throws -> Data {
    let path = "/work/shared/fixtures/ytk-\(table).json"
    if let data = FileManager.default.contents(atPath: path) { return data }
    return Data(try #require(ytkFixtureCopies[table]).utf8)
  }

  static let ytkFixtureCopies = [
    "user_table": #"""
    [{"id":"1","json":"{\"id\":1,\"name\":\"tangqiao\",\"age\":30}","createdTime":"1448000000.0"},
    {"id":"2","json":"{\"id\":2,\"name\":\"唐巧\",\"age\":31,\"tags\":[\"ios\",\"kv\"],\"vip\":true,\"score\":98.5,\"manager\":null}","createdTime":"1448000061.25"},
    {"id":"string_key","json":"[\"a plain string with \\\"quotes\\\" and \\\\ backslash\"]","createdTime":"1448000122.5"},
    {"id":"number_key","json":"[42]","createdTime":"1448000183.75"},
    {"id":"float_key","json":"[3.14159]","createdTime":"1448000245.0"},
    {"id":"emoji 😀","json":"[\"表情 😀\"]","createdTime":"1448000306.25"}]
    """#,
    "cache_table": #"""
    [{"id":"feed_1","json":"{\"items\":[{\"id\":0,\"title\":\"item 0\"},{\"id\":1,\"title\":\"item 1\"},{\"id\":2,\"title\":\"item 2\"}]}","createdTime":"1448000367.5"},
    {"id":"feed_2","json":"[]","createdTime":"1448000428.75"}]
    """#,
  ]
}
