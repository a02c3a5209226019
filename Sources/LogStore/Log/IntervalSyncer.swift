/// The thread of `SyncPolicy.interval`: every interval, it syncs what was written since the
/// last sync, and marks it (``ActiveLog/noteSynchronized(_:_:_:)``).
///
/// An ordered sync, not a durable one: on Darwin `F_BARRIERFSYNC`, which keeps a power loss
/// from leaving newer records without older ones but does not empty the drive's whole cache,
/// as `F_FULLFSYNC` would on every interval (docs/PLATFORMS.md). On Linux it is `msync`, as
/// durable as `.always`. `sync()`, `close()` and compaction still make everything durable.
struct IntervalSyncer {
  let log: ActiveLog
  let milliseconds: Int
  /// In `.manyProcesses` use, the sync and its mark are a write of the store, under its file
  /// lock.
  let sharing: ProcessSharing?

  /// The thread's loop, until the store closes.
  func run() {
    let lock = log.lock
    lock.lock()
    defer { lock.unlock() }
    while !log.closing {
      lock.wait(milliseconds: milliseconds)
      guard !log.closing, !log.syncInFlight, let writer = log.writer,
        !writer.unordered.range.isEmpty
      else { continue }
      // A failed background sync is retried at the next interval; `sync()` reports errors.
      do throws(LogStoreError) { try sharing?.beginWrite() } catch { continue }
      defer { sharing?.endWrite() }
      // Caught up, the active segment may be another one.
      guard let active = log.writer, !log.syncInFlight else { continue }
      let point = active.unordered
      guard !point.range.isEmpty else { continue }
      if log.synchronizeOutsideLock(active, point.range, .ordered) == nil {
        log.noteSynchronized(active, point, .ordered)
      }
    }
  }
}
