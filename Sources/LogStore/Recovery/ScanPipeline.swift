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
  /// Events of the scanner, in order, each with the scanner's last sequence number right after
  /// it. The records are plain values, so that a chunk of thousands is handed over, read and
  /// freed without a copy or a release per event; the damaged regions, which carry a reason,
  /// are kept aside with the number of records before each.
  struct Chunk {
    fileprivate var records: [(record: Record, offset: Int, lastSequence: UInt64)] = []
    fileprivate var damages:
      [(recordsBefore: Int, offset: Int, length: Int, reason: String, lastSequence: UInt64)] =
        []

    fileprivate var count: Int { records.count + damages.count }

    fileprivate mutating func append(_ event: SegmentScanner.Event, lastSequence: UInt64) {
      switch event {
      case .record(let record, let offset):
        records.append((record, offset, lastSequence))
      case .damaged(let offset, let length, let reason):
        damages.append((records.count, offset, length, reason, lastSequence))
      }
    }

    /// Calls `body` with each event and the last sequence number after it, in order.
    func forEachEvent(_ body: (SegmentScanner.Event, UInt64) throws(LogStoreError) -> Void)
      throws(LogStoreError)
    {
      var damage = 0
      func damagesBefore(_ record: Int) throws(LogStoreError) {
        while damage < damages.count && damages[damage].recordsBefore == record {
          let region = damages[damage]
          try body(
            .damaged(offset: region.offset, length: region.length, reason: region.reason),
            region.lastSequence)
          damage += 1
        }
      }
      for index in records.indices {
        try damagesBefore(index)
        let entry = records[index]
        try body(.record(entry.record, offset: entry.offset), entry.lastSequence)
      }
      try damagesBefore(records.count)
    }
  }

  private static let chunkSize = 4_096
  private static let chunksAhead = 4

  private let lock = ConditionLock()
  // Everything below is guarded by `lock`, except `scanner`, which only the scanning thread
  // touches until `finish()` has joined it (so the runtime's exclusivity checks, one per
  // record, are off for it).
  @exclusivity(unchecked) private var scanner: SegmentScanner
  private var ready: [Chunk] = []
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
    var chunk = Self.emptyChunk()
    while let event = scanner.next() {
      chunk.append(event, lastSequence: scanner.lastSequence)
      if chunk.count == Self.chunkSize {
        guard hand(chunk) else { return }
        chunk = Self.emptyChunk()
      }
    }
    lock.withLock {
      if chunk.count > 0 { ready.append(chunk) }
      scanned = true
      lock.broadcast()
    }
  }

  private static func emptyChunk() -> Chunk {
    var chunk = Chunk()
    chunk.records.reserveCapacity(chunkSize)
    return chunk
  }

  /// Queues a chunk, waiting while enough are queued; false if the owner stopped the scan.
  private func hand(_ chunk: Chunk) -> Bool {
    lock.withLock {
      while ready.count >= Self.chunksAhead && !stopped { lock.wait() }
      guard !stopped else { return false }
      ready.append(chunk)
      lock.broadcast()
      return true
    }
  }

  /// The next chunk of events, in order; nil once every event has been taken.
  func next() -> Chunk? {
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
