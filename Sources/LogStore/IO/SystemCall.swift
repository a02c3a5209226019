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
/// `ENOSPC`/`EDQUOT` reported as ``LogStoreError/Code/diskFull`` and everything else as
/// ``LogStoreError/Code/io``.
enum SystemCall {
  /// The calling thread's current `errno`.
  static var lastError: Int32 { errno }

  /// Runs `body` until it does not fail with `EINTR`, and returns its result; `-1` becomes
  /// a thrown error describing `operation` on `path`.
  @inline(__always)
  static func retrying<T: FixedWidthInteger>(
    _ operation: StaticString, _ path: String, _ body: () -> T
  ) throws(LogStoreError) -> T {
    while true {
      let result = body()
      if result != -1 { return result }
      let code = errno
      if code == EINTR { continue }
      throw error(operation, path, code)
    }
  }

  /// The error for a failed `operation` on `path` with `errno` `code`.
  static func error(_ operation: StaticString, _ path: String, _ code: Int32) -> LogStoreError {
    let kind: LogStoreError.Code =
      switch code {
      case ENOSPC, EDQUOT: .diskFull
      default: .io
      }
    return LogStoreError(
      kind, "\(operation) failed for \(path): \(describe(code))", systemError: code)
  }

  /// The C library's text for an `errno` value, such as "No space left on device".
  static func describe(_ code: Int32) -> String {
    guard let text = strerror(code) else { return "error \(code)" }
    return String(cString: text)
  }
}

extension LogStoreError {
  /// Whether the failing call found no file at its path (`ENOENT`): for a reader beside a
  /// writer, a file the writer removed after the reader learned its name.
  package var isMissingFile: Bool { systemError == ENOENT }
}
