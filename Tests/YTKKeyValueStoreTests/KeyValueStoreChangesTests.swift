import Foundation
import LogStoreTesting
import Testing
import YTKKeyValueStore

@testable import LogStore

/// `changes(in:)`: one change per committed call, in commit order also between threads, only
/// for its table, nothing for calls that fail; the buffer's limit and the ends of a stream.
@Suite("KeyValueStore change streams")
struct KeyValueStoreChangesTests {
  private let directory = TemporaryDirectory("changes")
  private let table = "feed"

  /// The changes of `stream` until it ends, or the first `limit` of them.
  private static func collect(_ stream: AsyncStream<KeyValueChange>, limit: Int = .max) async
    -> [KeyValueChange]
  {
    var changes: [KeyValueChange] = []
    for await change in stream {
      changes.append(change)
      if changes.count == limit { break }
    }
    return changes
  }

  @Test(
    "every call that changes the table yields its change, in order; the stream ends after a drop")
  func everyKindInOrder() async throws {
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    try store.createTable(table)
    try store.createTable("other")
    try store.put(["before": true], id: "early", into: table)
    let stream = store.changes(in: table)
    try store.put(["n": 1], id: "a", into: table)
    try store.put(string: "s", id: "b", into: table)
    try store.put(number: 3, id: "c", into: "other")
    try store.put(["é": 1, "d": 2, "Z": 3], into: table)
    try store.put(encodable: ["x"], id: "e", into: table)
    try store.createTable(table)
    try store.delete(id: "missing", from: table)
    try store.delete(ids: ["a", "b", "a", "nowhere"], from: table)
    try store.delete(ids: [], from: table)
    try store.delete(prefix: "d", from: table)
    try store.clearTable(table)
    try store.dropTable(table)
    try store.createTable(table)
    try store.put(["after": true], id: "late", into: table)
    let changes = await Self.collect(stream)
    #expect(
      changes == [
        .put(id: "a"), .put(id: "b"), .put(id: "Z"), .put(id: "d"), .put(id: "é"), .put(id: "e"),
        .deleted(ids: ["missing"]), .deleted(ids: ["a", "b", "a", "nowhere"]), .deletedPrefix("d"),
        .cleared, .dropped,
      ])
  }

  @Test("a batch put yields its ids in the order of their bytes, whatever they share")
  func batchOrder() async throws {
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    try store.createTable(table)
    var random = SplitMix64(seed: 7)
    let pieces = ["", "user_", "user_0000", "\u{0}", "é", "中", "~", "a", "A", "user_0000\u{0}"]
    for round in 0..<20 {
      var objects: [String: JSONValue] = [:]
      let size = round < 2 ? round + 1 : Int(random.next() % 300) + 2
      while objects.count < size {
        var id = ""
        for _ in 0..<Int(random.next() % 4) {
          id += pieces[Int(random.next() % UInt64(pieces.count))]
        }
        if random.next() % 2 == 0 { id += String(random.next() % 1000) }
        objects[id] = .int(Int64(round))
      }
      let stream = store.changes(in: table)
      try store.put(objects, into: table)
      let expected = objects.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
      #expect(await Self.collect(stream, limit: expected.count) == expected.map { .put(id: $0) })
    }
  }

  @Test(
    "a stream sees only its table, and a table nobody watches reaches none; a batch's deletes in a row are one change"
  )
  func batchesAcrossTables() async throws {
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    try store.createTable("t1")
    try store.createTable("t2")
    try store.createTable("unwatched")
    let first = store.changes(in: "t1")
    let second = store.changes(in: "t2")
    var batch = WriteBatch()
    batch.put(Array("[1]".utf8), forKey: Array("a".utf8), in: "t1")
    batch.delete(key: Array("x".utf8), in: "t1")
    batch.delete(key: Array("y".utf8), in: "t1")
    batch.put(Array("[2]".utf8), forKey: Array("b".utf8), in: "t2")
    batch.put(Array("[3]".utf8), forKey: Array("c".utf8), in: "unwatched")
    batch.delete(key: Array("z".utf8), in: "t1")
    batch.deletePrefix(Array("p".utf8), in: "t2")
    batch.clearTable("t2")
    try store.logStore.write(batch)
    try store.dropTable("t1")
    try store.dropTable("t2")
    #expect(
      await Self.collect(first) == [
        .put(id: "a"), .deleted(ids: ["x", "y"]), .deleted(ids: ["z"]), .dropped,
      ])
    #expect(await Self.collect(second) == [.put(id: "b"), .deletedPrefix("p"), .cleared, .dropped])
  }

  @Test(
    "a stream of a table hears nothing of another whose name is equal as a string but not as bytes; a batch's deletes of the two in turn are a change each"
  )
  func equivalentTableNames() async throws {
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    // "café", its é precomposed (NFC) and decomposed (NFD): equal as `String`s.
    let (composed, decomposed) = ("caf\u{E9}", "cafe\u{301}")
    try store.createTable(composed)
    try store.createTable(decomposed)
    let first = store.changes(in: composed)
    let second = store.changes(in: decomposed)
    try store.put(["n": 1], id: "a", into: composed)
    try store.put(["n": 2], id: "b", into: decomposed)
    var batch = WriteBatch()
    batch.delete(key: Array("x".utf8), in: composed)
    batch.delete(key: Array("y".utf8), in: decomposed)
    batch.delete(key: Array("z".utf8), in: composed)
    try store.logStore.write(batch)
    try store.delete(prefix: "p", from: decomposed)
    try store.clearTable(composed)
    try store.dropTable(decomposed)
    try store.put(["n": 3], id: "c", into: composed)
    try store.dropTable(composed)
    #expect(
      await Self.collect(first) == [
        .put(id: "a"), .deleted(ids: ["x"]), .deleted(ids: ["z"]), .cleared, .put(id: "c"),
        .dropped,
      ])
    #expect(
      await Self.collect(second) == [
        .put(id: "b"), .deleted(ids: ["y"]), .deletedPrefix("p"), .dropped,
      ])
  }

  @Test("calls that fail yield nothing; a stream sees only changes made after it was created")
  func failuresYieldNothing() async throws {
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    let stream = store.changes(in: table)
    #expect(throws: KeyValueStoreError.self) { try store.put(["n": 1], id: "a", into: table) }
    try store.createTable(table)
    let tooLong = String(repeating: "i", count: KeyValueStore.maxIDLength + 1)
    #expect(throws: KeyValueStoreError.self) { try store.put(1, id: tooLong, into: table) }
    #expect(throws: KeyValueStoreError.self) {
      try store.put(["ok": 1, tooLong: 2], into: table)
    }
    #expect(throws: KeyValueStoreError.self) { try store.put(.double(.nan), id: "n", into: table) }
    try store.put(1, id: "first", into: table)
    let later = store.changes(in: table)
    try store.put(2, id: "second", into: table)
    #expect(await Self.collect(stream, limit: 2) == [.put(id: "first"), .put(id: "second")])
    #expect(await Self.collect(later, limit: 1) == [.put(id: "second")])
  }

  @Test(
    "between threads the stream's order is the commit order: replayed, it gives each state the store went through",
    arguments: [SyncPolicy.never, .always])
  func commitOrderAcrossThreads(sync: SyncPolicy) async throws {
    let store = try KeyValueStore(path: directory.storePath, options: StoreOptions(sync: sync))
    defer { try? store.close() }
    try store.createTable(table)
    let stream = store.changes(in: table)
    // Rounds of four threads changing two ids at once; between rounds, the ids' state is
    // recorded and a marker put, so that the stream, replayed, must give each recorded state
    // at its marker. Writers at once share group commits (sync .always), whose changes must
    // be yielded in the order they apply.
    let rounds = 60
    var states: [[String: Bool]] = []
    for round in 0..<rounds {
      let failures = Locked<[String]>([])
      runOnThreads(4) { thread in
        do {
          try Self.changeRandomly(store, seed: UInt64(round * 4 + thread + 1), calls: 4)
        } catch {
          failures.withLock { $0.append("thread \(thread) threw \(error)") }
        }
      }
      #expect(failures.value.isEmpty)
      var state: [String: Bool] = [:]
      for id in ["k0", "k1"] { state[id] = try store.object(id: id, from: table) != nil }
      states.append(state)
      try store.put(true, id: "marker", into: table)
    }
    var replayed: [String: Bool] = ["k0": false, "k1": false]
    var round = 0
    for await change in stream {
      switch change {
      case .put("marker"):
        #expect(replayed == states[round], "round \(round)")
        round += 1
      case .put(let id): replayed[id] = true
      case .deleted(let ids): for id in ids { replayed[id] = false }
      default: Issue.record("unexpected \(change)")
      }
      if round == rounds { break }
    }
  }

  @Test("a consumer that falls behind gets the buffered changes, then the end; writers go on")
  func slowConsumer() async throws {
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    try store.createTable(table)
    let stream = store.changes(in: table)
    let limit = KeyValueStore.changeBufferLimit
    for index in 0..<(limit + 10) { try store.put(number: index, id: "\(index)", into: table) }
    let changes = await Self.collect(stream)
    #expect(changes.count == limit)
    #expect(changes.first == .put(id: "0"))
    #expect(changes.last == .put(id: "\(limit - 1)"))
    // A new stream starts afresh.
    let again = store.changes(in: table)
    try store.delete(id: "0", from: table)
    #expect(await Self.collect(again, limit: 1) == [.deleted(ids: ["0"])])
  }

  @Test(
    "a stream ends at a drop inside a batch: nothing of the batch after it, though the table is made again there"
  )
  func dropInsideBatch() async throws {
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    try store.createTable(table)
    let stream = store.changes(in: table)
    var batch = WriteBatch()
    batch.put(Array("[1]".utf8), forKey: Array("before".utf8), in: table)
    batch.dropTable(table)
    batch.createTable(table)
    batch.put(Array("[2]".utf8), forKey: Array("after".utf8), in: table)
    batch.delete(key: Array("after".utf8), in: table)
    try store.logStore.write(batch)
    #expect(await Self.collect(stream) == [.put(id: "before"), .dropped])
  }

  @Test(
    "a consumer that falls behind in the middle of a batch gets what came before, then the end: never a later id of the batch"
  )
  func fallsBehindInsideBatch() async throws {
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    try store.createTable(table)
    let limit = KeyValueStore.changeBufferLimit
    // Ids whose byte order is their number's, so that the batch's order is known.
    let ids = (0..<3 * limit).map { "id\(String(1_000_000 + $0))" }
    var objects: [String: JSONValue] = [:]
    for id in ids { objects[id] = 1 }
    // Rounds until one where the consumer took some changes while the batch was delivered,
    // after the buffer had filled: it then had room again before the batch ended.
    for round in 0..<20 {
      let stream = store.changes(in: table)
      // A consumer that reads more slowly than a batch is delivered, from the first change on.
      let started = Locked(false)
      let consumer = Task.detached { () -> [KeyValueChange] in
        var seen: [KeyValueChange] = []
        for await change in stream {
          started.withLock { $0 = true }
          seen.append(change)
          let until = DispatchTime.now().uptimeNanoseconds + 20_000
          while DispatchTime.now().uptimeNanoseconds < until {}
        }
        return seen
      }
      try store.put(["first": 1], into: table)
      while !started.value { await Task.yield() }
      try store.put(objects, into: table)
      // The end of the stream, had it kept up.
      try store.dropTable(table)
      try store.createTable(table)
      let seen = await consumer.value
      let expected = [KeyValueChange.put(id: "first")] + ids.map { .put(id: $0) } + [.dropped]
      // Whatever the stream delivered is the start of what was committed, with no gap.
      let gap = seen.indices.first { $0 >= expected.count || seen[$0] != expected[$0] }
      let shown = gap.map {
        "after \($0) changes, \(seen[$0]), not \(String(describing: expected.dropFirst($0).first))"
      }
      #expect(gap == nil, "round \(round): \(shown ?? "")")
      if seen.last != .dropped { break }
    }
  }

  @Test("closing the store ends its streams; a stream asked for after close is empty")
  func closeEndsStreams() async throws {
    let store = try KeyValueStore(path: directory.storePath)
    try store.createTable(table)
    let stream = store.changes(in: table)
    try store.put(1, id: "a", into: table)
    try store.close()
    #expect(await Self.collect(stream) == [.put(id: "a")])
    #expect(await Self.collect(store.changes(in: table)).isEmpty)
  }

  @Test("a consumer whose task is cancelled is unsubscribed; the others go on")
  func cancelledConsumer() async throws {
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    try store.createTable(table)
    let cancelled = store.changes(in: table)
    let kept = store.changes(in: table)
    let consumer = Task { await Self.collect(cancelled) }
    try store.put(1, id: "a", into: table)
    consumer.cancel()
    let seen = await consumer.value
    #expect(seen.count <= 1)
    try store.put(2, id: "b", into: table)
    #expect(await Self.collect(kept, limit: 2) == [.put(id: "a"), .put(id: "b")])
  }

  /// Puts and deletes of ids `k0` and `k1`, one at a time and in batches.
  private static func changeRandomly(_ store: KeyValueStore, seed: UInt64, calls: Int) throws {
    let table = "feed"
    var random = SplitMix64(seed: seed)
    for call in 0..<calls {
      let id = "k\(random.next() % 2)"
      let other = "k\(random.next() % 2)"
      switch random.next() % 4 {
      case 0: try store.delete(id: id, from: table)
      case 1: try store.delete(ids: [id, other], from: table)
      case 2: try store.put(["k0": .int(Int64(call)), "k1": .int(Int64(call))], into: table)
      default: try store.put(.int(Int64(call)), id: id, into: table)
      }
    }
  }
  @Test(
    "in .manyProcesses use, another process's puts arrive in commit order without a call of this one"
  )
  func otherProcessesChanges() async throws {
    let worker = try #require(builtExecutable(named: "ytkkv-sharing-worker"))
    var options = StoreOptions()
    options.sharing = .manyProcesses
    let store = try KeyValueStore(path: directory.storePath, options: options)
    defer { try? store.close() }
    try store.createTable("t")
    let stream = store.changes(in: "t")
    let count = 200
    let child = try ChildProcess(worker, ["timed", directory.storePath, "\(count)", "5"])
    // Each change with how long after its put it arrived, in microseconds.
    var arrived: [(id: String, delay: Int64)] = []
    for await change in stream {
      guard case .put(let id) = change else {
        Issue.record("unexpected change \(change)")
        break
      }
      let put = Int64(id.split(separator: "@").last!)!
      arrived.append((id, Int64(Date().timeIntervalSince1970 * 1_000_000) - put))
      if arrived.count == count { break }
    }
    let ending = try child.waitUntilExit()
    #expect(ending.succeeded, "\(ending.summary)")
    #expect(arrived.map { $0.id.split(separator: "@").first! } == (0..<count).map { "\($0)"[...] })
    // How long they took is the concurrency runtime's as much as the store's here (the tests
    // that run beside this one keep its threads busy): the delivery itself is timed with the
    // commit observer, on the store's own thread (`ManyProcessesTests`).
    let delays = arrived.map(\.delay).sorted()
    print(
      "changes of another process, through a stream: median \(delays[delays.count / 2] / 1000) ms, "
        + "99th percentile \(delays[delays.count * 99 / 100] / 1000) ms")
  }
  @Test(
    "in .manyProcesses use, a stream gets nothing committed before it was asked for: neither another open's changes this one had not caught up on, nor its own writes that left catching up for later"
  )
  func otherProcessesEarlierChanges() async throws {
    var options = StoreOptions(compaction: .manual)
    options.sharing = .manyProcesses
    let store = try KeyValueStore(path: directory.storePath, options: options)
    defer { try? store.close() }
    let other = try KeyValueStore(path: directory.storePath, options: options)
    defer { try? other.close() }
    try store.createTable("t")
    try store.createTable("u")
    _ = try other.count(in: "t")
    _ = try store.count(in: "t")
    // Before any stream: this open's writes after the other's put change no table, so they
    // leave catching up (with the other's put, and with themselves) for later.
    try other.put(["n": 0], id: "other", into: "t")
    try store.put(["n": 1], id: "before", into: "t")
    try store.delete(id: "gone", from: "t")
    let stream = store.changes(in: "t")
    try store.put(["n": 2], id: "after", into: "t")
    var iterator = stream.makeAsyncIterator()
    #expect(await iterator.next() == .put(id: "after"))
    // With streams: the other open drops a table and makes it again, and a stream of it is
    // asked for at once, before this open's watcher has looked. It does not end at that drop.
    try other.dropTable("u")
    try other.createTable("u")
    let again = store.changes(in: "u")
    try store.put(["n": 3], id: "later", into: "u")
    var second = again.makeAsyncIterator()
    #expect(await second.next() == .put(id: "later"))
  }

  @Test(
    "in .manyProcesses use, a stream ends where another process's changes could not be read in order; a new one goes on"
  )
  func otherProcessesGap() async throws {
    var options = StoreOptions(compaction: .manual, maxSegmentSize: 4 << 10)
    options.sharing = .manyProcesses
    let store = try KeyValueStore(path: directory.storePath, options: options)
    defer { try? store.close() }
    let other = try KeyValueStore(path: directory.storePath, options: options)
    defer { try? other.close() }
    try store.createTable("t")
    let stream = store.changes(in: "t")
    try other.put(["n": 0], id: "first", into: "t")
    var iterator = stream.makeAsyncIterator()
    #expect(await iterator.next() == .put(id: "first"))
    // This store cannot look while the other overwrites and compacts: the first of these puts
    // is gone from the log when it does.
    try store.logStore.engine.log.lock.withLock { () throws(LogStoreError) in
      for round in 0..<50 {
        try other.logStore.put(Array("[\(round)]".utf8), forKey: Array("k".utf8), in: "t")
      }
      try other.logStore.compact()
    }
    #expect(await iterator.next() == nil)
    let next = store.changes(in: "t")
    try other.put(["n": 1], id: "later", into: "t")
    #expect(await Self.collect(next, limit: 1) == [.put(id: "later")])
  }
}
