import Foundation
import Testing
import YTKKeyValueStore

@Suite("ytkkv demo")
struct DemoCommandTests {
  static let usage = "Usage: ytkkv demo [PATH]"

  /// The lines the demo prints between "Opened …" and "Closed. …", but for the created time.
  static let steps = [
    #"createTable("user_table")"#,
    #"put({"age":30,"id":1,"name":"tangqiao"}, id: "1", into: "user_table")"#,
    #"query data result: {"age":30,"id":1,"name":"tangqiao"}"#,
    #"item(id: "1"): object {"age":30,"id":1,"name":"tangqiao"}, createdTime "#,
    #"put(string: "a plain string", id: "user_name"), put(number: 98.5, id: "user_score")"#,
    #"count(in: "user_table") = 3"#,
    #"delete(prefix: "user_", from: "user_table")"#,
    #"count(in: "user_table") = 1"#,
  ]

  /// `2026-11-29T12:48:04.445715Z`: a created time as the demo prints it, in UTC.
  static func iso8601(_ date: Date) -> String {
    let micros = Microseconds.of(date)
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC")!
    let parts = calendar.dateComponents(
      [.year, .month, .day, .hour, .minute, .second],
      from: Date(timeIntervalSince1970: Double(micros / 1_000_000)))
    return String(
      format: "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", parts.year!, parts.month!, parts.day!,
      parts.hour!, parts.minute!, parts.second!, Int(micros % 1_000_000))
  }

  /// Checks the demo's output for a store at `path`, and what it left in the store.
  static func expectDemo(_ result: ToolResult, path: String) throws {
    #expect(result.status == 0)
    #expect(result.standardError == "")
    let lines = result.outputLines
    try #require(lines.count == steps.count + 2, "\(lines)")
    #expect(lines.first == "Opened the store at \(path)")
    #expect(lines.last == "Closed. Look inside with: ytkkv dump \(path)")
    for (line, step) in zip(lines.dropFirst(), steps) where !step.hasSuffix("createdTime ") {
      #expect(line == step)
    }

    let store = try KeyValueStore(path: path, options: StoreOptions(readOnly: true))
    defer { try? store.close() }
    #expect(try store.tableNames() == ["user_table"])
    #expect(try store.count(in: "user_table") == 1)
    let item = try #require(try store.item(id: "1", from: "user_table"))
    #expect(item.object == ["age": 30, "id": 1, "name": "tangqiao"])
    #expect(lines[4] == steps[3] + iso8601(item.createdTime))
  }

  @Test("with PATH, runs YTKKeyValueStore's example on a new store there and prints each step")
  func runsAtPath() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("test.db")

    let result = try Tool.run(["demo", path])
    try Self.expectDemo(result, path: path)
    #expect(try Tool.run(["tables", path]).outputLines == ["user_table\t1"])
  }

  @Test("run again on the same store, it ends the same way")
  func runsTwice() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("test.db")

    #expect(try Tool.run(["demo", path]).status == 0)
    try Self.expectDemo(try Tool.run(["demo", path]), path: path)
  }

  @Test("without PATH, uses a fresh directory under $TMPDIR and leaves the store there")
  func runsInTemporaryDirectory() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    var environment = ProcessInfo.processInfo.environment
    environment["TMPDIR"] = scratch.path

    let result = try Tool.run(["demo"], environment: environment)
    let opened = try #require(result.outputLines.first)
    let path = String(opened.dropFirst("Opened the store at ".count))
    #expect(path.hasPrefix(scratch.path + "/"), "\(path)")
    #expect(StoreFiles.exists(path))
    try Self.expectDemo(result, path: path)

    // Each run gets a directory of its own.
    let again = try Tool.run(["demo"], environment: environment)
    #expect(again.status == 0)
    #expect(again.outputLines.first?.hasPrefix("Opened the store at \(scratch.path)/") == true)
    #expect(again.outputLines.first != opened)
    #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).count == 2)
  }

  @Test("extra arguments and unknown options are usage errors (64)")
  func badArguments() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("test.db")

    try expectUsageErrors(
      [
        (["demo", path, "other.db"], "unexpected argument other.db"),
        (["demo", path, "--json"], "unknown option --json"),
      ], usage: Self.usage)
    #expect(!StoreFiles.exists(path))
  }

  @Test("a store another process has open for writing exits 1: locked")
  func lockedStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("test.db")

    try withStoreOpenForWriting(at: path) { _ in
      try expectLockedStoreRefused(["demo", path])
    }
    #expect(try Tool.run(["tables", path]).outputLines == [])
  }
}
