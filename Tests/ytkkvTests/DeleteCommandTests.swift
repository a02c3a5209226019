import Foundation
import Testing
import YTKKeyValueStore

@Suite("ytkkv delete")
struct DeleteCommandTests {
  static let usage = "Usage: ytkkv delete PATH TABLE (ID | --prefix PREFIX)"

  /// Ids that tell a byte prefix from SQL's LIKE patterns and from Unicode equivalence:
  /// `e` + U+0301 and the precomposed `é` (U+00E9) look alike but differ in their bytes.
  static let ids = [
    "user_1", "user_2", "userX", "user%a", "us", "a_b", "aXb", "e\u{301}x", "\u{E9}y",
  ]

  /// Table `t` holding `ids`.
  static let fixture = StoreFixture { store in
    try store.createTable("t")
    for id in ids { try store.put(["id": .string(id)], id: id, into: "t") }
  }

  /// The ids left in table `t`, as UTF-8 bytes (so look-alike ids stay apart).
  static func remainingIDs(_ path: String) throws -> Set<[UInt8]> {
    let store = try KeyValueStore(path: path, options: StoreOptions(readOnly: true))
    defer { try? store.close() }
    return Set(try store.allItems(in: "t").map { Array($0.id.utf8) })
  }

  static func bytes(_ ids: [String]) -> Set<[UInt8]> { Set(ids.map { Array($0.utf8) }) }

  @Test("deletes one id and says so; a missing id deletes nothing and is no error")
  func deletesOneID() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    let first = try Tool.run(["delete", path, "t", "user_1"])
    #expect(first.status == 0)
    #expect(first.outputLines == ["deleted 1 item"])
    #expect(first.standardError == "")
    #expect(try Self.remainingIDs(path) == Self.bytes(Self.ids.filter { $0 != "user_1" }))

    let again = try Tool.run(["delete", path, "t", "user_1"])
    #expect(again.status == 0)
    #expect(again.outputLines == ["deleted 0 items"])
    #expect(try Self.remainingIDs(path).count == Self.ids.count - 1)
  }

  @Test("--prefix deletes the ids that start with the prefix byte for byte; % and _ are literal")
  func deletesByPrefix() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    let underscore = try Tool.run(["delete", path, "t", "--prefix", "user_"])
    #expect(underscore.status == 0)
    #expect(underscore.outputLines == ["deleted 2 items"])
    #expect(
      try Self.remainingIDs(path)
        == Self.bytes(["userX", "user%a", "us", "a_b", "aXb", "e\u{301}x", "\u{E9}y"]))

    let percent = try Tool.run(["delete", path, "t", "--prefix", "user%"])
    #expect(percent.outputLines == ["deleted 1 item"])
    #expect(
      try Self.remainingIDs(path)
        == Self.bytes(["userX", "us", "a_b", "aXb", "e\u{301}x", "\u{E9}y"]))

    let precomposed = try Tool.run(["delete", path, "t", "--prefix", "\u{E9}"])
    #expect(precomposed.outputLines == ["deleted 1 item"])
    #expect(try Self.remainingIDs(path) == Self.bytes(["userX", "us", "a_b", "aXb", "e\u{301}x"]))

    let none = try Tool.run(["delete", path, "t", "--prefix", "zzz"])
    #expect(none.status == 0)
    #expect(none.outputLines == ["deleted 0 items"])
  }

  @Test("an empty prefix empties the table and keeps it")
  func emptyPrefix() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    let result = try Tool.run(["delete", path, "t", "--prefix", ""])
    #expect(result.status == 0)
    #expect(result.outputLines == ["deleted \(Self.ids.count) items"])
    #expect(try Tool.run(["tables", path]).outputLines == ["t\t0"])
  }

  @Test("a missing table exits 1")
  func missingTable() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    try expectMissingTable(
      ["delete", path, "nope", "1"], ["delete", path, "nope", "--prefix", "1"], table: "nope")
  }

  @Test("missing or extra arguments and unknown options are usage errors (64)")
  func badArguments() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    try expectUsageErrors(
      [
        (["delete"], "missing arguments"),
        (["delete", path, "t"], "missing arguments"),
        (["delete", path, "t", "user_1", "user_2"], "unexpected argument user_2"),
        (["delete", path, "t", "user_1", "--prefix", "user_"], "unexpected argument user_1"),
        (["delete", path, "t", "--prefix"], "--prefix needs a value"),
        (["delete", path, "t", "user_1", "--all"], "unknown option --all"),
      ], usage: Self.usage)
    #expect(try Self.remainingIDs(path) == Self.bytes(Self.ids))
  }

  @Test("a missing store exits 1 and is not created")
  func missingStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("missing.db")

    try expectMissingStore(
      ["delete", path, "t", "1"], ["delete", path, "t", "--prefix", ""], at: path)
  }

  @Test("a store another process has open for writing exits 1: locked, nothing deleted")
  func lockedStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    try withStoreOpenForWriting(at: path) { _ in
      try expectLockedStoreRefused(
        ["delete", path, "t", "user_1"], ["delete", path, "t", "--prefix", ""])
    }
    #expect(try Self.remainingIDs(path) == Self.bytes(Self.ids))
  }
}
