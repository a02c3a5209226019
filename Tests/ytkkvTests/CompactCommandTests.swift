import Foundation
import Testing
import YTKKeyValueStore

@Suite("ytkkv compact")
struct CompactCommandTests {
  static let usage = "Usage: ytkkv compact PATH"

  /// A small closed store where every key was overwritten several times.
  static func makeStore(at path: String) throws {
    let store = try KeyValueStore(path: path, options: StoreOptions(compaction: .manual))
    try store.createTable("t")
    try store.createTable("empty")
    for round in 0..<4 {
      for id in ["a", "b", "c"] { try store.put(["r": .int(Int64(round))], id: id, into: "t") }
    }
    try store.close()
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
    let scratch = ScratchDirectory()
    let path = scratch.appending("test.db")
    try Self.makeStore(at: path)
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
    let scratch = ScratchDirectory()
    let path = scratch.appending("test.db")
    try Self.makeStore(at: path)
    let dump = try Tool.run(["dump", path]).standardOutput

    #expect(try Tool.run(["compact", path]).status == 0)
    let second = try Tool.run(["compact", path])
    #expect(second.status == 0)
    #expect(second.outputLines.count == 2)
    #expect(try Tool.run(["dump", path]).standardOutput == dump)
  }

  @Test("missing or extra arguments and unknown options are usage errors (64)")
  func badArguments() throws {
    let scratch = ScratchDirectory()
    let path = scratch.appending("test.db")
    try Self.makeStore(at: path)
    let segments = try StoreFiles.segments(of: path)

    let cases: [(arguments: [String], reason: String)] = [
      (["compact"], "missing arguments"),
      (["compact", path, "t"], "unexpected argument t"),
      (["compact", path, "--json"], "unknown option --json"),
    ]
    for (arguments, reason) in cases {
      let result = try Tool.run(arguments)
      #expect(result.status == 64, "\(arguments)")
      #expect(result.standardOutput == "", "\(arguments)")
      #expect(result.errorLines == ["ytkkv compact: \(reason)", Self.usage], "\(arguments)")
    }
    #expect(try StoreFiles.segments(of: path) == segments)
  }

  @Test("a missing store exits 1 and is not created")
  func missingStore() throws {
    let scratch = ScratchDirectory()
    let path = scratch.appending("missing.db")

    let result = try Tool.run(["compact", path])
    #expect(result.status == 1)
    #expect(result.standardOutput == "")
    #expect(result.errorLines == ["ytkkv compact: there is no store at \(path)"])
    #expect(!StoreFiles.exists(path))
  }

  @Test("a store another process has open for writing exits 1: locked, nothing compacted")
  func lockedStore() throws {
    let scratch = ScratchDirectory()
    let path = scratch.appending("test.db")
    try Self.makeStore(at: path)
    let writer = try KeyValueStore(path: path, options: StoreOptions(compaction: .manual))
    defer { try? writer.close() }
    let segments = try StoreFiles.segments(of: path)

    let result = try Tool.run(["compact", path])
    #expect(result.status == 1)
    #expect(result.standardOutput == "")
    #expect(result.standardError.hasPrefix("ytkkv compact: the store is locked by another process"))
    #expect(try StoreFiles.segments(of: path) == segments)
  }
}
