#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
  // notify(3) is a module of its own in Apple's SDKs (`notify.h`), which `Darwin` may not
  // export: imported where it exists, so that the calls below never rest on a re-export.
  #if canImport(notify)
    import notify
  #endif
#endif

/// ``CommitSignal`` on the real system.
///
/// - Darwin: a `notify(3)` name made from the store directory's device and inode numbers,
///   which every process that opens the directory makes alike. A write's publication posts it
///   (`notify_post`); a watcher registers a file descriptor for it
///   (`notify_register_file_descriptor`, which writes to the descriptor at each post) and
///   waits on the descriptor with `poll(2)`. Should registering fail (a sandbox that refuses
///   the name), the watcher falls back to the pause below.
/// - Linux: there is no system-wide named notification without a daemon of its own, and
///   `inotify` reports no change made through a shared mapping, which is how the shared state
///   changes. So a post does nothing, and a wait is a pause of ``pollMilliseconds``, after
///   which the watcher compares the shared state's count of publications: one load.
final class SystemCommitSignal: CommitSignal, @unchecked Sendable {
  /// How long a wait lasts where there is no signal to wait for.
  static let pollMilliseconds = 5
  let name: String
  // Used by the one waiting thread, and by `close()` once it has stopped.
  private var registered = false
  private var descriptor: Int32 = -1
  private var token: Int32 = 0

  init(name: String) { self.name = name }

  func post() {
    #if canImport(Darwin)
      _ = notify_post(name)
    #endif
  }

  func wait(milliseconds: Int) {
    #if canImport(Darwin)
      if !registered {
        registered = true
        if notify_register_file_descriptor(name, &descriptor, 0, &token) != NOTIFY_STATUS_OK {
          descriptor = -1
        }
      }
      if descriptor >= 0 {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        if poll(&entry, 1, Int32(clamping: milliseconds)) > 0 {
          // Each post wrote the 4-byte token; the posts waiting are taken at once, as one.
          var tokens = [Int32](repeating: 0, count: 16)
          _ = tokens.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        }
        return
      }
    #endif
    pauseThread(microseconds: min(milliseconds, Self.pollMilliseconds) * 1000)
  }

  func close() {
    #if canImport(Darwin)
      // Cancelling the registration closes the descriptor the library made for it.
      if descriptor >= 0 { _ = notify_cancel(token) }
      descriptor = -1
    #endif
  }
}
