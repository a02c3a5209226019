import LogStore
import LogStoreTesting

// The writer and the readers of the readers-beside-a-writer tests
// (Tests/LogStoreTests/ReadersBesideWriterTests.swift,
// Tests/ytkkvTests/ReadCommandsBesideWriterTests.swift).
//
//   ytkkv-rounds write PATH --seconds S [--ids N] [--segment BYTES]
//   ytkkv-rounds read PATH --seconds S [--ids N]
//
// `write` performs the rounds of `RoundsWorkload` on a fresh store at PATH for S seconds over
// small segments (256 KiB unless --segment says otherwise), compacting every third round and
// in the background, and prints "round R operations O compactions C" after each round and
// "rounds R operations O compactions C" at the end. `read` opens the store read-only again and
// again for S seconds, reads every id and checks that it sees the state after a prefix of the
// writer's operations; it prints "opens O violations V errors E", then "highest round R
// mid-round states M", describes the first problems on standard error, and exits with status
// 0 only if every open was checked clean (and there was at least one). Lines are written
// unbuffered: a test reads them while the process runs.
#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

let usage =
  "usage: ytkkv-rounds write PATH --seconds S [--ids N] [--segment BYTES]\n"
  + "       ytkkv-rounds read PATH --seconds S [--ids N]\n"

func usageError(_ message: String) -> Never {
  emit("ytkkv-rounds: \(message)\n" + usage, to: 2)
  exit(64)
}

/// The mode, the path and the numeric options, or a usage error.
func parse(_ arguments: [String]) -> (mode: String, path: String, options: [String: Int]) {
  guard arguments.count >= 2, ["write", "read"].contains(arguments[0]) else {
    usageError("expected a mode (write or read) and a path")
  }
  let allowed: Set<String> =
    arguments[0] == "write" ? ["--seconds", "--ids", "--segment"] : ["--seconds", "--ids"]
  var options: [String: Int] = [:]
  var rest = arguments[2...]
  while let name = rest.popFirst() {
    guard allowed.contains(name) else { usageError("unknown option \(name)") }
    guard let text = rest.popFirst(), let number = Int(text), number > 0 else {
      usageError("\(name) needs a positive number")
    }
    options[name] = number
  }
  guard options["--seconds"] != nil else { usageError("--seconds is required") }
  return (arguments[0], arguments[1], options)
}

let (mode, path, options) = parse(Array(CommandLine.arguments.dropFirst()))
let ids = options["--ids"] ?? 2_000
guard ids <= 100_000 else { usageError("--ids is at most 100000") }
let workload = RoundsWorkload(ids: ids)
let deadline = Deadline(secondsFromNow: Double(options["--seconds"]!))

switch mode {
case "write":
  do {
    let store = try LogStore(
      path: path,
      options: RoundsWorkload.writerOptions(segmentSize: options["--segment"] ?? 256 << 10))
    let progress = try workload.write(to: store, until: deadline) { progress in
      emit(
        "round \(progress.rounds) operations \(progress.operations) "
          + "compactions \(progress.compactions)\n", to: 1)
    }
    try store.close()
    emit(
      "rounds \(progress.rounds) operations \(progress.operations) "
        + "compactions \(progress.compactions)\n", to: 1)
  } catch {
    emit("ytkkv-rounds write: \(error)\n", to: 2)
    exit(1)
  }
default:
  let report = workload.read(path: path, until: deadline)
  emit("opens \(report.opens) violations \(report.violations) errors \(report.errors)\n", to: 1)
  emit("highest round \(report.highestRound) mid-round states \(report.midRoundStates)\n", to: 1)
  for problem in report.problems { emit("ytkkv-rounds read: \(problem)\n", to: 2) }
  exit(report.violations == 0 && report.errors == 0 && report.opens > 0 ? 0 : 1)
}
