import LogStore
import LogStoreTesting

// A writer process for the kill tests (Tests/LogStoreTests/ProcessKillTests.swift).
//
//   ytkkv-kill-writer PATH SEED [--compact] [--always]
//
// Opens the store at PATH and performs the operations of `WorkloadGenerator(seed: SEED)`
// forever, printing "N" on standard output (unbuffered) after operation N has returned. The
// test kills it with SIGKILL at a random moment and checks the store holds exactly a prefix of
// the operations, at least the acknowledged ones. With --compact, every 300th operation is a
// compaction (and segments are small, so there is always something to compact); with
// --always, the store syncs every write.
#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

let arguments = CommandLine.arguments
guard arguments.count >= 3, let seed = UInt64(arguments[2]) else {
  emit("usage: ytkkv-kill-writer PATH SEED [--compact] [--always]\n", to: 2)
  exit(64)
}
let compacting = arguments.contains("--compact")
let options = LogStore.Options(
  sync: arguments.contains("--always") ? .always : .never, compaction: .manual,
  maxSegmentSize: compacting ? 64 << 10 : 1 << 20)
var generator = WorkloadGenerator(seed: seed, compactionEvery: compacting ? 300 : nil)

do {
  let store = try LogStore(path: arguments[1], options: options)
  var number = 0
  while true {
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
