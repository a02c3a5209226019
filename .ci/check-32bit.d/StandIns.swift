// Stand-ins, for the 32-bit build only, for what the engine files compiled here use from
// files that cannot be (they need threads, files or the clock): the C library's calloc, free
// and memcmp come from runtime.c through runtime.h.

/// Sources/LogStore/IO/Locks.swift: the scanner pauses before looking at a record again. One
/// thread here: nothing can change while it waits.
func pauseThread(microseconds: Int) {}

/// Sources/LogStore/LogStoreOptions.swift (the rest of that file needs the store and the
/// file system): a point in time, for Mutation and WriteBatch.
public struct Timestamp: Sendable, Hashable {
  public var microsecondsSince1970: Int64

  public init(microsecondsSince1970: Int64) {
    self.microsecondsSince1970 = microsecondsSince1970
  }
}

/// Sources/LogStore/IO/Locks.swift: the lock of ExpiringKeys and ExpiryClock. One thread here:
/// nothing to exclude.
final class ConditionLock: @unchecked Sendable {
  func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R { try body() }
}

/// Sources/LogStore/IO/Locks.swift: the wall clock, for ExpiryClock (no clock here: 1970).
func wallClockMicroseconds() -> Int64 { 0 }
