import Foundation
import Testing
import YTKKeyValueStore

@Suite("ytkkv verify")
struct VerifyCommandTests {
  static let usage = "Usage: ytkkv verify PATH [--json]"

  /// The object `verify --json` printed.
  static func report(_ result: ToolResult) throws -> [String: Any] {
    #expect(result.outputLines.count == 1)
    return try #require(
      try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
  }

  @Test("a clean store is OK, with the number of segments, records and hint files; exit 0")
  func cleanStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let store = try FiveItemStore(at: scratch.appending("test.db"))

    let result = try Tool.run(["verify", store.path])
    #expect(result.status == 0)
    #expect(result.outputLines == ["OK (1 segments, 6 records, 0 hint files, 0 index files)"])
    #expect(result.standardError == "")

    let json = try Tool.run(["verify", store.path, "--json"])
    #expect(json.status == 0)
    #expect(json.standardOutput.hasPrefix(#"{"ok":true,"#))
    let report = try Self.report(json)
    #expect(report["ok"] as? Bool == true)
    #expect((report["segments"] as? NSNumber)?.intValue == 1)
    #expect((report["records"] as? NSNumber)?.intValue == 6)
    #expect((report["hintFiles"] as? NSNumber)?.intValue == 0)
    #expect((report["problems"] as? [Any])?.isEmpty == true)
    #expect((report["notes"] as? [Any])?.isEmpty == true)
  }

  @Test("a compacted store is OK and its hint files are checked")
  func compactedStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("test.db")
    let store = try KeyValueStore(path: path)
    try store.createTable("t")
    for round in 0..<3 {
      for id in ["a", "b", "c"] { try store.put(["round": .int(Int64(round))], id: id, into: "t") }
    }
    try store.compact()
    try store.close()

    let result = try Tool.run(["verify", path, "--json"])
    #expect(result.status == 0)
    let report = try Self.report(result)
    #expect(report["ok"] as? Bool == true)
    #expect(((report["hintFiles"] as? NSNumber)?.intValue ?? 0) >= 1)
    #expect(try Tool.run(["verify", path]).outputLines.last?.hasPrefix("OK (") == true)
  }

  @Test("damage is printed with file and offset, then \"1 problem found\"; exit 1")
  func damagedStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let store = try FiveItemStore(at: scratch.appending("damaged.db"))
    let damaged = try store.damageValue(of: 2)
    let segment = try store.segment()
    let before = try StoreFiles.contents(store.path + "/" + segment)

    let result = try Tool.run(["verify", store.path])
    #expect(result.status == 1)
    #expect(
      result.outputLines == [
        "\(segment) at offset \(damaged.offset): checksum mismatch "
          + "(\(damaged.length) bytes skipped)",
        "1 problem found",
      ])

    let json = try Tool.run(["verify", store.path, "--json"])
    #expect(json.status == 1)
    #expect(json.standardOutput.hasPrefix(#"{"ok":false,"#))
    let report = try Self.report(json)
    #expect(report["ok"] as? Bool == false)
    let problems = try #require(report["problems"] as? [[String: Any]])
    try #require(problems.count == 1)
    #expect(problems[0]["file"] as? String == segment)
    #expect((problems[0]["offset"] as? NSNumber)?.intValue == damaged.offset)
    #expect(
      problems[0]["message"] as? String
        == "checksum mismatch (\(damaged.length) bytes skipped)")

    // verify changes nothing.
    #expect(try StoreFiles.contents(store.path + "/" + segment) == before)
    #expect(try StoreFiles.segments(of: store.path) == [segment])
  }

  @Test("each damaged record is a problem of its own: \"2 problems found\"")
  func twoProblems() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let store = try FiveItemStore(at: scratch.appending("damaged.db"))
    let second = try store.damageValue(of: 2)
    let fourth = try store.damageValue(of: 4)
    let segment = try store.segment()

    let result = try Tool.run(["verify", store.path])
    #expect(result.status == 1)
    #expect(
      result.outputLines == [
        "\(segment) at offset \(second.offset): checksum mismatch (\(second.length) bytes skipped)",
        "\(segment) at offset \(fourth.offset): checksum mismatch (\(fourth.length) bytes skipped)",
        "2 problems found",
      ])
  }

  @Test("a torn tail is a note, not a problem: OK, exit 0, and the file is left as it is")
  func tornTail() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let store = try FiveItemStore(at: scratch.appending("torn.db"))
    let torn = try store.tearLastRecord()
    let segment = try store.segment()
    let before = try StoreFiles.contents(store.path + "/" + segment)

    let result = try Tool.run(["verify", store.path])
    #expect(result.status == 0)
    #expect(
      result.outputLines == [
        "note: \(segment) at offset \(torn.offset): torn tail of \(torn.remaining) bytes "
          + "left by a crash; cleared at the next open",
        "OK (1 segments, 5 records, 0 hint files, 0 index files)",
      ])

    let json = try Tool.run(["verify", store.path, "--json"])
    #expect(json.status == 0)
    let report = try Self.report(json)
    #expect(report["ok"] as? Bool == true)
    #expect((report["problems"] as? [Any])?.isEmpty == true)
    let notes = try #require(report["notes"] as? [[String: Any]])
    try #require(notes.count == 1)
    #expect(notes[0]["file"] as? String == segment)
    #expect((notes[0]["offset"] as? NSNumber)?.intValue == torn.offset)

    #expect(try StoreFiles.contents(store.path + "/" + segment) == before)
  }

  @Test("missing or extra arguments and unknown options are usage errors (64)")
  func badArguments() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let store = try FiveItemStore(at: scratch.appending("test.db"))

    try expectUsageErrors(
      [
        (["verify"], "missing arguments"),
        (["verify", store.path, "t"], "unexpected argument t"),
        (["verify", store.path, "--repair"], "unknown option --repair"),
      ], usage: Self.usage)
  }

  @Test("a missing store exits 1 and is not created")
  func missingStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("missing.db")

    try expectMissingStore(["verify", path], ["verify", path, "--json"], at: path)
  }

  @Test("checks a store another process has open for writing")
  func lockedStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let store = try FiveItemStore(at: scratch.appending("test.db"))

    try withStoreOpenForWriting(at: store.path) { writer in
      try writer.put(["id": 6], id: "k6", into: FiveItemStore.table)

      let result = try Tool.run(["verify", store.path])
      #expect(result.status == 0)
      #expect(result.outputLines.last?.hasPrefix("OK (") == true)
      #expect(!result.standardOutput.contains("problem"))
    }
  }
}
