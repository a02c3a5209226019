#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// The one place where system calls are made and their failures turned into errors.
///
/// Every call that can be interrupted by a signal is retried on `EINTR`; every failure
/// becomes a ``LogStoreError`` whose message names the operation and the path, with
/// `ENOSPC`/`EDQUOT` reported as ``LogStoreError/Code/diskFull``, `EACCES`/`EPERM` as
/// ``LogStoreError/Code/permissionDenied``, and everything else as
/// ``LogStoreError/Code/io``.
package enum SystemCall {
  /// Runs `body` until it does not fail with `EINTR`, and returns its result; `-1` becomes
  /// a thrown error describing `operation` on `path`.
  @inline(__always)
  static func retrying<T: FixedWidthInteger>(
    _ operation: StaticString, _ path: String, _ body: () -> T
  ) throws(LogStoreError) -> T {
    var result = body()
    while result == -1 {
      let code = errno
      guard code == EINTR else { throw error(operation, path, code) }
      result = body()
    }
    return result
  }

  /// The error for a failed `operation` on `path` with `errno` `code`.
  static func error(_ operation: StaticString, _ path: String, _ code: Int32) -> LogStoreError {
    let kind: LogStoreError.Code =
      switch code {
      case ENOSPC, EDQUOT: .diskFull
      case EACCES, EPERM: .permissionDenied
      default: .io
      }
    return LogStoreError(
      kind, "\(operation) failed for \(path): \(describe(code))", systemError: code)
  }

  /// The C library's text for an `errno` value, such as "No space left on device".
  /// `strerror_r`, not `strerror`, whose buffer other threads may overwrite meanwhile (POSIX
  /// does not promise `strerror` is thread-safe).
  package static func describe(_ code: Int32) -> String {
    var buffer = [CChar](repeating: 0, count: 256)
    return buffer.withUnsafeMutableBufferPointer { buffer in
      // The POSIX variant on every platform (Swift's Glibc imports it, not GNU's): it fills
      // `buffer` and returns 0.
      let start = buffer.baseAddress!
      guard strerror_r(code, start, buffer.count) == 0 else { return "error \(code)" }
      return String(cString: start)
    }
  }
}

#if canImport(Darwin)
  extension SystemCall {
    /// Darwin's syncs: `fsync` hands the data to the drive, which may keep it in a volatile
    /// cache; `F_FULLFSYNC` also empties that cache (what makes data survive a power loss),
    /// and `F_BARRIERFSYNC` orders it before later writes without emptying it. A file system
    /// that does not support the call (`ENOTSUP`, `ENOTTY`, `EINVAL`: some network and FAT
    /// volumes, and systems older than the barrier) gets the next strongest: the barrier falls
    /// back to the full sync, the full sync to `fsync`. Every other failure is an error.
    static func flush(_ fd: Int32, _ path: String, _ strength: SyncStrength) throws(LogStoreError) {
      if strength == .ordered,
        try fileControlSync(fd, F_BARRIERFSYNC, "fcntl(F_BARRIERFSYNC)", path)
      {
        return
      }
      if try fileControlSync(fd, F_FULLFSYNC, "fcntl(F_FULLFSYNC)", path) { return }
      _ = try retrying("fsync", path) { fsync(fd) }
    }

    /// `fcntl(fd, command)` for a sync command: true when done, false when the file system
    /// does not support it.
    private static func fileControlSync(
      _ fd: Int32, _ command: Int32, _ operation: StaticString, _ path: String
    ) throws(LogStoreError) -> Bool {
      while true {
        if fcntl(fd, command) != -1 { return true }
        let code = errno
        switch code {
        case EINTR: continue
        case ENOTSUP, EOPNOTSUPP, ENOTTY, EINVAL: return false
        default: throw error(operation, path, code)
        }
      }
    }
  }
#endif

extension LogStoreError {
  /// Whether the failing call found no file at its path (`ENOENT`): for a reader beside a
  /// writer, a file the writer removed after the reader learned its name.
  package var isMissingFile: Bool { systemError == ENOENT }
}
