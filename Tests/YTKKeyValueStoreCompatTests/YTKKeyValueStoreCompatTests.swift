import Foundation
import LogStoreTesting
import Testing
import YTKKeyValueStore
import YTKKeyValueStoreCompat

/// The seed's classes on this store: its README's example unchanged, a port of its own tests,
/// and what each method gave back and did on each error.
@Suite("YTKKeyValueStore's own API")
struct YTKKeyValueStoreCompatTests {
  /// A store in a new directory, with table `t`; errors not logged (the tests read them).
  static func store(_ directory: TemporaryDirectory) -> YTKKeyValueStore {
    let store = YTKKeyValueStore(dbWithPath: directory.appending("compat.db"))
    store.logsErrors = false
    store.createTable(withName: "t")
    return store
  }

  #if !canImport(Darwin)
    @Test("the original README's example runs unchanged, in the platform's place for app data")
    func readmeExample() throws {
      let directory = TemporaryDirectory()
      withEnvironment("XDG_DATA_HOME", setTo: directory.path) {
        let store = YTKKeyValueStore(dbWithName: "test.db")
        let tableName = "user_table"
        store.createTable(withName: tableName)
        let key = "1"
        let user: NSDictionary = ["id": 1, "name": "tangqiao", "age": 30]
        store.putObject(user, withId: key, intoTable: tableName)
        let queryUser = store.getObjectById(key, fromTable: tableName) as? NSDictionary
        print("query data result: \(queryUser!)")

        #expect(queryUser == user)
        #expect(store.lastError == nil)
        store.close()
      }
      let place = directory.path + "/" + ProcessInfo.processInfo.processName + "/test.db"
      let reopened = try KeyValueStore(path: place)
      #expect(
        try reopened.object(id: "1", from: "user_table") == [
          "id": 1, "name": "tangqiao", "age": 30,
        ])
      try reopened.close()
    }
  #endif

  @Test("strings and numbers put and read back, a missing id nil (the original's own tests)")
  func stringsAndNumbers() throws {
    let directory = TemporaryDirectory()
    let store = Self.store(directory)
    store.putString("abc", withId: "key1", intoTable: "t")
    store.putString("abc2", withId: "key2", intoTable: "t")
    #expect(store.getStringById("key1", fromTable: "t") == "abc")
    #expect(store.getStringById("key2", fromTable: "t") == "abc2")
    #expect(store.getStringById("key3", fromTable: "t") == nil)
    store.putNumber(1, withId: "n1", intoTable: "t")
    store.putNumber(2.5, withId: "n2", intoTable: "t")
    store.putNumber(NSNumber(value: true), withId: "n3", intoTable: "t")
    #expect(store.getNumberById("n1", fromTable: "t") == 1)
    #expect(store.getNumberById("n2", fromTable: "t") == 2.5)
    #expect(store.getNumberById("n3", fromTable: "t") == NSNumber(value: true))
    #expect(store.getNumberById("n4", fromTable: "t") == nil)
    // Each reads the other's `[value]` wrapping as the original did: by its first element's kind.
    #expect(store.getStringById("n1", fromTable: "t") == nil)
    #expect(store.getNumberById("key1", fromTable: "t") == nil)
    #expect(store.getObjectById("key1", fromTable: "t") as? NSArray == ["abc"])
    // Stored as the Swift API stores them: it reads them as its own.
    let underneath = store.keyValueStore!
    #expect(try underneath.string(id: "key1", from: "t") == "abc")
    #expect(try underneath.integer(id: "n1", from: "t") == 1)
    #expect(try underneath.number(id: "n2", from: "t") == 2.5)
    #expect(store.lastError == nil)
  }

  @Test(
    "objects come back as the original returned them: mutable containers, NSString, NSNumber, NSNull"
  )
  func foundationObjects() throws {
    let directory = TemporaryDirectory()
    let store = Self.store(directory)
    let value: NSDictionary = [
      "name": "tangqiao", "age": 30, "height": 1.75, "admin": true,
      "tags": ["a", 1, NSNull(), ["nested": false]], "none": NSNull(), "unicode": "猿题库 \u{1F600}",
    ]
    store.putObject(value, withId: "u", intoTable: "t")
    let read = try #require(store.getObjectById("u", fromTable: "t") as? NSMutableDictionary)
    #expect(read == value)
    #expect(read["name"] is NSString)
    #expect((read["age"] as? NSNumber)?.int64Value == 30)
    #expect((read["height"] as? NSNumber)?.doubleValue == 1.75)
    #expect(read["admin"] as? NSNumber == NSNumber(value: true))
    #expect(read["none"] is NSNull)
    let tags = try #require(read["tags"] as? NSArray)
    #expect(tags.count == 4)
    #if canImport(Darwin)
      // Nested containers are mutable too. (On Linux, swift-corelibs-foundation hands what an
      // NSDictionary holds out as Swift collections, whatever was put in.)
      #expect(tags is NSMutableArray)
      #expect(tags[3] is NSMutableDictionary)
    #endif
    // Mutable, as the original's were: an app that edited what it read goes on working.
    read["name"] = "changed"
    #expect(read["name"] as? String == "changed")
    // An array at the top, mutable too, and one put again replaces the value.
    store.putObject(["x", 2] as NSArray, withId: "u", intoTable: "t")
    let array = try #require(store.getObjectById("u", fromTable: "t") as? NSMutableArray)
    #expect(array == ["x", 2])
    array.add("more")
    #expect(array.count == 3)
    // Swift's own collections are taken too.
    store.putObject(["k": [1, 2]], withId: "s", intoTable: "t")
    #expect(store.getObjectById("s", fromTable: "t") as? NSDictionary == ["k": [1, 2]])
    #expect(store.getObjectById("missing", fromTable: "t") == nil)
    #expect(store.lastError == nil)
  }

  @Test("items carry the id, the value and the time of the last put; all items come by id")
  func items() throws {
    let directory = TemporaryDirectory()
    let store = Self.store(directory)
    let before = Date()
    store.putObject(["v": 2], withId: "b", intoTable: "t")
    store.putObject(["v": 1], withId: "a", intoTable: "t")
    let after = Date()
    let item = try #require(store.getYTKKeyValueItemById("b", fromTable: "t"))
    #expect(item.itemId == "b")
    #expect(item.itemObject as? NSDictionary == ["v": 2])
    #expect(item.createdTime >= before.addingTimeInterval(-0.001))
    #expect(item.createdTime <= after.addingTimeInterval(0.001))
    #expect(item.description.hasPrefix("id=b, value="))
    let empty = YTKKeyValueItem()
    #expect(empty.itemId == "" && empty.itemObject is NSNull)
    #expect(store.getYTKKeyValueItemById("c", fromTable: "t") == nil)
    let all = try #require(store.getAllItemsFromTable("t"))
    #expect(all.map(\.itemId) == ["a", "b"])
    #expect(all.map { $0.itemObject as? NSDictionary } == [["v": 1], ["v": 2]])
    #expect(store.getCountFromTable("t") == 2)
  }

  @Test("deleting by id, by ids, by prefix (byte for byte), clearing and dropping tables")
  func deleting() {
    let directory = TemporaryDirectory()
    let store = Self.store(directory)
    for id in ["user_1", "user_2", "userX", "User_3", "user%", "other"] {
      store.putString(id, withId: id, intoTable: "t")
    }
    store.deleteObjectById("other", fromTable: "t")
    store.deleteObjectById("never-stored", fromTable: "t")
    #expect(store.getCountFromTable("t") == 5)
    // `_` and `%` are themselves and case counts (the original's LIKE took them for wildcards
    // and ignored the case of ASCII letters).
    store.deleteObjectsByIdPrefix("user_", fromTable: "t")
    #expect(store.getAllItemsFromTable("t")?.map(\.itemId) == ["User_3", "user%", "userX"])
    store.deleteObjectsByIdArray(["User_3", "userX", "absent"], fromTable: "t")
    #expect(store.getAllItemsFromTable("t")?.map(\.itemId) == ["user%"])
    store.deleteObjectsByIdArray([], fromTable: "t")
    #expect(store.getCountFromTable("t") == 1)
    store.clearTable("t")
    #expect(store.isTableExists("t"))
    #expect(store.getCountFromTable("t") == 0)
    store.dropTable("t")
    #expect(!store.isTableExists("t"))
    #expect(store.lastError == nil)
  }

  @Test(
    "errors are logged and give nil, false, 0 or nothing, as the original's did; lastError says which"
  )
  func errorsAsTheOriginal() throws {
    let directory = TemporaryDirectory()
    let store = Self.store(directory)
    // The original's rule for names: not empty, no space. Refused before the store sees them.
    for name in ["", "with space"] {
      store.createTable(withName: name)
      #expect(store.lastError?.code == .invalidTableName)
      #expect(!store.isTableExists(name))
      #expect(store.getAllItemsFromTable(name) == nil)
      #expect(store.getCountFromTable(name) == 0)
      store.putString("x", withId: "1", intoTable: name)
      #expect(store.getStringById("1", fromTable: name) == nil)
    }
    #expect(try store.keyValueStore!.tableNames() == ["t"])
    // A table never created: writes do nothing, reads find nothing (the original's SQL failed).
    store.putString("x", withId: "1", intoTable: "missing")
    #expect(store.lastError?.code == .tableNotFound)
    #expect(store.getObjectById("1", fromTable: "missing") == nil)
    #expect(store.getAllItemsFromTable("missing") == [])
    #expect(store.getCountFromTable("missing") == 0)
    // What JSONSerialization cannot write at the top (the original raised an exception).
    store.putObject("a bare string", withId: "1", intoTable: "t")
    #expect(store.lastError?.code == .invalidArgument)
    store.putObject([Double.nan], withId: "1", intoTable: "t")
    #expect(store.lastError?.code == .invalidArgument)
    #expect(store.lastErrorMessage?.isEmpty == false)
    #expect(store.getCountFromTable("t") == 0)
    // A call that works leaves the last error as it was.
    store.putString("y", withId: "2", intoTable: "t")
    #expect(store.lastError?.code == .invalidArgument)
    // Closed: everything does nothing.
    store.close()
    store.close()
    #expect(store.keyValueStore == nil)
    #expect(store.getStringById("2", fromTable: "t") == nil)
    #expect(store.lastError?.code == .closed)
    let reopened = YTKKeyValueStore(dbWithPath: directory.appending("compat.db"))
    #expect(reopened.getStringById("2", fromTable: "t") == "y")
    reopened.close()
  }

  @Test(
    "names over 255 bytes and ids over 65,535 bytes are refused with an error saying the limit"
  )
  func limits() throws {
    let directory = TemporaryDirectory()
    let store = Self.store(directory)
    // Up to the limits, everything works.
    let longest = String(repeating: "n", count: 255)
    let longestID = String(repeating: "i", count: 65_535)
    store.createTable(withName: longest)
    store.putString("x", withId: longestID, intoTable: longest)
    #expect(store.getStringById(longestID, fromTable: longest) == "x")
    #expect(store.getAllItemsFromTable(longest)?.map(\.itemId) == [longestID])
    #expect(store.lastError == nil)

    // One byte more: every call logs the error and gives nil, false, 0 or nothing.
    let long = longest + "n"
    store.createTable(withName: long)
    let nameError = try #require(store.lastError)
    #expect(nameError.code == .invalidTableName)
    #expect(nameError.message.contains("256 bytes") && nameError.message.contains("1 to 255 bytes"))
    #expect(!store.isTableExists(long))
    store.putString("x", withId: "1", intoTable: long)
    #expect(store.getStringById("1", fromTable: long) == nil)
    #expect(store.getAllItemsFromTable(long) == nil)
    #expect(store.getCountFromTable(long) == 0)
    store.deleteObjectById("1", fromTable: long)
    store.clearTable(long)
    store.dropTable(long)
    #expect(store.lastError?.code == .invalidTableName)

    let longID = longestID + "i"
    store.putString("y", withId: longID, intoTable: longest)
    let idError = try #require(store.lastError)
    #expect(idError.code == .invalidArgument)
    #expect(idError.message.contains("65536 bytes") && idError.message.contains("65535"))
    #expect(store.getObjectById(longID, fromTable: longest) == nil)
    // All of the ids or none: the one within the limit stays.
    store.deleteObjectsByIdArray([longestID, longID], fromTable: longest)
    #expect(store.lastError?.code == .invalidArgument)
    #expect(store.getCountFromTable(longest) == 1)
    store.deleteObjectsByIdPrefix(longID, fromTable: longest)
    #expect(store.lastError?.code == .invalidArgument)
    #expect(try store.keyValueStore!.tableNames() == [longest, "t"])
  }

  @Test("a store that cannot be opened gives nothing, with the reason as the last error")
  func openFails() throws {
    let directory = TemporaryDirectory()
    let file = directory.appending("a-file")
    #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
    let store = YTKKeyValueStore(dbWithPath: file)
    store.logsErrors = false
    #expect(store.keyValueStore == nil)
    let reason = try #require(store.lastError)
    store.createTable(withName: "t")
    #expect(!store.isTableExists("t"))
    #expect(store.lastError?.code == .closed)
    #expect(reason.code != .closed)
  }

  @Test(
    "instances of one store in a process share its open: each sees the others' writes, and the last to close or go away closes it"
  )
  func instancesShareOneOpen() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("shared.db")
    let first = YTKKeyValueStore(dbWithPath: path)
    // The same directory by another spelling.
    let second = YTKKeyValueStore(dbWithPath: directory.path + "/./shared.db/")
    first.createTable(withName: "t")
    first.putString("one", withId: "1", intoTable: "t")
    #expect(second.getStringById("1", fromTable: "t") == "one")
    second.putString("two", withId: "2", intoTable: "t")
    first.close()
    #expect(first.getStringById("2", fromTable: "t") == nil)
    #expect(second.getStringById("2", fromTable: "t") == "two")
    // Still open: another writer's open is refused.
    #expect(throws: KeyValueStoreError.self) { try KeyValueStore(path: path) }
    second.close()
    let alone = try KeyValueStore(path: path)
    #expect(try alone.string(id: "2", from: "t") == "two")
    try alone.close()
    // An instance that goes away without close() lets go of the store too.
    do {
      let dropped = YTKKeyValueStore(dbWithPath: path)
      #expect(dropped.getCountFromTable("t") == 2)
    }
    try KeyValueStore(path: path).close()
  }

  @Test(
    "instances share the open of a directory, not of a path's text: through a symbolic link too, and two names equal as strings but not in their bytes are two stores"
  )
  func instancesShareByDirectory() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("real.db")
    let first = YTKKeyValueStore(dbWithPath: path)
    first.logsErrors = false
    first.createTable(withName: "t")
    first.putString("one", withId: "1", intoTable: "t")
    try FileManager.default.createSymbolicLink(
      atPath: directory.appending("link.db"), withDestinationPath: path)
    let linked = YTKKeyValueStore(dbWithPath: directory.appending("link.db"))
    linked.logsErrors = false
    #expect(linked.lastError == nil)
    #expect(linked.getStringById("1", fromTable: "t") == "one")
    first.close()
    linked.close()
    // Precomposed and decomposed `é`: one name to `String`'s `==`, two directories where file
    // names are bytes (on Apple's file systems, one).
    let composed = YTKKeyValueStore(dbWithPath: directory.appending("caf\u{E9}.db"))
    let decomposed = YTKKeyValueStore(dbWithPath: directory.appending("cafe\u{301}.db"))
    for (store, value) in [(composed, "composed"), (decomposed, "decomposed")] {
      store.logsErrors = false
      store.createTable(withName: "t")
      store.putString(value, withId: "k", intoTable: "t")
    }
    #if canImport(Darwin)
      let expected: [String?] = ["decomposed", "decomposed"]
    #else
      let expected: [String?] = ["composed", "decomposed"]
      let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
      #expect(names.count == 4, "\(names)")
    #endif
    #expect(
      [composed, decomposed].map { $0.getStringById("k", fromTable: "t") } == expected)
    composed.close()
    decomposed.close()
  }

  @Test("calls from many threads at once on one store take turns and lose nothing")
  func threads() {
    let directory = TemporaryDirectory()
    let store = Self.store(directory)
    DispatchQueue.concurrentPerform(iterations: 8) { thread in
      for index in 0..<50 {
        let id = "\(thread)-\(index)"
        store.putObject(["n": index], withId: id, intoTable: "t")
        if (store.getObjectById(id, fromTable: "t") as? NSDictionary)?["n"] as? Int != index {
          Issue.record("\(id) read back wrong")
        }
      }
    }
    #expect(store.getCountFromTable("t") == 400)
    #expect(store.lastError == nil)
  }
}
