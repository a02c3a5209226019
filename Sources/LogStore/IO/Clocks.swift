#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Microseconds since 1970-01-01 00:00:00 UTC, from the wall clock (`CLOCK_REALTIME`).
func wallClockMicroseconds() -> Int64 {
  var now = timespec()
  clock_gettime(CLOCK_REALTIME, &now)
  return Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000
}

/// Nanoseconds of a monotonic clock, for measuring short durations.
/// 64-bit wide everywhere: a 32-bit `Int` of nanoseconds overflows after two seconds.
func monotonicNanoseconds() -> Int64 {
  var now = timespec()
  clock_gettime(CLOCK_MONOTONIC, &now)
  return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}

/// Suspends the calling thread for about `microseconds`.
func pauseThread(microseconds: Int) {
  var interval = timespec(
    tv_sec: microseconds / 1_000_000, tv_nsec: microseconds % 1_000_000 * 1000)
  var left = timespec()
  while nanosleep(&interval, &left) != 0 && errno == EINTR { interval = left }
}

/// An identifier of the calling thread, for telling writers apart.
func currentThreadID() -> UInt {
  #if canImport(Darwin)
    return UInt(bitPattern: pthread_self())
  #else
    return UInt(pthread_self())
  #endif
}
