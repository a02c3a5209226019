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
    try python([script, directory])
    return directory
  }

  /// Runs python3 with `arguments`; throws if it fails.
  static func python(_ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3"] + arguments
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
      throw KeyValueStoreError(.io, "python3 \(arguments[0]) exited \(process.terminationStatus)")
    }
  }

  /// A database that SQLite (python3's sqlite3 module) makes by running `sql`.
  static func database(_ sql: String, in directory: TemporaryDirectory) throws -> String {
    let path = directory.appending("made.sqlite")
    let script = """
      import sqlite3, sys
      con = sqlite3.connect(sys.argv[1], isolation_level=None)
      con.executescript(sys.argv[2])
      con.close()
      """
    do {
      try python(["-c", script, path, sql])
    } catch {
      Issue.record("the tests' databases need python3 with its sqlite3 module: \(error)")
      throw error
    }
    return path
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

  @Test(
    "into a table with a default lifetime, imported items get it from the import, as puts do; other tables' items never expire"
  )
  func importIntoTableWithLifetime() throws {
    let directory = TemporaryDirectory()
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    try store.createTable("user_table", expiresAfter: 3600)
    let before = Date()
    _ = try store.importYTKDatabase(at: try Self.fixture("ytk-tables"))
    let after = Date()
    let imported = try #require(try store.item(id: "user-0", from: "user_table"))
    let expires = try #require(imported.expiresTime, "no expiry from the table's lifetime")
    #expect(expires >= before.addingTimeInterval(3600 - 1))
    #expect(expires <= after.addingTimeInterval(3600 + 1))
    // The item keeps the createdTime it had in the old database.
    #expect(imported.createdTime < before.addingTimeInterval(-1))
    let other = try #require(try store.allItems(in: "mixed_table").first)
    #expect(other.expiresTime == nil)
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

  @Test(
    "damage met after rows were written: the new tables are removed; with an existing table nothing is written"
  )
  func damageAfterRowsWereWritten() throws {
    let directory = TemporaryDirectory()
    let made = try Self.database(
      """
      PRAGMA page_size = 1024;
      CREATE TABLE early (id, json, createdTime);
      INSERT INTO early VALUES ('a', '[1]', '1');
      CREATE TABLE late (id, json, createdTime);
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 6000)
      INSERT INTO late SELECT 'id' || i, '{"n":' || i || '}', '1448000000' FROM n;
      """, in: directory)
    // The last page is a leaf of `late`, read after thousands of its rows: an impossible page
    // type there.
    var bytes = try Data(contentsOf: URL(fileURLWithPath: made))
    bytes[bytes.count - 1024] = 0x77
    let path = directory.appending("damaged.sqlite")
    try bytes.write(to: URL(fileURLWithPath: path))

    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    expectError(.corrupted, mentioning: ["damaged.sqlite"]) {
      try store.importYTKDatabase(at: path)
    }
    #expect(try store.tableNames().isEmpty)

    try store.createTable("late")
    try store.put(["kept": true], id: "id1", into: "late")
    expectError(.corrupted, mentioning: ["damaged.sqlite"]) {
      try store.importYTKDatabase(at: path)
    }
    #expect(try store.tableNames() == ["late"])
    #expect(try store.count(in: "late") == 1)
    #expect(try store.object(id: "id1", from: "late") == ["kept": true])
  }

  @Test("rows whose id or json is not text, or whose id is too long, are listed with why")
  func rejectedValueKinds() throws {
    let directory = TemporaryDirectory()
    let longID = String(repeating: "i", count: KeyValueStore.maxIDLength + 1)
    let path = try Self.database(
      """
      CREATE TABLE odd (id, json, createdTime);
      INSERT INTO odd VALUES (7, '[1]', '1'), (1.5, '[1]', '1'), (NULL, '[1]', '1'),
        (x'0102', '[1]', '1'), ('json-integer', 5, '1'), ('json-null', NULL, '1'),
        ('json-blob', x'00', '1'), ('\(longID)', '[1]', '1'), ('good', '[1]', '1');
      """, in: directory)
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    let report = try store.importYTKDatabase(at: path)
    #expect(report.items == 1)
    #expect(report.rejected.allSatisfy { $0.table == "odd" })
    var reasons = Dictionary(
      report.rejected.map { ($0.id, $0.reason) }, uniquingKeysWith: { first, _ in first })
    let longReason = reasons.removeValue(forKey: longID)
    #expect(
      longReason?.contains("\(KeyValueStore.maxIDLength)") == true,
      "\(String(describing: longReason))")
    #expect(
      reasons == [
        "the integer 7": "the id is the integer 7, not text",
        "the real 1.5": "the id is the real 1.5, not text",
        "NULL": "the id is NULL, not text",
        "a blob of 2 bytes": "the id is a blob of 2 bytes, not text",
        "json-integer": "the json column is the integer 5, not text",
        "json-null": "the json column is NULL, not text",
        "json-blob": "the json column is a blob of 1 bytes, not text",
      ])
    #expect(try store.object(id: "good", from: "odd") == [1])
  }

  /// Text that is not well-formed in each encoding the tests use: SQL literals of text whose
  /// bytes are as written (`CAST(x'…' AS TEXT)` keeps a blob's bytes as the database's text).
  static let illFormed = [
    // "a" and a byte no UTF-8 has, twice; `["a` then such a byte, then `"]`.
    (
      encoding: "UTF-8", id1: "CAST(x'61ff' AS TEXT)", id2: "CAST(x'61fe' AS TEXT)",
      json: "CAST(x'5b2261ff225d' AS TEXT)"
    ),
    // "a" and an unpaired high surrogate, two different ones; `["a`, one, `"]`.
    (
      encoding: "UTF-16le", id1: "CAST(x'610000d8' AS TEXT)", id2: "CAST(x'610001d8' AS TEXT)",
      json: "CAST(x'5b002200610000d822005d00' AS TEXT)"
    ),
  ]

  @Test(
    "ids that are not well-formed text are listed, not merged into one id; so is such json"
  )
  func illFormedIDs() throws {
    for text in Self.illFormed {
      let directory = TemporaryDirectory()
      // YTKKeyValueStore's own schema: the two ids differ for SQLite (its primary key), but
      // both read "a\u{FFFD}" with the ill-formed part replaced, as does the third, whose
      // text is well-formed and holds U+FFFD itself.
      let path = try Self.database(
        """
        PRAGMA encoding = '\(text.encoding)';
        CREATE TABLE user_table (id TEXT NOT NULL, json TEXT NOT NULL, createdTime TEXT NOT NULL,
          PRIMARY KEY(id));
        INSERT INTO user_table VALUES ('a' || char(65533), '[3]', '1'),
          (\(text.id1), '[1]', '2'), (\(text.id2), '[2]', '3'),
          ('bad-text', \(text.json), '4'), ('good', '[4]', '5');
        """, in: directory)
      let store = try KeyValueStore(path: directory.storePath)
      defer { try? store.close() }
      let report = try store.importYTKDatabase(at: path)
      #expect(report.items == 2, "\(text.encoding)")
      #expect(try store.count(in: "user_table") == 2, "\(text.encoding)")
      #expect(try store.object(id: "a\u{FFFD}", from: "user_table") == [3], "\(text.encoding)")
      #expect(try store.object(id: "good", from: "user_table") == [4], "\(text.encoding)")
      // Every row left out is listed: the two ids, each with its own bytes where they are
      // UTF-8, and the json that is not text.
      let rejected = report.rejected.map { "\($0.table)/\($0.id): \($0.reason)" }
      #expect(rejected.count == 3, "\(text.encoding): \(rejected)")
      let ids = report.rejected.filter { $0.id == "a\u{FFFD}" }
      #expect(ids.count == 2, "\(text.encoding): \(rejected)")
      for row in ids {
        #expect(row.table == "user_table")
        #expect(
          row.reason.contains("not well-formed \(text.encoding.prefix(6))"),
          "\(text.encoding): \(row.reason)")
      }
      if text.encoding == "UTF-8" {
        #expect(ids.map(\.reason).contains { $0.contains("61 FF") }, "\(rejected)")
        #expect(ids.map(\.reason).contains { $0.contains("61 FE") }, "\(rejected)")
      }
      let json = try #require(report.rejected.first { $0.id == "bad-text" }, "\(rejected)")
      #expect(json.reason.contains("json"), "\(text.encoding): \(json.reason)")
    }
  }

  @Test(
    "an ill-formed id is listed with its first 32 bytes in hex, two digits each, and … for the rest"
  )
  func illFormedIDBytes() throws {
    let directory = TemporaryDirectory()
    // A byte below 0x10, forty `a`, and a byte no UTF-8 has: 42 bytes.
    let path = try Self.database(
      """
      CREATE TABLE t (id TEXT NOT NULL, json TEXT NOT NULL, createdTime TEXT NOT NULL,
        PRIMARY KEY(id));
      INSERT INTO t VALUES (CAST(x'05\(String(repeating: "61", count: 40))ff' AS TEXT), '[1]', '1');
      """, in: directory)
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    let report = try store.importYTKDatabase(at: path)
    let row = try #require(report.rejected.first)
    let shown = "05 " + Array(repeating: "61", count: 31).joined(separator: " ") + " …"
    #expect(row.reason.contains("(bytes \(shown))"), "\(row.reason)")
  }

  @Test(
    "tables whose names are not well-formed text are not created; their rows are listed with why"
  )
  func illFormedTableNames() throws {
    for text in Self.illFormed {
      let directory = TemporaryDirectory()
      // Tables `tab_AA` and `tab_BB`, then renamed in the file's bytes (the same length, so the
      // records stay valid) to names that differ but both read "tab_\u{FFFD}X"; a third has
      // that well-formed name.
      let made = try Self.database(
        """
        PRAGMA encoding = '\(text.encoding)';
        CREATE TABLE tab_AA (id, json, createdTime);
        CREATE TABLE tab_BB (id, json, createdTime);
        CREATE TABLE "tab_\u{FFFD}X" (id, json, createdTime);
        CREATE TABLE fine (id, json, createdTime);
        INSERT INTO tab_AA VALUES ('a', '[1]', '1');
        INSERT INTO tab_BB VALUES ('a', '[2]', '2');
        INSERT INTO "tab_\u{FFFD}X" VALUES ('a', '[3]', '3');
        INSERT INTO fine VALUES ('a', '[4]', '4');
        """, in: directory)
      let utf16 = text.encoding == "UTF-16le"
      func encoded(_ string: String) -> Data {
        utf16
          ? Data(string.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }) : Data(string.utf8)
      }
      var bytes = try Data(contentsOf: URL(fileURLWithPath: made))
      let replacements: [(String, [UInt8])] = [
        ("tab_AA", utf16 ? [0x00, 0xD8, 0x58, 0x00] : [0xFF, 0x58]),
        ("tab_BB", utf16 ? [0x01, 0xD8, 0x58, 0x00] : [0xFE, 0x58]),
      ]
      for (name, replacement) in replacements {
        let new = encoded("tab_") + Data(replacement)
        var replaced = 0
        while let range = bytes.range(of: encoded(name)) {
          bytes.replaceSubrange(range, with: new)
          replaced += 1
        }
        // The name, the table's name and the CREATE statement of its sqlite_schema row.
        #expect(replaced == 3, "\(text.encoding) \(name)")
      }
      let path = directory.appending("renamed.sqlite")
      try bytes.write(to: URL(fileURLWithPath: path))

      let store = try KeyValueStore(path: directory.storePath)
      defer { try? store.close() }
      let report = try store.importYTKDatabase(at: path)
      #expect(report.tables == ["fine", "tab_\u{FFFD}X"], "\(text.encoding)")
      #expect(try store.tableNames() == ["fine", "tab_\u{FFFD}X"], "\(text.encoding)")
      #expect(try store.object(id: "a", from: "tab_\u{FFFD}X") == [3], "\(text.encoding)")
      #expect(try store.object(id: "a", from: "fine") == [4], "\(text.encoding)")
      #expect(report.items == 2, "\(text.encoding)")
      let rejected = report.rejected.map { "\($0.table)/\($0.id): \($0.reason)" }
      #expect(rejected.count == 2, "\(text.encoding): \(rejected)")
      for row in report.rejected {
        #expect(row.table == "tab_\u{FFFD}X" && row.id == "a", "\(text.encoding): \(rejected)")
        #expect(
          row.reason.contains("name is not well-formed \(text.encoding.prefix(6))"),
          "\(text.encoding): \(row.reason)")
      }
      // Each table left out is listed once, under its name as read, with the rows' reason.
      #expect(
        report.rejectedTables.map(\.table) == ["tab_\u{FFFD}X", "tab_\u{FFFD}X"],
        "\(text.encoding)")
      #expect(
        report.rejectedTables.map(\.reason) == report.rejected.map(\.reason), "\(text.encoding)")
      // Named, the tables whose names are not well-formed are not those of the name.
      let named = try store.importYTKDatabase(at: path, tables: ["tab_\u{FFFD}X"])
      #expect(named.tables == ["tab_\u{FFFD}X"] && named.items == 1, "\(text.encoding)")
      #expect(named.rejected.isEmpty, "\(text.encoding)")
    }
  }

  @Test(
    "createdTime as text, integer or real is seconds since 1970; NULL, a blob or other text is the import's time"
  )
  func createdTimeKinds() throws {
    let directory = TemporaryDirectory()
    let path = try Self.database(
      """
      CREATE TABLE times (id, json, createdTime);
      INSERT INTO times VALUES ('text', '[1]', '1448000000.5'), ('integer', '[2]', 1448000001),
        ('real', '[3]', 1448000002.25), ('null', '[4]', NULL), ('blob', '[5]', x'31'),
        ('word', '[6]', 'yesterday');
      """, in: directory)
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    let before = Date()
    try store.importYTKDatabase(at: path)
    let after = Date()
    let expected: [String: Double] = [
      "text": 1_448_000_000.5, "integer": 1_448_000_001, "real": 1_448_000_002.25,
    ]
    for (id, seconds) in expected {
      #expect(try store.item(id: id, from: "times")?.createdTime.timeIntervalSince1970 == seconds)
    }
    for id in ["null", "blob", "word"] {
      let created = try #require(try store.item(id: id, from: "times")).createdTime
      #expect(
        created >= before.addingTimeInterval(-1) && created <= after.addingTimeInterval(1), "\(id)")
    }
  }

  @Test(
    "a table whose name the store does not allow is not made; its rows are listed, as long ids are"
  )
  func namesAndIDsOverTheLimits() throws {
    let directory = TemporaryDirectory()
    // SQLite takes names longer than 255 bytes, and an empty one; YTKKeyValueStore made
    // tables of any name its app gave.
    let long = String(repeating: "t", count: 256)
    let longest = String(repeating: "l", count: 255)
    let longestID = String(repeating: "i", count: KeyValueStore.maxIDLength)
    // (Made by SQLite: two such ids are more than one argument of a process may hold.)
    let idSQL = "replace(hex(zeroblob(\(KeyValueStore.maxIDLength))), '00', 'i')"
    let path = try Self.database(
      """
      CREATE TABLE fine (id, json, createdTime);
      CREATE TABLE "\(long)" (id, json, createdTime);
      CREATE TABLE "" (id, json, createdTime);
      CREATE TABLE "\(longest)" (id, json, createdTime);
      CREATE TABLE "\(long)_empty" (id, json, createdTime);
      INSERT INTO fine VALUES ('a', '[1]', '1'), (\(idSQL), '[2]', '2'),
        (\(idSQL) || 'i', '[3]', '3');
      INSERT INTO "\(long)" VALUES ('a', '[1]', '1'), (7, '[2]', '2');
      INSERT INTO "" VALUES ('a', '[1]', '1');
      INSERT INTO "\(longest)" VALUES ('a', '[1]', '1');
      """, in: directory)
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    let report = try store.importYTKDatabase(at: path)
    #expect(report.tables == ["fine", longest])
    #expect(try store.tableNames() == ["fine", longest])
    #expect(report.items == 3)
    #expect(try store.object(id: longestID, from: "fine") == [2])
    #expect(try store.object(id: "a", from: longest) == [1])
    let rows = report.rejected.map { "\($0.table.prefix(3))/\($0.id.suffix(3)): \($0.reason)" }
    #expect(report.rejected.count == 4, "\(rows)")
    let longRows = report.rejected.filter { $0.table == long }
    #expect(longRows.map(\.id) == ["a", "the integer 7"], "\(rows)")
    #expect(report.rejected.filter { $0.table.isEmpty }.map(\.id) == ["a"], "\(rows)")
    for row in report.rejected where row.table != "fine" {
      #expect(row.reason.contains("not one this store allows"), "\(row.reason)")
      #expect(row.reason.contains("1 to 255 bytes"), "\(row.reason)")
    }
    let tooLongID = try #require(report.rejected.first { $0.table == "fine" }, "\(rows)")
    #expect(tooLongID.id == longestID + "i")
    #expect(tooLongID.reason.contains("\(KeyValueStore.maxIDLength)"), "\(tooLongID.reason)")
    // Every table not made is listed, the empty one too, which has no row to list.
    #expect(report.rejectedTables.map(\.table) == ["", long, long + "_empty"])
    for table in report.rejectedTables {
      #expect(table.reason.contains("not one this store allows"), "\(table.reason)")
    }

    // Named, the same: its rows are listed, and the other tables named are imported.
    let named = try store.importYTKDatabase(at: path, tables: [long, "fine", long + "_empty"])
    #expect(named.tables == ["fine"] && named.items == 2)
    #expect(named.rejected.filter { $0.table == long }.count == 2)
    #expect(named.rejectedTables.map(\.table) == [long, long + "_empty"])
  }

  @Test(
    "tables whose names are equal as strings but not as bytes are imported as two, beside the store's table of one of the names; tables: chooses by the bytes"
  )
  func equivalentTableNames() throws {
    let directory = TemporaryDirectory()
    // "café", its é precomposed (NFC) and decomposed (NFD): two tables to SQLite, equal as
    // `String`s.
    let (composed, decomposed) = ("caf\u{E9}", "cafe\u{301}")
    let path = try Self.database(
      """
      CREATE TABLE "\(decomposed)" (id, json, createdTime);
      CREATE TABLE "\(composed)" (id, json, createdTime);
      INSERT INTO "\(composed)" VALUES ('1', '{"from":"composed"}', '1');
      INSERT INTO "\(decomposed)" VALUES ('1', '{"from":"decomposed"}', '2'), ('2', '[2]', '3');
      """, in: directory)
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    try store.createTable(composed)
    try store.put(["kept": true], id: "mine", into: composed)
    // By the bytes, and in their order: "cafe" before "caf\xC3".
    let both = [Array(decomposed.utf8), Array(composed.utf8)]
    let report = try store.importYTKDatabase(at: path)
    #expect(report.tables.map { Array($0.utf8) } == both)
    #expect(report.items == 3)
    #expect(try store.tableNames().map { Array($0.utf8) } == both)
    #expect(try store.allItems(in: composed).map(\.id) == ["1", "mine"])
    #expect(try store.object(id: "1", from: composed) == ["from": "composed"])
    #expect(try store.allItems(in: decomposed).map(\.id) == ["1", "2"])
    #expect(try store.object(id: "1", from: decomposed) == ["from": "decomposed"])

    // Named, a table is the one of those bytes: the other spelling's is left alone.
    let again = TemporaryDirectory()
    let other = try KeyValueStore(path: again.storePath)
    defer { try? other.close() }
    let named = try other.importYTKDatabase(at: path, tables: [composed, composed])
    #expect(named.tables.map { Array($0.utf8) } == [Array(composed.utf8)])
    #expect(named.items == 1)
    #expect(try other.tableNames().map { Array($0.utf8) } == [Array(composed.utf8)])
    #expect(try other.object(id: "1", from: composed) == ["from": "composed"])
  }

  @Test("a column default the reader does not evaluate, met while reading, imports nothing")
  func unsupportedDefault() throws {
    let directory = TemporaryDirectory()
    // Rows written before createdTime was added read its default, a string under INTEGER
    // affinity, whose value depends on SQLite's conversion of text to numbers.
    let path = try Self.database(
      """
      CREATE TABLE early (id, json);
      INSERT INTO early VALUES ('a', '[1]');
      ALTER TABLE early ADD COLUMN createdTime INTEGER DEFAULT '12';
      CREATE TABLE later (id, json, createdTime);
      INSERT INTO later VALUES ('b', '[2]', '1');
      """, in: directory)
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    expectError(.invalidArgument, mentioning: ["early", "createdTime", "does not evaluate"]) {
      try store.importYTKDatabase(at: path)
    }
    #expect(try store.tableNames().isEmpty)
  }

  @Test("a read-only store imports nothing and throws .readOnly")
  func readOnlyStore() throws {
    let directory = TemporaryDirectory()
    try KeyValueStore(path: directory.storePath).close()
    let store = try KeyValueStore(path: directory.storePath, options: StoreOptions(readOnly: true))
    defer { try? store.close() }
    expectError(.readOnly) { try store.importYTKDatabase(at: try Self.fixture("ytk-tables")) }
    #expect(try store.tableNames().isEmpty)
  }

  /// A YTK database in `directory` whose table `many` holds 10,500 rows (`id1` to `id10500`).
  static func manyRows(in directory: TemporaryDirectory) throws -> String {
    try database(
      """
      CREATE TABLE many (id, json, createdTime);
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10500)
      INSERT INTO many SELECT 'id' || i, '[' || i || ']', '1448000000' FROM n;
      """, in: directory)
  }

  @Test(
    "progress: every 10,000 rows and at the end; with the total when a table exists and the file is read first"
  )
  func progress() throws {
    let directory = TemporaryDirectory()
    let path = try Self.manyRows(in: directory)
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    for (round, expected) in [
      // A new table: written as it is read, its size not known in advance.
      ["10000/0", "10500/0"],
      // The table exists now: the file is read once first, then written.
      ["10000/0", "10000/10500", "10500/10500"],
    ].enumerated() {
      var calls: [String] = []
      let report = try store.importYTKDatabase(at: path, tables: nil) { rows, total in
        calls.append("\(rows)/\(total)")
      }
      #expect(report.items == 10_500)
      #expect(calls == expected, "round \(round)")
      #expect(try store.count(in: "many") == 10_500)
    }
  }

  @Test("a file cut short while the import reads it imports nothing and throws .io")
  func fileCutWhileRead() throws {
    let directory = TemporaryDirectory()
    let path = try Self.manyRows(in: directory)
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    // The table exists, so the file is read once before anything is written; it is cut to
    // its first two pages when that reading passes 10,000 rows.
    try store.createTable("many")
    try store.put(["kept": true], id: "id1", into: "many")
    expectError(.io, mentioning: ["made.sqlite", "while being read"]) {
      _ = try store.importYTKDatabase(at: path, tables: nil) { rows, total in
        guard rows == 10_000, total == 0 else { return }
        do {
          let file = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
          try file.truncate(atOffset: 8192)
          try file.close()
        } catch {
          Issue.record("cutting the file: \(error)")
        }
      }
    }
    #expect(try store.count(in: "many") == 1)
    #expect(try store.object(id: "id1", from: "many") == ["kept": true])
  }

  @Test(
    "every row is imported as the row-by-row conversion makes it: ids, values, times, order and rejections, UTF-8 and UTF-16"
  )
  func rowsAsConvertedOneByOne() throws {
    for text in Self.illFormed {
      let encoding = text.encoding
      let directory = TemporaryDirectory()
      // A table without a primary key, so that an id can repeat (the last row wins), and every
      // kind of id, json and createdTime the quick conversion leaves to the row-by-row one
      // (text that is not well-formed among them).
      let path = try Self.database(
        """
        PRAGMA encoding = '\(encoding)';
        CREATE TABLE mixed (id, json, createdTime);
        INSERT INTO mixed VALUES ('plain', '{"b":1,"a":[true,null,2.50]}', '1448000061.25124'),
          ('unsorted', ' { "z" : "\\u00e9" , "a" : 1e2 } ', '1448000061'),
          ('dup', '[1]', '1'), ('é-id', '{"k":"v"}', '2'), ('dup', '[2]', '3'),
          ('keys', '{"é":1,"e\u{301}":2,"K":3,"\u{212A}":4}', '4'),
          ('escaped-key', '{"a\\"b":1,"a#":2}', '5'), (7, '[1]', '6'), ('blob-json', x'5b315d', '7'),
          ('not-json', '[1,]', '8'), ('int-time', '[3]', 1448000001), ('real-time', '[4]', 1.5),
          ('null-time', '[5]', NULL), ('word-time', '[6]', 'soon'), ('exp-time', '[7]', '1e3'),
          ('', '""', '9'), ('big', '[123456789012345678901234567890, -0, 0.1]', '10'),
          (\(text.id1), '[8]', '11'), ('ill-formed-json', \(text.json), '12');
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2500)
        INSERT INTO mixed SELECT 'row' || i, '{"n":' || i || ',"id":"row' || i || '"}',
          '1448000000.' || i FROM n;
        """, in: directory)

      // The oracle: each row read on its own, as the fuzz target and the slow path read it.
      let source = try YTKSource(path: path)
      defer { source.close() }
      let database = try source.open()
      let first = try #require(database.tables.first)
      let table = try #require(YTKTable(first, encoding: database.textEncoding))
      var expectedItems: [String: (value: [UInt8], time: Timestamp?)] = [:]
      var expectedRows: [String] = []
      var expectedRejected: [String] = []
      let cursor = try database.cursor(over: table.table)
      while try cursor.next() {
        switch try YTKRow.read(cursor, table) {
        case .item(let id, let value, let time):
          expectedItems[id] = (value, time)
          expectedRows.append("\(id) \(value) \(String(describing: time))")
        case .rejected(let id, let reason):
          expectedRejected.append(id + ": " + reason)
          expectedRows.append(id + ": " + reason)
        }
      }
      #expect(expectedItems.count > 2500 && expectedRejected.count == 5, "\(encoding)")

      // The producer's chunks, with every value in the stored form or every quickly read one
      // left to the writer, finish as the same rows in the same order.
      for raw in [false, true] {
        let producer = YTKRowProducer(database: database, tables: [table])
        var canonicalizer = JSONCanonicalizer()
        var output = JSONOutput(capacity: 16)
        defer { output.release() }
        var rows: [String] = []
        var rawItems = 0
        while let chunk = try producer.nextChunk(raw: raw) {
          rawItems += chunk.raw.filter { $0 }.count
          let (puts, rejected) = chunk.finish(with: &canonicalizer, output: &output)
          var next = 0
          var index = 0
          puts.forEachPut { key, value, time in
            while next < rejected.count, rejected[next].itemsBefore <= index {
              rows.append(rejected[next].id + ": " + rejected[next].reason)
              next += 1
            }
            rows.append(
              "\(String(decoding: key, as: UTF8.self)) \(Array(value)) \(String(describing: time))")
            index += 1
          }
          rows += rejected[next...].map { $0.id + ": " + $0.reason }
        }
        // The first difference, rather than thousands of rows.
        #expect(rows.count == expectedRows.count, "\(encoding), raw: \(raw)")
        if let first = rows.indices.first(where: {
          $0 < expectedRows.count && rows[$0] != expectedRows[$0]
        }) {
          Issue.record(
            "\(encoding), raw: \(raw): row \(first) is \(rows[first]), not \(expectedRows[first])")
        }
        #expect(raw ? rawItems > 2500 : rawItems == 0)
      }

      let store = try KeyValueStore(path: directory.storePath)
      defer { try? store.close() }
      let before = Date()
      let report = try store.importYTKDatabase(at: path)
      #expect(report.rejected.map { $0.id + ": " + $0.reason } == expectedRejected, "\(encoding)")
      #expect(try store.count(in: "mixed") == expectedItems.count, "\(encoding)")
      for (id, expected) in expectedItems {
        #expect(try store.storedBytes(id: id, from: "mixed") == expected.value, "\(encoding) \(id)")
        let created = try #require(try store.item(id: id, from: "mixed")).createdTime
        if let time = expected.time {
          #expect(created == KeyValueStore.date(time), "\(encoding) \(id)")
        } else {
          #expect(created >= before.addingTimeInterval(-1), "\(encoding) \(id)")
        }
      }
      #expect(try store.object(id: "dup", from: "mixed") == [2])
    }
  }

  @Test("an import larger than the rows converted ahead of the writer may hold is imported whole")
  func moreThanTheQueueHolds() throws {
    let directory = TemporaryDirectory()
    let filler = String(repeating: "x", count: 2000)
    let rows = YTKChunkQueue.byteLimit / 2000 + 3000
    let path = try Self.database(
      """
      CREATE TABLE big (id TEXT PRIMARY KEY, json, createdTime);
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows))
      INSERT INTO big SELECT printf('%08d', i), '{"i":' || i || ',"f":"\(filler)"}', i FROM n;
      CREATE TABLE after (id, json, createdTime);
      INSERT INTO after VALUES ('last', '[1]', '1');
      """, in: directory)
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    let report = try store.importYTKDatabase(at: path)
    #expect(report.items == rows + 1)
    #expect(try store.count(in: "big") == rows)
    for i in [1, rows / 2, rows] {
      let id = String(repeating: "0", count: 8 - String(i).count) + String(i)
      #expect(try store.object(id: id, from: "big") == ["f": .string(filler), "i": .int(Int64(i))])
    }
    #expect(try store.object(id: "last", from: "after") == [1])
  }
}

/// The queue between the import's two threads: a full queue makes the producer wait until the
/// writer takes a chunk, and a writer that gives up releases a waiting producer.
@Suite("The import's chunk queue")
struct YTKChunkQueueTests {
  private func chunk(bytes: Int) -> YTKImportChunk {
    var chunk = YTKImportChunk(table: "t")
    chunk.puts.append(key: [1], value: [UInt8](repeating: 0, count: bytes), timestamp: nil)
    return chunk
  }

  @Test("a producer waits while the queue is full, and goes on when the writer takes a chunk")
  func fullQueueWaits() throws {
    let queue = YTKChunkQueue()
    #expect(queue.put(chunk(bytes: YTKChunkQueue.byteLimit)))
    #expect(queue.isRunningLow)
    let putDone = Flag()
    let producer = Thread {
      _ = queue.put(chunk(bytes: 10))
      putDone.set()
      queue.finish(failure: nil)
    }
    producer.start()
    Thread.sleep(forTimeInterval: 0.2)
    #expect(!putDone.isSet, "the second chunk was added to a full queue")
    #expect(try queue.take()?.byteCount == YTKChunkQueue.byteLimit + 1)
    #expect(try queue.take()?.byteCount == 11)
    // The put returned once the chunk was in; the producer's thread marks that after, and the
    // take above may run first.
    #expect(putDone.waitUntilSet(seconds: 5))
    #expect(try queue.take() == nil)
  }

  @Test("a writer that gives up releases a waiting producer, whose put then fails")
  func cancelReleasesProducer() throws {
    let queue = YTKChunkQueue()
    #expect(queue.put(chunk(bytes: YTKChunkQueue.byteLimit)))
    let result = Flag()
    let accepted = Flag()
    let producer = Thread {
      if queue.put(chunk(bytes: 10)) { accepted.set() }
      result.set()
    }
    producer.start()
    Thread.sleep(forTimeInterval: 0.1)
    queue.cancel()
    while !result.isSet { Thread.sleep(forTimeInterval: 0.01) }
    #expect(!accepted.isSet)
    #expect(!queue.put(chunk(bytes: 1)))
  }

  @Test("the producer's failure reaches the writer after the chunks before it")
  func failureAfterChunks() throws {
    struct Broken: Error {}
    let queue = YTKChunkQueue()
    #expect(queue.put(chunk(bytes: 5)))
    queue.finish(failure: Broken())
    #expect(try queue.take()?.byteCount == 6)
    #expect(throws: Broken.self) { try queue.take() }
  }
}

/// A flag set by one thread and read by another.
private final class Flag: @unchecked Sendable {
  private let lock = NSLock()
  private var value = false
  func set() { lock.withLock { value = true } }
  var isSet: Bool { lock.withLock { value } }

  /// Whether the flag is set within `seconds`.
  func waitUntilSet(seconds: Double) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while !isSet && Date() < deadline { usleep(1_000) }
    return isSet
  }
}
