/// Scans a segment on a second thread while the opening thread applies what it finds.
///
/// Opening a large store is two kinds of work of about equal cost: reading every record and
/// checking its checksum (``SegmentScanner``), and inserting every key into the index. The
/// scanner does not depend on the index, so a second thread runs it ahead and hands over its
/// events in chunks, in order; the opening thread applies them exactly as it would have
/// applied them from a scanner of its own. A few chunks at most wait between the two, so
/// memory stays small whatever the segment's size.
///
/// The events' records are views of the segment's bytes, which the scanner's owner keeps
/// mapped for as long as the pipeline holds the scanner. Whoever starts a pipeline calls
/// ``finish()`` when done, also when it stops early (a damaged record under `.fail`): it stops
/// the scanner and waits for its thread.
final class ScanPipeline: @unchecked Sendable {
  /// One event of the scanner, with the scanner's last sequence number right after it.
  struct Item {
    var event: SegmentScanner.Event
    var lastSequence: UInt64
  }

  private static let chunkSize = 4_096
  private static let chunksAhead = 4

  private let lock = ConditionLock()
  // Everything below is guarded by `lock`, except `scanner`, which only the scanning thread
  // touches until `finish()` has joined it (so the runtime's exclusivity checks, one per
  // record, are off for it).
  @exclusivity(unchecked) private var scanner: SegmentScanner
  private var ready: [[Item]] = []
  private var scanned = false
  private var stopped = false
  private var thread: BackgroundThread?

  /// Starts scanning with `scanner` on a new thread; nil if no thread can be started (the
  /// caller then scans on its own).
  init?(_ scanner: SegmentScanner) {
    self.scanner = scanner
    let thread = BackgroundThread { [self] in scan() }
    guard thread.tryStart() else { return nil }
    self.thread = thread
  }

  private func scan() {
    var chunk: [Item] = []
    chunk.reserveCapacity(Self.chunkSize)
    while let event = scanner.next() {
      chunk.append(Item(event: event, lastSequence: scanner.lastSequence))
      if chunk.count == Self.chunkSize {
        guard hand(chunk) else { return }
        chunk = []
        chunk.reserveCapacity(Self.chunkSize)
      }
    }
    lock.withLock {
      if !chunk.isEmpty { ready.append(chunk) }
      scanned = true
      lock.broadcast()
    }
  }

  /// Queues a chunk, waiting while enough are queued; false if the owner stopped the scan.
  private func hand(_ chunk: [Item]) -> Bool {
    lock.withLock {
      while ready.count >= Self.chunksAhead && !stopped { lock.wait() }
      guard !stopped else { return false }
      ready.append(chunk)
      lock.broadcast()
      return true
    }
  }

  /// The next chunk of events, in order; nil once every event has been taken.
  func next() -> [Item]? {
    lock.withLock {
      while ready.isEmpty && !scanned { lock.wait() }
      guard !ready.isEmpty else { return nil }
      lock.broadcast()
      return ready.removeFirst()
    }
  }

  /// Stops the scan if it is still running, waits for its thread, and returns the scanner as
  /// it ended (where the good data ends, whether it found a torn tail).
  @discardableResult
  func finish() -> SegmentScanner {
    lock.withLock {
      stopped = true
      lock.broadcast()
    }
    thread?.join()
    thread = nil
    return scanner
  }
}
