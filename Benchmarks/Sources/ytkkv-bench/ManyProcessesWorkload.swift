import CSQLite
import Foundation
import LogStore
import YTKKeyValueStore

#if canImport(Glibc)
  import Glibc
#endif

// `ytkkv-bench --many-processes`: the rows of `.manyProcesses` use (docs/PERFORMANCE.md, "Many
// processes"). In one process: puts and gets against `.oneProcess`, a follower's first call
// after another open wrote 1 and 10,000 puts, and how soon a change stream gets another open's
// puts. Across processes: four writer processes at once against SQLite in WAL mode (a
// transaction per put, `synchronous=NORMAL`, a busy timeout), and against one process alone.

/// Microseconds since 1970, comparable between processes.
private func wallMicroseconds() -> Int64 {
  var time = timespec()
  clock_gettime(CLOCK_REALTIME, &time)
  return Int64(time.tv_sec) * 1_000_000 + Int64(time.tv_nsec) / 1000
}

private func storeOptions(_ sharing: StoreSharing, readOnly: Bool = false) -> LogStore.Options {
  LogStore.Options(readOnly: readOnly, compaction: .manual, sharing: sharing)
}

private func median(_ values: [Double]) -> Double {
  let sorted = values.sorted()
  return sorted[sorted.count / 2]
}

private func scratch(_ name: String) throws -> String {
  let base = ProcessInfo.processInfo.environment["BENCH_DIR"] ?? NSTemporaryDirectory()
  let path = base + "/ytkkv-bench-many-\(getpid())-\(name)"
  try? FileManager.default.removeItem(atPath: path)
  try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  return path
}

/// Microseconds per put and per get of `count` keys on a fresh store in `sharing` use.
private func putsAndGets(_ sharing: StoreSharing, count: Int) throws -> (put: Double, get: Double) {
  let directory = try scratch("puts-\(sharing)")
  defer { try? FileManager.default.removeItem(atPath: directory) }
  let store = try LogStore(path: directory + "/store", options: storeOptions(sharing))
  try store.createTable("t")
  let keys = Dataset.keys(count)
  let put = try timed { for key in keys { try store.put(Dataset.value, forKey: key, in: "t") } }
  let order = shuffled(keys, seed: 7)
  var found = 0
  let get = try timed {
    for key in order where try store.value(forKey: key, in: "t") != nil { found += 1 }
  }
  precondition(found == count)
  try store.close()
  return (put * 1e6 / Double(count), get * 1e6 / Double(count))
}

/// Microseconds of a follower's first get after a writer (another open) put `count` items (0:
/// a get with nothing new, the cost of a call that only compares the shared word).
private func followerCatchUp(after count: Int, repetitions: Int) throws -> Double {
  let directory = try scratch("follow-\(count)")
  defer { try? FileManager.default.removeItem(atPath: directory) }
  let path = directory + "/store"
  let writer = try LogStore(path: path, options: storeOptions(.manyProcesses))
  try writer.createTable("t")
  let follower = try LogStore(path: path, options: storeOptions(.manyProcesses, readOnly: true))
  try writer.put(Dataset.value, forKey: Dataset.key(0), in: "t")
  var times: [Double] = []
  var next = 1
  for _ in 0..<repetitions {
    for _ in 0..<count {
      try writer.put(Dataset.value, forKey: Dataset.key(next), in: "t")
      next += 1
    }
    let last = Dataset.key(next - 1)
    var value: [UInt8]?
    times.append(try timed { value = try follower.value(forKey: last, in: "t") })
    precondition(value != nil)
  }
  try follower.close()
  try writer.close()
  return median(times) * 1e6
}

/// Milliseconds from another open's put to its arrival in a `changes(in:)` stream of this
/// one: median and 99th percentile of `count` puts 1 ms apart.
private func streamDelays(count: Int) throws -> (median: Double, p99: Double) {
  let directory = try scratch("stream")
  defer { try? FileManager.default.removeItem(atPath: directory) }
  let path = directory + "/store"
  let options = StoreOptions(compaction: .manual, sharing: .manyProcesses)
  let watching = try KeyValueStore(path: path, options: options)
  let writing = try KeyValueStore(path: path, options: options)
  try writing.createTable("t")
  let stream = watching.changes(in: "t")
  let done = DispatchSemaphore(value: 0)
  let heard = Delays()
  Task {
    for await change in stream {
      guard case .put(let id) = change, let sent = Int64(id) else { continue }
      if heard.add(wallMicroseconds() - sent) == count { break }
    }
    done.signal()
  }
  for _ in 0..<count {
    try writing.put(string: "v", id: String(wallMicroseconds()), into: "t")
    usleep(1000)
  }
  guard done.wait(timeout: .now() + 10) == .success else {
    throw BenchmarkError("the stream heard \(heard.sorted.count) of \(count) puts")
  }
  let sorted = heard.sorted
  try writing.close()
  try watching.close()
  return (Double(sorted[count / 2]) / 1000, Double(sorted[count * 99 / 100]) / 1000)
}

/// The delays a consumer task collects, read once it is done.
private final class Delays: @unchecked Sendable {
  private let lock = NSLock()
  private var values: [Int64] = []

  /// Adds one; returns how many there are.
  func add(_ value: Int64) -> Int {
    lock.withLock {
      values.append(value)
      return values.count
    }
  }

  var sorted: [Int64] { lock.withLock { values.sorted() } }
}

/// The child's side of ``writersAtOnce``: opens `engine`'s store at `path`, says so with the
/// file `<path>.ready<id>`, waits for `<path>.go`, puts `count` items of its own, and prints
/// when it finished (wall-clock microseconds).
func runManyWriterChild(engine: String, path: String, id: Int, count: Int) throws {
  let put: ([UInt8]) throws -> Void
  let finish: () throws -> Void
  switch engine {
  case "logstore":
    let store = try LogStore(path: path, options: storeOptions(.manyProcesses))
    try store.createTable("t")
    put = { key in try store.put(Dataset.value, forKey: key, in: "t") }
    finish = { try store.close() }
  case "sqlite-wal":
    let database = try SQLiteWriter(path: path)
    put = { key in try database.put(key, Dataset.value) }
    finish = {}
  default:
    throw BenchmarkError("unknown engine \(engine)")
  }
  guard FileManager.default.createFile(atPath: path + ".ready\(id)", contents: nil) else {
    throw BenchmarkError("cannot create \(path).ready\(id), this writer's sign that it is open")
  }
  while !FileManager.default.fileExists(atPath: path + ".go") { usleep(200) }
  for index in 0..<count {
    try put(Array("w\(id)_\(index)".utf8))
  }
  let end = wallMicroseconds()
  try finish()
  print(end)
}

/// SQLite as several processes would share it: WAL, `synchronous=NORMAL`, a 10 s busy timeout,
/// one implicit transaction per put (YTKKeyValueStore's statement).
private final class SQLiteWriter {
  private var database: OpaquePointer?
  private var statement: OpaquePointer?
  private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

  init(path: String) throws {
    guard sqlite3_open(path, &database) == SQLITE_OK else {
      throw BenchmarkError("sqlite3_open failed")
    }
    sqlite3_busy_timeout(database, 10_000)
    for sql in [
      "PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", SQLiteEngine.createSQL,
    ] {
      guard sqlite3_exec(database, sql, nil, nil, nil) == SQLITE_OK else {
        throw BenchmarkError("\(sql): \(String(cString: sqlite3_errmsg(database)))")
      }
    }
    guard sqlite3_prepare_v2(database, SQLiteEngine.putSQL, -1, &statement, nil) == SQLITE_OK
    else { throw BenchmarkError("prepare: \(String(cString: sqlite3_errmsg(database)))") }
  }

  func put(_ key: [UInt8], _ value: [UInt8]) throws {
    sqlite3_reset(statement)
    sqlite3_bind_text(
      statement, 1, key.map { CChar(bitPattern: $0) }, Int32(key.count), Self.transient)
    sqlite3_bind_text(
      statement, 2, value.map { CChar(bitPattern: $0) }, Int32(value.count), Self.transient)
    sqlite3_bind_text(statement, 3, "2026-12-03 00:00:00", -1, Self.transient)
    guard sqlite3_step(statement) == SQLITE_DONE else {
      throw BenchmarkError("put: \(String(cString: sqlite3_errmsg(database)))")
    }
  }

  deinit {
    sqlite3_finalize(statement)
    sqlite3_close(database)
  }
}

/// Seconds for `processes` writer processes of `engine` to put `count` items each, from the
/// moment all have opened the store to the last one's last put.
private func writersAtOnce(engine: String, processes: Int, count: Int) throws -> Double {
  let directory = try scratch("writers-\(engine)-\(processes)")
  defer { try? FileManager.default.removeItem(atPath: directory) }
  let path = directory + (engine == "logstore" ? "/store" : "/ytk.sqlite")
  if engine == "sqlite-wal" { _ = try SQLiteWriter(path: path) }
  let program = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
  var children: [(Process, Pipe)] = []
  for id in 0..<processes {
    let process = Process()
    process.executableURL = program
    process.arguments = ["--child-many-writer", engine, path, String(id), String(count)]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    children.append((process, output))
  }
  let deadline = now() + 60
  while (0..<processes).contains(where: {
    !FileManager.default.fileExists(atPath: path + ".ready\($0)")
  }) {
    guard now() < deadline else { throw BenchmarkError("the writers did not open the store") }
    usleep(500)
  }
  let go = wallMicroseconds()
  guard FileManager.default.createFile(atPath: path + ".go", contents: nil) else {
    throw BenchmarkError("cannot create \(path).go, the writers' signal to start")
  }
  var last = go
  for (process, output) in children {
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0,
      let end = Int64(text.trimmingCharacters(in: .whitespacesAndNewlines))
    else { throw BenchmarkError("a writer failed (\(engine)): \(text)") }
    last = max(last, end)
  }
  return Double(last - go) / 1e6
}

/// Runs every row, `repetitions` times each (medians), and prints them as markdown.
func runManyProcessesBenchmark(keys: Int, repetitions: Int) throws {
  print("## Many processes (\(keys) keys, medians of \(repetitions) runs)\n")
  var onePut: [Double] = []
  var oneGet: [Double] = []
  var manyPut: [Double] = []
  var manyGet: [Double] = []
  for _ in 0..<repetitions {
    let one = try putsAndGets(.oneProcess, count: keys)
    let many = try putsAndGets(.manyProcesses, count: keys)
    onePut.append(one.put)
    oneGet.append(one.get)
    manyPut.append(many.put)
    manyGet.append(many.get)
  }
  func format(_ value: Double) -> String { String(format: "%.3f", value) }
  print("| one process, one open | .oneProcess | .manyProcesses | .oneProcess / .manyProcesses |")
  print("|---|---|---|---|")
  print(
    "| put (µs) | \(format(median(onePut))) | \(format(median(manyPut))) | "
      + "\(format(median(onePut) / median(manyPut)))× |")
  print(
    "| get (µs) | \(format(median(oneGet))) | \(format(median(manyGet))) | "
      + "\(format(median(oneGet) / median(manyGet)))× |")

  let perWriter = keys / 4
  var ours: [Double] = []
  var sqlite: [Double] = []
  var alone: [Double] = []
  for _ in 0..<repetitions {
    ours.append(try writersAtOnce(engine: "logstore", processes: 4, count: perWriter))
    sqlite.append(try writersAtOnce(engine: "sqlite-wal", processes: 4, count: perWriter))
    alone.append(try writersAtOnce(engine: "logstore", processes: 1, count: perWriter * 4))
  }
  print("\n| \(perWriter * 4) puts | seconds | puts/s | this store's speed-up |")
  print("|---|---|---|---|")
  let oursMedian = median(ours)
  for (label, values) in [
    ("4 processes, this store (.manyProcesses)", ours),
    ("4 processes, SQLite WAL (synchronous=NORMAL)", sqlite),
    ("1 process alone, this store (.manyProcesses)", alone),
  ] {
    let seconds = median(values)
    print(
      "| \(label) | \(format(seconds)) | \(Int(Double(perWriter * 4) / seconds)) | "
        + "\(format(seconds / oursMedian))× |")
  }

  // Each repetition runs the rows one after the other: the ratio within a repetition is the
  // least disturbed by the machine's noise from one repetition to the next.
  let ratios = zip(alone, ours).map { $0 / $1 }
  print(
    "\nFour processes against one alone, within each repetition: median "
      + "\(format(median(ratios)))× (from \(format(ratios.min()!))× to \(format(ratios.max()!))×).")

  print("\n| a follower's first get after another open wrote | µs |")
  print("|---|---|")
  for count in [0, 1, 10_000] {
    print(
      "| \(count) puts | \(format(try followerCatchUp(after: count, repetitions: max(5, repetitions)))) |"
    )
  }

  let delays = try streamDelays(count: 500)
  print(
    "\nA `changes(in:)` stream gets another open's put (500 puts 1 ms apart): median "
      + "\(format(delays.median)) ms, 99th percentile \(format(delays.p99)) ms.")
}
