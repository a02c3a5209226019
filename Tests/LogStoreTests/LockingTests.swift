import Testing

@testable import LogStore

@Suite("Locking and read-only opens")
struct LockingTests {
  @Test("a second open for writing gets locked at once; a read-only open works alongside")
  func secondWriter() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let first = try LogStore(path: path)
    try first.createTable("t")
    try first.put(Array("v".utf8), forKey: Array("k".utf8), in: "t")
    let error = #expect(throws: LogStoreError.self) { try LogStore(path: path) }
    #expect(error?.code == .locked)
    #expect(error?.message.contains("locked") == true)
    let reader = try LogStore(path: path, options: .init(readOnly: true))
    #expect(try reader.value(forKey: Array("k".utf8), in: "t") == Array("v".utf8))
    let refused = #expect(throws: LogStoreError.self) { try reader.createTable("u") }
    #expect(refused?.code == .readOnly)
    let empty = #expect(throws: LogStoreError.self) { try reader.write(WriteBatch()) }
    #expect(empty?.code == .readOnly)
    try first.close()
    let second = try LogStore(path: path)
    #expect(try second.value(forKey: Array("k".utf8), in: "t") == Array("v".utf8))
  }

  @Test(
    "refresh() moves a read-only snapshot forward, through rotations and a compaction; a writer's refresh does nothing"
  )
  func refreshSnapshot() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let writer = try LogStore(
      path: path, options: .init(compaction: .manual, maxSegmentSize: 4 << 10))
    try writer.createTable("t")
    try writer.put(Array("1".utf8), forKey: Array("k".utf8), in: "t")
    let reader = try LogStore(path: path, options: .init(readOnly: true))
    var expected: [String: String] = ["k": "1"]
    for round in 0..<200 {
      try writer.put(Array("v\(round)".utf8), forKey: Array("k\(round % 30)".utf8), in: "t")
      expected["k\(round % 30)"] = "v\(round)"
    }
    try writer.delete(key: Array("k".utf8), in: "t")
    expected["k"] = nil
    #expect(try reader.value(forKey: Array("k".utf8), in: "t") == Array("1".utf8))
    try reader.refresh()
    #expect(try reader.snapshot() == ["t": expected])
    try writer.compact()
    try writer.put(Array("after".utf8), forKey: Array("k1".utf8), in: "t")
    expected["k1"] = "after"
    try reader.refresh()
    #expect(try reader.snapshot() == ["t": expected])
    try writer.refresh()
    #expect(try writer.snapshot() == ["t": expected])
    try writer.close()
    try reader.close()
    let refused = #expect(throws: LogStoreError.self) { try reader.refresh() }
    #expect(refused?.code == .closed)
  }

  @Test("every call after close throws closed, and closing twice is fine")
  func afterClose() throws {
    let directory = TemporaryDirectory()
    let store = try LogStore(path: directory.appending("store"))
    try store.createTable("t")
    try store.close()
    try store.close()
    for call: () throws -> Void in [
      { try store.createTable("u") }, { _ = try store.tableNames() },
      { _ = try store.value(forKey: [1], in: "t") }, { try store.put([1], forKey: [1], in: "t") },
      { _ = try store.statistics() }, { try store.compact() }, { try store.sync() },
      // An empty batch writes nothing, and still is a write of a closed store.
      { try store.write(WriteBatch()) },
    ] {
      let error = #expect(throws: LogStoreError.self) { try call() }
      #expect(error?.code == .closed)
    }
  }

  @Test("a read-only open of a missing store says there is none and creates nothing")
  func readOnlyMissing() throws {
    let directory = TemporaryDirectory()
    let error = #expect(throws: LogStoreError.self) {
      try LogStore(path: directory.appending("nothing"), options: .init(readOnly: true))
    }
    #expect(error?.code == .storeNotFound)
  }

  /// iOS kills a suspended app (0xdead10cc) that holds a file lock in a shared (App Group)
  /// container: extensions open read-only, which must take no lock at all, and an app closes
  /// its store before suspension, which must release the lock at once.
  @Test(
    "a read-only open takes no lock; close releases the writer's lock, with background threads and a reader open"
  )
  func locksForSuspension() throws {
    let fileSystem = SimulatedFileSystem()
    var options = LogStore.Options(
      sync: .interval(milliseconds: 5), compaction: .automatic, maxSegmentSize: 64 << 10)
    options.fileSystem = fileSystem
    let writer = try LogStore(path: "/group/store", options: options)
    try writer.createTable("t")
    try writer.put(Array("v".utf8), forKey: Array("k".utf8), in: "t")
    var readOnly = options
    readOnly.readOnly = true
    let before = fileSystem.log.count
    let reader = try LogStore(path: "/group/store", options: readOnly)
    #expect(try reader.value(forKey: Array("k".utf8), in: "t") == Array("v".utf8))
    #expect(
      !fileSystem.log[before...].contains { $0.operation == "flock" },
      "a read-only open took a lock")
    try writer.close()
    // The lock is free: another writer gets it at once (the simulated lock never waits).
    let next = try LogStore(path: "/group/store", options: options)
    try next.close()
    try reader.close()
  }
}
