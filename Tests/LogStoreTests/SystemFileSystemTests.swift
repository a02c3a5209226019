import Testing

@testable import LogStore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// The real file system's wrappers, on real files: what the simulated file system cannot
/// show.
@Suite("System file system")
struct SystemFileSystemTests {
  private let fileSystem = SystemFileSystem()

  private func contents(_ handle: any FileHandle) throws -> [UInt8] {
    var bytes = [UInt8](repeating: 0xFF, count: try handle.size())
    let read = try bytes.withUnsafeMutableBytes { try handle.read(into: $0, at: 0) }
    #expect(read == bytes.count)
    return bytes
  }

  @Test("allocate and its zero-writing fallback extend a file with zeros and keep its bytes")
  func allocateKeepsBytes() throws {
    let directory = TemporaryDirectory()
    for useFallback in [false, true] {
      let path = directory.path + "/file\(useFallback)"
      let handle = try fileSystem.openFile(path, mode: .createOrOpen)
      defer { handle.close() }
      try [UInt8](repeating: 7, count: 100).withUnsafeBytes { try handle.write($0, at: 0) }
      let target = 200_000  // more than one chunk of the fallback's zeros
      if useFallback {
        try #require(handle as? SystemFileHandle).fillWithZeros(from: 100, to: target)
      } else {
        try handle.allocate(upTo: target)
      }
      let bytes = try contents(handle)
      #expect(bytes.count == target)
      #expect(bytes.prefix(100).allSatisfy { $0 == 7 })
      #expect(bytes.dropFirst(100).allSatisfy { $0 == 0 })
      // Asking for less than the size changes nothing.
      try handle.allocate(upTo: 50)
      #expect(try handle.size() == target)
    }
  }

  @Test("a directory listing keeps names of every length up to the system's limit")
  func longNames() throws {
    let directory = TemporaryDirectory()
    let names = [1, 8, 9, 100, 255].map { String(repeating: "n", count: $0 - 1) + "x" }
    for name in names {
      try fileSystem.openFile(directory.path + "/" + name, mode: .createOrOpen).close()
    }
    #expect(try fileSystem.contentsOfDirectory(directory.path).sorted() == names.sorted())
  }

  @Test("EACCES and EPERM are permissionDenied, not damage or a generic I/O error")
  func permissionErrors() {
    for code in [EACCES, EPERM] {
      let error = SystemCall.error("open", "/x", code)
      #expect(error.code == .permissionDenied)
      #expect(error.systemError == code)
    }
    #expect(SystemCall.error("open", "/x", ENOSPC).code == .diskFull)
    #expect(SystemCall.error("open", "/x", EIO).code == .io)
  }

  @Test("a mapping syncs, at either strength, what was written through it")
  func mappingSync() throws {
    let directory = TemporaryDirectory()
    let handle = try fileSystem.openFile(directory.path + "/mapped", mode: .createOrOpen)
    defer { handle.close() }
    try handle.allocate(upTo: 8192)
    let mapping = try handle.map(length: 8192, writable: true)
    mapping.write(at: 5000, count: 3) { $0.copyBytes(from: [1, 2, 3]) }
    try mapping.synchronize(offset: 5000, count: 3, .ordered)
    try mapping.synchronize(offset: 5000, count: 3, .durable)
    try handle.synchronize(.durable)
    try fileSystem.synchronizeDirectory(directory.path)
    #expect(try contents(handle)[5000..<5003] == [1, 2, 3])
  }
}
