import Foundation
import Testing
import YTKKeyValueStore

@Suite("ytkkv import")
struct ImportCommandTests {
  static let usage = "Usage: ytkkv import STORE OLD.sqlite [--table NAME]..."

  /// YTKKeyValueStore's own fixture database (../shared/fixtures, committed beside the
  /// reader's tests): user_table with 6 rows, cache_table with 2.
  static let ytkDatabase = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent(
      "SQLiteReaderTests/Fixtures/ytk-sqlite.db"
    ).path

  @Test("imports every YTK table of an SQLite file, or the named ones, with each createdTime")
  func imports() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("migrated.db")
    let result = try Tool.run(["import", path, Self.ytkDatabase])
    #expect(result.status == 0, "\(result.standardError)")
    #expect(result.outputLines == ["imported 2 tables, 8 items"])
    #expect(result.standardError == "")
    #expect(try Tool.run(["tables", path]).outputLines.count == 2)
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

    let one = scratch.appending("one.db")
    let named = try Tool.run(["import", one, Self.ytkDatabase, "--table", "cache_table"])
    #expect(named.status == 0)
    #expect(named.outputLines == ["imported 1 table, 2 items"])
    let both = try Tool.run([
      "import", scratch.appending("both.db"), Self.ytkDatabase, "--table", "cache_table",
      "--table", "user_table",
    ])
    #expect(both.outputLines == ["imported 2 tables, 8 items"])
  }

  @Test("a file that cannot be read exits 1, imports nothing and leaves no store behind")
  func unreadable() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("migrated.db")
    let foreign = scratch.appending("notes.txt")
    try Data("plain text, not a database".utf8).write(to: URL(fileURLWithPath: foreign))
    let original = try Data(contentsOf: URL(fileURLWithPath: Self.ytkDatabase))
    let truncated = scratch.appending("truncated.sqlite")
    try original.prefix(original.count / 2).write(to: URL(fileURLWithPath: truncated))
    for file in [foreign, truncated, scratch.appending("missing.sqlite")] {
      let path = scratch.appending("from-" + (file as NSString).lastPathComponent)
      let result = try Tool.run(["import", path, file])
      #expect(result.status == 1, "\(file)")
      #expect(result.standardOutput == "")
      #expect(result.standardError.hasPrefix("ytkkv import: "), "\(result.standardError)")
      #expect(result.standardError.contains((file as NSString).lastPathComponent))
      #expect(!FileManager.default.fileExists(atPath: path), "\(file) left a store")
    }
    let missing = try Tool.run(["import", path, Self.ytkDatabase, "--table", "nope"])
    #expect(!FileManager.default.fileExists(atPath: path))
    #expect(missing.status == 1)
    #expect(missing.standardError.contains(#"no table named "nope""#))
  }

  @Test(
    "rows whose json is not JSON and tables whose name the store refuses are listed on standard error; the rest is imported, exit 0"
  )
  func rejectedRows() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let database = scratch.appending("old.sqlite")
    // YTKKeyValueStore's table and statement, through Python's sqlite3 module.
    let script = """
      import sqlite3, sys
      con = sqlite3.connect(sys.argv[1])
      con.execute("CREATE TABLE IF NOT EXISTS t (id TEXT NOT NULL, json TEXT NOT NULL, "
                  "createdTime TEXT NOT NULL, PRIMARY KEY(id))")
      for key, text in [("good", '{"a":1}'), ("bad", "{a:1}")]:
          con.execute("REPLACE INTO t (id, json, createdTime) values (?, ?, ?)",
                      (key, text, 1448000000.5))
      con.execute('CREATE TABLE "" (id TEXT NOT NULL, json TEXT NOT NULL, '
                  'createdTime TEXT NOT NULL, PRIMARY KEY(id))')
      con.commit()
      """
    let python = Process()
    python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    python.arguments = ["python3", "-c", script, database]
    try python.run()
    python.waitUntilExit()
    try #require(python.terminationStatus == 0, "this test needs python3 with its sqlite3 module")

    let path = scratch.appending("migrated.db")
    let result = try Tool.run(["import", path, database])
    #expect(result.status == 0)
    #expect(result.outputLines == ["imported 1 table, 1 item (1 table and 1 row left out)"])
    #expect(result.errorLines.count == 2)
    #expect(
      result.errorLines.first?.hasPrefix(
        #"left out: table "": the table's name is not one this store allows"#) == true,
      "\(result.standardError)")
    #expect(
      result.errorLines.last?.hasPrefix(
        #"left out: table "t", id "bad": the json column is not JSON"#) == true,
      "\(result.standardError)")
    #expect(try Tool.run(["get", path, "t", "good"]).outputLines == [#"{"a":1}"#])
  }

  @Test("missing or extra arguments and unknown options are usage errors (64)")
  func badArguments() throws {
    try expectUsageErrors(
      [
        (["import"], "missing arguments"),
        (["import", "store.db"], "missing arguments"),
        (["import", "a", "b", "c"], "unexpected argument c"),
        (["import", "a", "b", "--table"], "--table needs a value"),
        (["import", "a", "b", "--json"], "unknown option --json"),
      ], usage: Self.usage)
  }
}
