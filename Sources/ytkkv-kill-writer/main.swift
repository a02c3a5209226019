import LogStore
import LogStoreTesting

// A writer process for the kill tests (Tests/LogStoreTests/ProcessKillTests.swift), and the
// check of what a killed writer (or a power failure simulated with LazyFS, Tools/lazyfs/) left.
//
//   ytkkv-kill-writer PATH SEED [--compact [--compaction-index] [--compact-beside]]
//     [--always | --interval MS] [--file-writes] [--reopen N] [--process I]
//
// Opens the store at PATH and performs the operations of `WorkloadGenerator(seed: SEED)`
// forever, printing "N" on standard output (unbuffered) after operation N has returned. The
// test kills it with SIGKILL at a random moment and checks the store holds exactly a prefix of
// the operations, at least the acknowledged ones. With --compact, every 300th operation is a
// compaction (and segments are small, so there is always something to compact); with
// --always, the store syncs every write; with --interval MS, a background thread syncs every
// MS milliseconds. With --compaction-index, the small store counts as large enough for index
// files, so that each compaction writes one of its outputs and the store takes it in. With
// --file-writes, records of 200 bytes and more (about half of them) are appended with `pwrite`
// rather than through the mapping, as records of 64 KiB and more are in a store. With
// --reopen N, the writer closes the store after every N operations and opens it again, so that
// a kill or a power failure can land in a close (the hint, index or changes file it writes) or
// in the open that reads what the close wrote. Its closes write the active segment's hint, and
// with --compact --compaction-index (compactions write index files) changes files over them
// (docs/FORMAT.md, "Changes files"). With --compact-beside (and --compact, not --reopen), a
// thread of its own compacts the store again and again while the writer writes, as the
// background compactor does in an app: a failure can then land while a compaction copies
// records that writes not yet synced have overwritten or deleted. Its compactions change no
// item, so the check is the one of --compact. With --process I, one of several writer
// processes of the store: it opens it in `.manyProcesses` use, and its workload's tables are
// named with the prefix `pI_`, so that each process's tables hold a prefix of its own
// operations whatever the others do.
//
//   ytkkv-kill-writer --check PATH SEED ACKNOWLEDGED [--compact [--compaction-index]]
//     [--must-keep] [--process I]
//
// Opens the store at PATH read-only, then for writing (salvaging damaged records), and finds
// the largest k in 0...ACKNOWLEDGED+1 such that the store holds the state after the first k
// operations of the same workload. Prints "prefix k of ACKNOWLEDGED acknowledged (read-only
// k'), damaged d" and exits 0; exits 1 if no k matches, if the two opens disagree, or, with
// --must-keep, if k < ACKNOWLEDGED. With --process I, it opens the store in `.manyProcesses`
// use and compares only the tables of process I.
#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

let usage = """
  usage: ytkkv-kill-writer PATH SEED [--compact [--compaction-index] [--compact-beside]]
           [--always | --interval MS] [--file-writes] [--reopen N] [--process I]
         ytkkv-kill-writer --check PATH SEED ACKNOWLEDGED [--compact [--compaction-index]]
           [--must-keep] [--process I]

  """

/// The writer's segment size: small when compacting, so there is always something to compact.
func maxSegmentSize(compacting: Bool) -> Int { compacting ? 64 << 10 : 1 << 20 }

/// The options of the writer, and of the check's writable open. A reopening writer's closes
/// write the active segment's hint and, over an index file, the changes file whatever the
/// bytes written since (by default a close writes them only past 1 MiB).
func options(
  sync: SyncPolicy = .never, readOnly: Bool = false, compacting: Bool, compactionIndex: Bool,
  fileWrites: Bool = false, reopening: Bool = false, sharing: StoreSharing = .oneProcess
) -> LogStore.Options {
  var options = LogStore.Options(
    sync: sync, readOnly: readOnly, corruption: .salvage, compaction: .manual,
    maxSegmentSize: maxSegmentSize(compacting: compacting), sharing: sharing)
  if compactionIndex { options.indexFileMinimumLiveBytes = 0 }
  if fileWrites { options.fileWriteMinimumBytes = 200 }
  if reopening { options.activeHintMinimumBytes = 1 }
  return options
}

/// The sync policy the flags ask for: --always, --interval MS, or by default `.never`; nil
/// for an --interval without a positive number after it.
func syncPolicy(_ arguments: [String]) -> SyncPolicy? {
  if arguments.contains("--always") { return .always }
  guard arguments.contains("--interval") else { return .never }
  return positiveNumber(after: "--interval", in: arguments).map { .interval(milliseconds: $0) }
}

/// The number after `--reopen`: 0 without the flag, nil when it is not a positive number.
func reopenInterval(_ arguments: [String]) -> Int? {
  arguments.contains("--reopen") ? positiveNumber(after: "--reopen", in: arguments) : 0
}

/// One of several writer processes (`--process I`): the number I, the store's sharing and the
/// prefix of the process's tables.
struct WriterProcess {
  var number = 0

  /// From the flags: no --process, one process alone (number 0); nil when the number after
  /// --process is missing or not positive.
  init?(_ arguments: [String]) {
    guard arguments.contains("--process") else { return }
    guard let number = positiveNumber(after: "--process", in: arguments) else { return nil }
    self.number = number
  }

  var sharing: StoreSharing { number > 0 ? .manyProcesses : .oneProcess }
  var tablePrefix: String { number > 0 ? "p\(number)_" : "" }
}

/// The positive number right after `flag` in `arguments`; nil if there is none.
func positiveNumber(after flag: String, in arguments: [String]) -> Int? {
  guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count,
    let number = Int(arguments[index + 1]), number > 0
  else { return nil }
  return number
}

/// The writer: performs the workload's operations forever, acknowledging each; with a
/// `reopenEvery` above 0, closes the store and opens it again after every so many.
func write(
  path: String, seed: UInt64, compacting: Bool, compactionIndex: Bool, compactingBeside: Bool,
  fileWrites: Bool, sync: SyncPolicy, reopenEvery: Int, process: WriterProcess
) -> Never {
  let options = options(
    sync: sync, compacting: compacting, compactionIndex: compactionIndex, fileWrites: fileWrites,
    reopening: reopenEvery > 0, sharing: process.sharing)
  var generator = WorkloadGenerator(
    seed: seed, compactionEvery: compacting ? 300 : nil, tablePrefix: process.tablePrefix)
  do {
    var store = try LogStore(path: path, options: options)
    if compactingBeside { compactAgainAndAgain(store) }
    var number = 0
    while true {
      if reopenEvery > 0, number > 0, number % reopenEvery == 0 {
        try store.close()
        store = try LogStore(path: path, options: options)
      }
      let operation = generator.next()
      do {
        try operation.apply(to: store)
      } catch  where error.code == .tableNotFound {
        // The workload may name a table a moment after dropping it; the model refuses it too.
      }
      number += 1
      emit("\(number)\n", to: 1)
    }
  } catch {
    emit("ytkkv-kill-writer: \(error)\n", to: 2)
    exit(1)
  }
}

/// Compacts `store` on a thread of its own until the process ends, a millisecond between
/// compactions; a compaction that fails ends the process, as a failed write does.
func compactAgainAndAgain(_ store: LogStore) {
  Task.detached {
    while true {
      do {
        try store.compact()
      } catch {
        emit("ytkkv-kill-writer: compaction: \(error)\n", to: 2)
        exit(1)
      }
      try? await Task.sleep(nanoseconds: 1_000_000)
    }
  }
}

// MARK: The check

/// What one open of the store found.
struct Opened {
  var state: StoreModel
  var damaged: Int
  /// The largest k whose model equals `state`, once found.
  var prefix: Int?
}

func open(_ path: String, _ options: LogStore.Options) throws(LogStoreError) -> Opened {
  let store = try LogStore(path: path, options: options)
  let state = try StoreModel.reading(store)
  let damaged = try store.statistics().damagedRecords
  try store.close()
  return Opened(state: state, damaged: damaged)
}

func itemCount(_ model: StoreModel) -> Int { model.tables.values.reduce(0) { $0 + $1.count } }

func summary(_ model: StoreModel) -> String {
  "\(model.tables.count) tables, \(itemCount(model)) items"
}

/// How a store's state differs from a model: items the model has and the state lacks, items
/// the state has and the model lacks, items with another value, and tables on one side only.
struct Difference {
  var missing = 0
  var extra = 0
  var changed = 0
  var tables = 0

  init(state: StoreModel, model: StoreModel) {
    for (table, expected) in model.tables {
      guard let found = state.tables[table] else {
        tables += 1
        missing += expected.count
        continue
      }
      for (key, value) in expected {
        if let other = found[key] {
          if other != value { changed += 1 }
        } else {
          missing += 1
        }
      }
      extra += found.keys.filter { expected[$0] == nil }.count
    }
    for (table, found) in state.tables where model.tables[table] == nil {
      tables += 1
      extra += found.count
    }
  }

  var total: Int { missing + extra + changed + tables }

  var description: String {
    "\(missing) missing, \(extra) extra, \(changed) changed, \(tables) tables on one side only"
  }
}

/// Calls `body` with k and the model after the first k operations, for k in 0...last, applying
/// the operations one at a time.
func forEachModel(
  seed: UInt64, compacting: Bool, process: WriterProcess, through last: Int,
  _ body: (Int, StoreModel) -> Void
) {
  var generator = WorkloadGenerator(
    seed: seed, compactionEvery: compacting ? 300 : nil, tablePrefix: process.tablePrefix)
  var model = StoreModel()
  body(0, model)
  for k in stride(from: 1, through: last, by: 1) {
    model.apply(generator.next())
    body(k, model)
  }
}

func check(_ arguments: [String]) -> Int32 {
  guard arguments.count >= 3, let seed = UInt64(arguments[1]),
    let acknowledged = Int(arguments[2]), acknowledged >= 0
  else {
    emit(usage, to: 2)
    return 64
  }
  let path = arguments[0]
  let compacting = arguments.contains("--compact")
  let compactionIndex = arguments.contains("--compaction-index")
  let mustKeep = arguments.contains("--must-keep")
  guard let process = WriterProcess(arguments) else {
    emit(usage, to: 2)
    return 64
  }
  var opens: [Opened]
  do {
    opens = [
      try open(
        path,
        options(
          readOnly: true, compacting: compacting, compactionIndex: compactionIndex,
          sharing: process.sharing)),
      try open(
        path,
        options(compacting: compacting, compactionIndex: compactionIndex, sharing: process.sharing)),
    ]
    if process.number > 0 {
      // Only this process's tables.
      for index in opens.indices {
        opens[index].state.tables = opens[index].state.tables.filter {
          $0.key.bytes.starts(with: process.tablePrefix.utf8)
        }
      }
    }
  } catch {
    emit("check: cannot open \(path): \(error)\n", to: 1)
    return 1
  }
  let last = acknowledged + 1
  forEachModel(seed: seed, compacting: compacting, process: process, through: last) { k, model in
    let count = itemCount(model)
    for index in opens.indices
    where itemCount(opens[index].state) == count && opens[index].state == model {
      opens[index].prefix = k
    }
  }
  let (readOnly, writable) = (opens[0], opens[1])
  var damaged = "damaged \(writable.damaged)"
  if readOnly.damaged != writable.damaged { damaged += " (read-only \(readOnly.damaged))" }

  guard let prefix = writable.prefix, readOnly.prefix != nil else {
    // Not a prefix: say what the store holds and which prefix it comes closest to.
    for (name, opened) in [("read-only", readOnly), ("writable", writable)]
    where opened.prefix == nil {
      var closest: (k: Int, model: StoreModel, difference: Difference)?
      forEachModel(seed: seed, compacting: compacting, process: process, through: last) {
        k, model in
        let difference = Difference(state: opened.state, model: model)
        if closest == nil || difference.total <= closest!.difference.total {
          closest = (k, model, difference)
        }
      }
      emit(
        "no prefix of 0...\(last) (\(name) open holds \(summary(opened.state))): closest k \(closest!.k) (\(summary(closest!.model))), \(closest!.difference.description); \(damaged)\n",
        to: 1)
    }
    return 1
  }
  let line =
    "prefix \(prefix) of \(acknowledged) acknowledged (read-only \(readOnly.prefix!)), \(damaged)"
  if readOnly.state != writable.state {
    emit(
      "\(line): the opens disagree: read-only holds \(summary(readOnly.state)), writable \(summary(writable.state))\n",
      to: 1)
    return 1
  }
  if mustKeep && prefix < acknowledged {
    emit("\(line): lost \(acknowledged - prefix) acknowledged operations\n", to: 1)
    return 1
  }
  emit(line + "\n", to: 1)
  return 0
}

// MARK: Main

let arguments = CommandLine.arguments
if arguments.count >= 2 && arguments[1] == "--check" {
  exit(check(Array(arguments.dropFirst(2))))
}
let compactingBeside = arguments.contains("--compact-beside")
guard arguments.count >= 3, let seed = UInt64(arguments[2]), let sync = syncPolicy(arguments),
  let reopenEvery = reopenInterval(arguments), let process = WriterProcess(arguments),
  !compactingBeside || (arguments.contains("--compact") && reopenEvery == 0)
else {
  emit(usage, to: 2)
  exit(64)
}
write(
  path: arguments[1], seed: seed, compacting: arguments.contains("--compact"),
  compactionIndex: arguments.contains("--compaction-index"), compactingBeside: compactingBeside,
  fileWrites: arguments.contains("--file-writes"), sync: sync, reopenEvery: reopenEvery,
  process: process)
