import Foundation
import Testing

@testable import LogStore
@testable import LogStoreTesting

@Suite("Process kills", .serialized)
struct ProcessKillTests {
  /// The last operation number a killed writer acknowledged on its standard output.
  private static func lastAcknowledged(_ output: Data) -> Int {
    let text = String(decoding: output, as: UTF8.self)
    // A line cut short by the kill is not an acknowledgement.
    let complete =
      text.hasSuffix("\n") ? text : String(text[..<(text.lastIndex(of: "\n") ?? text.startIndex)])
    return complete.split(separator: "\n").last.flatMap { Int($0) } ?? 0
  }

  @Test(
    "a writer killed at random moments leaves a prefix of its operations, the acknowledged ones included"
  )
  func killedWriters() throws {
    let writer = try #require(builtExecutable(named: "ytkkv-kill-writer"))
    var random = SeededGenerator(seed: 20_261_129)
    var kills = 0
    var compactingKills = 0
    var acknowledgedTotal = 0
    for run in 0..<60 {
      let directory = TemporaryDirectory("kill")
      let path = directory.appending("store")
      let compacting = run % 3 == 0
      let always = run % 5 == 4
      let seed = UInt64(run) + 1
      let process = Process()
      process.executableURL = writer
      process.arguments =
        [path, String(seed)] + (compacting ? ["--compact"] : []) + (always ? ["--always"] : [])
      let output = Pipe()
      process.standardOutput = output
      let drained = DispatchGroup()
      let collected = LockedData()
      DispatchQueue.global().async(group: drained) {
        collected.set(output.fileHandleForReading.readDataToEndOfFile())
      }
      try process.run()
      usleep(UInt32(30_000 + random.next() % 220_000))
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
      drained.wait()
      #expect(process.terminationReason == .uncaughtSignal, "run \(run) ended on its own")
      let acknowledged = Self.lastAcknowledged(collected.value)

      var generator = WorkloadGenerator(seed: seed, compactionEvery: compacting ? 300 : nil)
      var model = StoreModel()
      for _ in 0..<acknowledged { model.apply(generator.next()) }
      var withNext = model
      withNext.apply(generator.next())

      // A killed process loses nothing it handed to the OS: a torn tail at most, never damage.
      let store = try LogStore(path: path, options: .init(corruption: .fail, compaction: .manual))
      let state = try StoreModel.reading(store)
      #expect(
        state == model || state == withNext,
        "run \(run) (seed \(seed), compacting \(compacting), always \(always)): \(acknowledged) acknowledged"
      )
      try store.close()
      kills += 1
      if compacting { compactingKills += 1 }
      acknowledgedTotal += acknowledged
    }
    #expect(kills >= 50)
    #expect(acknowledgedTotal > kills * 100, "the writers barely ran before being killed")
    print(
      "writer processes killed: \(kills) (\(compactingKills) compacting); operations acknowledged: \(acknowledgedTotal)"
    )
  }
}

/// Data one thread sets and another reads.
final class LockedData: @unchecked Sendable {
  private let lock = NSLock()
  private var data = Data()
  func set(_ value: Data) { lock.withLock { data = value } }
  var value: Data { lock.withLock { data } }
}
