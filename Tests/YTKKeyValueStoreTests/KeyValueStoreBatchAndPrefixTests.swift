import Foundation
import Testing
import YTKKeyValueStore

/// Atomic batch puts (of JSON values and of `Encodable` values) and reads by id prefix: the
/// ids, the items and the decoded values whose id starts with a prefix, sorted by id bytes,
/// both from the log and from an index file, and `forEachItem` with a prefix and a throwing
/// body.
@Suite("KeyValueStore batches and prefixes")
struct KeyValueStoreBatchAndPrefixTests {
  private let directory = TemporaryDirectory("batches")
  private let table = "cache"

  private struct User: Codable, Equatable {
    var name: String
    var age: Int
  }

  @Test("a batch put stores every object under its id, as single puts would, and replaces")
  func batchPut() throws {
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    try store.createTable(table)
    try store.put(["old": true], id: "b", into: table)
    let objects: [String: JSONValue] = [
      "a": ["name": "Ann", "tags": ["x", "y"]], "b": 2.5, "é": "text", "": [], "c": nil,
    ]
    let before = Date()
    try store.put(objects, into: table)
    #expect(try store.count(in: table) == objects.count)
    for (id, object) in objects {
      #expect(try store.object(id: id, from: table) == object, "\(id)")
      let created = try #require(try store.item(id: id, from: table)).createdTime
      #expect(created >= before.addingTimeInterval(-1))
    }
    // The stored form is the one a single put writes.
    try store.createTable("single")
    for (id, object) in objects { try store.put(object, id: id, into: "single") }
    #expect(
      try store.allItems(in: table).map { "\($0.id) \($0.object)" }
        == store.allItems(in: "single").map { "\($0.id) \($0.object)" })
  }

  @Test("a batch of encodables stores what put(encodable:) stores")
  func batchOfEncodables() throws {
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    try store.createTable(table)
    let users = ["u1": User(name: "Ann", age: 30), "u2": User(name: "Bo", age: 4)]
    try store.put(encodables: users, into: table)
    try store.put(encodable: users["u1"]!, id: "single", into: table)
    #expect(try store.decode(User.self, id: "u1", from: table) == users["u1"])
    #expect(try store.decode(User.self, id: "u2", from: table) == users["u2"])
    #expect(try store.object(id: "u1", from: table) == store.object(id: "single", from: table))
  }

  @Test("a batch with one bad id or value, or into a missing table, writes nothing")
  func batchAllOrNothing() throws {
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    try store.createTable(table)
    let longID = String(repeating: "i", count: KeyValueStore.maxIDLength + 1)
    expectError(.invalidArgument) {
      try store.put(["a": 1, "b": .double(.nan), "c": 3], into: table)
    }
    expectError(.invalidArgument, mentioning: ["\"b\"", "cannot be encoded"]) {
      try store.put(encodables: ["a": 1.0, "b": Double.nan, "c": 3.0], into: table)
    }
    expectError(.invalidArgument) { try store.put(["a": 1, longID: 2], into: table) }
    expectError(.tableNotFound) { try store.put(["a": 1], into: "nowhere") }
    expectError(.tableNotFound) { try store.put([:], into: "nowhere") }
    #expect(try store.count(in: table) == 0)
    // An empty batch into a table that exists writes nothing and is no error.
    try store.put([:], into: table)
    try store.put(encodables: [String: User](), into: table)
    #expect(try store.count(in: table) == 0)
  }

  @Test("a batch put survives a reopen whole")
  func batchReopen() throws {
    var objects: [String: JSONValue] = [:]
    for index in 0..<1000 { objects["k\(index)"] = ["n": .int(Int64(index))] }
    do {
      let store = try KeyValueStore(path: directory.storePath)
      try store.createTable(table)
      try store.put(objects, into: table)
      try store.close()
    }
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    #expect(try store.count(in: table) == 1000)
    #expect(try store.object(id: "k999", from: table) == ["n": 999])
  }

  @Test(
    "prefix reads list the ids, items and decoded values whose id starts with the prefix, sorted by bytes, from the log and from an index file",
    arguments: [false, true])
  func prefixReads(fromIndexFile: Bool) throws {
    let ids = [
      "user:1", "user:10", "user:2", "user", "users", "user:é", "usep", "u", "", "group:1",
      "user:\u{FFFF}", "v",
    ]
    do {
      let store = try KeyValueStore(path: directory.storePath)
      try store.createTable(table)
      for (index, id) in ids.enumerated() {
        try store.put(encodable: User(name: id, age: index), id: id, into: table)
      }
      // Compaction writes an index file; the reopened store reads the table from it.
      if fromIndexFile { try store.compact() }
      try store.close()
    }
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    let all = try store.allItems(in: table).map(\.id)
    #expect(all == ids.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
    for prefix in [
      "", "user", "user:", "user:1", "user:é", "users", "x", "u", "user:\u{FFFF}", "a",
    ] {
      let expected = all.filter { $0.utf8.starts(with: prefix.utf8) }
      #expect(try store.ids(withPrefix: prefix, in: table) == expected, "\(prefix)")
      #expect(try store.items(withPrefix: prefix, in: table).map(\.id) == expected, "\(prefix)")
      let decoded = try store.items(as: User.self, withPrefix: prefix, in: table)
      #expect(decoded.map(\.id) == expected, "\(prefix)")
      #expect(decoded.allSatisfy { $0.value.name == $0.id })
      var visited: [String] = []
      try store.forEachItem(withPrefix: prefix, in: table) { item in
        visited.append(item.id)
        return true
      }
      #expect(visited == expected, "\(prefix)")
    }
    #expect(try store.items(as: User.self, in: table).count == ids.count)
    // What delete(prefix:) removes is what ids(withPrefix:) listed.
    let listed = try store.ids(withPrefix: "user:", in: table)
    let store2Count = try store.count(in: table)
    try store.delete(prefix: "user:", from: table)
    #expect(try store.count(in: table) == store2Count - listed.count)
    #expect(try store.ids(withPrefix: "user:", in: table).isEmpty)
    expectError(.tableNotFound) { _ = try store.ids(withPrefix: "", in: "nowhere") }
    expectError(.tableNotFound) { _ = try store.items(withPrefix: "", in: "nowhere") }
  }

  @Test("forEachItem's body may throw: the visit stops and the error comes out as thrown")
  func throwingBody() throws {
    struct Stop: Error, Equatable { var at: String }
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    try store.createTable(table)
    for id in ["a", "b", "c"] {
      try store.put(encodable: User(name: id, age: 1), id: id, into: table)
    }
    var seen: [String] = []
    #expect(throws: Stop(at: "b")) {
      try store.forEachItem(in: table) { item in
        seen.append(item.id)
        if item.id == "b" { throw Stop(at: "b") }
        return true
      }
    }
    #expect(seen == ["a", "b"])
    // A decoder's error inside the body, the case that did not compile before.
    let decoder = JSONDecoder()
    var ages: [Int] = []
    try store.forEachItem(in: table) { item in
      ages.append(try decoder.decode(User.self, from: Data(item.object.description.utf8)).age)
      return true
    }
    #expect(ages == [1, 1, 1])
    #expect(throws: KeyValueStoreError.self) {
      try store.forEachItem(in: "nowhere") { _ in true }
    }
  }

  @Test("a value that does not decode as the type asked for is .typeMismatch naming its id")
  func itemsAsMismatch() throws {
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    try store.createTable(table)
    try store.put(encodable: User(name: "a", age: 1), id: "a", into: table)
    try store.put(["name": 5], id: "b", into: table)
    expectError(.typeMismatch, mentioning: ["\"b\"", "User"]) {
      _ = try store.items(as: User.self, in: table)
    }
    #expect(
      try store.items(as: User.self, withPrefix: "a", in: table).map(\.value) == [
        User(name: "a", age: 1)
      ])
  }
}
