import Testing

@testable import LogStore
@testable import LogStoreTesting

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// What each sync policy asks of the file system, under Linux's rules and Darwin's (where
/// `fsync` and `msync` leave data in the drive's cache and only `F_FULLFSYNC` empties it).
/// The crash-point suite runs on both; these tests look at the calls and at power losses
/// directly.
@Suite("Sync strength")
struct SyncStrengthTests {
  private static let path = "/store"

  private func options(
    _ fileSystem: SimulatedFileSystem, sync: SyncPolicy, readOnly: Bool = false
  ) -> LogStore.Options {
    var options = LogStore.Options(
      sync: sync, readOnly: readOnly, compaction: .manual, maxSegmentSize: 64 << 10)
    options.fileSystem = fileSystem
    return options
  }

  /// How many of 32 different power losses now leave table "t" holding exactly `items`.
  private func survivingPowerLosses(
    _ fileSystem: SimulatedFileSystem, keeping items: [String: String], at path: String = path
  ) throws -> Int {
    var kept = 0
    for seed: UInt64 in 0..<32 {
      let image = fileSystem.image(.power(seed: seed))
      let copy = SimulatedFileSystem(files: image, platform: fileSystem.platform)
      guard copy.directoryExists(path) else { continue }
      let store = try LogStore(path: path, options: options(copy, sync: .never))
      defer { try? store.close() }
      if try store.snapshot()["t"] == items { kept += 1 }
    }
    return kept
  }

  /// Waits until the file system's log holds a call named `operation` on a segment.
  private func waitForSegmentCall(_ fileSystem: SimulatedFileSystem, _ operation: String) throws {
    try waitUntil("\(operation) on a segment", seconds: 5) {
      fileSystem.log.contains { $0.operation == operation && $0.path.hasSuffix(".log") }
    }
  }

  @Test("sync always: every commit is a full sync on Darwin, and survives any power loss")
  func alwaysIsFull() throws {
    for platform in SimulatedFileSystem.Platform.allCases {
      let fileSystem = SimulatedFileSystem(platform: platform)
      let store = try LogStore(path: Self.path, options: options(fileSystem, sync: .always))
      try store.createTable("t")
      let before = fileSystem.log.count
      try store.put("v".bytes, forKey: "k".bytes, in: "t")
      let syncs = fileSystem.log[before...].map(\.operation).filter { $0 != "mapped write" }
      #expect(syncs == [platform == .darwin ? "msync, F_FULLFSYNC" : "msync"], "\(platform)")
      #expect(try survivingPowerLosses(fileSystem, keeping: ["k": "v"]) == 32, "\(platform)")
      try store.close()
    }
  }

  @Test(
    "a store made in new directories keeps what sync always acknowledged through a power loss, and so does a backup made into new ones"
  )
  func newDirectoriesAreDurable() throws {
    for platform in SimulatedFileSystem.Platform.allCases {
      // Only the root exists: the store's directory and the two above it are made by the open.
      let fileSystem = SimulatedFileSystem(platform: platform)
      var options = options(fileSystem, sync: .always)
      let path = "/data/app/store"
      let store = try LogStore(path: path, options: options)
      try store.createTable("t")
      try store.put("v".bytes, forKey: "k".bytes, in: "t")
      try store.backup(to: "/backups/daily/copy")
      try store.close()
      for seed: UInt64 in 0..<8 {
        let copy = SimulatedFileSystem(
          files: fileSystem.image(.power(seed: seed)), platform: platform)
        options.fileSystem = copy
        options.readOnly = true
        for opened in [path, "/backups/daily/copy"] {
          let reopened = try LogStore(path: opened, options: options)
          #expect(try reopened.snapshot()["t"] == ["k": "v"], "\(platform) \(seed) \(opened)")
          try reopened.close()
        }
      }
    }
  }

  @Test(
    "directories an open made and died before syncing into their parents are synced by the next open, before it acknowledges anything"
  )
  func directoriesOfADeadOpenAreSynced() throws {
    for platform in SimulatedFileSystem.Platform.allCases {
      let fileSystem = SimulatedFileSystem(platform: platform)
      // What an open that died between making the directories and syncing them leaves.
      let path = "/data/app/store"
      try fileSystem.createDirectory(path)
      let store = try LogStore(path: path, options: options(fileSystem, sync: .always))
      try store.createTable("t")
      try store.put("v".bytes, forKey: "k".bytes, in: "t")
      #expect(
        try survivingPowerLosses(fileSystem, keeping: ["k": "v"], at: path) == 32, "\(platform)")
      try store.close()
      // Once a manifest is there, an open syncs no directory above the store's.
      let opened = fileSystem.log.count
      try LogStore(path: path, options: options(fileSystem, sync: .always)).close()
      #expect(
        !fileSystem.log[opened...].contains { $0.operation == "fsync" && !$0.path.hasPrefix(path) })
    }
  }

  @Test(
    "a new directory whose parent's sync failed is made and synced again by the next open, not taken as durable"
  )
  func failedDirectorySyncIsRedone() throws {
    let path = "/data/store"
    let reference = SimulatedFileSystem()
    try LogStore(path: path, options: options(reference, sync: .always)).close()
    // The sync of `/`, which makes `/data` durable.
    let call = try #require(reference.log.firstIndex { $0.operation == "fsync" && $0.path == "/" })
    let fileSystem = SimulatedFileSystem()
    fileSystem.inject(.init(call: call + 1, errorNumber: EIO, persistent: false))
    #expect(throws: LogStoreError.self) {
      try LogStore(path: path, options: options(fileSystem, sync: .always))
    }
    #expect(!fileSystem.directoryExists("/data"))
    let store = try LogStore(path: path, options: options(fileSystem, sync: .always))
    try store.createTable("t")
    try store.put("v".bytes, forKey: "k".bytes, in: "t")
    #expect(fileSystem.syncedFiles.keys.contains { $0.hasPrefix(path + "/") })
    try store.close()
  }

  @Test(
    "a sync that failed is not taken back by the next one that succeeds: what it covered is written again first"
  )
  func failedSyncIsNotRetriedAsDone() throws {
    for platform in SimulatedFileSystem.Platform.allCases {
      for policy in [SyncPolicy.never, .interval(milliseconds: 60_000)] {
        let fileSystem = SimulatedFileSystem(platform: platform)
        let store = try LogStore(path: Self.path, options: options(fileSystem, sync: policy))
        try store.createTable("t")
        try store.put("v".bytes, forKey: "k".bytes, in: "t")
        // The sync of the segment fails (EIO): Linux has written the pages back without
        // success and marked them clean, and says so once.
        fileSystem.inject(.init(call: fileSystem.calls + 1, errorNumber: EIO, persistent: false))
        #expect(throws: LogStoreError.self) { try store.sync() }
        // The device works again: a sync that succeeds must have put the put on the disk.
        try store.sync()
        #expect(
          try survivingPowerLosses(fileSystem, keeping: ["k": "v"]) == 32, "\(platform) \(policy)")
        try store.close()
      }
    }
  }

  @Test("sync interval on Darwin: a barrier, which a power loss may undo; sync() makes it durable")
  func intervalIsBarrierOnDarwin() throws {
    let fileSystem = SimulatedFileSystem(platform: .darwin)
    let store = try LogStore(
      path: Self.path, options: options(fileSystem, sync: .interval(milliseconds: 1)))
    defer { try? store.close() }
    // The segment's header is synced in full when it is made; nothing after it is.
    let opened = fileSystem.log.count
    try store.createTable("t")
    try store.put("v".bytes, forKey: "k".bytes, in: "t")
    try waitForSegmentCall(fileSystem, "msync, F_BARRIERFSYNC")
    #expect(!fileSystem.log[opened...].contains { $0.operation == "msync, F_FULLFSYNC" })
    // Some power losses lose the put: a barrier orders, it does not make durable.
    #expect(try survivingPowerLosses(fileSystem, keeping: ["k": "v"]) < 32)
    // `sync()` must not count the barrier as durable: it syncs again, fully.
    try store.sync()
    #expect(fileSystem.log.contains { $0.operation == "msync, F_FULLFSYNC" })
    #expect(try survivingPowerLosses(fileSystem, keeping: ["k": "v"]) == 32)
  }

  @Test("sync interval on Linux: the background fdatasync is durable")
  func intervalIsDurableOnLinux() throws {
    let fileSystem = SimulatedFileSystem(platform: .linux)
    let store = try LogStore(
      path: Self.path, options: options(fileSystem, sync: .interval(milliseconds: 1)))
    defer { try? store.close() }
    try store.createTable("t")
    try store.put("v".bytes, forKey: "k".bytes, in: "t")
    // The table's creation and the put are one sync apart at most: wait for the put's.
    try waitForSegmentCall(fileSystem, "msync")
    try waitUntil("the put to survive every power loss", seconds: 5) {
      try survivingPowerLosses(fileSystem, keeping: ["k": "v"]) == 32
    }
  }

  /// `KeyValueStore.sync()` is this call; `KeyValueStore` takes no file system, so this is
  /// where its promise is tested.
  @Test(
    "sync() makes every earlier write survive any power loss, under each policy, on both platforms",
    arguments: [SyncPolicy.never, .always, .interval(milliseconds: 60_000)])
  func syncKeepsWrites(policy: SyncPolicy) throws {
    for platform in SimulatedFileSystem.Platform.allCases {
      let fileSystem = SimulatedFileSystem(platform: platform)
      let store = try LogStore(path: Self.path, options: options(fileSystem, sync: policy))
      defer { try? store.close() }
      try store.sync()
      try store.createTable("t")
      var items: [String: String] = [:]
      for index in 0..<20 {
        items["k\(index)"] = "v\(index)"
        try store.put("v\(index)".bytes, forKey: "k\(index)".bytes, in: "t")
      }
      if policy != .always {
        // Not synced yet (the interval is a minute away): some power losses lose some of it.
        let kept = try survivingPowerLosses(fileSystem, keeping: items)
        #expect(kept < 32, "\(platform): every power loss kept the writes before any sync")
      }
      try store.sync()
      let kept = try survivingPowerLosses(fileSystem, keeping: items)
      #expect(kept == 32, "\(platform): \(32 - kept) of 32 power losses lost synced writes")
      // Again, for an overwrite, a delete and a second sync in a row.
      items["k0"] = "changed"
      try store.put("changed".bytes, forKey: "k0".bytes, in: "t")
      try store.delete(key: "k1".bytes, in: "t")
      items["k1"] = nil
      try store.sync()
      try store.sync()
      let keptAgain = try survivingPowerLosses(fileSystem, keeping: items)
      #expect(
        keptAgain == 32, "\(platform): \(32 - keptAgain) of 32 power losses lost synced changes")
    }
  }

  @Test("close() after interval syncs leaves everything durable, on both platforms")
  func closeIsFull() throws {
    for platform in SimulatedFileSystem.Platform.allCases {
      let fileSystem = SimulatedFileSystem(platform: platform)
      let store = try LogStore(
        path: Self.path, options: options(fileSystem, sync: .interval(milliseconds: 1)))
      try store.createTable("t")
      for index in 0..<50 {
        try store.put("v\(index)".bytes, forKey: "k\(index)".bytes, in: "t")
      }
      try store.close()
      let items = Dictionary(uniqueKeysWithValues: (0..<50).map { ("k\($0)", "v\($0)") })
      #expect(try survivingPowerLosses(fileSystem, keeping: items) == 32, "\(platform)")
    }
  }
}

/// Access refused by the system (Apple's data protection while the device is locked, a
/// sandbox, permissions) is its own error, never taken for damage, and loses nothing.
@Suite("Permission denied")
struct PermissionDeniedTests {
  @Test(
    "EACCES/EPERM at any call of an open, a write or a read-only open is permissionDenied; the store is intact after",
    arguments: [EACCES, EPERM])
  func refusedAccess(errorNumber: Int32) throws {
    let path = "/store"
    let fileSystem = SimulatedFileSystem()
    var options = LogStore.Options(sync: .always, compaction: .manual, maxSegmentSize: 64 << 10)
    options.fileSystem = fileSystem
    do {
      let store = try LogStore(path: path, options: options)
      try store.createTable("t")
      try store.put("v".bytes, forKey: "k".bytes, in: "t")
      try store.close()
    }
    var readOnly = options
    readOnly.readOnly = true
    for (label, opts) in [("writer", options), ("reader", readOnly)] {
      let start = fileSystem.calls
      // Count the calls of a clean open, then refuse each in turn.
      let clean = try LogStore(path: path, options: opts)
      if label == "writer" { try clean.put("w".bytes, forKey: "k2".bytes, in: "t") }
      try clean.close()
      let span = fileSystem.calls - start
      var refused = 0
      for offset in 1...span {
        fileSystem.inject(
          .init(call: fileSystem.calls + offset, errorNumber: errorNumber, persistent: true))
        do {
          let store = try LogStore(path: path, options: opts)
          if label == "writer" { try store.put("w".bytes, forKey: "k2".bytes, in: "t") }
          try store.close()
        } catch {
          refused += 1
          #expect(error.code == .permissionDenied, "\(label), call \(offset): \(error)")
        }
        fileSystem.clearFaults()
      }
      #expect(refused > span / 2, "\(label): \(refused) of \(span) refusals reached the caller")
      let store = try LogStore(path: path, options: readOnly)
      #expect(try store.value(forKey: "k".bytes, in: "t") == "v".bytes, "\(label)")
      #expect(try store.statistics().damagedRecords == 0, "\(label)")
      try store.close()
    }
  }
}
