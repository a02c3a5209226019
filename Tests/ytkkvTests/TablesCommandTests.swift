import Foundation
import Testing
import YTKKeyValueStore

@Suite("ytkkv tables")
struct TablesCommandTests {
  static let usage = "Usage: ytkkv tables PATH"

  /// A closed store with three tables given out of order, one of them empty.
  static func makeStore(at path: String) throws {
    let store = try KeyValueStore(path: path)
    for table in ["user_table", "cache_table", "empty table"] { try store.createTable(table) }
    try store.put(["id": 1], id: "1", into: "user_table")
    try store.put(["id": 2], id: "2", into: "user_table")
    try store.put([], id: "feed_1", into: "cache_table")
    try store.close()
  }

  @Test("prints each table's name and item count, tab-separated, sorted by name")
  func listsTables() throws {
    let scratch = ScratchDirectory()
    let path = scratch.appending("test.db")
    try Self.makeStore(at: path)

    let result = try Tool.run(["tables", path])
    #expect(result.status == 0)
    #expect(result.outputLines == ["cache_table\t1", "empty table\t0", "user_table\t2"])
    #expect(result.standardError == "")
  }

  @Test("a store without tables prints nothing")
  func noTables() throws {
    let scratch = ScratchDirectory()
    let path = scratch.appending("test.db")
    try KeyValueStore(path: path).close()

    let result = try Tool.run(["tables", path])
    #expect(result.status == 0)
    #expect(result.standardOutput == "")
  }

  @Test("missing or extra arguments and unknown options are usage errors (64)")
  func badArguments() throws {
    let scratch = ScratchDirectory()
    let path = scratch.appending("test.db")
    try Self.makeStore(at: path)

    let cases: [(arguments: [String], reason: String)] = [
      (["tables"], "missing arguments"),
      (["tables", path, "user_table"], "unexpected argument user_table"),
      (["tables", path, "--json"], "unknown option --json"),
    ]
    for (arguments, reason) in cases {
      let result = try Tool.run(arguments)
      #expect(result.status == 64, "\(arguments)")
      #expect(result.standardOutput == "", "\(arguments)")
      #expect(result.errorLines == ["ytkkv tables: \(reason)", Self.usage], "\(arguments)")
    }
  }

  @Test("a missing store exits 1 and is not created")
  func missingStore() throws {
    let scratch = ScratchDirectory()
    let path = scratch.appending("missing.db")

    let result = try Tool.run(["tables", path])
    #expect(result.status == 1)
    #expect(result.standardOutput == "")
    #expect(result.errorLines == ["ytkkv tables: there is no store at \(path)"])
    #expect(!StoreFiles.exists(path))
  }

  @Test("an empty directory is not a store")
  func emptyDirectory() throws {
    let scratch = ScratchDirectory()
    let path = scratch.appending("empty")
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)

    let result = try Tool.run(["tables", path])
    #expect(result.status == 1)
    #expect(result.errorLines == ["ytkkv tables: there is no store at \(path)"])
    #expect(try FileManager.default.contentsOfDirectory(atPath: path) == [])
  }

  @Test("lists the tables of a store another process has open for writing")
  func lockedStore() throws {
    let scratch = ScratchDirectory()
    let path = scratch.appending("test.db")
    try Self.makeStore(at: path)
    let writer = try KeyValueStore(path: path)
    defer { try? writer.close() }
    try writer.createTable("new_table")

    let result = try Tool.run(["tables", path])
    #expect(result.status == 0)
    #expect(
      result.outputLines == [
        "cache_table\t1", "empty table\t0", "new_table\t0", "user_table\t2",
      ])
  }

  @Test("counts only the readable items of a damaged store")
  func damagedStore() throws {
    let scratch = ScratchDirectory()
    let store = try FiveItemStore(at: scratch.appending("damaged.db"))
    try store.damageValue(of: 2)

    let result = try Tool.run(["tables", store.path])
    #expect(result.status == 0)
    #expect(result.outputLines == ["t\t4"])
  }
}
