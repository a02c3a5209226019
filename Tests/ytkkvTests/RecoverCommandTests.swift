import Foundation
import Testing
import YTKKeyValueStore

@Suite("ytkkv recover")
struct RecoverCommandTests {
  static let usage = "Usage: ytkkv recover PATH"

  /// The names beside the store that recovery made: `NAME.damaged-…`, `NAME.recovering-…`.
  static func leftovers(_ scratch: TemporaryDirectory, _ name: String) throws -> [String] {
    try StoreFiles.names(in: scratch.path, startingWith: name + ".")
  }

  @Test("salvages every readable item, keeps the damaged store beside it, reports the loss")
  func recoversDamagedStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let store = try FiveItemStore(at: scratch.appending("damaged.db"))
    try store.damageValue(of: 2)
    let readable = try Tool.run(["dump", store.path])
    try #require(readable.outputLines.count == 4)

    let result = try Tool.run(["recover", store.path])
    #expect(result.status == 0)
    #expect(result.standardError == "")
    let lines = result.outputLines
    try #require(lines.count == 3, "\(lines)")
    #expect(lines[0] == "salvaged 4 items in 1 table")
    #expect(lines[1] == "lost: 1 damaged region, 0 unreadable items")

    // The damaged store is kept, untouched, at PATH.damaged-<time>.
    let kept = try Self.leftovers(scratch, "damaged.db")
    try #require(kept.count == 1, "\(kept)")
    // damaged.db.damaged-YYYYMMDDTHHMMSSZ
    let stamp = Array(kept[0].utf8.dropFirst("damaged.db.damaged-".count))
    #expect(kept[0].hasPrefix("damaged.db.damaged-"), "\(kept)")
    #expect(
      stamp.count == 16 && stamp[8] == UInt8(ascii: "T") && stamp[15] == UInt8(ascii: "Z")
        && (stamp[0..<8] + stamp[9..<15]).allSatisfy { (0x30...0x39).contains($0) },
      "\(kept)")
    #expect(lines[2] == "the damaged store is kept at \(scratch.appending(kept[0]))")
    let keptVerify = try Tool.run(["verify", scratch.appending(kept[0])])
    #expect(keptVerify.status == 1)
    #expect(keptVerify.outputLines.last == "1 problem found")

    // The store at PATH is clean and holds what could be read, created times included.
    let verify = try Tool.run(["verify", store.path])
    #expect(verify.status == 0)
    #expect(verify.outputLines.count == 1)
    #expect(verify.outputLines.first?.hasPrefix("OK (") == true)
    #expect(try Tool.run(["dump", store.path]).standardOutput == readable.standardOutput)
    #expect(try Tool.run(["tables", store.path]).outputLines == ["t\t4"])
    #expect(try Tool.run(["stats", store.path]).outputLines.contains("damaged records:  0"))
  }

  @Test("recovering a clean store keeps every table and item and loses nothing")
  func recoversCleanStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let store = try FiveItemStore(at: scratch.appending("clean.db"))
    let writer = try KeyValueStore(path: store.path)
    try writer.createTable("empty")
    try writer.close()
    let dump = try Tool.run(["dump", store.path])

    let result = try Tool.run(["recover", store.path])
    #expect(result.status == 0)
    #expect(
      Array(result.outputLines.prefix(2)) == [
        "salvaged 5 items in 2 tables", "lost: 0 damaged regions, 0 unreadable items",
      ])
    #expect(try Self.leftovers(scratch, "clean.db").count == 1)
    #expect(try Tool.run(["dump", store.path]).standardOutput == dump.standardOutput)
    #expect(try Tool.run(["verify", store.path]).status == 0)
  }

  @Test("recovering the same store twice in a row keeps both earlier stores")
  func recoversTwice() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let store = try FiveItemStore(at: scratch.appending("twice.db"))
    try store.damageValue(of: 2)
    let readable = try Tool.run(["dump", store.path]).standardOutput

    let first = try Tool.run(["recover", store.path])
    #expect(first.status == 0)
    let second = try Tool.run(["recover", store.path])
    #expect(second.status == 0)
    #expect(second.standardError == "")
    #expect(
      Array(second.outputLines.prefix(2)) == [
        "salvaged 4 items in 1 table", "lost: 0 damaged regions, 0 unreadable items",
      ])

    // Each run keeps the store it replaced under a name of its own, and leaves nothing else.
    let kept = try Self.leftovers(scratch, "twice.db")
    #expect(kept.count == 2, "\(kept)")
    #expect(kept.allSatisfy { $0.hasPrefix("twice.db.damaged-") }, "\(kept)")
    #expect(try Tool.run(["dump", store.path]).standardOutput == readable)
  }

  @Test("missing or extra arguments and unknown options are usage errors (64)")
  func badArguments() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let store = try FiveItemStore(at: scratch.appending("test.db"))

    try expectUsageErrors(
      [
        (["recover"], "missing arguments"),
        (["recover", store.path, "other.db"], "unexpected argument other.db"),
        (["recover", store.path, "--force"], "unknown option --force"),
      ], usage: Self.usage)
    #expect(try Self.leftovers(scratch, "test.db") == [])
  }

  @Test("a missing store exits 1; nothing is created")
  func missingStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("missing.db")

    try expectNoStore(["recover", path], at: path)
    #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path) == [])
  }

  @Test("a store another process has open for writing exits 1: locked, nothing moved")
  func lockedStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let store = try FiveItemStore(at: scratch.appending("test.db"))
    try store.damageValue(of: 2)

    try withStoreOpenForWriting(at: store.path) { _ in
      try expectLockedStoreRefused(["recover", store.path])
      #expect(try Self.leftovers(scratch, "test.db") == [])
    }
    #expect(try Tool.run(["verify", store.path]).outputLines.last == "1 problem found")
  }
}
