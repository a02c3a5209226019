import Foundation
import Testing
import YTKKeyValueStore

/// Compaction reclaims space and changes nothing a user can read: not while writes go on
/// beside it, not when it runs by itself in the background, and not across a reopen.
@Suite("KeyValueStore compaction")
struct KeyValueStoreCompactionTests {
  private let directory = TemporaryDirectory("compaction")

  @Test("checkpoint() writes an index file the next open uses; indexFiles: false writes none")
  func checkpoints() throws {
    for indexFiles in [true, false] {
      let path = directory.storePath + (indexFiles ? "-on" : "-off")
      let options = StoreOptions(compaction: .manual, indexFiles: indexFiles)
      var store = try KeyValueStore(path: path, options: options)
      try store.createTable("t")
      for index in 0..<200 {
        try store.put(["n": .int(Int64(index))], id: "user_\(index)", into: "t")
      }
      try store.checkpoint()
      try store.delete(id: "user_3", from: "t")
      let names = try FileManager.default.contentsOfDirectory(atPath: path)
      #expect(names.contains { $0.hasSuffix(".index") } == indexFiles)
      try store.close()
      store = try KeyValueStore(path: path, options: options)
      let statistics = try store.statistics()
      #expect((statistics.indexMappedBytes > 0) == indexFiles)
      #expect(statistics.liveItems == 199)
      #expect(try store.object(id: "user_7", from: "t") == ["n": .int(7)])
      #expect(try store.object(id: "user_3", from: "t") == nil)
      try store.close()
    }
  }

  @Test("deletes, prefix deletes, clears and drops stay in force after compaction and reopen")
  func deletionsStayDeleted() throws {
    let options = StoreOptions(compaction: .manual, maxSegmentSize: 4096)
    var store = try KeyValueStore(path: directory.storePath, options: options)
    try store.createTable("t")
    try store.createTable("gone")
    try store.createTable("cleared")
    for index in 0..<60 {
      try store.put(string: "old \(index)", id: "user_\(index)", into: "t")
      try store.put(number: index, id: "\(index)", into: "gone")
      try store.put(number: index, id: "\(index)", into: "cleared")
    }
    try store.delete(prefix: "user_", from: "t")
    try store.put(string: "new", id: "user_7", into: "t")
    try store.delete(id: "user_7", from: "t")
    try store.put(string: "newer", id: "user_8", into: "t")
    try store.delete(ids: ["user_8", "user_9"], from: "t")
    try store.put(string: "newest", id: "user_9", into: "t")
    try store.dropTable("gone")
    try store.clearTable("cleared")
    try store.put(number: 1, id: "after clear", into: "cleared")

    func check(_ store: KeyValueStore, tables: [String] = ["cleared", "t"]) throws {
      #expect(try store.tableNames() == tables)
      #expect(try store.allItems(in: "t").map(\.id) == ["user_9"])
      #expect(try store.string(id: "user_9", from: "t") == "newest")
      #expect(try store.allItems(in: "cleared").map(\.id) == ["after clear"])
    }
    try check(store)
    store = try reopen(store, options: options)
    try check(store)
    try store.compact()
    try check(store)
    store = try reopen(store, options: options)
    try check(store)
    try store.createTable("gone")
    #expect(try store.count(in: "gone") == 0)
    try store.compact()
    store = try reopen(store, options: options)
    try check(store, tables: ["cleared", "gone", "t"])
    #expect(try store.count(in: "gone") == 0)
    try store.close()
  }

  @Test("tables without items survive compaction and reopen: new, cleared, emptied, recreated")
  func emptyTablesSurvive() throws {
    let options = StoreOptions(compaction: .manual)
    var store = try KeyValueStore(path: directory.storePath, options: options)
    for name in ["new", "cleared", "emptied", "recreated", "dropped"] {
      try store.createTable(name)
    }
    for name in ["cleared", "emptied", "recreated", "dropped"] {
      try store.put(number: 1, id: "a", into: name)
      try store.put(number: 2, id: "b", into: name)
    }
    try store.clearTable("cleared")
    try store.delete(ids: ["a", "b"], from: "emptied")
    try store.dropTable("recreated")
    try store.createTable("recreated")
    try store.dropTable("dropped")
    let expected = ["cleared", "emptied", "new", "recreated"]

    try store.compact()
    #expect(try store.tableNames() == expected)
    store = try reopen(store, options: options)
    #expect(try store.tableNames() == expected)
    for name in expected {
      #expect(try store.count(in: name) == 0, "\(name)")
    }
    try store.compact()
    store = try reopen(store, options: options)
    #expect(try store.tableNames() == expected)
    #expect(try store.statistics().liveItems == 0)
    try store.close()
  }

  @Test("compaction running beside 4 writing threads loses no write and revives no delete")
  func compactionBesideWriters() throws {
    let options = StoreOptions(compaction: .manual, maxSegmentSize: 16 << 10)
    let store = try KeyValueStore(path: directory.storePath, options: options)
    try store.createTable("t")
    let models = Locked<[Int: [String: JSONValue]]>([:])
    let failures = Locked<[String]>([])
    let writersDone = SharedCounter()
    let compactions = SharedCounter()
    runOnThreads(5) { thread in
      do {
        if thread == 4 {
          // Compact until every writer is done, and at least a few times.
          try waitUntil("the writers to finish beside compactions") {
            guard writersDone.value < 4 || compactions.value < 3 else { return true }
            try store.compact()
            compactions.increment()
            return false
          }
          return
        }
        defer { writersDone.increment() }
        var model: [String: JSONValue] = [:]
        var generator = SplitMix64(seed: UInt64(thread) + 100)
        for step in 0..<2_000 {
          let id = "w\(thread)-\(generator.next(below: 100))"
          switch generator.next(below: 10) {
          case 0..<6:
            let value: JSONValue = [
              "step": .int(Int64(step)), "pad": .string(asciiString(bytes: step % 64)),
            ]
            try store.put(value, id: id, into: "t")
            model[id] = value
          case 6..<8:
            try store.delete(id: id, from: "t")
            model[id] = nil
          case 8:
            let prefix = "w\(thread)-\(generator.next(below: 10))"
            try store.delete(prefix: prefix, from: "t")
            model = model.filter { !$0.key.hasPrefix(prefix) }
          default:
            let read = try store.object(id: id, from: "t")
            if read != model[id] {
              failures.withLock {
                $0.append(
                  "\(id): read \(String(describing: read)), expected \(String(describing: model[id]))"
                )
              }
            }
          }
        }
        models.withLock { $0[thread] = model }
      } catch {
        failures.withLock { $0.append("thread \(thread) threw \(error)") }
      }
    }
    let failed = failures.value
    #expect(failed.isEmpty, "\(failed.prefix(10).joined(separator: "\n"))")
    #expect(compactions.value >= 3)

    var expected: [String: JSONValue] = [:]
    for model in models.value.values {
      expected.merge(model) { first, _ in first }
    }
    func stored(_ store: KeyValueStore) throws -> [String: JSONValue] {
      Dictionary(uniqueKeysWithValues: try store.allItems(in: "t").map { ($0.id, $0.object) })
    }
    #expect(try stored(store) == expected)
    let reopened = try reopen(store, options: options)
    #expect(try stored(reopened) == expected)
    #expect(try reopened.statistics().damagedRecords == 0)
    try reopened.close()
  }

  @Test("automatic compaction in the background keeps every value, and the store stays whole")
  func automaticCompaction() throws {
    let options = StoreOptions(
      compaction: .whenGarbageExceeds(fraction: 0.2), maxSegmentSize: 8 << 10)
    var store = try KeyValueStore(path: directory.storePath, options: options)
    try store.createTable("t")
    var model: [String: JSONValue] = [:]
    for round in 0..<20 {
      for index in 0..<100 {
        let value: JSONValue = [
          "round": .int(Int64(round)), "text": .string(asciiString(bytes: 80)),
        ]
        try store.put(value, id: "\(index)", into: "t")
        model["\(index)"] = value
      }
      try store.delete(id: "\(round)", from: "t")
      model["\(round)"] = nil
    }
    let items = try store.allItems(in: "t")
    #expect(Dictionary(uniqueKeysWithValues: items.map { ($0.id, $0.object) }) == model)
    let statistics = try store.statistics()
    #expect(statistics.liveItems == model.count)
    #expect(statistics.liveBytes <= statistics.diskBytes)
    store = try reopen(store, options: options)
    #expect(try store.allItems(in: "t") == items)
    try store.close()
  }
}
