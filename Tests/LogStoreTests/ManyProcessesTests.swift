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

  /// Checks a store that every open has closed: `verify` finds nothing, and it opens
  /// read-only, refusing damage, with exactly `expected`.
  static func expectClosedStore(
    at path: String, holds expected: [String: [String: String]],
    sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    #expect(try LogStore.verify(path: path).problems.isEmpty, sourceLocation: sourceLocation)
    let reopened = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(try reopened.snapshot() == expected, sourceLocation: sourceLocation)
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

  @Test(
    "a table another open creates under a name equal as a string but not as bytes to a table of this open's is a table of its own, for writers and a follower, across a drop, a compaction and a reopen"
  )
  func equivalentTableNames() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let first = try LogStore(path: path, options: Self.options())
    let second = try LogStore(path: path, options: Self.options())
    let follower = try LogStore(path: path, options: Self.options(readOnly: true))
    // "café", its é precomposed (NFC) and decomposed (NFD): equal as `String`s.
    let (composed, decomposed) = ("caf\u{E9}", "cafe\u{301}")
    try first.createTable(composed)
    try first.put("first".bytes, forKey: "k".bytes, in: composed)
    // The other open's view holds the composed name: the creation is not taken for one that
    // changes nothing.
    try second.createTable(decomposed)
    try second.put("second".bytes, forKey: "k".bytes, in: decomposed)
    var expected: [[UInt8]: [[UInt8]: [UInt8]]] = [
      composed.bytes: ["k".bytes: "first".bytes], decomposed.bytes: ["k".bytes: "second".bytes],
    ]
    for store in [first, second, follower] {
      // In byte order: "cafe" before "caf\xC3".
      #expect(try store.tableNames().map(\.bytes) == [decomposed.bytes, composed.bytes])
      #expect(try store.tablesByBytes() == expected)
    }
    // Dropped by one open, one table is gone for every open, the other stays.
    try second.dropTable(composed)
    expected[composed.bytes] = nil
    for store in [first, second, follower] {
      #expect(try store.tableNames().map(\.bytes) == [decomposed.bytes])
      #expect(try !store.tableExists(composed))
      #expect(try store.tablesByBytes() == expected)
    }
    try first.createTable(composed)
    try second.put("again".bytes, forKey: "k".bytes, in: composed)
    expected[composed.bytes] = ["k".bytes: "again".bytes]
    try first.compact()
    for store in [first, second, follower] {
      #expect(try store.tablesByBytes() == expected)
    }
    try follower.close()
    try second.close()
    try first.close()
    #expect(try LogStore.verify(path: path).problems.isEmpty)
    let reopened = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(try reopened.tablesByBytes() == expected)
    try reopened.close()
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
    "opens with different segment sizes read and append past where the smaller one mapped the active segment, as the larger one grew it"
  )
  func differentSegmentSizes() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    // The first open makes segment 1, mapped 4 KiB long, and the follower maps it as long.
    let small = try LogStore(path: path, options: Self.options(maxSegmentSize: 4 << 10))
    try small.createTable("t")
    let follower = try LogStore(path: path, options: Self.options(readOnly: true))
    // The second takes segment 1 over as its active segment, with room for 1 MiB (as `ytkkv`,
    // with 64 MiB segments, does beside an app with smaller ones), and fills it past 4 KiB.
    let large = try LogStore(path: path, options: Self.options(maxSegmentSize: 1 << 20))
    var expected: [String: String] = [:]
    for index in 0..<100 {
      let value = String(repeating: "\(index % 10)", count: 100)
      try large.put(value.bytes, forKey: "k\(index)".bytes, in: "t")
      expected["k\(index)"] = value
    }
    #expect(try segmentFiles(in: path).count == 1)
    #expect(try small.snapshot() == ["t": expected])
    #expect(try follower.snapshot() == ["t": expected])
    // The smaller one appends to the grown segment too.
    try small.put("s".bytes, forKey: "s".bytes, in: "t")
    expected["s"] = "s"
    #expect(try segmentFiles(in: path).count == 1)
    #expect(try large.snapshot() == ["t": expected])
    #expect(try follower.snapshot() == ["t": expected])
    try follower.close()
    try small.close()
    try large.close()
    try Self.expectClosedStore(at: path, holds: ["t": expected])
  }

  @Test(
    "a write of an open with smaller segments, right after another open grew the active segment past its mapping, appends to that segment: no segment is sealed without its ending mark"
  )
  func smallerSegmentsWriteAfterGrowth() throws {
    let fileSystem = SimulatedFileSystem()
    var smallOptions = Self.options(maxSegmentSize: 4 << 10)
    smallOptions.fileSystem = fileSystem
    var largeOptions = Self.options(maxSegmentSize: 1 << 20)
    largeOptions.fileSystem = fileSystem.process(77)
    let small = try LogStore(path: "/store", options: smallOptions)
    try small.createTable("t")
    let large = try LogStore(path: "/store", options: largeOptions)
    for index in 0..<100 {
      try large.put(Array(repeating: UInt8(index), count: 100), forKey: "k\(index)".bytes, in: "t")
    }
    // Its first call since is a write (which defers catching up on puts of others).
    try small.put("s".bytes, forKey: "s".bytes, in: "t")
    let segments = try fileSystem.contentsOfDirectory("/store").filter { $0.hasSuffix(".log") }
    #expect(segments == ["000001.log"])
    try large.close()
    try small.close()
    // Nothing read, written or handed back past a mapping.
    #expect(fileSystem.mappingViolations.isEmpty)
    let report = try LogStore.verify(path: "/store", fileSystem: fileSystem)
    #expect(report.problems.isEmpty, "\(report.problems.prefix(3))")
    var reopenOptions = LogStore.Options(readOnly: true, corruption: .fail)
    reopenOptions.fileSystem = fileSystem
    let reopened = try LogStore(path: "/store", options: reopenOptions)
    #expect(try reopened.count(in: "t") == 101)
    #expect(try reopened.value(forKey: "s".bytes, in: "t") == "s".bytes)
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

  @Test(
    "a follower beside a .oneProcess writer, which opens beside it and makes the shared state fresh, keeps its view, then sees every write once a writer publishes: the count never comes back to one it saw"
  )
  func followerBesideOneProcessWriter() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    func publications() throws -> UInt64 {
      let bytes = try fileBytes(path + "/" + SharedState.fileName)
      return bytes.withUnsafeBytes {
        loadLittleEndian(UInt64.self, $0.baseAddress! + SharedState.publicationsOffset)
      }
    }
    let writer = try LogStore(path: path, options: Self.options())
    try writer.createTable("t")
    try writer.put("1".bytes, forKey: "k".bytes, in: "t")
    let follower = try LogStore(path: path, options: Self.options(readOnly: true))
    #expect(try follower.value(forKey: "k".bytes, in: "t") == "1".bytes)
    let seen = try publications()
    try writer.close()
    // A follower is not listed and holds nothing: a `.oneProcess` writer (`ytkkv`'s, here) may
    // open.
    #expect(LogStore.sharingInUse(at: path) == nil)
    let single = try LogStore(path: path)
    try single.put("2".bytes, forKey: "k".bytes, in: "t")
    try single.put("s".bytes, forKey: "s".bytes, in: "t")
    #expect(try follower.snapshot() == ["t": ["k": "1"]])
    try single.close()
    // Writes of the next `.manyProcesses` writer, up to the count the follower saw, if the
    // count started again from zero.
    let again = try LogStore(path: path, options: Self.options())
    try again.put("3".bytes, forKey: "k".bytes, in: "t")
    var filler = 0
    while try publications() < seen {
      try again.put("f".bytes, forKey: "f\(filler)".bytes, in: "t")
      filler += 1
    }
    #expect(try follower.value(forKey: "k".bytes, in: "t") == "3".bytes)
    #expect(try follower.snapshot() == again.snapshot())
    try again.close()
    try follower.close()
  }

  /// Reads `key` of table "t" through `follower` until it is `expected`, for up to a second: a
  /// follower without a shared state looks for one at most every 50 ms.
  static func followerReads(
    _ expected: String, forKey key: String, through follower: LogStore
  ) throws -> Bool {
    for _ in 0..<100 {
      if try follower.value(forKey: key.bytes, in: "t") == expected.bytes { return true }
      usleep(10_000)
    }
    return false
  }

  @Test(
    "a follower that opened before anyone published hears, at its first catch-up, the changes since the view its open read from the files; a gap where a compaction took them out of the log",
    arguments: [false, true], [false, true])
  func followerOpenedWithoutCommit(compacted: Bool, pausing: Bool) throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    // Written by a `.oneProcess` writer, which leaves no commit behind.
    let first = try LogStore(path: path, options: .init(compaction: .manual))
    try first.createTable("t")
    try first.put("1".bytes, forKey: "a".bytes, in: "t")
    try first.close()
    let follower = try LogStore(path: path, options: Self.options(readOnly: true))
    #expect(try follower.snapshot() == ["t": ["a": "1"]])
    let heard = Self.observe(follower)
    let writer = try LogStore(path: path, options: Self.options())
    try writer.put("2".bytes, forKey: "b".bytes, in: "t")
    try writer.delete(key: "a".bytes, in: "t")
    if compacted { try writer.compact() }
    // Pausing: the follower reads, and so catches up, between the compaction and the last put.
    if pausing { #expect(try Self.followerReads("2", forKey: "b", through: follower)) }
    try writer.put("3".bytes, forKey: "c".bytes, in: "t")
    #expect(try Self.followerReads("3", forKey: "c", through: follower))
    #expect(try follower.snapshot() == ["t": ["b": "2", "c": "3"]])
    // The follower catches up when it looks for the shared state (every 50 ms) and at its
    // reads, which the observer hears before they return: all of it is heard by now.
    let told = heard.withLock { $0 }
    let inOrder = ["put t b", "delete t a", "put t c"]
    if compacted {
      // A compaction's outputs hold what was live, numbered anew: nothing after the view can
      // be told in order from there. What a catch-up before the compaction heard comes first,
      // in order; the put after it is told in order only if a catch-up came between the two.
      let gap = told.firstIndex(of: "gap") ?? told.count
      #expect(gap < told.count && gap <= 2, "\(told)")
      #expect(Array(told[..<gap]) == Array(inOrder.prefix(gap)), "\(told)")
      let after = Array(told[min(gap + 1, told.count)...])
      #expect(pausing ? after == ["put t c"] : [[], ["put t c"]].contains(after), "\(told)")
    } else {
      #expect(told == inOrder)
    }
    try writer.close()
    try follower.close()
  }

  @Test(
    "a follower that opened on a directory with no segment yet hears a gap at its first catch-up: its view has no end to tell the changes from"
  )
  func followerOpenedOnNoSegment() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    let follower = try LogStore(path: path, options: Self.options(readOnly: true))
    #expect(try follower.tableNames() == [])
    let heard = Self.observe(follower)
    let writer = try LogStore(path: path, options: Self.options())
    try writer.createTable("t")
    try writer.put("1".bytes, forKey: "a".bytes, in: "t")
    // It looks for the shared state at most every 50 ms; until it finds it, it has no table.
    try waitUntil("the follower to read the put", seconds: 5) {
      (try? follower.value(forKey: "a".bytes, in: "t")) == "1".bytes
    }
    // The gap is told at the first catch-up, which the observer hears before the read returns;
    // a change after that catch-up is told in order (if the look fell between the writer's
    // calls).
    let told = heard.withLock { $0 }
    let after = Array(told.dropFirst())
    #expect(told.first == "gap", "\(told)")
    #expect(Array(["createTable t ", "put t a"].suffix(after.count)) == after, "\(told)")
    try writer.close()
    try follower.close()
  }

  @Test(
    "a follower that opened before anyone published, beside recover of an undamaged store: at the copy's first commit it hears just the change since its view (the copy's records keep their numbers, which the telling checks)"
  )
  func followerWithoutCommitBesideRecover() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let first = try LogStore(path: path, options: .init(compaction: .manual))
    try first.createTable("t")
    for round in 0..<20 { try first.put("\(round)".bytes, forKey: "k\(round)".bytes, in: "t") }
    try first.close()
    let follower = try LogStore(path: path, options: Self.options(readOnly: true))
    let heard = Self.observe(follower)
    _ = try LogStore.recover(path: path)
    let writer = try LogStore(path: path, options: Self.options())
    try writer.put("new".bytes, forKey: "k0".bytes, in: "t")
    #expect(try Self.followerReads("new", forKey: "k0", through: follower))
    #expect(try follower.snapshot() == writer.snapshot())
    #expect(Self.waitFor(1, in: heard) == ["put t k0"])
    try writer.close()
    try follower.close()
  }

  @Test(
    "a follower beside recover keeps its view, then reads the copy once a writer publishes there",
    arguments: [false, true])
  func followerBesideRecover(many: Bool) throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let writer = try LogStore(path: path, options: Self.options())
    try writer.createTable("t")
    // With many writes, the follower's commit is numbered past the copy's first ones.
    for round in 0..<(many ? 50 : 1) {
      try writer.put("\(round)".bytes, forKey: "k".bytes, in: "t")
    }
    try writer.put("gone".bytes, forKey: "g".bytes, in: "t")
    let follower = try LogStore(path: path, options: Self.options(readOnly: true))
    let old: [String: [String: String]] = ["t": ["k": many ? "49" : "0", "g": "gone"]]
    #expect(try follower.snapshot() == old)
    let heard = Self.observe(follower)
    let oldSignal = try Self.signalName(at: path)
    #expect(Self.signalWaitedOn(by: follower) == oldSignal)
    try writer.close()
    // Nobody is listed: recover (`ytkkv recover`'s) runs beside the follower.
    _ = try LogStore.recover(path: path)
    #expect(try follower.snapshot() == old)
    // Its change streams end: what lies between the store and its copy is in no log.
    #expect(Self.waitFor(1, in: heard) == ["gap"])
    let again = try LogStore(path: path, options: Self.options())
    try again.put("new".bytes, forKey: "k".bytes, in: "t")
    try again.delete(key: "g".bytes, in: "t")
    try again.put("more".bytes, forKey: "m".bytes, in: "t")
    #expect(try Self.followerReads("new", forKey: "k", through: follower))
    #expect(try follower.snapshot() == again.snapshot())
    // Its watcher of other processes' changes then waits on the copy's signal, which the
    // copy's writers post (on Darwin a name made from the directory's inode, which the copy
    // does not share; Linux posts no name, but the store makes it alike).
    let newSignal = try Self.signalName(at: path)
    #expect(newSignal != oldSignal)
    try waitUntil("the follower to wait on the copy's signal", seconds: 5) {
      Self.signalWaitedOn(by: follower) == newSignal
    }
    // And it follows on from there, at each call.
    try again.delete(key: "m".bytes, in: "t")
    #expect(try follower.snapshot() == ["t": ["k": "new"]])
    #expect(Self.waitFor(2, in: heard) == ["gap", "delete t m"])
    try again.close()
    try follower.close()
  }

  @Test(
    "recover of a store whose shared state is not of this boot retires it too: a follower mapping it follows the copy"
  )
  func followerBesideRecoverOfStaleState() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let writer = try LogStore(path: path, options: Self.options())
    try writer.createTable("t")
    try writer.put("old".bytes, forKey: "k".bytes, in: "t")
    let follower = try LogStore(path: path, options: Self.options(readOnly: true))
    #expect(try follower.snapshot() == ["t": ["k": "old"]])
    try writer.close()
    // The state names another boot (as after a restart the follower did not see, or a state
    // damaged): its header no longer checks, which recover meets before it retires it.
    let shared = try FileHandle(forUpdating: URL(fileURLWithPath: path + "/SHARED"))
    try shared.seek(toOffset: 12)
    try shared.write(contentsOf: [0xA5])
    try shared.close()
    _ = try LogStore.recover(path: path)
    let again = try LogStore(path: path, options: Self.options())
    try again.put("new".bytes, forKey: "k".bytes, in: "t")
    #expect(try Self.followerReads("new", forKey: "k", through: follower))
    #expect(try follower.snapshot() == again.snapshot())
    try again.close()
    try follower.close()
  }

  @Test(
    "a follower beside a .oneProcess writer's compaction keeps its view, then follows writers"
  )
  func followerBesideOfflineCompaction() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let writer = try LogStore(path: path, options: Self.options())
    try writer.createTable("t")
    for round in 0..<20 { try writer.put("\(round)".bytes, forKey: "k".bytes, in: "t") }
    try writer.put("gone".bytes, forKey: "g".bytes, in: "t")
    let follower = try LogStore(path: path, options: Self.options(readOnly: true))
    let old: [String: [String: String]] = ["t": ["k": "19", "g": "gone"]]
    #expect(try follower.snapshot() == old)
    try writer.close()
    let single = try LogStore(path: path, options: .init(compaction: .manual))
    try single.put("single".bytes, forKey: "k".bytes, in: "t")
    try single.delete(key: "g".bytes, in: "t")
    try single.compact()
    #expect(try follower.snapshot() == old)
    try single.close()
    let again = try LogStore(path: path, options: Self.options())
    try again.put("new".bytes, forKey: "m".bytes, in: "t")
    #expect(try Self.followerReads("new", forKey: "m", through: follower))
    #expect(try follower.snapshot() == ["t": ["k": "single", "m": "new"]])
    try again.close()
    try follower.close()
  }

  /// What a write does before it appends, for a test that then appends and dies (releasing the
  /// write lock without publishing): takes the write lock, catches up, and marks the write in
  /// progress. Unlike ``ProcessSharing/beginWrite(deferringCatchUp:)``, it leaves the open
  /// free to close. Call with the log's lock held.
  static func beginDyingWrite(_ engine: StoreEngine) throws(LogStoreError) {
    let sharing = engine.sharing!
    try sharing.shared.lock.acquire()
    try sharing.catchUpBeforeCommit(deferrable: false)
    let active = engine.log.writer!
    sharing.shared.markDirty(segment: active.file.number, upTo: active.used)
  }

  /// Sets `fileSystem` to run `body` once, as process `process` is about to rename a new
  /// index file into place (a checkpoint's last step), recording what `body` throws. Returns
  /// whether it ran, to read once the checkpoint is done.
  static func onceBeforeIndexFileRename(
    of process: Int, in fileSystem: SimulatedFileSystem,
    _ body: @escaping @Sendable () throws -> Void
  ) -> Guarded<Bool> {
    let ran = Guarded(false)
    fileSystem.callHook = { upcoming in
      guard upcoming.process == process, upcoming.operation == "rename",
        upcoming.path.hasSuffix(".index" + StoreFileName.temporarySuffix),
        !ran.withLock({ $0 })
      else { return }
      ran.withLock { $0 = true }
      do {
        try body()
      } catch {
        Issue.record("\(error)")
      }
    }
    return ran
  }

  /// Does what a write of `store` does first (``beginDyingWrite(_:)``) and appends a put to
  /// table `t` of each of `keys` (its value `value`, or the key's bytes), then stops: it
  /// neither publishes nor releases the write lock.
  static func appendUnpublished(_ store: LogStore, keys: [String], value: [UInt8]? = nil)
    throws(LogStoreError)
  {
    let engine = store.engine
    try engine.log.lock.withLock { () throws(LogStoreError) in
      try beginDyingWrite(engine)
      for key in keys {
        let bytes = value ?? Array(key.utf8)
        try "t".withUTF8Bytes { table throws(LogStoreError) in
          try key.withUTF8Bytes { key throws(LogStoreError) in
            try bytes.withBytes { value throws(LogStoreError) in
              let put = Mutation.single(
                kind: .put, table: table, key: key, value: value, timestamp: .now(), expiry: nil)
              _ = try engine.log.append(put, length: try put.checkedLength())
            }
          }
        }
      }
    }
  }

  /// Makes a store at `path` whose table `t` holds `a` = "kept", then leaves it as a process
  /// killed inside a write does: the write lock taken, the log caught up, the write (a put of
  /// `ghost`) marked in progress and appended whole, nothing published. Returns the open that
  /// made it, its lock released, for the caller to keep alive while it checks: its end would
  /// change the files, which a killed process does not.
  static func storeWithDeadWrite(at path: String) throws -> LogStore {
    let first = try LogStore(path: path, options: options())
    try first.createTable("t")
    try first.put("kept".bytes, forKey: "a".bytes, in: "t")
    try appendUnpublished(first, keys: ["ghost"])
    first.engine.sharing!.shared.lock.release()
    return first
  }

  /// Opens the store at `path`, whose table `t` holds `a` = "kept" and a dead write of
  /// `ghost`, and expects the open to have cleared the write: it reads only `a`, takes a put,
  /// and a read-only open that refuses damage reads both.
  static func expectDeadWriteCleared(at path: String) throws {
    let second = try LogStore(path: path, options: options())
    #expect(try second.snapshot() == ["t": ["a": "kept"]])
    try second.put("after".bytes, forKey: "b".bytes, in: "t")
    try second.close()
    let reopened = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(try reopened.snapshot() == ["t": ["a": "kept", "b": "after"]])
  }

  @Test("a write that died before it published is cleared by the next writer and never comes back")
  func deadWriteIsCleared() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    // The dying open stays open, as a killed process's files do.
    let first = try Self.storeWithDeadWrite(at: path)
    try withExtendedLifetime(first) { try Self.expectDeadWriteCleared(at: path) }
  }

  @Test(
    "an open that fails while it clears a dead write releases the store's locks: the next open, once the cause is gone, clears it and reads the store"
  )
  func openFailsClearingDeadWrite() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let first = try Self.storeWithDeadWrite(at: path)
    let active = first.engine.log.writer!.file.path
    // The segment to clear is away: the open fails, holding nothing after.
    try FileManager.default.moveItem(atPath: active, toPath: active + ".away")
    #expect(throws: LogStoreError.self) { try LogStore(path: path, options: Self.options()) }
    try FileManager.default.moveItem(atPath: active + ".away", toPath: active)
    try withExtendedLifetime(first) { try Self.expectDeadWriteCleared(at: path) }
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
    try Self.expectClosedStore(at: path, holds: ["t": expected])
  }

  @Test(
    "a compaction whose open reads its view anew while it copies (another writer rotated) keeps every key it listed from the index file"
  )
  func compactionAcrossViewReadAnew() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let compacting = try LogStore(path: path, options: Self.options(maxSegmentSize: 8 << 10))
    let writing = try LogStore(path: path, options: Self.options(maxSegmentSize: 8 << 10))
    try compacting.createTable("t")
    var expected: [String: String] = [:]
    // More keys than the 512 records judged at a time: the copy reports its progress between.
    for round in 0..<3000 {
      let key = "k\(round % 1000)"
      let value = String(repeating: "v\(round)", count: 6)
      try writing.put(value.bytes, forKey: key.bytes, in: "t")
      expected[key] = value
    }
    // The keys are the index file's: compaction lists them from it.
    try compacting.checkpoint()
    #expect(try compacting.statistics().indexMappedBytes > 0)
    var steps = 0
    try compacting.compact { _, _ in
      steps += 1
      do {
        // Enough to rotate the other writer's segment: the compacting open's next call reads
        // its view anew, index file included, while the compaction goes on.
        for index in 0..<100 {
          let key = "during\(steps)-\(index)"
          try writing.put(String(repeating: "d", count: 100).bytes, forKey: key.bytes, in: "t")
          expected[key] = String(repeating: "d", count: 100)
        }
        #expect(try compacting.value(forKey: "k7".bytes, in: "t") == expected["k7"]?.bytes)
      } catch {
        Issue.record("\(error)")
      }
    }
    #expect(steps > 2)
    for store in [compacting, writing] {
      #expect(try store.snapshot() == ["t": expected])
    }
    try compacting.close()
    try writing.close()
    try Self.expectClosedStore(at: path, holds: ["t": expected])
  }

  @Test("a write that died while other writers were open is cleared by the next one of them")
  func deadWriteBesideOpenWriters() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let dying = try LogStore(path: path, options: Self.options(maxSegmentSize: 8 << 10))
    let living = try LogStore(path: path, options: Self.options(maxSegmentSize: 8 << 10))
    try dying.createTable("t")
    var expected: [String: String] = [:]
    for index in 0..<30 {
      try living.put("v\(index)".bytes, forKey: "k\(index)".bytes, in: "t")
      expected["k\(index)"] = "v\(index)"
    }
    // The dying open takes the write lock and catches up (as every write does), appends
    // large records, whole, and publishes nothing.
    try Self.appendUnpublished(
      dying, keys: (0..<3).map { "ghost\($0)" }, value: [UInt8](repeating: 7, count: 900))
    dying.engine.sharing!.shared.lock.release()
    for index in 0..<200 {
      try living.put("w\(index)".bytes, forKey: "k\(index % 40)".bytes, in: "t")
      expected["k\(index % 40)"] = "w\(index)"
    }
    try living.compact()
    #expect(try living.snapshot() == ["t": expected])
    let third = try LogStore(path: path, options: Self.options(readOnly: true))
    #expect(try third.snapshot() == ["t": expected])
    try living.close()
    try third.close()
    let reopened = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(try reopened.snapshot() == ["t": expected])
  }

  @Test(
    "writer processes killed and stopped at random beside followers, the tool's reads and compactions: nothing acknowledged is lost, no follower sees a value go back"
  )
  func processesAtOnce() throws {
    let worker = try #require(builtExecutable(named: "ytkkv-sharing-worker"))
    let tool = try #require(builtExecutable(named: "ytkkv"))
    let directory = TemporaryDirectory("sharing")
    let path = directory.appending("store")
    var random = SeededGenerator(seed: 20_261_202)
    var nextID = 0
    // Of each four writers: one compacts every 150 operations, one syncs every 5 ms and writes
    // an index file every 200 operations, one syncs every write.
    func startWriter() throws -> (id: Int, process: ChildProcess) {
      let id = nextID
      nextID += 1
      var arguments = ["writer", path, "\(id)"]
      if id % 4 == 0 { arguments += ["--compact-every", "150"] }
      if id % 4 == 1 { arguments += ["--interval", "5", "--checkpoint-every", "200"] }
      if id % 4 == 3 { arguments += ["--always"] }
      return (id, try ChildProcess(worker, arguments))
    }
    // The store exists before the followers start: a read-only open of none is refused.
    try LogStore(path: path, options: Self.options()).close()
    var writers = try (0..<4).map { _ in try startWriter() }
    let followers = try (0..<2).map { _ in try ChildProcess(worker, ["follower", path]) }
    var ended: [(id: Int, acknowledged: Int)] = []
    var kills = 0
    var stops = 0
    for _ in 0..<TestDepth.choose(sample: 15, full: 30) {
      usleep(UInt32(60_000 + random.next() % 120_000))
      // Every other round a writer or follower is stopped for 5-45 ms, wherever it is: between
      // calls, or inside a write, holding the store's lock (the others' writes wait for it).
      if random.next() % 2 == 0 {
        let everyone = writers.map(\.process) + followers
        let stopped = everyone[Int(random.next() % UInt64(everyone.count))]
        stopped.send(SIGSTOP)
        usleep(UInt32(5_000 + random.next() % 40_000))
        stopped.send(SIGCONT)
        stops += 1
      }
      // The tool's read commands beside them: they open the store as its processes use it.
      let command = [["dump", path], ["get", path, "t", "shared/0"], ["tables", path]][
        Int(random.next() % 3)]
      let read = try ChildProcess(tool, command).waitUntilExit()
      #expect(
        read.succeeded || (command[0] == "get" && read.reason == .exit && read.status == 1),
        "ytkkv \(command[0]): \(read.summary): \(read.standardError.prefix(300))")
      do {
        let victim = Int(random.next() % UInt64(writers.count))
        let (id, process) = writers[victim]
        process.send(SIGKILL)
        let ending = try process.waitUntilExit()
        // Killed by the test, not ended by a trap or a failure of its own.
        #expect(
          ending.reason == .uncaughtSignal && ending.status == SIGKILL,
          "writer \(id) ended by \(ending.summary): \(ending.standardError.prefix(1200))")
        ended.append((id, lastAcknowledged(ending.standardOutput)))
        writers[victim] = try startWriter()
        kills += 1
      }
    }
    for (id, process) in writers {
      process.send(SIGKILL)
      let ending = try process.waitUntilExit()
      #expect(
        ending.reason == .uncaughtSignal && ending.status == SIGKILL,
        "writer \(id) ended by \(ending.summary): \(ending.standardError.prefix(1200))")
      ended.append((id, lastAcknowledged(ending.standardOutput)))
    }
    for follower in followers {
      let running = follower.isRunning
      #expect(follower.standardOutput.count > 5, "a follower barely read")
      follower.send(SIGKILL)
      let ending = try follower.waitUntilExit()
      #expect(running, "a follower stopped: \(ending.standardError.prefix(400))")
    }
    #expect(ended.map(\.acknowledged).reduce(0, +) > 4 * 100, "the writers barely ran")

    // Every writer's own ids hold exactly its acknowledged operations, or the one in flight.
    let store = try LogStore(path: path, options: .init(corruption: .fail, compaction: .manual))
    let found = try store.snapshot()["t"] ?? [:]
    for (id, acknowledged) in ended {
      func writes(_ number: Int) -> Bool {
        number > 0 && !(id % 4 == 0 && number % 150 == 0) && !(id % 4 == 1 && number % 200 == 0)
      }
      for slot in 0..<40 {
        let last = stride(from: acknowledged, through: 1, by: -1).first {
          $0 % 40 == slot && writes($0)
        }
        var allowed: Set<String?> = [last.map { "\($0)" }]
        let inFlight = acknowledged + 1
        if inFlight % 40 == slot && writes(inFlight) { allowed.insert("\(inFlight)") }
        let value = found["w\(id)/\(slot)"]
        #expect(
          allowed.contains(value),
          "writer \(id) slot \(slot): \(value ?? "none"), \(acknowledged) acknowledged")
      }
    }
    // A shared id holds a value some writer wrote to it, acknowledged or in flight.
    let acknowledgedBy = Dictionary(uniqueKeysWithValues: ended.map { ($0.id, $0.acknowledged) })
    for slot in 0..<8 {
      guard let value = found["shared/\(slot)"] else { continue }
      let parts = value.split(separator: ":").compactMap { Int($0) }
      #expect(
        parts.count == 2 && parts[1] % 8 == slot
          && parts[1] <= (acknowledgedBy[parts[0]] ?? -1) + 1,
        "shared/\(slot) holds \(value)")
    }
    try store.close()
    let report = try LogStore.verify(path: path)
    #expect(report.problems.isEmpty, "verify: \(report.problems.prefix(5))")
    print(
      "many processes, \(TestDepth.current): \(nextID) writers, \(kills) kills, \(stops) stops")
  }

  @Test(
    "recover refuses a store that opens in .manyProcesses use have open, and runs once they close")
  func recoverRefusesSharedUse() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let writer = try LogStore(path: path, options: Self.options())
    try writer.createTable("t")
    try writer.put("v".bytes, forKey: "k".bytes, in: "t")
    #expect(LogStore.sharingInUse(at: path) == .manyProcesses)
    let refused = #expect(throws: LogStoreError.self) { try LogStore.recover(path: path) }
    #expect(refused?.code == .locked)
    #expect(try writer.value(forKey: "k".bytes, in: "t") == "v".bytes)
    try writer.close()
    #expect(LogStore.sharingInUse(at: path) == nil)
    _ = try LogStore.recover(path: path)
    let reopened = try LogStore(path: path)
    #expect(LogStore.sharingInUse(at: path) == .oneProcess)
    #expect(try reopened.snapshot() == ["t": ["k": "v"]])
    try reopened.close()
  }

  /// The name of the signal of the store directory at `path` (``SystemCommitSignal``).
  static func signalName(at path: String) throws -> String? {
    (try SystemFileSystem().commitSignal(for: path) as? SystemCommitSignal)?.name
  }

  /// The name of the signal `store`'s watcher of other processes' changes waits on.
  static func signalWaitedOn(by store: LogStore) -> String? {
    store.engine.log.lock.withLock {
      (store.engine.sharing?.signal as? SystemCommitSignal)?.name
    }
  }

  /// Has `store`'s commit observer write each operation it hears of, as "kind table key", or
  /// "gap", into the returned list.
  static func observe(_ store: LogStore) -> Guarded<[String]> {
    let heard = Guarded<[String]>([])
    store.observeCommits { change in
      var operations: [String] = []
      if change.missesChanges { operations.append("gap") }
      change.forEachOperation { kind, table, key in
        operations.append(
          "\(kind) \(String(decoding: table, as: UTF8.self)) \(String(decoding: key, as: UTF8.self))"
        )
      }
      heard.withLock { $0 += operations }
    }
    return heard
  }

  /// Waits up to 5 s for `heard` to hold `count` operations; returns them.
  static func waitFor(_ count: Int, in heard: Guarded<[String]>) -> [String] {
    var waited = 0
    while heard.withLock({ $0.count }) < count && waited < 5_000 {
      usleep(1000)
      waited += 1
    }
    return heard.withLock { $0 }
  }

  @Test(
    "the commit observer hears of every change another open commits, in commit order, across rotations, without a call"
  )
  func observerHearsOtherProcesses() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let watching = try LogStore(path: path, options: Self.options(maxSegmentSize: 4 << 10))
    let writing = try LogStore(path: path, options: Self.options(maxSegmentSize: 4 << 10))
    let follower = try LogStore(path: path, options: Self.options(readOnly: true))
    let heard = Self.observe(watching)
    let followed = Self.observe(follower)
    var expected: [String] = []
    try writing.createTable("t")
    expected.append("createTable t ")
    // Enough puts to fill several segments, while the watcher cannot look (it waits for its
    // store's lock): it reads them through a reload, from the segments' records. The follower
    // may see them one by one.
    try watching.engine.log.lock.withLock { () throws(LogStoreError) in
      for index in 0..<150 {
        try writing.put(Array(repeating: 7, count: 60), forKey: "k\(index)".bytes, in: "t")
        expected.append("put t k\(index)")
      }
    }
    try watching.put("own".bytes, forKey: "mine".bytes, in: "t")
    expected.append("put t mine")
    var batch = WriteBatch()
    batch.put("x".bytes, forKey: "b1".bytes, in: "t")
    batch.delete(key: "k1".bytes, in: "t")
    try writing.write(batch)
    expected += ["put t b1", "delete t k1"]
    try writing.delete(key: "k2".bytes, in: "t")
    try writing.deletePrefix("k3".bytes, in: "t")
    try writing.createTable("u")
    try writing.clearTable("t")
    try writing.dropTable("u")
    expected += [
      "delete t k2", "deletePrefix t k3", "createTable u ", "clearTable t ", "dropTable u ",
    ]
    #expect(Self.waitFor(expected.count, in: heard) == expected)
    // A follower hears the same, its own write aside.
    let others = expected.filter { $0 != "put t mine" }
    #expect(Self.waitFor(others.count + 1, in: followed) == expected)
    try writing.close()
    try watching.close()
    try follower.close()
  }

  @Test(
    "another process's puts reach the commit observer in order, without a call, within milliseconds"
  )
  func observerHearsOtherProcessSoon() throws {
    let worker = try #require(builtExecutable(named: "ytkkv-sharing-worker"))
    let directory = TemporaryDirectory("sharing")
    let path = directory.appending("store")
    let store = try LogStore(path: path, options: Self.options())
    try store.createTable("t")
    // Each put with how long after the other process made it it was heard, in microseconds.
    let heard = Guarded<[(key: String, delay: Int64)]>([])
    store.observeCommits { change in
      let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
      change.forEachOperation { kind, _, key in
        guard kind == .put else { return }
        let key = String(decoding: key, as: UTF8.self)
        heard.withLock { $0.append((key, now - Int64(key.split(separator: "@").last!)!)) }
      }
    }
    let count = 300
    let child = try ChildProcess(worker, ["timed", path, "\(count)", "3"])
    let ending = try child.waitUntilExit()
    #expect(ending.succeeded, "\(ending.summary): \(ending.standardError)")
    try waitUntil("the last put to be heard", seconds: 10) { heard.withLock { $0.count } >= count }
    let puts = heard.withLock { $0 }
    #expect(puts.map { $0.key.split(separator: "@").first! } == (0..<count).map { "\($0)"[...] })
    let delays = puts.map(\.delay).sorted()
    let p99 = delays[delays.count * 99 / 100]
    print(
      "commit observer, another process's puts: median \(delays[delays.count / 2]) µs, "
        + "99th percentile \(p99) µs, slowest \(delays.last!) µs")
    // The target (50 ms at the 99th percentile) is measured alone, not under the load of the
    // tests beside this one; here, that none waits for a call of this process.
    #expect(p99 < 1_000_000)
    try store.close()
  }

  @Test(
    "changes another open compacted before this one looked: a gap, whatever they were (the outputs hold what was live, in key order, numbered anew), then the changes after it; with none, the changes after the compaction and no gap",
    arguments: ["nothing", "distinct puts and a batch", "overwrites", "deletes"])
  func observerAcrossCompaction(written: String) throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let watching = try LogStore(path: path, options: Self.options(maxSegmentSize: 4 << 10))
    let writing = try LogStore(path: path, options: Self.options(maxSegmentSize: 4 << 10))
    let heard = Self.observe(watching)
    try writing.createTable("t")
    for index in 0..<5 { try writing.put("seen".bytes, forKey: "s\(index)".bytes, in: "t") }
    var expected = ["createTable t "] + (0..<5).map { "put t s\($0)" }
    #expect(Self.waitFor(expected.count, in: heard) == expected)
    // The watcher cannot look (it waits for its store's lock) while the other open writes and
    // compacts.
    try watching.engine.log.lock.withLock { () throws(LogStoreError) in
      switch written {
      case "distinct puts and a batch":
        for index in 0..<60 {
          try writing.put(Array(repeating: 1, count: 80), forKey: "d\(index)".bytes, in: "t")
        }
        var batch = WriteBatch()
        batch.put("x".bytes, forKey: "b1".bytes, in: "t")
        batch.put("y".bytes, forKey: "b2".bytes, in: "t")
        try writing.write(batch)
      case "overwrites":
        for index in 0..<100 {
          try writing.put("\(index)".bytes, forKey: "k\(index % 5)".bytes, in: "t")
        }
      case "deletes":
        for index in 0..<5 { try writing.delete(key: "s\(index)".bytes, in: "t") }
      default:
        break
      }
      try writing.compact()
      // Written after the compaction, before the watcher looks.
      try writing.put("x".bytes, forKey: "compacted".bytes, in: "t")
    }
    // It takes the compaction in now, at a call, whether its watcher looked already or not.
    try watching.refresh()
    if written == "nothing" {
      // It had seen every change the outputs hold: it skips them, and hears the one after.
      expected.append("put t compacted")
    } else {
      // Not even the distinct puts, all still live, can be told from the outputs.
      expected.append("gap")
    }
    #expect(Self.waitFor(expected.count, in: heard) == expected)
    try writing.put("after".bytes, forKey: "later".bytes, in: "t")
    expected.append("put t later")
    #expect(Self.waitFor(expected.count, in: heard) == expected)
    #expect(try watching.snapshot() == writing.snapshot())
    try writing.close()
    try watching.close()
  }

  @Test(
    "a process stopped between calls holds nothing: the others' writes each return well within the wait for a lock (2 s of 10)"
  )
  func stoppedBetweenCalls() throws {
    let worker = try #require(builtExecutable(named: "ytkkv-sharing-worker"))
    let directory = TemporaryDirectory("sharing")
    let path = directory.appending("store")
    let idle = try ChildProcess(worker, ["idle", path])
    var waited = 0
    while !idle.standardOutput.contains("ready") && waited < 10_000 {
      usleep(1000)
      waited += 1
    }
    #expect(idle.standardOutput.contains("ready"))
    idle.send(SIGSTOP)
    defer {
      idle.send(SIGKILL)
      _ = try? idle.waitUntilExit()
    }
    let store = try LogStore(path: path, options: Self.options())
    #expect(try store.value(forKey: "idle".bytes, in: "t") == "here".bytes)
    var slowest = 0.0
    for index in 0..<200 {
      let start = Date()
      try store.put("v".bytes, forKey: "k\(index)".bytes, in: "t")
      slowest = max(slowest, Date().timeIntervalSince(start))
    }
    // A write that waited for the stopped process's lock would wait the whole patience (10 s)
    // and throw `.locked`; a bound far below that, and far above a preempted write on a busy
    // machine, tells the two apart.
    #expect(slowest < 2, "the slowest write took \(slowest) s")
    try store.close()
  }

  @Test(
    "a commit slot whose checksum holds but whose fields disagree (offsets out of order, numbers out of reach) is no commit"
  )
  func inconsistentCommitSlot() {
    let valid = SharedState.Commit(
      generation: 1, nextSequence: 10, activeSegment: 2, capacity: 1 << 20, committedEnd: 4096,
      allocated: 8192, durableEnd: 2048, dataEnd: 4000, markedEnd: 4096, nextFileNumber: 3)
    /// The slot `commit` encodes, checksum included, read back.
    func readBack(_ commit: SharedState.Commit) -> SharedState.Commit? {
      var bytes = [UInt8](repeating: 0, count: 64)
      return bytes.withUnsafeMutableBytes { slot in
        commit.encode(into: slot.baseAddress!)
        return SharedState.Commit.decode(slot.baseAddress!)
      }
    }
    #expect(readBack(valid) == valid)
    let broken: [(String, (inout SharedState.Commit) -> Void)] = [
      ("no active segment", { $0.activeSegment = 0 }),
      ("the active segment not below the next number", { $0.nextFileNumber = 2 }),
      ("the next number out of reach", { $0.nextFileNumber = StoreFileName.maximumNumber &+ 2 }),
      ("the data inside the header", { $0.dataEnd = 10 }),
      ("the data past the committed end", { $0.dataEnd = 5000 }),
      ("a sync mark past the committed end", { $0.markedEnd = 5000 }),
      ("durable past the committed end", { $0.durableEnd = 5000 }),
      ("committed past the allocated space", { $0.committedEnd = 9000 }),
      ("allocated past the mapping", { $0.allocated = 2 << 20 }),
      ("a mapping of 2 GiB", { $0.capacity = 1 << 31 }),
      ("no sequence number", { $0.nextSequence = 0 }),
      ("a sequence number out of reach", { $0.nextSequence = 1 << 62 }),
    ]
    for (label, breaking) in broken {
      var commit = valid
      breaking(&commit)
      #expect(readBack(commit) == nil, "\(label)")
    }
  }

  @Test(
    "a shared state damaged anywhere, cut short or another boot's is rebuilt from the log: nothing is lost"
  )
  func damagedSharedState() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    do {
      let store = try LogStore(path: path, options: Self.options(maxSegmentSize: 4 << 10))
      try store.createTable("t")
      for index in 0..<120 {
        try store.put("value \(index)".bytes, forKey: "k\(index % 50)".bytes, in: "t")
      }
      try store.close()
    }
    let expected = try LogStore(path: path, options: .init(readOnly: true)).snapshot()
    let original = try fileBytes(path + "/" + SharedState.fileName)
    // Every byte of the header and both commit slots, a bit flipped; the file cut at each
    // field; and all zeros.
    var variants: [(String, [UInt8])] = []
    // The header's words whole; the slots' bytes every fifth at sample depth.
    for offset in TestDepth.cases(
      0..<(SharedState.slotOffset + 128), every: 5, keeping: { $0 < SharedState.slotOffset })
    {
      var bytes = original
      bytes[offset] ^= 0x10
      variants.append(("byte \(offset)", bytes))
    }
    for length in [0, 8, 32, 64, 128, 200] {
      variants.append(("cut at \(length)", Array(original.prefix(length))))
    }
    variants.append(("zeros", [UInt8](repeating: 0, count: original.count)))
    for (label, bytes) in variants {
      let trial = directory.appending("trial")
      try copyDirectory(path, to: trial)
      try writeFile(trial + "/" + SharedState.fileName, bytes)
      let store = try LogStore(path: trial, options: Self.options())
      #expect(try store.snapshot() == expected, "\(label)")
      try store.put("after".bytes, forKey: "k0".bytes, in: "t")
      try store.close()
      let reopened = try LogStore(path: trial, options: .init(readOnly: true, corruption: .fail))
      #expect(try reopened.value(forKey: "k0".bytes, in: "t") == "after".bytes, "\(label)")
      #expect(try reopened.count(in: "t") == 50, "\(label)")
    }
  }

  @Test(
    "an index file written by one writer is used by the opens that follow, and checkpoints and interval syncs of two writers interleave"
  )
  func checkpointsAndIntervalSyncs() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    var options = Self.options(maxSegmentSize: 8 << 10)
    options.sync = .interval(milliseconds: 2)
    let first = try LogStore(path: path, options: options)
    let second = try LogStore(path: path, options: options)
    try first.createTable("t")
    var expected: [String: String] = [:]
    for round in 0..<300 {
      let writer = round % 2 == 0 ? first : second
      try writer.put("v\(round)".bytes, forKey: "k\(round % 90)".bytes, in: "t")
      expected["k\(round % 90)"] = "v\(round)"
      if round % 60 == 59 { try writer.checkpoint() }
      if round % 100 == 99 { usleep(5_000) }
    }
    #expect(try first.snapshot() == ["t": expected])
    #expect(try second.snapshot() == ["t": expected])
    let third = try LogStore(path: path, options: Self.options())
    #expect(third.openReport.indexFile != nil)
    #expect(try third.snapshot() == ["t": expected])
    try first.close()
    try second.close()
    try third.close()
    try Self.expectClosedStore(at: path, holds: ["t": expected])
  }

  @Test(
    "a compaction leaves an index file of its outputs, which the next open maps instead of reading their hint files, while another open takes the compaction in by the hints"
  )
  func compactionLeavesIndexFile() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    var options = Self.options(maxSegmentSize: 16 << 10)
    options.indexFileMinimumLiveBytes = 0
    let compacting = try LogStore(path: path, options: options)
    let other = try LogStore(path: path, options: options)
    try compacting.createTable("t")
    var expected: [String: String] = [:]
    for round in 0..<600 {
      let writer = round % 2 == 0 ? compacting : other
      try writer.put("v\(round)".bytes, forKey: "k\(round % 200)".bytes, in: "t")
      expected["k\(round % 200)"] = "v\(round)"
    }
    try compacting.compact()
    let files = try FileManager.default.contentsOfDirectory(atPath: path)
    #expect(files.contains { $0.hasSuffix(".index") }, "\(files.sorted())")
    #expect(files.contains { $0.hasSuffix(".hint") }, "\(files.sorted())")
    #expect(try other.snapshot() == ["t": expected])
    try other.put("after".bytes, forKey: "k0".bytes, in: "t")
    expected["k0"] = "after"

    let next = try LogStore(path: path, options: options)
    #expect(next.openReport.indexFile != nil)
    #expect(next.openReport.hintEntries == 0)
    #expect(try next.snapshot() == ["t": expected])
    try next.close()
    try other.close()
    try compacting.close()
    try Self.expectClosedStore(at: path, holds: ["t": expected])
  }

  @Test(
    "a close writes an index file once a quarter of the store and 4 MiB were written since the last, as a checkpoint the other opens go on writing beside, and the next open maps it"
  )
  func closeWritesIndexFile() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    var options = Self.options(maxSegmentSize: 1 << 20)
    options.indexFileMinimumLiveBytes = 0
    let closing = try LogStore(path: path, options: options)
    let other = try LogStore(path: path, options: options)
    try closing.createTable("t")
    let value = [UInt8](repeating: 0x61, count: 4_000)
    var expected: [String: String] = [:]
    // Under 4 MiB: no index file.
    for round in 0..<500 {
      try closing.put(value + "\(round)".bytes, forKey: "k\(round)".bytes, in: "t")
      expected["k\(round)"] = String(decoding: value, as: UTF8.self) + "\(round)"
    }
    let reopened = try LogStore(path: path, options: options)
    try reopened.close()
    var files = try FileManager.default.contentsOfDirectory(atPath: path)
    #expect(!files.contains { $0.hasSuffix(".index") }, "\(files.sorted())")
    for round in 500..<1_200 {
      try (round % 2 == 0 ? closing : other).put(
        value + "\(round)".bytes, forKey: "k\(round)".bytes, in: "t")
      expected["k\(round)"] = String(decoding: value, as: UTF8.self) + "\(round)"
    }
    try closing.close()
    files = try FileManager.default.contentsOfDirectory(atPath: path)
    #expect(files.contains { $0.hasSuffix(".index") }, "\(files.sorted())")
    try other.put("after".bytes, forKey: "k0".bytes, in: "t")
    expected["k0"] = "after"

    let next = try LogStore(path: path, options: options)
    #expect(next.openReport.indexFile != nil)
    #expect(next.openReport.scannedRecords < 100)
    #expect(try next.snapshot() == ["t": expected])
    try next.close()
    try other.close()
    try Self.expectClosedStore(at: path, holds: ["t": expected])
  }

  /// Options for the changes files' tests: an index file whatever the store's size, and a
  /// changes file at every close that follows some records.
  static func changesOptions(readOnly: Bool = false) -> LogStore.Options {
    var options = Self.options(readOnly: readOnly)
    options.indexFileMinimumLiveBytes = 0
    options.activeHintMinimumBytes = 0
    return options
  }

  /// The number of the one index file in the store at `path`.
  static func indexFileNumber(at path: String) throws -> UInt32? {
    let numbers = try FileManager.default.contentsOfDirectory(atPath: path).compactMap { name in
      if case .index(let number) = StoreFileName.classify(name) { return number }
      return nil
    }
    return numbers.count == 1 ? numbers[0] : nil
  }

  /// Two opens of a store with an index file, tables `a` and `b` of 200 keys each in it, then
  /// changes by both (overwrites, deletes, a prefix deleted, a new table), and a read by the
  /// first, which brings its view up to the log's end (a close whose view is behind writes no
  /// changes file). Returns the opens, the index file's number and what the store holds.
  static func storeChangedByTwo(at path: String) throws -> (
    closing: LogStore, other: LogStore, indexFile: UInt32, expected: [String: [String: String]]
  ) {
    let closing = try LogStore(path: path, options: changesOptions())
    let other = try LogStore(path: path, options: changesOptions())
    var expected: [String: [String: String]] = [:]
    for table in ["a", "b"] {
      try closing.createTable(table)
      for index in 0..<200 {
        try closing.put("\(table)\(index)".bytes, forKey: "k\(index)".bytes, in: table)
        expected[table, default: [:]]["k\(index)"] = "\(table)\(index)"
      }
    }
    try closing.checkpoint()
    let indexFile = try #require(try indexFileNumber(at: path))
    for index in stride(from: 0, to: 200, by: 3) {
      try closing.put("new\(index)".bytes, forKey: "k\(index)".bytes, in: "a")
      expected["a"]!["k\(index)"] = "new\(index)"
    }
    for index in stride(from: 1, to: 200, by: 5) {
      try other.delete(key: "k\(index)".bytes, in: "a")
      expected["a"]!["k\(index)"] = nil
    }
    try other.deletePrefix("k1".bytes, in: "b")
    expected["b"] = expected["b"]!.filter { !$0.key.hasPrefix("k1") }
    try other.createTable("c")
    try other.put("c".bytes, forKey: "x".bytes, in: "c")
    expected["c"] = ["x": "c"]
    try closing.put("last".bytes, forKey: "k2".bytes, in: "a")
    expected["a"]!["k2"] = "last"
    #expect(try closing.snapshot() == expected)
    return (closing, other, indexFile, expected)
  }

  @Test(
    "a close that writes no index file writes the changes since the one in use, after its position is published and beside other opens: the next opens, shared, read-only or alone, put them over the index file and read only what came after, the same as an open that reads the log"
  )
  func closeWritesChanges() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    var (closing, other, indexFile, expected) = try Self.storeChangedByTwo(at: path)
    try closing.close()
    let file = path + "/" + StoreFileName.changes(indexFile)
    #expect(FileManager.default.fileExists(atPath: file))
    var files = try FileManager.default.contentsOfDirectory(atPath: path)
    #expect(!files.contains { $0.hasSuffix(StoreFileName.temporarySuffix) }, "\(files.sorted())")
    // The other open goes on writing after the position the file covers.
    try other.put("after".bytes, forKey: "k0".bytes, in: "a")
    expected["a"]!["k0"] = "after"

    let next = try LogStore(path: path, options: Self.changesOptions())
    #expect(next.openReport.indexFile == indexFile)
    #expect(next.openReport.usedChangesFile)
    #expect(next.openReport.scannedRecords < 5)
    #expect(try next.snapshot() == expected)
    let reader = try LogStore(path: path, options: Self.changesOptions(readOnly: true))
    #expect(reader.openReport.usedChangesFile)
    #expect(try reader.snapshot() == expected)
    #expect(try other.snapshot() == expected)
    let counts = try ["a", "b", "c"].map { table in try next.count(in: table) }
    #expect(counts == ["a", "b", "c"].map { expected[$0]!.count })
    try reader.close()
    try other.close()
    try next.close()
    files = try FileManager.default.contentsOfDirectory(atPath: path)
    #expect(!files.contains { $0.hasSuffix(StoreFileName.temporarySuffix) }, "\(files.sorted())")

    // Alone, the store opens from the last close's file too; without it, from the log: the same.
    let alone = try LogStore(path: path, options: .init(corruption: .fail))
    #expect(alone.openReport.usedChangesFile)
    #expect(try alone.snapshot() == expected)
    let counted = try alone.statistics()
    let statistics: [Int] = [counted.tables, counted.liveItems, counted.liveBytes]
    try alone.close()
    try FileManager.default.removeItem(atPath: file)
    let fromLog = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(!fromLog.openReport.usedChangesFile)
    #expect(try fromLog.snapshot() == expected)
    let fromLogCounted = try fromLog.statistics()
    let fromLogStatistics: [Int] = [
      fromLogCounted.tables, fromLogCounted.liveItems, fromLogCounted.liveBytes,
    ]
    #expect(fromLogStatistics == statistics)
    try fromLog.close()
    try Self.expectClosedStore(at: path, holds: expected)
  }

  @Test(
    "a close writes its changes without the store's lock, once its position is published: meanwhile another open writes, closes and writes its own, and whichever lands last, the next opens read the store whole"
  )
  func changesBesideAnotherClose() throws {
    let fileSystem = SimulatedFileSystem()
    var options = Self.changesOptions()
    options.corruption = .fail
    options.otherProcessPatience = 200
    options.fileSystem = fileSystem.process(11)
    let closing = try LogStore(path: "/store", options: options)
    options.fileSystem = fileSystem.process(22)
    let other = try LogStore(path: "/store", options: options)
    try closing.createTable("t")
    var expected: [String: String] = [:]
    for round in 0..<200 {
      try (round % 2 == 0 ? closing : other).put(
        "v\(round)".bytes, forKey: "k\(round % 50)".bytes, in: "t")
      expected["k\(round % 50)"] = "v\(round)"
      if round == 99 { try closing.checkpoint() }
    }
    let indexFile = try #require(
      try fileSystem.contentsOfDirectory("/store").compactMap { name -> UInt32? in
        if case .index(let number) = StoreFileName.classify(name) { return number }
        return nil
      }.first)
    let changes = "/store/" + StoreFileName.changes(indexFile)
    // A read brings the closing open's view up to the log's end (a close whose view is behind
    // writes no changes file).
    #expect(try closing.snapshot() == ["t": expected])
    // Just before the closing open renames its changes file into place, a third open (which
    // would wait for the lock, and give up, if the close still held it) writes and closes,
    // leaving its own changes file; the closing open's, of an earlier position, replaces it.
    let ran = Guarded(false)
    var third = options
    third.fileSystem = fileSystem.process(33)
    fileSystem.callHook = { [third] upcoming in
      guard upcoming.process == 11, upcoming.operation == "rename",
        upcoming.path.hasPrefix(changes + "."), !ran.withLock({ $0 })
      else { return }
      ran.withLock { $0 = true }
      do {
        let meanwhile = try LogStore(path: "/store", options: third)
        try meanwhile.put("meanwhile".bytes, forKey: "k7".bytes, in: "t")
        try meanwhile.close()
        #expect(try fileSystem.contentsOfDirectory("/store").contains(String(changes.dropFirst(7))))
      } catch {
        Issue.record("\(error)")
      }
    }
    try closing.close()
    fileSystem.callHook = nil
    #expect(ran.withLock { $0 })
    expected["k7"] = "meanwhile"
    let names = try fileSystem.contentsOfDirectory("/store")
    #expect(!names.contains { $0.hasSuffix(StoreFileName.temporarySuffix) }, "\(names.sorted())")
    options.fileSystem = fileSystem.process(44)
    let next = try LogStore(path: "/store", options: options)
    #expect(next.openReport.usedChangesFile)
    #expect(try next.snapshot() == ["t": expected])
    try next.close()
    try other.close()
    #expect(try LogStore.verify(path: "/store", fileSystem: fileSystem.process(55)).isClean)
    var aloneOptions = LogStore.Options(corruption: .fail)
    aloneOptions.fileSystem = fileSystem.process(66)
    let alone = try LogStore(path: "/store", options: aloneOptions)
    #expect(alone.openReport.usedChangesFile)
    #expect(try alone.snapshot() == ["t": expected])
    try alone.close()
  }

  @Test(
    "a close in .manyProcesses use after its directory was rebuilt from a damaged index file writes a new file in its place"
  )
  func closeReplacesDamagedIndexFile() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    var expected: [String: String] = [:]
    do {
      let store = try LogStore(path: path, options: Self.options())
      try store.createTable("a")
      for index in 0..<200 {
        try store.put("v\(index)".bytes, forKey: "k\(index)".bytes, in: "a")
        expected["k\(index)"] = "v\(index)"
      }
      try store.checkpoint()
      try store.close()
    }
    let number = try #require(try Self.indexFileNumber(at: path))
    let indexPath = path + "/" + StoreFileName.index(number)
    // Every third byte of the table's entries: walking them meets the damage.
    var file = IndexFileBytes(try fileBytes(indexPath))
    let record = try #require(file.tableRecord("a"))
    let entries = file.field(record + 16, 8)
    for offset in stride(from: entries, to: entries + file.field(record + 24, 8), by: 3) {
      file.bytes[offset] ^= 0x10
    }
    try writeFile(indexPath, file.bytes)
    let store = try LogStore(path: path, options: Self.options())
    #expect(store.openReport.indexFile == number)
    try store.put("after".bytes, forKey: "k0".bytes, in: "a")
    expected["k0"] = "after"
    #expect(try store.keys(in: "a").count == 200)
    #expect(try store.statistics().indexMappedBytes == 0)
    // Kept until the close replaces it.
    #expect(try Self.indexFileNumber(at: path) == number)
    try store.close()
    let written = try #require(try Self.indexFileNumber(at: path))
    #expect(written != number)
    try Self.expectClosedStore(at: path, holds: ["a": expected])
    let reopened = try LogStore(path: path, options: Self.options(readOnly: true))
    #expect(reopened.openReport.indexFile == written)
  }

  @Test(
    "a changes file a killed close left unfinished is a note to verify, never read, and removed by the next open that takes the directory over"
  )
  func unfinishedChangesFile() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    var (closing, other, indexFile, expected) = try Self.storeChangedByTwo(at: path)
    try closing.close()
    try other.close()
    let name = StoreFileName.temporary(StoreFileName.changes(indexFile), distinctBy: 999)
    #expect(name == "\(StoreFileName.changes(indexFile)).000999.tmp")
    #expect(StoreFileName.classify(name) == .temporary)
    let unfinished = path + "/" + name
    #expect(FileManager.default.createFile(atPath: unfinished, contents: Data([1, 2, 3])))
    let report = try LogStore.verify(path: path)
    #expect(report.problems.isEmpty)
    #expect(
      report.notes.first { $0.file == name }?.description
        == name + ": unfinished compaction output, index or changes file; removed by the next "
        + "open that takes the directory over")
    let shared = try LogStore(path: path, options: Self.changesOptions())
    #expect(shared.openReport.usedChangesFile)
    try shared.put("more".bytes, forKey: "k3".bytes, in: "a")
    expected["a"]!["k3"] = "more"
    try shared.close()
    let alone = try LogStore(path: path, options: .init(corruption: .fail))
    #expect(alone.openReport.usedChangesFile)
    #expect(try alone.snapshot() == expected)
    #expect(!FileManager.default.fileExists(atPath: unfinished))
    try alone.close()
  }

  @Test(
    "a close whose view is behind what other opens wrote since it last read writes no changes file, and the next opens read the store whole from the log"
  )
  func noChangesFromViewBehind() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let closing = try LogStore(path: path, options: Self.changesOptions())
    let other = try LogStore(path: path, options: Self.changesOptions())
    try closing.createTable("t")
    var expected: [String: String] = [:]
    for index in 0..<100 {
      try closing.put("v\(index)".bytes, forKey: "k\(index)".bytes, in: "t")
      expected["k\(index)"] = "v\(index)"
    }
    try closing.checkpoint()
    #expect(try other.count(in: "t") == 100)
    // The other open writes; the closing one writes after it without reading, which leaves its
    // view behind the other's writes (they changed no table).
    for index in 0..<50 {
      try other.put("other\(index)".bytes, forKey: "k\(index)".bytes, in: "t")
      expected["k\(index)"] = "other\(index)"
    }
    try closing.put("mine".bytes, forKey: "k99".bytes, in: "t")
    expected["k99"] = "mine"
    #expect(closing.engine.log.lock.withLock { closing.engine.sharing!.viewBehind })
    try closing.close()
    let indexFile = try #require(try Self.indexFileNumber(at: path))
    #expect(!FileManager.default.fileExists(atPath: path + "/" + StoreFileName.changes(indexFile)))
    let next = try LogStore(path: path, options: Self.changesOptions())
    #expect(!next.openReport.usedChangesFile)
    #expect(try next.snapshot() == ["t": expected])
    try next.close()
    try other.close()
    try Self.expectClosedStore(at: path, holds: ["t": expected])
  }

  @Test(
    "a write that dies after another open's close wrote its changes is cut back to no earlier than the position the file covers: the next writer clears it and puts the file over the index file"
  )
  func changesSurviveDeadWrite() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let (closing, other, _, expected) = try Self.storeChangedByTwo(at: path)
    try closing.close()
    try Self.appendUnpublished(other, keys: ["ghost"])
    other.engine.sharing!.shared.lock.release()
    try withExtendedLifetime(other) {
      let next = try LogStore(path: path, options: Self.changesOptions())
      #expect(next.openReport.usedChangesFile)
      #expect(try next.snapshot() == expected)
      try next.put("after".bytes, forKey: "k0".bytes, in: "a")
      try next.close()
      var later = expected
      later["a"]!["k0"] = "after"
      let reopened = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
      #expect(reopened.openReport.usedChangesFile)
      #expect(try reopened.snapshot() == later)
    }
  }

  @Test(
    "a close whose view another open's compaction replaced writes its changes over the index file of the compaction's outputs, not over the one it opened with"
  )
  func changesAfterOthersCompaction() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    var (closing, other, first, expected) = try Self.storeChangedByTwo(at: path)
    try other.compact()
    let files = try FileManager.default.contentsOfDirectory(atPath: path)
    let compacted = try #require(
      files.compactMap { name -> UInt32? in
        guard case .index(let number) = StoreFileName.classify(name), number != first else {
          return nil
        }
        return number
      }.first)
    try closing.put("after compaction".bytes, forKey: "k5".bytes, in: "b")
    expected["b"]!["k5"] = "after compaction"
    try closing.close()
    #expect(FileManager.default.fileExists(atPath: path + "/" + StoreFileName.changes(compacted)))
    #expect(!FileManager.default.fileExists(atPath: path + "/" + StoreFileName.changes(first)))
    let next = try LogStore(path: path, options: Self.changesOptions())
    #expect(next.openReport.indexFile == compacted)
    #expect(next.openReport.usedChangesFile)
    #expect(try next.snapshot() == expected)
    try next.close()
    try other.close()
    try Self.expectClosedStore(at: path, holds: expected)
  }

  @Test(
    "a follower opened before any writer in this boot (a widget before its app) follows once one writes"
  )
  func followerBeforeWriters() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    do {
      let single = try LogStore(path: path)
      try single.createTable("t")
      try single.put("old".bytes, forKey: "k".bytes, in: "t")
      try single.close()
    }
    #expect(!FileManager.default.fileExists(atPath: path + "/" + SharedState.fileName))
    let follower = try LogStore(path: path, options: Self.options(readOnly: true))
    #expect(try follower.value(forKey: "k".bytes, in: "t") == "old".bytes)
    let writer = try LogStore(path: path, options: Self.options())
    try writer.put("new".bytes, forKey: "k".bytes, in: "t")
    try writer.put("more".bytes, forKey: "m".bytes, in: "t")
    // It looks for the shared state at most every 50 ms.
    var seen = try follower.value(forKey: "k".bytes, in: "t")
    for _ in 0..<100 where seen != "new".bytes {
      usleep(10_000)
      seen = try follower.value(forKey: "k".bytes, in: "t")
    }
    #expect(seen == "new".bytes)
    #expect(try follower.snapshot() == ["t": ["k": "new", "m": "more"]])
    try writer.delete(key: "m".bytes, in: "t")
    #expect(try follower.snapshot() == ["t": ["k": "new"]])
    try writer.close()
    try follower.close()
  }

  @Test(
    "a rotation whose process died before publishing is undone by the next write: no open finds a segment cut short"
  )
  func deadRotationUndone() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let dying = try LogStore(path: path, options: Self.options())
    let living = try LogStore(path: path, options: Self.options())
    try dying.createTable("t")
    try living.put("v".bytes, forKey: "k".bytes, in: "t")
    #expect(try dying.value(forKey: "k".bytes, in: "t") == "v".bytes)
    // As a process killed inside a rotation leaves it: the active segment sealed (its ending
    // mark past the published end), the next one created and listed, nothing published.
    func dieRotating(_ store: LogStore) throws {
      let engine = store.engine
      try engine.log.lock.withLock { () throws(LogStoreError) in
        try Self.beginDyingWrite(engine)
        _ = try engine.log.sealForCompaction(reserving: 0)
        engine.sharing!.shared.lock.release()
      }
    }
    let before = try segmentFiles(in: path).count
    try dieRotating(dying)
    #expect(try segmentFiles(in: path).count == before + 1)
    // The next writer's open undoes it as the next write would.
    let joining = try LogStore(path: path, options: Self.options())
    #expect(try segmentFiles(in: path).count == before)
    try joining.close()
    try living.put("w".bytes, forKey: "k2".bytes, in: "t")
    #expect(try segmentFiles(in: path).count == before)
    #expect(try living.snapshot() == ["t": ["k": "v", "k2": "w"]])
    // Again, with no open to undo it: the next write of a writer already open does. (The
    // dying opens stay open to the end: a close would publish what they did.)
    let dyingAgain = try LogStore(path: path, options: Self.options())
    defer { withExtendedLifetime(dyingAgain) {} }
    try dieRotating(dyingAgain)
    #expect(try segmentFiles(in: path).count == before + 1)
    try living.put("x".bytes, forKey: "k3".bytes, in: "t")
    #expect(try segmentFiles(in: path).count == before)
    #expect(try living.snapshot() == ["t": ["k": "v", "k2": "w", "k3": "x"]])
    try living.close()
    let reopened = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(try reopened.snapshot() == ["t": ["k": "v", "k2": "w", "k3": "x"]])
    #expect(try reopened.statistics().damagedRecords == 0)
    #expect(try LogStore.verify(path: path).problems.isEmpty)
  }

  @Test("an open waits for a write of another process that holds the lock, and refreshes at once")
  func openWaitsForAWrite() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    // A `.oneProcess` writer leaves its process ID in the lock file; the next open clears it.
    try LogStore(path: path).close()
    let first = try LogStore(path: path, options: Self.options())
    try first.createTable("t")
    let shared = first.engine.sharing!.shared
    // Taken and released by one thread, as every write does (a mutex is its thread's).
    let taken = DispatchSemaphore(value: 0)
    // Counted just before the release: an open that returns with it counted waited for the
    // lock, however late this thread woke (a clock started here would measure the wake too).
    let releasing = LockedCounter()
    let holder = Thread {
      do { try shared.lock.acquire() } catch { Issue.record("\(error)") }
      taken.signal()
      usleep(30_000)
      releasing.add()
      shared.lock.release()
    }
    holder.start()
    taken.wait()
    let second = try LogStore(path: path, options: Self.options())
    #expect(releasing.value == 1)
    try first.put("v".bytes, forKey: "k".bytes, in: "t")
    try second.refresh()
    #expect(try second.value(forKey: "k".bytes, in: "t") == "v".bytes)
    try first.close()
    try second.close()
  }

  @Test("a shared state reset under open writers makes their writes fail loudly, never write blind")
  func stateResetUnderWriters() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let store = try LogStore(path: path, options: Self.options())
    try store.createTable("t")
    try store.put("v".bytes, forKey: "k".bytes, in: "t")
    let other = try LogStore(path: path, options: Self.options())
    // The file is mapped: writing zeros over it zeroes what both opens see.
    try writeFile(
      path + "/" + SharedState.fileName, [UInt8](repeating: 0, count: SharedState.size),
      inPlace: true)
    let refused = #expect(throws: LogStoreError.self) {
      try store.put("w".bytes, forKey: "k".bytes, in: "t")
    }
    #expect(refused?.code == .corrupted)
    #expect(try other.value(forKey: "k".bytes, in: "t") == "v".bytes)
  }

  @Test(
    "commit slots damaged under open writers (the header whole, the count moved on) make their writes fail loudly, never write blind; a read keeps its view"
  )
  func slotsDamagedUnderWriters() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let store = try LogStore(path: path, options: Self.options())
    try store.createTable("t")
    try store.put("v".bytes, forKey: "k".bytes, in: "t")
    let other = try LogStore(path: path, options: Self.options())
    var bytes = try fileBytes(path + "/" + SharedState.fileName)
    for offset in SharedState.slotOffset..<SharedState.slotOffset + 128 { bytes[offset] ^= 0x5A }
    bytes[SharedState.publicationsOffset] &+= 1
    try writeFile(path + "/" + SharedState.fileName, bytes, inPlace: true)
    let refused = #expect(throws: LogStoreError.self) {
      try store.put("w".bytes, forKey: "k".bytes, in: "t")
    }
    #expect(refused?.code == .corrupted)
    #expect(try other.value(forKey: "k".bytes, in: "t") == "v".bytes)
  }

  @Test(
    "an interval sync that meets a shared state reset under it gives up quietly; calls report it")
  func intervalSyncMeetsReset() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    var options = Self.options()
    options.sync = .interval(milliseconds: 40)
    let store = try LogStore(path: path, options: options)
    try store.createTable("t")
    // Reset at once after a write, so that the sync thread's next turn meets it with the write
    // unsynced (and no call of this open sees the reset first). In place: emptied first, the
    // mapped file would be shorter than its mapping for a moment, and the sync thread's read of
    // it then a SIGBUS.
    try writeFile(
      path + "/" + SharedState.fileName, [UInt8](repeating: 0, count: SharedState.size),
      inPlace: true)
    usleep(100_000)
    let refused = #expect(throws: LogStoreError.self) {
      try store.put("w".bytes, forKey: "k".bytes, in: "t")
    }
    #expect(refused?.code == .corrupted)
    #expect(throws: LogStoreError.self) { try store.close() }
  }

  @Test(
    "an open whose checkpoint left its counts for later catches up on another open's puts, counts included"
  )
  func catchUpAfterCheckpoint() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let first = try LogStore(path: path, options: Self.options())
    let second = try LogStore(path: path, options: Self.options())
    try first.createTable("t")
    for index in 0..<500 { try first.put("v".bytes, forKey: "k\(index)".bytes, in: "t") }
    // The checkpoint puts the store's tables under its new index file and leaves the counts
    // of what follows for later; the other open's put reaches this one before it counted.
    try first.checkpoint()
    try second.put("new".bytes, forKey: "n".bytes, in: "t")
    #expect(try first.value(forKey: "n".bytes, in: "t") == "new".bytes)
    #expect(try first.count(in: "t") == 501)
    #expect(try second.count(in: "t") == 501)
    try first.close()
    try second.close()
  }

  @Test(
    "a checkpoint whose view another open's compaction replaced while it wrote its file leaves the file unused: the open's keys and its next index file point only at live segments"
  )
  func checkpointBesideCompaction() throws {
    let fileSystem = SimulatedFileSystem()
    var options = Self.options(maxSegmentSize: 4 << 10)
    options.corruption = .fail
    options.fileSystem = fileSystem.process(11)
    let checkpointing = try LogStore(path: "/store", options: options)
    options.fileSystem = fileSystem.process(22)
    let compacting = try LogStore(path: "/store", options: options)
    try checkpointing.createTable("t")
    var expected: [String: String] = [:]
    for round in 0..<120 {
      let value = String(repeating: "v\(round)", count: 6)
      try (round % 2 == 0 ? checkpointing : compacting).put(
        value.bytes, forKey: "k\(round % 30)".bytes, in: "t")
      expected["k\(round % 30)"] = value
    }
    // While the checkpoint writes its file (the log's lock free), the other open deletes a key
    // the file holds and compacts (which drops the deletion with what it deleted), and a read
    // of the checkpointing open takes the compaction in.
    expected["k5"] = nil
    let before = expected
    let ran = Self.onceBeforeIndexFileRename(of: 11, in: fileSystem) {
      try compacting.delete(key: "k5".bytes, in: "t")
      try compacting.compact()
      #expect(try checkpointing.snapshot() == ["t": before])
    }
    try checkpointing.checkpoint()
    fileSystem.callHook = nil
    #expect(ran.withLock { $0 })
    #expect(try checkpointing.snapshot() == ["t": expected])
    try checkpointing.put("after".bytes, forKey: "k1".bytes, in: "t")
    expected["k1"] = "after"
    try checkpointing.checkpoint()
    for store in [checkpointing, compacting] {
      #expect(try store.snapshot() == ["t": expected])
    }
    options.fileSystem = fileSystem.process(33)
    let opened = try LogStore(path: "/store", options: options)
    #expect(try opened.snapshot() == ["t": expected])
    try opened.close()
    try checkpointing.close()
    try compacting.close()
    #expect(try LogStore.verify(path: "/store", fileSystem: fileSystem.process(44)).isClean)
  }

  @Test(
    "a follower that reads its view while another process compacts (the segments it was told of replaced before it read the manifest or opened them) reads the newer view, never fails",
    arguments: ["an open", "a catch-up across a rotation"], ["the manifest", "a segment"])
  func followerReadsBesideCompaction(reading: String, compactingAt: String) throws {
    let fileSystem = SimulatedFileSystem()
    var options = Self.options(maxSegmentSize: 4 << 10)
    options.corruption = .fail
    options.fileSystem = fileSystem
    let writer = try LogStore(path: "/store", options: options)
    try writer.createTable("t")
    var expected: [String: String] = [:]
    for index in 0..<60 {
      let value = String(repeating: "v\(index)", count: 60)
      try writer.put(value.bytes, forKey: "k\(index % 15)".bytes, in: "t")
      expected["k\(index % 15)"] = value
    }
    var followerOptions = Self.options(readOnly: true, maxSegmentSize: 4 << 10)
    followerOptions.corruption = .fail
    followerOptions.fileSystem = fileSystem.process(88)
    // A whole compaction of the writer, run when the follower first opens the manifest (which
    // then lists none of the segments of the commit it read) or a segment it was told of: it
    // removes them all.
    let compacted = Guarded(false)
    let fileName = compactingAt == "the manifest" ? "/" + Manifest.fileName : ".log"
    func compactWhenFollowerOpensSegment() {
      fileSystem.callHook = { upcoming in
        guard upcoming.process == 88, upcoming.operation == "open",
          upcoming.path.hasSuffix(fileName), !compacted.withLock({ $0 })
        else { return }
        compacted.withLock { $0 = true }
        #expect(throws: Never.self) { try writer.compact() }
      }
    }
    let follower: LogStore
    if reading == "an open" {
      compactWhenFollowerOpensSegment()
      follower = try LogStore(path: "/store", options: followerOptions)
    } else {
      follower = try LogStore(path: "/store", options: followerOptions)
      #expect(try follower.snapshot() == ["t": expected])
      // A rotation: the follower's next call reads its view anew.
      try writer.put(String(repeating: "b", count: 3_800).bytes, forKey: "big".bytes, in: "t")
      expected["big"] = String(repeating: "b", count: 3_800)
      compactWhenFollowerOpensSegment()
    }
    let seen = try follower.snapshot()
    fileSystem.callHook = nil
    #expect(compacted.withLock { $0 })
    #expect(seen == ["t": expected])
    #expect(try follower.statistics().damagedRecords == 0)
    try follower.close()
    try writer.close()
  }

  @Test(
    "a read while a durable write of another thread syncs sees a write another process completed before the read began"
  )
  func readBesideSyncingWrite() throws {
    let fileSystem = SimulatedFileSystem()
    var options = Self.options()
    options.sync = .always
    options.fileSystem = fileSystem.process(66)
    let here = try LogStore(path: "/store", options: options)
    options.sync = .never
    options.fileSystem = fileSystem.process(77)
    let other = try LogStore(path: "/store", options: options)
    try here.createTable("t")
    try here.put("1".bytes, forKey: "k".bytes, in: "t")
    #expect(try other.value(forKey: "k".bytes, in: "t") == "1".bytes)
    try other.put("2".bytes, forKey: "k".bytes, in: "t")
    // A put of this process on a thread of its own (which appends after the other's put
    // without applying it), held in its sync, outside the log's lock, until the read is done.
    let syncing = DispatchSemaphore(value: 0)
    let readDone = DispatchSemaphore(value: 0)
    let held = Guarded(false)
    fileSystem.callHook = { upcoming in
      guard upcoming.process == 66, upcoming.operation == "msync",
        upcoming.path.hasSuffix(".log"), !held.withLock({ $0 })
      else { return }
      held.withLock { $0 = true }
      syncing.signal()
      readDone.wait()
    }
    let written = DispatchSemaphore(value: 0)
    Thread {
      #expect(throws: Never.self) { try here.put("x".bytes, forKey: "x".bytes, in: "t") }
      written.signal()
    }.start()
    syncing.wait()
    let seen = Result { try here.value(forKey: "k".bytes, in: "t") }
    readDone.signal()
    written.wait()
    fileSystem.callHook = nil
    #expect(try seen.get() == "2".bytes)
    #expect(try here.snapshot() == ["t": ["k": "2", "x": "x"]])
    #expect(try other.snapshot() == ["t": ["k": "2", "x": "x"]])
    try here.close()
    try other.close()
  }

  @Test(
    "a manifest removed under opens in .manyProcesses use makes the next open fail as damage, not read a wrong view"
  )
  func manifestRemovedUnderOpens() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let writer = try LogStore(path: path, options: Self.options())
    try writer.createTable("t")
    try writer.put("v".bytes, forKey: "k".bytes, in: "t")
    try FileManager.default.removeItem(atPath: path + "/MANIFEST")
    let refused = #expect(throws: LogStoreError.self) {
      try LogStore(path: path, options: Self.options())
    }
    #expect(refused?.code == .corrupted)
    // Once nobody has it open, a `.oneProcess` writer's open (any write of `ytkkv`) takes
    // the directory over as it is, and the store opens in either mode again.
    try writer.close()
    try LogStore(path: path).close()
    let again = try LogStore(path: path, options: Self.options())
    #expect(try again.snapshot() == ["t": ["k": "v"]])
    try again.close()
  }

  @Test("a second commit observer replaces the first, for other processes' changes too")
  func observerReplaced() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let watching = try LogStore(path: path, options: Self.options())
    let writing = try LogStore(path: path, options: Self.options())
    let first = Self.observe(watching)
    let second = Self.observe(watching)
    try writing.createTable("t")
    try writing.put("v".bytes, forKey: "k".bytes, in: "t")
    #expect(Self.waitFor(2, in: second) == ["createTable t ", "put t k"])
    #expect(first.withLock { $0 }.isEmpty)
    try writing.close()
    try watching.close()
  }

  @Test(
    "damage in what another process published, a flipped byte or a record that reads as zeros (never the end of the log there), is counted by the process that catches up and by the opens that read the store up to the commit, and a writer that opens then appends after it",
    arguments: [false, true])
  func damageInPublishedBytes(zeros: Bool) throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let writer = try LogStore(path: path, options: Self.options())
    try writer.createTable("t")
    let follower = try LogStore(path: path, options: Self.options(readOnly: true))
    #expect(try follower.tableExists("t"))
    let active = writer.engine.log.writer!
    try writer.put("first".bytes, forKey: "a".bytes, in: "t")
    let second = active.used
    try writer.put("second".bytes, forKey: "b".bytes, in: "t")
    let end = active.used
    // After they were published: a byte of the first put's value flipped in the file, or the
    // second put, the last record published, zeroed (as another processor may show it before
    // the writer's stores reach it, where it is looked at again first: docs/CONCURRENCY.md).
    let handle = try SystemFileSystem().openFile(active.file.path, mode: .readWrite)
    let (offset, count) = zeros ? (second, end - second) : (second - 2, 1)
    var bytes = [UInt8](repeating: 0, count: count)
    if !zeros {
      _ = try bytes.withMutableBytes { buffer throws(LogStoreError) in
        try handle.read(into: buffer, at: offset)
      }
      bytes[0] ^= 0x20
    }
    try bytes.withBytes { buffer throws(LogStoreError) in try handle.write(buffer, at: offset) }
    handle.close()
    let (lost, kept) = zeros ? ("b", ("a", "first")) : ("a", ("b", "second"))
    let joining = try LogStore(path: path, options: Self.options())
    let opened = try LogStore(path: path, options: Self.options(readOnly: true))
    for (name, store) in [
      ("catching up", follower), ("a writer's open", joining), ("a follower's open", opened),
    ] {
      #expect(try store.value(forKey: lost.bytes, in: "t") == nil, "\(name)")
      #expect(try store.value(forKey: kept.0.bytes, in: "t") == kept.1.bytes, "\(name)")
      #expect(try store.statistics().damagedRecords == 1, "\(name)")
    }
    // The writer that joined appends after the published end, not over what follows the
    // damage: every open sees its put, and the record it kept.
    try joining.put("third".bytes, forKey: "c".bytes, in: "t")
    for (name, store) in [
      ("the first writer", writer), ("catching up", follower), ("a writer's open", joining),
      ("a follower's open", opened),
    ] {
      #expect(try store.value(forKey: "c".bytes, in: "t") == "third".bytes, "\(name)")
      #expect(try store.value(forKey: kept.0.bytes, in: "t") == kept.1.bytes, "\(name)")
    }
    try opened.close()
    try joining.close()
    try follower.close()
    try writer.close()
  }

  @Test("a compaction waits for one another process runs, and one whose process died is cleared")
  func compactionsTakeTurns() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let first = try LogStore(path: path, options: Self.options(maxSegmentSize: 4 << 10))
    let second = try LogStore(path: path, options: Self.options(maxSegmentSize: 4 << 10))
    try first.createTable("t")
    for index in 0..<300 {
      try first.put("value \(index)".bytes, forKey: "k\(index % 40)".bytes, in: "t")
    }
    let expected = try first.snapshot()
    let waited = Guarded(false)
    try first.compact { done, _ in
      guard done == 0, !waited.withLock({ $0 }) else { return }
      waited.withLock { $0 = true }
      // The other one's compaction waits for this one, in another thread.
      let other = Thread { try? second.compact() }
      other.start()
      usleep(20_000)
    }
    // It waited, then ran: the store is the same in both.
    var attempts = 0
    while attempts < 500,
      try second.snapshot() != expected || second.engine.sharing!.shared.compaction != nil
    {
      usleep(2_000)
      attempts += 1
    }
    #expect(try second.snapshot() == expected)
    #expect(try first.snapshot() == expected)
    try first.close()
    try second.close()
  }

  @Test(
    "an open, and a compaction, that another process keeps waiting past the patience give up with .locked"
  )
  func patienceRunsOut() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    var options = Self.options()
    options.otherProcessPatience = 30
    let first = try LogStore(path: path, options: options)
    try first.createTable("t")
    for index in 0..<50 { try first.put("v\(index)".bytes, forKey: "k\(index % 5)".bytes, in: "t") }
    // A holder that is no `.oneProcess` writer (its ID is not in the lock file) keeps the lock.
    let shared = first.engine.sharing!.shared
    try shared.lock.acquire()
    let started = Date()
    let open = #expect(throws: LogStoreError.self) { try LogStore(path: path, options: options) }
    #expect(open?.code == .locked)
    #expect(open?.message.contains("stayed held for 30 ms") == true)
    #expect(Date().timeIntervalSince(started) >= 0.03)
    shared.lock.release()
    // A compaction of another process that is alive and never ends.
    let second = try LogStore(path: path, options: options)
    try first.engine.log.lock.withLock { () throws(LogStoreError) in
      try shared.lock.acquire()
      shared.beginCompaction(outputs: 900..<901)
      shared.lock.release()
    }
    let compaction = #expect(throws: LogStoreError.self) { try second.compact() }
    #expect(compaction?.code == .locked)
    #expect(compaction?.message.contains("compacting") == true)
    shared.endCompaction()
    try second.compact()
    #expect(
      try second.snapshot() == [
        "t": Dictionary(uniqueKeysWithValues: (45..<50).map { ("k\($0 % 5)", "v\($0)") })
      ])
    try first.close()
    try second.close()
  }

  @Test(
    "an open that joins a writer and clears a dead write, failing at any of its calls, releases the lock and loses nothing"
  )
  func joinFailsAtEveryCall() throws {
    /// A store with one open writer whose last write died unpublished; the file system counts
    /// calls from here.
    func setUp() throws -> (SimulatedFileSystem, LogStore, LogStore.Options) {
      let fileSystem = SimulatedFileSystem()
      var options = Self.options()
      options.fileSystem = fileSystem
      options.otherProcessPatience = 20
      let living = try LogStore(path: "/store", options: options)
      try living.createTable("t")
      try living.put("v".bytes, forKey: "k".bytes, in: "t")
      let engine = living.engine
      try engine.log.lock.withLock { () throws(LogStoreError) in
        let shared = engine.sharing!.shared
        try shared.lock.acquire()
        shared.markDirty(segment: engine.log.writer!.file.number, upTo: engine.log.writer!.used)
        shared.lock.release()
      }
      return (fileSystem, living, options)
    }
    // The probe's writer stays open while the calls are counted, as each run's does.
    let (probe, probeLiving, probeOptions) = try setUp()
    let first = probe.calls + 1
    try LogStore(path: "/store", options: probeOptions).close()
    let calls = first...probe.calls
    try probeLiving.close()
    #expect(calls.count > 10)
    var failed = 0
    for call in calls {
      let (fileSystem, living, options) = try setUp()
      fileSystem.inject(.init(call: call, errorNumber: EIO, persistent: false))
      do {
        try LogStore(path: "/store", options: options).close()
      } catch {
        failed += 1
        #expect(error.code == .io || error.code == .locked, "call \(call): \(error)")
      }
      fileSystem.clearFaults()
      // The lock is free again, the open writer goes on, and a new open sees everything.
      try living.put("w".bytes, forKey: "k2".bytes, in: "t")
      let again = try LogStore(path: "/store", options: options)
      #expect(try again.snapshot() == ["t": ["k": "v", "k2": "w"]], "call \(call)")
      try again.close()
      try living.close()
    }
    #expect(failed > 0)
  }

  @Test(
    "a compaction and a checkpoint beside another open, failing at any of their calls, lose nothing and leave the lock free",
    arguments: ["compact", "checkpoint"])
  func compactionAndCheckpointFailAtEveryCall(step: String) throws {
    /// Two opens of a store of several segments, half its puts overwritten; the file system
    /// counts calls from here.
    func setUp() throws -> (SimulatedFileSystem, LogStore, LogStore, LogStore.Options) {
      let fileSystem = SimulatedFileSystem()
      var options = Self.options(maxSegmentSize: 4 << 10)
      options.fileSystem = fileSystem
      options.otherProcessPatience = 20
      let running = try LogStore(path: "/store", options: options)
      let other = try LogStore(path: "/store", options: options)
      try running.createTable("t")
      for index in 0..<120 {
        try running.put("value \(index)".bytes, forKey: "k\(index % 60)".bytes, in: "t")
      }
      try other.delete(key: "k0".bytes, in: "t")
      return (fileSystem, running, other, options)
    }
    func run(_ store: LogStore) throws(LogStoreError) {
      if step == "compact" { try store.compact() } else { try store.checkpoint() }
    }
    // Both of the probe's opens stay open while the calls are counted, as each run's do.
    let (probe, probeRunning, probeOther, _) = try setUp()
    let expected = try probeRunning.snapshot()
    let first = probe.calls + 1
    try run(probeRunning)
    let calls = first...probe.calls
    try probeRunning.close()
    try probeOther.close()
    #expect(calls.count > 10)
    var failed = 0
    for call in calls {
      let (fileSystem, running, other, options) = try setUp()
      fileSystem.inject(.init(call: call, errorNumber: EIO, persistent: false))
      do {
        try run(running)
      } catch {
        failed += 1
        #expect(error.code == .io || error.code == .corrupted, "call \(call): \(error)")
      }
      fileSystem.clearFaults()
      // The other open writes at once (the lock is free) and sees everything; so does a new
      // open, and the failed step runs again.
      try other.put("new".bytes, forKey: "k1".bytes, in: "t")
      var now = expected
      now["t"]!["k1"] = "new"
      #expect(try other.snapshot() == now, "call \(call)")
      let again = try LogStore(path: "/store", options: options)
      #expect(try again.snapshot() == now, "call \(call)")
      try run(again)
      #expect(try again.snapshot() == now, "call \(call)")
      try again.close()
      try? running.close()
      try other.close()
      let report = try LogStore.verify(path: "/store", fileSystem: fileSystem)
      #expect(report.isClean, "call \(call): \(report.problems)")
    }
    #expect(failed > 0)
  }

  /// The workload of ``crashBesideAnotherOpen``: two opens of one store take turns writing
  /// (puts, deletes, a batch, a prefix delete) across rotations, one of them compacts and the
  /// other writes an index file in between; each close writes a changes file over it. Returns
  /// how many operations were acknowledged.
  static func twoOpensWorkload(_ fileSystem: SimulatedFileSystem) -> Int {
    var options = Self.options(maxSegmentSize: 4 << 10)
    options.fileSystem = fileSystem
    options.sync = .always
    options.indexFileMinimumLiveBytes = 0
    options.activeHintMinimumBytes = 0
    var acknowledged = 0
    do {
      let first = try LogStore(path: "/store", options: options)
      let second = try LogStore(path: "/store", options: options)
      for (index, operation) in twoOpensOperations.enumerated() {
        let store = index % 2 == 0 ? first : second
        switch operation {
        case .put(let key, let value):
          try store.put(value.bytes, forKey: key.bytes, in: "t")
        case .delete(let key):
          try store.delete(key: key.bytes, in: "t")
        case .deletePrefix(let prefix):
          try store.deletePrefix(prefix.bytes, in: "t")
        case .batch(let puts):
          var batch = WriteBatch()
          for (key, value) in puts { batch.put(value.bytes, forKey: key.bytes, in: "t") }
          try store.write(batch)
        case .createTable:
          try store.createTable("t")
        case .compact:
          try store.compact()
        case .checkpoint:
          try store.checkpoint()
        }
        // One that returns after the crash point was not acknowledged: its process died in it
        // (a write through a mapping cannot fail, so it may seem to end well).
        if fileSystem.crashImage != nil { break }
        acknowledged = index + 1
      }
      // Each reads first, so that its view is not behind and its close writes a changes file.
      _ = try first.count(in: "t")
      try first.close()
      _ = try second.count(in: "t")
      try second.close()
    } catch {}
    return acknowledged
  }

  enum TwoOpensOperation {
    case createTable
    case put(String, String)
    case delete(String)
    case deletePrefix(String)
    case batch([(String, String)])
    case compact
    case checkpoint
  }

  static let twoOpensOperations: [TwoOpensOperation] = {
    var operations: [TwoOpensOperation] = [.createTable]
    for round in 0..<3 {
      for index in 0..<14 {
        operations.append(.put("k\(index % 9)", String(repeating: "\(round)", count: 90 + index)))
      }
      operations += [
        .delete("k\(round)"), .batch([("b\(round)", "x"), ("k8", "batch \(round)")]),
        .deletePrefix("k7"), round == 1 ? .checkpoint : .compact,
      ]
    }
    // Written after the last compaction's index file: the closes write changes over it.
    operations += [.put("k0", "last"), .delete("k1")]
    return operations
  }()

  /// The store after the first `count` operations of ``twoOpensOperations``.
  static func twoOpensState(after count: Int) -> [String: [String: String]] {
    var table: [String: String]?
    for operation in twoOpensOperations.prefix(count) {
      switch operation {
      case .createTable: table = table ?? [:]
      case .put(let key, let value): table?[key] = value
      case .delete(let key): table?[key] = nil
      case .deletePrefix(let prefix): table = table?.filter { !$0.key.hasPrefix(prefix) }
      case .batch(let puts): for (key, value) in puts { table?[key] = value }
      case .compact, .checkpoint: break
      }
    }
    return table.map { ["t": $0] } ?? [:]
  }

  @Test(
    "a crash or power loss at any call of two opens' writes, rotations, a compaction and a checkpoint keeps the acknowledged writes of both"
  )
  func crashBesideAnotherOpen() throws {
    let probe = SimulatedFileSystem()
    #expect(Self.twoOpensWorkload(probe) == Self.twoOpensOperations.count)
    let total = probe.calls
    #expect(try probe.contentsOfDirectory("/store").contains { $0.hasSuffix(".changes") })
    var points = 0
    for call in 1...total where TestDepth.runs(call, every: 9, isEdge: call == total) {
      let fileSystem = SimulatedFileSystem()
      let cuts = [
        SimulatedFileSystem.CrashCut(mode: .process),
        SimulatedFileSystem.CrashCut(mode: .power(seed: UInt64(call))),
      ]
      fileSystem.crash(atCall: call, leaving: cuts)
      let acknowledged = Self.twoOpensWorkload(fileSystem)
      let images = try #require(fileSystem.crashImages, "call \(call) was never reached")
      // Every acknowledged write was synced (`.always`): both kinds of crash keep them all,
      // and the one in flight may or may not be there.
      let allowed = [
        Self.twoOpensState(after: acknowledged), Self.twoOpensState(after: acknowledged + 1),
      ]
      for (cut, image) in zip(cuts, images) {
        let point = "crash at call \(call) (\(cut.mode)), \(acknowledged) acknowledged"
        // Both processes died: the next one opens with the boot kept (a process crash) or a
        // new one (a power loss, after which the shared state is not trusted).
        let restarted = SimulatedFileSystem(
          files: image, boot: cut.mode == .process ? try fileSystem.bootSession() : nil)
        guard restarted.directoryExists("/store") else {
          #expect(acknowledged == 0, "\(point): no store")
          continue
        }
        var options = Self.options()
        options.fileSystem = restarted
        let follower = try LogStore(path: "/store", options: Self.readOnly(options))
        let followed = try follower.snapshot()
        try follower.close()
        let store = try LogStore(path: "/store", options: options)
        let found = try store.snapshot()
        #expect(allowed.contains(found), "\(point): \(found)")
        #expect(allowed.contains(followed) || followed == found, "\(point), follower: \(followed)")
        // It goes on writing, and what it writes stays.
        try store.createTable("t")
        try store.put("after".bytes, forKey: "later".bytes, in: "t")
        try store.close()
        let reopened = try LogStore(path: "/store", options: options)
        #expect(try reopened.value(forKey: "later".bytes, in: "t") == "after".bytes, "\(point)")
        try reopened.close()
        let report = try LogStore.verify(path: "/store", fileSystem: restarted)
        #expect(report.isClean, "\(point): \(report.problems.prefix(3))")
        points += 1
      }
    }
    #expect(points > 10)
    print("two opens, \(TestDepth.current): \(points) crash images of \(total) calls")
  }

  static func readOnly(_ options: LogStore.Options) -> LogStore.Options {
    var options = options
    options.readOnly = true
    return options
  }

  @Test(
    "another open's write at any call of a rotation or a compaction: both orders are one, and every open reads it",
    arguments: ["rotation", "compaction"])
  func interleavedAroundRotationAndCompaction(step: String) throws {
    /// Two opens of a store whose active segment is nearly full, with keys overwritten.
    func setUp() throws -> (SimulatedFileSystem, LogStore, LogStore, LogStore.Options) {
      let fileSystem = SimulatedFileSystem()
      var options = Self.options(maxSegmentSize: 4 << 10)
      options.fileSystem = fileSystem
      let running = try LogStore(path: "/store", options: options)
      let other = try LogStore(path: "/store", options: options)
      try running.createTable("t")
      for index in 0..<40 {
        try running.put(Array(repeating: 1, count: 80), forKey: "k\(index % 10)".bytes, in: "t")
      }
      return (fileSystem, running, other, options)
    }
    /// The step whose calls the other open's write goes between: a put that starts a new
    /// segment, or a compaction.
    func run(_ store: LogStore) throws {
      if step == "rotation" {
        try store.put(Array(repeating: 2, count: 3_800), forKey: "big".bytes, in: "t")
      } else {
        try store.compact()
      }
    }
    let (probe, probeRunning, probeOther, _) = try setUp()
    var expected = try probeRunning.snapshot()
    let first = probe.calls + 1
    try run(probeRunning)
    let calls = first...probe.calls
    expected = try probeRunning.snapshot()
    expected["t"]!["other"] = "o"
    try probeRunning.close()
    try probeOther.close()
    #expect(calls.count > 5)
    // How many times the other open's write ran whole between two calls of the step (the
    // others waited for the step's hold of the store's lock).
    let inside = Guarded(0)
    var points = 0
    for call in calls where TestDepth.runs(call, every: 2, isEdge: call == calls.lowerBound) {
      points += 1
      let (fileSystem, running, other, options) = try setUp()
      let wrote = DispatchGroup()
      let failure = Guarded<LogStoreError?>(nil)
      let started = Guarded(false)
      fileSystem.callHook = { upcoming in
        guard upcoming.number == call, !started.withLock({ $0 }) else { return }
        started.withLock { $0 = true }
        // The other open writes from a thread of its own; if the step holds the store's lock
        // here, the write waits for it, and the step goes on after a moment.
        wrote.enter()
        Thread {
          do throws(LogStoreError) {
            try other.put("o".bytes, forKey: "other".bytes, in: "t")
          } catch {
            failure.withLock { $0 = error }
          }
          wrote.leave()
        }.start()
        if wrote.wait(timeout: .now() + 0.02) == .success {
          inside.withLock { $0 += 1 }
        }
      }
      try run(running)
      wrote.wait()
      fileSystem.callHook = nil
      #expect(started.withLock { $0 }, "call \(call) was not reached")
      #expect(
        failure.withLock { $0 } == nil,
        "call \(call): \(String(describing: failure.withLock { $0 }))")
      #expect(try running.snapshot() == expected, "call \(call)")
      #expect(try other.snapshot() == expected, "call \(call)")
      try running.put("r".bytes, forKey: "again".bytes, in: "t")
      #expect(try other.value(forKey: "again".bytes, in: "t") == "r".bytes, "call \(call)")
      try running.close()
      try other.close()
      let reopened = try LogStore(path: "/store", options: options)
      var after = expected
      after["t"]!["again"] = "r"
      #expect(try reopened.snapshot() == after, "call \(call)")
      try reopened.close()
      let report = try LogStore.verify(path: "/store", fileSystem: fileSystem)
      #expect(report.isClean, "call \(call): \(report.problems.prefix(3))")
    }
    #expect(inside.withLock { $0 } > 0)
    print(
      "interleavings around a \(step): \(points) of \(calls.count) calls, the other write "
        + "whole inside the step at \(inside.withLock { $0 })")
  }

  @Test("a compaction whose process died has its outputs removed by the next one")
  func deadCompactionCleared() throws {
    let fileSystem = SimulatedFileSystem()
    var options = Self.options(maxSegmentSize: 4 << 10)
    options.fileSystem = fileSystem
    let first = try LogStore(path: "/store", options: options)
    let second = try LogStore(path: "/store", options: options)
    try first.createTable("t")
    for index in 0..<200 {
      try first.put("value \(index)".bytes, forKey: "k\(index % 30)".bytes, in: "t")
    }
    let expected = try first.snapshot()
    var secondRan = false
    let failed = #expect(throws: LogStoreError.self) {
      try first.compact { done, _ in
        guard !secondRan, done > 0 else { return }
        secondRan = true
        // The process running this compaction is taken for dead: the next compaction removes
        // its outputs and runs itself.
        fileSystem.markDead(fileSystem.processID)
        do { try second.compact() } catch { Issue.record("\(error)") }
      }
    }
    #expect(failed != nil)
    #expect(secondRan)
    #expect(try second.snapshot() == expected)
    #expect(try first.snapshot() == expected)
    #expect(fileSystem.files.keys.allSatisfy { !$0.hasSuffix(".tmp") })
  }

  @Test(
    "a shared state of another boot does not hold a .oneProcess writer back; a short one is no state to a follower"
  )
  func otherBootAndShortState() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    do {
      let store = try LogStore(path: path, options: Self.options())
      try store.createTable("t")
      try store.put("v".bytes, forKey: "k".bytes, in: "t")
      try store.close()
    }
    // Left by a boot before: the opens it lists are of processes that are gone with it.
    var other = [UInt8](repeating: 0, count: SharedState.size)
    other.withUnsafeMutableBytes {
      SharedState.initialize(
        $0.baseAddress!, boot: [UInt8](repeating: 9, count: 16),
        lockKind: SystemFileSystem().sharedMutexKind)
    }
    other.replaceSubrange(
      SharedState.opensOffset..<SharedState.opensOffset + 8,
      with: littleEndianBytes(UInt64(1) << 32 | 7))
    try writeFile(path + "/" + SharedState.fileName, other)
    let single = try LogStore(path: path)
    #expect(try single.value(forKey: "k".bytes, in: "t") == "v".bytes)
    try single.close()
    try writeFile(path + "/" + SharedState.fileName, [UInt8](repeating: 0, count: 100))
    let follower = try LogStore(path: path, options: Self.options(readOnly: true))
    #expect(try follower.value(forKey: "k".bytes, in: "t") == "v".bytes)
    try follower.close()
  }
}

extension ManyProcessesTests {
  @Test(
    "a backup holds what every open wrote before it began, not only its own open's writes, beside an index file another open wrote"
  )
  func backupHoldsOthersWrites() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    var options = Self.options()
    options.indexFileMinimumLiveBytes = 0
    let first = try LogStore(path: path, options: options)
    let second = try LogStore(path: path, options: options)
    try first.createTable("t")
    try first.put("a".bytes, forKey: "k1".bytes, in: "t")
    _ = try second.snapshot()
    // Written by the first open after the second last looked, around an index file.
    try first.put("b".bytes, forKey: "k2".bytes, in: "t")
    try first.checkpoint()
    try first.delete(key: "k1".bytes, in: "t")
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: path).contains { $0.hasSuffix(".index") })
    try second.backup(to: directory.appending("copy"))
    // The second open's view uses no index file (it follows the other's writes in the log, and
    // takes a new file in only when it reads the store anew): the copy reads its log.
    let copy = try LogStore(path: directory.appending("copy"), options: .init(readOnly: true))
    #expect(try copy.snapshot() == ["t": ["k2": "b"]])
    #expect(copy.openReport.rejectedIndexFiles.isEmpty)
    try first.close()
    try second.close()
  }
}
