/// The log being written: the active segment, which it appends to, syncs and replaces when
/// full, the numbers the next record and the next file get, and the sizes of the sealed
/// segments. It keeps the manifest listing the live segments (``ManifestPublisher``) and what
/// compactions and backups hold on to (``SegmentHolds``).
///
/// `lock` is the store's write lock. It guards everything here, and also the state of the
/// parts that act on the log and so already hold it (docs/DESIGN.md, "Locks"). A thread
/// holding it may read the ``IndexView`` without the index lock, and changes the index by
/// taking the index lock inside it (never the other way round).
final class ActiveLog: @unchecked Sendable {
  let directory: String
  let options: LogStore.Options
  var fileSystem: any FileSystem { options.fileSystem }
  let index: IndexView
  let lock = ConditionLock()

  // Every `var` below is guarded by `lock`; the runtime's exclusivity checks are off for them.
  @exclusivity(unchecked) private(set) var writer: SegmentWriter?
  @exclusivity(unchecked) private var sealedSizes: [UInt32: Int]
  @exclusivity(unchecked) private var hintSizes: [UInt32: Int]
  @exclusivity(unchecked) private(set) var nextSequence: UInt64
  /// In `.manyProcesses` use, the count of writes that changed tables, as the log now stands
  /// (``SharedState/Commit/tableChanges``).
  var tableChanges: UInt32 = 0
  @exclusivity(unchecked) private var fileNumbers: FileNumbers
  @exclusivity(unchecked) private var manifest: ManifestPublisher
  @exclusivity(unchecked) private var holds = SegmentHolds()
  /// A thread is syncing the active segment without holding `lock`; nobody may seal,
  /// replace or close it meanwhile.
  private(set) var syncInFlight = false
  /// `close()` has begun: new writes are refused and background threads stop.
  private(set) var closing = false
  /// Called (with `lock` held) with each change once it is applied: ``LogStore/observeCommits(_:)``.
  var commitObserver: (@Sendable (CommittedChange) -> Void)?

  init(directory: String, options: LogStore.Options, index: IndexView, state: RecoveredState) {
    self.directory = directory
    self.options = options
    self.index = index
    writer = state.writer
    sealedSizes = state.sealedSizes
    hintSizes = state.hintSizes
    nextSequence = state.nextSequence
    fileNumbers = FileNumbers(next: state.nextFileNumber, directory: directory)
    manifest = ManifestPublisher(
      directory: directory, fileSystem: options.fileSystem, read: state.manifest,
      sharedWithOthers: options.sharing == .manyProcesses)
  }

  // MARK: Many processes

  /// The log as this process leaves it, for the shared state (`.manyProcesses`).
  func commitState() -> SharedState.Commit {
    let active = writer!
    var commit = SharedState.Commit(
      generation: manifest.generation, nextSequence: nextSequence,
      activeSegment: active.file.number, capacity: UInt32(active.capacity),
      committedEnd: UInt32(active.used), allocated: UInt32(active.allocated),
      durableEnd: UInt32(active.durable), dataEnd: UInt32(active.dataEnd),
      markedEnd: UInt32(active.markedEnd), nextFileNumber: fileNumbers.next)
    commit.tableChanges = tableChanges
    return commit
  }

  /// Takes what another process appended to the active segment and published as `commit`.
  func follow(_ commit: SharedState.Commit) {
    writer?.follow(commit)
    nextSequence = commit.nextSequence
    tableChanges = commit.tableChanges
    fileNumbers = FileNumbers(next: commit.nextFileNumber, directory: directory)
  }

  /// Takes the log as read anew from the files, after another process changed which segments
  /// make up the store (a rotation, a compaction).
  func adopt(_ state: RecoveredState, nextFileNumber: UInt32) {
    writer = state.writer
    sealedSizes = state.sealedSizes
    hintSizes = state.hintSizes
    nextSequence = state.nextSequence
    fileNumbers = FileNumbers(next: nextFileNumber, directory: directory)
    manifest = ManifestPublisher(
      directory: directory, fileSystem: options.fileSystem, read: state.manifest,
      sharedWithOthers: options.sharing == .manyProcesses)
  }

  // MARK: Guards

  /// Throws unless writes are allowed now.
  func checkWritable() throws(LogStoreError) {
    if options.readOnly { throw LogStoreError.readOnly(directory) }
    if closing { throw LogStoreError.closed(directory) }
  }

  /// Refuses writes from now on and wakes every thread waiting on `lock`.
  func beginClosing() {
    closing = true
    lock.broadcast()
  }

  // MARK: Appending

  /// Appends `mutation`, encoded in `length` bytes (``Mutation/checkedLength()``), to the
  /// active segment, starting a new segment when it does not fit.
  func append(_ mutation: Mutation, length: Int) throws(LogStoreError) -> Appended {
    var active = writer!
    if !active.fits(length) {
      active = try rotate(forRecordOf: length)
    }
    let sequence = nextSequence
    let now = Timestamp.now()
    let salt = active.file.salt
    let offset = try active.append(
      count: length, fileWriteMinimum: options.fileWriteMinimumBytes
    ) { buffer in
      mutation.encode(into: buffer, sequence: sequence, now: now, salt: salt)
    }
    nextSequence += UInt64(mutation.sequenceCount)
    if mutation.changesTables { tableChanges &+= 1 }
    return Appended(file: active.file, offset: offset, length: length, firstSequence: sequence)
  }

  /// Seals the active segment and starts a new one big enough for a record of `length`.
  private func rotate(forRecordOf length: Int) throws(LogStoreError) -> SegmentWriter {
    let number = try fileNumbers.take()
    return try replaceActive(
      with: number,
      capacity: max(
        options.maxSegmentSize, SegmentHeader.size + length + SegmentWriter.markReserve))
  }

  /// Seals the active segment and makes segment `number` the active one.
  ///
  /// Sealing comes first: once a newer segment exists, recovery treats this one as complete,
  /// so it must be on stable storage before the next one is created; its last sync mark says so
  /// too, for an open that finds the next one's creation cut short. If creating the new one
  /// fails, the old one stays active (sealing only synced and marked it).
  ///
  /// The new segment becomes the active one only once the manifest lists it, so that nothing
  /// is written to a segment the manifest leaves out and, in `.manyProcesses` use, no other
  /// process is told of one. If listing it fails, the rotation is undone as if creating the
  /// segment had failed: the new file is removed and the old segment stays the active one,
  /// sealed (so the next write rotates again).
  private func replaceActive(with number: UInt32, capacity: Int) throws(LogStoreError)
    -> SegmentWriter
  {
    let old = writer!
    try synchronizeActive(proving: true, sealing: true)
    old.releaseSealed()
    let fresh = try Self.createSegment(
      directory: directory, number: number, baseSequence: nextSequence, capacity: capacity,
      fileSystem: fileSystem)
    sealedSizes[old.file.number] = old.allocated
    index.change { index.setSegment(number, fresh.file) }
    do {
      try publishManifest()
    } catch {
      index.change { index.setSegment(number, nil) }
      sealedSizes[old.file.number] = nil
      // Left behind (if removing it fails too), it holds only its header: a `.oneProcess`
      // writer's open takes it for an empty active segment, and in `.manyProcesses` use every
      // view leaves it out, being above the active segment (docs/FORMAT.md).
      try? fileSystem.removeFile(fresh.file.path)
      throw error
    }
    writer = fresh
    return fresh
  }

  /// Seals the active segment and starts the next one `reserving` numbers above the current
  /// ones, for a compaction's outputs; returns the first reserved number. Every segment below
  /// it is sealed from then on.
  func sealForCompaction(reserving count: UInt32) throws(LogStoreError) -> UInt32 {
    let first = try fileNumbers.take(count + 1)
    _ = try replaceActive(with: first + count, capacity: options.maxSegmentSize)
    return first
  }

  /// Creates segment `number` with its header, reserving its first chunk of disk, mapped
  /// for writing with room for `capacity` bytes. The header is synced before anything is
  /// written after it: so a segment whose header cannot be read but that holds records is
  /// damaged, never a creation a crash cut short (docs/FORMAT.md, "Recovery", rule 6).
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
      let encoded = header.encoded()
      mapping.write(at: 0, count: encoded.count) { buffer in buffer.copyBytes(from: encoded) }
      try mapping.synchronize(offset: 0, count: encoded.count, .durable)
      try fileSystem.synchronizeDirectory(directory)
      return SegmentWriter(
        file: file, capacity: capacity, used: encoded.count, allocated: initial,
        durable: encoded.count, dataEnd: encoded.count, markedEnd: encoded.count)
    } catch {
      handle.close()
      try? fileSystem.removeFile(path)
      throw error
    }
  }

  /// A file number for a new file that is not a segment (an index file).
  func takeFileNumber() throws(LogStoreError) -> UInt32 { try fileNumbers.take() }

  /// The first segment of a store opened on an empty or new directory.
  func startFirstSegment() throws(LogStoreError) {
    try fileNumbers.check(1)
    let fresh = try Self.createSegment(
      directory: directory, number: fileNumbers.next, baseSequence: nextSequence,
      capacity: options.maxSegmentSize, fileSystem: fileSystem)
    _ = try fileNumbers.take()
    index.change { index.setSegment(fresh.file.number, fresh.file) }
    writer = fresh
  }

  /// Hands back the sequence numbers from `first` on, those of records a failed sync lost
  /// (``SegmentWriter/discardUnsynchronized()``), so that the log's numbers stay gapless.
  func reuseSequenceNumbers(from first: UInt64) {
    nextSequence = min(nextSequence, first)
  }

  // MARK: The manifest

  /// The segments the manifest should list: every open segment but the retired inputs of a
  /// compaction.
  func liveSegmentNumbers() -> [UInt32] {
    index.segments.numbers.filter { !holds.retired.contains($0) }.sorted()
  }

  /// Replaces the manifest with one listing the live segments, unless it lists them already.
  /// Called before anything is written to a segment it adds and before any segment it drops
  /// is deleted (the invariants in Format/Manifest.swift).
  func publishManifest() throws(LogStoreError) {
    try manifest.publish(liveSegmentNumbers())
  }

  // MARK: Compactions and backups

  /// Takes a compaction's inputs out of the manifest (they stay open until ``dropRetired``).
  func retire(_ numbers: Set<UInt32>) throws(LogStoreError) {
    holds.retire(numbers)
    try publishManifest()
  }

  /// Forgets retired inputs, now gone from the index, and records the sizes of the segment and
  /// hint files that replaced them.
  func dropRetired(replacedBy outputs: [(number: UInt32, size: Int, hintSize: Int)]) {
    for number in holds.dropRetired() {
      sealedSizes[number] = nil
      hintSizes[number] = nil
    }
    for output in outputs {
      sealedSizes[output.number] = output.size
      hintSizes[output.number] = output.hintSize
    }
  }

  /// Whether a compaction may remove the files of its inputs, `numbers`, now that they are out
  /// of the manifest and the index (``SegmentHolds/mayRemoveInputs(_:)``): if not, the last
  /// backup to end removes them (``endBackup()``).
  func mayRemoveInputs(_ numbers: [UInt32]) -> Bool { holds.mayRemoveInputs(numbers) }

  /// Removes the files of segments that are out of the manifest and the index, and their hint
  /// files.
  func removeSegmentFiles(_ numbers: [UInt32]) throws(LogStoreError) {
    for number in numbers {
      try fileSystem.removeFile(directory + "/" + StoreFileName.segment(number))
      try fileSystem.removeFile(directory + "/" + StoreFileName.hint(number))
    }
  }

  /// A compaction is between retiring its inputs and dropping them (``retire(_:)``,
  /// ``dropRetired(replacedBy:)``): its outputs are live, but their sizes are not recorded yet.
  var isSwappingSegments: Bool { holds.isSwappingSegments }

  /// Starts a backup (``StoreBackup``): the live segments, in order, each with the bytes that
  /// hold the store as it is now. Until ``endBackup()``, compactions leave the files of their
  /// inputs in place (``mayRemoveInputs(_:)``). Call with `lock` held, every change appended
  /// applied (the group commit idle), and no compaction swapping segments.
  func beginBackup() throws(LogStoreError) -> [BackupSource] {
    let sizes = segmentSizes
    var sources: [BackupSource] = []
    let numbers = liveSegmentNumbers()
    for number in numbers {
      // Every live segment is open and, outside a swap, has a size.
      guard let file = index.segments[number], let length = sizes[number] else {
        throw LogStoreError.segmentMissing(number, in: directory)
      }
      let sealed = number != writer?.file.number
      let hasHint = hintSizes[number, default: 0] > 0
      sources.append(
        BackupSource(
          file: file, length: length, copiesHint: sealed && hasHint,
          endingMarkSequence: number == numbers.last ? nextSequence - 1 : nil))
    }
    holds.beginBackup()
    return sources
  }

  /// Ends a backup. The last one to end removes the files held for backups, with `lock`
  /// released meanwhile (and those held meanwhile too). Call with `lock` held.
  func endBackup() {
    while let held = holds.takeFilesForLastBackup() {
      lock.unlock()
      // A file left behind is only garbage: it is out of the manifest, and numbered below the
      // newest compaction's outputs, so the next writer's open removes it.
      try? removeSegmentFiles(held)
      try? fileSystem.synchronizeDirectory(directory)
      lock.lock()
    }
    holds.endBackup()
    lock.broadcast()
  }

  /// Waits until no backup runs; each stops at its next write once `closing` is set. Call with
  /// `lock` held.
  func waitUntilBackupsEnd() {
    while holds.backupsRunning > 0 { lock.wait() }
  }

  // MARK: Sizes and syncs

  /// Bytes of segment and hint files, without space reserved past the active segment's end
  /// (sealed segments keep theirs: a file is never cut while a reader may have it mapped).
  var diskBytes: Int {
    sealedSizes.values.reduce(0, +) + (writer?.used ?? 0) + hintSizes.values.reduce(0, +)
  }

  /// The bytes each sealed segment holds, the active one's written bytes included.
  var segmentSizes: [UInt32: Int] {
    var sizes = sealedSizes
    if let writer { sizes[writer.file.number] = writer.used }
    return sizes
  }

  /// Records a sync of `point` of `active` that succeeded: the data it covered is durable (or,
  /// for an ordered sync, ordered), and a sync mark appended after it says so to a later open
  /// (``RecordKind/syncMark``). On Darwin an ordered sync is a barrier (`F_BARRIERFSYNC`): the
  /// mark can reach the disk only after what the barrier covered, so it proves that much
  /// wherever it is found. The mark is not synced here: the next sync takes it along. A mark
  /// that cannot be written (a full disk) is left out: the data is durable all the same, and
  /// the next mark claims it too. Call with `lock` held.
  func noteSynchronized(
    _ active: SegmentWriter, _ point: SegmentWriter.SyncPoint, _ strength: SyncStrength
  ) {
    switch strength {
    case .durable: active.markDurable(upTo: point.range.upperBound)
    case .ordered: active.markOrdered(upTo: point.range.upperBound)
    }
    _ = try? appendMark(to: active, after: point)
  }

  /// Appends a sync mark after `point` to `active`, if its data goes past what is marked.
  private func appendMark(
    to active: SegmentWriter, after point: SegmentWriter.SyncPoint, ending: Bool = false
  ) throws(LogStoreError) -> Bool {
    // A mark takes no sequence number of its own: it carries the last one handed out.
    try active.appendMark(
      after: point, sequence: nextSequence - 1, timestamp: Timestamp.now().microsecondsSince1970,
      ending: ending)
  }

  /// Syncs the active segment and marks it (``noteSynchronized(_:_:_:)``), with `lock` held;
  /// with `proving`, syncs the mark too, so that a later open finds the segment proven durable
  /// up to here even if nothing is written after (a close, a seal). `sealing` makes the mark
  /// a must (it throws if it cannot be written): every sealed segment ends with one, and one
  /// without counts as cut short.
  func synchronizeActive(proving: Bool, sealing: Bool = false) throws(LogStoreError) {
    guard let active = writer else { return }
    let point = active.unsynchronized
    try active.synchronize(point.range, .durable)
    noteSynchronized(active, point, .durable)
    if sealing { _ = try appendMark(to: active, after: point, ending: true) }
    if proving { try active.synchronize() }
  }

  /// Syncs `range` of `active` with `lock` released meanwhile, so that writers go on;
  /// `syncInFlight` is set throughout, so that nothing seals, replaces or closes the segment.
  /// Call with `lock` held and no sync in flight; returns with it held, and the error if the
  /// sync failed.
  func synchronizeOutsideLock(
    _ active: SegmentWriter, _ range: Range<Int>, _ strength: SyncStrength
  ) -> LogStoreError? {
    syncInFlight = true
    lock.unlock()
    var failure: LogStoreError?
    do {
      try active.synchronize(range, strength)
    } catch {
      failure = error
    }
    lock.lock()
    syncInFlight = false
    lock.broadcast()
    return failure
  }

  /// Syncs what the active segment holds, outside `lock` (taken and released here), so that
  /// writers go on meanwhile, and marks it; with `proving`, syncs that mark too (an index
  /// file's position must be proven durable by the log itself). Another sync outside the lock
  /// is waited for first. Once `close` has begun, it does nothing (close syncs) unless
  /// `evenWhenClosing`, for a caller that `close` waits for.
  func flushOutsideLock(evenWhenClosing: Bool = false, proving: Bool = false)
    throws(LogStoreError)
  {
    lock.lock()
    defer { lock.unlock() }
    for _ in 0..<(proving ? 2 : 1) {
      while syncInFlight { lock.wait() }
      guard !closing || evenWhenClosing, let active = writer else { return }
      let point = active.unsynchronized
      if let failure = synchronizeOutsideLock(active, point.range, .durable) { throw failure }
      noteSynchronized(active, point, .durable)
    }
  }

  /// Syncs and lets go of the active segment (a close has synced and marked it already). Synced,
  /// not cut to its end: a reader may have the file mapped (docs/CONCURRENCY.md); the next
  /// writer appends after the last record.
  func close() throws(LogStoreError) {
    defer { writer = nil }
    try writer?.synchronize()
  }
}
