import Foundation
import Testing
import YTKKeyValueStore

@Suite("ytkkv dump")
struct DumpCommandTests {
  static let usage = "Usage: ytkkv dump PATH [TABLE]"

  /// An empty table and ids that need escaping in JSON.
  static let fixture = StoreFixture { store in
    for table in ["user_table", "empty_table", "cache_table"] { try store.createTable(table) }
    try store.put(["id": 1, "name": "tangqiao", "age": 30], id: "1", into: "user_table")
    try store.put(string: "a plain string", id: "emoji 😀", into: "user_table")
    try store.put(number: 98.5, id: #"a"b\c"#, into: "user_table")
    try store.put(["name": "唐巧", "tags": ["ios", "kv"]], id: "2", into: "user_table")
    try store.put([], id: "feed_1", into: "cache_table")
  }

  /// The created time of an item, in microseconds, as the library reports it.
  static func createdTime(_ path: String, _ table: String, _ id: String) throws -> Int64 {
    let store = try KeyValueStore(path: path, options: StoreOptions(readOnly: true))
    defer { try? store.close() }
    let item = try #require(try store.item(id: id, from: table))
    return Microseconds.of(item.createdTime)
  }

  /// Splits a dump line into what comes before `,"createdTime":` and the created time it
  /// gives, in microseconds; the time must be plain seconds with at most six decimals.
  static func splitCreatedTime(_ line: String) throws -> (head: String, micros: Int64) {
    let marker = #","createdTime":"#
    let range = try #require(line.range(of: marker, options: .backwards), "\(line)")
    let tail = line[range.upperBound...]
    #expect(tail.hasSuffix("}"), "\(line)")
    let micros = try #require(Microseconds.fromSeconds(String(tail.dropLast())), "\(line)")
    return (String(line[..<range.lowerBound]), micros)
  }

  @Test("writes one JSON line per item: tables by name, ids in byte order, times in seconds")
  func dumpsEveryItem() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    let result = try Tool.run(["dump", path])
    #expect(result.status == 0)
    #expect(result.standardError == "")
    let expected: [(head: String, table: String, id: String)] = [
      (#"{"table":"cache_table","id":"feed_1","value":[]"#, "cache_table", "feed_1"),
      (
        #"{"table":"user_table","id":"1","value":{"age":30,"id":1,"name":"tangqiao"}"#,
        "user_table", "1"
      ),
      (
        #"{"table":"user_table","id":"2","value":{"name":"唐巧","tags":["ios","kv"]}"#,
        "user_table", "2"
      ),
      (#"{"table":"user_table","id":"a\"b\\c","value":[98.5]"#, "user_table", #"a"b\c"#),
      (
        #"{"table":"user_table","id":"emoji 😀","value":["a plain string"]"#,
        "user_table", "emoji 😀"
      ),
    ]
    let lines = result.outputLines
    try #require(lines.count == expected.count + 1, "\(lines)")
    #expect(lines[1] == #"{"table":"empty_table"}"#)
    for (line, item) in zip([lines[0]] + lines[2...], expected) {
      let (head, micros) = try Self.splitCreatedTime(line)
      #expect(head == item.head)
      #expect(micros == (try Self.createdTime(path, item.table, item.id)), "\(line)")
      // Each line is a JSON object of its own.
      let object = try #require(
        try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
      #expect(Set(object.keys) == ["table", "id", "value", "createdTime"])
    }
  }

  @Test("with TABLE, dumps that table only; an empty table as {\"table\":…}")
  func dumpsOneTable() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    let cache = try Tool.run(["dump", path, "cache_table"])
    #expect(cache.status == 0)
    try #require(cache.outputLines.count == 1)
    #expect(
      try Self.splitCreatedTime(cache.outputLines[0]).head
        == #"{"table":"cache_table","id":"feed_1","value":[]"#)

    let empty = try Tool.run(["dump", path, "empty_table"])
    #expect(empty.status == 0)
    #expect(empty.outputLines == [#"{"table":"empty_table"}"#])

    let users = try Tool.run(["dump", path, "user_table"])
    #expect(users.outputLines.count == 4)
    #expect(users.outputLines.allSatisfy { $0.hasPrefix(#"{"table":"user_table","id":"#) })
  }

  @Test("a created time before 1970 is written as negative seconds and loads back the same")
  func createdTimeBefore1970() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("test.db")
    let lines = [
      #"{"table":"t","id":"a","value":1,"createdTime":-1.5}"#,
      #"{"table":"t","id":"b","value":2,"createdTime":-0.25}"#,
      #"{"table":"t","id":"c","value":3,"createdTime":-100}"#,
    ]
    let load = try Tool.run(["load", path], input: Data(lines.joined(separator: "\n").utf8))
    try #require(load.status == 0)
    // The store holds -1.5 s (half a second before 1970), so that is what dump must write.
    let store = try KeyValueStore(path: path, options: StoreOptions(readOnly: true))
    let item = try #require(try store.item(id: "a", from: "t"))
    try store.close()
    #expect(Microseconds.of(item.createdTime) == -1_500_000)

    let dump = try Tool.run(["dump", path])
    #expect(dump.status == 0)
    #expect(dump.outputLines == lines)

    let copy = scratch.appending("copy.db")
    #expect(try Tool.run(["load", copy], input: Data(dump.standardOutput.utf8)).status == 0)
    #expect(try Tool.run(["dump", copy]).outputLines == lines)
  }

  @Test("a missing table exits 1")
  func missingTable() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    try expectMissingTable(["dump", path, "nope"], table: "nope")
  }

  @Test("missing or extra arguments and unknown options are usage errors (64)")
  func badArguments() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    try expectUsageErrors(
      [
        (["dump"], "missing arguments"),
        (["dump", path, "user_table", "cache_table"], "unexpected argument cache_table"),
        (["dump", path, "--json"], "unknown option --json"),
      ], usage: Self.usage)
  }

  @Test("a missing store exits 1 and is not created")
  func missingStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("missing.db")

    try expectMissingStore(["dump", path], at: path)
  }

  @Test("dumps a store another process has open for writing, as that process wrote it")
  func lockedStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    try withStoreOpenForWriting(at: path) { writer in
      try writer.put(["new": true], id: "feed_2", into: "cache_table")

      let result = try Tool.run(["dump", path, "cache_table"])
      #expect(result.status == 0)
      #expect(
        try result.outputLines.map { try Self.splitCreatedTime($0).head } == [
          #"{"table":"cache_table","id":"feed_1","value":[]"#,
          #"{"table":"cache_table","id":"feed_2","value":{"new":true}"#,
        ])
    }
  }

  @Test("dumps every readable item of a damaged store")
  func damagedStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let store = try FiveItemStore(at: scratch.appending("damaged.db"))
    try store.damageValue(of: 2)

    let result = try Tool.run(["dump", store.path])
    #expect(result.status == 0)
    #expect(
      try result.outputLines.map { try Self.splitCreatedTime($0).head }
        == [1, 3, 4, 5].map { #"{"table":"t","id":"k\#($0)","value":\#(FiveItemStore.value($0))"# })
  }
}
