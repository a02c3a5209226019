import Foundation
import Testing
import YTKKeyValueStore

@Suite("ytkkv compact")
struct CompactCommandTests {
  static let usage = "Usage: ytkkv compact PATH"

  /// Every key overwritten several times, with no compaction of the library's own.
  static let fixture = StoreFixture(options: StoreOptions(compaction: .manual)) { store in
    try store.createTable("t")
    try store.createTable("empty")
    for round in 0..<4 {
      for id in ["a", "b", "c"] { try store.put(["r": .int(Int64(round))], id: id, into: "t") }
    }
  }

  /// The store's statistics through a read-only open, as `ytkkv stats` sees them.
  static func statistics(_ path: String) throws -> (disk: Int, live: Int, segments: Int) {
    let store = try KeyValueStore(path: path, options: StoreOptions(readOnly: true))
    defer { try? store.close() }
    let statistics = try store.statistics()
    return (statistics.diskBytes, statistics.liveBytes, statistics.segments)
  }

  @Test("prints the sizes before and after; the data is unchanged and takes less disk")
  func compacts() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)
    let before = try Self.statistics(path)
    try #require(before.disk < 1024, "the sizes below are written in B")
    let dumpBefore = try Tool.run(["dump", path])
    try #require(dumpBefore.status == 0)

    let result = try Tool.run(["compact", path])
    #expect(result.status == 0)
    #expect(result.standardError == "")
    let after = try Self.statistics(path)
    #expect(
      result.outputLines == [
        "before: \(before.disk) B on disk, \(before.live) B live, \(before.segments) segments",
        "after:  \(after.disk) B on disk, \(after.live) B live, \(after.segments) segments",
      ])
    #expect(after.disk < before.disk)
    #expect(after.live == before.live)

    #expect(try Tool.run(["dump", path]).standardOutput == dumpBefore.standardOutput)
    let verify = try Tool.run(["verify", path])
    #expect(verify.status == 0)
    #expect(verify.outputLines.last?.hasPrefix("OK (") == true)
  }

  @Test("compacting twice is harmless")
  func compactsTwice() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)
    let dump = try Tool.run(["dump", path]).standardOutput

    #expect(try Tool.run(["compact", path]).status == 0)
    let second = try Tool.run(["compact", path])
    #expect(second.status == 0)
    #expect(second.outputLines.count == 2)
    #expect(try Tool.run(["dump", path]).standardOutput == dump)
  }

  @Test("missing or extra arguments and unknown options are usage errors (64)")
  func badArguments() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)
    let segments = try StoreFiles.segments(of: path)

    try expectUsageErrors(
      [
        (["compact"], "missing arguments"),
        (["compact", path, "t"], "unexpected argument t"),
        (["compact", path, "--json"], "unknown option --json"),
      ], usage: Self.usage)
    #expect(try StoreFiles.segments(of: path) == segments)
  }

  @Test("a missing store exits 1 and is not created")
  func missingStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("missing.db")

    try expectMissingStore(["compact", path], at: path)
  }

  @Test("a store another process has open for writing exits 1: locked, nothing compacted")
  func lockedStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)

    try withStoreOpenForWriting(at: path, options: Self.fixture.options) { _ in
      let segments = try StoreFiles.segments(of: path)
      try expectLockedStoreRefused(["compact", path])
      #expect(try StoreFiles.segments(of: path) == segments)
    }
  }
}
