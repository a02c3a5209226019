import Foundation
import Testing

@testable import LogStore

@Suite("Concurrency and durability policies")
struct ConcurrencyTests {
  /// Runs `body(thread)` on `count` OS threads at once and waits for all of them.
  private func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    DispatchQueue.concurrentPerform(iterations: count, execute: body)
  }

  /// What one thread's deterministic mix of operations leaves in its key range.
  private static func expectedState(thread: Int, operations: Int) -> [String: String] {
    var model: [String: String] = [:]
    for step in 0..<operations {
      let key = "t\(thread)-\(step % 97)"
      switch step % 10 {
      case 0...5: model[key] = "v\(step)"
      case 6: model[key] = nil
      case 7:
        for offset in 0..<3 { model["t\(thread)-\((step + offset) % 97)"] = nil }
      default: break
      }
    }
    return model
  }

  private static func run(thread: Int, operations: Int, on store: LogStore) throws {
    for step in 0..<operations {
      let key = "t\(thread)-\(step % 97)"
      switch step % 10 {
      case 0...5:
        try store.put(Array("v\(step)".utf8), forKey: Array(key.utf8), in: "shared")
      case 6:
        try store.delete(key: Array(key.utf8), in: "shared")
      case 7:
        var batch = WriteBatch()
        for offset in 0..<3 {
          batch.delete(key: Array("t\(thread)-\((step + offset) % 97)".utf8), in: "shared")
        }
        try store.write(batch)
      default:
        // Reads of this thread's keys and another thread's, which must never fail.
        _ = try store.value(forKey: Array(key.utf8), in: "shared")
        _ = try store.value(forKey: Array("t\((thread + 1) % 8)-\(step % 97)".utf8), in: "shared")
      }
    }
  }

  private func mixedWorkload(sync: SyncPolicy, operations: Int) throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let store = try LogStore(
      path: path, options: .init(sync: sync, compaction: .manual, maxSegmentSize: 32 << 10))
    try store.createTable("shared")
    let failures = LockedCounter()
    onThreads(8) { thread in
      do {
        try Self.run(thread: thread, operations: operations, on: store)
      } catch {
        failures.add()
      }
    }
    #expect(failures.value == 0)
    var expected: [String: String] = [:]
    for thread in 0..<8 {
      expected.merge(Self.expectedState(thread: thread, operations: operations)) { $1 }
    }
    #expect(try store.snapshot()["shared"] == expected)
    try store.close()
    let reopened = try LogStore(path: path)
    #expect(try reopened.snapshot()["shared"] == expected)
  }

  @Test("eight threads of mixed operations leave exactly what each thread wrote")
  func eightThreads() throws {
    try mixedWorkload(sync: .never, operations: 3_000)
  }

  @Test("with sync always, eight threads of mixed operations leave exactly what each wrote")
  func eightThreadsSyncAlways() throws {
    try mixedWorkload(sync: .always, operations: 150)
  }

  @Test(
    "with sync always, concurrent writers share syncs, and each write is acknowledged only once a sync covers it"
  )
  func groupCommit() throws {
    let fileSystem = SimulatedFileSystem()
    var options = LogStore.Options(sync: .always, compaction: .manual, maxSegmentSize: 64 << 10)
    options.fileSystem = fileSystem
    let store = try LogStore(path: "/store", options: options)
    try store.createTable("t")
    // A sync that takes a millisecond, as a disk's does: writers arriving meanwhile queue
    // behind it, on any machine, however busy.
    fileSystem.dataSyncPause = 1_000
    let (threads, writesEach) = (8, 100)
    let syncsBefore = fileSystem.dataSyncs
    let problems = Guarded<[String]>([])
    runOnThreads(threads) { thread in
      for step in 0..<writesEach {
        // Unique bytes, found in the files only where this write is.
        let value = "<thread \(thread) write \(step)>"
        do {
          try store.put(value.bytes, forKey: "t\(thread)-\(step)".bytes, in: "t")
        } catch {
          problems.withLock { $0.append("\(value) threw \(error)") }
          continue
        }
        let synced = fileSystem.syncedFiles.filter { $0.key.hasSuffix(".log") }.values
        if !synced.contains(where: { Data($0).range(of: Data(value.utf8)) != nil }) {
          problems.withLock { $0.append("\(value) was acknowledged before a sync covered it") }
        }
      }
    }
    let syncs = fileSystem.dataSyncs - syncsBefore
    let writes = threads * writesEach
    let found = problems.withLock { $0 }
    #expect(found.isEmpty, "\(found.count) problems, first \(found.prefix(5))")
    // Alone, each writer would sync once per write; sharing, a sync carries several writes.
    #expect(
      syncs > 0 && syncs * 2 <= writes,
      "\(syncs) syncs for \(writes) writes: a sync carried \(Double(writes) / Double(syncs)) writes"
    )
    print("group commit: \(syncs) syncs for \(writes) writes")
    try store.close()
    let reopened = try LogStore(path: "/store", options: options)
    #expect(try reopened.count(in: "t") == writes)
    try reopened.close()
  }

  @Test("with a sync interval, writes are kept and the store closes cleanly")
  func intervalSync() throws {
    try mixedWorkload(sync: .interval(milliseconds: 5), operations: 1_000)
  }

  @Test("readers and compaction run alongside writers without errors")
  func readersWritersCompaction() throws {
    let directory = TemporaryDirectory()
    let store = try LogStore(
      path: directory.appending("store"),
      options: .init(compaction: .manual, maxSegmentSize: 16 << 10))
    try store.createTable("t")
    for index in 0..<500 {
      try store.put(Array("0".utf8), forKey: Array("k\(index)".utf8), in: "t")
    }
    let failures = LockedCounter()
    onThreads(4) { thread in
      do {
        for step in 0..<2_000 {
          let key = Array("k\(step % 500)".utf8)
          switch thread {
          case 0: try store.put(Array("\(step)".utf8), forKey: key, in: "t")
          case 1 where step % 400 == 0: try store.compact()
          default:
            // Every key always has some value: a reader must never see it missing.
            if try store.value(forKey: key, in: "t") == nil { failures.add() }
          }
        }
      } catch {
        failures.add()
      }
    }
    #expect(failures.value == 0)
    #expect(try store.count(in: "t") == 500)
  }

  @Test("readers, iteration, compaction and checkpoints run alongside writers over an index file")
  func readersWritersCheckpoints() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    var store = try LogStore(
      path: path, options: .init(compaction: .manual, maxSegmentSize: 16 << 10))
    try store.createTable("t")
    for index in 0..<500 {
      try store.put(Array("0".utf8), forKey: Array("k\(index)".utf8), in: "t")
    }
    // Opened from an index file, so that reads go through the mapped file and its overlay.
    try store.checkpoint()
    try store.close()
    store = try LogStore(path: path, options: .init(compaction: .manual, maxSegmentSize: 16 << 10))
    #expect(store.openReport.indexFile != nil)
    let failures = LockedCounter()
    onThreads(4) { [store] thread in
      do {
        for step in 0..<1_500 {
          let key = Array("k\(step % 500)".utf8)
          switch thread {
          case 0:
            try store.put(Array("\(step)".utf8), forKey: key, in: "t")
            // Deleted and put back at once: readers of other keys must not notice.
            if step % 50 == 0 {
              try store.delete(key: Array("extra".utf8), in: "t")
              try store.put(Array("x".utf8), forKey: Array("extra".utf8), in: "t")
            }
          case 1:
            if step % 300 == 0 { try store.compact() }
            if step % 200 == 100 { try store.checkpoint() }
          case 2:
            // Iteration sees every key, each with some value.
            if step % 100 == 0 {
              var count = 0
              try store.forEachEntry(in: "t") { key, _, _ in
                if key.starts(with: Array("k".utf8)) { count += 1 }
                return true
              }
              if count != 500 { failures.add() }
            }
          default:
            // Every key always has some value: a reader must never see it missing.
            if try store.value(forKey: key, in: "t") == nil { failures.add() }
            if try store.count(in: "t") < 500 { failures.add() }
          }
        }
      } catch {
        failures.add()
      }
    }
    #expect(failures.value == 0)
    #expect(try store.count(in: "t") == 501)
    try store.close()
    let reopened = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(try reopened.count(in: "t") == 501)
  }
}

/// A counter threads can bump.
final class LockedCounter: @unchecked Sendable {
  private let lock = NSLock()
  private var count = 0
  func add() { lock.withLock { count += 1 } }
  var value: Int { lock.withLock { count } }
}
