import LogStore
import LogStoreTesting

// A process of the many-processes tests (Tests/LogStoreTests/ManyProcessesTests.swift): one of
// several that use one store in `.manyProcesses` at once.
//
//   ytkkv-sharing-worker writer PATH ID [--always | --interval MS] [--compact-every N]
//                                       [--checkpoint-every N]
//
// Opens the store at PATH and writes forever. Operation n (from 1) puts "n" under its own id
// "w<ID>/<n % 40>" and "<ID>:<n>" under the shared id "shared/<n % 8>", in table "t", in one
// batch; every N-th operation is a compaction (or a checkpoint) instead. After each operation
// it prints "n" on standard output (unbuffered): the operation was acknowledged.
//
//   ytkkv-sharing-worker follower PATH
//
// Opens the store read-only and reads every writer's own ids over and over. A value that goes
// back to an older one is a violation: it prints it on standard error and exits 1. Each pass
// prints "." on standard output.
//
//   ytkkv-sharing-worker timed PATH COUNT MS
//
// Opens the store for writing and puts COUNT values in table "t", one every MS milliseconds,
// each under the id "<n>@<microseconds since 1970 when it was put>", so that a process
// watching the table's changes can tell how long each took to reach it; then prints "done".
//
//   ytkkv-sharing-worker idle PATH
//
// Opens the store for writing, writes one item, prints "ready" and then waits between calls
// forever (the test stops it with SIGSTOP there).
#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

let usage = """
  usage: ytkkv-sharing-worker writer PATH ID [--always | --interval MS] [--compact-every N]
                                            [--checkpoint-every N]
         ytkkv-sharing-worker follower PATH
         ytkkv-sharing-worker timed PATH COUNT MS
         ytkkv-sharing-worker idle PATH

  """

func options(readOnly: Bool = false, sync: SyncPolicy = .never) -> LogStore.Options {
  var options = LogStore.Options(
    sync: sync, readOnly: readOnly, compaction: .manual, maxSegmentSize: 64 << 10)
  options.sharing = .manyProcesses
  return options
}

func fail(_ message: String) -> Never {
  emit("ytkkv-sharing-worker: \(message)\n", to: 2)
  exit(1)
}

func write(
  path: String, id: Int, sync: SyncPolicy, compactEvery: Int?, checkpointEvery: Int?
) -> Never {
  do {
    let store = try LogStore(path: path, options: options(sync: sync))
    try store.createTable("t")
    var number = 0
    while true {
      number += 1
      if let compactEvery, number % compactEvery == 0 {
        try store.compact()
      } else if let checkpointEvery, number % checkpointEvery == 0 {
        try store.checkpoint()
      } else {
        var batch = WriteBatch()
        batch.put(Array("\(number)".utf8), forKey: Array("w\(id)/\(number % 40)".utf8), in: "t")
        batch.put(
          Array("\(id):\(number)".utf8), forKey: Array("shared/\(number % 8)".utf8), in: "t")
        try store.write(batch)
      }
      emit("\(number)\n", to: 1)
    }
  } catch {
    fail("writer \(id): \(error)")
  }
}

func follow(path: String) -> Never {
  do {
    let store = try LogStore(path: path, options: options(readOnly: true))
    var latest: [String: Int] = [:]
    while true {
      guard try store.tableExists("t") else {
        usleep(1000)
        continue
      }
      for entry in try store.entries(in: "t") {
        let key = String(decoding: entry.key, as: UTF8.self)
        guard key.hasPrefix("w"), let value = Int(String(decoding: entry.value, as: UTF8.self))
        else { continue }
        if let seen = latest[key], value < seen {
          fail("follower: \(key) went back from \(seen) to \(value)")
        }
        latest[key] = value
      }
      emit(".", to: 1)
    }
  } catch {
    fail("follower: \(error)")
  }
}

func timed(path: String, count: Int, milliseconds: Int) -> Never {
  do {
    let store = try LogStore(path: path, options: options())
    try store.createTable("t")
    for number in 0..<count {
      var now = timespec()
      clock_gettime(CLOCK_REALTIME, &now)
      let microseconds = Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000
      try store.put(Array("v".utf8), forKey: Array("\(number)@\(microseconds)".utf8), in: "t")
      usleep(UInt32(milliseconds * 1000))
    }
    try store.close()
    emit("done\n", to: 1)
    exit(0)
  } catch {
    fail("timed: \(error)")
  }
}

func idle(path: String) -> Never {
  do {
    let store = try LogStore(path: path, options: options())
    try store.createTable("t")
    try store.put(Array("here".utf8), forKey: Array("idle".utf8), in: "t")
    emit("ready\n", to: 1)
    while true { sleep(1) }
  } catch {
    fail("idle: \(error)")
  }
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "writer":
  guard arguments.count >= 3, let id = Int(arguments[2]) else { fail(usage) }
  /// The positive number after `flag`, if the flag is there.
  func number(after flag: String) -> Int? {
    guard let index = arguments.firstIndex(of: flag) else { return nil }
    guard index + 1 < arguments.count, let value = Int(arguments[index + 1]), value > 0 else {
      fail(usage)
    }
    return value
  }
  var sync = SyncPolicy.never
  if arguments.contains("--always") { sync = .always }
  if let milliseconds = number(after: "--interval") { sync = .interval(milliseconds: milliseconds) }
  write(
    path: arguments[1], id: id, sync: sync, compactEvery: number(after: "--compact-every"),
    checkpointEvery: number(after: "--checkpoint-every"))
case "follower" where arguments.count == 2:
  follow(path: arguments[1])
case "timed" where arguments.count == 4:
  guard let count = Int(arguments[2]), let milliseconds = Int(arguments[3]) else { fail(usage) }
  timed(path: arguments[1], count: count, milliseconds: milliseconds)
case "idle" where arguments.count == 2:
  idle(path: arguments[1])
default:
  fail(usage)
}
