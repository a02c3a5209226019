import Foundation
import Testing

@testable import LogStore
@testable import LogStoreTesting

@Suite("Process kills", .serialized)
struct ProcessKillTests {
  /// How many operations a reopening writer makes between a close and the next.
  static let reopenEvery = 40

  @Test(
    "a writer killed at random moments leaves a prefix of its operations, the acknowledged ones included"
  )
  func killedWriters() throws {
    let writer = try #require(builtExecutable(named: "ytkkv-kill-writer"))
    var random = SeededGenerator(seed: 20_261_129)
    // A third of them compacting, a fifth syncing every write, at either depth.
    let runs = TestDepth.choose(sample: 21, full: 60)
    // Kills that landed while the writer was at work: it had acknowledged operations, and was
    // still acknowledging more, or inside a compaction, when it was killed.
    var killedWriting = 0
    // Of those, the ones in a compacting run, and the ones inside the compaction itself.
    var killedWritingCompacting = 0
    var killedInCompaction = 0
    // Of those, the ones in a run compacting beside its writes.
    var killedBesideCompaction = 0
    // Kills in a reopening run that landed between the operation before a close and the one
    // after the open.
    var killedAtReopen = 0
    var acknowledgedTotal = 0
    for run in 0..<runs {
      let directory = TemporaryDirectory("kill")
      let path = directory.appending("store")
      // A quarter of the runs close the store and open it again every `reopenEvery`
      // operations, compacting with index files made at any size: those closes write the
      // active segment's hint and changes files over the compactions' index files, and a kill
      // may land in a close or in the open after it.
      let reopening = run % 4 == 1
      let compacting = run % 3 == 0 || reopening
      // Some of the runs killed at a compaction (below) write its outputs' index file.
      let compactionIndex = run % 12 == 0 || reopening
      // Some compacting runs compact on a thread of their own, again and again, while they
      // write, as the background compactor does: a kill lands in a compaction with writes
      // beside it.
      let compactingBeside = run % 6 == 3 && !reopening
      let always = run % 5 == 4
      // Half the runs append about half their records with `pwrite` (as a store does those of
      // 64 KiB and more), which a kill may leave torn as it may a store through the mapping.
      let fileWrites = run % 2 == 1
      let seed = UInt64(run) + 1
      let label =
        "run \(run) (seed \(seed), compacting \(compacting), index file \(compactionIndex), beside \(compactingBeside), always \(always), file writes \(fileWrites), reopening \(reopening))"
      let process = try ChildProcess(
        writer,
        [path, String(seed)] + (compacting ? ["--compact"] : [])
          + (compactionIndex ? ["--compaction-index"] : [])
          + (compactingBeside ? ["--compact-beside"] : []) + (always ? ["--always"] : [])
          + (fileWrites ? ["--file-writes"] : [])
          + (reopening ? ["--reopen", String(Self.reopenEvery)] : []))
      let earlier: Int
      if run % 8 == 1 {
        // Half the reopening runs are killed as soon as the writer has acknowledged the
        // operation before a close: most such kills land in the close or the open after it.
        var waited = 0
        while lastAcknowledged(process.standardOutput) < Self.reopenEvery * 2
          || lastAcknowledged(process.standardOutput) % Self.reopenEvery != 0, waited < 8_000
        {
          usleep(500)
          waited += 1
        }
        earlier = lastAcknowledged(process.standardOutput)
      } else if run % 6 == 0 {
        // Half the compacting runs are killed as soon as the writer has acknowledged the
        // operation before a compaction (every 300th is one): most such kills land inside it,
        // where a kill at a random moment lands too rarely to count on.
        var waited = 0
        while lastAcknowledged(process.standardOutput) % 300 != 299 && waited < 8_000 {
          usleep(500)
          waited += 1
        }
        earlier = lastAcknowledged(process.standardOutput)
      } else {
        usleep(UInt32(10_000 + random.next() % 220_000))
        // Acknowledged 20 ms before the kill: a writer still at work acknowledges more by then.
        earlier = lastAcknowledged(process.standardOutput)
        usleep(20_000)
      }
      process.send(SIGKILL)
      let ending = try process.waitUntilExit()
      // The writer never stops on its own: anything but our SIGKILL is a failure of its own.
      #expect(
        ending.reason == .uncaughtSignal && ending.status == SIGKILL,
        "\(label) ended by \(ending.summary), not by the kill: \(ending.standardError.prefix(500))"
      )
      let acknowledged = lastAcknowledged(ending.standardOutput)

      var generator = WorkloadGenerator(seed: seed, compactionEvery: compacting ? 300 : nil)
      var model = StoreModel()
      for _ in 0..<acknowledged { model.apply(generator.next()) }
      let next = generator.next()
      var withNext = model
      withNext.apply(next)

      // A killed process loses nothing it handed to the OS: a torn tail at most, never damage.
      let store = try LogStore(path: path, options: .init(corruption: .fail, compaction: .manual))
      let state = try StoreModel.reading(store)
      #expect(
        state == model || state == withNext, "\(label): \(acknowledged) acknowledged")
      try store.close()
      // The writer had acknowledged the operation before a close and nothing after it: it was
      // killed in the close, or in the open after it, or between the two.
      let atReopen = reopening && acknowledged > 0 && acknowledged % Self.reopenEvery == 0
      if ending.status == SIGKILL && acknowledged > 0
        && (acknowledged > earlier || next == .compact || atReopen)
      {
        killedWriting += 1
        if compacting { killedWritingCompacting += 1 }
        if next == .compact { killedInCompaction += 1 }
        if compactingBeside { killedBesideCompaction += 1 }
        if atReopen { killedAtReopen += 1 }
      }
      acknowledgedTotal += acknowledged
    }
    // What the kills are for: most must land while the writer writes (not before it starts,
    // nor after it stopped), and some inside a compaction (a third of the writers compact
    // every 300 operations).
    #expect(
      killedWriting * 2 > runs,
      "only \(killedWriting) of \(runs) kills landed while the writer was at work")
    #expect(killedInCompaction >= 1, "no kill landed inside a compaction")
    #expect(killedAtReopen >= 1, "no kill landed in a close or the open after it")
    #expect(killedBesideCompaction >= 1, "no kill landed in a run compacting beside its writes")
    #expect(acknowledgedTotal > runs * 100, "the writers barely ran before being killed")
    print(
      "writer processes killed at work, \(TestDepth.current): \(killedWriting) of \(runs) (\(killedWritingCompacting) compacting, \(killedInCompaction) inside a compaction, \(killedBesideCompaction) compacting beside their writes, \(killedAtReopen) in a close or the open after it); operations acknowledged: \(acknowledgedTotal)"
    )
  }
}
