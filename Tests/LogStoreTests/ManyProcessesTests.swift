import Foundation
import Testing

@testable import LogStore

/// `.manyProcesses` within one process: each `LogStore` on the path is its own open, with its
/// own descriptor of the lock file, so two of them take the store's lock from each other as two
/// processes do.
@Suite("Many processes")
struct ManyProcessesTests {
  static func options(readOnly: Bool = false, maxSegmentSize: Int = 64 << 20) -> LogStore.Options {
    var options = LogStore.Options(
      readOnly: readOnly, compaction: .manual, maxSegmentSize: maxSegmentSize)
    options.sharing = .manyProcesses
    return options
  }

  @Test(
    "two writers see each other's puts, deletes, prefix deletes, batches and table changes at their next call"
  )
  func writersSeeEachOther() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let first = try LogStore(path: path, options: Self.options())
    let second = try LogStore(path: path, options: Self.options())
    try first.createTable("t")
    #expect(try second.tableExists("t"))
    try second.put("b".bytes, forKey: "k1".bytes, in: "t")
    #expect(try first.value(forKey: "k1".bytes, in: "t") == "b".bytes)
    try first.put("a".bytes, forKey: "k1".bytes, in: "t")
    try first.put("c".bytes, forKey: "p/1".bytes, in: "t")
    try first.put("d".bytes, forKey: "p/2".bytes, in: "t")
    #expect(try second.value(forKey: "k1".bytes, in: "t") == "a".bytes)
    #expect(try second.count(in: "t") == 3)
    try second.deletePrefix("p/".bytes, in: "t")
    #expect(try first.keys(in: "t") == ["k1".bytes])
    var batch = WriteBatch()
    batch.put("x".bytes, forKey: "b1".bytes, in: "t")
    batch.put("y".bytes, forKey: "b2".bytes, in: "t")
    batch.delete(key: "k1".bytes, in: "t")
    try first.write(batch)
    #expect(try second.snapshot() == ["t": ["b1": "x", "b2": "y"]])
    try second.createTable("u")
    try first.put("1".bytes, forKey: "k".bytes, in: "u")
    try second.dropTable("t")
    #expect(try first.tableNames() == ["u"])
    #expect(try first.snapshot() == second.snapshot())
    try first.close()
    try second.close()
    // Reopened in either mode, the store is what both wrote.
    let reopened = try LogStore(path: path)
    #expect(try reopened.snapshot() == ["u": ["k": "1"]])
    try reopened.close()
    let again = try LogStore(path: path, options: Self.options())
    #expect(try again.snapshot() == ["u": ["k": "1"]])
    try again.close()
  }

  @Test("writes that fill several segments are seen across rotations, by writers and by a follower")
  func acrossRotations() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let first = try LogStore(path: path, options: Self.options(maxSegmentSize: 4 << 10))
    let second = try LogStore(path: path, options: Self.options(maxSegmentSize: 4 << 10))
    try first.createTable("t")
    let follower = try LogStore(path: path, options: Self.options(readOnly: true))
    var expected: [String: String] = [:]
    for round in 0..<300 {
      let writer = round % 3 == 0 ? second : first
      let key = "k\(round % 70)"
      let value = String(repeating: "v\(round)", count: 10 + round % 20)
      try writer.put(value.bytes, forKey: key.bytes, in: "t")
      expected[key] = value
      if round % 7 == 0 {
        #expect(try follower.snapshot() == ["t": expected], "round \(round)")
        #expect(try (writer === first ? second : first).snapshot() == ["t": expected])
      }
    }
    #expect(try segmentFiles(in: path).count > 5)
    #expect(try follower.snapshot() == ["t": expected])
    #expect(try second.snapshot() == ["t": expected])
    let refused = #expect(throws: LogStoreError.self) {
      try follower.put([1], forKey: [1], in: "t")
    }
    #expect(refused?.code == .readOnly)
    try first.close()
    try second.close()
    #expect(try follower.snapshot() == ["t": expected])
    try follower.close()
    let reopened = try LogStore(path: path, options: .init(corruption: .fail))
    #expect(try reopened.snapshot() == ["t": expected])
    #expect(try LogStore.verify(path: path).problems.isEmpty)
    try reopened.close()
  }

  @Test(
    "a store in use in one mode refuses a writer's open in the other, saying which mode holds it")
  func modesRefuseEachOther() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let shared = try LogStore(path: path, options: Self.options())
    try shared.createTable("t")
    let refused = #expect(throws: LogStoreError.self) { try LogStore(path: path) }
    #expect(refused?.code == .locked)
    #expect(refused?.message.contains(".manyProcesses") == true)
    try shared.close()
    let single = try LogStore(path: path)
    try single.put("v".bytes, forKey: "k".bytes, in: "t")
    let refusedToo = #expect(throws: LogStoreError.self) {
      try LogStore(path: path, options: Self.options())
    }
    #expect(refusedToo?.code == .locked)
    #expect(refusedToo?.message.contains(".oneProcess") == true)
    try single.close()
    // Once nobody holds it, the store opens in the other mode with what the first wrote.
    let joined = try LogStore(path: path, options: Self.options())
    #expect(try joined.value(forKey: "k".bytes, in: "t") == "v".bytes)
    try joined.close()
  }

  @Test("a write that died before it published is cleared by the next writer and never comes back")
  func deadWriteIsCleared() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let first = try LogStore(path: path, options: Self.options())
    try first.createTable("t")
    try first.put("kept".bytes, forKey: "a".bytes, in: "t")
    // As a process killed inside a write leaves it: the file lock taken, the write marked in
    // progress and appended whole, nothing published.
    let engine = first.engine
    try engine.log.lock.withLock { () throws(LogStoreError) in
      try engine.sharing!.shared.lock.acquire()
      let active = engine.log.writer!
      engine.sharing!.shared.markDirty(segment: active.file.number, upTo: active.used)
      try "t".withUTF8Bytes { table throws(LogStoreError) in
        try "ghost".withUTF8Bytes { key throws(LogStoreError) in
          let put = Mutation.single(
            kind: .put, table: table, key: key, value: key, timestamp: .now(), expiry: nil)
          _ = try engine.log.append(put, length: try put.checkedLength())
        }
      }
      engine.sharing!.shared.lock.release()
    }
    let second = try LogStore(path: path, options: Self.options())
    #expect(try second.snapshot() == ["t": ["a": "kept"]])
    try second.put("after".bytes, forKey: "b".bytes, in: "t")
    try second.close()
    let reopened = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(try reopened.snapshot() == ["t": ["a": "kept", "b": "after"]])
  }

  @Test(
    "a compaction by one writer, while another writes and a follower reads, leaves all three the same store"
  )
  func compactionBesideOthers() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let compacting = try LogStore(path: path, options: Self.options(maxSegmentSize: 8 << 10))
    let writing = try LogStore(path: path, options: Self.options(maxSegmentSize: 8 << 10))
    try compacting.createTable("t")
    let follower = try LogStore(path: path, options: Self.options(readOnly: true))
    var expected: [String: String] = [:]
    for round in 0..<400 {
      let key = "k\(round % 50)"
      if round % 11 == 0 {
        try writing.delete(key: key.bytes, in: "t")
        expected[key] = nil
      } else {
        let value = String(repeating: "w\(round)", count: 8)
        try writing.put(value.bytes, forKey: key.bytes, in: "t")
        expected[key] = value
      }
    }
    let before = try segmentFiles(in: path).count
    var steps = 0
    try compacting.compact { _, _ in
      // Writes and reads of the others go on while the compaction copies.
      steps += 1
      do {
        let key = "during\(steps)"
        try writing.put("d".bytes, forKey: key.bytes, in: "t")
        expected[key] = "d"
        try writing.delete(key: "k1".bytes, in: "t")
        expected["k1"] = nil
        #expect(try follower.snapshot() == ["t": expected])
      } catch {
        Issue.record("\(error)")
      }
    }
    #expect(steps > 1)
    #expect(try segmentFiles(in: path).count < before)
    for store in [compacting, writing, follower] {
      #expect(try store.snapshot() == ["t": expected])
    }
    try writing.put("after".bytes, forKey: "k2".bytes, in: "t")
    expected["k2"] = "after"
    #expect(try compacting.snapshot() == ["t": expected])
    #expect(try follower.snapshot() == ["t": expected])
    try compacting.close()
    try writing.close()
    try follower.close()
    #expect(try LogStore.verify(path: path).problems.isEmpty)
    let reopened = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(try reopened.snapshot() == ["t": expected])
  }
}
