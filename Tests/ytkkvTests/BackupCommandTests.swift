import Foundation
import Testing
import YTKKeyValueStore

@Suite("ytkkv backup")
struct BackupCommandTests {
  static let usage = "Usage: ytkkv backup STORE DEST"

  /// Three tables (one empty) and three items, one of them overwritten and one deleted.
  static let fixture = StoreFixture { store in
    for table in ["user_table", "cache_table", "empty_table"] { try store.createTable(table) }
    try store.put(["id": 1, "name": "tangqiao"], id: "1", into: "user_table")
    try store.put(["id": 1, "name": "tangqiao", "age": 30], id: "1", into: "user_table")
    try store.put(string: "a plain string", id: "2", into: "user_table")
    try store.put(number: 98.5, id: "3", into: "user_table")
    try store.delete(id: "3", from: "user_table")
    try store.put([], id: "feed_1", into: "cache_table")
  }

  /// What `ytkkv dump` prints for the store at `path`, created times included.
  static func dump(_ path: String) throws -> String {
    let result = try Tool.run(["dump", path])
    try #require(result.status == 0, "\(result.standardError)")
    return result.standardOutput
  }

  @Test("copies the store: the copy dumps the same, verifies OK and opens as a store")
  func copies() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)
    let destination = scratch.appending("backup.db")
    let dump = try Self.dump(path)

    let result = try Tool.run(["backup", path, destination])
    #expect(result.status == 0)
    #expect(result.standardError == "")
    #expect(result.outputLines == ["backed up 3 tables, 3 items to \(destination)"])

    #expect(try Self.dump(destination) == dump)
    #expect(
      try Tool.run(["tables", destination]).outputLines == [
        "cache_table\t1", "empty_table\t0", "user_table\t2",
      ])
    let verify = try Tool.run(["verify", destination])
    #expect(verify.status == 0)
    #expect(verify.outputLines.last?.hasPrefix("OK (") == true)
    // The original is untouched, and the copy is a store of its own.
    #expect(try Self.dump(path) == dump)
    let copy = try KeyValueStore(path: destination)
    try copy.put(string: "only in the copy", id: "4", into: "user_table")
    try copy.close()
    #expect(try Self.dump(path) == dump)
    #expect(try Self.dump(destination) != dump)
  }

  @Test("an empty directory as DEST is fine, and missing parents are created")
  func emptyAndNestedDestinations() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)
    let empty = scratch.appending("empty")
    try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: false)
    let nested = scratch.appending("backups/2026/test.db")
    let dump = try Self.dump(path)

    for destination in [empty, nested] {
      let result = try Tool.run(["backup", path, destination])
      #expect(result.status == 0, "\(destination): \(result.standardError)")
      #expect(try Self.dump(destination) == dump)
    }
  }

  @Test("a DEST that holds anything exits 1 with the reason, and is left as it was")
  func refusesUsedDestinations() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)
    let full = scratch.appending("full")
    try FileManager.default.createDirectory(atPath: full, withIntermediateDirectories: false)
    try StoreFiles.write(Array("mine".utf8), to: full + "/notes.txt")
    let file = scratch.appending("file")
    try StoreFiles.write(Array("a file".utf8), to: file)
    let other = try Self.fixture.make(in: scratch, named: "other.db")
    let otherDump = try Self.dump(other)

    for (destination, reason) in [
      (full, "the directory is not empty (a backup goes to a new or empty directory)"),
      (other, "the directory is not empty (a backup goes to a new or empty directory)"),
      (file, "a file is there (a backup goes to a new or empty directory)"),
      (path, "a backup cannot go inside the store it copies"),
    ] {
      let result = try Tool.run(["backup", path, destination])
      #expect(result.status == 1, "\(destination)")
      #expect(result.standardOutput == "", "\(destination)")
      #expect(
        result.errorLines == [
          "ytkkv backup: cannot back up the store at \(path) to \(destination): \(reason)"
        ])
    }
    #expect(try FileManager.default.contentsOfDirectory(atPath: full) == ["notes.txt"])
    #expect(try StoreFiles.contents(file) == Array("a file".utf8))
    #expect(try Self.dump(other) == otherDump)
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: scratch.path).sorted() == [
        "file", "full", "other.db", "test.db",
      ])
  }

  @Test("missing or extra arguments and unknown options are usage errors (64)")
  func badArguments() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)
    let destination = scratch.appending("backup.db")

    try expectUsageErrors(
      [
        (["backup"], "missing arguments"),
        (["backup", path], "missing arguments"),
        (["backup", path, destination, "extra"], "unexpected argument extra"),
        (["backup", path, destination, "--json"], "unknown option --json"),
      ], usage: Self.usage)
    #expect(!StoreFiles.exists(destination))
  }

  @Test("a missing store exits 1; neither it nor DEST is created")
  func missingStore() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("missing.db")
    let destination = scratch.appending("backup.db")

    try expectMissingStore(["backup", path, destination], at: path)
    #expect(!StoreFiles.exists(destination))
  }

  @Test("works while another process has the store open for writing")
  func besideWriter() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = try Self.fixture.make(in: scratch)
    let destination = scratch.appending("backup.db")

    let dump = try withStoreOpenForWriting(at: path, options: Self.fixture.options) { writer in
      try writer.put(["written": "by the app"], id: "5", into: "user_table")
      let dump = try Self.dump(path)
      let result = try Tool.run(["backup", path, destination])
      #expect(result.status == 0, "\(result.standardError)")
      #expect(result.outputLines == ["backed up 3 tables, 4 items to \(destination)"])
      try writer.put(["written": "after the backup"], id: "6", into: "user_table")
      return dump
    }
    #expect(try Self.dump(destination) == dump)
  }
}

extension BackupCommandTests {
  @Test("the counts it prints are the copy's, while an app in .manyProcesses use writes on")
  func countsOfTheCopy() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("store")
    let destination = scratch.appending("backup.db")
    let app = try KeyValueStore(
      path: path, options: StoreOptions(compaction: .manual, sharing: .manyProcesses))
    try app.createTable("t")
    try app.put(["n": 0], id: "first", into: "t")
    // The app puts new ids until the tool is done: the tool, which follows its writes, sees
    // some made after the moment its backup copied.
    let stop = Guarded(false)
    let written = Guarded(1)
    let writer = WaitingThread {
      while !stop.withLock({ $0 }) {
        let number = written.withLock { $0 }
        guard (try? app.put(["n": .int(Int64(number))], id: "w\(number)", into: "t")) != nil
        else { return }
        written.withLock { $0 += 1 }
      }
    }
    let result = try Tool.run(["backup", path, destination])
    stop.withLock { $0 = true }
    writer.join()
    try app.close()
    #expect(result.status == 0, "\(result.standardError)")
    let copy = try KeyValueStore(path: destination, options: StoreOptions(readOnly: true))
    let items = try copy.count(in: "t")
    #expect(try copy.tableNames() == ["t"])
    try copy.close()
    #expect(items <= written.withLock { $0 })
    #expect(result.outputLines == ["backed up 1 table, \(items) items to \(destination)"])
  }
}
