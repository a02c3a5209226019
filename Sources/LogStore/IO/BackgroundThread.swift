#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Starts a joinable thread running `body`; used for the engine's background work, which
/// must not depend on Dispatch or the concurrency runtime.
package final class BackgroundThread: @unchecked Sendable {
  // `thread` is written once by `init` and read once by `join`, both on the owner's thread.
  private var thread: pthread_t?
  private let body: @Sendable () -> Void

  package init(_ body: @escaping @Sendable () -> Void) {
    self.body = body
  }

  package func start() {
    let started = tryStart()
    precondition(started, "pthread_create failed")
  }

  /// The new thread's entry: takes back the reference `tryStart` passed and runs `body`.
  private static func run(_ context: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    guard let context else { return nil }
    Unmanaged<BackgroundThread>.fromOpaque(context).takeRetainedValue().body()
    return nil
  }

  /// Starts the thread; false if the system would not create one (`body` then never runs).
  package func tryStart() -> Bool {
    let context = Unmanaged.passRetained(self).toOpaque()
    // The handle, and the entry's parameter, are optional in one C library's declaration and
    // not in the other's.
    #if canImport(Darwin)
      var handle: pthread_t?
      typealias Context = UnsafeMutableRawPointer
    #else
      var handle = pthread_t()
      typealias Context = UnsafeMutableRawPointer?
    #endif
    let result = pthread_create(
      &handle, nil, { (context: Context) in BackgroundThread.run(context) }, context)
    guard result == 0 else {
      Unmanaged<BackgroundThread>.fromOpaque(context).release()
      return false
    }
    thread = handle
    return true
  }

  /// Waits for the thread to finish.
  package func join() {
    guard let thread else { return }
    pthread_join(thread, nil)
    self.thread = nil
  }
}
