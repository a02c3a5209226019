import Foundation
import Testing

@testable import LogStore
@testable import LogStoreTesting

/// Calls that arrive while a compaction or a sync outside the log's lock is in progress. Each
/// test stops the thread doing that work just before one of its file-system calls (with the
/// simulated file system's call hook), starts the other calls on threads of their own, waits
/// until they are asleep at their waits, and only then lets the work go on.
@Suite("Calls that meet a compaction or a sync in flight", .serialized)
struct InFlightTests {
  private static let path = "/store"

  private func options(
    _ fileSystem: SimulatedFileSystem, sync: SyncPolicy = .never,
    compaction: CompactionPolicy = .manual, maxSegmentSize: Int = 64 << 10
  ) -> LogStore.Options {
    var options = LogStore.Options(
      sync: sync, corruption: .fail, compaction: compaction, maxSegmentSize: maxSegmentSize)
    options.fileSystem = fileSystem
    return options
  }

  /// Runs `action` on the thread about to make the first call that `matches` once this
  /// returns, before that call; `later` before every matching call after it. An error `action`
  /// throws is kept in `failure`.
  private final class Trap: Sendable {
    let failure = Guarded<(any Error)?>(nil)
    private let fired = OnceFlag()

    init(
      _ fileSystem: SimulatedFileSystem,
      when matches: @escaping @Sendable (SimulatedFileSystem.UpcomingCall) -> Bool,
      later: (@Sendable (SimulatedFileSystem.UpcomingCall) -> Void)? = nil,
      then action: @escaping @Sendable (SimulatedFileSystem.UpcomingCall) throws -> Void
    ) {
      fileSystem.callHook = { [fired, failure] call in
        guard matches(call) else { return }
        guard fired.set() else {
          later?(call)
          return
        }
        do { try action(call) } catch { failure.withLock { $0 = error } }
      }
    }

    var hasFired: Bool { fired.isSet }
  }

  private static func isDataSync(_ call: SimulatedFileSystem.UpcomingCall) -> Bool {
    (call.operation == "msync" || call.operation == "fdatasync") && call.path.hasSuffix(".log")
  }

  private static func isCompactionOutput(_ call: SimulatedFileSystem.UpcomingCall) -> Bool {
    call.path.hasSuffix(".log.tmp")
  }

  /// Table "t" with `keys` keys written `rounds` times each (values of 100 bytes), and the model.
  private func fill(_ store: LogStore, keys: Int, rounds: Int) throws -> [String: String] {
    try store.createTable("t")
    var model: [String: String] = [:]
    for round in 0..<rounds {
      for number in 0..<keys {
        let value = "\(round)-" + String(repeating: "v", count: 96)
        try store.put(value.bytes, forKey: "k\(number)".bytes, in: "t")
        model["k\(number)"] = value
      }
    }
    return model
  }

  /// A call made on a thread of its own, started (from a hook) while what it must wait for is
  /// held, and left asleep at that wait.
  private final class Arrival: Sendable {
    private let thread = Guarded<WaitingThread?>(nil)
    private let failure = Guarded<LogStoreError?>(nil)

    /// Starts `body` on a new thread and returns once that thread is asleep.
    func start(_ body: @escaping @Sendable () throws(LogStoreError) -> Void) throws {
      let started = WaitingThread { [failure] in
        do throws(LogStoreError) { try body() } catch { failure.withLock { $0 = error } }
      }
      thread.withLock { $0 = started }
      try started.waitUntilAsleep()
    }

    /// Waits for the call to be started and to return; the error it threw, if any.
    func finish() throws -> LogStoreError? {
      try waitUntil("the call to be started") { thread.withLock { $0 } != nil }
      thread.withLock { $0 }?.join()
      return failure.withLock { $0 }
    }
  }

  @Test("compact() called while a compaction runs waits for it, then compacts again")
  func compactDuringCompaction() throws {
    let fileSystem = SimulatedFileSystem()
    let (store, model) = try filledStore(fileSystem, keys: 300, rounds: 8)
    let second = Arrival()
    let reports = Guarded<[(done: Int, total: Int)]>([])
    let trap = Trap(fileSystem, when: Self.isCompactionOutput) { _ in
      try second.start { () throws(LogStoreError) in
        try store.compact { done, total in reports.withLock { $0.append((done, total)) } }
      }
    }
    try store.compact()
    #expect(try second.finish() == nil)
    #expect(trap.failure.withLock { $0 } == nil)
    // The second compaction ran over the first one's outputs, reporting its progress.
    let progress = reports.withLock { $0 }
    #expect(progress.count >= 2)
    #expect(progress.first?.done == 0 && (progress.first?.total ?? 0) > 0)
    #expect(progress.last.map { $0.done == $0.total } == true)
    #expect(try store.snapshot() == ["t": model])
    try store.close()
    let reopened = try LogStore(path: Self.path, options: options(fileSystem))
    #expect(try reopened.snapshot() == ["t": model])
  }

  @Test("close() during a compaction stops it early, and the reopened store is intact")
  func closeDuringCompaction() throws {
    let fileSystem = SimulatedFileSystem()
    // More than the 512 records judged at a time, so the copy goes on after its first output.
    let (store, model) = try filledStore(fileSystem, keys: 2_000, rounds: 2)
    let closing = Arrival()
    let trap = Trap(fileSystem, when: Self.isCompactionOutput) { _ in
      try closing.start { () throws(LogStoreError) in try store.close() }
    }
    #expect(throws: LogStoreError.self) { try store.compact() }
    #expect(try closing.finish() == nil)
    #expect(trap.failure.withLock { $0 } == nil)
    #expect(!fileSystem.files.keys.contains { $0.hasSuffix(".tmp") }, "outputs left behind")
    let reopened = try LogStore(path: Self.path, options: options(fileSystem))
    #expect(try reopened.snapshot() == ["t": model])
  }

  @Test("waitForCompaction() throws on a closed store and returns at once when nothing compacts")
  func waitForCompactionWithoutCompactions() throws {
    let fileSystem = SimulatedFileSystem()
    let store = try LogStore(path: Self.path, options: options(fileSystem, compaction: .automatic))
    _ = try fill(store, keys: 10, rounds: 1)
    try store.waitForCompaction()
    try store.close()
    let error = #expect(throws: LogStoreError.self) { try store.waitForCompaction() }
    #expect(error?.code == .closed)
    let manual = try LogStore(path: Self.path, options: options(fileSystem, compaction: .manual))
    try manual.waitForCompaction()
    try manual.close()
    var readOnly = options(fileSystem, compaction: .automatic)
    readOnly.readOnly = true
    let reader = try LogStore(path: Self.path, options: readOnly)
    #expect(reader.options.readOnly)
    try reader.waitForCompaction()
  }

  /// A store on `fileSystem` filled by ``fill(_:keys:rounds:)``, and what it holds.
  private func filledStore(
    _ fileSystem: SimulatedFileSystem, sync: SyncPolicy = .never, keys: Int, rounds: Int
  ) throws -> (LogStore, [String: String]) {
    let store = try LogStore(path: Self.path, options: options(fileSystem, sync: sync))
    return (store, try fill(store, keys: keys, rounds: rounds))
  }

  /// A store whose garbage is past the automatic threshold (6 MiB of overwrites), closed and
  /// opened again with automatic compaction; and what it holds.
  private func storeWithGarbage(_ fileSystem: SimulatedFileSystem) throws -> (
    LogStore, [String: String]
  ) {
    let writer = try LogStore(
      path: Self.path, options: options(fileSystem, maxSegmentSize: 1 << 20))
    let model = try fill(writer, keys: 200, rounds: 300)
    try writer.close()
    let store = try LogStore(
      path: Self.path,
      options: options(fileSystem, compaction: .automatic, maxSegmentSize: 1 << 20))
    return (store, model)
  }

  /// Waits for automatic compaction, then checks that it left little garbage and lost nothing.
  private func expectCompacted(_ store: LogStore, holding model: [String: String]) throws {
    try store.waitForCompaction()
    #expect(try store.statistics().garbageBytes < CompactionScheduler.minimumGarbage)
    #expect(try store.snapshot() == ["t": model])
  }

  @Test("waitForCompaction() starts a compaction that is due, and reports one that failed")
  func waitForCompactionRunsAndReports() throws {
    let fileSystem = SimulatedFileSystem()
    let (store, model) = try storeWithGarbage(fileSystem)
    // Nothing has been written since the open, so only the wait finds the garbage.
    fileSystem.inject(.init(call: fileSystem.calls + 1, errorNumber: ENOSPC, persistent: true))
    do {
      try store.waitForCompaction()
      Issue.record("a compaction on a full disk succeeded")
    } catch {
      #expect(error.code == .diskFull)
    }
    fileSystem.clearFaults()
    #expect(try store.snapshot() == ["t": model])
    try expectCompacted(store, holding: model)
  }

  @Test("waitForCompaction() returns when the store is closed during the compaction it waits for")
  func closedWhileWaiting() throws {
    let fileSystem = SimulatedFileSystem()
    let (store, model) = try storeWithGarbage(fileSystem)
    let closing = Arrival()
    let trap = Trap(fileSystem, when: Self.isCompactionOutput) { _ in
      try closing.start { () throws(LogStoreError) in try store.close() }
    }
    // The wait ends as soon as the store is closing, perhaps before the hook has kept the
    // thread that closes it.
    try store.waitForCompaction()
    #expect(try closing.finish() == nil)
    #expect(trap.failure.withLock { $0 } == nil)
    let reopened = try LogStore(path: Self.path, options: options(fileSystem))
    #expect(try reopened.snapshot() == ["t": model])
  }

  @Test("writes made during an automatic compaction that bring garbage back start another one")
  func compactionRequestedAgain() throws {
    let fileSystem = SimulatedFileSystem()
    let (store, before) = try storeWithGarbage(fileSystem)
    var model = before
    // Another 6 MiB of overwrites while the compaction thread is about to write its output.
    let trap = Trap(fileSystem, when: Self.isCompactionOutput) { _ in
      for round in 0..<300 {
        for number in 0..<200 {
          let value = "again \(round)-" + String(repeating: "w", count: 90)
          try store.put(value.bytes, forKey: "k\(number)".bytes, in: "t")
        }
      }
    }
    for number in 0..<200 {
      model["k\(number)"] = "again 299-" + String(repeating: "w", count: 90)
    }
    try expectCompacted(store, holding: model)
    #expect(trap.hasFired)
    #expect(trap.failure.withLock { $0 } == nil)
  }

  @Test("when a group's sync fails, every writer of the group gets the error and none comes back")
  func failedGroupSync() throws {
    let fileSystem = SimulatedFileSystem()
    let store = try LogStore(path: Self.path, options: options(fileSystem, sync: .always))
    try store.createTable("t")
    let writers = [Arrival(), Arrival()]
    // The first writer's sync is held while two more queue behind it; they then form one
    // group, whose sync fails.
    let failed = OnceFlag()
    let trap = Trap(
      fileSystem, when: Self.isDataSync,
      later: { call in
        guard let number = call.number, failed.set() else { return }
        fileSystem.inject(.init(call: number, errorNumber: EIO, persistent: false))
      },
      then: { _ in
        for (index, writer) in writers.enumerated() {
          try writer.start { () throws(LogStoreError) in
            try store.put("late".bytes, forKey: "w\(index)".bytes, in: "t")
          }
        }
      })
    try store.put("first".bytes, forKey: "w".bytes, in: "t")
    #expect(try writers.map { try $0.finish()?.code } == [.io, .io])
    #expect(trap.failure.withLock { $0 } == nil)
    fileSystem.clearFaults()
    #expect(try store.snapshot() == ["t": ["w": "first"]])
    var images = [fileSystem.image(.process)]
    for seed: UInt64 in 0..<8 { images.append(fileSystem.image(.power(seed: seed))) }
    for image in images {
      let copy = SimulatedFileSystem(files: image)
      let reopened = try LogStore(path: Self.path, options: options(copy))
      #expect(try reopened.snapshot() == ["t": ["w": "first"]])
    }
  }

  /// What takes in a file written while writes go on, in ``failedSyncWhileTakingIn(_:)``.
  enum TakingIn: String, CaseIterable, CustomTestStringConvertible {
    /// A compaction that writes an index file of its outputs, which the swap takes in
    /// (``Checkpointer/adopt(number:segments:sizes:)``, reading the log after it back).
    case compactionsIndexFile = "a compaction's index file"
    /// A compaction without one: the swap points each key at its copy.
    case compactionsOutputs = "a compaction's outputs"
    /// A checkpoint's index file, published as a compaction's is taken in.
    case checkpointsIndexFile = "a checkpoint's index file"

    var testDescription: String { rawValue }

    /// Whether `call` is the first one after the log is synced for what is taken in: the
    /// file's first write, or, when the compaction writes none, its first output's rename.
    func startsWriter(_ call: SimulatedFileSystem.UpcomingCall) -> Bool {
      switch self {
      case .compactionsOutputs: call.operation == "rename" && call.path.hasSuffix(".log.tmp")
      case .compactionsIndexFile, .checkpointsIndexFile: call.path.hasSuffix(".index.tmp")
      }
    }
  }

  /// Under `.always` a group's records are appended, synced without the log's lock, and
  /// applied only once the sync succeeds; a sync that fails zeroes them and hands their
  /// sequence numbers back. A checkpoint's new index file, and one a compaction writes of its
  /// outputs, become the key directory with the log after them read back to its end: read
  /// while such a sync is in flight, a delete whose sync then fails read as done, in memory.
  @Test(
    "a .always write whose group sync is in flight while the store takes in a new index file or a compaction's outputs, and then fails, stays undone in memory and on disk",
    arguments: TakingIn.allCases)
  func failedSyncWhileTakingIn(_ takingIn: TakingIn) throws {
    let fileSystem = SimulatedFileSystem()
    var options = options(fileSystem, sync: .always, maxSegmentSize: 4096)
    if takingIn == .compactionsIndexFile { options.indexFileMinimumLiveBytes = 0 }
    let store = try LogStore(path: Self.path, options: options)
    let model = try fill(store, keys: 40, rounds: 2)
    // The writer starts once the log is synced for what is taken in (what the compaction's
    // copy judged by, or the checkpoint's position). Its sync is held until the thread taking
    // the file in waits for it (or, on code that does not wait, has taken it in and returned).
    let writer = Arrival()
    let triggered = OnceFlag()
    let writerHeld = OnceFlag()
    let syncHeld = OnceFlag()
    let release = DispatchSemaphore(value: 0)
    let failure = Guarded<(any Error)?>(nil)
    fileSystem.callHook = { call in
      if takingIn.startsWriter(call), triggered.set() {
        do {
          try writer.start { () throws(LogStoreError) in
            try store.delete(key: "k1".bytes, in: "t")
          }
        } catch { failure.withLock { $0 = error } }
        writerHeld.set()
      } else if triggered.isSet, !writerHeld.isSet, Self.isDataSync(call),
        let number = call.number, syncHeld.set()
      {
        // The writer's sync: only the writer makes calls until it is held here.
        release.wait()
        fileSystem.inject(.init(call: number, errorNumber: EIO, persistent: false))
      }
    }
    let taker = WaitingThread {
      do {
        if takingIn == .checkpointsIndexFile {
          try store.checkpoint()
        } else {
          try store.compact()
        }
      } catch {
        Issue.record("\(takingIn): \(error)")
      }
    }
    try waitUntil("the writer to be held at its sync") { writerHeld.isSet }
    #expect(syncHeld.isSet && failure.withLock { $0 } == nil)
    let asleep = Result { try taker.waitUntilAsleep(orReturn: true) }
    release.signal()
    try asleep.get()
    #expect(try writer.finish()?.code == .io)
    taker.join()
    fileSystem.callHook = nil
    if takingIn != .compactionsOutputs {
      #expect(try fileSystem.contentsOfDirectory(Self.path).contains { $0.hasSuffix(".index") })
    }
    #expect(try store.value(forKey: "k1".bytes, in: "t") == model["k1"]?.bytes)
    #expect(try store.snapshot() == ["t": model])
    #expect(try afterPowerLosses(fileSystem) == [["t": model]])
    try store.close()
    let reopened = try LogStore(path: Self.path, options: options)
    #expect(try reopened.snapshot() == ["t": model])
  }

  /// The same for a key directory rebuilt from the log, which a reader or a writer makes when
  /// it meets damage in the index file (``IndexRepair/rebuild()``): read while a group's sync
  /// was in flight, it took in the group's records, and a put whose sync then failed pointed at
  /// the zeros left in its place.
  @Test(
    "a .always put whose group sync is in flight while a reader meets a damaged index file and rebuilds the key directory from the log, and then fails, stays undone"
  )
  func failedSyncWhileRebuilding() throws {
    // An index file, then keys written after it, left by a crash: the open reads those after
    // the file and looks them up in it only once counts are asked for.
    let written = SimulatedFileSystem()
    var options = options(written, sync: .always)
    options.indexFileMinimumLiveBytes = 0
    let store = try LogStore(path: Self.path, options: options)
    var model = try fill(store, keys: 40, rounds: 1)
    try store.checkpoint()
    for number in 40..<60 {
      try store.put("after \(number)".bytes, forKey: "k\(number)".bytes, in: "t")
      model["k\(number)"] = "after \(number)"
    }
    var image = written.image(.process)
    try store.close()
    let index = try #require(image.keys.first { $0.hasSuffix(".index") })
    image[index] = IndexFileTests.damagingSlotGroups(image[index]!, every: 7)
    let fileSystem = SimulatedFileSystem(files: image)
    options.fileSystem = fileSystem
    let damaged = try LogStore(path: Self.path, options: options)
    #expect(damaged.openReport.indexFile != nil)
    let writer = Arrival()
    let syncHeld = OnceFlag()
    let release = DispatchSemaphore(value: 0)
    fileSystem.callHook = { call in
      guard Self.isDataSync(call), let number = call.number, syncHeld.set() else { return }
      release.wait()
      fileSystem.inject(.init(call: number, errorNumber: EIO, persistent: false))
    }
    try writer.start { () throws(LogStoreError) in
      try damaged.put("lost".bytes, forKey: "k1".bytes, in: "t")
    }
    #expect(syncHeld.isSet)
    // Counting settles the keys written after the file, meets the damage, and rebuilds.
    #expect(try damaged.statistics().indexMappedBytes == 0)
    release.signal()
    #expect(try writer.finish()?.code == .io)
    fileSystem.callHook = nil
    #expect(try damaged.value(forKey: "k1".bytes, in: "t") == model["k1"]?.bytes)
    #expect(try damaged.snapshot() == ["t": model])
    #expect(try damaged.statistics().liveItems == model.count)
    try damaged.put("next".bytes, forKey: "k2".bytes, in: "t")
    model["k2"] = "next"
    #expect(try damaged.snapshot() == ["t": model])
    try damaged.close()
    let reopened = try LogStore(path: Self.path, options: options)
    #expect(try reopened.snapshot() == ["t": model])
  }

  /// The store's states after power losses now, as seen by a reopened store.
  private func afterPowerLosses(_ fileSystem: SimulatedFileSystem) throws -> Set<
    [String: [String: String]]
  > {
    var states: Set<[String: [String: String]]> = []
    for seed: UInt64 in 0..<8 {
      let copy = SimulatedFileSystem(files: fileSystem.image(.power(seed: seed)))
      let reopened = try LogStore(path: Self.path, options: options(copy))
      states.insert(try reopened.snapshot())
    }
    return states
  }

  @Test("sync() and compaction wait for a group's sync in flight")
  func waitForGroupSync() throws {
    let fileSystem = SimulatedFileSystem()
    let (store, model) = try filledStore(fileSystem, sync: .always, keys: 20, rounds: 2)
    let syncing = Arrival()
    let compacting = Arrival()
    let trap = Trap(fileSystem, when: Self.isDataSync) { _ in
      try syncing.start { () throws(LogStoreError) in try store.sync() }
      try compacting.start { () throws(LogStoreError) in try store.compact() }
    }
    try store.put("last".bytes, forKey: "k0".bytes, in: "t")
    #expect(try syncing.finish() == nil)
    #expect(try compacting.finish() == nil)
    #expect(trap.failure.withLock { $0 } == nil)
    var expected = model
    expected["k0"] = "last"
    #expect(try store.snapshot() == ["t": expected])
    #expect(try afterPowerLosses(fileSystem) == [["t": expected]])
  }

  @Test("a group commit waits for compaction's sync in flight")
  func groupWaitsForCompactionSync() throws {
    let fileSystem = SimulatedFileSystem()
    let (store, before) = try filledStore(fileSystem, sync: .always, keys: 20, rounds: 2)
    var model = before
    // The compaction leaves a new active segment whose header the next one syncs first.
    try store.compact()
    let late = Arrival()
    let trap = Trap(fileSystem, when: Self.isDataSync) { _ in
      try late.start { () throws(LogStoreError) in
        try store.put("late".bytes, forKey: "k1".bytes, in: "t")
      }
    }
    try store.compact()
    #expect(try late.finish() == nil)
    #expect(trap.failure.withLock { $0 } == nil)
    model["k1"] = "late"
    #expect(try store.snapshot() == ["t": model])
    #expect(try afterPowerLosses(fileSystem) == [["t": model]])
  }

  @Test(
    "a put committed behind its table's creation, while that is being synced or in the same group, gets the default lifetime the creation gives"
  )
  func putBehindCreationInFlight() throws {
    let second: Int64 = 1_000_000
    let cases = [(nil, 60 * second), (60 * second, 30 * second), (60 * second, 0)]
    for (before, created) in cases {
      for sameGroup in [false, true] {
        let fileSystem = SimulatedFileSystem()
        let store = try LogStore(path: Self.path, options: options(fileSystem, sync: .always))
        try store.createTable("other")
        if let before { try store.createTable("t", defaultLifetime: before) }
        // The put commits while the creation's sync is held, before the creation is applied;
        // or both queue while another write's sync is held, and are written as one group,
        // the creation first. Either way the log has the put after the creation.
        let creating = Arrival()
        let late = Arrival()
        let trap = Trap(fileSystem, when: Self.isDataSync) { _ in
          if sameGroup {
            try creating.start { () throws(LogStoreError) in
              try store.createTable("t", defaultLifetime: created)
            }
          }
          try late.start { () throws(LogStoreError) in
            try store.put("v".bytes, forKey: "k".bytes, in: "t")
          }
        }
        let start = store.expiryNow()
        if sameGroup {
          try store.put("w".bytes, forKey: "k".bytes, in: "other")
          #expect(try creating.finish() == nil)
        } else {
          try store.createTable("t", defaultLifetime: created)
        }
        #expect(try late.finish() == nil)
        #expect(trap.hasFired && trap.failure.withLock { $0 } == nil)
        let label =
          "lifetime \(before.map(String.init) ?? "none, no table"), then \(created), same group \(sameGroup)"
        let expires = try store.entry(forKey: "k".bytes, in: "t")?.expires?.microsecondsSince1970
        if created == 0 {
          #expect(expires == nil, "\(label)")
        } else {
          #expect(
            expires.map { $0 >= start + created && $0 <= store.expiryNow() + created } == true,
            "\(label): expires \(expires.map(String.init) ?? "never")")
        }
        try store.close()
      }
    }
  }
}
