import Foundation
import Testing

@testable import LogStore

/// A store opened read-only takes no lock and may be read beside a writer (docs/API.md): it
/// never gets a signal, never an error caused by the writer's normal work (appending,
/// sealing segments, compacting, deleting files), and it sees exactly the state after some
/// prefix of the writer's acknowledged operations.
///
/// The writer performs ``RoundsWorkload``'s rounds over 256 KiB segments, compacting every
/// third round (and in the background); every read-only open reads every id and checks the
/// state with ``RoundsWorkload/check(_:)``.
@Suite("Readers beside a writer", .serialized)
struct ReadersBesideWriterTests {
  /// How long the processes run: `YTKKV_STRESS_SECONDS`, 8 by default.
  static let seconds =
    ProcessInfo.processInfo.environment["YTKKV_STRESS_SECONDS"].flatMap { Int($0) } ?? 8

  /// The numbers of a line such as "rounds 12 operations 17836 compactions 4", by name.
  static func figures(_ output: String, line prefix: String) -> [String: Int] {
    let line = output.split(separator: "\n").last { $0.hasPrefix(prefix + " ") } ?? ""
    let words = line.split(separator: " ")
    var figures: [String: Int] = [:]
    for index in stride(from: 0, to: words.count - 1, by: 2) {
      figures[String(words[index])] = Int(words[index + 1])
    }
    return figures
  }

  /// The first lines of what a process wrote on standard error: enough of a crash's backtrace
  /// to see where it happened.
  static func start(of text: String) -> String {
    text.split(separator: "\n", omittingEmptySubsequences: false).prefix(16)
      .joined(separator: "\n")
  }

  @Test(
    "three reader processes opening read-only beside a writer process get no signal, no error and only prefixes of its operations"
  )
  func readerProcesses() throws {
    let executable = try #require(builtExecutable(named: "ytkkv-rounds"))
    let directory = TemporaryDirectory("readers")
    let path = directory.appending("store")
    let seconds = String(Self.seconds)
    let writer = try ChildProcess(executable, ["write", path, "--seconds", seconds])
    let readers = try (0..<3).map { _ in
      try ChildProcess(executable, ["read", path, "--seconds", seconds])
    }
    let writerEnding = try writer.waitUntilExit(seconds: Double(Self.seconds) + 60)
    let readerEndings = try readers.map { try $0.waitUntilExit(seconds: Double(Self.seconds) + 60) }

    for (name, ending) in [("writer", writerEnding)] + readerEndings.map({ ("reader", $0) }) {
      let said = ending.standardOutput + Self.start(of: ending.standardError)
      #expect(ending.reason == .exit, "the \(name) was killed: \(ending.summary)\n\(said)")
      #expect(
        ending.reason != .exit || ending.status == 0,
        "the \(name) ended with \(ending.summary)\n\(said)")
    }
    let written = Self.figures(writerEnding.standardOutput, line: "rounds")
    var opens = 0
    var violations = 0
    var errors = 0
    // A reader killed by a signal printed no figures: it has failed already.
    let finished = readerEndings.filter { $0.reason == .exit }
    for ending in finished {
      let read = Self.figures(ending.standardOutput, line: "opens")
      opens += read["opens"] ?? 0
      violations += read["violations"] ?? 0
      errors += read["errors"] ?? 0
    }
    #expect((written["rounds"] ?? 0) >= 3, "the writer did not get through three rounds")
    // At least one open a second in all: enough to show the readers were not stuck, with room
    // for a machine busy with other tests.
    #expect(finished.isEmpty || opens >= Self.seconds, "fewer opens than seconds")
    #expect(violations == 0)
    #expect(errors == 0)
    print(
      "readers beside a writer: 1 writer and 3 reader processes for \(seconds) s: "
        + "rounds \(written["rounds"] ?? 0), compactions \(written["compactions"] ?? 0), "
        + "opens \(opens), violations \(violations), errors \(errors), reader processes "
        + "killed by a signal \(readerEndings.count - finished.count)")
  }

  /// With `compactionIndex`, the small store counts as large enough for index files: each
  /// compaction writes one of its outputs, which readers meet before and after the store takes
  /// it in.
  @Test(
    "two threads opening read-only beside a writer thread of the same process see only prefixes of its operations",
    arguments: [false, true])
  func readerThreads(compactionIndex: Bool) throws {
    let directory = TemporaryDirectory("readers")
    let path = directory.appending("store")
    // Fewer ids and smaller segments than the processes use: in three seconds, more opens,
    // and more segments sealed and compacted under them.
    let workload = RoundsWorkload(ids: 500)
    var options = RoundsWorkload.writerOptions(segmentSize: 64 << 10)
    if compactionIndex { options.indexFileMinimumLiveBytes = 0 }
    let store = try LogStore(path: path, options: options)
    let deadline = Deadline(secondsFromNow: 3)
    let written = Guarded(Result<RoundsProgress, LogStoreError>.success(RoundsProgress()))
    let report = Guarded(RoundsReadReport())
    runOnThreads(3) { thread in
      if thread == 0 {
        let progress = Result { () throws(LogStoreError) in
          try workload.write(to: store, until: deadline)
        }
        written.withLock { $0 = progress }
      } else {
        let read = workload.read(path: path, until: deadline)
        report.withLock { $0 = $0.merged(with: read) }
      }
    }
    try store.close()
    let progress = try written.withLock { $0 }.get()
    let seen = report.withLock { $0 }
    #expect(progress.rounds >= 2)
    #expect(seen.opens >= 3, "fewer opens than seconds")
    #expect(seen.violations == 0, "\(seen.problems)")
    #expect(seen.errors == 0, "\(seen.problems)")
    print(
      "readers beside a writer: 1 writer and 2 reader threads for 3 s (compaction's index file: \(compactionIndex)): rounds \(progress.rounds), "
        + "compactions \(progress.compactions), opens \(seen.opens), violations "
        + "\(seen.violations), errors \(seen.errors), mid-round states \(seen.midRoundStates)")
  }
}
