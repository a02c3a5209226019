/// The engine behind ``LogStore``: all state and the locking discipline live here.
///
/// Locking rules (also in docs/CONCURRENCY.md):
/// 1. `indexLock` (readers–writer) guards `keys`, `segments`, `isClosed` and
///    `damagedRecords`. Readers hold it shared while they look a key up and copy its value out
///    of the segment mapping, so readers never wait for each other.
/// 2. `writeLock` guards everything else: the active segment, sequence and file numbers,
///    sealed segment sizes, the group-commit queue and the background threads' flags.
/// 3. `indexLock` is taken exclusively only by a thread that holds `writeLock` (lock order:
///    `writeLock`, then `indexLock`). So a thread holding `writeLock` may read the index
///    without `indexLock`: nobody else can be changing it.
/// 4. Nothing blocks while holding `indexLock`, and no user code runs under either lock.
final class StoreEngine: @unchecked Sendable {
  let directory: String
  let options: LogStore.Options
  var fileSystem: any FileSystem { options.fileSystem }

  // Every `var` below is guarded by one of the two locks, so the runtime's exclusivity checks
  // (which cost more than the lookups they guard on the read path) are turned off for them.

  // MARK: Guarded by `indexLock` (rule 1)
  let indexLock = ReadWriteLock()
  @exclusivity(unchecked) var keys: KeyDirectory
  @exclusivity(unchecked) var segments: [UInt32: SegmentFile] {
    didSet { segmentList = Array(segments.values) }
  }
  /// The same segments as a list: readers find theirs by a short linear search, cheaper than
  /// hashing for the few segments a store has.
  @exclusivity(unchecked) private(set) var segmentList: [SegmentFile] = []
  @exclusivity(unchecked) var isClosed = false
  @exclusivity(unchecked) var damagedRecords: Int

  // MARK: Guarded by `writeLock` (rule 2)
  let writeLock = ConditionLock()
  @exclusivity(unchecked) var writer: SegmentWriter?
  @exclusivity(unchecked) var sealedSizes: [UInt32: Int]
  @exclusivity(unchecked) var hintSizes: [UInt32: Int]
  @exclusivity(unchecked) var nextSequence: UInt64
  @exclusivity(unchecked) var nextFileNumber: UInt32
  /// The segments the manifest on disk lists; nil when unknown (a publish failed midway).
  var publishedSegments: [UInt32]?
  /// The generation of the last manifest written or read.
  var manifestGeneration: UInt64
  /// Inputs of a compaction whose outputs have replaced them in the manifest, until they are
  /// dropped from `segments`.
  var retiredSegments: Set<UInt32> = []
  /// Changes waiting for a group commit (`SyncPolicy.always`); the first one leads.
  var commitQueue: [CommitTicket] = []
  /// The threads of the last two commit groups, and how long the last sync took: a new leader
  /// waits a little for those writers to queue again (see `gatherGroup`).
  var recentCommitters: [Set<UInt>] = [[], []]
  var lastSyncNanoseconds: Int64 = 0
  /// A thread is syncing the active segment without holding `writeLock`; nobody may seal,
  /// replace or close it meanwhile.
  var syncInFlight = false
  /// `close()` has begun: new writes are refused and background threads stop.
  var closing = false
  var storeLock: (any FileLock)?
  var backgroundThreads: [BackgroundThread] = []
  /// Compaction state; see Compaction/.
  var compactionRunning = false
  /// Set by `close()` so that a compaction in progress stops early; read without locks.
  let stopRequested = OnceFlag()
  var compactionRequested = false
  /// Why the last automatic compaction failed, for `waitForCompaction()` to report.
  var automaticCompactionError: LogStoreError?
  var bytesSinceCompactionCheck = 0
  /// How the last open rebuilt the index.
  let openReport: OpenReport

  init(directory: String, options: LogStore.Options) throws(LogStoreError) {
    let options = try options.validated()
    self.directory = directory
    self.options = options
    let fileSystem = options.fileSystem
    if options.readOnly {
      guard fileSystem.directoryExists(directory) else {
        throw LogStoreError(.storeNotFound, "there is no store at \(directory)")
      }
    } else {
      try fileSystem.createDirectory(directory)
      storeLock = try fileSystem.lockFile(directory + "/" + StoreFileName.lock)
    }
    var state = try Recovery(directory: directory, options: options).run()
    if !options.readOnly && state.writer == nil {
      try Self.checkFileNumbers(from: state.nextFileNumber, count: 1, directory: directory)
      let writer = try Self.createSegment(
        directory: directory, number: state.nextFileNumber, baseSequence: state.nextSequence,
        capacity: options.maxSegmentSize, fileSystem: fileSystem)
      state.nextFileNumber += 1
      state.segments[writer.file.number] = writer.file
      state.writer = writer
    }
    publishedSegments = state.manifest?.segments
    manifestGeneration = state.manifest?.generation ?? 0
    keys = state.keys
    segments = state.segments
    segmentList = Array(state.segments.values)
    damagedRecords = state.damagedRecords
    writer = state.writer
    sealedSizes = state.sealedSizes
    hintSizes = state.hintSizes
    nextSequence = state.nextSequence
    nextFileNumber = state.nextFileNumber
    openReport = state.report
    if !options.readOnly {
      try writeLock.withLock { () throws(LogStoreError) in
        try publishManifest(liveSegmentNumbers())
      }
    }
    startBackgroundThreads()
  }

  // MARK: The manifest

  /// The segments the manifest should list: every open segment but the retired inputs of a
  /// compaction. Call with `writeLock` held.
  func liveSegmentNumbers() -> [UInt32] {
    segments.keys.filter { !retiredSegments.contains($0) }.sorted()
  }

  /// Replaces the manifest with one listing `numbers`, unless it lists them already. Call
  /// with `writeLock` held, before anything is written to a segment it adds and before any
  /// segment it drops is deleted (the invariants in Format/Manifest.swift).
  func publishManifest(_ numbers: [UInt32]) throws(LogStoreError) {
    guard publishedSegments != numbers else { return }
    manifestGeneration += 1
    publishedSegments = nil
    try Manifest(segments: numbers, generation: manifestGeneration).publish(
      directory: directory, fileSystem: fileSystem)
    publishedSegments = numbers
  }

  /// Throws unless `count` file numbers from `first` are below the highest a store uses
  /// (2^31: a store would need billions of segments to get there; only a file named so by
  /// hand or by damage brings it close).
  static func checkFileNumbers(from first: UInt32, count: UInt32, directory: String)
    throws(LogStoreError)
  {
    guard first < StoreFileName.maximumNumber, count <= StoreFileName.maximumNumber - first
    else {
      throw LogStoreError(
        .corrupted,
        "the file numbers of \(directory) are used up (the next would be \(first)): "
          + "a file there has a number no store reaches; `ytkkv recover` rebuilds the store")
    }
  }

  /// Creates segment `number` with its header, reserving its first chunk of disk, mapped
  /// for writing with room for `capacity` bytes.
  static func createSegment(
    directory: String, number: UInt32, baseSequence: UInt64, capacity: Int,
    fileSystem: any FileSystem
  ) throws(LogStoreError) -> SegmentWriter {
    let path = directory + "/" + StoreFileName.segment(number)
    let handle = try fileSystem.openFile(path, mode: .createOrOpen)
    do {
      try handle.truncate(to: 0)
      let initial = min(capacity, SegmentHeader.size + SegmentWriter.firstAllocation)
      try handle.allocate(upTo: initial)
      let mapping = try handle.map(length: capacity, writable: true)
      let header = SegmentHeader(
        fileNumber: number, salt: UInt32.random(in: .min ... .max), baseSequence: baseSequence)
      let file = SegmentFile(
        number: number, path: path, salt: header.salt, header: header, handle: handle,
        mapping: mapping)
      let writer = SegmentWriter(
        file: file, capacity: capacity, used: 0, allocated: initial, durable: 0)
      let encoded = header.encoded()
      _ = try writer.append(count: encoded.count) { buffer in
        buffer.copyBytes(from: encoded)
      }
      try fileSystem.synchronizeDirectory(directory)
      return writer
    } catch {
      handle.close()
      try? fileSystem.removeFile(path)
      throw error
    }
  }

  // MARK: Guards

  /// Throws unless writes are allowed now; call with `writeLock` held.
  func checkWritable() throws(LogStoreError) {
    if options.readOnly {
      throw LogStoreError(.readOnly, "the store at \(directory) was opened read-only")
    }
    if closing { throw closedError() }
  }

  func closedError() -> LogStoreError {
    LogStoreError(.closed, "the store at \(directory) is closed")
  }

  // MARK: Reading

  /// Looks `key` up in `table` and calls `body` with its record, under the shared index
  /// lock; `nil` when the key has no value.
  func withRecord<R, E: Error>(
    key: UnsafeRawBufferPointer, table: String, hash: UInt64,
    _ body: (Record) throws(E) -> R
  ) throws(LogStoreError) -> Result<R, E>? {
    try indexLock.withReadLock { () throws(LogStoreError) -> Result<R, E>? in
      if isClosed { throw closedError() }
      guard let index = keys.table(table) else { throw tableNotFound(table) }
      guard let location = index.find(key, hash: hash) else { return nil }
      let record = try readRecord(at: location)
      guard record.key.count == key.count,
        key.count == 0 || bytesEqual(record.key.baseAddress!, key.baseAddress!, key.count)
      else {
        throw LogStoreError(
          .corrupted, "the index of table \"\(table)\" points at a record of another key")
      }
      return Result { () throws(E) -> R in try body(record) }
    }
  }

  /// The open segment numbered `number`; call with `indexLock` held.
  @inline(__always)
  func segment(_ number: UInt32) -> SegmentFile? {
    for segment in segmentList where segment.number == number { return segment }
    return nil
  }

  /// Decodes the record at `location`; call with `indexLock` held.
  func readRecord(at location: RecordLocation) throws(LogStoreError) -> Record {
    guard let segment = segment(location.segment) else {
      throw LogStoreError(
        .corrupted, "segment \(location.segment) is missing from \(directory)")
    }
    return try record(at: location, in: segment)
  }

  /// Decodes the record at `location` of `segment`, which the caller keeps alive.
  func record(at location: RecordLocation, in segment: SegmentFile) throws(LogStoreError)
    -> Record
  {
    do {
      return try segment.record(
        at: Int(location.offset), verify: options.verifyChecksumsOnRead)
    } catch {
      throw LogStoreError(
        .corrupted,
        "the record at offset \(location.offset) of \(segment.path) is damaged: \(error.reason)")
    }
  }

  /// The error for a table that is not there: `invalidTableName` when no table could ever
  /// have that name, `tableNotFound` otherwise.
  func tableNotFound(_ table: String) -> LogStoreError {
    do {
      try table.withUTF8Bytes { bytes throws(LogStoreError) in
        try Mutation.validateTableName(bytes)
      }
    } catch {
      return error
    }
    return LogStoreError(.tableNotFound, "there is no table named \"\(table)\" in \(directory)")
  }

  func tableNotFound(_ table: UnsafeRawBufferPointer) -> LogStoreError {
    tableNotFound(String(decoding: table, as: UTF8.self))
  }

  /// Runs `body` on the index under the shared lock, after checking the store is open.
  func readIndex<R>(_ body: (KeyDirectory) throws(LogStoreError) -> R) throws(LogStoreError) -> R {
    try indexLock.withReadLock { () throws(LogStoreError) -> R in
      if isClosed { throw closedError() }
      return try body(keys)
    }
  }

  // MARK: Writing

  /// A record appended to the log but perhaps not yet applied to the index.
  struct Appended {
    let file: SegmentFile
    let offset: Int
    let length: Int
    let firstSequence: UInt64
  }

  /// One writer's change in the group-commit queue. Touched only under `writeLock`.
  final class CommitTicket {
    let mutation: Mutation
    let thread = currentThreadID()
    /// Signalled when the change is done, or when its writer is to lead.
    let wakeup = Wakeup()
    var appended: Appended?
    var error: LogStoreError?
    var done = false

    init(_ mutation: Mutation) { self.mutation = mutation }
  }

  /// Writes `mutation` to the log and applies it to the index, durably first when the sync
  /// policy says so.
  func commit(_ mutation: Mutation) throws(LogStoreError) {
    try mutation.validateArguments()
    writeLock.lock()
    defer { writeLock.unlock() }
    try checkWritable()
    if options.sync == .always {
      try commitGrouped(mutation)
      return
    }
    var tables: [String: Bool] = [:]
    try checkTables(mutation, pending: &tables)
    let appended = try append(mutation)
    indexLock.withWriteLock { apply(appended) }
    noteWritten(appended.length)
  }

  /// Checks that every table `mutation` writes to exists, given the table creations and drops
  /// of changes written before it but not yet applied (`pending`), and adds its own.
  func checkTables(_ mutation: Mutation, pending: inout [String: Bool]) throws(LogStoreError) {
    var local = pending
    try mutation.forEachTableUse { kind, table throws(LogStoreError) in
      let name = local.isEmpty ? nil : String(decoding: table, as: UTF8.self)
      switch kind {
      case .createTable:
        local[name ?? String(decoding: table, as: UTF8.self)] = true
      default:
        let exists = name.flatMap { local[$0] } ?? (keys.table(table) != nil)
        guard exists else { throw tableNotFound(table) }
        if kind == .dropTable { local[String(decoding: table, as: UTF8.self)] = false }
      }
    }
    pending = local
  }

  /// Appends the encoded `mutation` to the active segment, starting a new segment when it
  /// does not fit. Call with `writeLock` held.
  func append(_ mutation: Mutation) throws(LogStoreError) -> Appended {
    let length = mutation.encodedLength
    var active = writer!
    if !active.fits(length) { active = try rotate(forRecordOf: length) }
    let sequence = nextSequence
    let now = Timestamp.now()
    let salt = active.file.salt
    let offset = try active.append(count: length) { buffer in
      mutation.encode(into: buffer, sequence: sequence, now: now, salt: salt)
    }
    nextSequence += UInt64(mutation.sequenceCount)
    return Appended(file: active.file, offset: offset, length: length, firstSequence: sequence)
  }

  /// Applies an appended record to the index. Call with `writeLock` and `indexLock` (write).
  func apply(_ appended: Appended) {
    let location = RecordLocation(
      segment: appended.file.number, offset: UInt32(appended.offset),
      length: UInt32(appended.length))
    do {
      let record = try appended.file.record(at: appended.offset, verify: false)
      if record.kind == .batch {
        try appended.file.forEachMember(of: record, at: appended.offset) { keys.apply($0, at: $1) }
      } else {
        keys.apply(record, at: location)
      }
    } catch {
      preconditionFailure("a record just written does not decode: \(error)")
    }
  }

  /// Seals the active segment and starts a new one big enough for a record of `length`.
  func rotate(forRecordOf length: Int) throws(LogStoreError) -> SegmentWriter {
    let old = writer!
    // Seal first: once a newer segment exists, recovery treats this one as complete, so it
    // must be on stable storage before the next one is created.
    try old.seal()
    try Self.checkFileNumbers(from: nextFileNumber, count: 1, directory: directory)
    let number = nextFileNumber
    // Numbers are never reused, not even that of a segment whose start failed.
    nextFileNumber += 1
    let fresh = try Self.createSegment(
      directory: directory, number: number, baseSequence: nextSequence,
      capacity: max(options.maxSegmentSize, SegmentHeader.size + length),
      fileSystem: fileSystem)
    // Listed before anything is written to it. If that fails, the old segment stays active
    // (sealing only synced it) and the new file is left unused: a reader may already have
    // been told of it, so it is not removed; the next open treats it as an empty segment.
    try publishManifest(liveSegmentNumbers() + [number])
    sealedSizes[old.file.number] = old.allocated
    indexLock.withWriteLock { segments[number] = fresh.file }
    writer = fresh
    return fresh
  }

  /// The group commit of `SyncPolicy.always`: the first waiting writer writes every queued
  /// change, syncs once for all of them, applies them in order and wakes the others.
  private func commitGrouped(_ mutation: Mutation) throws(LogStoreError) {
    let ticket = CommitTicket(mutation)
    commitQueue.append(ticket)
    // A leader gathering its group waits for arrivals.
    if commitQueue.count > 1 { commitQueue[0].wakeup.signal() }
    while !ticket.done && commitQueue.first !== ticket { writeLock.wait(for: ticket.wakeup) }
    if ticket.done {
      if let error = ticket.error { throw error }
      return
    }
    let group = gatherGroup()
    var tables: [String: Bool] = [:]
    for member in group {
      do {
        try checkWritable()
        try checkTables(member.mutation, pending: &tables)
        member.appended = try append(member.mutation)
      } catch {
        member.error = error
      }
    }
    // One sync outside the lock at a time (compaction may be flushing the segment).
    while syncInFlight { writeLock.wait() }
    let active = writer!
    let range = active.unsynchronized
    syncInFlight = true
    writeLock.unlock()
    var syncError: LogStoreError?
    let syncStart = monotonicNanoseconds()
    do {
      try active.synchronize(range, .durable)
    } catch {
      syncError = error
    }
    writeLock.lock()
    lastSyncNanoseconds = monotonicNanoseconds() - syncStart
    syncInFlight = false
    if let syncError {
      // What did not reach the disk must not come back after a crash either: zero it, and
      // fail every change written there. Changes in segments sealed meanwhile are durable.
      active.discardUnsynchronized()
      for member in group {
        guard member.error == nil, let appended = member.appended,
          appended.file === active.file, appended.offset + appended.length > active.used
        else { continue }
        member.error = syncError
        member.appended = nil
        nextSequence = min(nextSequence, appended.firstSequence)
      }
    } else {
      active.markDurable(upTo: range.upperBound)
    }
    indexLock.withWriteLock {
      for member in group where member.error == nil {
        if let appended = member.appended { apply(appended) }
      }
    }
    for member in group {
      if member.error == nil, let appended = member.appended { noteWritten(appended.length) }
      member.done = true
      member.wakeup.signal()
    }
    commitQueue.removeFirst(group.count)
    // The next writer in line leads; threads waiting for the log to be idle look again.
    commitQueue.first?.wakeup.signal()
    writeLock.broadcast()
    if let error = ticket.error { throw error }
  }

  /// The leader's group: every queued change, after waiting briefly for the writers of the last
  /// two groups to queue again.
  ///
  /// Without the wait, writers fall into lockstep: while one group syncs, the writers of the
  /// other wait in the queue, so groups alternate between them and each sync carries half the
  /// writers. Waiting up to half a sync for writers that were just released lets one sync carry
  /// them all; a lone writer never waits (it is the only recent committer).
  private func gatherGroup() -> [CommitTicket] {
    let expected = recentCommitters[0].union(recentCommitters[1]).count
    if commitQueue.count < expected && lastSyncNanoseconds > 0 {
      let deadline = monotonicNanoseconds() + min(lastSyncNanoseconds / 2, 2_000_000)
      while commitQueue.count < expected {
        let left = deadline - monotonicNanoseconds()
        if left <= 0 { break }
        writeLock.wait(for: commitQueue[0].wakeup, nanoseconds: left)
      }
    }
    let group = commitQueue
    recentCommitters = [recentCommitters[1], Set(group.map(\.thread))]
    return group
  }

  /// Waits until no sync is running outside the lock; call with `writeLock` held.
  func waitForLog() {
    while syncInFlight || !commitQueue.isEmpty { writeLock.wait() }
  }

  // MARK: Sync, statistics, close

  func sync() throws(LogStoreError) {
    try writeLock.withLock { () throws(LogStoreError) in
      if closing { throw closedError() }
      waitForLog()
      try writer?.synchronize()
    }
  }

  /// Bytes of segment and hint files, without space reserved past the active segment's end
  /// (sealed segments keep theirs: a file is never cut while a reader may have it mapped).
  /// Call with `writeLock` held.
  var diskBytes: Int {
    sealedSizes.values.reduce(0, +) + (writer?.used ?? 0) + hintSizes.values.reduce(0, +)
  }

  func statistics() throws(LogStoreError) -> StoreStatistics {
    try writeLock.withLock { () throws(LogStoreError) -> StoreStatistics in
      let disk = diskBytes
      return try readIndex { keys throws(LogStoreError) in
        StoreStatistics(
          tables: keys.tables.count, liveItems: keys.itemCount, liveBytes: keys.liveBytes,
          diskBytes: disk, segments: segments.count, damagedRecords: damagedRecords)
      }
    }
  }

  /// Stops background work, syncs and trims the active segment, and releases every file.
  func close() throws(LogStoreError) {
    writeLock.lock()
    if closing {
      writeLock.unlock()
      return
    }
    waitForLog()
    closing = true
    stopRequested.set()
    writeLock.broadcast()
    while compactionRunning { writeLock.wait() }
    let threads = backgroundThreads
    backgroundThreads = []
    writeLock.unlock()
    // The background threads take `writeLock` themselves, so they are joined without it.
    for thread in threads { thread.join() }

    writeLock.lock()
    defer { writeLock.unlock() }
    var failure: LogStoreError?
    if let writer {
      // Synced, not cut to its end: a reader may have the file mapped (docs/CONCURRENCY.md).
      // The next writer appends after the last record.
      do {
        try writer.synchronize()
      } catch {
        failure = error
      }
    }
    indexLock.withWriteLock {
      isClosed = true
      keys = KeyDirectory()
      segments = [:]
    }
    writer = nil
    storeLock?.unlock()
    storeLock = nil
    if let failure { throw failure }
  }

  // MARK: Background work

  private func startBackgroundThreads() {
    guard !options.readOnly else { return }
    if case .interval(let milliseconds) = options.sync {
      let thread = BackgroundThread { [self] in runIntervalSync(every: milliseconds) }
      backgroundThreads.append(thread)
      thread.start()
    }
    if options.compaction != .manual {
      let thread = BackgroundThread { [self] in runAutomaticCompaction() }
      backgroundThreads.append(thread)
      thread.start()
    }
  }

  /// The loop of the `SyncPolicy.interval` thread: sync what was written, then sleep.
  ///
  /// An ordered sync, not a durable one: on Darwin `F_BARRIERFSYNC`, which keeps a power loss
  /// from leaving newer records without older ones but does not empty the drive's whole cache,
  /// as `F_FULLFSYNC` would on every interval (docs/PLATFORMS.md). On Linux it is `msync`, as
  /// durable as `.always`. `sync()`, `close()` and compaction still make everything durable.
  private func runIntervalSync(every milliseconds: Int) {
    writeLock.lock()
    defer { writeLock.unlock() }
    while !closing {
      writeLock.wait(milliseconds: milliseconds)
      guard !closing, !syncInFlight, let active = writer else { continue }
      let range = active.unordered
      guard !range.isEmpty else { continue }
      syncInFlight = true
      writeLock.unlock()
      let synced = (try? active.synchronize(range, .ordered)) != nil
      writeLock.lock()
      syncInFlight = false
      writeLock.broadcast()
      // A failed background sync is retried at the next interval; `sync()` reports errors.
      if synced { active.markOrdered(upTo: range.upperBound) }
    }
  }
}
