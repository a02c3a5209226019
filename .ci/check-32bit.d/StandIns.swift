// Stand-ins, for the 32-bit build only, for what the engine files compiled here use from
// files that cannot be (they need threads, files or the clock): the C library's calloc, free
// and memcmp come from runtime.c through runtime.h.

/// Sources/LogStore/IO/Clocks.swift: the scanner pauses before looking at a record again. One
/// thread here: nothing can change while it waits.
func pauseThread(microseconds: Int) {}

/// Sources/LogStore/IO/Locks.swift: the lock of ExpiringKeys and ExpiryClock. One thread here:
/// nothing to exclude.
final class ConditionLock: @unchecked Sendable {
  func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R { try body() }
}

/// Sources/LogStore/IO/Clocks.swift: the wall clock, for ExpiryClock and Timestamp (no clock here: 1970).
func wallClockMicroseconds() -> Int64 { 0 }
