import Foundation
import Testing
import YTKKeyValueStore

/// Opening, closing, syncing, read-only opens, the lock between writers, statistics and
/// compaction.
@Suite("KeyValueStore lifecycle")
struct KeyValueStoreLifecycleTests {
  private let directory = TemporaryDirectory("lifecycle")

  /// A store holding two tables with a few items, closed again.
  private func makeStore() throws {
    let store = try KeyValueStore(path: directory.storePath)
    try store.createTable("users")
    try store.createTable("empty")
    try store.put(["id": 1, "name": "tangqiao"], id: "1", into: "users")
    try store.put(string: "two", id: "2", into: "users")
    try store.put(number: 3, id: "3", into: "users")
    try store.close()
  }

  // MARK: Opening

  @Test("opening creates the store's directory, and its parents, when missing")
  func openCreatesDirectory() throws {
    let path = directory.appending("a/b/c/store.db")
    let store = try KeyValueStore(path: path)
    var isDirectory: ObjCBool = false
    #expect(FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory))
    #expect(isDirectory.boolValue)
    try store.createTable("t")
    #expect(try store.tableNames() == ["t"])
    try store.close()
  }

  @Test("a path that is a file, not a directory, cannot be opened")
  func pathIsAFile() throws {
    let path = directory.appending("file")
    #expect(FileManager.default.createFile(atPath: path, contents: Data("x".utf8)))
    let error = #expect(throws: KeyValueStoreError.self) { _ = try KeyValueStore(path: path) }
    #expect(error?.message.contains(path) == true)
  }

  @Test("a segment size outside 4 KiB to 2 GiB is .invalidArgument")
  func invalidSegmentSize() throws {
    for size in [0, 4095, (2 << 30) + 1] {
      expectError(.invalidArgument) {
        _ = try KeyValueStore(
          path: directory.storePath, options: StoreOptions(maxSegmentSize: size))
      }
    }
    let smallest = try KeyValueStore(
      path: directory.storePath, options: StoreOptions(maxSegmentSize: 4096))
    try smallest.close()
  }

  // MARK: Closing

  @Test("close can be called twice")
  func closeTwice() throws {
    let store = try KeyValueStore(path: directory.storePath)
    try store.close()
    try store.close()
  }

  /// Opens the store, writes, and lets it go without closing it.
  private func writeWithoutClosing(_ value: Int) throws {
    let store = try KeyValueStore(path: directory.storePath)
    try store.createTable("t")
    try store.put(number: value, id: "\(value)", into: "t")
  }

  @Test("a store released without close lets go of its lock and keeps its writes")
  func releasedWithoutClose() throws {
    try writeWithoutClosing(1)
    try writeWithoutClosing(2)
    let store = try KeyValueStore(path: directory.storePath)
    #expect(try store.allItems(in: "t").map(\.object) == [[1], [2]])
    try store.close()
  }

  @Test("every call after close throws .closed")
  func callsAfterClose() throws {
    try makeStore()
    let store = try KeyValueStore(path: directory.storePath)
    try store.close()
    let calls: [(String, () throws -> Void)] = [
      ("sync", { try store.sync() }),
      ("createTable", { try store.createTable("new") }),
      ("tableExists", { _ = try store.tableExists("users") }),
      ("tableNames", { _ = try store.tableNames() }),
      ("clearTable", { try store.clearTable("users") }),
      ("dropTable", { try store.dropTable("users") }),
      ("put", { try store.put(["a": 1], id: "1", into: "users") }),
      ("put(string:)", { try store.put(string: "s", id: "1", into: "users") }),
      ("put(number: Int)", { try store.put(number: 1, id: "1", into: "users") }),
      ("put(number: Double)", { try store.put(number: 1.5, id: "1", into: "users") }),
      ("put(encodable:)", { try store.put(encodable: [1], id: "1", into: "users") }),
      ("object", { _ = try store.object(id: "1", from: "users") }),
      ("string", { _ = try store.string(id: "2", from: "users") }),
      ("number", { _ = try store.number(id: "3", from: "users") }),
      ("integer", { _ = try store.integer(id: "3", from: "users") }),
      ("decode", { _ = try store.decode([Int].self, id: "3", from: "users") }),
      ("item", { _ = try store.item(id: "1", from: "users") }),
      ("allItems", { _ = try store.allItems(in: "users") }),
      ("count", { _ = try store.count(in: "users") }),
      ("delete(id:)", { try store.delete(id: "1", from: "users") }),
      ("delete(ids:)", { try store.delete(ids: ["1", "2"], from: "users") }),
      ("delete(prefix:)", { try store.delete(prefix: "", from: "users") }),
      ("compact", { try store.compact() }),
      ("statistics", { _ = try store.statistics() }),
    ]
    for (name, call) in calls {
      let error = #expect(throws: KeyValueStoreError.self, "\(name)") { try call() }
      #expect(error?.code == .closed, "\(name) threw \(String(describing: error))")
      #expect(error?.message.contains("closed") == true, "\(name)")
    }
    try store.close()

    // Nothing those calls attempted reached the store.
    let reopened = try KeyValueStore(path: directory.storePath)
    #expect(try reopened.tableNames() == ["empty", "users"])
    #expect(try reopened.count(in: "users") == 3)
    try reopened.close()
  }

  // What sync() is for, that synced writes survive a power loss, needs a simulated file system,
  // which KeyValueStore does not take: SyncStrengthTests.syncKeepsWrites tests it on LogStore's
  // sync(), which KeyValueStore's calls. These two test what a reopen in this process can see.

  @Test("sync works before any write and repeatedly, and changes nothing that reads back")
  func syncKeepsData() throws {
    let store = try KeyValueStore(path: directory.storePath)
    try store.sync()
    try store.createTable("t")
    try store.put(number: 1, id: "a", into: "t")
    try store.sync()
    try store.sync()
    #expect(try store.integer(id: "a", from: "t") == 1)
    let reopened = try reopen(store)
    #expect(try reopened.integer(id: "a", from: "t") == 1)
    try reopened.close()
  }

  @Test(
    "every sync policy keeps what was written across a close and a reopen",
    arguments: [SyncPolicy.never, .always, .interval(milliseconds: 5)])
  func syncPolicies(policy: SyncPolicy) throws {
    let store = try KeyValueStore(path: directory.storePath, options: StoreOptions(sync: policy))
    try store.createTable("t")
    for index in 0..<20 { try store.put(number: index, id: "\(index)", into: "t") }
    let before = try StoreSnapshot(store)
    let reopened = try reopen(store)
    #expect(try StoreSnapshot(reopened) == before)
    #expect(try reopened.count(in: "t") == 20)
    try reopened.close()
  }

  // MARK: The lock

  @Test(
    "a second KeyValueStore on the same path in this process gets .locked until the first closes")
  func secondWriterInProcess() throws {
    let first = try KeyValueStore(path: directory.storePath)
    try first.createTable("t")
    try first.put(number: 1, id: "a", into: "t")
    expectError(.locked, mentioning: ["locked"]) {
      _ = try KeyValueStore(path: directory.storePath)
    }
    // The failed open did not disturb the first.
    try first.put(number: 2, id: "b", into: "t")
    #expect(try first.count(in: "t") == 2)
    try first.close()

    let second = try KeyValueStore(path: directory.storePath)
    #expect(try second.count(in: "t") == 2)
    try second.close()
  }

  // MARK: Read-only

  @Test("a read-only open of a missing path is .storeNotFound naming it, and creates nothing")
  func readOnlyMissing() throws {
    let path = directory.appending("missing.db")
    expectError(.storeNotFound, mentioning: [path]) {
      _ = try KeyValueStore(path: path, options: StoreOptions(readOnly: true))
    }
    #expect(!FileManager.default.fileExists(atPath: path))
  }

  @Test("a read-only store reads everything")
  func readOnlyReads() throws {
    try makeStore()
    let writable = try KeyValueStore(path: directory.storePath)
    let expected = try StoreSnapshot(writable)
    try writable.close()

    let store = try KeyValueStore(path: directory.storePath, options: StoreOptions(readOnly: true))
    #expect(try StoreSnapshot(store) == expected)
    #expect(try store.tableExists("users"))
    #expect(try store.object(id: "1", from: "users") == ["id": 1, "name": "tangqiao"])
    #expect(try store.string(id: "2", from: "users") == "two")
    #expect(try store.integer(id: "3", from: "users") == 3)
    #expect(try store.number(id: "3", from: "users") == 3)
    #expect(try store.decode([Int].self, id: "3", from: "users") == [3])
    #expect(try store.item(id: "2", from: "users")?.object == ["two"])
    #expect(try store.count(in: "users") == 3)
    #expect(try store.count(in: "empty") == 0)
    let statistics = try store.statistics()
    #expect(statistics.tables == 2)
    #expect(statistics.liveItems == 3)
    try store.close()
  }

  @Test("refresh() moves a read-only store forward to what the writer beside it wrote since")
  func readOnlyRefresh() throws {
    try makeStore()
    let writable = try KeyValueStore(path: directory.storePath)
    let store = try KeyValueStore(path: directory.storePath, options: StoreOptions(readOnly: true))
    try writable.put(string: "new", id: "9", into: "users")
    try writable.delete(id: "1", from: "users")
    #expect(try store.string(id: "9", from: "users") == nil)
    try store.refresh()
    #expect(try store.string(id: "9", from: "users") == "new")
    #expect(try store.object(id: "1", from: "users") == nil)
    #expect(try StoreSnapshot(store) == StoreSnapshot(writable))
    try writable.close()
    try store.close()
    expectError(.closed) { try store.refresh() }
  }

  @Test("every write to a read-only store throws .readOnly naming the store, and changes nothing")
  func readOnlyRefusesWrites() throws {
    try makeStore()
    let writable = try KeyValueStore(path: directory.storePath)
    let expected = try StoreSnapshot(writable)
    try writable.close()

    let store = try KeyValueStore(path: directory.storePath, options: StoreOptions(readOnly: true))
    let path = directory.storePath
    let writes: [(String, () throws -> Void)] = [
      ("createTable new", { try store.createTable("new") }),
      ("createTable existing", { try store.createTable("users") }),
      ("clearTable", { try store.clearTable("users") }),
      ("dropTable", { try store.dropTable("users") }),
      ("put", { try store.put(["a": 1], id: "9", into: "users") }),
      ("put(string:)", { try store.put(string: "s", id: "1", into: "users") }),
      ("put(number: Int)", { try store.put(number: 1, id: "1", into: "users") }),
      ("put(number: Double)", { try store.put(number: 1.5, id: "1", into: "users") }),
      ("put(encodable:)", { try store.put(encodable: [1], id: "1", into: "users") }),
      ("delete(id:)", { try store.delete(id: "1", from: "users") }),
      ("delete(missing id)", { try store.delete(id: "missing", from: "users") }),
      ("delete(ids:)", { try store.delete(ids: ["1", "2"], from: "users") }),
      ("delete(prefix:)", { try store.delete(prefix: "", from: "users") }),
      ("compact", { try store.compact() }),
    ]
    for (name, write) in writes {
      let error = #expect(throws: KeyValueStoreError.self, "\(name)") { try write() }
      #expect(error?.code == .readOnly, "\(name) threw \(String(describing: error))")
      #expect(error?.message.contains(path) == true, "\(name): \(String(describing: error))")
    }
    #expect(try StoreSnapshot(store) == expected)
    try store.close()

    let reopened = try KeyValueStore(path: directory.storePath)
    #expect(try StoreSnapshot(reopened) == expected)
    try reopened.close()
  }

  @Test("a read-only open works while a writer holds the store, and sees what it wrote")
  func readOnlyBesideWriter() throws {
    let writer = try KeyValueStore(path: directory.storePath)
    try writer.createTable("t")
    try writer.put(["v": 1], id: "a", into: "t")
    try writer.put(string: "b", id: "b", into: "t")
    let reader = try KeyValueStore(path: directory.storePath, options: StoreOptions(readOnly: true))
    #expect(try reader.tableNames() == ["t"])
    #expect(try reader.object(id: "a", from: "t") == ["v": 1])
    #expect(try reader.string(id: "b", from: "t") == "b")
    expectError(.readOnly) { try reader.put(number: 1, id: "c", into: "t") }
    #expect(try reader.statistics().damagedRecords == 0)
    #expect(try reader.statistics().liveItems == 2)
    // The writer goes on writing while the reader is open.
    try writer.put(number: 3, id: "c", into: "t")
    #expect(try writer.count(in: "t") == 3)
    try reader.close()
    try writer.close()
  }

  // MARK: Statistics

  @Test("a new store's statistics: no tables or items, one segment, no damage")
  func statisticsOfNewStore() throws {
    let store = try KeyValueStore(path: directory.storePath)
    let statistics = try store.statistics()
    #expect(statistics.tables == 0)
    #expect(statistics.liveItems == 0)
    #expect(statistics.segments >= 1)
    #expect(statistics.damagedRecords == 0)
    #expect(statistics.liveBytes <= statistics.diskBytes)
    try store.close()
  }

  @Test("statistics count tables and live items as they change, with liveBytes <= diskBytes")
  func statisticsFollowWrites() throws {
    let store = try KeyValueStore(path: directory.storePath)
    try store.createTable("a")
    try store.createTable("b")
    for index in 0..<10 { try store.put(string: "value \(index)", id: "\(index)", into: "a") }
    for index in 0..<5 { try store.put(number: index, id: "\(index)", into: "b") }
    var statistics = try store.statistics()
    #expect(statistics.tables == 2)
    #expect(statistics.liveItems == 15)
    #expect(statistics.liveBytes > 0)
    #expect(statistics.liveBytes <= statistics.diskBytes)
    #expect(statistics.segments >= 1)
    #expect(statistics.damagedRecords == 0)

    for index in 0..<10 { try store.put(string: "again \(index)", id: "\(index)", into: "a") }
    statistics = try store.statistics()
    #expect(statistics.liveItems == 15)
    #expect(statistics.liveBytes <= statistics.diskBytes)

    try store.delete(ids: ["0", "1", "2"], from: "a")
    #expect(try store.statistics().liveItems == 12)
    try store.dropTable("b")
    statistics = try store.statistics()
    #expect(statistics.tables == 1)
    #expect(statistics.liveItems == 7)
    #expect(statistics.liveBytes <= statistics.diskBytes)
    try store.clearTable("a")
    statistics = try store.statistics()
    #expect(statistics.tables == 1)
    #expect(statistics.liveItems == 0)

    let reopened = try reopen(store)
    statistics = try reopened.statistics()
    #expect(statistics.tables == 1)
    #expect(statistics.liveItems == 0)
    #expect(statistics.damagedRecords == 0)
    try reopened.close()
  }

  // MARK: Compaction

  @Test("compact leaves every value, id, table and created time as it was, and reclaims space")
  func compactKeepsData() throws {
    let store = try KeyValueStore(
      path: directory.storePath, options: StoreOptions(compaction: .manual))
    try store.createTable("kept")
    try store.createTable("dropped")
    try store.createTable("cleared")
    for round in 0..<5 {
      for index in 0..<200 {
        try store.put(
          ["round": .int(Int64(round)), "pad": .string(asciiString(bytes: 100))],
          id: "id\(index)", into: "kept")
      }
    }
    for index in 0..<100 {
      try store.put(number: index, id: "\(index)", into: "dropped")
      try store.put(number: index, id: "\(index)", into: "cleared")
    }
    try store.delete(prefix: "id1", from: "kept")
    try store.delete(ids: ["id2", "id3"], from: "kept")
    try store.dropTable("dropped")
    try store.clearTable("cleared")
    let before = try StoreSnapshot(store)
    let statisticsBefore = try store.statistics()

    try store.compact()

    #expect(try StoreSnapshot(store) == before)
    let statisticsAfter = try store.statistics()
    #expect(statisticsAfter.tables == statisticsBefore.tables)
    #expect(statisticsAfter.liveItems == statisticsBefore.liveItems)
    #expect(statisticsAfter.liveBytes <= statisticsAfter.diskBytes)
    #expect(statisticsAfter.diskBytes < statisticsBefore.diskBytes)
    #expect(statisticsAfter.garbageBytes < statisticsBefore.garbageBytes)
    #expect(statisticsAfter.damagedRecords == 0)

    // The store goes on working after compaction, and a second one changes nothing.
    try store.put(string: "after", id: "new", into: "kept")
    try store.compact()
    #expect(try store.string(id: "new", from: "kept") == "after")
    #expect(try store.count(in: "kept") == before.items["kept"]!.count + 1)
    try store.close()
  }

  @Test("compacting an empty store is fine")
  func compactEmpty() throws {
    let store = try KeyValueStore(path: directory.storePath)
    try store.compact()
    try store.createTable("t")
    try store.compact()
    #expect(try store.tableNames() == ["t"])
    try store.close()
  }
}
