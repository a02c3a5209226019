import Testing

@testable import LogStore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

@Suite("Recover, large values")
struct RecoverLargeValuesTests {
  @Test("recover copies values that together pass the 256 MiB batch limit")
  func largeValues() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    // 5 × 52 MiB: more than a batch may hold, in values a batch of 1,000 items would take.
    let value = [UInt8](repeating: 0x62, count: 52 << 20)
    do {
      let store = try LogStore(path: path, options: .init(compaction: .manual))
      try store.createTable("big")
      for index in 0..<5 { try store.put(value, forKey: [UInt8(index)], in: "big") }
      try store.close()
    }
    let report = try LogStore.recover(path: path)
    #expect(report.items == 5)
    let recovered = try LogStore(
      path: path, options: .init(readOnly: true, verifyChecksumsOnRead: false))
    for index in 0..<5 {
      let copy = try #require(try recovered.value(forKey: [UInt8(index)], in: "big"))
      // Compared as memory: `==` over 52 MiB is slow in a debug build.
      #expect(copy.count == value.count)
      #expect(
        copy.withUnsafeBytes { a in
          value.withUnsafeBytes { b in bytesEqual(a, b) }
        })
    }
    try recovered.close()
  }
}

/// `recover` on the simulated file system: the whole of it goes through the file-system seam,
/// so a crash can stop it at any call.
@Suite("Recover on the simulated file system")
struct RecoverSimulatedTests {
  static let path = "/data/store"
  /// 2026-11-29 12:34:56 UTC, the moment the tests recover at.
  static let now = Timestamp(microsecondsSince1970: 1_795_955_696_000_000)

  /// A store with a damaged record in its first segment, as files; and what a salvaging open
  /// reads from it, which is what `recover` must copy.
  static func damagedStore() throws -> (files: [String: [UInt8]], readable: StoreModel) {
    let fileSystem = SimulatedFileSystem()
    var options = LogStore.Options(compaction: .manual, maxSegmentSize: 4096)
    options.fileSystem = fileSystem
    let store = try LogStore(path: path, options: options)
    for table in ["users", "posts"] {
      try store.createTable(table)
      for index in 0..<40 {
        let value = "\(table) \(index) " + String(repeating: "v", count: 30)
        try store.put(value.bytes, forKey: "k\(index)".bytes, in: table)
      }
    }
    try store.close()
    var files = fileSystem.files
    let first = path + "/" + StoreFileName.segment(1)
    files[first]![SegmentHeader.size + 100] ^= 0xFF
    return (files, try readable(at: path, files: files))
  }

  /// What a read-only, salvaging open of the store at `path` among `files` reads.
  static func readable(at path: String, files: [String: [UInt8]]) throws -> StoreModel {
    var options = LogStore.Options(readOnly: true, corruption: .salvage)
    options.fileSystem = SimulatedFileSystem(files: files)
    let store = try LogStore(path: path, options: options)
    defer { try? store.close() }
    return try StoreModel.reading(store)
  }

  @Test("recover copies what is readable and moves the damaged store aside, by the date")
  func recovers() throws {
    let (files, readable) = try Self.damagedStore()
    #expect(readable.tables["users"]!.count < 40, "the damage costs records")
    let fileSystem = SimulatedFileSystem(files: files)
    let report = try LogStore.recover(path: Self.path + "/", fileSystem: fileSystem, now: Self.now)
    #expect(report.damagedStorePath == Self.path + ".damaged-20261129T123456Z")
    #expect(report.damagedRegions == 1)
    #expect(report.tables == 2)
    #expect(report.items == readable.tables.values.map(\.count).reduce(0, +))
    let after = fileSystem.files
    #expect(try Self.readable(at: Self.path, files: after) == readable)
    // Nothing is deleted: the damaged store is kept, byte for byte.
    for (file, bytes) in files where file.hasPrefix(Self.path + "/") && !file.hasSuffix("LOCK") {
      let moved = report.damagedStorePath + file.dropFirst(Self.path.count)
      #expect(after[moved] == bytes, "\(moved)")
    }
    // A second recovery in the same second takes the next free name.
    let again = try LogStore.recover(path: Self.path, fileSystem: fileSystem, now: Self.now)
    #expect(again.damagedStorePath == Self.path + ".damaged-20261129T123456Z-2")
  }

  @Test(
    "a crash or power loss at any call of recover loses nothing: the store, or the one put aside, reads"
  )
  func crashAtEveryCall() throws {
    let (files, readable) = try Self.damagedStore()
    let run = SimulatedFileSystem(files: files)
    let report = try LogStore.recover(path: Self.path, fileSystem: run, now: Self.now)
    let calls = run.calls
    #expect(calls > 20)
    let modes: [SimulatedFileSystem.CrashMode] = [
      .process, .power(seed: 1), .power(seed: 2), .power(seed: 3),
    ]
    // One run of recover per call leaves the image of each mode.
    var betweenRenames = 0
    for call in 1...calls {
      let fileSystem = SimulatedFileSystem(files: files)
      fileSystem.crash(atCall: call, leaving: modes.map { .init(mode: $0) })
      #expect(throws: LogStoreError.self) {
        try LogStore.recover(path: Self.path, fileSystem: fileSystem, now: Self.now)
      }
      let images = try #require(fileSystem.crashImages, "call \(call) was never reached")
      for (mode, image) in zip(modes, images) {
        if image.keys.contains(where: { $0.hasPrefix(Self.path + "/") }) {
          // Before the damaged store was moved, it is still there; after the fresh one took
          // its place, that one is. Either reads the same.
          #expect(
            try Self.readable(at: Self.path, files: image) == readable, "call \(call), \(mode)")
        } else {
          // Between the two renames nothing is at the store's path: the damaged store is
          // aside, its copy beside it. Running recover again finishes the swap.
          if mode == .process { betweenRenames += 1 }
          let again = SimulatedFileSystem(files: image)
          let finished = try LogStore.recover(path: Self.path, fileSystem: again, now: Self.now)
          #expect(finished.damagedStorePath == report.damagedStorePath)
          #expect(finished.items == report.items && finished.tables == report.tables)
          #expect(
            try Self.readable(at: Self.path, files: again.files) == readable,
            "call \(call), \(mode)")
        }
        // So does a writer's open, which would otherwise start an empty store there.
        var options = LogStore.Options(compaction: .manual)
        options.fileSystem = SimulatedFileSystem(files: image)
        let reopened = try LogStore(path: Self.path, options: options)
        #expect(try StoreModel.reading(reopened) == readable, "call \(call), \(mode)")
        try reopened.close()
      }
    }
    #expect(betweenRenames == 1)
  }

  @Test("an I/O error at any call of recover leaves the store readable and no half copy behind")
  func failureAtEveryCall() throws {
    let (files, readable) = try Self.damagedStore()
    let reference = SimulatedFileSystem(files: files)
    _ = try LogStore.recover(path: Self.path, fileSystem: reference, now: Self.now)
    var failures = 0
    for call in 1...reference.calls {
      let fileSystem = SimulatedFileSystem(files: files)
      fileSystem.inject(.init(call: call, errorNumber: ENOSPC, persistent: false))
      do {
        _ = try LogStore.recover(path: Self.path, fileSystem: fileSystem, now: Self.now)
      } catch {
        failures += 1
        if !fileSystem.directoryExists(Self.path) {
          // The last rename failed: the copy waits beside the store put aside, and running
          // recover again puts it in place.
          _ = try LogStore.recover(path: Self.path, fileSystem: fileSystem, now: Self.now)
        }
      }
      let names = fileSystem.files.keys
      #expect(!names.contains { $0.contains(".recovering-") }, "call \(call): a copy is left")
      #expect(
        try Self.readable(at: Self.path, files: fileSystem.files) == readable, "call \(call)")
    }
    #expect(failures > 0)
  }

  @Test(
    "items that expire while recover copies them are left out as expired, not counted unreadable")
  func copyingMeetsExpiry() throws {
    let fileSystem = SimulatedFileSystem()
    var options = LogStore.Options(compaction: .manual)
    options.fileSystem = fileSystem
    let store = try LogStore(path: Self.path, options: options)
    try store.createTable("t")
    let expiry = Timestamp(microsecondsSince1970: store.expiryNow() + 60_000_000)
    try store.put("damaged value".bytes, forKey: "bad".bytes, in: "t")
    try store.put("kept".bytes, forKey: "kept".bytes, in: "t")
    for key in ["soon1", "soon2"] {
      try store.put("expiring".bytes, forKey: key.bytes, in: "t", expiresAt: expiry)
    }
    // Compacted, the records are read through a hint file: a damaged value is met only when
    // it is read, and counted as an unreadable item.
    try store.compact()
    try store.close()
    var files = fileSystem.files
    let damaged = try #require(
      files.first { name, bytes in
        name.hasSuffix(".log") && bytes.firstRange(of: "damaged value".bytes) != nil
      })
    files[damaged.key]![damaged.value.firstRange(of: "damaged value".bytes)!.lowerBound] ^= 0xFF
    let run = SimulatedFileSystem(files: files)
    // The expiring items are listed, then expire before their values are read.
    let report = try LogStore.recover(path: Self.path, fileSystem: run, now: Self.now) { old in
      old.expiryClock.skip(microseconds: 120_000_000)
    }
    #expect(report.items == 1)
    #expect(report.unreadableItems == 1)
    #expect(report.damagedRegions == 0)
    #expect(try Self.readable(at: Self.path, files: run.files).tables == ["t": ["kept": "kept"]])
  }

  @Test(
    "a .manyProcesses writer's open while recover runs is refused at once, naming the process"
  )
  func manyProcessesOpenDuringRecover() throws {
    let fileSystem = SimulatedFileSystem()
    var options = LogStore.Options(compaction: .manual, sharing: .manyProcesses)
    options.fileSystem = fileSystem
    // Patience enough to tell a refusal for the holder from one for a lock held too long.
    options.otherProcessPatience = 200
    // Last opened in `.manyProcesses` use, which leaves no process ID in the lock file.
    let store = try LogStore(path: Self.path, options: options)
    try store.createTable("t")
    try store.put("v".bytes, forKey: "k".bytes, in: "t")
    try store.close()
    var refusal: LogStoreError?
    _ = try LogStore.recover(path: Self.path, fileSystem: fileSystem, now: Self.now) { _ in
      do throws(LogStoreError) {
        try LogStore(path: Self.path, options: options).close()
      } catch {
        refusal = error
      }
    }
    let error = try #require(refusal, "the open went ahead while recover held the store")
    #expect(error.code == .locked)
    #expect(error.message.contains("by process \(fileSystem.processID)"), "\(error)")
  }

  @Test("recover of a path with no store, absolute or relative, throws storeNotFound")
  func missingStore() {
    for path in ["/data/missing", "missing"] {
      let error = #expect(throws: LogStoreError.self) {
        try LogStore.recover(path: path, fileSystem: SimulatedFileSystem(), now: Self.now)
      }
      #expect(error?.code == .storeNotFound, "\(path)")
    }
  }
}
