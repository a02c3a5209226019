#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// A many-readers, one-writer lock (`pthread_rwlock_t`), preferring writers on Linux so a
/// stream of readers cannot starve them.
final class ReadWriteLock: @unchecked Sendable {
  // The pthread object lives at a stable heap address, as pthreads requires; it is only ever
  // touched through the pthread functions, which are thread-safe.
  private let lock: UnsafeMutablePointer<pthread_rwlock_t>

  init() {
    lock = .allocate(capacity: 1)
    var attributes = pthread_rwlockattr_t()
    pthread_rwlockattr_init(&attributes)
    #if canImport(Glibc)
      pthread_rwlockattr_setkind_np(
        &attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
    #endif
    pthread_rwlock_init(lock, &attributes)
    pthread_rwlockattr_destroy(&attributes)
  }

  deinit {
    pthread_rwlock_destroy(lock)
    lock.deallocate()
  }

  @inline(__always)
  func withReadLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
    pthread_rwlock_rdlock(lock)
    defer { pthread_rwlock_unlock(lock) }
    return try body()
  }

  @inline(__always)
  func withWriteLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
    pthread_rwlock_wrlock(lock)
    defer { pthread_rwlock_unlock(lock) }
    return try body()
  }
}

/// A mutex with a condition variable, for state that threads wait on (group commit, the
/// background threads' wake-ups).
package final class ConditionLock: @unchecked Sendable {
  // As above: stable heap addresses, touched only through pthread functions.
  private let mutex: UnsafeMutablePointer<pthread_mutex_t>
  private let condition: UnsafeMutablePointer<pthread_cond_t>

  package init() {
    mutex = .allocate(capacity: 1)
    condition = .allocate(capacity: 1)
    pthread_mutex_init(mutex, nil)
    pthread_cond_init(condition, nil)
  }

  deinit {
    pthread_cond_destroy(condition)
    pthread_mutex_destroy(mutex)
    condition.deallocate()
    mutex.deallocate()
  }

  @inline(__always) package func lock() { pthread_mutex_lock(mutex) }
  @inline(__always) package func unlock() { pthread_mutex_unlock(mutex) }

  @inline(__always)
  package func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body()
  }

  /// Waits for ``broadcast()``; the caller must hold the lock. Wake-ups may be spurious, so
  /// callers wait in a loop on their condition.
  package func wait() { pthread_cond_wait(condition, mutex) }

  /// Waits on a condition of one thread's own (``Wakeup``) instead of the shared one, so that
  /// waking it wakes nobody else; the caller must hold the lock.
  func wait(for wakeup: Wakeup) { pthread_cond_wait(wakeup.condition, mutex) }

  /// ``wait(for:)`` for at most `nanoseconds`.
  func wait(for wakeup: Wakeup, nanoseconds: Int64) {
    var deadline = Self.deadline(after: nanoseconds)
    pthread_cond_timedwait(wakeup.condition, mutex, &deadline)
  }

  /// The wall-clock time `nanoseconds` from now, as `pthread_cond_timedwait` takes it. In
  /// 64 bits: `Int` and `time_t` are 32 bits on watchOS's arm64_32, where a second is
  /// already half of `Int32.max` nanoseconds.
  private static func deadline(after nanoseconds: Int64) -> timespec {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    let (seconds, fraction) = max(0, nanoseconds).quotientAndRemainder(dividingBy: 1_000_000_000)
    let total = Int64(now.tv_nsec) + fraction
    var deadline = timespec()
    deadline.tv_sec = time_t(clamping: Int64(now.tv_sec) + seconds + total / 1_000_000_000)
    deadline.tv_nsec = Int(total % 1_000_000_000)
    return deadline
  }

  /// Waits for ``broadcast()`` or until `milliseconds` pass; the caller must hold the lock.
  func wait(milliseconds: Int) {
    let (nanoseconds, overflow) = Int64(milliseconds).multipliedReportingOverflow(by: 1_000_000)
    wait(nanoseconds: overflow ? .max : nanoseconds)
  }

  /// Waits for ``broadcast()`` or until `nanoseconds` pass; the caller must hold the lock.
  func wait(nanoseconds: Int64) {
    var deadline = Self.deadline(after: nanoseconds)
    pthread_cond_timedwait(condition, mutex, &deadline)
  }

  package func broadcast() { pthread_cond_broadcast(condition) }
}

/// A condition variable one waiting thread owns, used with a ``ConditionLock``'s mutex: it is
/// signalled only when that thread has something to do.
final class Wakeup: @unchecked Sendable {
  // A stable heap address, touched only through pthread functions.
  fileprivate let condition: UnsafeMutablePointer<pthread_cond_t>

  init() {
    condition = .allocate(capacity: 1)
    pthread_cond_init(condition, nil)
  }

  deinit {
    pthread_cond_destroy(condition)
    condition.deallocate()
  }

  /// Wakes the owner; the caller must hold the lock the owner waits with.
  func signal() { pthread_cond_signal(condition) }
}

/// A flag any thread may set, once, and read at any time: what `Atomic<Bool>` did here,
/// without the Synchronization module, which needs macOS 15 and iOS 18.
package final class OnceFlag: @unchecked Sendable {
  // `value` is only touched under `mutex`.
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private var value = false

  package init() { pthread_mutex_init(mutex, nil) }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  /// Sets the flag; true if this call set it, false if it was set already.
  @discardableResult
  package func set() -> Bool {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    if value { return false }
    value = true
    return true
  }

  package var isSet: Bool {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return value
  }
}
