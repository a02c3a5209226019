import Foundation
import Testing

@testable import YTKKeyValueStore

/// `importYTKDatabase(at:tables:)` against SQLite's own answers: the fixture databases of
/// Tests/SQLiteReaderTests/Fixtures/make_fixtures.py (YTK tables, rows that are not JSON, an
/// empty table, WALs with committed and uncommitted frames, hot journals), each with what
/// SQLite returns from it.
@Suite("Importing a YTKKeyValueStore SQLite database")
struct KeyValueStoreImportTests {
  /// The fixtures, made once per test process into a temporary directory; nil (and the
  /// tests say so) where python3 with its sqlite3 module is missing.
  static let fixtures: Result<String, any Error> = Result {
    let directory = NSTemporaryDirectory() + "/ytk-import-fixtures-\(UUID().uuidString)"
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent(
        "SQLiteReaderTests/Fixtures/make_fixtures.py"
      ).path
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", script, directory]
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
      throw KeyValueStoreError(.io, "make_fixtures.py exited \(process.terminationStatus)")
    }
    return directory
  }

  static func fixture(_ name: String) throws -> String {
    switch fixtures {
    case .success(let directory): return directory + "/" + name + ".db"
    case .failure(let error):
      Issue.record("the fixtures need python3 with its sqlite3 module: \(error)")
      throw error
    }
  }

  /// A YTK table as SQLite returns it: per row, the id, json and createdTime values in the
  /// fixture script's encoding (`{"text": …}`, `{"real": hex}`, `{"integer": "…"}`, null).
  struct ExpectedTable {
    var name: String
    var rows: [(id: Any?, json: Any?, createdTime: Any?)]
  }

  static func expectedYTKTables(_ name: String) throws -> [ExpectedTable] {
    let path = try fixture(name).replacingOccurrences(of: ".db", with: ".expected.json")
    let root = try #require(
      try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path)))
        as? [String: Any])
    var tables: [ExpectedTable] = []
    for table in try #require(root["tables"] as? [[String: Any]]) {
      guard let columns = table["columns"] as? [String],
        let id = columns.firstIndex(of: "id"), let json = columns.firstIndex(of: "json"),
        let createdTime = columns.firstIndex(of: "createdTime")
      else { continue }
      let rows = try #require(table["rows"] as? [[Any]]).map { row in
        let values = row[1] as! [Any]
        return (
          id: values[id] as Any?, json: values[json] as Any?,
          createdTime: values[createdTime] as Any?
        )
      }
      tables.append(ExpectedTable(name: try #require(table["name"] as? String), rows: rows))
    }
    return tables
  }

  static func text(_ value: Any?) -> String? { (value as? [String: String])?["text"] }

  /// Microseconds since 1970 of SQLite's createdTime value, as the store must keep them.
  static func microseconds(_ value: Any?) -> Int64? {
    if let text = text(value) {
      let parts = text.split(separator: ".", omittingEmptySubsequences: false)
      guard let seconds = Int64(parts[0]) else { return nil }
      var fraction = parts.count > 1 ? String(parts[1].prefix(6)) : ""
      fraction += String(repeating: "0", count: 6 - fraction.count)
      return seconds * 1_000_000 + Int64(fraction)!
    }
    if let hex = (value as? [String: String])?["real"], let bits = UInt64(hex, radix: 16) {
      return Int64((Double(bitPattern: bits) * 1_000_000).rounded())
    }
    return nil
  }

  @Test(
    "every YTK table, id, value and createdTime is what SQLite returns; rows that are not JSON are listed",
    arguments: [
      "ytk-sqlite", "ytk-tables", "wal", "wal-big-endian", "wal-damaged", "journal-hot",
      "journal-hot-nosync", "journal-persist",
    ])
  func differential(fixture name: String) throws {
    let directory = TemporaryDirectory()
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    let report = try store.importYTKDatabase(at: try Self.fixture(name))
    let expected = try Self.expectedYTKTables(name)
    #expect(report.tables == expected.map(\.name).sorted(), "\(name)")
    #expect(try store.tableNames() == expected.map(\.name).sorted(), "\(name)")
    let rejected = Set(report.rejected.map { $0.table + "/" + $0.id })
    #expect(rejected.count == report.rejected.count, "\(name): a row listed twice")
    var items = 0
    for table in expected {
      var ids: Set<String> = []
      for row in table.rows {
        // Every row is imported, or listed as left out: never both, never neither.
        guard let id = Self.text(row.id), let json = Self.text(row.json),
          !rejected.contains(table.name + "/" + id)
        else {
          #expect(
            rejected.contains(table.name + "/" + (Self.text(row.id) ?? ""))
              || Self.text(row.id) == nil, "\(name) \(table.name): \(row)")
          continue
        }
        // Foundation's reader as the oracle of the value (it accepts more than JSON, such as
        // a trailing comma, which this store refuses and lists).
        let value = try #require(
          try? JSONSerialization.jsonObject(with: Data(json.utf8), options: .fragmentsAllowed),
          "\(name) \(table.name)/\(id) was imported, but its json is not JSON: \(json)")
        items += 1
        ids.insert(id)
        let item = try #require(
          try store.item(id: id, from: table.name), "\(name) \(table.name)/\(id)")
        let stored = try JSONSerialization.jsonObject(
          with: Data(item.object.description.utf8), options: .fragmentsAllowed)
        #expect(
          try Self.canonical(stored) == Self.canonical(value),
          "\(name) \(table.name)/\(id): \(item.object) vs \(json)")
        if let micros = Self.microseconds(row.createdTime) {
          let kept = Int64((item.createdTime.timeIntervalSince1970 * 1_000_000).rounded())
          #expect(kept == micros, "\(name) \(table.name)/\(id) createdTime")
        }
      }
      #expect(try store.count(in: table.name) == ids.count, "\(name) \(table.name)")
    }
    #expect(report.items == items, "\(name)")
    for row in report.rejected { #expect(!row.reason.isEmpty) }
  }

  /// A JSON value as Foundation writes it with sorted keys, for comparing two readings.
  static func canonical(_ value: Any) throws -> Data {
    try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed])
  }

  @Test("rows that are not JSON are left out with their table, id and why; the rest is imported")
  func rejectedRows() throws {
    let directory = TemporaryDirectory()
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    let report = try store.importYTKDatabase(
      at: try Self.fixture("ytk-tables"), tables: ["mixed_table"])
    #expect(report.tables == ["mixed_table"])
    let reasons = Dictionary(
      report.rejected.map { ($0.id, $0.reason) }, uniquingKeysWith: { a, _ in a })
    for id in ["bad-1", "bad-2", "bad-3", "bad-4"] {
      #expect(reasons[id]?.contains("not JSON") == true, "\(id): \(reasons)")
    }
    #expect(report.rejected.allSatisfy { $0.table == "mixed_table" })
    #expect(try store.object(id: "good", from: "mixed_table") == [true])
    // A createdTime SQLite kept as a real is read all the same.
    let item = try #require(try store.item(id: "real-time", from: "mixed_table"))
    #expect(item.createdTime.timeIntervalSince1970 == 1_448_000_300.5)
  }

  @Test(
    "tables: only the named ones; a missing name or a table without YTK's columns imports nothing")
  func namedTables() throws {
    let directory = TemporaryDirectory()
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    let path = try Self.fixture("wal")
    expectError(.tableNotFound, mentioning: ["nope", path]) {
      try store.importYTKDatabase(at: path, tables: ["wal_table", "nope"])
    }
    expectError(.invalidArgument, mentioning: ["made_in_wal", "not a YTKKeyValueStore table"]) {
      try store.importYTKDatabase(at: path, tables: ["made_in_wal"])
    }
    #expect(try store.tableNames().isEmpty)
    let report = try store.importYTKDatabase(at: path, tables: ["before_wal", "before_wal"])
    #expect(report.tables == ["before_wal"])
    #expect(try store.tableNames() == ["before_wal"])
  }

  @Test("an empty table is created empty; an existing table keeps its other items")
  func emptyAndExisting() throws {
    let directory = TemporaryDirectory()
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    try store.createTable("user_table")
    try store.put(["kept": true], id: "mine", into: "user_table")
    try store.put(["old": true], id: "user-0", into: "user_table")
    let report = try store.importYTKDatabase(at: try Self.fixture("ytk-tables"))
    #expect(report.tables == ["empty_table", "mixed_table", "user_table"])
    #expect(try store.count(in: "empty_table") == 0)
    #expect(try store.object(id: "mine", from: "user_table") == ["kept": true])
    #expect(
      try store.object(id: "user-0", from: "user_table") == ["id": 0, "name": "name 0", "tags": []])
  }

  @Test("a file that cannot be read imports nothing: damaged, truncated, not SQLite, missing")
  func unreadableFiles() throws {
    let directory = TemporaryDirectory()
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    let original = try Data(contentsOf: URL(fileURLWithPath: try Self.fixture("tree-512")))
    // Cut in the middle: the tables' later pages are gone.
    let truncated = directory.appending("truncated.sqlite")
    try original.prefix(original.count / 2).write(to: URL(fileURLWithPath: truncated))
    expectError(.corrupted, mentioning: ["truncated.sqlite"]) {
      try store.importYTKDatabase(at: truncated)
    }
    let foreign = directory.appending("notes.txt")
    try Data("these are not the pages you are looking for".utf8).write(
      to: URL(fileURLWithPath: foreign))
    expectError(.corrupted, mentioning: ["notes.txt"]) { try store.importYTKDatabase(at: foreign) }
    expectError(.io, mentioning: ["missing.sqlite"]) {
      try store.importYTKDatabase(at: directory.appending("missing.sqlite"))
    }
    #expect(try store.tableNames().isEmpty)
  }
}
