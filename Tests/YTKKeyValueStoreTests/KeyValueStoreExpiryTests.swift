import Foundation
import LogStore
import Testing
import YTKKeyValueStore

/// Expiry through the app API: `expiresAfter:` on every put, a table's default lifetime, and
/// what an expired item looks like to every read; and a store written by format version 1
/// (before expiry) opened by this one without loss.
@Suite("KeyValueStore expiry")
struct KeyValueStoreExpiryTests {
  private let directory = TemporaryDirectory("expiry")
  private let table = "cache_table"

  private struct Page: Codable, Equatable {
    var title: String
  }

  /// Moves the store's expiry clock on, as if `seconds` had passed.
  private func wait(_ store: KeyValueStore, seconds: Int64) {
    store.logStore.expiryClock.skip(microseconds: seconds * 1_000_000)
  }

  @Test(
    "expiresAfter on every put: the item tells when it expires, then reads as nil and is not counted, listed or decoded"
  )
  func everyPutExpires() throws {
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    try store.createTable(table)
    let before = Date()
    try store.put(["a": 1], id: "object", into: table, expiresAfter: 10)
    try store.put(string: "s", id: "string", into: table, expiresAfter: 10)
    try store.put(number: 7, id: "int", into: table, expiresAfter: 10)
    try store.put(number: 2.5, id: "double", into: table, expiresAfter: 10)
    try store.put(encodable: Page(title: "t"), id: "encodable", into: table, expiresAfter: 10)
    try store.put(["batch1": 1, "batch2": 2], into: table, expiresAfter: 10)
    try store.put(encodables: ["pages1": Page(title: "p")], into: table, expiresAfter: 10)
    try store.put(encodable: Page(title: "stays"), id: "stays", into: table, expiresAfter: 100)
    try store.put(string: "forever", id: "forever", into: table)
    let after = Date()

    #expect(try store.count(in: table) == 10)
    for item in try store.allItems(in: table) where item.id != "forever" {
      let expires = try #require(item.expiresTime, "\(item.id)")
      let lifetime = item.id == "stays" ? 100.0 : 10.0
      #expect(expires >= before.addingTimeInterval(lifetime - 0.001), "\(item.id)")
      #expect(expires <= after.addingTimeInterval(lifetime + 0.001), "\(item.id)")
    }
    #expect(try store.item(id: "forever", from: table)?.expiresTime == nil)
    #expect(try store.item(id: "int", from: table)?.expiresTime != nil)

    wait(store, seconds: 11)
    for id in ["object", "string", "int", "double", "encodable", "batch1", "pages1"] {
      #expect(try store.object(id: id, from: table) == nil, "\(id)")
      #expect(try store.item(id: id, from: table) == nil, "\(id)")
    }
    #expect(try store.string(id: "string", from: table) == nil)
    #expect(try store.decode(Page.self, id: "encodable", from: table) == nil)
    #expect(try store.count(in: table) == 2)
    #expect(try store.ids(withPrefix: "", in: table) == ["forever", "stays"])
    #expect(try store.allItems(in: table).map(\.id) == ["forever", "stays"])
    #expect(try store.items(withPrefix: "pa", in: table).isEmpty)
    #expect(try store.items(as: Page.self, withPrefix: "s", in: table).map(\.id) == ["stays"])
    var visited: [String] = []
    try store.forEachItem(in: table) { item in
      visited.append(item.id)
      return true
    }
    #expect(visited == ["forever", "stays"])
    wait(store, seconds: 100)
    #expect(try store.count(in: table) == 1)
    #expect(try store.statistics().liveItems == 1)
  }

  @Test("a lifetime that would end past the clock's last microsecond never expires")
  func lifetimePastTheEndOfTime() throws {
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    try store.createTable(table)
    // The clock 10^18 µs before its end: 8·10^12 s fits in a lifetime, not in an expiry.
    let clock = store.logStore.expiryClock
    clock.skip(microseconds: Int64.max - 1_000_000_000_000_000 - store.logStore.expiryNow())
    try store.put(["late": true], id: "late", into: table, expiresAfter: 8e12)
    try store.put(["soon": true], id: "soon", into: table, expiresAfter: 10)
    #expect(try store.item(id: "late", from: table)?.expiresTime == nil)
    #expect(try store.item(id: "soon", from: table)?.expiresTime != nil)
    wait(store, seconds: 11)
    #expect(try store.object(id: "late", from: table) == ["late": true])
    #expect(try store.object(id: "soon", from: table) == nil)
  }

  @Test(
    "a table's default lifetime applies to puts without expiresAfter; .infinity overrides it; nil or .infinity removes it; bad lifetimes are refused"
  )
  func tableDefault() throws {
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    try store.createTable(table, expiresAfter: 60)
    #expect(try store.defaultLifetime(of: table) == 60)
    try store.put(string: "page", id: "home", into: table)
    try store.put(string: "pinned", id: "pinned", into: table, expiresAfter: .infinity)
    try store.put(["x": 1, "y": 2], into: table)
    #expect(try store.item(id: "home", from: table)?.expiresTime != nil)
    #expect(try store.item(id: "x", from: table)?.expiresTime != nil)
    #expect(try store.item(id: "pinned", from: table)?.expiresTime == nil)
    wait(store, seconds: 61)
    #expect(try store.ids(withPrefix: "", in: table) == ["pinned"])

    try store.createTable(table, expiresAfter: nil)
    #expect(try store.defaultLifetime(of: table) == nil)
    try store.put(string: "page", id: "home", into: table)
    #expect(try store.item(id: "home", from: table)?.expiresTime == nil)
    // A default of .infinity is none, for a new table and for one that had a default.
    try store.createTable("forever", expiresAfter: .infinity)
    #expect(try store.defaultLifetime(of: "forever") == nil)
    try store.createTable("forever", expiresAfter: 30)
    #expect(try store.defaultLifetime(of: "forever") == 30)
    try store.createTable("forever", expiresAfter: .infinity)
    #expect(try store.defaultLifetime(of: "forever") == nil)
    try store.put(string: "kept", id: "kept", into: "forever")
    #expect(try store.item(id: "kept", from: "forever")?.expiresTime == nil)
    for bad in [0.0, -1, .nan, -.infinity] {
      #expect(throws: KeyValueStoreError.self, "\(bad)") {
        try store.put(string: "x", id: "x", into: table, expiresAfter: bad)
      }
      #expect(throws: KeyValueStoreError.self, "\(bad)") {
        try store.createTable(table, expiresAfter: bad)
      }
    }
    #expect(try store.object(id: "x", from: table) == nil)
  }

  @Test("expiry across reopen and compaction: nothing unexpired is lost, nothing expired returns")
  func reopenAndCompaction() throws {
    do {
      let store = try KeyValueStore(path: directory.storePath)
      try store.createTable(table, expiresAfter: 3600)
      for index in 0..<100 {
        try store.put(
          ["n": JSONValue.int(Int64(index))], id: "item\(index)", into: table,
          expiresAfter: index % 2 == 0 ? 5 : nil)
      }
      wait(store, seconds: 6)
      #expect(try store.count(in: table) == 50)
      try store.compact()
      #expect(try store.count(in: table) == 50)
      try store.close()
    }
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    #expect(try store.count(in: table) == 50)
    #expect(try store.defaultLifetime(of: table) == 3600)
    let ids = try store.ids(withPrefix: "", in: table)
    #expect(ids == (0..<100).filter { $0 % 2 == 1 }.map { "item\($0)" }.sorted())
    wait(store, seconds: 3600)
    #expect(try store.count(in: table) == 0)
  }

  @Test("ytkkv dump writes each item's expiry, leaves expired items out, and load restores it")
  func dumpAndLoad() throws {
    let expires: Date
    do {
      let store = try KeyValueStore(path: directory.storePath)
      try store.createTable(table)
      try store.put(string: "kept", id: "kept", into: table, expiresAfter: 3600)
      try store.put(string: "gone", id: "gone", into: table, expiresAfter: 0.000_001)
      try store.put(string: "plain", id: "plain", into: table)
      expires = try #require(try store.item(id: "kept", from: table)?.expiresTime)
      try store.close()
    }
    Thread.sleep(forTimeInterval: 0.01)
    let dumped = try dump(directory.storePath)
    let lines = dumped.split(separator: "\n").map(String.init)
    #expect(lines.count == 2)
    #expect(lines.first { $0.contains("\"kept\"") }?.contains("\"expiresTime\":") == true)
    #expect(lines.first { $0.contains("\"plain\"") }?.contains("expiresTime") == false)
    let copy = directory.appending("copy.db")
    let load = try YtkkvTool.run(["load", copy], scratch: directory, input: dumped)
    #expect(load.status == 0, "\(load.standardError)")
    let loaded = try KeyValueStore(path: copy)
    defer { try? loaded.close() }
    #expect(try loaded.item(id: "kept", from: table)?.expiresTime == expires)
    #expect(try loaded.item(id: "plain", from: table)?.expiresTime == nil)
    #expect(try loaded.count(in: table) == 2)
  }

  // MARK: A store of format version 1

  private static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("Fixtures")

  /// `ytkkv dump` of the store at `path`.
  private func dump(_ path: String) throws -> String {
    let result = try YtkkvTool.run(["dump", path], scratch: directory)
    #expect(result.status == 0, "\(result.standardError)")
    return result.standardOutput
  }

  @Test(
    "a store written by format version 1 opens without loss, takes writes (expiring puts too) in a new segment of the current version, compacts and reopens"
  )
  func formatVersion1() throws {
    let copy = directory.appending("format1.db")
    try FileManager.default.copyItem(
      atPath: Self.fixtures.appendingPathComponent("format1.db").path, toPath: copy)
    let expected = try String(
      contentsOf: Self.fixtures.appendingPathComponent("format1.jsonl"), encoding: .utf8)
    #expect(try dump(copy) == expected)
    let segmentsBefore = try FileManager.default.contentsOfDirectory(atPath: copy)
      .filter { $0.hasSuffix(".log") }.sorted()
    do {
      let store = try KeyValueStore(path: copy)
      #expect(try store.count(in: "user_table") == 300)
      #expect(try store.item(id: "user-000", from: "user_table")?.expiresTime == nil)
      try store.put(string: "expiring", id: "late", into: "cache_table", expiresAfter: 3600)
      try store.close()
    }
    let segmentsAfter = try FileManager.default.contentsOfDirectory(atPath: copy)
      .filter { $0.hasSuffix(".log") }.sorted()
    // The active segment of version 1 got no record: the writer's open started one of the
    // current version after it.
    #expect(segmentsAfter.count == segmentsBefore.count + 1)
    for name in segmentsBefore {
      let header = try #require(FileManager.default.contents(atPath: copy + "/" + name))
      #expect(header[8] == 1 && header[9] == 0, "\(name) is still of version 1")
    }
    let newest = try #require(
      FileManager.default.contents(atPath: copy + "/" + segmentsAfter.last!))
    #expect(newest[8] == 3)
    do {
      let store = try KeyValueStore(path: copy)
      #expect(try store.item(id: "late", from: "cache_table")?.expiresTime != nil)
      try store.compact()
      try store.close()
    }
    let verify = try YtkkvTool.run(["verify", copy], scratch: directory)
    #expect(verify.status == 0, "\(verify.standardOutput)\(verify.standardError)")
    let afterCompaction = try dump(copy)
    let lines = afterCompaction.split(separator: "\n", omittingEmptySubsequences: false)
    let withoutLate = lines.filter { !$0.contains("\"id\":\"late\"") }.joined(separator: "\n")
    #expect(withoutLate == expected)
    #expect(
      lines.count == expected.split(separator: "\n", omittingEmptySubsequences: false).count + 1)
  }
}
