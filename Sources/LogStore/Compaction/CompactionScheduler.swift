/// When automatic compaction runs: writers report the bytes they write, and every megabyte
/// the scheduler compares the store's garbage with the policy's threshold; past it, the
/// background thread compacts.
///
/// Guarded by the log's lock, like the writes that drive it.
final class CompactionScheduler: @unchecked Sendable {
  /// Garbage must be at least this large before automatic compaction starts.
  static let minimumGarbage = 4 << 20
  /// Garbage fraction that starts automatic compaction under `CompactionPolicy.automatic`.
  /// (A quarter keeps disk use within 4/3 of the live data once compaction has caught up,
  /// leaving room under the 1.5× the store promises for hint files and block rounding.)
  static let automaticFraction = 0.25
  /// How many bytes are written between two checks of the threshold.
  static let checkInterval = 1 << 20

  private let log: ActiveLog
  private let compactor: Compactor
  private let checkpointer: Checkpointer
  private let repair: IndexRepair
  private var policy: CompactionPolicy { log.options.compaction }

  private var requested = false
  /// An automatic compaction, or the index file that follows it, is being written.
  private var busy = false
  /// Why the last automatic compaction failed, for `waitForCompaction()` to report.
  private var automaticError: LogStoreError?
  private var bytesSinceCheck = 0

  init(log: ActiveLog, compactor: Compactor, checkpointer: Checkpointer, repair: IndexRepair) {
    self.log = log
    self.compactor = compactor
    self.checkpointer = checkpointer
    self.repair = repair
  }

  /// Counts written bytes and wakes the background thread when the threshold is passed.
  /// Call with the log's lock held, after the writes are in the index.
  func noteWritten(_ bytes: Int) {
    guard policy != .manual, bytes > 0 else { return }
    bytesSinceCheck += bytes
    guard bytesSinceCheck >= Self.checkInterval else { return }
    bytesSinceCheck = 0
    if isDue() {
      requested = true
      log.lock.broadcast()
    }
  }

  private func isDue() -> Bool {
    repair.settleCounts()
    let fraction: Double
    switch policy {
    case .manual: return false
    case .automatic: fraction = Self.automaticFraction
    case .whenGarbageExceeds(let threshold): fraction = threshold
    }
    let disk = log.diskBytes
    // Expired items are garbage: their records go at the next compaction.
    let garbage =
      disk - log.index.keys.liveBytes + log.index.keys.expired(at: log.index.clock.now()).bytes
    return garbage >= Self.minimumGarbage && Double(garbage) > fraction * Double(disk)
  }

  /// The loop of the automatic compaction thread, until the store closes.
  func run() {
    let lock = log.lock
    lock.lock()
    defer { lock.unlock() }
    while !log.closing {
      if requested && !compactor.isRunning {
        requested = false
        busy = true
        lock.unlock()
        // A failure (a full disk, say) leaves the store as it was; the next check retries.
        var succeeded = true
        var wantsIndex = false
        do {
          // Writes made while it copies may have made the next compaction due already: its
          // outputs would replace this one's at once, so this one writes no index file.
          wantsIndex = try compactor.compact(skipsIndexFile: { [self] in isDue() })
        } catch {
          succeeded = false
          lock.withLock { automaticError = error }
        }
        lock.lock()
        // Writes made meanwhile may have brought garbage back over the threshold: compact
        // again first, and write the index file once compaction has caught up (it would only
        // describe segments about to be replaced).
        if succeeded && !log.closing && isDue() {
          requested = true
        } else if wantsIndex && !log.closing {
          lock.unlock()
          // Only an optimization: a failure leaves the next open to read the log. Given up if
          // a compaction becomes due meanwhile, so that it does not wait.
          try? checkpointer.checkpoint(compactor: compactor) { [self] in requested }
          lock.lock()
        }
        busy = false
        lock.broadcast()
      } else {
        lock.wait()
      }
    }
  }

  /// Waits until automatic compaction has nothing left to do: none running, none due, and the
  /// index file that follows the last one written.
  func waitForCompaction() throws(LogStoreError) {
    let lock = log.lock
    try lock.withLock { () throws(LogStoreError) in
      if log.closing { throw LogStoreError.closed(log.directory) }
      guard policy != .manual, !log.options.readOnly else { return }
      automaticError = nil
      while !log.closing {
        if requested || busy || compactor.isRunning {
          lock.wait()
        } else if let error = automaticError {
          automaticError = nil
          throw error
        } else if isDue() {
          requested = true
          lock.broadcast()
        } else {
          return
        }
      }
    }
  }
}
