import CSQLite
import Foundation
import YTKKeyValueStore

#if canImport(Glibc)
  import Glibc
#endif

/// Issue 11's migration path: `importYTKDatabase(at:)` of an old YTKKeyValueStore SQLite file
/// into a fresh store, against `sqlite3 -json FILE 'SELECT * FROM t' > /dev/null` on the same
/// file, side by side.
extension EngineKind {
  static let ytkImport = EngineKind(
    name: "ytk-import",
    summary: "KeyValueStore.importYTKDatabase(at:) of a YTK SQLite file into a fresh store",
    make: { _, _ in throw BenchmarkError("ytk-import runs only the import workload") })
  static let sqlite3JSON = EngineKind(
    name: "sqlite3-json",
    summary: "the sqlite3 program: sqlite3 -json FILE 'SELECT * FROM t' > /dev/null",
    make: { _, _ in throw BenchmarkError("sqlite3-json runs only the import workload") })
}

/// The sqlite3 program on `PATH`, or nil.
let sqlite3Program: String? = {
  let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
  for directory in path.split(separator: ":") where !directory.isEmpty {
    let candidate = String(directory) + "/sqlite3"
    if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
  }
  return nil
}()

let sqlite3MissingMessage =
  "the sqlite3 program is not installed (Benchmarks/setup.sh installs it): the sqlite3-json row is skipped"

/// The YTK SQLite files of this run, one per row count, made once and shared by both engines.
nonisolated(unsafe) var ytkSourceFiles: [Int: Scratch] = [:]

/// The file's path in a scratch directory made by ``ytkSourceFile(rows:)``.
func ytkSourcePath(_ scratch: Scratch) -> String { scratch.path + "/ytk.sqlite" }

/// A YTKKeyValueStore SQLite file of `rows` rows, made as YTKKeyValueStore made it: its table
/// and statement, the benchmark's JSON text, `createdTime` bound as a double (FMDB binds an
/// `NSDate` so), every row in one transaction.
func ytkSourceFile(rows: Int) throws -> Scratch {
  if let scratch = ytkSourceFiles[rows],
    FileManager.default.fileExists(atPath: ytkSourcePath(scratch))
  {
    return scratch
  }
  let scratch = Scratch("import-source")
  var database: OpaquePointer?
  guard sqlite3_open(ytkSourcePath(scratch), &database) == SQLITE_OK else {
    throw BenchmarkError("sqlite3_open \(ytkSourcePath(scratch)) failed")
  }
  defer { sqlite3_close(database) }
  func execute(_ sql: String) throws {
    guard sqlite3_exec(database, sql, nil, nil, nil) == SQLITE_OK else {
      throw BenchmarkError("\(sql): \(String(cString: sqlite3_errmsg(database)))")
    }
  }
  try execute(SQLiteEngine.createSQL)
  try execute("BEGIN")
  var statement: OpaquePointer?
  guard sqlite3_prepare_v2(database, SQLiteEngine.putSQL, -1, &statement, nil) == SQLITE_OK else {
    throw BenchmarkError("\(SQLiteEngine.putSQL): \(String(cString: sqlite3_errmsg(database)))")
  }
  defer { sqlite3_finalize(statement) }
  let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
  for row in 0..<rows {
    let key = Dataset.key(row)
    _ = key.withUnsafeBytes {
      sqlite3_bind_text(statement, 1, $0.baseAddress, Int32($0.count), transient)
    }
    _ = Dataset.value.withUnsafeBytes {
      sqlite3_bind_text(statement, 2, $0.baseAddress, Int32($0.count), transient)
    }
    // Seconds since 1970 with a fraction, as an NSDate of a few years ago gives them.
    sqlite3_bind_double(statement, 3, 1_448_000_061.25 + Double(row) * 0.001_237)
    let result = sqlite3_step(statement)
    sqlite3_reset(statement)
    guard result == SQLITE_DONE else {
      throw BenchmarkError("REPLACE failed: \(String(cString: sqlite3_errmsg(database)))")
    }
  }
  try execute("COMMIT")
  ytkSourceFiles[rows] = scratch
  return scratch
}

/// `sqlite3 -json FILE 'SELECT * FROM t' > /dev/null`, as a child process; its seconds.
func timeSQLite3JSON(_ file: String) throws -> Double {
  guard let program = sqlite3Program else { throw BenchmarkError(sqlite3MissingMessage) }
  let process = Process()
  process.executableURL = URL(fileURLWithPath: program)
  process.arguments = ["-json", file, "SELECT * FROM t"]
  guard let null = FileHandle(forWritingAtPath: "/dev/null") else {
    throw BenchmarkError("cannot open /dev/null")
  }
  defer { try? null.close() }
  process.standardOutput = null
  let seconds = try timed {
    try process.run()
    process.waitUntilExit()
  }
  guard process.terminationStatus == 0 else {
    throw BenchmarkError("sqlite3 -json exited with \(process.terminationStatus)")
  }
  return seconds
}

let importWorkload = Workload(
  name: "import",
  title: { "import a \(thousands($0.largeKeys))-row YTK table" },
  unit: .milliseconds,
  engines: sqlite3Program == nil ? [.ytkImport] : [.ytkImport, .sqlite3JSON],
  prepare: { engine, configuration in
    if engine == .ytkImport && sqlite3Program == nil { progress("   " + sqlite3MissingMessage) }
    return try ytkSourceFile(rows: configuration.largeKeys)
  },
  measure: { engine, scratch, configuration in
    let file = ytkSourcePath(scratch!)
    // Both read the file from the page cache.
    guard try readEveryByte(of: scratch!.path) > configuration.largeKeys * Dataset.value.count
    else { throw BenchmarkError("\(file) is shorter than its values") }
    if engine == .sqlite3JSON { return try timeSQLite3JSON(file) * 1000 }
    let target = Scratch("import-store")
    defer { target.clean() }
    let store = try KeyValueStore(path: target.path)
    defer { try? store.close() }
    var report = YTKImportReport()
    let seconds = try timed { report = try store.importYTKDatabase(at: file) }
    guard report.items == configuration.largeKeys, report.rejected.isEmpty else {
      throw BenchmarkError(
        "the import stored \(report.items) items and rejected \(report.rejected.count)")
    }
    return seconds * 1000
  },
  note: """
    One SQLite file per run, made with YTKKeyValueStore's table and `REPLACE` statement (the \
    104-byte JSON text, `createdTime` bound as a double), read once before each timed run so \
    that it is in the page cache. `ytk-import` is `importYTKDatabase(at:)` into a fresh store \
    (opening the store before and closing it after are not timed); `sqlite3-json` is `sqlite3 \
    -json FILE 'SELECT * FROM t' > /dev/null` as a child process, start to exit. The target \
    is an import time at most sqlite3's (import over sqlite3 at most 1×).
    """
      + (sqlite3Program == nil
        ? " The sqlite3 program is not installed (Benchmarks/setup.sh installs it), so the "
          + "sqlite3-json row is skipped." : "")
)

/// Import time over sqlite3's, per round (the two run in the same round, one after the other).
func importOverSQLite3(_ result: WorkloadResult) -> [Double] {
  guard let ours = result.measurements[.ytkImport], let theirs = result.measurements[.sqlite3JSON]
  else { return [] }
  return zip(ours, theirs).map { $0 / $1 }
}
