import Foundation
import Testing
import YTKKeyValueStore

/// Every kind of write survives closing and reopening the store: values, counts, table
/// names and created times read back exactly as they were before the close.
@Suite("KeyValueStore persistence")
struct KeyValueStorePersistenceTests {
  private let directory = TemporaryDirectory("persistence")

  /// One kind of write, made on a store holding ``seed(_:)``'s data, with what must be true
  /// after it.
  enum Write: String, CaseIterable, CustomTestStringConvertible {
    case putObject, putString, putInt, putDouble, putEncodable, overwrite
    case deleteID, deleteIDs, deletePrefix, createTable, clearTable, dropTable
    case dropAndRecreateTable, compact

    var testDescription: String { rawValue }

    func apply(to store: KeyValueStore) throws {
      switch self {
      case .putObject:
        try store.put(["k": [1, 2.5, "s", nil, true, ["deep": [:]]]], id: "new", into: "users")
      case .putString: try store.put(string: "\u{0}\"\\中😀", id: "new", into: "users")
      case .putInt: try store.put(number: Int.min, id: "new", into: "users")
      case .putDouble:
        try store.put(number: -Double.leastNonzeroMagnitude, id: "new", into: "users")
      case .putEncodable:
        try store.put(encodable: ["name": "tangqiao", "city": "北京"], id: "new", into: "users")
      case .overwrite:
        Thread.sleep(forTimeInterval: 0.002)
        try store.put(string: "replaced", id: "user_1", into: "users")
      case .deleteID: try store.delete(id: "user_1", from: "users")
      case .deleteIDs: try store.delete(ids: ["user_1", "a_b", "missing"], from: "users")
      case .deletePrefix: try store.delete(prefix: "user_", from: "users")
      case .createTable: try store.createTable("it's \"new\" 表")
      case .clearTable: try store.clearTable("users")
      case .dropTable: try store.dropTable("users")
      case .dropAndRecreateTable:
        try store.dropTable("users")
        try store.createTable("users")
        try store.put(number: 0.1, id: "user_1", into: "users")
      case .compact:
        for round in 0..<3 {
          try store.put(number: round, id: "user_2", into: "users")
        }
        try store.delete(id: "ab", from: "users")
        try store.compact()
      }
    }

    /// What the write must have done, checked before and after reopening.
    func verify(_ store: KeyValueStore) throws {
      var users: [String]?
      if try store.tableExists("users") {
        users = try store.allItems(in: "users").map(\.id)
      }
      switch self {
      case .putObject:
        #expect(
          try store.object(id: "new", from: "users")
            == ["k": [1, 2.5, "s", nil, true, ["deep": [:]]]])
      case .putString:
        #expect(try store.string(id: "new", from: "users") == "\u{0}\"\\中😀")
      case .putInt:
        #expect(try store.integer(id: "new", from: "users") == Int.min)
      case .putDouble:
        #expect(
          try store.number(id: "new", from: "users")?.bitPattern
            == (-Double.leastNonzeroMagnitude).bitPattern)
      case .putEncodable:
        #expect(
          try store.decode([String: String].self, id: "new", from: "users")
            == ["name": "tangqiao", "city": "北京"])
      case .overwrite:
        #expect(try store.string(id: "user_1", from: "users") == "replaced")
        #expect(try store.count(in: "users") == 4)
      case .deleteID:
        #expect(users == ["a_b", "ab", "user_2"])
      case .deleteIDs:
        #expect(users == ["ab", "user_2"])
      case .deletePrefix:
        #expect(users == ["a_b", "ab"])
      case .createTable:
        #expect(try store.tableNames() == ["it's \"new\" 表", "other", "users"])
        #expect(try store.count(in: "it's \"new\" 表") == 0)
      case .clearTable:
        #expect(users == [])
        #expect(try store.tableNames() == ["other", "users"])
      case .dropTable:
        #expect(users == nil)
        #expect(try store.tableNames() == ["other"])
      case .dropAndRecreateTable:
        #expect(users == ["user_1"])
        #expect(try store.number(id: "user_1", from: "users") == 0.1)
      case .compact:
        #expect(users == ["a_b", "user_1", "user_2"])
        #expect(try store.integer(id: "user_2", from: "users") == 2)
      }
      #expect(try store.string(id: "x", from: "other") == "untouched")
    }
  }

  /// Two tables: `users` with four items of every stored form, and `other` with one.
  private func seed(_ store: KeyValueStore) throws {
    try store.createTable("users")
    try store.createTable("other")
    try store.put(["id": 1, "name": "tangqiao"], id: "user_1", into: "users")
    try store.put(number: 2.5, id: "user_2", into: "users")
    try store.put(number: 3, id: "a_b", into: "users")
    try store.put(string: "ab", id: "ab", into: "users")
    try store.put(string: "untouched", id: "x", into: "other")
  }

  @Test("a write reads back the same after close and reopen", arguments: Write.allCases)
  func writeSurvivesReopen(write: Write) throws {
    let store = try KeyValueStore(path: directory.storePath)
    try seed(store)
    try store.close()

    let writer = try KeyValueStore(path: directory.storePath)
    try write.apply(to: writer)
    try write.verify(writer)
    let before = try StoreSnapshot(writer)

    let reopened = try reopen(writer)
    #expect(try StoreSnapshot(reopened) == before)
    try write.verify(reopened)

    // Reopening again, and reading without the lock, give the same data once more.
    try reopened.close()
    let readOnly = try KeyValueStore(
      path: directory.storePath, options: StoreOptions(readOnly: true))
    #expect(try StoreSnapshot(readOnly) == before)
    try readOnly.close()
    let again = try KeyValueStore(path: directory.storePath)
    #expect(try StoreSnapshot(again) == before)
    try again.close()
  }

  @Test(
    "the same write made without closing in between survives reopen too", arguments: Write.allCases)
  func writeInSameSessionSurvivesReopen(write: Write) throws {
    let store = try KeyValueStore(path: directory.storePath)
    try seed(store)
    try write.apply(to: store)
    let before = try StoreSnapshot(store)
    let reopened = try reopen(store)
    #expect(try StoreSnapshot(reopened) == before)
    try write.verify(reopened)
    try reopened.close()
  }

  @Test("createdTime survives reopen to the microsecond, for every item")
  func createdTimesSurvive() throws {
    let store = try KeyValueStore(path: directory.storePath)
    try store.createTable("t")
    for index in 0..<50 {
      try store.put(number: index, id: "\(index)", into: "t")
    }
    let times = try store.allItems(in: "t").map(\.createdTime)
    let reopened = try reopen(store)
    let reread = try reopened.allItems(in: "t").map(\.createdTime)
    #expect(reread == times)
    for (before, after) in zip(times, reread) {
      let microsecondsBefore = (before.timeIntervalSince1970 * 1e6).rounded()
      let microsecondsAfter = (after.timeIntervalSince1970 * 1e6).rounded()
      #expect(microsecondsBefore == microsecondsAfter)
    }
    try reopened.close()
  }

  @Test("a store spread over many small segments reads back whole, also after compaction")
  func manySegments() throws {
    let options = StoreOptions(compaction: .manual, maxSegmentSize: 4096)
    let store = try KeyValueStore(path: directory.storePath, options: options)
    try store.createTable("t")
    for index in 0..<600 {
      try store.put(
        ["index": .int(Int64(index)), "text": .string(asciiString(bytes: index % 97))],
        id: "item\(index)", into: "t")
    }
    for index in stride(from: 0, to: 600, by: 4) {
      try store.delete(id: "item\(index)", from: "t")
    }
    #expect(try store.statistics().segments > 1)
    let before = try StoreSnapshot(store)
    #expect(before.items["t"]?.count == 450)

    var reopened = try reopen(store, options: options)
    #expect(try StoreSnapshot(reopened) == before)
    try reopened.compact()
    #expect(try StoreSnapshot(reopened) == before)
    reopened = try reopen(reopened, options: options)
    #expect(try StoreSnapshot(reopened) == before)
    #expect(try reopened.statistics().damagedRecords == 0)
    // The segment size is a setting of the session, not of the store.
    reopened = try reopen(reopened)
    #expect(try StoreSnapshot(reopened) == before)
    try reopened.put(number: 1, id: "later", into: "t")
    reopened = try reopen(reopened, options: options)
    #expect(try reopened.count(in: "t") == 451)
    try reopened.close()
  }

  @Test("a long deterministic mix of every write matches a model across repeated reopens")
  func mixedWritesMatchModel() throws {
    var generator = SplitMix64(seed: 0x5EED)
    var model: [String: [String: JSONValue]] = [:]
    let tables = ["a", "b b", "c\"c"]
    var store = try KeyValueStore(path: directory.storePath)

    func check(_ store: KeyValueStore) throws {
      #expect(try store.tableNames() == model.keys.sorted())
      for (table, items) in model {
        let stored = try store.allItems(in: table)
        #expect(
          stored.map(\.id) == items.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        for item in stored {
          #expect(item.object == items[item.id], "\(table)/\(item.id)")
        }
      }
    }

    for step in 0..<600 {
      let table = tables[generator.next(below: tables.count)]
      let id = "k\(generator.next(below: 40))"
      if model[table] == nil {
        try store.createTable(table)
        model[table] = [:]
        continue
      }
      switch generator.next(below: 20) {
      case 0..<8:
        let value: JSONValue = ["step": .int(Int64(step)), "id": .string(id)]
        try store.put(value, id: id, into: table)
        model[table]![id] = value
      case 8..<10:
        try store.put(string: "s\(step)", id: id, into: table)
        model[table]![id] = [.string("s\(step)")]
      case 10..<12:
        try store.put(number: Double(step) / 7, id: id, into: table)
        model[table]![id] = [.double(Double(step) / 7)]
      case 12..<15:
        try store.delete(id: id, from: table)
        model[table]![id] = nil
      case 15:
        let ids = (0..<3).map { _ in "k\(generator.next(below: 40))" }
        try store.delete(ids: ids, from: table)
        for id in ids { model[table]![id] = nil }
      case 16:
        let prefix = "k\(generator.next(below: 4))"
        try store.delete(prefix: prefix, from: table)
        model[table] = model[table]!.filter { !$0.key.hasPrefix(prefix) }
      case 17:
        try store.clearTable(table)
        model[table] = [:]
      case 18:
        try store.dropTable(table)
        model[table] = nil
      default:
        try store.compact()
      }
      if step % 100 == 99 {
        try check(store)
        store = try reopen(store)
        try check(store)
      }
    }
    try store.close()
  }
}
