import Testing

@testable import LogStore
@testable import LogStoreTesting

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Records of ``LogStore/Options/fileWriteMinimumBytes`` or more go to the active segment with
/// `pwrite`, shorter ones through its mapping
/// (``SegmentWriter/append(count:fileWriteMinimum:_:)``). The crash-point and I/O-fault suites
/// run both paths on the simulated file system (``CrashWorkload/fileWriteMinimumBytes``); these
/// tests add the real file system, where the records written one way are read through the
/// mapping, the sharing of such records between opens in `.manyProcesses` use, and the fallback
/// of a failed write.
@Suite("Large records")
struct LargeRecordTests {
  /// Values on both sides of the threshold and far past it, each with different bytes.
  private static let sizes = [0, 100, (64 << 10) - 80, 64 << 10, (1 << 20) + 3, 70_001]

  private static func value(_ index: Int, size: Int) -> [UInt8] {
    var generator = SeededGenerator(seed: UInt64(index * 7_919 + size))
    return (0..<size).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
  }

  @Test(
    "records written with pwrite and through the mapping, side by side, read back through the mapping here, beside, and after a reopen"
  )
  func bothPathsOnTheRealFileSystem() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let options = LogStore.Options(sync: .never, compaction: .manual)
    #expect(options.fileWriteMinimumBytes == 64 << 10)
    let store = try LogStore(path: path, options: options)
    try store.createTable("blobs")
    var expected: [[UInt8]: [UInt8]] = [:]
    for round in 0..<2 {
      for (index, size) in Self.sizes.enumerated() {
        let key = Array("blob_\(index)".utf8)
        let value = Self.value(index + round * 100, size: size)
        try store.put(value, forKey: key, in: "blobs")
        expected[key] = value
        // Read at once, through the mapping, from the page the write left in the cache.
        #expect(try store.value(forKey: key, in: "blobs") == value)
      }
    }
    var readOnly = options
    readOnly.readOnly = true
    let reader = try LogStore(path: path, options: readOnly)
    for (key, value) in expected { #expect(try reader.value(forKey: key, in: "blobs") == value) }
    try reader.close()
    try store.close()
    #expect(try LogStore.verify(path: path).problems.isEmpty)
    let reopened = try LogStore(path: path, options: options)
    for (key, value) in expected {
      #expect(try reopened.value(forKey: key, in: "blobs") == value)
    }
    try reopened.compact()
    for (key, value) in expected {
      #expect(try reopened.value(forKey: key, in: "blobs") == value)
    }
    try reopened.close()
  }

  @Test(
    "in .manyProcesses use, large records one open writes with pwrite are read by another through its own mapping, both ways, across a segment's rotation"
  )
  func largeRecordsBetweenOpens() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    var options = LogStore.Options(compaction: .manual, maxSegmentSize: 1 << 20)
    options.sharing = .manyProcesses
    let first = try LogStore(path: path, options: options)
    let second = try LogStore(path: path, options: options)
    try first.createTable("blobs")
    var expected: [[UInt8]: [UInt8]] = [:]
    for index in 0..<12 {
      let (writer, reader) = index % 2 == 0 ? (first, second) : (second, first)
      let key = Array("blob_\(index % 5)".utf8)
      let value = Self.value(index, size: [70_000, 300_000, 5_000][index % 3])
      try writer.put(value, forKey: key, in: "blobs")
      expected[key] = value
      #expect(try reader.value(forKey: key, in: "blobs") == value, "put \(index)")
    }
    for (key, value) in expected {
      #expect(try first.value(forKey: key, in: "blobs") == value)
      #expect(try second.value(forKey: key, in: "blobs") == value)
    }
    try first.close()
    try second.close()
    #expect(try LogStore.verify(path: path).problems.isEmpty)
    let reopened = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    for (key, value) in expected { #expect(try reopened.value(forKey: key, in: "blobs") == value) }
  }

  @Test(
    "a record whose pwrite fails is written through the mapping instead: the put succeeds, and it is there after a sync, a crash and a reopen",
    arguments: [Int32(EIO), Int32(ENOSPC)])
  func failedWriteFallsBackToTheMapping(errorNumber: Int32) throws {
    let value = Self.value(1, size: 80_000)
    func run(_ fileSystem: SimulatedFileSystem) throws -> LogStore {
      var options = LogStore.Options(sync: .always, compaction: .manual)
      options.fileSystem = fileSystem
      let store = try LogStore(path: "/store", options: options)
      try store.createTable("blobs")
      try store.put(value, forKey: Array("big".utf8), in: "blobs")
      #expect(try store.value(forKey: Array("big".utf8), in: "blobs") == value)
      return store
    }
    let reference = SimulatedFileSystem()
    try run(reference).close()
    let record = try #require(
      reference.log.firstIndex { $0.operation == "pwrite" && $0.path.hasSuffix(".log") })
    #expect(reference.log[record].count > value.count)
    #expect(
      !reference.log.contains {
        $0.operation == "mapped write" && $0.count == reference.log[record].count
      })

    let fileSystem = SimulatedFileSystem()
    fileSystem.inject(.init(call: record + 1, errorNumber: errorNumber, persistent: false))
    let store = try run(fileSystem)
    let after = fileSystem.log[(record + 1)...]
    #expect(
      after.first?.operation == "mapped write"
        && after.first?.count == reference.log[record].count)
    // The put was acknowledged with `.always`: a power loss now keeps it.
    for seed: UInt64 in 1...4 {
      var options = LogStore.Options(sync: .always, compaction: .manual)
      options.fileSystem = SimulatedFileSystem(files: fileSystem.image(.power(seed: seed)))
      let reopened = try LogStore(path: "/store", options: options)
      #expect(try reopened.value(forKey: Array("big".utf8), in: "blobs") == value)
      try reopened.close()
    }
    try store.close()
  }
}
