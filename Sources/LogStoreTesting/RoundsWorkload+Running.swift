import Foundation
import LogStore

/// What a writer of ``RoundsWorkload`` has done so far.
package struct RoundsProgress: Sendable, Equatable {
  /// Rounds finished.
  package var rounds = 0
  /// Store operations acknowledged: the table's creation and every put, delete, batch and
  /// prefix delete (not compactions).
  package var operations = 0
  /// Explicit compactions (the store may also compact in the background).
  package var compactions = 0

  package init() {}
}

/// What a reader of a ``RoundsWorkload`` store saw, opening it read-only again and again.
package struct RoundsReadReport: Sendable, Equatable {
  /// Opens whose state was read and checked.
  package var opens = 0
  /// States that were no prefix of the writer's operations.
  package var violations = 0
  /// Opens, reads or closes that failed.
  package var errors = 0
  /// The first few violations and errors, described.
  package var problems: [String] = []
  /// The highest round of any state seen.
  package var highestRound = 0
  /// States seen in the middle of a round, with some ids at that round and others at the one
  /// before: the reader caught the writer at work.
  package var midRoundStates = 0

  package init() {}

  /// How many problems a report keeps the description of.
  static let describedProblems = 5

  mutating func note(_ problem: String) {
    if problems.count < Self.describedProblems { problems.append(problem) }
  }

  /// This report and `other` together, as if one reader had seen both.
  package func merged(with other: RoundsReadReport) -> RoundsReadReport {
    var merged = self
    merged.opens += other.opens
    merged.violations += other.violations
    merged.errors += other.errors
    merged.highestRound = max(highestRound, other.highestRound)
    merged.midRoundStates += other.midRoundStates
    for problem in other.problems { merged.note(problem) }
    return merged
  }
}

extension RoundsWorkload {
  /// What one read-only open of the store found.
  package enum Observation: Sendable, Equatable {
    /// There is no store at the path (yet).
    case noStore
    /// The store has no table of rounds (yet): the state before the first operation.
    case noTable
    /// The state of every id, checked.
    case state(RoundsVerdict)
    /// The reads were inconsistent in a way no verdict covers, described.
    case violation(String)
    /// Opening, reading or closing failed, described.
    case error(String)
  }

  /// The options a writer of rounds opens its store with: segments of `segmentSize` bytes, so
  /// that each round seals a few, and compaction in the background besides the explicit one
  /// every ``compactionEvery`` rounds.
  package static func writerOptions(segmentSize: Int = 256 << 10) -> LogStore.Options {
    LogStore.Options(compaction: .whenGarbageExceeds(fraction: 0.3), maxSegmentSize: segmentSize)
  }

  /// Creates the table, then performs rounds on `store` until `deadline` (always finishing the
  /// round it is in), compacting after every ``compactionEvery``-th; calls `roundFinished`
  /// after each round.
  ///
  /// - Throws: ``LogStoreError/Code/invalidArgument`` if the store has a table of rounds
  ///   already (a reader could not tell its rounds from the new ones); any error of the
  ///   store.
  package func write(
    to store: LogStore, until deadline: Deadline,
    roundFinished: (RoundsProgress) -> Void = { _ in }
  ) throws(LogStoreError) -> RoundsProgress {
    guard try !store.tableExists(Self.table) else {
      throw LogStoreError(
        .invalidArgument,
        "the store at \(store.path) has a \(Self.table) table already; rounds need a fresh store")
    }
    try creation.apply(to: store)
    var progress = RoundsProgress()
    progress.operations = 1
    while !deadline.hasPassed {
      let round = progress.rounds + 1
      for operation in operations(round: round) {
        try operation.apply(to: store)
        progress.operations += 1
      }
      if round % Self.compactionEvery == 0 {
        try store.compact()
        progress.compactions += 1
      }
      progress.rounds = round
      roundFinished(progress)
    }
    return progress
  }

  /// Opens the store at `path` read-only until `deadline`, each time reading every id and
  /// checking the state (and every fourth time also listing the table). A missing store or
  /// table is waited for only until the table has been seen once: after that, either is a
  /// problem.
  package func read(path: String, until deadline: Deadline) -> RoundsReadReport {
    var report = RoundsReadReport()
    var tableSeen = false
    while !deadline.hasPassed {
      // Listing costs as much as reading every id: most opens skip it, so that there are
      // more opens, where a reader meets the writer's files changing.
      let listing = report.opens % 4 == 3
      switch observe(path: path, tableSeen: tableSeen, listing: listing) {
      case .noStore:
        Thread.sleep(forTimeInterval: 0.001)
      case .noTable:
        report.opens += 1
        Thread.sleep(forTimeInterval: 0.001)
      case .state(let verdict):
        report.opens += 1
        tableSeen = true
        report.highestRound = max(report.highestRound, verdict.round)
        if let mismatch = verdict.mismatch {
          report.violations += 1
          report.note(mismatch)
        } else if verdict.boundary != 0 && verdict.boundary != idCount {
          report.midRoundStates += 1
        }
      case .violation(let problem):
        report.opens += 1
        report.violations += 1
        report.note(problem)
      case .error(let problem):
        report.errors += 1
        report.note(problem)
      }
    }
    return report
  }

  /// Opens the store at `path` read-only once, reads every id, checks the state and closes
  /// the store.
  ///
  /// - Parameters:
  ///   - tableSeen: whether an earlier open saw the table; before that, a missing store or
  ///     table is the state before the writer began, after it a problem.
  ///   - listing: also list the table, which must give what reading each id gave.
  package func observe(path: String, tableSeen: Bool, listing: Bool = true) -> Observation {
    let store: LogStore
    do {
      store = try LogStore(path: path, options: LogStore.Options(readOnly: true))
    } catch {
      if error.code == .storeNotFound && !tableSeen { return .noStore }
      return .error("opening read-only failed (\(error.code)): \(error)")
    }
    let observation: Observation
    do {
      observation = try observe(store, tableSeen: tableSeen, listing: listing)
    } catch {
      try? store.close()
      return .error("reading failed (\(error.code)): \(error)")
    }
    do {
      try store.close()
    } catch {
      return .error("closing failed (\(error.code)): \(error)")
    }
    return observation
  }

  private func observe(_ store: LogStore, tableSeen: Bool, listing: Bool) throws(LogStoreError)
    -> Observation
  {
    var observed: [String?] = []
    observed.reserveCapacity(idCount)
    do {
      for id in ids {
        let value = try store.value(forKey: Array(id.utf8), in: Self.table)
        observed.append(value.map { String(decoding: $0, as: UTF8.self) })
      }
    } catch  where error.code == .tableNotFound {
      return tableSeen ? .violation("the table \(Self.table) is gone after being seen") : .noTable
    }
    let verdict = check(observed)
    guard verdict.isPrefix, listing else { return .state(verdict) }
    // The same snapshot through the other read path: listing the table in key order.
    var listed: [String: String] = [:]
    for entry in try store.entries(in: Self.table) {
      listed[String(decoding: entry.key, as: UTF8.self)] = String(
        decoding: entry.value, as: UTF8.self)
    }
    for (number, id) in ids.enumerated() where listed[id] != observed[number] {
      return .violation(
        "listing the table gives \(id) \(listed[id].map { "\($0.utf8.count) bytes" } ?? "nothing")"
          + ", reading it by key \(observed[number].map { "\($0.utf8.count) bytes" } ?? "nothing")")
    }
    if listed.count != observed.lazy.compactMap({ $0 }).count {
      return .violation("listing the table gives ids the workload never wrote")
    }
    return .state(verdict)
  }
}
