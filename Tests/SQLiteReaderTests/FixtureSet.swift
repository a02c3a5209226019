import Foundation
import LogStoreTesting
import SQLiteReader

/// The fixture databases of Fixtures/make_fixtures.py and what SQLite reads from each.
///
/// The script runs once per test process, into `.build/sqlite-reader-fixtures/` (reused while
/// the script and the installed SQLite stay the same), so each run compares the reader with
/// the SQLite that is installed. The two committed fixtures (`ytk-sqlite.db`, `small.db`) are
/// read from the source tree and need no Python.
enum FixtureSet {
  /// Every fixture the script makes; a test checks the manifest lists exactly these.
  static let names = [
    "ytk-sqlite", "small", "ytk-tables", "tree-512", "tree-4096", "overflow-512",
    "overflow-4096", "page-65536", "utf16le", "utf16be", "types", "auto-vacuum-full",
    "auto-vacuum-incremental", "freelist", "reserved-bytes", "wal", "wal-big-endian",
    "wal-damaged", "journal-hot", "journal-hot-nosync", "journal-persist",
  ]

  static let sourceDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("Fixtures").path
  static let script = sourceDirectory + "/make_fixtures.py"

  /// Whether python3 with its sqlite3 module is here to make the fixtures.
  static let canMake: Bool = {
    (try? runPython(["-c", "import sqlite3"])) != nil
  }()

  /// The made fixtures' directory, made on first use.
  static func directory() throws -> String { try made.get() }

  private static let made: Result<String, Error> = Result {
    let packageRoot = URL(fileURLWithPath: sourceDirectory)
      .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let cache = packageRoot.appendingPathComponent(".build/sqlite-reader-fixtures").path
    let stamp = try fingerprint()
    if (try? String(contentsOfFile: cache + "/stamp", encoding: .utf8)) == stamp {
      return cache
    }
    // Made beside, then moved into place: another test process may be reading the old set.
    let fresh = cache + "-\(ProcessInfo.processInfo.processIdentifier)"
    try? FileManager.default.removeItem(atPath: fresh)
    _ = try runPython([script, fresh])
    try stamp.write(toFile: fresh + "/stamp", atomically: true, encoding: .utf8)
    try? FileManager.default.removeItem(atPath: cache)
    try FileManager.default.moveItem(atPath: fresh, toPath: cache)
    return cache
  }

  /// The script's bytes and the SQLite version: what the fixtures depend on.
  private static func fingerprint() throws -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in try Data(contentsOf: URL(fileURLWithPath: script)) {
      hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
    }
    let version = try runPython(["-c", "import sqlite3; print(sqlite3.sqlite_version)"])
    return "\(String(hash, radix: 16)) \(version)"
  }

  /// Runs python3 with `arguments`; its standard output, or an error when it fails.
  @discardableResult
  static func runPython(_ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3"] + arguments
    let output = Pipe()
    let error = Pipe()
    process.standardOutput = output
    process.standardError = error
    try process.run()
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    let errorData = error.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
      throw FixtureError(
        "python3 \(arguments.joined(separator: " ")) failed: "
          + String(decoding: errorData, as: UTF8.self))
    }
    return String(decoding: outputData, as: UTF8.self).trimmingCharacters(
      in: .whitespacesAndNewlines)
  }

  /// The manifest's entry of each fixture made.
  static func manifest() throws -> [[String: Any]] {
    let data = try Data(contentsOf: URL(fileURLWithPath: try directory() + "/manifest.json"))
    let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
    return object?["fixtures"] as? [[String: Any]] ?? []
  }

  /// Fixture `name`: its files, and what SQLite reads from them.
  static func fixture(_ name: String) throws -> Fixture {
    let directory = try directory()
    guard let entry = try manifest().first(where: { $0["name"] as? String == name }) else {
      throw FixtureError("fixture \(name) is not in the manifest")
    }
    func path(_ key: String) -> String? {
      (entry[key] as? String).map { directory + "/" + $0 }
    }
    let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/\(name).expected.json"))
    guard let expected = try JSONSerialization.jsonObject(with: data) as? [String: Any],
      let tables = expected["tables"] as? [[String: Any]]
    else { throw FixtureError("\(name).expected.json is not what the script writes") }
    return Fixture(
      name: name, database: path("database") ?? "", wal: path("wal"), journal: path("journal"),
      expected: try tables.map(ExpectedTable.init))
  }
}

struct FixtureError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// One fixture: a database, maybe with a WAL or journal, and what SQLite reads from it.
struct Fixture {
  var name: String
  var database: String
  var wal: String?
  var journal: String?
  var expected: [ExpectedTable]

  /// The fixture's files as sources, named by their paths.
  func open() throws -> SQLiteDatabase {
    try SQLiteDatabase(
      file: try fileSource(database), wal: try wal.map(fileSource),
      journal: try journal.map(fileSource))
  }
}

/// A table as SQLite reads it, or the reason the reader must refuse it.
struct ExpectedTable {
  var name: String
  var columns: [String] = []
  var rows: [SQLiteRow] = []
  var refused: String?

  init(_ json: [String: Any]) throws {
    name = json["name"] as? String ?? ""
    refused = json["refused"] as? String
    columns = json["columns"] as? [String] ?? []
    for case let row as [Any] in json["rows"] as? [Any] ?? [] {
      guard row.count == 2, let rowid = row[0] as? NSNumber, let values = row[1] as? [Any] else {
        throw FixtureError("a row of \(name) is not [rowid, [values]]")
      }
      rows.append(SQLiteRow(rowid: rowid.int64Value, values: try values.map(Self.value)))
    }
  }

  /// A value as the script writes it: null, {"integer": "..."}, {"real": "<hex bits>"},
  /// {"text": "..."} or {"blob": "<hex>"}.
  static func value(_ json: Any) throws -> SQLiteValue {
    if json is NSNull { return .null }
    guard let object = json as? [String: String], let (kind, text) = object.first else {
      throw FixtureError("\(json) is not a value the script writes")
    }
    switch kind {
    case "integer":
      if let value = Int64(text) { return .integer(value) }
    case "real":
      if let bits = UInt64(text, radix: 16) { return .real(Double(bitPattern: bits)) }
    case "text":
      return SQLiteValue.text(text)
    case "blob":
      return .blob(hexBytes(text))
    case "textBytes":
      // Text SQLite stores that is not UTF-8; the reader makes it well-formed with U+FFFD.
      return SQLiteValue.text(String(decoding: hexBytes(text), as: UTF8.self))
    default:
      break
    }
    throw FixtureError("\(json) is not a value the script writes")
  }
}

/// Values equal as SQLite compares them, reals by their bits (0.0 and -0.0 differ).
func sameValue(_ a: SQLiteValue, _ b: SQLiteValue) -> Bool {
  if case .real(let x) = a, case .real(let y) = b { return x.bitPattern == y.bitPattern }
  return a == b
}

func hexBytes(_ hex: String) -> [UInt8] {
  let digits = Array(hex.utf8)
  return stride(from: 0, to: digits.count - 1, by: 2).map {
    UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16) ?? 0
  }
}

/// A file's bytes, in memory, named by its path.
func fileSource(_ path: String) throws -> SQLiteBytes {
  SQLiteBytes(try fileBytes(path), name: path)
}

/// A committed fixture of the source tree.
func committedFixture(_ name: String) throws -> [UInt8] {
  try fileBytes(FixtureSet.sourceDirectory + "/" + name)
}

extension SQLiteDatabase {
  /// Every readable table's rows, by table name.
  func everyRow() throws -> [String: [SQLiteRow]] {
    var result: [String: [SQLiteRow]] = [:]
    for table in tables where table.isReadable { result[table.name] = try rows(of: table) }
    return result
  }
}
