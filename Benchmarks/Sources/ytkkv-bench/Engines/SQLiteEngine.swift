import CSQLite
import Foundation

/// SQLite with exactly YTKKeyValueStore's schema and statements; one implicit transaction
/// per statement. `tuned` adds what a user would tune to: WAL with synchronous=NORMAL.
final class SQLiteEngine: Engine, @unchecked Sendable {
  // One connection; statements are used under `lock` (SQLite's serialized mode would allow
  // sharing, but the prepared statements are not).
  private var database: OpaquePointer?
  private var putStatement: OpaquePointer?
  private var getStatement: OpaquePointer?
  private let lock = NSLock()

  static let createSQL =
    "CREATE TABLE IF NOT EXISTS t (id TEXT NOT NULL, json TEXT NOT NULL, createdTime TEXT NOT NULL, PRIMARY KEY(id))"
  static let putSQL = "REPLACE INTO t (id, json, createdTime) values (?, ?, ?)"
  static let getSQL = "SELECT json, createdTime from t where id = ? Limit 1"
  static let deleteLikeSQL = "DELETE from t where id like ?"
  static let scanSQL = "SELECT * from t"

  init(directory: String, durable: Bool, tuned: Bool) throws {
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    guard sqlite3_open(directory + "/ytk.sqlite", &database) == SQLITE_OK else {
      throw BenchmarkError("sqlite3_open failed")
    }
    if tuned {
      try execute("PRAGMA journal_mode=WAL")
      try execute(durable ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL")
    } else if !durable {
      // YTK's own settings sync every statement; "not durable" cannot be had without changing
      // them, so the untuned engine always runs as YTK did.
    }
    try execute(Self.createSQL)
    putStatement = try prepare(Self.putSQL)
    getStatement = try prepare(Self.getSQL)
  }

  required convenience init(directory: String, durable: Bool) throws {
    try self.init(directory: directory, durable: durable, tuned: true)
  }

  private func execute(_ sql: String) throws {
    guard sqlite3_exec(database, sql, nil, nil, nil) == SQLITE_OK else {
      throw BenchmarkError("\(sql): \(String(cString: sqlite3_errmsg(database)))")
    }
  }

  private func prepare(_ sql: String) throws -> OpaquePointer? {
    var statement: OpaquePointer?
    guard sqlite3_prepare_v2(database, sql, -1, &statement, nil) == SQLITE_OK else {
      throw BenchmarkError("\(sql): \(String(cString: sqlite3_errmsg(database)))")
    }
    return statement
  }

  private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

  func put(_ key: [UInt8], _ value: [UInt8]) throws {
    try lock.withLock {
      let statement = putStatement
      _ = key.withUnsafeBytes {
        sqlite3_bind_text(statement, 1, $0.baseAddress, Int32($0.count), Self.transient)
      }
      _ = value.withUnsafeBytes {
        sqlite3_bind_text(statement, 2, $0.baseAddress, Int32($0.count), Self.transient)
      }
      sqlite3_bind_double(statement, 3, Date().timeIntervalSince1970)
      let result = sqlite3_step(statement)
      sqlite3_reset(statement)
      guard result == SQLITE_DONE else {
        throw BenchmarkError("REPLACE failed: \(String(cString: sqlite3_errmsg(database)))")
      }
    }
  }

  /// YTK's putObject: the value is JSON text made by the caller.
  func put(id: String, json: String) throws {
    try put(Array(id.utf8), Array(json.utf8))
  }

  func get(_ key: [UInt8]) throws -> Int? {
    getJSON(key)?.count
  }

  /// YTK's getObjectById: the JSON text.
  func getJSON(_ key: [UInt8]) -> [UInt8]? {
    lock.withLock {
      let statement = getStatement
      _ = key.withUnsafeBytes {
        sqlite3_bind_text(statement, 1, $0.baseAddress, Int32($0.count), Self.transient)
      }
      defer { sqlite3_reset(statement) }
      guard sqlite3_step(statement) == SQLITE_ROW else { return nil }
      let count = Int(sqlite3_column_bytes(statement, 0))
      return Array(UnsafeRawBufferPointer(start: sqlite3_column_text(statement, 0), count: count))
    }
  }

  func deletePrefix(_ prefix: [UInt8]) throws {
    try lock.withLock {
      let statement = try prepare(Self.deleteLikeSQL)
      defer { sqlite3_finalize(statement) }
      let pattern = prefix + Array("%".utf8)
      _ = pattern.withUnsafeBytes {
        sqlite3_bind_text(statement, 1, $0.baseAddress, Int32($0.count), Self.transient)
      }
      guard sqlite3_step(statement) == SQLITE_DONE else {
        throw BenchmarkError("DELETE failed: \(String(cString: sqlite3_errmsg(database)))")
      }
    }
  }

  func scan() throws -> Int {
    try lock.withLock {
      let statement = try prepare(Self.scanSQL)
      defer { sqlite3_finalize(statement) }
      var count = 0
      while sqlite3_step(statement) == SQLITE_ROW {
        let length = Int(sqlite3_column_bytes(statement, 1))
        _ = Array(UnsafeRawBufferPointer(start: sqlite3_column_text(statement, 1), count: length))
        count += 1
      }
      return count
    }
  }

  func close() throws {
    sqlite3_finalize(putStatement)
    sqlite3_finalize(getStatement)
    sqlite3_close(database)
    database = nil
  }
}
