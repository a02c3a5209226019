import Foundation
import Testing

@testable import LogStore

/// `.manyProcesses` on the simulated file system, with two processes (``SimulatedFileSystem``
/// views of their own): one is killed before any call of a write, a rotation, a compaction or
/// a checkpoint, while the other lives on and goes on reading, writing and compacting. The
/// crash suites of `ManyProcessesTests` end both processes at once; this is the case an app
/// meets when iOS kills its extension in the middle of a write.
@Suite("One process dies beside another")
struct OneProcessDiesTests {
  static let dyingProcess: Int32 = 101
  static let livingProcess: Int32 = 202

  /// The options of an open of `process` on `fileSystem`: small segments, every write synced
  /// (unless `sync` says otherwise), damage refused.
  static func options(
    _ fileSystem: SimulatedFileSystem, process: Int32, readOnly: Bool = false,
    sync: SyncPolicy = .always
  ) -> LogStore.Options {
    var options = ManyProcessesTests.options(readOnly: readOnly, maxSegmentSize: 4 << 10)
    options.fileSystem = fileSystem.process(process)
    if !readOnly { options.sync = sync }
    // Nothing a dead process leaves may look like damage to any open.
    options.corruption = .fail
    return options
  }

  /// Two processes' opens of one store, both of which wrote (keys overwritten, so that a
  /// compaction has work), the active segment nearly full; their writes synced as `sync` says.
  static func setUp(sync: SyncPolicy = .always) throws -> (
    SimulatedFileSystem, dying: LogStore, living: LogStore
  ) {
    let fileSystem = SimulatedFileSystem()
    let dying = try LogStore(
      path: "/store", options: options(fileSystem, process: dyingProcess, sync: sync))
    let living = try LogStore(
      path: "/store", options: options(fileSystem, process: livingProcess, sync: sync))
    try living.createTable("t")
    for index in 0..<40 {
      let store = index % 2 == 0 ? dying : living
      try store.put(
        Array(repeating: UInt8(index), count: 80), forKey: "k\(index % 10)".bytes, in: "t")
    }
    return (fileSystem, dying, living)
  }

  /// The step the dying process is killed in.
  static func run(_ step: String, _ store: LogStore) throws {
    switch step {
    case "write":
      var batch = WriteBatch()
      batch.put("b".bytes, forKey: "k1".bytes, in: "t")
      batch.delete(key: "k2".bytes, in: "t")
      batch.put("n".bytes, forKey: "new".bytes, in: "t")
      try store.write(batch)
    case "rotation":
      try store.put(Array(repeating: 2, count: 3_800), forKey: "big".bytes, in: "t")
    case "compaction":
      try store.compact()
    default:
      try store.checkpoint()
    }
  }

  @Test(
    "a process killed at any call of a write, a rotation, a compaction or a checkpoint: the other sees the step whole or not at all, goes on, and a power loss after keeps all it acknowledged",
    arguments: ["write", "rotation", "compaction", "checkpoint"])
  func killedBesideAnother(step: String) throws {
    let (probe, probeDying, probeLiving) = try Self.setUp()
    let before = try probeLiving.snapshot()
    let first = probe.calls + 1
    let probeUnlocks = Guarded(0)
    probe.callHook = { upcoming in
      if upcoming.process == Self.dyingProcess, Self.isUnlock(upcoming) {
        probeUnlocks.withLock { $0 += 1 }
      }
    }
    try Self.run(step, probeDying)
    probe.callHook = nil
    let calls = first...probe.calls
    let unlocks = probeUnlocks.withLock { $0 }
    let after = try probeLiving.snapshot()
    try probeDying.close()
    try probeLiving.close()
    #expect(calls.count > 3 && unlocks > 0)
    // Before each call of the step, and at each release of the store's lock: the process dies
    // holding it, having finished what it did with it (after the last, having published the
    // whole step).
    let points =
      calls.map { KillPoint.beforeCall($0) } + (1...unlocks).map { KillPoint.atUnlock($0) }
    var outcomes: [String: Int] = [:]
    for (seed, killPoint) in points.enumerated() {
      let point = "\(step), killed \(killPoint)"
      let (fileSystem, dying, living) = try Self.setUp()
      let killed = DispatchSemaphore(value: 0)
      let parked = DispatchSemaphore(value: 0)
      let reached = Guarded(false)
      let unlocksSeen = Guarded(0)
      fileSystem.callHook = { upcoming in
        guard upcoming.process == Self.dyingProcess, !reached.withLock({ $0 }) else { return }
        switch killPoint {
        case .beforeCall(let call):
          guard upcoming.number == call else { return }
        case .atUnlock(let count):
          guard Self.isUnlock(upcoming) else { return }
          guard
            unlocksSeen.withLock({
              $0 += 1
              return $0
            }) == count
          else { return }
        }
        reached.withLock { $0 = true }
        // The process stops here for good: its thread waits until the test is over.
        killed.signal()
        parked.wait()
      }
      let ended = DispatchGroup()
      ended.enter()
      Thread {
        // Its calls fail once the test has crashed the file system to end it.
        try? Self.run(step, dying)
        killed.signal()
        ended.leave()
      }.start()
      // The step stops at the point, or, failing the test, ends without reaching it.
      killed.wait()
      guard reached.withLock({ $0 }) else {
        Issue.record("\(point): the step ended without reaching it")
        continue
      }
      fileSystem.kill(Self.dyingProcess)
      // An open that takes the files over (as after a restart) reads the step whole or not at
      // all, with damage refused.
      do {
        var alone = Self.options(
          SimulatedFileSystem(files: fileSystem.image(.process)), process: 808)
        alone.sharing = .oneProcess
        let store = try LogStore(path: "/store", options: alone)
        let read = try store.snapshot()
        #expect(read == before || read == after, "\(point), .oneProcess")
        try store.close()
      } catch {
        Issue.record("\(point), .oneProcess: \(error)")
      }

      // The other process sees the step whole or not at all. A step that died once its commit
      // was written but before it was counted (``SharedLog/publish(_:)``) is not seen by a
      // read, and is whole from the next write on, which counts it: unacknowledged, it may
      // take effect then. Once whole, it stays.
      let seen = try living.snapshot()
      #expect(seen == before || seen == after, "\(point): \(seen)")
      try living.put("l1".bytes, forKey: "k3".bytes, in: "t")
      try living.put(Array(repeating: 9, count: 3_000), forKey: "later".bytes, in: "t")
      try living.delete(key: "k4".bytes, in: "t")
      let written = try living.snapshot()
      let candidates = (seen == before ? [before, after] : [after]).map { state in
        var state = state
        state["t"]!["k3"] = "l1"
        state["t"]!["later"] = String(repeating: "\u{9}", count: 3_000)
        state["t"]!["k4"] = nil
        return state
      }
      #expect(candidates.contains(written), "\(point)")
      var expected = written
      if before != after {
        let outcome =
          seen == after ? "whole" : written == candidates[0] ? "none" : "whole once written"
        outcomes[outcome, default: 0] += 1
      }
      // A compaction and a checkpoint of its own run though the dead one's may have begun.
      try living.compact()
      try living.checkpoint()
      try living.put("l2".bytes, forKey: "k5".bytes, in: "t")
      expected["t"]!["k5"] = "l2"
      #expect(try living.snapshot() == expected, "\(point)")
      let follower = try LogStore(
        path: "/store", options: Self.options(fileSystem, process: 303, readOnly: true))
      #expect(try follower.snapshot() == expected, "\(point), follower")
      try follower.close()

      // A power loss now keeps every write the living process acknowledged (all synced).
      let power = fileSystem.image(.power(seed: UInt64(seed)))
      try living.close()
      let reopened = try LogStore(path: "/store", options: Self.options(fileSystem, process: 404))
      #expect(try reopened.snapshot() == expected, "\(point), reopened")
      try reopened.close()
      let report = try LogStore.verify(path: "/store", fileSystem: fileSystem.process(505))
      #expect(report.isClean, "\(point): \(report.problems.prefix(3))")
      let restarted = SimulatedFileSystem(files: power)
      let recovered = try LogStore(
        path: "/store", options: Self.options(restarted, process: 606))
      #expect(try recovered.snapshot() == expected, "\(point), after a power loss")
      try recovered.close()

      // The dead process's thread is let go into a file system whose every call fails.
      fileSystem.crash(atCall: fileSystem.calls + 1)
      parked.signal()
      ended.wait()
      try? dying.close()
    }
    if before != after {
      // Killed at its last unlock, the process had published the step.
      #expect(outcomes["whole", default: 0] > 0, "\(outcomes)")
    }
    print(
      "\(step): killed at \(points.count) points (\(calls.count) calls, "
        + "\(unlocks) unlocks), the other saw \(outcomes)")
  }

  @Test(
    "a write that clears a dead process's rotation, itself killed at any call, leaves a store that every open reads whole: in either sharing, with damage refused, and after a power loss",
    // Unsynced writes before the rotation are proven only by the mark that seals their segment,
    // which the clearing zeroes (it lies past the published end).
    arguments: [SyncPolicy.always, .never])
  func clearingKilled(sync: SyncPolicy) throws {
    let (probe, probeDying, probeLiving) = try Self.setUp(sync: sync)
    let before = try probeLiving.snapshot()
    let first = probe.calls + 1
    try Self.run("rotation", probeDying)
    let calls = Array(first...probe.calls)
    let after = try probeLiving.snapshot()
    try probeDying.close()
    try probeLiving.close()
    // The clearing write puts `k6`; every state an open may read is the dead step whole or not
    // at all, with that put or without it.
    let states = [before, after].flatMap { state in
      var put = state
      put["t"]!["k6"] = "c"
      return [state, put]
    }
    var cases = 0
    // The rotation's last calls publish it: always run.
    let publishing = calls.suffix(3)
    for (seed, dyingCall) in TestDepth.cases(calls, every: 4, keeping: publishing.contains)
      .enumerated()
    {
      // The clearing write is killed before its first counted call, its second, … until it
      // ends without reaching the point.
      for clearingCall in 1... {
        let point =
          "sync \(sync): rotation killed before call \(dyingCall), the write clearing it "
          + "before its call \(clearingCall)"
        let (fileSystem, dying, living) = try Self.setUp(sync: sync)
        let dyingStop = Self.runUntilKilled(Self.dyingProcess, on: fileSystem) {
          $0.number == dyingCall
        } step: {
          try Self.run("rotation", dying)
        }
        guard dyingStop.reached else {
          Issue.record("\(point): the rotation ended without reaching it")
          break
        }
        fileSystem.kill(Self.dyingProcess)
        let counted = Guarded(0)
        let livingStop = Self.runUntilKilled(Self.livingProcess, on: fileSystem) { upcoming in
          guard upcoming.number != nil else { return false }
          return counted.withLock {
            $0 += 1
            return $0
          } == clearingCall
        } step: {
          try living.put("c".bytes, forKey: "k6".bytes, in: "t")
        }
        fileSystem.kill(Self.livingProcess)
        cases += 1

        let power = fileSystem.image(.power(seed: UInt64(seed * 1_000 + clearingCall)))
        let files = fileSystem.image(.process)
        do {
          // An open that takes the store over (the shared state made anew, as after a restart)
          // reads what the files say, with damage refused: nothing the dead writes left may
          // look like damage.
          var alone = Self.options(SimulatedFileSystem(files: files), process: 404)
          alone.sharing = .oneProcess
          let store = try LogStore(path: "/store", options: alone)
          let seen = try store.snapshot()
          #expect(states.contains(seen), "\(point), .oneProcess: \(seen)")
          try store.close()
          // One that takes it over in the same boot (its shared state still trusted) clears the
          // dead writes first, as a process that joins does.
          let sameBoot = SimulatedFileSystem(files: files, boot: try fileSystem.bootSession())
          sameBoot.kill(Self.dyingProcess)
          sameBoot.kill(Self.livingProcess)
          alone.fileSystem = sameBoot.process(303)
          let takenOver = try LogStore(path: "/store", options: alone)
          let seenTakenOver = try takenOver.snapshot()
          try takenOver.close()
          // A process that joins clears both dead writes.
          let joined = try LogStore(
            path: "/store", options: Self.options(fileSystem, process: 707))
          let seenJoined = try joined.snapshot()
          #expect(states.contains(seenJoined), "\(point), .manyProcesses")
          #expect(seenTakenOver == seenJoined, "\(point), .oneProcess in the same boot")
          try joined.put("j".bytes, forKey: "k7".bytes, in: "t")
          try joined.close()
          let report = try LogStore.verify(path: "/store", fileSystem: fileSystem.process(505))
          #expect(report.isClean, "\(point): \(report.problems.prefix(3))")
          alone.fileSystem = SimulatedFileSystem(files: power).process(606)
          let recovered = try LogStore(path: "/store", options: alone)
          // Unsynced writes may be lost; with every write synced, none is.
          let recoveredState = try recovered.snapshot()
          #expect(
            sync != .always || states.contains(recoveredState),
            "\(point), .oneProcess after a power loss")
          try recovered.close()
        } catch {
          Issue.record("\(point): \(error)")
        }

        fileSystem.crash(atCall: fileSystem.calls + 1)
        dyingStop.letGo()
        livingStop.letGo()
        try? dying.close()
        try? living.close()
        if !livingStop.reached { break }
      }
    }
    #expect(cases > calls.count / 4)
    print("rotation killed, and the write clearing it killed, sync \(sync): \(cases) cases")
  }

  @Test(
    "a .oneProcess open or a recover after a write that died in .manyProcesses use clears it first, as a joining writer does; with the segment it names gone, they go by the files"
  )
  func takeOverClearsDeadWrite() throws {
    let (fileSystem, dying, living) = try Self.setUp()
    let expected = try living.snapshot()
    try ManyProcessesTests.appendUnpublished(dying, keys: ["ghost"])
    dying.engine.sharing!.shared.lock.release()
    let active = dying.engine.log.writer!.file.path
    fileSystem.kill(Self.dyingProcess)
    fileSystem.kill(Self.livingProcess)
    let files = fileSystem.image(.process)
    /// The files as a process of the same boot finds them, every process that used them gone.
    func sameBoot(_ files: [String: [UInt8]]) throws -> SimulatedFileSystem {
      let restarted = SimulatedFileSystem(files: files, boot: try fileSystem.bootSession())
      restarted.kill(Self.dyingProcess)
      restarted.kill(Self.livingProcess)
      return restarted
    }
    var alone = Self.options(try sameBoot(files), process: 303)
    alone.sharing = .oneProcess
    let store = try LogStore(path: "/store", options: alone)
    #expect(try store.snapshot() == expected)
    try store.close()
    let recovering = try sameBoot(files)
    _ = try LogStore.recover(path: "/store", fileSystem: recovering.process(303), now: .now())
    alone.fileSystem = recovering.process(404)
    let recovered = try LogStore(path: "/store", options: alone)
    #expect(try recovered.snapshot() == expected)
    try recovered.close()
    // The active segment was lost (files put back from an older copy, say): what remains opens.
    var withoutActive = files
    withoutActive[active] = nil
    alone.fileSystem = try sameBoot(withoutActive).process(505)
    alone.corruption = .salvage
    let remaining = try LogStore(path: "/store", options: alone)
    #expect(try remaining.snapshot()["t"]?["ghost"] == nil)
    try remaining.close()
    try? living.close()
  }

  @Test(
    "an open that read its view while a dead process's rotation was listed, then cleared that rotation, lists the segment its own rotation starts: every open reads the store"
  )
  func rotationAfterDeadRotationListed() throws {
    let fileSystem = SimulatedFileSystem()
    let dying = try LogStore(
      path: "/store", options: Self.options(fileSystem, process: Self.dyingProcess))
    let living = try LogStore(
      path: "/store", options: Self.options(fileSystem, process: Self.livingProcess))
    let other = try LogStore(path: "/store", options: Self.options(fileSystem, process: 303))
    try other.createTable("t")
    for index in 0..<10 {
      try other.put(Array(repeating: 1, count: 80), forKey: "k\(index)".bytes, in: "t")
    }
    #expect(try living.count(in: "t") == 10)
    #expect(try dying.count(in: "t") == 10)
    // A rotation of the other process, which the living one has not caught up on yet.
    try other.put(Array(repeating: 2, count: 3_800), forKey: "big".bytes, in: "t")
    let segmentsBefore = try Self.segmentNames(on: fileSystem)
    // The dying process rotates too, and is killed once it has listed its new segment in the
    // manifest and written the segment's header, before its record: before it publishes.
    let newSegmentWrites = Guarded(0)
    let dyingStop = Self.runUntilKilled(Self.dyingProcess, on: fileSystem) { upcoming in
      guard upcoming.operation == "mapped write", upcoming.path.hasSuffix(".log"),
        !segmentsBefore.contains(StorePath.name(of: upcoming.path))
      else { return false }
      return newSegmentWrites.withLock {
        $0 += 1
        return $0
      } == 2
    } step: {
      try dying.put(Array(repeating: 4, count: 600), forKey: "d".bytes, in: "t")
    }
    #expect(dyingStop.reached)
    // The living process catches up on the other's rotation from a manifest that lists the
    // dying process's new segment too.
    #expect(try living.count(in: "t") == 11)
    fileSystem.kill(Self.dyingProcess)
    // Its write clears the dead rotation (a manifest without that segment, the file removed),
    // then starts a segment of its own.
    try living.put(Array(repeating: 3, count: 3_000), forKey: "r".bytes, in: "t")
    #expect(try Self.segmentNames(on: fileSystem).count == segmentsBefore.count + 1)
    // The other process, and any new open, reads the store.
    #expect(try other.value(forKey: "r".bytes, in: "t") == Array(repeating: 3, count: 3_000))
    let joined = try LogStore(path: "/store", options: Self.options(fileSystem, process: 404))
    #expect(try joined.count(in: "t") == 12)
    try joined.close()
    try living.close()
    try other.close()
    let report = try LogStore.verify(path: "/store", fileSystem: fileSystem.process(505))
    #expect(report.isClean, "\(report.problems.prefix(3))")
    fileSystem.crash(atCall: fileSystem.calls + 1)
    dyingStop.letGo()
    try? dying.close()
  }

  @Test(
    "a process killed after a sync that failed, before it wrote the range again: the next writer (beside it, or the next open in .oneProcess use) writes it again before a sync claims it, so a power loss keeps the log a prefix, every acknowledged write in it",
    arguments: [
      (StoreSharing.manyProcesses, SyncPolicy.never), (.manyProcesses, .always),
      (.oneProcess, .never), (.oneProcess, .always),
    ])
  func killedAfterFailedSync(sharing: StoreSharing, nextSync: SyncPolicy) throws {
    let fileSystem = SimulatedFileSystem()
    func options(_ process: Int32, sync: SyncPolicy) -> LogStore.Options {
      var options = Self.options(fileSystem, process: process, sync: sync)
      options.sharing = sharing
      return options
    }
    let dying = try LogStore(path: "/store", options: options(Self.dyingProcess, sync: .never))
    try dying.createTable("t")
    try dying.sync()
    // Beside it, in `.manyProcesses` use, a writer that has seen the table.
    let beside =
      sharing == .manyProcesses
      ? try LogStore(path: "/store", options: options(Self.livingProcess, sync: nextSync)) : nil
    // Written (and in `.manyProcesses` use published), not synced yet.
    for index in 0..<6 {
      try dying.put(Array(repeating: UInt8(index), count: 300), forKey: "d\(index)".bytes, in: "t")
    }
    // Its sync fails (Linux then marks the pages clean), and it dies before its next call, the
    // first write of the range again.
    let syncFailed = Guarded(false)
    let dyingStop = Self.runUntilKilled(Self.dyingProcess, on: fileSystem) { upcoming in
      if upcoming.operation == "msync", let number = upcoming.number {
        fileSystem.inject(.init(call: number, errorNumber: EIO, persistent: false))
        syncFailed.withLock { $0 = true }
        return false
      }
      return syncFailed.withLock { $0 } && upcoming.number != nil
    } step: {
      try dying.sync()
    }
    #expect(dyingStop.reached)
    fileSystem.kill(Self.dyingProcess)
    // The next writer clears the dead one's write (or opens after it) and goes on after its
    // records, then makes everything durable.
    let living = try beside ?? LogStore(path: "/store", options: options(303, sync: nextSync))
    try living.put("l".bytes, forKey: "after".bytes, in: "t")
    try living.sync()
    let expected = try living.snapshot()
    #expect(expected["t"]?.count == 7)
    // A power loss now: every record was synced by a sync that succeeded, so all of them are
    // on the disk, and every open reads them with damage refused.
    let power = fileSystem.image(.power(seed: 1))
    try living.close()
    for reopening in [StoreSharing.manyProcesses, .oneProcess] {
      var reopened = Self.options(SimulatedFileSystem(files: power), process: 606)
      reopened.sharing = reopening
      let recovered = try LogStore(path: "/store", options: reopened)
      #expect(try recovered.snapshot() == expected, "\(reopening)")
      try recovered.close()
    }
    let report = try LogStore.verify(
      path: "/store", fileSystem: SimulatedFileSystem(files: power).process(505))
    #expect(report.isClean, "\(report.problems.prefix(3))")
    fileSystem.crash(atCall: fileSystem.calls + 1)
    dyingStop.letGo()
    try? dying.close()
  }

  /// The names of the segment files in the store.
  static func segmentNames(on fileSystem: SimulatedFileSystem) throws -> Set<String> {
    Set(try fileSystem.contentsOfDirectory("/store").filter { $0.hasSuffix(".log") })
  }

  /// Runs `step` as `process` on a thread of its own, and stops the process for good before
  /// the first call `isPoint` picks (its thread waits there). Returns once it stopped there or
  /// the step ended: whether it reached the point, and `letGo`, which lets the thread go on
  /// (into a file system the test has crashed, so that its calls fail) and waits for its end.
  static func runUntilKilled(
    _ process: Int32, on fileSystem: SimulatedFileSystem,
    at isPoint: @escaping @Sendable (SimulatedFileSystem.UpcomingCall) -> Bool,
    step: @escaping @Sendable () throws -> Void
  ) -> (reached: Bool, letGo: () -> Void) {
    let stopped = DispatchSemaphore(value: 0)
    let parked = DispatchSemaphore(value: 0)
    let reached = Guarded(false)
    fileSystem.callHook = { upcoming in
      guard upcoming.process == process, !reached.withLock({ $0 }), isPoint(upcoming) else {
        return
      }
      reached.withLock { $0 = true }
      stopped.signal()
      parked.wait()
    }
    let ended = DispatchGroup()
    ended.enter()
    Thread {
      try? step()
      stopped.signal()
      ended.leave()
    }.start()
    stopped.wait()
    let didReach = reached.withLock { $0 }
    return (
      didReach,
      {
        if didReach { parked.signal() }
        ended.wait()
      }
    )
  }

  enum KillPoint: CustomStringConvertible {
    case beforeCall(Int)
    case atUnlock(Int)

    var description: String {
      switch self {
      case .beforeCall(let call): "before call \(call)"
      case .atUnlock(let count): "at unlock \(count) of the store's lock"
      }
    }
  }

  static func isUnlock(_ call: SimulatedFileSystem.UpcomingCall) -> Bool {
    call.operation == "unlock" && call.path == "/store/LOCK"
  }
}
