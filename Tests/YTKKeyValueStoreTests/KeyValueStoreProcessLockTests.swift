import Foundation
import Testing
import YTKKeyValueStore

/// One process at a time may open a store for writing: a second process, here the `ytkkv`
/// tool built with the tests, gets `.locked` until the first one closes the store.
@Suite("KeyValueStore lock between processes")
struct KeyValueStoreProcessLockTests {
  private let directory = TemporaryDirectory("process-lock")

  @Test("the ytkkv executable is built alongside the tests")
  func toolIsFound() throws {
    let path = try #require(YtkkvTool.executablePath())
    #expect(FileManager.default.isExecutableFile(atPath: path))
  }

  @Test("another process opening the store for writing fails with 'locked' until this one closes")
  func secondProcessIsLockedOut() throws {
    let path = directory.storePath
    let store = try KeyValueStore(path: path)
    try store.createTable("mine")
    try store.put(string: "held", id: "1", into: "mine")

    let refused = try YtkkvTool.run(["demo", path], scratch: directory)
    #expect(
      refused.status == 1, "stdout: \(refused.standardOutput) stderr: \(refused.standardError)")
    #expect(refused.standardError.contains("locked"), "stderr: \(refused.standardError)")

    // The refused process changed nothing, and this one still writes.
    #expect(try store.tableNames() == ["mine"])
    try store.put(string: "still mine", id: "2", into: "mine")
    #expect(try store.count(in: "mine") == 2)
    try store.close()

    let allowed = try YtkkvTool.run(["demo", path], scratch: directory)
    #expect(
      allowed.status == 0, "stdout: \(allowed.standardOutput) stderr: \(allowed.standardError)")
    #expect(allowed.standardOutput.contains("query data result"))

    // What the tool wrote is there for this process to read, next to what it wrote itself.
    let reopened = try KeyValueStore(path: path)
    #expect(try reopened.tableNames() == ["mine", "user_table"])
    #expect(
      try reopened.object(id: "1", from: "user_table") == ["id": 1, "name": "tangqiao", "age": 30])
    #expect(try reopened.count(in: "user_table") == 1)
    #expect(try reopened.allItems(in: "mine").map(\.object) == [["held"], ["still mine"]])
    try reopened.close()
  }

  @Test("a store opened read-only does not lock other processes out")
  func readOnlyTakesNoLock() throws {
    let path = directory.storePath
    let setUp = try KeyValueStore(path: path)
    try setUp.createTable("t")
    try setUp.close()

    let reader = try KeyValueStore(path: path, options: StoreOptions(readOnly: true))
    let result = try YtkkvTool.run(["demo", path], scratch: directory)
    #expect(result.status == 0, "stderr: \(result.standardError)")
    #expect(try reader.tableExists("t"))
    try reader.close()

    let reopened = try KeyValueStore(path: path)
    #expect(try reopened.tableNames() == ["t", "user_table"])
    try reopened.close()
  }
}
