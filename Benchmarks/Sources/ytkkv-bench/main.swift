import Foundation

#if canImport(Glibc)
  import Glibc
#endif

let usage = """
  ytkkv-bench: this store against SQLite (as YTKKeyValueStore used it, and tuned to WAL),
  LevelDB, LMDB, RocksDB and the hardware's limit, on YTKKeyValueStore's workload.

  Usage: swift run -c release --package-path Benchmarks ytkkv-bench [options]

  Options:
    --quick                 small sizes and one run of each (a few seconds)
    --workloads a,b,…       only these workloads (default: all)
    --engines a,b,…         only these engines (this store always runs)
    --repetitions N         runs of each workload per engine (default 3; medians reported)
    --keys N                keys of the main workloads (default 200000)
    --large-keys N          keys of the large fill, reopen and memory workloads, rows of the
                            import (default 1000000)
    --json                  print JSON instead of markdown
    --many-processes        only the rows of .manyProcesses use (with --keys, --repetitions)
    --help                  this text

  Workloads: \(allWorkloads.map(\.name).joined(separator: ", "))
  Engines: \((EngineKind.all + [.ytkAPI, .logStoreRead, .ytkImport, .sqlite3JSON] + jsonEngines + tableCountEngines + [.logStoreUnchecked, .levelDBChecked, .logStoreSharedManual]).map(\.name).joined(separator: ", "))
  Scratch directories go under $BENCH_DIR (default: the system's temporary directory).
  """

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--child-reopen-memory", arguments.count == 4, let keys = Int(arguments[3]) {
  do {
    try runReopenMemoryChild(engine: arguments[1], path: arguments[2], keys: keys)
    exit(0)
  } catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(1)
  }
}
if arguments.first == "--child-reopen-time", arguments.count == 4 {
  do {
    try runReopenTimeChild(engine: arguments[1], path: arguments[2], key: arguments[3])
    exit(0)
  } catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(1)
  }
}
if arguments.first == "--child-tables-reopen-time", arguments.count == 5,
  let tables = Int(arguments[2]), let items = Int(arguments[3])
{
  do {
    print(
      try tablesReopenMilliseconds(
        path: arguments[1], tables: tables, items: items, indexFiles: arguments[4] == "index"))
    exit(0)
  } catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(1)
  }
}
if arguments.first == "--child-many-writer", arguments.count == 5, let id = Int(arguments[3]),
  let count = Int(arguments[4])
{
  do {
    try runManyWriterChild(engine: arguments[1], path: arguments[2], id: id, count: count)
    exit(0)
  } catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(1)
  }
}
if arguments.first == "--many-processes" {
  var keys = 200_000
  var repetitions = 3
  if let index = arguments.firstIndex(of: "--keys"), index + 1 < arguments.count {
    keys = max(1000, Int(arguments[index + 1]) ?? keys)
  }
  if let index = arguments.firstIndex(of: "--repetitions"), index + 1 < arguments.count {
    repetitions = max(1, Int(arguments[index + 1]) ?? repetitions)
  }
  do {
    try runManyProcessesBenchmark(keys: keys, repetitions: repetitions)
    exit(0)
  } catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(1)
  }
}
if arguments.first == "--child-memory", arguments.count == 3, let keys = Int(arguments[2]) {
  do {
    try runMemoryChild(engine: arguments[1], keys: keys)
    exit(0)
  } catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(1)
  }
}

/// What the command line asked for.
struct Request {
  var configuration = Configuration()
  var workloads = allWorkloads
  var engines: Set<String>?
  var json = false

  init(_ arguments: [String]) {
    var index = 0
    func value() -> String {
      index += 1
      guard index < arguments.count else {
        print("missing value for \(arguments[index - 1])\n\n\(usage)")
        exit(64)
      }
      return arguments[index]
    }
    var repetitions: Int?
    while index < arguments.count {
      switch arguments[index] {
      case "--quick": configuration = .quick
      case "--workloads":
        let names = value().split(separator: ",").map(String.init)
        workloads = allWorkloads.filter { names.contains($0.name) }
        if workloads.count != names.count {
          print("unknown workload in \(names)\n\n\(usage)")
          exit(64)
        }
      case "--engines": engines = Set(value().split(separator: ",").map(String.init))
      case "--repetitions": repetitions = max(1, Int(value()) ?? 3)
      case "--keys": configuration.keys = max(1000, Int(value()) ?? configuration.keys)
      case "--large-keys":
        configuration.largeKeys = max(1000, Int(value()) ?? configuration.largeKeys)
      case "--json": json = true
      case "--help", "-h":
        print(usage)
        exit(0)
      default:
        print("unknown option \(arguments[index])\n\n\(usage)")
        exit(64)
      }
      index += 1
    }
    if let repetitions { configuration.repetitions = repetitions }
  }
}

let request = Request(arguments)
let configuration = request.configuration

func progress(_ text: String) {
  FileHandle.standardError.write(Data((text + "\n").utf8))
}

var results: [WorkloadResult] = []
do {
  for workload in request.workloads {
    let engines = workload.engines.enumerated().filter { position, engine in
      position == 0 || request.engines?.contains(engine.name) ?? true
    }.map(\.element)
    var result = WorkloadResult(workload: workload, title: workload.title(configuration))
    progress("== \(result.title)")
    var prepared: [EngineKind: Scratch] = [:]
    defer { for scratch in prepared.values { scratch.clean() } }
    if let prepare = workload.prepare {
      for engine in engines {
        progress("   preparing \(engine)")
        prepared[engine] = try prepare(engine, configuration)
      }
    }
    for repetition in 0..<configuration.repetitions {
      // Interleave: each round runs every engine once, starting from a different one.
      for offset in 0..<engines.count {
        let engine = engines[(offset + repetition) % engines.count]
        settle()
        let value = try workload.measure(engine, prepared[engine], configuration)
        result.measurements[engine, default: []].append(value)
        progress("   \(engine): \(format(value, workload.unit))")
      }
    }
    results.append(result)
  }
} catch {
  progress("ytkkv-bench: \(error)")
  exit(1)
}

let command =
  "swift run -c release --package-path Benchmarks ytkkv-bench " + arguments.joined(separator: " ")
let targets = evaluateTargets(results)
if request.json {
  print(try jsonReport(results, targets: targets, configuration: configuration, command: command))
} else {
  print(markdownReport(results, targets: targets, configuration: configuration, command: command))
}
