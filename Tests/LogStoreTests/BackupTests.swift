import Foundation
import Testing

@testable import LogStore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

@Suite("Backup")
struct BackupTests {
  /// Small segments, so that a small store spans many; no compaction but the tests' own.
  static func options(
    _ fileSystem: (any FileSystem)? = nil, compaction: CompactionPolicy = .manual,
    sync: SyncPolicy = .never, maxSegmentSize: Int = 4096
  ) -> LogStore.Options {
    var options = LogStore.Options(
      sync: sync, compaction: compaction, maxSegmentSize: maxSegmentSize)
    if let fileSystem { options.fileSystem = fileSystem }
    return options
  }

  /// Every table with every entry, timestamps included, for comparing whole stores exactly.
  static func contents(_ store: LogStore) throws -> [String: [LogStore.Entry]] {
    var contents: [String: [LogStore.Entry]] = [:]
    for table in try store.tableNames() { contents[table] = try store.entries(in: table) }
    return contents
  }

  /// Several tables, every kind of change, a compaction (whose outputs have hint files) and
  /// writes after it: sealed segments, compaction outputs and an active segment.
  static func fill(_ store: LogStore) throws {
    for table in ["users", "cache", "log", "dropped"] { try store.createTable(table) }
    for index in 0..<150 {
      try store.put(
        Array("user \(index) \(String(repeating: "u", count: index % 40))".utf8),
        forKey: Array("u\(index)".utf8), in: "users")
      try store.put(
        Array("cached \(index)".utf8), forKey: Array("c\(index)".utf8), in: "cache",
        timestamp: Timestamp(microsecondsSince1970: 1_448_000_000_000_000 + Int64(index)))
      if index % 3 == 0 {
        try store.put(Array("entry \(index)".utf8), forKey: Array("e\(index)".utf8), in: "log")
      }
    }
    for index in stride(from: 0, to: 150, by: 7) {
      try store.delete(key: Array("u\(index)".utf8), in: "users")
    }
    try store.deletePrefix(Array("c1".utf8), in: "cache")
    try store.dropTable("dropped")
    try store.compact()
    var batch = WriteBatch()
    batch.put(Array("after compaction".utf8), forKey: Array("u1".utf8), in: "users")
    batch.delete(key: Array("u2".utf8), in: "users")
    batch.put(Array("new".utf8), forKey: Array("fresh".utf8), in: "cache")
    try store.write(batch)
    try store.clearTable("log")
    try store.put(Array("after clear".utf8), forKey: Array("e1".utf8), in: "log")
    for index in 0..<40 {
      try store.put(
        Array("second round \(index)".utf8), forKey: Array("u\(index)".utf8), in: "users")
    }
  }

  /// The names in `directory`, sorted.
  static func names(in directory: String, _ fileSystem: any FileSystem = SystemFileSystem())
    throws -> [String]
  {
    try fileSystem.contentsOfDirectory(directory).sorted()
  }

  // MARK: What a backup holds

  @Test("a backup holds every table, entry and timestamp of a store of many segments")
  func copiesEverything() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let backup = directory.appending("backup")
    let store = try LogStore(path: path, options: Self.options())
    try Self.fill(store)
    let expected = try Self.contents(store)
    #expect(expected.keys.sorted() == ["cache", "log", "users"])
    #expect(try store.statistics().segments >= 4)

    try store.backup(to: backup)

    // The segments, their hint files and a manifest: what the store holds, less its lock.
    #expect(try Self.names(in: backup) == Self.names(in: path).filter { $0 != "LOCK" })
    #expect(try Self.names(in: backup).contains { $0.hasSuffix(".hint") })
    #expect(try LogStore.verify(path: backup).problems.isEmpty)
    #expect(try LogStore.verify(path: backup).notes.isEmpty)
    // Nothing is left beside it.
    #expect(try Self.names(in: directory.path) == ["backup", "store"])

    let copy = try LogStore(path: backup, options: Self.options())
    #expect(try Self.contents(copy) == expected)
    #expect(copy.openReport.hintedSegments > 0, "the hint files came along and were used")
    #expect(try copy.statistics().liveItems == store.statistics().liveItems)
    // The store goes on unchanged; the two are stores of their own from now on.
    #expect(try Self.contents(store) == expected)
    try store.put(Array("only in the store".utf8), forKey: Array("s".utf8), in: "users")
    try copy.put(Array("only in the copy".utf8), forKey: Array("c".utf8), in: "users")
    try copy.compact()
    try copy.close()
    try store.close()
    let reopened = try LogStore(path: backup, options: Self.options(compaction: .automatic))
    #expect(try reopened.value(forKey: Array("s".utf8), in: "users") == nil)
    #expect(
      try reopened.value(forKey: Array("c".utf8), in: "users") == Array("only in the copy".utf8))
    #expect(try reopened.entries(in: "cache") == expected["cache"])
  }

  @Test("a read-only store is copied as it was opened, while its writer goes on and compacts")
  func readOnlyStore() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let writer = try LogStore(path: path, options: Self.options())
    try Self.fill(writer)
    let reader = try LogStore(path: path, options: LogStore.Options(readOnly: true))
    let expected = try Self.contents(reader)
    // The writer changes everything and compacts the files the reader has open away.
    try writer.clearTable("users")
    try writer.put(Array("later".utf8), forKey: Array("later".utf8), in: "cache")
    try writer.compact()

    try reader.backup(to: directory.appending("backup"))

    let copy = try LogStore(path: directory.appending("backup"), options: Self.options())
    #expect(try Self.contents(copy) == expected)
    #expect(try Self.contents(copy) != Self.contents(writer))
    #expect(try LogStore.verify(path: directory.appending("backup")).problems.isEmpty)
  }

  /// ``options(_:compaction:sync:maxSegmentSize:)`` with index files written for a store of
  /// any size (checkpoints, compactions and closes), and changes files for any change.
  static func indexedOptions(_ fileSystem: (any FileSystem)? = nil) -> LogStore.Options {
    var options = Self.options(fileSystem)
    options.indexFileMinimumLiveBytes = 0
    options.activeHintMinimumBytes = 0
    return options
  }

  /// The number in the name of the one index file in `directory`, if there is one.
  static func indexFile(in directory: String, _ fileSystem: any FileSystem = SystemFileSystem())
    throws -> UInt32?
  {
    let numbers = try names(in: directory, fileSystem).compactMap { name -> UInt32? in
      guard case .index(let number) = StoreFileName.classify(name) else { return nil }
      return number
    }
    #expect(numbers.count <= 1, "\(numbers)")
    return numbers.first
  }

  /// A store at `path` with ``indexedOptions(_:)``, ``fill(_:)``ed and checkpointed; and the
  /// number of its index file.
  static func checkpointedStore(at path: String, _ fileSystem: any FileSystem = SystemFileSystem())
    throws -> (store: LogStore, index: UInt32)
  {
    let store = try LogStore(path: path, options: indexedOptions(fileSystem))
    try fill(store)
    try store.checkpoint()
    return (store, try #require(try indexFile(in: path, fileSystem)))
  }

  @Test(
    "the index file in use and its changes file come along, and the copy's open uses them instead of reading its whole log"
  )
  func copiesIndexFile() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let (store, number) = try Self.checkpointedStore(at: path)
    try store.put(Array("after the checkpoint".utf8), forKey: Array("u5".utf8), in: "users")

    try store.backup(to: directory.appending("indexed"))

    #expect(
      try Self.names(in: directory.appending("indexed"))
        == Self.names(in: path).filter { $0 != "LOCK" })
    for options in [Self.options(), LogStore.Options(readOnly: true)] {
      let copy = try LogStore(path: directory.appending("indexed"), options: options)
      #expect(copy.openReport.indexFile == number, "readOnly \(options.readOnly)")
      #expect(copy.openReport.rejectedIndexFiles.isEmpty)
      #expect(try Self.contents(copy) == Self.contents(store), "readOnly \(options.readOnly)")
    }
    #expect(try LogStore.verify(path: directory.appending("indexed")).problems.isEmpty)

    // A close that writes no index file writes a changes file over it, which the next open
    // puts over the file; the copy of that store has both.
    try store.close()
    #expect(try Self.indexFile(in: path) == number)
    #expect(try Self.names(in: path).contains(StoreFileName.changes(number)))
    let reopened = try LogStore(path: path, options: Self.indexedOptions())
    #expect(reopened.openReport.usedChangesFile)
    try reopened.put(Array("after the reopen".utf8), forKey: Array("u6".utf8), in: "users")
    try reopened.backup(to: directory.appending("changes"))
    // (Not the active segment's hint file, written by the close: the copy's active segment
    // ends in a sync mark of its own.)
    let copied = try Self.names(in: directory.appending("changes"))
    #expect(
      Set([StoreFileName.index(number), StoreFileName.changes(number)]).isSubset(of: copied),
      "\(copied)")
    let copy = try LogStore(path: directory.appending("changes"), options: Self.options())
    #expect(copy.openReport.indexFile == number)
    #expect(copy.openReport.usedChangesFile)
    #expect(copy.openReport.rejectedChangesFile == nil)
    #expect(try Self.contents(copy) == Self.contents(reopened))
  }

  @Test(
    "a read-only store whose index file its writer replaced, or another file took the name of, is copied without it, as it was opened"
  )
  func readOnlyStoreBesideNewIndexFile() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let (writer, number) = try Self.checkpointedStore(at: path)
    let index = path + "/" + StoreFileName.index(number)
    let reader = try LogStore(path: path, options: LogStore.Options(readOnly: true))
    #expect(reader.openReport.indexFile == number)
    let expected = try Self.contents(reader)

    // Another file under the name the reader knows (as a store that reused the number after
    // a crash would write): not the size the reader mapped, so not copied.
    let bytes = try fileBytes(index)
    try writeFile(index, bytes + [UInt8](repeating: 0, count: 64))
    try reader.backup(to: directory.appending("renamed"))
    try writeFile(index, bytes)
    // The writer's compaction replaces the file: the reader's is gone from the directory.
    try writer.clearTable("users")
    try writer.compact()
    #expect(try Self.indexFile(in: path).map { $0 > number } == true)
    try reader.backup(to: directory.appending("replaced"))

    for name in ["renamed", "replaced"] {
      #expect(try Self.indexFile(in: directory.appending(name)) == nil, "\(name)")
      let copy = try LogStore(path: directory.appending(name), options: Self.options())
      #expect(copy.openReport.indexFile == nil, "\(name)")
      #expect(try Self.contents(copy) == expected, "\(name)")
    }
  }

  @Test(
    "a read-only store's backup copies its last segment's hint only while the hint describes the bytes copied: one its writer's close rewrote meanwhile is left out, and the copy verifies clean"
  )
  func readOnlyStoreBesideRewrittenHint() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    // One segment, whose hint every clean close rewrites.
    var options = Self.options(maxSegmentSize: 1 << 20)
    options.activeHintMinimumBytes = 0
    let put = { (store: LogStore, prefix: String) throws in
      for index in 0..<20 {
        try store.put(
          Array("\(prefix) value \(index)".utf8), forKey: Array("\(prefix)\(index)".utf8),
          in: "t")
      }
    }
    do {
      let writer = try LogStore(path: path, options: options)
      try writer.createTable("t")
      try put(writer, "a")
      try writer.close()
    }
    let writer = try LogStore(path: path, options: options)
    try put(writer, "b")
    let reader = try LogStore(path: path, options: LogStore.Options(readOnly: true))
    defer { try? reader.close() }
    #expect(reader.openReport.hintedSegments == 1)
    let expected = try Self.contents(reader)
    let hint = StoreFileName.hint(1)

    // The hint on disk covers the start of what the reader copies: it comes along, and the
    // copy's open reads it.
    try reader.backup(to: directory.appending("before"))
    // The writer goes on and closes: its hint, renamed over the old one, covers records the
    // reader never saw, which are not in the copy.
    try put(writer, "c")
    try writer.close()
    try reader.backup(to: directory.appending("after"))

    for (name, copiesHint) in [("before", true), ("after", false)] {
      let backup = directory.appending(name)
      #expect(try Self.names(in: backup).contains(hint) == copiesHint, "\(name)")
      let report = try LogStore.verify(path: backup)
      #expect(report.problems.isEmpty, "\(name): \(report.problems)")
      let copy = try LogStore(path: backup, options: LogStore.Options(readOnly: true))
      defer { try? copy.close() }
      #expect(copy.openReport.hintedSegments == (copiesHint ? 1 : 0), "\(name)")
      #expect(try Self.contents(copy) == expected, "\(name)")
    }
  }

  @Test(
    "an index file a checkpoint replaces during the copy is the one copied: the copy holds the store at the backup's moment"
  )
  func checkpointDuringCopy() throws {
    let fileSystem = SimulatedFileSystem()
    let path = "/data/store"
    let backup = "/data/backup"
    let (store, number) = try Self.checkpointedStore(at: path, fileSystem)
    try store.put(Array("before".utf8), forKey: Array("before".utf8), in: "users")
    let expected = try Self.contents(store)

    // At the copy's first segment file: write, checkpoint (the file the backup opened is
    // removed), write again.
    let failures = Guarded<[String]>([])
    let replaced = Guarded(false)
    fileSystem.callHook = { call in
      guard call.operation == "open", call.path.hasPrefix(backup + ".backing-up-"),
        call.path.hasSuffix(".log"), !replaced.withLock({ $0 })
      else { return }
      replaced.withLock { $0 = true }
      do {
        try store.put(Array("during".utf8), forKey: Array("during".utf8), in: "users")
        try store.checkpoint()
        try store.put(Array("after".utf8), forKey: Array("after".utf8), in: "cache")
      } catch {
        failures.withLock { $0.append("\(error)") }
      }
    }
    try store.backup(to: backup)
    fileSystem.callHook = nil

    #expect(failures.withLock { $0 } == [])
    #expect(try Self.indexFile(in: path, fileSystem).map { $0 > number } == true)
    #expect(try Self.indexFile(in: backup, fileSystem) == number)
    let copy = try LogStore(path: backup, options: Self.options(fileSystem))
    #expect(copy.openReport.indexFile == number)
    #expect(try Self.contents(copy) == expected)
  }

  @Test("an index file cut short during the copy fails the backup, which leaves no copy")
  func indexFileCutDuringCopy() throws {
    let fileSystem = SimulatedFileSystem()
    let path = "/data/store"
    let (store, number) = try Self.checkpointedStore(at: path, fileSystem)
    let expected = try Self.contents(store)
    let index = path + "/" + StoreFileName.index(number)
    fileSystem.callHook = { call in
      guard call.operation == "open", call.path.hasPrefix("/data/backup.backing-up-"),
        call.path.hasSuffix(".log")
      else { return }
      // Nothing of the store's does this; a person or another program could.
      let file = try? fileSystem.openFile(index, mode: .readWrite)
      try? file?.truncate(to: 100)
      file?.close()
    }
    let error = #expect(throws: LogStoreError.self) { try store.backup(to: "/data/backup") }
    fileSystem.callHook = nil
    #expect(error?.code == .io)
    #expect(error?.message == "\(index) got shorter while it was copied")
    #expect(try Self.names(in: "/data", fileSystem) == ["store"])
    #expect(try Self.contents(store) == expected)
  }

  @Test("an empty directory is replaced by the copy, and missing parents are created")
  func emptyAndMissingDestinations() throws {
    let directory = TemporaryDirectory()
    let store = try LogStore(path: directory.appending("store"), options: Self.options())
    try store.createTable("t")
    try store.put(Array("v".utf8), forKey: Array("k".utf8), in: "t")
    let empty = directory.appending("empty")
    try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: false)
    let nested = directory.appending("a/b/backup")
    let trailing = directory.appending("trailing")

    try store.backup(to: empty)
    try store.backup(to: nested)
    try store.backup(to: trailing + "//")

    for backup in [empty, nested, trailing] {
      let copy = try LogStore(path: backup, options: LogStore.Options(readOnly: true))
      #expect(try Self.contents(copy) == Self.contents(store), "\(backup)")
    }
    #expect(try Self.names(in: directory.path) == ["a", "empty", "store", "trailing"])
  }

  @Test("a destination that holds anything, or lies in the store, is refused and left alone")
  func refusesDestinations() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let store = try LogStore(path: path, options: Self.options())
    try store.createTable("t")
    let full = directory.appending("full")
    try FileManager.default.createDirectory(atPath: full, withIntermediateDirectories: false)
    try Data("mine".utf8).write(to: URL(fileURLWithPath: full + "/notes.txt"))
    let file = directory.appending("file")
    try Data("a file".utf8).write(to: URL(fileURLWithPath: file))
    let storeFiles = try Self.names(in: path)

    for (destination, reason) in [
      (full, "the directory is not empty"), (full + "/", "the directory is not empty"),
      (file, "a file is there"), (path, "a backup cannot go inside the store it copies"),
      (path + "/backup", "a backup cannot go inside the store it copies"),
    ] {
      let error = #expect(throws: LogStoreError.self, "\(destination)") {
        try store.backup(to: destination)
      }
      #expect(error?.code == .invalidArgument)
      let named = StorePath.trimmingTrailingSlashes(destination)
      #expect(
        error?.message == "cannot back up the store at \(path) to \(named): \(reason)"
          + (reason.hasPrefix("a backup") ? "" : " (a backup goes to a new or empty directory)"))
    }
    #expect(try Self.names(in: full) == ["notes.txt"])
    #expect(try fileBytes(file) == Array("a file".utf8))
    #expect(try Self.names(in: path) == storeFiles)
    #expect(try Self.names(in: directory.path) == ["file", "full", "store"])

    try store.close()
    let closed = #expect(throws: LogStoreError.self) {
      try store.backup(to: directory.appending("after-close"))
    }
    #expect(closed?.code == .closed)
    #expect(!FileManager.default.fileExists(atPath: directory.appending("after-close")))
  }

  // MARK: Beside writers and compaction

  /// Step `i` of the writers' history: one batch that puts `k<i>`, sets `last` to `i` (a value
  /// long enough that overwriting it makes garbage for compaction), and every fourth step
  /// deletes an earlier key.
  static func step(_ index: Int) -> WriteBatch {
    var batch = WriteBatch()
    batch.put(Array("value \(index)".utf8), forKey: Array("k\(index)".utf8), in: "seq")
    batch.put(
      Array("\(index) \(String(repeating: "x", count: 200))".utf8), forKey: Array("last".utf8),
      in: "seq")
    if index % 4 == 3 { batch.delete(key: Array("k\(index / 2)".utf8), in: "seq") }
    return batch
  }

  /// The table after the first `count` steps.
  static func history(_ count: Int) -> [String: String] {
    var table: [String: String] = [:]
    for index in 0..<count {
      table["k\(index)"] = "value \(index)"
      if index % 4 == 3 { table["k\(index / 2)"] = nil }
    }
    if count > 0 { table["last"] = "\(count - 1) \(String(repeating: "x", count: 200))" }
    return table
  }

  /// How many steps the copy at `path` holds, after checking that it holds exactly the
  /// table as it was after that many; and whether its open used an index file.
  static func checkedSteps(inCopyAt path: String) throws -> (steps: Int, indexed: Bool) {
    let copy = try LogStore(path: path, options: LogStore.Options(readOnly: true))
    defer { try? copy.close() }
    let table = try copy.snapshot()["seq"] ?? [:]
    let steps = table["last"].flatMap { Int($0.prefix { $0 != " " }) }.map { $0 + 1 } ?? 0
    #expect(table == history(steps), "a copy that is no moment of the history (\(steps) steps?)")
    #expect(copy.openReport.rejectedIndexFiles.isEmpty)
    return (steps, copy.openReport.indexFile != nil)
  }

  enum Compactions: String, CaseIterable, CustomTestStringConvertible {
    /// `compact()` in a loop on a thread of its own.
    case explicit
    /// The store's own, with a low threshold.
    case automatic
    /// `compact()` and `checkpoint()` in turn on a thread of its own, each writing an index
    /// file (whatever the store's size), which the backups copy.
    case indexed

    var testDescription: String { rawValue }
  }

  @Test(
    "backups taken while a writer goes on each hold the store at one moment of its history",
    arguments: [
      (SyncPolicy.never, Compactions.explicit), (.never, .automatic), (.always, .explicit),
      (.never, .indexed),
    ])
  func besideWritersAndCompaction(sync: SyncPolicy, compactions: Compactions) throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let policy: CompactionPolicy =
      compactions == .automatic ? .whenGarbageExceeds(fraction: 0.05) : .manual
    var options = Self.options(compaction: policy, sync: sync, maxSegmentSize: 64 << 10)
    if compactions == .indexed { options.indexFileMinimumLiveBytes = 0 }
    let store = try LogStore(path: path, options: options)
    try store.createTable("seq")
    // Automatic compaction waits for 4 MiB of garbage (`CompactionScheduler.minimumGarbage`):
    // 30,000 steps make 7 MB at either depth.
    let steps =
      sync == .always
      ? TestDepth.choose(sample: 600, full: 1_500)
      : compactions == .automatic ? 30_000 : TestDepth.choose(sample: 12_000, full: 30_000)
    // The first steps before any backup, so that each copies a store of many segments.
    let head = steps / 4
    for index in 0..<head { try store.write(Self.step(index)) }

    let written = Guarded(head)
    let compactionsRun = Guarded(0)
    let failures = Guarded<[String]>([])
    let backups = Guarded<[(steps: Int, indexed: Bool)]>([])
    let scratch = directory.path
    runOnThreads(3) { role in
      switch role {
      case 0:
        for index in head..<steps {
          do {
            try store.write(Self.step(index))
          } catch {
            failures.withLock { $0.append("step \(index): \(error)") }
            return
          }
          written.withLock { $0 = index + 1 }
        }
      case 1:
        var number = 0
        while written.withLock({ $0 }) < steps || number < 3 {
          number += 1
          let backup = scratch + "/backup-\(number)"
          do {
            let before = written.withLock { $0 }
            try store.backup(to: backup)
            let after = written.withLock { $0 }
            let held = try Self.checkedSteps(inCopyAt: backup)
            // The moment lies within the call: every step that had returned before it is in.
            #expect(
              held.steps >= before && held.steps <= after + 1,
              "\(before) ≤ \(held.steps) ≤ \(after) + 1")
            backups.withLock { $0.append(held) }
            try FileManager.default.removeItem(atPath: backup)
          } catch {
            failures.withLock { $0.append("backup \(number): \(error)") }
            return
          }
        }
      default:
        guard compactions != .automatic else { return }
        while written.withLock({ $0 }) < steps {
          do {
            if compactions == .indexed { try store.checkpoint() }
            try store.compact()
            compactionsRun.withLock { $0 += 1 }
          } catch {
            failures.withLock { $0.append("compaction: \(error)") }
            return
          }
        }
      }
    }
    #expect(failures.withLock { $0 } == [])
    let held = backups.withLock { $0 }
    #expect(held.count >= 3)
    #expect(
      held.contains { $0.steps > head && $0.steps < steps },
      "no backup was taken amid the writes: \(held)")
    // Index files are copied when the store has one: in `.indexed`, from the first
    // checkpoint on.
    #expect(held.contains(where: \.indexed) == (compactions == .indexed))
    if compactions != .automatic {
      #expect(compactionsRun.withLock { $0 } > 0)
    } else {
      try store.waitForCompaction()
      #expect(try segmentFiles(in: path).first != path + "/000001.log", "no compaction ran")
    }
    #expect(try store.snapshot()["seq"] == Self.history(steps))
    // A last one, of the store at rest, holds all of it.
    try store.backup(to: directory.appending("final"))
    #expect(try Self.checkedSteps(inCopyAt: directory.appending("final")).steps == steps)
    try store.close()
    // No compaction input held for a backup is left behind: every segment file on disk is one
    // the manifest lists (which a read-only open reads, changing nothing).
    let reader = try LogStore(path: path, options: LogStore.Options(readOnly: true))
    #expect(try reader.statistics().segments == (try segmentFiles(in: path)).count)
  }

  @Test(
    "writes and a compaction during the copy stay out of it; the inputs stay until it ends"
  )
  func compactionDuringCopy() throws {
    let fileSystem = SimulatedFileSystem()
    let options = Self.options(fileSystem)
    let path = "/data/store"
    let backup = "/data/backup"
    let store = try LogStore(path: path, options: options)
    try Self.fill(store)
    let expected = try Self.contents(store)
    let segmentsBefore = try Self.names(in: path, fileSystem).filter { $0.hasSuffix(".log") }

    // At the copy's first segment file: write, and compact every segment the backup copies.
    let seenDuringCopy = Guarded<[String]?>(nil)
    let failures = Guarded<[String]>([])
    fileSystem.callHook = { call in
      guard call.operation == "open", call.path.hasPrefix(backup + ".backing-up-"),
        call.path.hasSuffix(".log"), seenDuringCopy.withLock({ $0 == nil })
      else { return }
      seenDuringCopy.withLock { $0 = [] }
      do {
        try store.put(Array("during".utf8), forKey: Array("during".utf8), in: "users")
        try store.delete(key: Array("u3".utf8), in: "users")
        try store.compact()
        try store.put(Array("after".utf8), forKey: Array("after".utf8), in: "cache")
        let names = try fileSystem.contentsOfDirectory(path)
        seenDuringCopy.withLock { $0 = names }
      } catch {
        failures.withLock { $0.append("\(error)") }
      }
    }
    try store.backup(to: backup)
    fileSystem.callHook = nil

    #expect(failures.withLock { $0 } == [])
    let during = try #require(seenDuringCopy.withLock { $0 })
    #expect(Set(segmentsBefore).isSubset(of: Set(during)), "the inputs stay while the copy runs")
    let after = try Self.names(in: path, fileSystem)
    #expect(Set(segmentsBefore).isDisjoint(with: Set(after)), "and go when it ends: \(after)")

    let copy = try LogStore(path: backup, options: options)
    #expect(try Self.contents(copy) == expected)
    #expect(try LogStore.verify(path: backup, fileSystem: fileSystem).problems.isEmpty)
    #expect(try store.value(forKey: Array("during".utf8), in: "users") == Array("during".utf8))
    #expect(try store.value(forKey: Array("u3".utf8), in: "users") == nil)
    let changed = try Self.contents(store)
    try store.close()
    #expect(try Self.contents(LogStore(path: path, options: options)) == changed)
  }

  @Test("closing the store stops a backup in progress, which removes what it wrote")
  func closeStopsBackup() throws {
    let fileSystem = SimulatedFileSystem()
    let path = "/data/store"
    let backup = "/data/backup"
    let store = try LogStore(path: path, options: Self.options(fileSystem))
    try Self.fill(store)
    let closer = Guarded<WaitingThread?>(nil)
    fileSystem.callHook = { call in
      guard call.operation == "open", call.path.hasPrefix(backup + ".backing-up-"),
        call.path.hasSuffix(".log"), closer.withLock({ $0 == nil })
      else { return }
      // `close()` begins, then waits for the backup, which stops at its next write.
      let thread = WaitingThread { try? store.close() }
      closer.withLock { $0 = thread }
      try? waitUntil("close to begin") {
        (try? store.sync()) == nil
      }
    }
    let error = #expect(throws: LogStoreError.self) { try store.backup(to: backup) }
    #expect(error?.code == .closed)
    try #require(closer.withLock { $0 }).join()
    fileSystem.callHook = nil
    #expect(try Self.names(in: "/data", fileSystem) == ["store"])
    let reopened = try LogStore(path: path, options: Self.options(fileSystem))
    #expect(try reopened.tableNames() == ["cache", "log", "users"])
  }

  // MARK: Faults and crashes

  static let faultPath = "/data/store"
  static let faultBackup = "/data/backup"

  /// A store on `fileSystem` made the same way, call for call, each time, with an index file
  /// and a changes file over it for the backup to copy; synced, so that a power loss keeps all
  /// of it.
  static func faultStore(on fileSystem: SimulatedFileSystem) throws -> LogStore {
    do {
      let store = try checkpointedStore(at: faultPath, fileSystem).store
      try store.put(Array("over the index file".utf8), forKey: Array("u7".utf8), in: "users")
      try store.close()
    }
    let store = try LogStore(path: faultPath, options: indexedOptions(fileSystem))
    try #require(store.openReport.usedChangesFile)
    try store.put(Array("after the open".utf8), forKey: Array("u8".utf8), in: "users")
    try store.sync()
    return store
  }

  /// The numbers of the calls a backup of ``faultStore(on:)`` makes.
  static func backupCalls() throws -> ClosedRange<Int> {
    let fileSystem = SimulatedFileSystem()
    let store = try faultStore(on: fileSystem)
    let first = fileSystem.calls + 1
    try store.backup(to: faultBackup)
    let last = fileSystem.calls
    // Its calls copy the index file and the changes file too.
    let copied = try names(in: faultBackup, fileSystem)
    try #require(
      copied.contains { $0.hasSuffix(".index") } && copied.contains { $0.hasSuffix(".changes") })
    return first...last
  }

  @Test("failing any call of a backup, once or for good, leaves the store as it was and no copy")
  func everyCallFails() throws {
    let calls = try Self.backupCalls()
    #expect(calls.count > 20)
    // At sample depth each call fails one of the four ways, in turn, and the first and the
    // last call all four.
    let ways = [(EIO, false), (EIO, true), (ENOSPC, false), (ENOSPC, true)]
    var injected = 0
    var failed = 0
    for call in calls {
      let isEdge = call == calls.lowerBound || call == calls.upperBound
      for (way, (errorNumber, persistent)) in ways.enumerated()
      where TestDepth.runs(call + way, every: ways.count, isEdge: isEdge) {
        injected += 1
        let fault = SimulatedFileSystem.Fault(
          call: call, errorNumber: errorNumber, persistent: persistent)
        let fileSystem = SimulatedFileSystem()
        let store = try Self.faultStore(on: fileSystem)
        try #require(fileSystem.calls + 1 == calls.lowerBound)
        let expected = try Self.contents(store)
        fileSystem.inject(fault)
        var succeeded = false
        do {
          try store.backup(to: Self.faultBackup)
          succeeded = true
        } catch {
          failed += 1
          #expect(error.code == .io || error.code == .diskFull, "\(fault): \(error)")
        }
        fileSystem.clearFaults()
        if succeeded {
          // Only a call whose failure the backup can do without (looking for a file at the
          // destination) lets it succeed: then the copy is whole.
          let copy = try LogStore(path: Self.faultBackup, options: Self.options(fileSystem))
          #expect(try Self.contents(copy) == expected, "\(fault)")
          try copy.close()
          try LogStore.removeStoreDirectory(Self.faultBackup, fileSystem: fileSystem)
        } else if persistent {
          // Removing what it wrote failed too. What is left is beside the destination, or,
          // when the copy had been put in place whole, that copy: never part of one.
          let left = try Self.names(in: "/data", fileSystem)
          #expect(
            left.allSatisfy {
              ["store", "backup"].contains($0) || $0.hasPrefix("backup.backing-up-")
            },
            "\(fault): \(left)")
          if fileSystem.directoryExists(Self.faultBackup) {
            var readOnly = LogStore.Options(readOnly: true)
            readOnly.fileSystem = fileSystem
            let copy = try LogStore(path: Self.faultBackup, options: readOnly)
            #expect(try Self.contents(copy) == expected, "\(fault)")
          }
        } else {
          #expect(try Self.names(in: "/data", fileSystem) == ["store"], "\(fault)")
        }
        // The store is as it was, and works: another backup, a write, a compaction.
        #expect(try Self.contents(store) == expected, "\(fault)")
        try store.backup(to: "/data/again")
        #expect(
          try Self.contents(LogStore(path: "/data/again", options: Self.options(fileSystem)))
            == expected, "\(fault)")
        try store.put(Array("v".utf8), forKey: Array("probe".utf8), in: "users")
        try store.compact()
        let changed = try Self.contents(store)
        try store.close()
        #expect(
          try Self.contents(LogStore(path: Self.faultPath, options: Self.options(fileSystem)))
            == changed, "\(fault)")
      }
    }
    // More than three faults in four fail the backup.
    #expect(failed * 4 > injected * 3)
    print(
      "backup faults injected, \(TestDepth.current): \(injected); backups that failed: \(failed)")
  }

  @Test("a backup into an empty directory that fails at its last sync leaves the directory empty")
  func failedBackupKeepsEmptyDirectory() throws {
    func prepared() throws -> (SimulatedFileSystem, LogStore) {
      let fileSystem = SimulatedFileSystem()
      let store = try Self.faultStore(on: fileSystem)
      try fileSystem.createDirectory(Self.faultBackup)
      return (fileSystem, store)
    }
    let (probe, probeStore) = try prepared()
    try probeStore.backup(to: Self.faultBackup)
    let last = try #require(probe.log.last)
    #expect(last.operation == "fsync" && last.path == "/data", "\(last)")

    let (fileSystem, store) = try prepared()
    let expected = try Self.contents(store)
    fileSystem.inject(.init(call: probe.calls, errorNumber: EIO, persistent: false))
    let error = #expect(throws: LogStoreError.self) { try store.backup(to: Self.faultBackup) }
    #expect(error?.code == .io)
    #expect(fileSystem.directoryExists(Self.faultBackup))
    #expect(try fileSystem.contentsOfDirectory(Self.faultBackup).isEmpty)
    #expect(try Self.names(in: "/data", fileSystem) == ["backup", "store"])
    // The store is as it was; the directory takes the next backup.
    #expect(try Self.contents(store) == expected)
    try store.backup(to: Self.faultBackup)
    #expect(
      try Self.contents(LogStore(path: Self.faultBackup, options: Self.options(fileSystem)))
        == expected)
  }

  @Test("a crash at any call of a backup leaves no copy, or a whole one, and the store as it was")
  func crashAtEveryCall() throws {
    let calls = try Self.backupCalls()
    var copies = 0
    // At sample depth each call crashes one of the four ways, in turn, and the first and the
    // last call all four.
    let modes: [SimulatedFileSystem.CrashMode] = [
      .process, .power(seed: 1), .power(seed: 2), .power(seed: 3),
    ]
    for call in calls {
      let isEdge = call == calls.lowerBound || call == calls.upperBound
      for (way, mode) in modes.enumerated()
      where TestDepth.runs(call + way, every: modes.count, isEdge: isEdge) {
        let fileSystem = SimulatedFileSystem()
        let store = try Self.faultStore(on: fileSystem)
        let expected = try Self.contents(store)
        fileSystem.crash(atCall: call, mode: mode)
        #expect(throws: LogStoreError.self) { try store.backup(to: Self.faultBackup) }
        let image = try #require(fileSystem.crashImage)
        let crashed = SimulatedFileSystem(files: image)
        let reopened = try LogStore(path: Self.faultPath, options: Self.options(crashed))
        #expect(try Self.contents(reopened) == expected, "call \(call), \(mode)")
        if crashed.directoryExists(Self.faultBackup) {
          let copy = try LogStore(path: Self.faultBackup, options: Self.options(crashed))
          #expect(try Self.contents(copy) == expected, "call \(call), \(mode)")
          #expect(copy.openReport.indexFile != nil, "call \(call), \(mode)")
          copies += 1
        }
      }
    }
    // The last call, the sync of the destination's parent, is the only one a crash at which
    // can leave the copy in place (when the rename reached the disk anyway).
    #expect(copies <= 4)
  }
}
