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
    try first.close()
    let second = try LogStore(path: path)
    #expect(try second.value(forKey: Array("k".utf8), in: "t") == Array("v".utf8))
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
}
