import Foundation
import SQLiteReader
import Testing

/// How fast the reader reads a large YTK table, against `sqlite3 -json` on the same file.
/// Runs when SQLITE_READER_MEASURE_ROWS is set, best in release:
///
///     SQLITE_READER_MEASURE_ROWS=1000000 swift test -c release --filter MeasurementTests
@Suite(
  "Measurement",
  .enabled(
    if: ProcessInfo.processInfo.environment["SQLITE_READER_MEASURE_ROWS"] != nil
      && FixtureSet.canMake,
    "set SQLITE_READER_MEASURE_ROWS, with python3 to make the file"))
struct MeasurementTests {
  @Test("reading every id, json and createdTime of a large YTK table")
  func largeTable() throws {
    let rows = Int(ProcessInfo.processInfo.environment["SQLITE_READER_MEASURE_ROWS"] ?? "") ?? 0
    let directory = try FixtureSet.directory() + "-large-\(rows)"
    let path = directory + "/large.db"
    if !FileManager.default.fileExists(atPath: path) {
      try FixtureSet.runPython([FixtureSet.script, directory, "--large", String(rows)])
    }
    /// Seconds `body` takes (Date: ContinuousClock is newer than the deployment targets).
    func measure(_ body: () throws -> Void) rethrows -> Double {
      let start = Date()
      try body()
      return Date().timeIntervalSince(start)
    }
    var bytes = 0
    var count = 0
    let seconds = try measure {
      let database = try SQLiteDatabase(file: try FileByteSource(path: path))
      let table = try #require(database.table(named: "t"))
      let cursor = try database.cursor(over: table)
      while try cursor.next() {
        for column in 0..<3 { bytes += try cursor.withUTF8Text(at: column) { $0.count } ?? 0 }
        count += 1
      }
    }
    #expect(count == rows)
    print(
      "reader: \(count) rows, \(bytes) bytes of text in \(seconds) s: "
        + "\(Int(Double(count) / seconds)) rows/s")

    var values = 0
    let materialized = try measure {
      let database = try SQLiteDatabase(file: try FileByteSource(path: path))
      let cursor = try database.cursor(over: try #require(database.table(named: "t")))
      while try cursor.next() { values += try cursor.row().values.count }
    }
    print("reader, every row as SQLiteValues (Strings made): \(materialized) s")

    let sqlite3 = ["/usr/bin/sqlite3", "/usr/local/bin/sqlite3", "/opt/homebrew/bin/sqlite3"]
      .first { FileManager.default.isExecutableFile(atPath: $0) }
    if let sqlite3 {
      let process = Process()
      process.executableURL = URL(fileURLWithPath: sqlite3)
      process.arguments = ["-json", path, "SELECT * FROM t"]
      process.standardOutput = FileHandle.nullDevice
      let sqliteSeconds = try measure {
        try process.run()
        process.waitUntilExit()
      }
      print("sqlite3 -json \(path) 'SELECT * FROM t' > /dev/null: \(sqliteSeconds) s")
    }
  }
}
