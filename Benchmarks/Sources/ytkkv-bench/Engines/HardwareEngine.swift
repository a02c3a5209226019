import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The hardware's limit, on the same file system: one `write(2)` of key and value per put
/// (plus `fdatasync` when durable), one `pread(2)` of a record per get. No index, no
/// checksum, no format: what any store must pay at least, doing one system call per
/// operation.
final class HardwareEngine: Engine, @unchecked Sendable {
  // The descriptors are immutable; concurrent writers append with O_APPEND.
  private let fd: Int32
  private let durable: Bool
  /// Every record is this long: a 13-byte key and the value of the workloads.
  static let recordSize = 13 + Dataset.value.count

  init(directory: String, durable: Bool) throws {
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    fd = open(directory + "/records", O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw BenchmarkError("open failed: errno \(errno)") }
    self.durable = durable
  }

  func put(_ key: [UInt8], _ value: [UInt8]) throws {
    let record = key + value
    let written = record.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    guard written == record.count else { throw BenchmarkError("write failed") }
    if durable { fdatasync(fd) }
  }

  /// Reads the record of key `user_%08d` at its fixed place.
  func get(_ key: [UInt8]) throws -> Int? {
    var index = 0
    for byte in key.dropFirst(5) { index = index * 10 + Int(byte &- 48) }
    var buffer = [UInt8](repeating: 0, count: Self.recordSize)
    let count = buffer.withUnsafeMutableBytes {
      pread(fd, $0.baseAddress, Self.recordSize, off_t(index * Self.recordSize))
    }
    return count == Self.recordSize ? count - 13 : nil
  }

  func deletePrefix(_ prefix: [UInt8]) throws {
    throw BenchmarkError("the hardware limit has no delete")
  }

  func scan() throws -> Int {
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    var offset = 0
    while true {
      let count = buffer.withUnsafeMutableBytes {
        pread(fd, $0.baseAddress, $0.count, off_t(offset))
      }
      if count <= 0 { break }
      offset += count
    }
    return offset / Self.recordSize
  }

  func close() throws { Glibc.close(fd) }
}
