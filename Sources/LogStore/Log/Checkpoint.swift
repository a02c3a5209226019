/// Writing index files: the key directory as of one position of the log, so that the next
/// open maps it and reads only what was written after (docs/FORMAT.md, "Index files").
///
/// A checkpoint takes three steps:
/// 1. *Copy* (log's lock held): the position (every live segment, in order, the active one up
///    to its last record) and every table's keys and locations. Nothing changes the index
///    while the lock is held, so the copy is exactly the state at the position.
/// 2. *Write* (no lock): sync the log up to the position, then sort the keys, write the file
///    under a temporary name, sync it, rename it, sync the directory. The log is durable
///    before the index file that covers it is, so an index file never covers records a power
///    loss could take away.
/// 3. *Publish* (log's lock): the new file is the store's; older ones are removed.
/// Checkpoints and compactions take turns: a compaction replaces segments, which would make
/// an index file written meanwhile describe segments that are gone. State guarded by the log's
/// lock.
final class Checkpointer: @unchecked Sendable {
  private let log: ActiveLog
  private let groupCommit: GroupCommit
  private let repair: IndexRepair
  /// In `.manyProcesses` use: the copy and the sync are writes of the store (they take a file
  /// number and append a sync mark), under its file lock, caught up.
  private let sharing: ProcessSharing?
  private var indexFile: IndexFileInUse { repair.indexFile }
  private var index: IndexView { log.index }
  private var directory: String { log.directory }
  private var fileSystem: any FileSystem { log.options.fileSystem }

  /// A checkpoint is between its first and its last step.
  private(set) var isRunning = false

  init(log: ActiveLog, groupCommit: GroupCommit, repair: IndexRepair, sharing: ProcessSharing?) {
    self.log = log
    self.groupCommit = groupCommit
    self.repair = repair
    self.sharing = sharing
  }

  /// Waits until no checkpoint runs. Call with the log's lock held.
  func waitUntilStopped() {
    while isRunning { log.lock.wait() }
  }

  /// Bytes written to the log after the position the current index file covers (all of it
  /// without one). Call with the log's lock held.
  func bytesSinceIndex() -> Int {
    var total = 0
    for (number, size) in log.segmentSizes {
      guard let current = indexFile.current else {
        total += size - SegmentHeader.size
        continue
      }
      if number > current.segment {
        total += size - SegmentHeader.size
      } else if number == current.segment {
        total += max(0, size - current.covered)
      }
    }
    return total
  }

  /// Whether a compaction starting now writes an index file of its outputs (and so they need
  /// no hint files). Call with the log's lock held.
  func followsCompaction() -> Bool {
    guard log.options.indexFiles else { return false }
    repair.settleCounts()
    return index.keys.liveBytes >= log.options.indexFileMinimumLiveBytes
  }

  /// Whether a clean close should write an index file (in `.manyProcesses` use, as a
  /// checkpoint just before it): at least 4 MiB and a quarter of the
  /// live bytes were written since the last one, so that the next open would read a log tail
  /// worth skipping, while a store that changed little does not pay for a whole new file at
  /// each close. The live bytes are those the last index file counts, when there is one: the
  /// store's own count may wait for lookups the open left for later
  /// (``KeyDirectory/settle()``), which a close that writes nothing should not pay for. Call
  /// with the log's lock held.
  func isWorthwhile() -> Bool {
    let written = bytesSinceIndex()
    guard written >= 4 << 20 else { return false }
    let liveBytes = indexFile.current?.liveBytes ?? index.keys.liveBytes
    return liveBytes >= log.options.indexFileMinimumLiveBytes && written >= liveBytes / 4
  }

  /// Whether a clean close writes an index file: when it is worth it (``isWorthwhile()``), and
  /// whenever a damaged one is kept on disk (``IndexFileInUse/damaged``), which the new one
  /// replaces. Call with the log's lock held.
  func isDueAtClose() -> Bool {
    indexFile.damaged != nil || isWorthwhile()
  }

  // MARK: Steps

  /// What step 1 copies.
  struct Copy {
    var segments: [IndexFileFormat.CoveredSegment]
    var nextSequence: UInt64
    var tables: [(name: String, table: TableIndex, creation: RecordLocation?)]
    var number: UInt32
    /// The live bytes of all tables.
    var liveBytes: Int
  }

  /// Step 1: copies the index and its position. Call with the log's lock held, no compaction
  /// or checkpoint running, and the group commit idle (every record appended is applied). Nil
  /// when there is nothing new to write. Only memory is copied here
  /// (``TableIndex/init(copying:)``): the keys are read out of the copies in step 2, without
  /// the lock.
  func copy() throws(LogStoreError) -> Copy? {
    guard let writer = log.writer else { return nil }
    if let current = indexFile.current, current.segment == writer.file.number,
      current.covered == writer.used
    {
      return nil
    }
    guard let segments = position() else { return nil }
    repair.settleCounts()
    let number = try log.takeFileNumber()
    return Copy(
      segments: segments, nextSequence: log.nextSequence, tables: index.keys.copyTables(),
      number: number, liveBytes: index.keys.liveBytes)
  }

  /// The position of the log's end: every live segment, in order, the active one up to its last
  /// record. Call with the log's lock held.
  private func position() -> [IndexFileFormat.CoveredSegment]? {
    var segments: [IndexFileFormat.CoveredSegment] = []
    let sizes = log.segmentSizes
    for number in log.liveSegmentNumbers() {
      guard let file = index.segments[number], let size = sizes[number] else { return nil }
      segments.append(.init(number: number, salt: file.salt, coveredLength: size))
    }
    return segments
  }

  /// Step 2: writes the file (the log up to its position must be durable). Without a lock.
  /// Returns its size; 0 when none was written (a table too large for the format, or an index
  /// file found damaged while its keys were read: the next open reads the log instead).
  /// `giveUp` is asked between the steps that take long; when it says yes, nothing is written.
  @discardableResult
  func write(_ copy: Copy, giveUp: () -> Bool = { false }) throws(LogStoreError) -> Int {
    guard let tables = IndexSnapshot.tables(of: copy.tables), !giveUp() else { return 0 }
    var snapshot = IndexSnapshot(
      segments: copy.segments, nextSequence: copy.nextSequence, tables: tables)
    snapshot.sortKeys()
    return try write(snapshot, number: copy.number, giveUp: giveUp)
  }

  /// Writes `snapshot` (sorted) as index file `number`: under a temporary name, synced, renamed,
  /// the directory synced. Returns its size; 0 when none was written (a table too large for the
  /// format, or `giveUp` said so, asked before and after the file's bytes are made).
  func write(_ snapshot: IndexSnapshot, number: UInt32, giveUp: () -> Bool)
    throws(LogStoreError) -> Int
  {
    guard !giveUp(),
      let bytes = snapshot.encoded(number: number, seed: UInt64.random(in: .min ... .max)),
      !giveUp()
    else { return 0 }
    return try write(bytes, number: number)
  }

  /// Writes `bytes` (an encoded ``IndexSnapshot``) as index file `number`: under a temporary
  /// name, synced, renamed, the directory synced. Returns its size.
  func write(_ bytes: [UInt8], number: UInt32) throws(LogStoreError) -> Int {
    try replaceFile(StoreFileName.index(number), with: bytes, durably: true)
    return bytes.count
  }

  /// Writes `bytes` as the store's file `name`: under a temporary name (`name` with the
  /// temporary suffix, unless `temporaryName` is given), then renamed over any file of that
  /// name, so that no open ever sees it half written. `durably`: the file is synced before the
  /// rename and the directory after it.
  private func replaceFile(
    _ name: String, with bytes: [UInt8], durably: Bool,
    temporary temporaryName: String? = nil
  ) throws(LogStoreError) {
    let path = directory + "/" + name
    let temporary = directory + "/" + (temporaryName ?? name + StoreFileName.temporarySuffix)
    do {
      let handle = try fileSystem.openFile(temporary, mode: .createOrOpen)
      defer { handle.close() }
      try handle.truncate(to: 0)
      try bytes.withBytes { bytes throws(LogStoreError) in try handle.write(bytes, at: 0) }
      if durably { try handle.synchronize(.durable) }
      try fileSystem.renameFile(temporary, to: path)
      if durably { try fileSystem.synchronizeDirectory(directory) }
    } catch {
      try? fileSystem.removeFile(temporary)
      throw error
    }
  }

  /// Step 3: makes `copy`'s file the current one, removes the one before, and puts the new
  /// one under the key directory (``adopt(number:segments:sizes:)``). Call with the log's lock
  /// held; it is released while a group commit ends.
  ///
  /// The new directory is the file and the log after it read back to its end, so it first
  /// waits until the group commit is idle: under `.always` a group's records are appended
  /// before their sync, which runs without the lock, and applied only once it succeeds; if it
  /// fails, they are zeroed and their sequence numbers reused. Read back while it ran, they
  /// would be in the directory all the same: a failed delete would read as done, a failed put
  /// would point at zeros that the next write reuses.
  func publish(_ copy: Copy, size: Int) throws(LogStoreError) {
    guard size > 0 else { return }
    groupCommit.waitUntilIdle()
    // In `.manyProcesses` use, another process's compaction may have replaced segments the
    // file covers while it was written, and this process's view taken that in: the file then
    // describes a log that is gone (keys it holds may have been deleted since, their deletions
    // dropped by that compaction), and is removed unused. (Every open would refuse it too.)
    guard log.liveSegmentNumbers().starts(with: copy.segments.map(\.number)) else {
      try fileSystem.removeFile(directory + "/" + StoreFileName.index(copy.number))
      return
    }
    let last = copy.segments.last!
    adopt(number: copy.number, segments: copy.segments, sizes: log.segmentSizes)
    try indexFile.take(
      copy.number, segment: last.number, covered: last.coveredLength, size: size,
      liveBytes: copy.liveBytes)
  }

  /// Replaces the key directory with one made of index file `number`, which covers `segments`,
  /// and what was written after its position (during step 2, or during a compaction that wrote
  /// the file, ``CompactedIndex``), read back from the log: as a reopen would, so that the heap
  /// holds only the changes since, and the next checkpoint copies only those. `sizes` gives the
  /// bytes of each segment from the file's last on. Returns false, keeping the directory as it
  /// is, if the file cannot be opened or a record after it cannot be read (it was written
  /// moments ago, so neither should happen). Call with the log's lock held and the group
  /// commit idle: every record appended applied (``publish(_:size:)``).
  ///
  /// In `.manyProcesses` use the view may be behind the log's end (writes of this process that
  /// left catching up to the next read, ``ProcessSharing``): the records up to the end are read
  /// here all the same, and that catch-up applies those again, which changes nothing (records
  /// applied in log order onto a directory that holds them already leave it as it is).
  @discardableResult
  func adopt(
    number fileNumber: UInt32, segments: [IndexFileFormat.CoveredSegment], sizes: [UInt32: Int]
  ) -> Bool {
    guard
      let mapped = try? MappedIndex.open(
        directory: directory, number: fileNumber, fileSystem: fileSystem),
      mapped.segments == segments, let last = segments.last
    else { return false }
    let keys = KeyDirectory(mapped: mapped)
    // As an open does: the lookups in the file wait for the first use that needs exact
    // counts, so that writers, waiting for the log's lock, do not wait for them.
    keys.settlesLater = true
    defer { keys.settlesLater = false }
    let active = log.writer?.file.number
    do throws(LogStoreError) {
      for number in log.liveSegmentNumbers() where number >= last.number {
        guard let file = index.segments[number], let size = sizes[number] else { return false }
        // As an open reads it: from the file's position on, numbered from its next sequence
        // number on.
        let afterFile = number == last.number
        try keys.applyRecords(
          of: file, in: (afterFile ? last.coveredLength : SegmentHeader.size)..<size,
          extent: .known(header: file.header, isLast: number == active),
          baseSequence: afterFile ? mapped.nextSequence : file.header?.baseSequence ?? 0
        ) {
          offset, reason throws(LogStoreError) in
          throw LogStoreError(.corrupted, "\(offset): \(reason)")
        }
      }
    } catch {
      return false
    }
    guard !keys.baseDamaged else { return false }
    index.change { index.replaceKeys(keys) }
    return true
  }

  // MARK: Whole checkpoints

  /// Writes an index file now, unless one covers the log as it is: steps 1 to 3, with writers
  /// going on during step 2. Waits for a compaction or checkpoint in progress first. Call
  /// without the log's lock. `giveUp` (asked with the lock held) stops it before it writes
  /// the file: the automatic checkpoint after a compaction gives way to the next compaction.
  func checkpoint(compactor: Compactor, giveUp: (() -> Bool)? = nil) throws(LogStoreError) {
    guard !log.options.readOnly else { throw LogStoreError.readOnly(directory) }
    guard log.options.indexFiles else { return }
    let lock = log.lock
    lock.lock()
    defer { lock.unlock() }
    while (isRunning || compactor.isRunning) && !log.closing { lock.wait() }
    groupCommit.waitUntilIdle()
    try log.checkWritable()
    try sharing?.beginWrite()
    let copied: Copy?
    do {
      defer { sharing?.endWrite() }
      copied = try copy()
    }
    guard let copy = copied else { return }
    isRunning = true
    defer {
      isRunning = false
      lock.broadcast()
    }
    lock.unlock()
    var failure: LogStoreError?
    var size = 0
    do {
      // The mark after the sync is synced too: the log itself proves the position durable.
      try synchronizeLog(proving: true)
      size = try write(copy) { giveUp.map { giveUp in lock.withLock { giveUp() } } ?? false }
    } catch {
      failure = error
    }
    lock.lock()
    if let failure { throw failure }
    try publish(copy, size: size)
  }

  /// Syncs what the log holds and marks it, for a checkpoint or a compaction about to put on
  /// disk a file that depends on it: outside the log's lock, so that writers go on, or, in
  /// `.manyProcesses` use, as a write of the store, under its file lock. With `proving`, the
  /// mark is synced too. It syncs even once `close` has begun, since `close` waits for
  /// checkpoints and compactions. Call without the log's lock.
  func synchronizeLog(proving: Bool) throws(LogStoreError) {
    if let sharing {
      try log.lock.withLock { () throws(LogStoreError) in
        try sharing.beginWrite()
        defer { sharing.endWrite() }
        try log.synchronizeActive(proving: proving)
      }
    } else {
      try log.flushOutsideLock(evenWhenClosing: true, proving: proving)
    }
  }

  /// At close, with the log's lock held and everything stopped: writes an index file if it
  /// is due (``isDueAtClose()``), and otherwise the changes since the one in use
  /// (``writeChangesAtClose()``). The log must be durable already (`close` syncs it first).
  func checkpointAtClose() throws(LogStoreError) {
    guard log.options.indexFiles, !log.options.readOnly else { return }
    guard isDueAtClose() else {
      try writeChangesAtClose()
      return
    }
    guard let copy = try copy() else { return }
    let size = try write(copy)
    guard size > 0 else { return }
    let last = copy.segments.last!
    // The store is closing: no need to put the file under the directory (the one it replaces
    // is removed by the next open).
    _ = indexFile.replace(
      with: copy.number, segment: last.number, covered: last.coveredLength, size: size,
      liveBytes: copy.liveBytes)
    // A damaged one kept goes now, so that `verify` does not find it beside the new one (the
    // next open would remove it, being older than the new one and unused).
    try? indexFile.removeDamaged()
  }

  /// At close, when no index file is written: writes what the key directory changed since the
  /// one in use as its changes file (``ChangesFile``), so that the next open puts those changes
  /// over the index file instead of applying every record written since, one by one. Only when
  /// ``changesAreWorthWriting()``. Like the active segment's hint, it is not synced: one that a
  /// crash left short or damaged fails its checksums and is not used, and one that a crash took
  /// back to an earlier version still describes the log up to its own position, which never
  /// changes (the close synced the log first).
  ///
  /// In `.manyProcesses` use the key directory must be the log up to the end this process
  /// published last (its view not behind, nothing of its own after it), and the file is written
  /// without the store's write lock, so other processes' closes may write theirs at once: each
  /// under a temporary name of its own (`uniqueNumber`, a file number it took), renamed over
  /// whichever was there. Any of them describes the log up to its position.
  func writeChangesAtClose(uniqueNumber: UInt32? = nil) throws(LogStoreError) {
    guard changesAreWorthWriting(), let current = indexFile.current,
      let changed = index.keys.changedTables(), let segments = position()
    else { return }
    var builder = ChangesFile.Builder(
      indexFile: current.number, nextSequence: log.nextSequence, segments: segments,
      dropped: changed.dropped)
    for (name, place, table) in changed.tables {
      var name = name
      name.withUTF8 { name in
        builder.beginTable(
          name: UnsafeRawBufferPointer(name), place: place, lifetime: table.lifetime,
          count: table.count, liveBytes: table.liveBytes, creation: table.creation)
      }
      table.addChanges(to: &builder)
    }
    let bytes = builder.finish()
    let name = StoreFileName.changes(current.number)
    try replaceFile(
      name, with: bytes, durably: false,
      temporary: uniqueNumber.map { StoreFileName.temporary(name, distinctBy: $0) })
    let last = segments.last!
    indexFile.changes = (last.number, last.coveredLength, bytes.count)
  }

  /// Whether a close that writes no index file should write a changes file
  /// (``writeChangesAtClose(uniqueNumber:)``): there is an index file, at least
  /// `activeHintMinimumBytes` of records (1 MiB by default) follow its position, and some follow
  /// the changes file in use.
  func changesAreWorthWriting() -> Bool {
    guard indexFile.current != nil, let writer = log.writer else { return false }
    return bytesSinceIndex() >= max(log.options.activeHintMinimumBytes, 1)
      && indexFile.changes.map({ $0.segment != writer.file.number || $0.covered != writer.used })
        ?? true
  }
}
