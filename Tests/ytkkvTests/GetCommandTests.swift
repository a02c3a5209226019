import Foundation
import Testing
import YTKKeyValueStore

@Suite("ytkkv get")
struct GetCommandTests {
  static let usage = "Usage: ytkkv get PATH TABLE ID"

  /// Table `user_table` holding the user of YTKKeyValueStore's example.
  static let fixture = StoreFixture { store in
    try store.createTable("user_table")
    try store.put(["id": 1, "name": "tangqiao", "age": 30], id: "1", into: "user_table")
    try store.put(string: "a plain string", id: "user_name", into: "user_table")
    try store.put(number: 98.5, id: "user_score", into: "user_table")
  }

  @Test("prints the stored JSON in canonical form and exits 0")
  func printsStoredJSON() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    let user = try Tool.run(["get", path, "user_table", "1"])
    #expect(user.status == 0)
    #expect(user.standardOutput == #"{"age":30,"id":1,"name":"tangqiao"}"# + "\n")
    #expect(user.standardError == "")

    // Strings and numbers read back the way YTKKeyValueStore stored them: wrapped in [ ].
    #expect(
      try Tool.run(["get", path, "user_table", "user_name"]).outputLines == [
        #"["a plain string"]"#
      ])
    #expect(try Tool.run(["get", path, "user_table", "user_score"]).outputLines == ["[98.5]"])
  }

  @Test("a missing id exits 1 with a message naming the id and the table")
  func missingID() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    let result = try Tool.run(["get", path, "user_table", "3"])
    #expect(result.status == 1)
    #expect(result.standardOutput == "")
    #expect(result.errorLines == [#"ytkkv get: no item with id "3" in table "user_table""#])
  }

  @Test("a missing table exits 1 with a message naming the table")
  func missingTable() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    try expectMissingTable(["get", path, "cache_table", "1"], table: "cache_table")
  }

  @Test("after --, an id that looks like an option is an id")
  func idsAfterDoubleDash() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)
    let store = try KeyValueStore(path: path)
    try store.put(["flag": "--help"], id: "--help", into: "user_table")
    try store.put(["flag": "-h"], id: "-h", into: "user_table")
    try store.close()

    for id in ["--help", "-h"] {
      let result = try Tool.run(["get", path, "user_table", "--", id])
      #expect(result.status == 0, "\(id)")
      #expect(result.outputLines == [#"{"flag":"\#(id)"}"#], "\(id)")
    }
  }

  @Test("missing or extra arguments and unknown options are usage errors (64)")
  func badArguments() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    try expectUsageErrors(
      [
        (["get"], "missing arguments"),
        (["get", path, "user_table"], "missing arguments"),
        (["get", path, "user_table", "1", "2"], "unexpected argument 2"),
        (["get", path, "user_table", "1", "--json"], "unknown option --json"),
      ], usage: Self.usage)
  }

  @Test("a missing store exits 1 and is not created")
  func missingStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("missing.db")

    try expectMissingStore(["get", path, "user_table", "1"], at: path)
  }

  @Test("reads a store another process has open for writing, as that process wrote it")
  func lockedStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    try withStoreOpenForWriting(at: path) { writer in
      try writer.put(["id": 2, "name": "唐巧"], id: "2", into: "user_table")

      let result = try Tool.run(["get", path, "user_table", "2"])
      #expect(result.status == 0)
      #expect(result.outputLines == [#"{"id":2,"name":"唐巧"}"#])
      #expect(
        try Tool.run(["get", path, "user_table", "1"]).outputLines == [
          #"{"age":30,"id":1,"name":"tangqiao"}"#
        ])
    }
  }

  @Test("in a damaged store, undamaged ids still read; the damaged one is missing")
  func damagedStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let store = try FiveItemStore(at: scratch.appending("damaged.db"))
    try store.damageValue(of: 2)

    for number in [1, 3, 5] {
      let result = try Tool.run(["get", store.path, FiveItemStore.table, "k\(number)"])
      #expect(result.status == 0, "k\(number)")
      #expect(result.outputLines == [FiveItemStore.value(number)])
    }
    let damaged = try Tool.run(["get", store.path, FiveItemStore.table, "k2"])
    #expect(damaged.status == 1)
    #expect(damaged.errorLines == [#"ytkkv get: no item with id "k2" in table "t""#])
  }
}
