import Testing

@testable import LogStore
@testable import LogStoreTesting

/// The crash-point workload: every kind of write, several segments, and a compaction, small
/// enough to replay once per crash point.
enum CrashWorkload {
  static let path = "/store"

  /// Two tables whose names are equal as `String`s and differ in their bytes (`caché`, its `é`
  /// precomposed and decomposed): the store keeps them apart, through every crash and
  /// recovery, and the model tells them apart by their bytes.
  static let cache = "cach\u{E9}"
  static let extra = "cache\u{301}"

  static let operations: [StoreOperation] = {
    var operations: [StoreOperation] = [.createTable("users"), .createTable(cache)]
    func value(_ index: Int) -> String {
      "value \(index) " + String(repeating: "abcdefgh", count: 20 + index % 30)
    }
    for index in 0..<12 {
      operations.append(.put(table: "users", key: "user_\(index)", value: value(index)))
    }
    for index in 0..<6 {
      operations.append(.put(table: cache, key: "feed_\(index)", value: value(index + 3)))
    }
    operations += [
      .put(table: "users", key: "user_3", value: value(40)),
      .delete(table: "users", key: "user_4"),
      .deleteMany(table: "users", keys: ["user_5", "user_6", "missing"]),
      .batch([
        .put(
          table: "users", key: Array("batch_a".utf8), value: Array(value(7).utf8), timestamp: nil),
        .createTable(extra),
        .expiringPut(
          table: extra, key: Array("e1".utf8), value: Array("one".utf8), timestamp: nil,
          expiresAt: StoreOperation.expiry(expired: false)),
        .delete(table: "users", key: Array("user_7".utf8)),
      ]),
      .deletePrefix(table: "users", prefix: "user_1"),
      // Expired at once: compaction drops it, and with it the key.
      .expiringPut(table: "users", key: "user_8", value: value(9), expired: true),
      .compact,
      .put(table: "users", key: "user_2", value: value(41)),
      .clearTable(cache),
      .expiringPut(table: cache, key: "feed_9", value: value(5), expired: false),
      .dropTable(extra),
      .put(table: "users", key: "after_compaction", value: value(8)),
      .createTable(extra),
      .put(table: extra, key: "e2", value: "two"),
      .compact,
      .put(table: "users", key: "last", value: value(6)),
    ]
    return operations
  }()

  /// Records at least this long go to the active segment with `pwrite` (the store's
  /// default is 64 KiB, which no record here reaches).
  static let fileWriteMinimumBytes = 256

  /// The options of the workload's store. With `compactionIndex`, the store counts as large
  /// enough for index files, so that each compaction writes one of its outputs (instead of
  /// giving them hint files) and the store takes it in (``CompactedIndex``).
  static func options(
    _ fileSystem: SimulatedFileSystem, sync: SyncPolicy, corruption: CorruptionPolicy = .fail,
    compactionIndex: Bool = false
  )
    -> LogStore.Options
  {
    var options = LogStore.Options(
      sync: sync, corruption: corruption, compaction: .manual, maxSegmentSize: 4096)
    options.fileSystem = fileSystem
    // Every clean close writes the active segment's hint, so that crashes while it is written,
    // and opens that read it, are among the crash points.
    options.activeHintMinimumBytes = 0
    // About half the records are written with `pwrite` and the others through the mapping, so
    // that crashes in the middle of either are among the crash points.
    options.fileWriteMinimumBytes = fileWriteMinimumBytes
    if compactionIndex { options.indexFileMinimumLiveBytes = 0 }
    return options
  }

  /// Runs the workload until it ends or the file system crashes; returns how many operations
  /// completed before the crash (the acknowledged ones).
  static func run(
    on fileSystem: SimulatedFileSystem, sync: SyncPolicy, compactionIndex: Bool = false
  )
    -> Int
  {
    var acknowledged = 0
    do {
      let store = try LogStore(
        path: path, options: options(fileSystem, sync: sync, compactionIndex: compactionIndex))
      for operation in operations {
        try operation.apply(to: store)
        if fileSystem.crashImage != nil { break }
        acknowledged += 1
      }
      try store.close()
    } catch {}
    return acknowledged
  }

  /// The models after each prefix of the workload: `states[k]` is the state after k operations.
  static let states: [StoreModel] = {
    var states = [StoreModel()]
    var model = StoreModel()
    for operation in operations {
      model.apply(operation)
      states.append(model)
    }
    return states
  }()
}

/// The crash-point workload of writes made while compactions copy: each compaction is handed
/// writes once it has listed its live records, before it judges them, that overwrite, delete,
/// clear and drop what it listed and give a table a new creation record (a new default
/// lifetime), so that the records they shadow are left out of its outputs. The writes made
/// during the second one fill the active segment, which is sealed while that compaction runs.
enum CompactingWorkload {
  enum Step {
    case operation(StoreOperation)
    /// Creates `table` with a default lifetime (0: none): a new creation record when the table
    /// has another.
    case lifetime(table: String, microseconds: Int64)
    /// A compaction, and the next `writesWhileCopying` steps made while it copies.
    case compaction(writesWhileCopying: Int)
  }

  static let steps: [Step] = {
    func value(_ index: Int) -> String {
      "value \(index) " + String(repeating: "abcdefgh", count: 20 + index % 30)
    }
    let (cache, extra) = (CrashWorkload.cache, CrashWorkload.extra)
    var steps: [Step] = ["users", cache, extra].map { .operation(.createTable($0)) }
    for index in 0..<12 {
      steps.append(.operation(.put(table: "users", key: "user_\(index)", value: value(index))))
    }
    for index in 0..<6 {
      steps.append(.operation(.put(table: cache, key: "feed_\(index)", value: value(index))))
      steps.append(.operation(.put(table: extra, key: "e\(index)", value: value(index + 1))))
    }
    steps.append(.lifetime(table: cache, microseconds: 3_600_000_000))
    let whileFirst: [Step] = [
      .operation(.put(table: "users", key: "user_3", value: value(40))),
      .operation(.delete(table: "users", key: "user_4")),
      .operation(.deletePrefix(table: "users", prefix: "user_1")),
      .operation(.clearTable(cache)),
      .lifetime(table: cache, microseconds: 0),
      .operation(.dropTable(extra)),
      .operation(
        .batch([
          .put(
            table: "users", key: Array("batch_a".utf8), value: Array(value(7).utf8),
            timestamp: nil),
          .delete(table: "users", key: Array("user_5".utf8)),
        ])),
    ]
    steps.append(.compaction(writesWhileCopying: whileFirst.count))
    steps += whileFirst
    steps += [
      .operation(.put(table: "users", key: "user_2", value: value(41))),
      .operation(.createTable(extra)),
      .operation(.put(table: extra, key: "e9", value: value(9))),
    ]
    var whileSecond: [Step] = (0..<12).map {
      .operation(.put(table: "users", key: "user_\($0 % 4)", value: value(50 + $0)))
    }
    whileSecond += [
      .operation(.deleteMany(table: "users", keys: ["user_6", "user_7", "missing"])),
      .operation(.dropTable(extra)),
      .operation(.put(table: cache, key: "feed_9", value: value(5))),
    ]
    steps.append(.compaction(writesWhileCopying: whileSecond.count))
    steps += whileSecond
    steps.append(.operation(.put(table: "users", key: "last", value: value(6))))
    return steps
  }()

  /// The models after each prefix of the writes (compactions are no writes).
  static let states: [StoreModel] = {
    var states = [StoreModel()]
    for step in steps {
      var model = states.last!
      switch step {
      case .operation(let operation): model.apply(operation)
      case .lifetime(let table, _): model.apply(.createTable(table))
      case .compaction: continue
      }
      states.append(model)
    }
    return states
  }()

  /// Runs the workload on the crash-point workload's store until it ends or the file system
  /// crashes; returns how many writes completed before the crash (the acknowledged ones).
  static func run(
    on fileSystem: SimulatedFileSystem, sync: SyncPolicy, compactionIndex: Bool
  ) -> Int {
    var acknowledged = 0
    var position = 0
    func write(_ step: Step, to store: LogStore) throws(LogStoreError) {
      switch step {
      case .operation(let operation): try operation.apply(to: store)
      case .lifetime(let table, let microseconds):
        try store.createTable(table, defaultLifetime: microseconds)
      case .compaction: break
      }
    }
    /// Makes the next write; false when it failed or the file system crashed.
    func writeNext(to store: LogStore) -> Bool {
      do { try write(steps[position], to: store) } catch { return false }
      guard fileSystem.crashImage == nil else { return false }
      position += 1
      acknowledged += 1
      return true
    }
    do {
      let store = try LogStore(
        path: CrashWorkload.path,
        options: CrashWorkload.options(fileSystem, sync: sync, compactionIndex: compactionIndex))
      while position < steps.count {
        guard case .compaction(let count) = steps[position] else {
          guard writeNext(to: store) else { return acknowledged }
          continue
        }
        position += 1
        var written: Int?
        try store.compact { _, _ in
          guard written == nil else { return }
          written = 0
          while written! < count, writeNext(to: store) { written! += 1 }
        }
        if fileSystem.crashImage != nil || written != count { return acknowledged }
      }
      try store.close()
    } catch {}
    return acknowledged
  }
}

@Suite("Crash points")
struct CrashPointTests {
  /// Opens the image a crash left and returns what it holds; then checks the store still
  /// takes writes and reopens. `verify` of the image, made first, must find no problem, and
  /// must check the index and changes files the open used, never calling them stale.
  private func reopen(
    _ image: [String: [UInt8]], sync: SyncPolicy, platform: SimulatedFileSystem.Platform,
    compactionIndex: Bool, point: String
  ) throws -> StoreModel {
    let fileSystem = SimulatedFileSystem(files: image, platform: platform)
    let report =
      fileSystem.directoryExists(CrashWorkload.path)
      ? try LogStore.verify(
        path: CrashWorkload.path, fileSystem: SimulatedFileSystem(files: image, platform: platform))
      : nil
    let options = CrashWorkload.options(fileSystem, sync: sync, compactionIndex: compactionIndex)
    let store = try LogStore(path: CrashWorkload.path, options: options)
    if let report {
      #expect(report.isClean, "verify after a \(point): \(report.problems)")
      var used: [String] = []
      if let index = store.openReport.indexFile {
        #expect(report.indexFiles > 0, "verify after a \(point)")
        used.append(StoreFileName.index(index))
        if store.openReport.usedChangesFile { used.append(StoreFileName.changes(index)) }
      }
      #expect(
        !report.notes.contains { used.contains($0.file) },
        "verify after a \(point): \(report.notes)")
    }
    let state = try StoreModel.reading(store)
    try store.createTable("probe")
    try store.put(Array("p".utf8), forKey: Array("k".utf8), in: "probe")
    try store.close()
    let again = try LogStore(path: CrashWorkload.path, options: options)
    var expected = state
    expected.tables["probe", default: [:]]["k"] = "p"
    let reread = try StoreModel.reading(again)
    #expect(reread == expected, "a write after recovery did not survive a reopen")
    return state
  }

  /// What a read-only open of the image a crash left sees.
  private func readOnlyState(
    _ image: [String: [UInt8]], sync: SyncPolicy, platform: SimulatedFileSystem.Platform,
    compactionIndex: Bool
  ) throws -> StoreModel {
    let fileSystem = SimulatedFileSystem(files: image, platform: platform)
    // A crash before the store's directory was made: nothing was written yet.
    guard fileSystem.directoryExists(CrashWorkload.path) else { return StoreModel() }
    var options = CrashWorkload.options(fileSystem, sync: sync, compactionIndex: compactionIndex)
    options.readOnly = true
    let reader = try LogStore(path: CrashWorkload.path, options: options)
    let state = try StoreModel.reading(reader)
    try reader.close()
    return state
  }

  /// Which prefixes of a workload of `count` writes a crash image may hold.
  private func allowed(acknowledged: Int, of count: Int, mustKeepAcknowledged: Bool)
    -> ClosedRange<Int>
  {
    let upper = min(acknowledged + 1, count)
    return (mustKeepAcknowledged ? acknowledged : 0)...upper
  }

  /// What a read-only open, then an open for writing, of one crash image see.
  private struct Opened: Equatable {
    var readOnly: StoreModel
    var writable: StoreModel
  }

  /// Crashes at `call` and checks each image the crash can leave (`cuts`), from one run of
  /// the workload (``CrashWorkload`` unless `run` and `states` give another: it runs on the
  /// file system it is given and returns how many writes were acknowledged, and `states`
  /// holds the models after each prefix of them): every image must hold the model after an
  /// allowed prefix.
  ///
  /// An image met lately (the same bytes in the same files: at a call that changes no file,
  /// or when a power loss keeps the same writes as another) is not opened again: opening is
  /// deterministic, so what it saw is looked up in `opened`, and only the allowed prefixes,
  /// which depend on the call, are checked anew. `opened` keeps at most 256 images, so that
  /// the four runs of the suite (two sync policies, two platforms) can go on side by side.
  private func check(
    crashAt call: Int, cuts: [SimulatedFileSystem.CrashCut], sync: SyncPolicy,
    platform: SimulatedFileSystem.Platform, compactionIndex: Bool,
    run: ((SimulatedFileSystem) -> Int)? = nil, states: [StoreModel] = CrashWorkload.states,
    opened: inout [[String: [UInt8]]: Opened], opens: inout Int, points: inout Int
  ) throws {
    let fileSystem = SimulatedFileSystem(platform: platform)
    fileSystem.crash(atCall: call, leaving: cuts)
    let acknowledged =
      run?(fileSystem)
      ?? CrashWorkload.run(on: fileSystem, sync: sync, compactionIndex: compactionIndex)
    let images = try #require(fileSystem.crashImages, "call \(call) was never reached")
    for (cut, image) in zip(cuts, images) {
      let point =
        "crash at call \(call) (\(cut.mode), tear \(String(describing: cut.tearing)), \(sync), "
        + "compaction's index file: \(compactionIndex))"
      let seen: Opened
      if let known = opened[image] {
        seen = known
      } else {
        if opened.count >= 256 { opened.removeAll(keepingCapacity: true) }
        // A read-only open first, as an app extension might make before the app opens the
        // store again: it trusts the manifest the crash left, and must see a prefix too.
        let readState = try readOnlyState(
          image, sync: sync, platform: platform, compactionIndex: compactionIndex)
        seen = Opened(
          readOnly: readState,
          writable: try reopen(
            image, sync: sync, platform: platform, compactionIndex: compactionIndex,
            point: point))
        opened[image] = seen
        opens += 1
      }
      // A process crash keeps everything handed to the OS; a power loss keeps what was
      // synced, which with `.always` is every acknowledged write.
      let keepsAcknowledged = cut.mode == .process || sync == .always
      let range = allowed(
        acknowledged: acknowledged, of: states.count - 1, mustKeepAcknowledged: keepsAcknowledged)
      #expect(
        range.contains { states[$0] == seen.writable },
        "\(point): \(acknowledged) acknowledged; got \(seen.writable)")
      #expect(
        range.contains { states[$0] == seen.readOnly },
        "read-only open after a \(point): \(acknowledged) acknowledged; got \(seen.readOnly)")
      points += 1
    }
  }

  /// The tears of a write through a mapping of `count` bytes kept at sample depth (a tear keeps
  /// that many bytes of the write): where each field of the record it starts with begins (of
  /// a segment's header, when it is one), after its first byte, and before its last.
  static func tearEdges(ofWriteOf count: Int) -> Set<Int> {
    var edges: Set<Int> = [0, 1, count - 1]
    edges.formUnion([
      RecordLayout.checksumOffset, RecordLayout.kindOffset, RecordLayout.tableLengthOffset,
      RecordLayout.keyLengthOffset, RecordLayout.valueLengthOffset, RecordLayout.sequenceOffset,
      RecordLayout.timestampOffset, RecordLayout.headerSize,
    ])
    if count == SegmentHeader.size { edges.formUnion([8, 10, 12, 16, 20, 24, 28, 32, 40, 44]) }
    return edges.filter { $0 < count }
  }

  /// Whether `call` is a `pwrite` to a segment (a record the writer appends, or the zeros an
  /// open writes over a torn tail), which a killed process may leave torn.
  static func isSegmentWrite(_ call: SimulatedFileSystem.Call) -> Bool {
    call.operation == "pwrite" && call.path.hasSuffix(".log")
  }

  /// Every call of the workload under a process crash and three different power losses, and
  /// for writes through a mapping or `pwrite` to a segment a process crash after every byte (at sample depth: the
  /// edges of ``tearEdges(ofWriteOf:)`` and every 13th byte). On `platform`'s sync rules: on
  /// Darwin only a full sync (`F_FULLFSYNC`) makes data survive a power loss.
  private func crashEverywhere(
    sync: SyncPolicy, platform: SimulatedFileSystem.Platform, compactionIndex: Bool
  ) throws -> Int {
    let reference = SimulatedFileSystem(platform: platform)
    #expect(
      CrashWorkload.run(on: reference, sync: sync, compactionIndex: compactionIndex)
        == CrashWorkload.operations.count)
    let log = reference.log
    if compactionIndex {
      // Each compaction wrote an index file of its outputs, and gave them no hint files.
      let written = log.filter { $0.operation == "rename" && $0.path.hasSuffix(".index.tmp") }
      #expect(written.count == 2, "index files written: \(written.map(\.path))")
    }
    // Both ways of appending a record are among the calls (each write through the mapping of a
    // record or longer, and each `pwrite` to a segment, is one record, a sync mark or zeros).
    let mappedRecords = log.filter {
      $0.operation == "mapped write" && $0.count > RecordLayout.syncMarkLength
        && $0.count != SegmentHeader.size
    }
    #expect(mappedRecords.count > 10 && log.filter(Self.isSegmentWrite).count > 10)
    #expect(mappedRecords.allSatisfy { $0.count < CrashWorkload.fileWriteMinimumBytes })
    let finished = try LogStore(
      path: CrashWorkload.path,
      options: CrashWorkload.options(reference, sync: sync, compactionIndex: compactionIndex))
    #expect(try StoreModel.reading(finished) == CrashWorkload.states.last!)
    var points = 0
    var opened: [[String: [UInt8]]: Opened] = [:]
    var opens = 0
    for (index, call) in log.enumerated() {
      var cuts: [SimulatedFileSystem.CrashCut] = [.init(mode: .process)]
      for seed: UInt64 in [1, 2, 3] { cuts.append(.init(mode: .power(seed: seed))) }
      if call.operation == "mapped write" || Self.isSegmentWrite(call) {
        let edges = Self.tearEdges(ofWriteOf: call.count)
        for tear in 0..<call.count
        where TestDepth.runs(tear, every: 13, isEdge: edges.contains(tear)) {
          cuts.append(.init(mode: .process, tearing: tear))
        }
      }
      try check(
        crashAt: index + 1, cuts: cuts, sync: sync, platform: platform,
        compactionIndex: compactionIndex, opened: &opened, opens: &opens, points: &points)
    }
    print(
      "crash points checked, sync \(sync), \(platform) sync rules, compaction's index file: \(compactionIndex), \(TestDepth.current): \(points) (\(opens) images opened)"
    )
    return points
  }

  /// With `compactionIndex`, each compaction writes an index file of its outputs, and the
  /// crash points include its writing and the store taking it in.
  @Test(
    "a crash at any call or byte leaves a prefix of the acknowledged writes (sync never)",
    arguments: SimulatedFileSystem.Platform.allCases, [false, true])
  func crashPointsNever(platform: SimulatedFileSystem.Platform, compactionIndex: Bool) throws {
    let points = try crashEverywhere(
      sync: .never, platform: platform, compactionIndex: compactionIndex)
    #expect(points > 1000)
  }

  @Test(
    "a crash at any call or byte keeps every acknowledged write (sync always)",
    arguments: SimulatedFileSystem.Platform.allCases, [false, true])
  func crashPointsAlways(platform: SimulatedFileSystem.Platform, compactionIndex: Bool) throws {
    let points = try crashEverywhere(
      sync: .always, platform: platform, compactionIndex: compactionIndex)
    #expect(points > 1000)
  }

  /// ``CompactingWorkload``: every call under a process crash and a power loss (three
  /// different ones at full depth, under both platforms' sync rules). Writes made while a
  /// compaction copies shadow records it then leaves out of its outputs: those writes must be
  /// durable before the outputs replace the inputs, under every policy.
  @Test(
    "a crash at any call, with writes made while compactions copy, leaves a prefix of the acknowledged writes, all of them under sync always",
    arguments: [SyncPolicy.never, .always], [false, true])
  func crashPointsWhileCompacting(sync: SyncPolicy, compactionIndex: Bool) throws {
    let run = { (fileSystem: SimulatedFileSystem) in
      CompactingWorkload.run(on: fileSystem, sync: sync, compactionIndex: compactionIndex)
    }
    let states = CompactingWorkload.states
    var points = 0
    for platform in TestDepth.choose(sample: [.linux], full: SimulatedFileSystem.Platform.allCases)
    {
      let reference = SimulatedFileSystem(platform: platform)
      #expect(run(reference) == states.count - 1)
      let calls = reference.calls
      if compactionIndex {
        let written = reference.log.filter {
          $0.operation == "rename" && $0.path.hasSuffix(".index.tmp")
        }
        #expect(written.count >= 2, "index files written: \(written.map(\.path))")
      }
      let finished = try LogStore(
        path: CrashWorkload.path,
        options: CrashWorkload.options(reference, sync: sync, compactionIndex: compactionIndex))
      #expect(try StoreModel.reading(finished) == states.last!)
      var opened: [[String: [UInt8]]: Opened] = [:]
      var opens = 0
      let seeds: [UInt64] = TestDepth.choose(sample: [1], full: [1, 2, 3])
      for call in 1...calls {
        let cuts =
          [.init(mode: .process)]
          + seeds.map { SimulatedFileSystem.CrashCut(mode: .power(seed: $0 &+ UInt64(call))) }
        try check(
          crashAt: call, cuts: cuts, sync: sync, platform: platform,
          compactionIndex: compactionIndex, run: run, states: states, opened: &opened,
          opens: &opens, points: &points)
      }
    }
    print(
      "crash points with writes while compacting checked, sync \(sync), compaction's index file: \(compactionIndex), \(TestDepth.current): \(points)"
    )
    #expect(points > 200)
  }
}
