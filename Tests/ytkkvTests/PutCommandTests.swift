import Foundation
import Testing
import YTKKeyValueStore

@Suite("ytkkv put")
struct PutCommandTests {
  static let usage = "Usage: ytkkv put PATH TABLE ID JSON [--create]"

  /// The empty table `user_table`.
  static let fixture = StoreFixture { store in try store.createTable("user_table") }

  @Test("stores the value in canonical form (keys sorted, no spaces), as get reads it back")
  func storesCanonicalJSON() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    let put = try Tool.run([
      "put", path, "user_table", "2", #"{"name": "唐巧", "age": 31, "tags": ["ios", "kv"]}"#,
    ])
    #expect(put.status == 0)
    #expect(put.standardOutput == "")
    #expect(put.standardError == "")

    let get = try Tool.run(["get", path, "user_table", "2"])
    #expect(get.outputLines == [#"{"age":31,"name":"唐巧","tags":["ios","kv"]}"#])
    let store = try KeyValueStore(path: path, options: StoreOptions(readOnly: true))
    defer { try? store.close() }
    #expect(
      try store.object(id: "2", from: "user_table")
        == ["age": 31, "name": "唐巧", "tags": ["ios", "kv"]])
  }

  @Test("any JSON value may be stored, and a second put replaces the first")
  func replacesValues() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    for (json, stored) in [
      (" [ 1 , 2.5 , true , null ] ", "[1,2.5,true,null]"),
      (#""just a string""#, #""just a string""#),
      ("42", "42"),
      (#"{"b": {"d": 1, "c": 2}, "a": []}"#, #"{"a":[],"b":{"c":2,"d":1}}"#),
    ] {
      let put = try Tool.run(["put", path, "user_table", "1", json])
      #expect(put.status == 0, "\(json)")
      #expect(try Tool.run(["get", path, "user_table", "1"]).outputLines == [stored])
    }
    #expect(try Tool.run(["tables", path]).outputLines == ["user_table\t1"])
  }

  @Test("JSON that does not parse is a usage error (64) and stores nothing")
  func invalidJSON() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    for json in [#"{"name": "tangqiao""#, "{name: 1}", "", "[1,]", "nope"] {
      let result = try Tool.run(["put", path, "user_table", "1", json])
      #expect(result.status == 64, "\(json)")
      #expect(result.standardError.hasPrefix("ytkkv put: JSON is not valid"), "\(json)")
      #expect(result.errorLines.last == Self.usage, "\(json)")
    }
    #expect(try Tool.run(["tables", path]).outputLines == ["user_table\t0"])

    let newPath = scratch.appending("new.db")
    let create = try Tool.run(["put", newPath, "t", "1", "{bad", "--create"])
    #expect(create.status == 64)
    #expect(!StoreFiles.exists(newPath))
  }

  @Test("a missing table exits 1 without --create")
  func missingTable() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    let result = try Tool.run(["put", path, "cache_table", "feed_1", "[]"])
    #expect(result.status == 1)
    #expect(result.errorLines == [#"ytkkv put: there is no table named "cache_table" in \#(path)"#])
    #expect(try Tool.run(["tables", path]).outputLines == ["user_table\t0"])
  }

  @Test("--create makes the table in an existing store, and the store itself if missing")
  func creates() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    let table = try Tool.run(["put", path, "cache_table", "feed_1", "[]", "--create"])
    #expect(table.status == 0)
    #expect(try Tool.run(["tables", path]).outputLines == ["cache_table\t1", "user_table\t0"])
    #expect(try Tool.run(["get", path, "cache_table", "feed_1"]).outputLines == ["[]"])

    let newPath = scratch.appending("new.db")
    let store = try Tool.run(["put", "--create", newPath, "t", "k", #"{"v": 1}"#])
    #expect(store.status == 0)
    #expect(store.standardError == "")
    #expect(try Tool.run(["tables", newPath]).outputLines == ["t\t1"])
    #expect(try Tool.run(["get", newPath, "t", "k"]).outputLines == [#"{"v":1}"#])

    // Given for a table that exists, --create keeps what the table holds.
    #expect(try Tool.run(["put", newPath, "t", "k2", "2", "--create"]).status == 0)
    #expect(try Tool.run(["tables", newPath]).outputLines == ["t\t2"])
  }

  @Test("after --, an id that looks like an option is an id")
  func idsAfterDoubleDash() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    for id in ["--help", "-h", "--create"] {
      let result = try Tool.run(["put", path, "user_table", "--", id, "[1]"])
      #expect(result.status == 0, "\(id)")
      #expect(result.standardOutput == "", "\(id)")
    }
    let store = try KeyValueStore(path: path, options: StoreOptions(readOnly: true))
    defer { try? store.close() }
    #expect(try store.allItems(in: "user_table").map(\.id) == ["--create", "--help", "-h"])
  }

  @Test("missing or extra arguments and unknown options are usage errors (64)")
  func badArguments() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    try expectUsageErrors(
      [
        (["put"], "missing arguments"),
        (["put", path, "user_table", "1"], "missing arguments"),
        (["put", path, "user_table", "1", "[]", "extra"], "unexpected argument extra"),
        (["put", path, "user_table", "1", "[]", "--force"], "unknown option --force"),
      ], usage: Self.usage)
    #expect(try Tool.run(["tables", path]).outputLines == ["user_table\t0"])
  }

  @Test("a missing store exits 1 and is not created without --create")
  func missingStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("missing.db")

    try expectMissingStore(["put", path, "user_table", "1", "[]"], at: path)
  }

  @Test("a store another process has open for writing exits 1: locked")
  func lockedStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    try withStoreOpenForWriting(at: path) { _ in
      try expectLockedStoreRefused(
        ["put", path, "user_table", "1", "[]"], ["put", path, "user_table", "1", "[]", "--create"])
    }
    #expect(try Tool.run(["tables", path]).outputLines == ["user_table\t0"])
  }
}
