#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Writes `text` to a file descriptor in full, unbuffered, or exits with status 3: the helper
/// processes the tests start report each step as it happens, and a test that kills one must
/// find every line it printed before.
package func emit(_ text: String, to descriptor: Int32) {
  let bytes = Array(text.utf8)
  bytes.withUnsafeBytes { buffer in
    var done = 0
    while done < buffer.count {
      let count = write(descriptor, buffer.baseAddress! + done, buffer.count - done)
      if count <= 0 { exit(3) }
      done += count
    }
  }
}
