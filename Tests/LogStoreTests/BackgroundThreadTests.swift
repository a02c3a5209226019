import Testing

@testable import LogStore

@Suite("Background threads and their lock")
struct BackgroundThreadTests {
  @Test("a background thread runs its body once; joining again, or one never started, returns")
  func join() {
    let ran = OnceFlag()
    let thread = BackgroundThread { #expect(ran.set(), "the body ran twice") }
    thread.start()
    thread.join()
    #expect(ran.isSet)
    thread.join()
    BackgroundThread {}.join()
  }

  /// The interval sync waits this way: `sync: .interval(milliseconds: .max)` is a valid option.
  @Test("a timed wait too long to count in nanoseconds is taken, and ends at a broadcast")
  func longestWait() {
    let lock = ConditionLock()
    let woken = OnceFlag()
    lock.lock()
    // The thread can take the lock only once the wait below has released it.
    let thread = BackgroundThread {
      lock.withLock {
        woken.set()
        lock.broadcast()
      }
    }
    thread.start()
    while !woken.isSet { lock.wait(milliseconds: .max) }
    lock.unlock()
    thread.join()
  }
}
