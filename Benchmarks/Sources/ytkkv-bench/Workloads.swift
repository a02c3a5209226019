import Foundation
import LogStore
import YTKKeyValueStore

#if canImport(Glibc)
  import Glibc
#endif

/// Sizes and repetitions of a run.
struct Configuration: Sendable {
  /// Keys of the main workloads (200,000).
  var keys = 200_000
  /// Keys of the large fill and the reopen (1,000,000).
  var largeKeys = 1_000_000
  /// Writes of the durable-put workloads, per writer thread group.
  var durablePuts = 2_000
  /// Writes SQLite with YTK's settings does in the no-sync workloads: each one syncs.
  var sqliteYTKPuts = 2_000
  /// Operations of the YTK API workload.
  var apiOperations = 50_000
  /// Rounds of overwriting every key for the disk-space workload.
  var overwriteRounds = 10
  /// Items of the tables workloads, spread over 1, 100 or 10,000 tables.
  var tableItems = 100_000
  /// Values of each large-value workload (1 MiB or 4 MiB each).
  var largeValues = 64
  var repetitions = 3

  static let quick = Configuration(
    keys: 20_000, largeKeys: 50_000, durablePuts: 200, sqliteYTKPuts: 200,
    apiOperations: 5_000, overwriteRounds: 3, tableItems: 20_000, largeValues: 8,
    repetitions: 1)
}

/// What a workload's number means.
enum Unit: String, Sendable {
  case operationsPerSecond = "ops/s"
  case milliseconds = "ms"
  case microsecondsPerItem = "µs/item"
  case bytesPerKey = "bytes/key"
  case diskRatio = "× live data"

  var higherIsBetter: Bool { self == .operationsPerSecond }
}

/// One benchmark: which engines run it, how to prepare a store for it, and how to measure.
struct Workload: Sendable {
  let name: String
  /// The row's title, with the sizes of the run.
  let title: @Sendable (Configuration) -> String
  let unit: Unit
  let engines: [EngineKind]
  /// Builds a store the measurements start from (filled, say); nil when each run starts empty.
  var prepare: (@Sendable (EngineKind, Configuration) throws -> Scratch)?
  /// One measurement on `engine`, starting from the prepared store (or an empty directory).
  let measure: @Sendable (EngineKind, Scratch?, Configuration) throws -> Double
  /// A note printed under the table.
  var note: String?
}

/// Fills a new store of `engine` with `count` keys.
func filledStore(_ engine: EngineKind, count: Int, label: String) throws -> Scratch {
  let scratch = Scratch(label)
  let store = try engine.make(scratch.path, false)
  for key in Dataset.keys(count) { try store.put(key, Dataset.value) }
  try store.close()
  return scratch
}

/// Gets per second: `find` looks every key of the prepared store up, in a shuffled order, and
/// returns how many it found, which must be all of them.
func measureGets(
  _ engine: EngineKind, _ scratch: Scratch, _ configuration: Configuration,
  _ find: (any Engine, [[UInt8]]) throws -> Int
) throws -> Double {
  let keys = shuffled(Dataset.keys(configuration.keys), seed: 2)
  return try withStore(engine, scratch) { store in
    var found = 0
    let seconds = try timed { found = try find(store, keys) }
    guard found == keys.count else {
      throw BenchmarkError("\(engine) found \(found) of \(keys.count)")
    }
    return Double(keys.count) / seconds
  }
}

/// Opens the prepared store, runs `body`, closes it.
func withStore<R>(
  _ engine: EngineKind, _ scratch: Scratch, durable: Bool = false, _ body: (any Engine) throws -> R
)
  throws -> R
{
  let store = try engine.make(scratch.path, durable)
  defer { try? store.close() }
  return try body(store)
}

let peersNoSync: [EngineKind] = [
  .logStore, .sqliteWAL, .sqliteYTK, .levelDB, .lmdb, .rocksDB, .hardware,
]
let peersDurable: [EngineKind] = [
  .logStore, .sqliteYTK, .sqliteWAL, .levelDB, .lmdb, .rocksDB, .hardware,
]
let peersRead: [EngineKind] = [.logStore, .sqliteWAL, .levelDB, .lmdb, .rocksDB, .hardware]
let peersStore: [EngineKind] = [.logStore, .sqliteWAL, .levelDB, .lmdb, .rocksDB]

/// The YTK API path, ours and SQLite's, as one more kind of engine.
extension EngineKind {
  static let ytkAPI = EngineKind(
    name: "ytk-api", summary: "this store through KeyValueStore: JSONValue in, JSON text stored",
    make: { try LogStoreEngine(directory: $0, durable: $1) })
}

/// What an open that checks every record costs at least, as one more kind of engine for the
/// reopen workload: reading this store's files once, with no checksum and no index.
extension EngineKind {
  static let logStoreRead = EngineKind(
    name: "logstore-read",
    summary: "read every byte of this store's files once (no checksum, no index)",
    make: { try LogStoreEngine(directory: $0, durable: $1) })
}

/// Reads every file of `directory` once with `pread(2)`, in 1 MiB steps; returns the bytes.
func readEveryByte(of directory: String) throws -> Int {
  var total = 0
  var buffer = [UInt8](repeating: 0, count: 1 << 20)
  for name in try FileManager.default.contentsOfDirectory(atPath: directory).sorted() {
    let fd = open(directory + "/" + name, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw BenchmarkError("cannot open \(name): errno \(errno)") }
    defer { close(fd) }
    var offset = 0
    while true {
      let count = buffer.withUnsafeMutableBytes {
        pread(fd, $0.baseAddress, $0.count, off_t(offset))
      }
      if count < 0 { throw BenchmarkError("cannot read \(name): errno \(errno)") }
      if count == 0 { break }
      offset += count
    }
    total += offset
  }
  return total
}

/// Filling an empty store with `count` keys, no sync.
func fill(name: String, count: KeyPath<Configuration, Int> & Sendable) -> Workload {
  Workload(
    name: name, title: { "fill \(thousands($0[keyPath: count])) keys, no sync" },
    unit: .operationsPerSecond,
    engines: peersNoSync,
    measure: { engine, _, configuration in
      let scratch = Scratch(name)
      defer { scratch.clean() }
      let total = configuration[keyPath: count]
      let puts = engine == .sqliteYTK ? min(total, configuration.sqliteYTKPuts) : total
      let keys = Dataset.keys(puts)
      let store = try engine.make(scratch.path, false)
      let seconds = try timed {
        for key in keys { try store.put(key, Dataset.value) }
      }
      try store.close()
      return Double(puts) / seconds
    },
    note:
      "SQLite with YTK's settings syncs every statement, so it runs only the first puts (see --help)."
  )
}

/// `200k`, `1M`: a count for titles.
func thousands(_ count: Int) -> String {
  if count >= 1_000_000 && count % 1_000_000 == 0 { return "\(count / 1_000_000)M" }
  if count >= 1000 && count % 1000 == 0 { return "\(count / 1000)k" }
  return String(count)
}

let allWorkloads: [Workload] =
  [
    fill(name: "fill", count: \.keys),
    fill(name: "fill-large", count: \.largeKeys),
    Workload(
      name: "overwrite", title: { "random overwrite of \(thousands($0.keys)) keys" },
      unit: .operationsPerSecond,
      engines: peersRead,
      prepare: { engine, configuration in
        try filledStore(engine, count: configuration.keys, label: "overwrite")
      },
      measure: { engine, scratch, configuration in
        let keys = shuffled(Dataset.keys(configuration.keys), seed: 1)
        return try withStore(engine, scratch!) { store in
          Double(keys.count) / (try timed { for key in keys { try store.put(key, Dataset.value) } })
        }
      }),
    Workload(
      name: "get", title: { "random get of \(thousands($0.keys)) keys, all present" },
      unit: .operationsPerSecond, engines: peersRead,
      prepare: { engine, configuration in
        try filledStore(engine, count: configuration.keys, label: "get")
      },
      measure: { engine, scratch, configuration in
        try measureGets(engine, scratch!, configuration) { store, keys in
          var found = 0
          for key in keys where try store.get(key) != nil { found += 1 }
          return found
        }
      }),
    Workload(
      name: "get-missing", title: { "random get of \(thousands($0.keys)) missing keys" },
      unit: .operationsPerSecond,
      engines: peersStore,
      prepare: { engine, configuration in
        try filledStore(engine, count: configuration.keys, label: "miss")
      },
      measure: { engine, scratch, configuration in
        let keys = Dataset.missingKeys(configuration.keys)
        return try withStore(engine, scratch!) { store in
          var found = 0
          let seconds = try timed { for key in keys where try store.get(key) != nil { found += 1 } }
          guard found == 0 else { throw BenchmarkError("\(engine) found missing keys") }
          return Double(keys.count) / seconds
        }
      }),
    Workload(
      name: "put-sync", title: { "\(thousands($0.durablePuts)) puts with fsync, 1 writer" },
      unit: .operationsPerSecond,
      engines: peersDurable,
      measure: { engine, _, configuration in
        let scratch = Scratch("put-sync")
        defer { scratch.clean() }
        let keys = Dataset.keys(configuration.durablePuts)
        let store = try engine.make(scratch.path, true)
        defer { try? store.close() }
        return Double(keys.count)
          / (try timed { for key in keys { try store.put(key, Dataset.value) } })
      }),
    Workload(
      name: "put-sync-4", title: { "\(thousands($0.durablePuts)) puts with fsync, 4 writers" },
      unit: .operationsPerSecond,
      engines: peersDurable,
      measure: { engine, _, configuration in
        let scratch = Scratch("put-sync-4")
        defer { scratch.clean() }
        let perWriter = configuration.durablePuts / 4
        let store = try engine.make(scratch.path, true)
        defer { try? store.close() }
        // For the group-commit target, this store also runs the same puts from one writer
        // right before, on the same store: the disk's latency drifts from minute to minute
        // here, and a ratio of two runs side by side is steadier than one of two workloads
        // run minutes apart.
        var oneWriter: Double?
        if engine == .logStore {
          let keys = Dataset.keys(perWriter * 4, offset: configuration.durablePuts)
          oneWriter =
            Double(keys.count)
            / (try timed { for key in keys { try store.put(key, Dataset.value) } })
        }
        let shared = UncheckedBox(store)
        let failures = Counter()
        let seconds = timed {
          onThreads(4) { writer in
            for key in Dataset.keys(perWriter, offset: writer * perWriter) {
              do { try shared.value.put(key, Dataset.value) } catch { failures.add() }
            }
          }
        }
        guard failures.value == 0 else {
          throw BenchmarkError("\(engine): \(failures.value) puts failed")
        }
        let fourWriters = Double(perWriter * 4) / seconds
        if let oneWriter { groupCommitRatios.append(fourWriters / oneWriter) }
        return fourWriters
      },
      note:
        "For this store, each run also times the same number of puts from one writer just before, on the same store; the ratios of the pairs are printed below."
    ),
    reopenWorkload(freshProcess: false),
    reopenWorkload(freshProcess: true),
    Workload(
      name: "delete-prefix", title: { "delete 10% of \(thousands($0.keys)) keys by prefix" },
      unit: .milliseconds,
      engines: peersStore + [.sqliteYTK],
      prepare: { engine, configuration in
        try filledStore(engine, count: configuration.keys, label: "prefix")
      },
      measure: { engine, scratch, configuration in
        let copy = try scratch!.copy("prefix-run")
        defer { copy.clean() }
        // 10% of the keys, user_00000000 … user_000(n/10 - 1), by prefixes of `width` keys:
        // the largest power of ten up to 10,000 that divides the tenth (10,000 for 200k keys,
        // 1,000 for 20k; single keys at worst, for a tenth that is not a multiple of ten).
        let tenth = configuration.keys / 10
        guard tenth > 0 else { throw BenchmarkError("delete-prefix needs at least 10 keys") }
        var width = 1
        var digits = 8
        while width < 10_000, tenth % (width * 10) == 0, width * 10 <= tenth {
          width *= 10
          digits -= 1
        }
        let prefixes = (0..<(tenth / width)).map { block -> [UInt8] in
          let text = String(block)
          return Array(("user_" + String(repeating: "0", count: digits - text.count) + text).utf8)
        }
        return try withStore(engine, copy) { store in
          let seconds = try timed { for prefix in prefixes { try store.deletePrefix(prefix) } }
          guard try store.get(Dataset.key(0)) == nil, try store.get(Dataset.key(tenth)) != nil
          else {
            throw BenchmarkError("\(engine) deleted the wrong keys")
          }
          return seconds * 1000
        }
      },
      note: "Each engine deletes user_0000… and user_0001… (SQLite with YTK's `LIKE ?` statement)."),
    Workload(
      name: "scan", title: { "read all items of a \(thousands($0.keys))-key table" },
      unit: .milliseconds,
      engines: peersRead,
      prepare: { engine, configuration in
        try filledStore(engine, count: configuration.keys, label: "scan")
      },
      measure: { engine, scratch, configuration in
        try withStore(engine, scratch!) { store in
          var count = 0
          let seconds = try timed { count = try store.scan() }
          guard count == configuration.keys else {
            throw BenchmarkError("\(engine) read \(count) items")
          }
          return seconds * 1000
        }
      }),
    ytkAPIWorkload,
    Workload(
      name: "memory", title: { "memory per key, filling \(thousands($0.largeKeys)) keys" },
      unit: .bytesPerKey,
      engines: peersStore,
      measure: { engine, _, configuration in
        try memoryInChild(engine, keys: configuration.largeKeys).anonymous
      },
      note:
        "Growth of the process's anonymous (heap) memory, measured in a fresh process per engine; see PERFORMANCE.md for resident memory including mapped files."
    ),
    Workload(
      name: "memory-reopen",
      title: { "memory per key, reopening a compacted \(thousands($0.largeKeys))-key store" },
      unit: .bytesPerKey,
      engines: peersStore,
      prepare: { engine, configuration in
        let scratch = try filledStore(engine, count: configuration.largeKeys, label: "memreopen")
        try withStore(engine, scratch) { try $0.compact() }
        return scratch
      },
      measure: { engine, scratch, configuration in
        try reopenMemoryInChild(engine, path: scratch!.path, keys: configuration.largeKeys)
      },
      note:
        "Growth of the process's anonymous (heap) memory from before the open to after it and one get of every 1,000th key, in a fresh process per engine, over a store filled and compacted (as in `reopen`): what a launch costs in heap."
    ),
    Workload(
      name: "disk",
      title: {
        "disk after \($0.overwriteRounds) rounds of overwriting \(thousands($0.keys)) keys"
      },
      unit: .diskRatio,
      engines: peersStore,
      measure: { engine, _, configuration in
        let scratch = Scratch("disk")
        defer { scratch.clean() }
        let keys = Dataset.keys(configuration.keys)
        let store = try engine.make(scratch.path, false)
        for _ in 0..<configuration.overwriteRounds {
          for key in keys { try store.put(key, Dataset.value) }
        }
        // This store compacts in the background; measure it once compaction has caught up, as
        // LevelDB and RocksDB finish their running compaction when closed.
        try (store as? LogStoreEngine)?.store.waitForCompaction()
        let ourLiveBytes = try (store as? LogStoreEngine)?.store.statistics().liveBytes
        try store.close()
        let disk = Double(directorySize(scratch.path).allocated)
        if let ourLiveBytes { diskOverLiveBytes.append(disk / Double(ourLiveBytes)) }
        let live = Double(configuration.keys * (13 + Dataset.value.count))
        return disk / live
      },
      note:
        "Disk blocks allocated after closing, over the bytes of the live keys and values (13 + 104 per key). This store's records add a 28-byte header and the table name to each, so its own measure is disk over `statistics().liveBytes`, printed below."
    ),
    compactionWorkload,
    importWorkload,
  ] + jsonWorkloads + tableCountWorkloads + compactionPeerWorkloads + largeValueWorkloads
  + [borrowedGetWorkload, compactedScanWorkload]

/// The YTK API end to end: `put` of a dictionary and `object(id:)`, JSON included, against
/// SQLite doing what YTKKeyValueStore did (JSONSerialization, REPLACE, SELECT).
let ytkAPIWorkload = Workload(
  name: "ytk-api",
  title: { "YTK API: put and get of a dictionary, JSON included (\(thousands($0.apiOperations)))" },
  unit: .operationsPerSecond, engines: [.ytkAPI, .sqliteWAL, .sqliteYTK],
  measure: { engine, _, configuration in
    let scratch = Scratch("api")
    defer { scratch.clean() }
    let user: [String: Any] = [
      "id": 12345, "name": "tangqiao", "age": 30, "city": "Beijing",
      "tags": ["ios", "swift", "kv"], "bio": "hello world",
    ]
    let value: JSONValue = [
      "id": 12345, "name": "tangqiao", "age": 30, "city": "Beijing",
      "tags": ["ios", "swift", "kv"], "bio": "hello world",
    ]
    let count = engine == .sqliteYTK ? configuration.sqliteYTKPuts : configuration.apiOperations
    let ids = (0..<count).map { "user_\($0)" }
    if engine == .ytkAPI {
      let store = try KeyValueStore(path: scratch.path)
      defer { try? store.close() }
      try store.createTable("user_table")
      let seconds = try timed {
        for id in ids {
          try store.put(value, id: id, into: "user_table")
          guard try store.object(id: id, from: "user_table") != nil else {
            throw BenchmarkError("lost \(id)")
          }
        }
      }
      return Double(count) / seconds
    }
    let store = try SQLiteEngine(
      directory: scratch.path, durable: false, tuned: engine == .sqliteWAL)
    defer { try? store.close() }
    let seconds = try timed {
      for id in ids {
        let json = try JSONSerialization.data(withJSONObject: user)
        try store.put(Array(id.utf8), Array(json))
        guard let stored = store.getJSON(Array(id.utf8)),
          (try JSONSerialization.jsonObject(with: Data(stored))) is [String: Any]
        else { throw BenchmarkError("lost \(id)") }
      }
    }
    return Double(count) / seconds
  },
  note:
    "One operation is a put and a get of the same id; SQLite's side encodes and decodes with JSONSerialization as YTKKeyValueStore did."
)

/// Compaction of a 200k-key store holding as much garbage as live data, while a writer
/// keeps putting: how long it takes, and the longest a single put waits meanwhile.
let compactionWorkload = Workload(
  name: "compaction",
  title: { "compaction of \(thousands($0.keys)) keys (50% garbage) beside a writer" },
  unit: .milliseconds, engines: [.logStore],
  measure: { _, _, configuration in
    let result = try measureCompaction(keys: configuration.keys)
    compactionStalls.append(result.longestStall * 1000)
    return result.duration * 1000
  },
  note: "The longest stall a concurrent writer saw during compaction is printed below the table.")

nonisolated(unsafe) var compactionStalls: [Double] = []
/// This store's disk bytes over its own live bytes, per run of the disk workload.
nonisolated(unsafe) var diskOverLiveBytes: [Double] = []
/// This store's puts per second with 4 writers over those with one writer just before, per run
/// of the put-sync-4 workload.
nonisolated(unsafe) var groupCommitRatios: [Double] = []

func measureCompaction(keys count: Int) throws -> (duration: Double, longestStall: Double) {
  let scratch = Scratch("compaction")
  defer { scratch.clean() }
  let store = try LogStore(path: scratch.path, options: .init(compaction: .manual))
  defer { try? store.close() }
  try store.createTable("t")
  let keys = Dataset.keys(count)
  for _ in 0..<2 { for key in keys { try store.put(Dataset.value, forKey: key, in: "t") } }
  let running = Flag()
  let longest = Maximum()
  let writer = Thread {
    var index = 0
    while running.isSet {
      let start = now()
      try? store.put(Dataset.value, forKey: Dataset.key(count + index % 1000), in: "t")
      longest.record(now() - start)
      index += 1
    }
  }
  running.set(true)
  writer.start()
  usleep(10_000)
  let duration = try timed { try store.compact() }
  running.set(false)
  while !writer.isFinished { usleep(1000) }
  return (duration, longest.value)
}

/// Memory growth per key of filling `keys` keys, measured in a child process so that no
/// other engine's memory is counted.
func memoryInChild(_ engine: EngineKind, keys: Int) throws -> (anonymous: Double, resident: Double)
{
  let fields = try runChild(["--child-memory", engine.name, String(keys)])?
    .split(whereSeparator: \.isWhitespace).compactMap { Double($0) }
  guard let fields, fields.count == 2 else {
    throw BenchmarkError("the memory child for \(engine) failed")
  }
  memoryResident[engine.name, default: []].append(fields[1])
  return (fields[0], fields[1])
}

nonisolated(unsafe) var memoryResident: [String: [Double]] = [:]

/// The `reopen` workload, or with `freshProcess` the same with the open and the get in a
/// process of their own (`reopen-fresh`: an app's launch, whose hash seeds and heap are new).
func reopenWorkload(freshProcess: Bool) -> Workload {
  Workload(
    name: freshProcess ? "reopen-fresh" : "reopen",
    title: {
      "reopen of a \(thousands($0.largeKeys))-key store, compacted, then 10% overwritten"
        + (freshProcess ? ", in a fresh process" : "")
    },
    unit: .milliseconds,
    engines: freshProcess
      ? peersStore + [.logStoreSharedManual]
      : peersStore + [.logStoreSharedManual, .hardware, .logStoreRead],
    prepare: { engine, configuration in
      try filledStore(engine, count: configuration.largeKeys, label: "reopen")
    },
    measure: { engine, scratch, configuration in
      // Compacted (LevelDB and RocksDB: everything in tables; this store: an index file of
      // it all), then 10% of the keys overwritten: the recent writes are in LevelDB's log and
      // in our active segment. Then the timed part: open, and read one key (ready to serve).
      let path = scratch!.path
      var store = try engine.make(path, false)
      try store.compact()
      let recent = shuffled(Dataset.keys(configuration.largeKeys), seed: 3).prefix(
        configuration.largeKeys / 10)
      for key in recent { try store.put(key, Dataset.value) }
      // The close is not timed: an app's launch pays the open, not the last session's
      // close (ours syncs what was written, LevelDB's does not).
      try store.close()
      let key = Dataset.key(configuration.largeKeys - 1)
      if freshProcess {
        return try childNumber(
          ["--child-reopen-time", engine.name, path, String(decoding: key, as: UTF8.self)],
          failure: "the reopen child for \(engine) failed")
      }
      var open = false
      let seconds = try timed {
        switch engine {
        case .logStoreRead:
          guard try readEveryByte(of: path) > configuration.largeKeys * Dataset.value.count
          else { throw BenchmarkError("\(engine) read less than the values' bytes") }
        default:
          store = try engine.make(path, false)
          open = true
          // The hardware limit of an open that looks at its data: read the file once.
          if engine == .hardware { _ = try store.scan() }
          guard try store.get(key) != nil else {
            throw BenchmarkError("\(engine) lost keys on reopen")
          }
        }
      }
      if open { try store.close() }
      return seconds * 1000
    },
    note: freshProcess
      ? """
      As `reopen`, but the timed open and get run in a new process of this benchmark (the time \
      is taken inside it, around the open and the get): what an app's launch meets, with hash \
      seeds, heap and mappings of its own, the files in the page cache as in `reopen`.
      """
      : """
      Before each timed run, the store is compacted (LevelDB and RocksDB: a full range \
      compaction; this store: `compact()`, which writes an index file) and 10% of the keys \
      are then overwritten and the store closed; the time covers the open and one get (an app's \
      launch pays the open, not the last session's close). `logstore-shared` is this store \
      in `.manyProcesses` use (an app and its extensions), whose close writes no hint of the \
      active segment (other processes may go on appending to it) but, like this store's, the \
      changes since the compaction's index file, which its open puts over that file. The last \
      two rows are floors, \
      not stores: `hardware` reopens its file of bare records and reads it once; `logstore-read` reads every byte of this \
      store's files once, checking nothing: what an open that reads every record costs at \
      least (this store's does so without an index file).
      """
  )
}

/// Anonymous memory growth per key of opening the store at `path` and reading every 1,000th
/// key, in a child process.
func reopenMemoryInChild(_ engine: EngineKind, path: String, keys: Int) throws -> Double {
  try childNumber(
    ["--child-reopen-memory", engine.name, path, String(keys)],
    failure: "the reopen memory child for \(engine) failed")
}

/// Runs this benchmark executable again with `arguments` and reads the one number it prints;
/// throws `failure` if it failed or printed something else.
func childNumber(_ arguments: [String], failure: String) throws -> Double {
  guard
    let number = try runChild(arguments).flatMap({
      Double($0.trimmingCharacters(in: .whitespacesAndNewlines))
    })
  else { throw BenchmarkError(failure) }
  return number
}

/// Runs this benchmark executable again with `arguments`; its standard output, or nil if it
/// failed.
func runChild(_ arguments: [String]) throws -> String? {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
  if !FileManager.default.isExecutableFile(atPath: process.executableURL!.path),
    let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
  {
    process.executableURL = URL(fileURLWithPath: exe)
  }
  process.arguments = arguments
  let output = Pipe()
  process.standardOutput = output
  try process.run()
  let data = output.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  return process.terminationStatus == 0 ? String(decoding: data, as: UTF8.self) : nil
}

/// The engine a child process is asked to run, by its name.
func childEngine(named name: String) throws -> EngineKind {
  guard let engine = (EngineKind.all + [.logStoreSharedManual]).first(where: { $0.name == name })
  else { throw BenchmarkError("unknown engine \(name)") }
  return engine
}

/// The child's side of ``reopenMemoryInChild``: prints the growth per key.
func runReopenMemoryChild(engine name: String, path: String, keys count: Int) throws {
  let engine = try childEngine(named: name)
  let keys = stride(from: 0, to: count, by: 1000).map { Dataset.key($0) }
  _ = mallocTrim(0)
  let anonymous = processStatus("RssAnon")
  let store = try engine.make(path, false)
  for key in keys {
    guard try store.get(key) != nil else { throw BenchmarkError("\(engine) lost a key") }
  }
  _ = mallocTrim(0)
  let growth = Double(processStatus("RssAnon") - anonymous) / Double(count)
  withExtendedLifetime(store) {}
  try store.close()
  print(growth)
}

/// The child's side of `reopen-fresh`: opens the store at `path`, gets `key`, prints the
/// milliseconds the two took.
func runReopenTimeChild(engine name: String, path: String, key: String) throws {
  let engine = try childEngine(named: name)
  var store: (any Engine)?
  let seconds = try timed {
    store = try engine.make(path, false)
    guard try store!.get(Array(key.utf8)) != nil else {
      throw BenchmarkError("\(engine) lost keys on reopen")
    }
  }
  try store!.close()
  print(seconds * 1000)
}

/// The child's side: fill, print anonymous and resident growth per key.
func runMemoryChild(engine name: String, keys count: Int) throws {
  let engine = try childEngine(named: name)
  let keys = Dataset.keys(count)
  let scratch = Scratch("memory")
  defer { scratch.clean() }
  let store = try engine.make(scratch.path, false)
  // Hand freed heap back first, so that neither baseline nor result counts garbage.
  _ = mallocTrim(0)
  let anonymous = processStatus("RssAnon")
  let resident = processStatus("VmRSS")
  for key in keys { try store.put(key, Dataset.value) }
  _ = mallocTrim(0)
  let anonymousGrowth = Double(processStatus("RssAnon") - anonymous) / Double(count)
  let residentGrowth = Double(processStatus("VmRSS") - resident) / Double(count)
  // The keys were made before the baseline; they must not be freed before the measurement.
  withExtendedLifetime(keys) {}
  try store.close()
  print(anonymousGrowth, residentGrowth)
}

/// Small thread-safe helpers for the concurrent workloads.
final class UncheckedBox<T>: @unchecked Sendable {
  // Holds an engine that is itself safe to call from several threads.
  let value: T
  init(_ value: T) { self.value = value }
}

final class Counter: @unchecked Sendable {
  private let lock = NSLock()
  private var count = 0
  func add() { lock.withLock { count += 1 } }
  var value: Int { lock.withLock { count } }
}

final class Flag: @unchecked Sendable {
  private let lock = NSLock()
  private var flag = false
  func set(_ value: Bool) { lock.withLock { flag = value } }
  var isSet: Bool { lock.withLock { flag } }
}

final class Maximum: @unchecked Sendable {
  private let lock = NSLock()
  private var maximum = 0.0
  func record(_ value: Double) { lock.withLock { maximum = max(maximum, value) } }
  var value: Double { lock.withLock { maximum } }
}
