import Foundation
import Testing
import YTKKeyValueStore

@Suite("ytkkv tables")
struct TablesCommandTests {
  static let usage = "Usage: ytkkv tables PATH"

  /// Three tables given out of order, one of them empty.
  static let fixture = StoreFixture { store in
    for table in ["user_table", "cache_table", "empty table"] { try store.createTable(table) }
    try store.put(["id": 1], id: "1", into: "user_table")
    try store.put(["id": 2], id: "2", into: "user_table")
    try store.put([], id: "feed_1", into: "cache_table")
  }

  @Test("prints each table's name and item count, tab-separated, sorted by name")
  func listsTables() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    let result = try Tool.run(["tables", path])
    #expect(result.status == 0)
    #expect(result.outputLines == ["cache_table\t1", "empty table\t0", "user_table\t2"])
    #expect(result.standardError == "")
  }

  @Test("a store without tables prints nothing")
  func noTables() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("test.db")
    try KeyValueStore(path: path).close()

    let result = try Tool.run(["tables", path])
    #expect(result.status == 0)
    #expect(result.standardOutput == "")
  }

  @Test("missing or extra arguments and unknown options are usage errors (64)")
  func badArguments() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    try expectUsageErrors(
      [
        (["tables"], "missing arguments"),
        (["tables", path, "user_table"], "unexpected argument user_table"),
        (["tables", path, "--json"], "unknown option --json"),
      ], usage: Self.usage)
  }

  @Test("a missing store exits 1 and is not created")
  func missingStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("missing.db")

    try expectMissingStore(["tables", path], at: path)
  }

  @Test("an empty directory is not a store")
  func emptyDirectory() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("empty")
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)

    try expectNoStore(["tables", path], at: path)
    #expect(try FileManager.default.contentsOfDirectory(atPath: path) == [])
  }

  @Test("lists the tables of a store another process has open for writing")
  func lockedStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    try withStoreOpenForWriting(at: path) { writer in
      try writer.createTable("new_table")

      let result = try Tool.run(["tables", path])
      #expect(result.status == 0)
      #expect(
        result.outputLines == [
          "cache_table\t1", "empty table\t0", "new_table\t0", "user_table\t2",
        ])
    }
  }

  @Test("counts only the readable items of a damaged store")
  func damagedStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let store = try FiveItemStore(at: scratch.appending("damaged.db"))
    try store.damageValue(of: 2)

    let result = try Tool.run(["tables", store.path])
    #expect(result.status == 0)
    #expect(result.outputLines == ["t\t4"])
  }
}
