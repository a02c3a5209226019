import Foundation
import Testing
import YTKKeyValueStore

@Suite("ytkkv stats")
struct StatsCommandTests {
  static let usage = "Usage: ytkkv stats PATH [--json]"

  /// Overwritten and deleted values, so that the store holds garbage.
  static let fixture = StoreFixture { store in
    try store.createTable("user_table")
    try store.createTable("cache_table")
    for round in 0..<3 {
      try store.put(["id": 1, "round": .int(Int64(round))], id: "1", into: "user_table")
    }
    try store.put(string: "a plain string", id: "user_name", into: "user_table")
    try store.put([], id: "feed_1", into: "cache_table")
    try store.delete(id: "feed_1", from: "cache_table")
  }

  /// Runs `body` on the store at `path` opened read-only, as the tool opens it.
  static func withStore<R>(_ path: String, _ body: (KeyValueStore) throws -> R) throws -> R {
    let store = try KeyValueStore(path: path, options: StoreOptions(readOnly: true))
    defer { try? store.close() }
    return try body(store)
  }

  /// `label:` padded to the column where every value starts.
  static func row(_ label: String, _ value: String) -> String {
    label + ":" + String(repeating: " ", count: 17 - label.count) + value
  }

  @Test("prints items, tables, live and disk bytes, garbage, segments and damaged records")
  func printsRows() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)
    let expected = try Self.withStore(path) { try $0.statistics() }
    try #require(expected.diskBytes < 1024, "the byte counts below are written in B")

    let result = try Tool.run(["stats", path])
    #expect(result.status == 0)
    #expect(result.standardError == "")
    let lines = result.outputLines
    try #require(lines.count == 9, "\(lines)")
    let garbage = expected.diskBytes - expected.liveBytes
    let percent = String(format: "%.1f", Double(garbage) / Double(expected.diskBytes) * 100)
    #expect(
      Array(lines[0..<7]) == [
        Self.row("items", "2"),
        Self.row("tables", "2"),
        Self.row("live bytes", "\(expected.liveBytes) (\(expected.liveBytes) B)"),
        Self.row("disk bytes", "\(expected.diskBytes) (\(expected.diskBytes) B)"),
        Self.row("garbage", "\(garbage) (\(percent)% of disk)"),
        Self.row("segments", "\(expected.segments)"),
        Self.row("damaged records", "0"),
      ])
    #expect(garbage > 0)
    #expect(lines[7].hasPrefix(Self.row("opened from", "")))
    #expect(lines[7].contains(" records scanned, "))
    #expect(lines[7].hasSuffix(" hint entries"))
    #expect(lines[8].hasPrefix(Self.row("index memory", "0 B mapped, ")))
  }

  @Test("names the index file a store was opened from, and its mapped and heap bytes")
  func indexFile() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)
    let writer = try KeyValueStore(path: path)
    try writer.checkpoint()
    let checkpointed = try writer.statistics()
    try writer.close()
    #expect(checkpointed.indexMappedBytes > 0)
    let text = try Tool.run(["stats", path])
    #expect(text.status == 0)
    #expect(text.outputLines[7].contains(", index file "), "\(text.outputLines)")
    #expect(text.outputLines[7].hasSuffix(".index"))
    let json = try Tool.run(["stats", path, "--json"])
    let object = try #require(
      try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any])
    #expect((object["indexFile"] as? String)?.hasSuffix(".index") == true)
    #expect((object["indexMappedBytes"] as? NSNumber)?.intValue == checkpointed.indexMappedBytes)
    #expect(((object["indexHeapBytes"] as? NSNumber)?.intValue ?? -1) >= 0)
    let verified = try Tool.run(["verify", path])
    #expect(
      verified.outputLines.last?.hasSuffix(", 1 index files)") == true, "\(verified.outputLines)")
  }

  @Test("names the changes file put over the index file, when the open used one")
  func changesFile() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)
    let writer = try KeyValueStore(path: path)
    try writer.checkpoint()
    // A close writes the changes since the index file once 1 MiB of records follow it.
    let text = String(repeating: "x", count: 1_000)
    for index in 0..<1_100 { try writer.put(string: text, id: "id\(index)", into: "user_table") }
    try writer.close()
    let result = try Tool.run(["stats", path])
    #expect(result.status == 0)
    #expect(result.outputLines[7].hasSuffix(".changes"), "\(result.outputLines)")
    let json = try Tool.run(["stats", path, "--json"])
    let object = try #require(
      try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any])
    #expect((object["changesFile"] as? String)?.hasSuffix(".changes") == true)
    #expect(object["scannedRecords"] as? NSNumber == 0)
  }

  @Test("--json prints one object whose values match the store's statistics")
  func printsJSON() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)
    let expected = try Self.withStore(path) { try $0.statistics() }

    let result = try Tool.run(["stats", path, "--json"])
    #expect(result.status == 0)
    #expect(result.outputLines.count == 1)
    let object = try #require(
      try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
    for key in [
      "items", "tables", "liveBytes", "diskBytes", "garbageBytes", "garbageFraction", "segments",
      "damagedRecords", "indexMappedBytes", "indexHeapBytes",
    ] {
      #expect(object[key] is NSNumber, "\(key) in \(result.standardOutput)")
    }
    func integer(_ key: String) -> Int? { (object[key] as? NSNumber)?.intValue }
    #expect(integer("items") == 2)
    #expect(integer("tables") == 2)
    #expect(integer("liveBytes") == expected.liveBytes)
    #expect(integer("diskBytes") == expected.diskBytes)
    #expect(integer("garbageBytes") == expected.diskBytes - expected.liveBytes)
    #expect(integer("segments") == expected.segments)
    #expect(integer("damagedRecords") == 0)
    let fraction = try #require((object["garbageFraction"] as? NSNumber)?.doubleValue)
    let expectedFraction =
      Double(expected.diskBytes - expected.liveBytes) / Double(expected.diskBytes)
    #expect(abs(fraction - expectedFraction) < 1e-12)
  }

  @Test("counts the damaged record of a damaged store, and only readable items")
  func damagedStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let store = try FiveItemStore(at: scratch.appending("damaged.db"))
    try store.damageValue(of: 2)

    let text = try Tool.run(["stats", store.path])
    #expect(text.status == 0)
    #expect(text.outputLines.contains("damaged records:  1"))
    #expect(text.outputLines.contains(Self.row("items", "4")))

    let json = try Tool.run(["stats", store.path, "--json"])
    #expect(json.status == 0)
    let object = try #require(
      try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any])
    #expect((object["damagedRecords"] as? NSNumber)?.intValue == 1)
    #expect((object["items"] as? NSNumber)?.intValue == 4)
  }

  @Test("missing or extra arguments and unknown options are usage errors (64)")
  func badArguments() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    try expectUsageErrors(
      [
        (["stats"], "missing arguments"),
        (["stats", "--json"], "missing arguments"),
        (["stats", path, "user_table"], "unexpected argument user_table"),
        (["stats", path, "--yaml"], "unknown option --yaml"),
      ], usage: Self.usage)
  }

  @Test("a missing store exits 1 and is not created")
  func missingStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("missing.db")

    try expectMissingStore(["stats", path], ["stats", path, "--json"], at: path)
  }

  @Test("reports on a store another process has open for writing")
  func lockedStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    try withStoreOpenForWriting(at: path) { writer in
      try writer.put(["id": 2], id: "2", into: "user_table")

      let result = try Tool.run(["stats", path])
      #expect(result.status == 0)
      #expect(result.outputLines.first == Self.row("items", "3"))
      #expect(result.outputLines.contains(Self.row("tables", "2")))

      let json = try Tool.run(["stats", path, "--json"])
      #expect(json.status == 0)
      #expect(json.standardOutput.hasPrefix(#"{"items":3,"tables":2,"#))
      let object = try #require(
        try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any])
      let own = try writer.statistics()
      #expect((object["diskBytes"] as? NSNumber)?.intValue == own.diskBytes)
      #expect((object["liveBytes"] as? NSNumber)?.intValue == own.liveBytes)
    }
  }
}
