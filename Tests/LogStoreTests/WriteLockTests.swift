import Foundation
import Testing

@testable import LogStore

/// The lock every write of `.manyProcesses` use takes: on Linux with glibc a robust mutex in
/// the shared state (``SystemSharedMutex``), elsewhere (and on the simulated file system) the
/// lock file's `flock` (docs/CONCURRENCY.md, "Many processes").
@Suite("The write lock of .manyProcesses use")
struct WriteLockTests {
  /// Whether writes here take the mutex rather than the lock file.
  static let takesMutex = SystemFileSystem().sharedMutexKind != 0

  /// Two writing opens of `/store` on `fileSystem` with `options`, as processes 11 and 22.
  static func twoOpens(on fileSystem: SimulatedFileSystem, _ options: LogStore.Options) throws
    -> (LogStore, LogStore)
  {
    var options = options
    options.fileSystem = fileSystem.process(11)
    let first = try LogStore(path: "/store", options: options)
    options.fileSystem = fileSystem.process(22)
    return (first, try LogStore(path: "/store", options: options))
  }

  /// Closes `stores`, then opens `/store` on `fileSystem` with `options` as a third process
  /// (33), for the caller to read and close.
  static func reopenAsThird(
    closing stores: LogStore..., on fileSystem: SimulatedFileSystem, _ options: LogStore.Options
  ) throws -> LogStore {
    for store in stores { try store.close() }
    var options = options
    options.fileSystem = fileSystem.process(33)
    return try LogStore(path: "/store", options: options)
  }

  @Test(
    "a thread that dies holding the write lock leaves it to the next writer, which clears what it appended",
    .enabled(if: takesMutex, "writes take the lock file here, which a thread's end leaves held"))
  func threadDiesHoldingTheLock() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let dying = try LogStore(path: path, options: ManyProcessesTests.options())
    let living = try LogStore(path: path, options: ManyProcessesTests.options())
    try living.createTable("t")
    try living.put("kept".bytes, forKey: "a".bytes, in: "t")
    // The thread ends inside its write: the kernel marks the mutex its holder died.
    let ended = DispatchSemaphore(value: 0)
    let thread = Thread {
      do { try ManyProcessesTests.appendUnpublished(dying, keys: ["ghost"]) } catch {
        Issue.record("\(error)")
      }
      ended.signal()
    }
    thread.start()
    ended.wait()
    usleep(20_000)
    try living.put("after".bytes, forKey: "b".bytes, in: "t")
    #expect(try living.snapshot() == ["t": ["a": "kept", "b": "after"]])
    try living.close()
    let reopened = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(try reopened.snapshot() == ["t": ["a": "kept", "b": "after"]])
    try reopened.close()
    #expect(try LogStore.verify(path: path).isClean)
  }

  @Test(
    "memory of the write lock overwritten fails writes with .locked, never hangs them, and is renewed once nobody has the store open",
    .enabled(if: takesMutex, "writes take the lock file here"),
    arguments: [UInt8(0xFF), 0x01, 0x80])
  func overwrittenLock(byte: UInt8) throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    var options = ManyProcessesTests.options()
    options.otherProcessPatience = 50
    let first = try LogStore(path: path, options: options)
    try first.createTable("t")
    try first.put("v".bytes, forKey: "k".bytes, in: "t")
    // As a stray write into the shared state's mapping would leave it.
    let handle = try SystemFileSystem().openFile(
      path + "/" + SharedState.fileName, mode: .readWrite)
    try [UInt8](repeating: byte, count: SharedState.mutexLength).withBytes {
      bytes throws(LogStoreError) in try handle.write(bytes, at: SharedState.mutexOffset)
    }
    handle.close()
    // Whatever the bytes say, a write ends within the patience: done, or refused.
    let done = DispatchSemaphore(value: 0)
    let outcome = Guarded<String>("")
    Thread {
      do throws(LogStoreError) {
        try first.put("w".bytes, forKey: "k2".bytes, in: "t")
        outcome.withLock { $0 = "written" }
      } catch {
        outcome.withLock { $0 = "\(error.code)" }
      }
      done.signal()
    }.start()
    #expect(done.wait(timeout: .now() + 10) == .success, "a write hung on the overwritten lock")
    #expect(["written", "locked", "io"].contains(outcome.withLock { $0 }))
    print("overwritten with \(byte): \(outcome.withLock { $0 })")
    try? first.close()
    // Nobody has it open: the next open renews the lock, and the store is whole.
    let second = try LogStore(path: path, options: options)
    try second.put("x".bytes, forKey: "k3".bytes, in: "t")
    let items = try second.snapshot()["t"]!
    #expect(items["k"] == "v" && items["k3"] == "x", "\(items)")
    try second.close()
    #expect(try LogStore.verify(path: path).isClean)
  }

  @Test(
    "a writer whose view is behind others' puts writes without catching up, yet sees their table changes before it checks a write, and every call after reads all in order"
  )
  func viewBehindSeesTableChanges() throws {
    let fileSystem = SimulatedFileSystem()
    let options = ManyProcessesTests.options()
    let (first, second) = try Self.twoOpens(on: fileSystem, options)
    try first.createTable("t")
    try first.put("1".bytes, forKey: "a".bytes, in: "t")
    try second.put("2".bytes, forKey: "b".bytes, in: "t")
    // Only a put of another process since its view: the write leaves the view behind.
    try first.put("3".bytes, forKey: "a".bytes, in: "t")
    #expect(first.engine.sharing!.viewBehind)
    try first.put("4".bytes, forKey: "c".bytes, in: "t")
    #expect(first.engine.sharing!.viewBehind)
    // A table dropped by the other process: the next write catches up first, and fails.
    try second.dropTable("t")
    let refused = #expect(throws: LogStoreError.self) {
      try first.put("5".bytes, forKey: "a".bytes, in: "t")
    }
    #expect(refused?.code == .tableNotFound)
    #expect(!first.engine.sharing!.viewBehind)
    try second.createTable("u")
    try first.put("6".bytes, forKey: "d".bytes, in: "u")
    try second.put("7".bytes, forKey: "e".bytes, in: "u")
    try first.put("8".bytes, forKey: "d".bytes, in: "u")
    #expect(first.engine.sharing!.viewBehind)
    // A read catches up on all of it, its own writes among the others', in log order.
    let expected = ["u": ["d": "8", "e": "7"]]
    #expect(try first.snapshot() == expected)
    #expect(!first.engine.sharing!.viewBehind)
    #expect(try second.snapshot() == expected)
    let reopened = try Self.reopenAsThird(closing: first, second, on: fileSystem, options)
    #expect(try reopened.snapshot() == expected)
    try reopened.close()
  }

  @Test(
    "writes that leave the view behind while a checkpoint writes its file: the checkpoint's directory reads the log to its end, the next read applies those writes again, and every count and read stays the model's"
  )
  func viewBehindDuringCheckpoint() throws {
    let fileSystem = SimulatedFileSystem()
    var options = ManyProcessesTests.options()
    let (first, second) = try Self.twoOpens(on: fileSystem, options)
    try first.createTable("t")
    var expected: [String: String] = [:]
    for round in 0..<60 {
      try (round % 2 == 0 ? first : second).put(
        "v\(round)".bytes, forKey: "k\(round % 20)".bytes, in: "t")
      expected["k\(round % 20)"] = "v\(round)"
    }
    // While the checkpoint writes its file, the other open writes, and then this one, whose
    // writes (a put, a delete, a prefix delete) leave its view behind.
    let ran = ManyProcessesTests.onceBeforeIndexFileRename(of: 11, in: fileSystem) {
      try second.put("s".bytes, forKey: "k1".bytes, in: "t")
      try first.put("f".bytes, forKey: "k2".bytes, in: "t")
      try first.delete(key: "k3".bytes, in: "t")
      try first.deletePrefix("k1".bytes, in: "t")
      #expect(first.engine.sharing!.viewBehind)
    }
    try first.checkpoint()
    fileSystem.callHook = nil
    #expect(ran.withLock { $0 })
    expected["k2"] = "f"
    expected["k3"] = nil
    for key in expected.keys where key.hasPrefix("k1") { expected[key] = nil }
    // The checkpoint's directory read the log to its end; the view still counts as behind.
    #expect(first.engine.sharing!.viewBehind)
    #expect(try first.snapshot() == ["t": expected])
    #expect(try first.count(in: "t") == expected.count)
    #expect(try first.statistics().liveItems == expected.count)
    // Nothing counted twice: the bytes live are a new open's.
    options.fileSystem = fileSystem.process(44)
    let fresh = try LogStore(path: "/store", options: options)
    #expect(try first.statistics().liveBytes == fresh.statistics().liveBytes)
    try fresh.close()
    try second.put("later".bytes, forKey: "k4".bytes, in: "t")
    expected["k4"] = "later"
    #expect(try first.snapshot() == ["t": expected])
    let reopened = try Self.reopenAsThird(closing: first, second, on: fileSystem, options)
    #expect(try reopened.snapshot() == ["t": expected])
    #expect(try reopened.count(in: "t") == expected.count)
    try reopened.close()
  }

  @Test(
    "a commit of one thread while another thread's write, its view left behind, syncs without the log's lock: both writes leave the view behind, and every open reads both after"
  )
  func commitBesideSyncingWrite() throws {
    let fileSystem = SimulatedFileSystem()
    var options = ManyProcessesTests.options()
    options.sync = .always
    let (first, second) = try Self.twoOpens(on: fileSystem, options)
    try first.createTable("t")
    try first.put("1".bytes, forKey: "a".bytes, in: "t")
    // Another process's put leaves the first open's view behind: its next write defers.
    try second.put("2".bytes, forKey: "b".bytes, in: "t")
    let armed = Guarded(true)
    let other = DispatchGroup()
    fileSystem.callHook = { upcoming in
      guard upcoming.process == 11, upcoming.operation == "msync",
        upcoming.path.hasSuffix(".log"), armed.withLock({ $0 })
      else { return }
      armed.withLock { $0 = false }
      // While this write syncs, another thread of the process commits; it finds the write in
      // progress, and its own write (after this one) leaves the view behind too.
      other.enter()
      Thread {
        do {
          try first.put("4".bytes, forKey: "d".bytes, in: "t")
        } catch {
          Issue.record("\(error)")
        }
        other.leave()
      }.start()
      usleep(100_000)
    }
    try first.put("3".bytes, forKey: "c".bytes, in: "t")
    other.wait()
    fileSystem.callHook = nil
    #expect(!armed.withLock { $0 })
    #expect(first.engine.sharing!.viewBehind)
    let expected = ["t": ["a": "1", "b": "2", "c": "3", "d": "4"]]
    #expect(try first.snapshot() == expected)
    #expect(try second.snapshot() == expected)
    let reopened = try Self.reopenAsThird(closing: first, second, on: fileSystem, options)
    #expect(try reopened.snapshot() == expected)
    try reopened.close()
  }

  @Test(
    "processes whose writes would lock another way refuse each other while both have the store open; a follower reads either"
  )
  func otherLockKindRefused() throws {
    let fileSystem = SimulatedFileSystem()
    var options = ManyProcessesTests.options()
    options.fileSystem = fileSystem
    let store = try LogStore(path: "/store", options: options)
    try store.createTable("t")
    try store.put("v".bytes, forKey: "k".bytes, in: "t")
    try store.close()
    // A state of this boot made by a process whose writes take a mutex (a glibc build), which
    // a live process still has open.
    var state = [UInt8](repeating: 0, count: SharedState.size)
    state.withUnsafeMutableBytes {
      SharedState.initialize($0.baseAddress!, boot: fileSystem.boot, lockKind: 0x0128)
    }
    state.replaceSubrange(
      SharedState.opensOffset..<SharedState.opensOffset + 8,
      with: littleEndianBytes(UInt64(777) << 32 | 7))
    let handle = try fileSystem.openFile("/store/" + SharedState.fileName, mode: .readWrite)
    try state.withBytes { bytes throws(LogStoreError) in try handle.write(bytes, at: 0) }
    handle.close()
    let refused = #expect(throws: LogStoreError.self) {
      try LogStore(path: "/store", options: options)
    }
    #expect(refused?.code == .locked)
    #expect(
      refused?.message.contains("another kind of lock") == true, "\(String(describing: refused))")
    let follower = try LogStore(path: "/store", options: ManyProcessesTests.readOnly(options))
    #expect(try follower.value(forKey: "k".bytes, in: "t") == "v".bytes)
    try follower.close()
    // Once that process is gone, the state is made anew with this process's kind of lock.
    fileSystem.kill(777)
    let joined = try LogStore(path: "/store", options: options)
    #expect(try joined.value(forKey: "k".bytes, in: "t") == "v".bytes)
    try joined.close()
  }
}
