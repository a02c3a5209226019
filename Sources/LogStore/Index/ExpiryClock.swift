/// The store's clock for expiry: the wall clock, never going back.
///
/// Every decision that an item has expired (a read, a count, a listing, compaction) asks this
/// clock, so they agree with one another: once an item reads as expired in a process, it
/// stays so, even if the system clock is set back meanwhile. (Across a reopen, a clock set
/// back far enough makes an item that had expired but was not yet compacted readable again
/// until the clock passes its expiry once more: docs/API.md, "Expiry".)
package final class ExpiryClock: @unchecked Sendable {
  private let lock = ConditionLock()
  private var latest: Int64 = .min
  /// Added to the wall clock: tests move time forward with ``skip(microseconds:)``.
  private var offset: Int64 = 0

  package init() {}

  /// Now, in microseconds since 1970: the wall clock, or the latest time given if that was
  /// later.
  package func now() -> Int64 {
    lock.withLock {
      latest = max(latest, wallClockMicroseconds() &+ offset)
      return latest
    }
  }

  /// Moves this clock forward (for tests of expiry that do not wait).
  package func skip(microseconds: Int64) {
    lock.withLock { offset += microseconds }
  }
}
