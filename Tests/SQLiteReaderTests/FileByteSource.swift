import SQLiteReader

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A file read in place with `pread`, a page at a time: how an importer hands the reader a
/// file without reading it whole. For the measurement; the other tests read files whole.
final class FileByteSource: SQLiteByteSource {
  let name: String
  let size: UInt64
  private let descriptor: Int32

  init(path: String) throws {
    name = path
    descriptor = open(path, O_RDONLY)
    guard descriptor >= 0 else { throw FixtureError("cannot open \(path): errno \(errno)") }
    var status = stat()
    guard fstat(descriptor, &status) == 0 else {
      close(descriptor)
      throw FixtureError("cannot stat \(path): errno \(errno)")
    }
    size = UInt64(status.st_size)
  }

  deinit { close(descriptor) }

  func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws {
    var done = 0
    while done < buffer.count {
      let count = pread(
        descriptor, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
      if count < 0 && errno == EINTR { continue }
      guard count > 0 else {
        throw FixtureError("cannot read \(name) at \(offset): errno \(errno)")
      }
      done += count
    }
  }
}
