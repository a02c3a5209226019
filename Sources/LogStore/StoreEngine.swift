/// The engine behind ``LogStore``: it opens a store and puts its parts together, takes every
/// change through the one commit path (``commit(_:)``), reads through the index view, and
/// closes the store.
///
/// The parts and who calls whom: docs/DESIGN.md, "The engine's parts". Every lock, what it
/// guards and the order they are taken in: docs/DESIGN.md, "Locks". In short, the log's lock
/// (``ActiveLog/lock``) guards the log and every part that acts on it; the index lock
/// (``IndexView/lock``) guards what readers see and is taken exclusively only under the log's
/// lock, so a thread holding the log's lock may read the index without it.
final class StoreEngine: @unchecked Sendable {
  let directory: String
  let options: LogStore.Options
  let index: IndexView
  let log: ActiveLog
  private let groupCommit: GroupCommit
  private let compactor: Compactor
  private let scheduler: CompactionScheduler
  private let checkpointer: Checkpointer
  let repair: IndexRepair
  /// How the last open rebuilt the index.
  let openReport: OpenReport
  /// In `.manyProcesses` use, the part that joins this process's writes and reads to the
  /// others' (Log/ProcessSharing.swift).
  let sharing: ProcessSharing?
  /// ``KeyHash``'s seed, read once here (as ``NameTable`` does): every read of the global goes
  /// through a check that it is initialized, and every read hashes its key.
  private let keySeed = KeyHash.seed

  // Guarded by the log's lock.
  private var storeLock: (any FileLock)?
  private var backgroundThreads: [BackgroundThread] = []
  private var watchesOtherProcesses = false

  init(directory: String, options: LogStore.Options) throws(LogStoreError) {
    let options = try options.validated()
    self.directory = directory
    self.options = options
    let fileSystem = options.fileSystem
    let manyProcesses = options.sharing == .manyProcesses
    let boot = manyProcesses ? try fileSystem.bootSession() : []
    var commit: SharedState.Commit?
    var sharedLog: SharedLog?
    /// Whether a writer's open made the store's directory (and synced it into its parent).
    var madeDirectory = false
    if options.readOnly {
      guard fileSystem.directoryExists(directory) else {
        throw fileSystem.missingStoreError(directory)
      }
      sharedLog =
        manyProcesses
        ? try SharedLog.open(
          directory: directory, fileSystem: fileSystem, writable: false, create: false) : nil
      commit = sharedLog?.currentCommit(boot: boot)
    } else {
      if !fileSystem.directoryExists(directory) {
        // A `recover` cut short may have left the store's copy beside an empty place.
        _ = try LogStore.finishInterruptedRecovery(at: directory, fileSystem: fileSystem)
      }
      madeDirectory = try fileSystem.createDirectoryDurably(directory)
      if manyProcesses {
        (sharedLog, commit) = try ProcessSharing.joinWriters(
          directory: directory, options: options)
      } else {
        let lock = try fileSystem.lockFile(directory + "/" + StoreFileName.lock)
        try ProcessSharing.leaveSharedUse(directory: directory, fileSystem: fileSystem)
        try ProcessSharing.recordHolder(
          fileSystem.processID, directory: directory, fileSystem: fileSystem)
        storeLock = lock
      }
    }
    // A writer in `.manyProcesses` use holds the file lock until the open has published.
    defer { if !options.readOnly { sharedLog?.releaseOpenLocks() } }
    var recovery = Recovery(directory: directory, options: options, commit: commit)
    if options.readOnly, let sharedLog {
      // Other processes publish while a follower reads: it reads up to a newer commit when
      // the segments of the first were replaced meanwhile.
      recovery.newestCommit = { sharedLog.currentCommit(boot: boot) }
    }
    let state = try recovery.run()
    // An open that made the directory and died before syncing it into its parent left it to be
    // found as any other; it had published no manifest yet. Where recovery read none, the
    // entries are synced now, before anything this open writes is acknowledged.
    if !options.readOnly, !madeDirectory, state.manifest == nil {
      try fileSystem.synchronizeEntries(of: directory)
    }
    commit = state.commit
    index = IndexView(
      directory: directory, keys: state.keys, segments: state.segments,
      damagedRecords: state.damagedRecords, verifyChecksums: options.verifyChecksumsOnRead)
    let log = ActiveLog(directory: directory, options: options, index: index, state: state)
    if let commit { log.tableChanges = commit.tableChanges }
    self.log = log
    let indexFile = IndexFileInUse(
      directory: directory, fileSystem: fileSystem, openedFrom: state)
    repair = IndexRepair(log: log, indexFile: indexFile)
    sharing =
      manyProcesses
      ? ProcessSharing(
        shared: sharedLog, log: log, indexFile: indexFile, boot: boot,
        signal: try fileSystem.commitSignal(for: directory),
        openedWithoutCommit: options.readOnly && commit == nil) : nil
    groupCommit = GroupCommit(log: log)
    checkpointer = Checkpointer(
      log: log, groupCommit: groupCommit, repair: repair, sharing: sharing)
    compactor = Compactor(
      log: log, groupCommit: groupCommit, checkpointer: checkpointer, repair: repair,
      sharing: sharing)
    scheduler = CompactionScheduler(
      log: log, compactor: compactor, checkpointer: checkpointer, repair: repair)
    openReport = state.report
    if !options.readOnly {
      try log.lock.withLock { () throws(LogStoreError) in
        if log.writer == nil { try log.startFirstSegment() }
        try log.publishManifest()
      }
    }
    if let shared = sharedLog, let sharing {
      try log.lock.withLock { () throws(LogStoreError) in
        if !options.readOnly {
          sharing.publish()
          try shared.register()
        } else if let commit {
          sharing.noteSeen(commit.publication, commit)
        }
      }
    }
    startBackgroundThreads()
  }

  // MARK: Reading

  /// Runs `body` on the index under the shared lock, after checking the store is open.
  func readIndex<R>(_ body: (KeyDirectory) throws(LogStoreError) -> R) throws(LogStoreError) -> R {
    try sharing?.followOthers()
    return try makingTables { () throws(LogStoreError) -> R in try index.read(body) }
  }

  /// Runs `attempt`, a read of the index view, and runs it again each time it met a table of
  /// the index file not made yet (``LogStoreError/tableNotMade(_:)``), after making the tables
  /// readers met (``KeyDirectory/makeWantedTables()``): a reader holds the index lock shared,
  /// and a table is made with it held exclusively, once.
  private func makingTables<R>(_ attempt: () throws(LogStoreError) -> R) throws(LogStoreError)
    -> R
  {
    // Each round makes the tables the last attempt met, or rebuilds the directory without an
    // index file; only a directory replaced again and again meanwhile (by other processes'
    // compactions) could take more than two.
    for _ in 0..<100 {
      do {
        return try attempt()
      } catch  where error.code == .tableNotMade {
        makeTablesMet()
      }
    }
    throw LogStoreError(.corrupted, "the index of \(directory) could not be read")
  }

  /// Makes the tables readers met (``KeyDirectory/makeWantedTables()``), or, if one of them is
  /// damaged in the index file, rebuilds the directory without it.
  private func makeTablesMet() {
    log.lock.withLock {
      guard !index.change({ index.keys.makeWantedTables() }) else { return }
      rebuildWithoutIndexFile()
    }
  }

  /// Runs `attempt`, a read of the index view, and runs it again after the key directory is
  /// rebuilt from the log if it found the index file damaged (returned nil): the rebuilt
  /// directory has no index file, so the second attempt cannot find it damaged.
  ///
  /// The first attempt is made here, in line: it is all that almost every read takes (a
  /// table's first read makes the table, a damaged index file is found once), and a call
  /// around it cost a get about 130 instructions (7%).
  @inline(__always)
  private func readingAfterRepair<R>(_ attempt: () throws(LogStoreError) -> R?)
    throws(LogStoreError) -> R
  {
    var metTables = false
    do {
      if let result = try attempt() { return result }
    } catch  where error.code == .tableNotMade {
      metTables = true
    }
    return try readingAgain(attempt, afterMeetingTables: metTables)
  }

  /// ``readingAfterRepair(_:)`` after its first attempt met a table not made yet (then the
  /// tables are made first) or found the index file damaged: the attempt again, with tables
  /// made and the directory rebuilt as needed.
  @inline(never)
  private func readingAgain<R>(
    _ attempt: () throws(LogStoreError) -> R?, afterMeetingTables: Bool
  ) throws(LogStoreError) -> R {
    if afterMeetingTables {
      makeTablesMet()
      if let result = try makingTables(attempt) { return result }
    }
    log.lock.withLock { rebuildWithoutIndexFile() }
    guard let result = try makingTables(attempt) else {
      throw LogStoreError(.corrupted, "the index of \(directory) is damaged and was not rebuilt")
    }
    return result
  }

  /// Rebuilds the key directory from the log, after a reader found its index file damaged,
  /// unless another thread has done so meanwhile (the rebuilt directory has no index file).
  /// Call with the log's lock held.
  private func rebuildWithoutIndexFile() {
    compactor.waitUntilStopped()
    if index.keys.mapped != nil { repair.rebuild() }
  }

  /// Looks `key` up in `table` and calls `body` with its record, under the index's shared lock;
  /// nil when the key has no value. The record is valid only during `body`.
  func withRecord<R, E: Error>(
    key: UnsafeRawBufferPointer, table: String, _ body: (Record) throws(E) -> R
  ) throws(LogStoreError) -> Result<R, E>? {
    try sharing?.followOthers()
    let hash = KeyHash.hash(key, seed: keySeed)
    return try readingAfterRepair { () throws(LogStoreError) -> Result<R, E>?? in
      try index.withRecord(key: key, table: table, hash: hash, body)
    }
  }

  /// Calls `body` with every key of `table` and its location, in no particular order, and
  /// returns the segments as they were then (a copy keeps them readable after). `restart` is
  /// called first with the number of keys, and again if the visit has to start over (after the
  /// index file was found damaged and the directory rebuilt).
  @discardableResult
  func forEachKey(
    in table: String, restart: (Int) -> Void,
    _ body: (UnsafeRawBufferPointer, RecordLocation) -> Void
  ) throws(LogStoreError) -> SegmentLookup {
    try sharing?.followOthers()
    return try readingAfterRepair { () throws(LogStoreError) -> SegmentLookup? in
      try index.forEachKey(in: table, start: restart, body)
    }
  }

  /// Calls `body` with every key of `table` sorted by its bytes, its value and its time, as of
  /// the moment of the call, until `body` returns false; with a `prefix`, only the keys that
  /// start with it. Items that have expired by the moment of the call are left out; `body`
  /// gets the expiry of the others that have one.
  ///
  /// A table unchanged since the index file is walked where the file holds it. Otherwise only
  /// the keys are copied under the index's shared lock, with their locations, and the segments
  /// are captured; sorting and reading the values happen after it, from the captured segments.
  func forEachEntry(
    in table: String,
    withPrefix prefix: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
    _ body: EntryVisitor
  ) throws(LogStoreError) {
    try sharing?.followOthers()
    let now = index.clock.now()
    if try makingTables({ () throws(LogStoreError) -> Bool in
      try index.forEachUnchangedEntry(in: table, withPrefix: prefix, now: now, body)
    }) {
      return
    }
    let (captured, copied) = try readingAfterRepair {
      () throws(LogStoreError) -> (SegmentLookup, TableKeys)? in
      try index.copyKeys(in: table, withPrefix: prefix)
    }
    try index.forEachEntry(of: copied, in: captured, table: table, now: now, body)
  }

  /// ``readIndex(_:)`` for a reader of counts: settles them first if an open left them for
  /// later (which takes the log's lock, once).
  func readCounts<R>(_ body: (KeyDirectory) throws(LogStoreError) -> R) throws(LogStoreError)
    -> R
  {
    try sharing?.followOthers()
    if let result = try makingTables({ () throws(LogStoreError) -> R? in
      try index.read { keys throws(LogStoreError) -> R? in keys.isSettled ? try body(keys) : nil }
    }) {
      return result
    }
    log.lock.withLock { repair.settleCounts() }
    return try makingTables { () throws(LogStoreError) -> R in try index.read(body) }
  }

  // MARK: Writing

  /// Writes `mutation` to the log and applies it to the index, durably first when the sync
  /// policy says so: the one path of every change (puts, batches, deletes, table operations).
  ///
  /// With the log's lock held: the store must be writable, the change's expiries are made
  /// final, and a change that changes nothing is dropped. Then ``write(_:_:durably:)`` does the
  /// steps. Under `SyncPolicy.always` writers queue (``GroupCommit``), and the first in line
  /// does the steps for every queued change at once, so that one sync serves them all.
  func commit(_ mutation: Mutation) throws(LogStoreError) {
    try mutation.validateArguments()
    log.lock.lock()
    defer { log.lock.unlock() }
    try log.checkWritable()
    // What the checks below read (the tables) must include what other processes wrote.
    try sharing?.catchUpBeforeCommit(deferrable: log.commitObserver == nil)
    if changesNothing(mutation) { return }
    defer { rebuildIfDamaged() }
    guard options.sync == .always else {
      var mutation = mutation
      var outcome = CommitOutcome()
      withUnsafeMutablePointer(to: &mutation) { mutation in
        withUnsafeMutablePointer(to: &outcome) { outcome in
          write(
            UnsafeMutableBufferPointer(start: mutation, count: 1),
            UnsafeMutableBufferPointer(start: outcome, count: 1), durably: false)
        }
      }
      if let error = outcome.error { throw error }
      return
    }
    switch groupCommit.join(mutation) {
    case .committed(let error):
      if let error { throw error }
    case .lead(let group):
      var mutations = group.map(\.mutation)
      var outcomes = [CommitOutcome](repeating: CommitOutcome(), count: group.count)
      mutations.withUnsafeMutableBufferPointer { mutations in
        outcomes.withUnsafeMutableBufferPointer { write(mutations, $0, durably: true) }
      }
      groupCommit.finish(group, errors: outcomes.map(\.error))
      // The leader's own change is the group's first.
      if let error = outcomes[0].error { throw error }
    }
  }

  /// The steps of a commit, in order, for `mutations` (one, or a group under `.always`), with
  /// the log's lock held, each change's outcome in `outcomes`: each change's tables are
  /// checked, its puts' expiries made final in place (by their tables' default lifetimes at
  /// the change's place in the log, ``IndexView/checkTables(_:pending:)``) and it is appended
  /// to the log; with `durably`, one sync covers them all
  /// (``synchronize(_:)``); in `.manyProcesses` use the write is published and the store's
  /// write lock released; those that succeeded are applied to the index in log order, and the
  /// observer hears of each. A change that fails a step gets its error and no further step.
  /// (Inlined into its two callers, so that a single change's one-element buffers are only
  /// its own variables.)
  @inline(__always)
  private func write(
    _ mutations: UnsafeMutableBufferPointer<Mutation>,
    _ outcomes: UnsafeMutableBufferPointer<CommitOutcome>,
    durably: Bool
  ) {
    // In `.manyProcesses` use the view may stay behind the log (``ProcessSharing``): the next
    // catch-up applies this write then, after the others' before it.
    let viewBehind: Bool
    do throws(LogStoreError) {
      viewBehind = try sharing?.beginWrite(deferringCatchUp: log.commitObserver == nil) ?? false
    } catch {
      for i in outcomes.indices { outcomes[i].error = error }
      return
    }
    do {
      // Other processes wait for this write from here to its publication only: what follows
      // it is this process's own.
      defer { sharing?.endWrite() }
      var tables: [TableName: IndexView.PendingTable] = [:]
      for i in mutations.indices {
        do {
          try log.checkWritable()
          let mutation = try index.checkTables(mutations[i], pending: &tables)
          mutations[i] = mutation
          outcomes[i].appended = try log.append(mutation, length: mutation.checkedLength())
        } catch {
          outcomes[i].error = error
        }
      }
      if durably { synchronize(outcomes) }
    }
    var written = 0
    if viewBehind {
      for i in outcomes.indices { written += outcomes[i].appended?.length ?? 0 }
    } else {
      index.change {
        for i in outcomes.indices {
          guard let appended = outcomes[i].appended else { continue }
          index.apply(appended)
          written += appended.length
        }
      }
    }
    // (A view behind hears of this write at its catch-up, which applies it.)
    if !viewBehind, let observer = log.commitObserver {
      for i in mutations.indices where outcomes[i].appended != nil {
        observer(CommittedChange(mutation: mutations[i]))
      }
    }
    scheduler.noteWritten(written)
  }

  /// The sync step of a durable commit: one sync of the active segment, outside the log's lock
  /// so that writers queue meanwhile (one such sync at a time: compaction may be flushing the
  /// segment). If it fails, what it did not cover must not come back after a crash either: it
  /// is zeroed, and every change written there fails (changes in segments sealed meanwhile are
  /// durable).
  private func synchronize(_ outcomes: UnsafeMutableBufferPointer<CommitOutcome>) {
    while log.syncInFlight { log.lock.wait() }
    let active = log.writer!
    let point = active.unsynchronized
    let start = monotonicNanoseconds()
    let failure = log.synchronizeOutsideLock(active, point.range, .durable)
    groupCommit.noteSync(nanoseconds: monotonicNanoseconds() - start)
    guard let failure else {
      log.noteSynchronized(active, point, .durable)
      return
    }
    active.discardUnsynchronized()
    for i in outcomes.indices {
      guard outcomes[i].error == nil, let appended = outcomes[i].appended,
        appended.file === active.file, appended.offset + appended.length > active.used
      else { continue }
      outcomes[i].error = failure
      outcomes[i].appended = nil
      log.reuseSequenceNumbers(from: appended.firstSequence)
    }
  }

  /// Whether `mutation` would change nothing, and so is not written: creating a table that
  /// exists (apps create their tables at every launch), unless the creation sets a default
  /// lifetime the table does not have. The index knows every table unless a group commit is
  /// between appending its changes and applying them. Call with the log's lock held.
  private func changesNothing(_ mutation: Mutation) -> Bool {
    guard case .single(.createTable, let table, _, _, _, let lifetime) = mutation,
      groupCommit.isIdle, let existing = index.keys.lifetime(ofTable: table)
    else { return false }
    return lifetime == nil || existing == lifetime
  }

  /// A writer that found the index file damaged while applying a change (its counts may then
  /// be off) rebuilds the directory from the log, which holds that change too. Call with the
  /// log's lock held.
  private func rebuildIfDamaged() {
    guard index.keys.baseDamaged else { return }
    compactor.waitUntilStopped()
    if index.keys.baseDamaged { repair.rebuild() }
  }

  // MARK: Sync, statistics, compaction, close

  func sync() throws(LogStoreError) {
    try log.lock.withLock { () throws(LogStoreError) in
      if log.closing { throw LogStoreError.closed(directory) }
      groupCommit.waitUntilIdle()
      try sharing?.beginWrite()
      defer { sharing?.endWrite() }
      try log.synchronizeActive(proving: false)
    }
  }

  /// ``LogStore/refresh()``: a read-only snapshot is read anew; in `.manyProcesses` use, this
  /// process catches up at once (calls do it themselves).
  func refresh() throws(LogStoreError) {
    if let sharing {
      try sharing.followOthers()
      return
    }
    guard options.readOnly else { return }
    try log.lock.withLock { () throws(LogStoreError) in
      if log.closing { throw LogStoreError.closed(directory) }
      let state = try Recovery(directory: directory, options: options).run()
      index.change { index.replaceAll(with: state) }
      log.adopt(state, nextFileNumber: state.nextFileNumber)
      repair.indexFile.use(state)
    }
  }

  func statistics() throws(LogStoreError) -> StoreStatistics {
    try sharing?.followOthers()
    return try log.lock.withLock { () throws(LogStoreError) -> StoreStatistics in
      repair.settleCounts()
      let disk = log.diskBytes
      let now = index.clock.now()
      return try index.read { keys throws(LogStoreError) in
        // Expired items are neither live items nor live bytes, though compaction has yet to
        // drop their records.
        let expired = keys.expired(at: now)
        var statistics = StoreStatistics(
          tables: keys.tableCount, liveItems: keys.itemCount - expired.count,
          liveBytes: keys.liveBytes - expired.bytes,
          diskBytes: disk + repair.indexFile.size, segments: index.segments.count,
          damagedRecords: index.damagedRecords)
        statistics.indexMappedBytes = keys.mapped?.fileLength ?? 0
        statistics.indexHeapBytes = keys.heapBytes
        return statistics
      }
    }
  }

  func compact(progress: ((_ done: Int, _ total: Int) -> Void)? = nil) throws(LogStoreError) {
    if try compactor.compact(progress: progress) { checkpointAfterCompaction() }
  }

  /// The segments changed: an index file of the new ones lets the next open skip them. Only an
  /// optimization, so a failure to write it does not fail the compaction, which has happened
  /// (without it, and without hint files, the next open reads the new segments whole).
  private func checkpointAfterCompaction() {
    try? checkpointer.checkpoint(compactor: compactor)
  }

  func waitForCompaction() throws(LogStoreError) { try scheduler.waitForCompaction() }

  func checkpoint() throws(LogStoreError) { try checkpointer.checkpoint(compactor: compactor) }

  /// Stops background work (a compaction or backup in progress stops early and leaves the
  /// store as it was), syncs the active segment, and releases every file.
  func close() throws(LogStoreError) {
    let lock = log.lock
    // In `.manyProcesses` use the close cannot write an index file at its end, as a
    // `.oneProcess` one does (``Checkpointer/checkpointAtClose()``, with the log's lock held):
    // other processes would wait for the write. When one is due by the same rule, it is
    // written first, as any checkpoint is, the lock held only while the tables are copied;
    // not while a compaction runs, which the close stops rather than waits for. (Otherwise the
    // close ends with a changes file, as a `.oneProcess` one does, below.) Only an
    // optimization: a failure leaves the next open to read more of the log.
    if sharing != nil, !options.readOnly, options.indexFiles,
      lock.withLock({
        !log.closing && !compactor.isRunning && !checkpointer.isRunning
          && checkpointer.isDueAtClose()
      })
    {
      try? checkpointer.checkpoint(compactor: compactor)
    }
    lock.lock()
    if log.closing {
      lock.unlock()
      return
    }
    groupCommit.waitUntilIdle()
    log.beginClosing()
    compactor.requestStop()
    compactor.waitUntilStopped()
    checkpointer.waitUntilStopped()
    log.waitUntilBackupsEnd()
    let threads = backgroundThreads
    backgroundThreads = []
    // The signal the watcher of other processes' changes waits on, which it no longer replaces
    // once the store is closing.
    let watched = watchesOtherProcesses ? sharing?.signal : nil
    lock.unlock()
    // Wakes the watcher (and, harmlessly, other processes').
    watched?.post()
    // The background threads take the log's lock themselves, so they are joined without it.
    for thread in threads { thread.join() }
    sharing?.signal.close()

    lock.lock()
    defer { lock.unlock() }
    var failure: LogStoreError?
    do {
      if let sharing {
        if !options.readOnly {
          // Other processes go on appending to the active segment: no index file or hint of it
          // here, only the sync that makes this process's writes durable, then the changes
          // file over the index file in use, and the open's entry removed once the write has
          // released the lock (an open renews the write lock when no open is listed, so one
          // that holds it must be).
          defer { sharing.shared.unregister() }
          // It syncs, and needs the end of the log only: a view behind it stays behind.
          try sharing.beginWrite(deferringCatchUp: true)
          var uniqueNumber: UInt32?
          do {
            defer { sharing.endWrite() }
            try log.synchronizeActive(proving: true)
            // A changes file describes the log up to the end this write publishes, which only a
            // view that is not behind it is. One left behind (others wrote since this process
            // last read) writes none rather than catch up here, where the others wait for the
            // lock: a writer that never reads would apply all they wrote since its open.
            if options.indexFiles, !sharing.viewBehind, checkpointer.changesAreWorthWriting() {
              uniqueNumber = try? log.takeFileNumber()
            }
          }
          // Written once the position is published, without the lock: a write that died
          // holding the lock is cut back to the last position published, never below one a
          // changes file covers. Only an optimization, like the index file.
          if let uniqueNumber {
            try? checkpointer.writeChangesAtClose(uniqueNumber: uniqueNumber)
          }
        }
        sharing.sharedState?.close()
      } else {
        // Synced with its sync mark: the next open knows every record durable.
        try log.synchronizeActive(proving: true)
        // An index file is only an optimization: a close that cannot write one still closes
        // (the next open reads the log instead).
        try? checkpointer.checkpointAtClose()
        // So is the active segment's hint file.
        if let active = log.writer?.file.number {
          _ = try? log.writeActiveHint(indexCovered: repair.indexFile.coveredLength(of: active))
        }
      }
      try log.close()
    } catch {
      failure = error
    }
    index.close()
    // The process ID stays in the lock file: it is read only while the lock is held, and the
    // next `.manyProcesses` writer clears it.
    storeLock?.unlock()
    storeLock = nil
    if let failure { throw failure }
  }

  // MARK: Backup

  /// Fixes the moment a backup copies (``StoreBackup``): with the log's lock held, once every
  /// change appended is applied, the live segments and their lengths, and the index file in
  /// use, opened (``IndexFileInUse/openForBackup()``; the caller closes it). Writers wait only
  /// for that list to be made. Compactions leave their inputs' files until ``endBackup()``.
  func beginBackup() throws(LogStoreError) -> (
    segments: [BackupSource], indexFiles: [BackupFile]
  ) {
    // In `.manyProcesses` use, what other processes wrote before the call is in the copy too.
    try sharing?.followOthers()
    return try log.lock.withLock { () throws(LogStoreError) in
      // Both at once: every change appended is applied, and no compaction is swapping its
      // outputs in (a wait releases the lock, so each is checked again after the other).
      groupCommit.waitUntilIdle()
      while log.isSwappingSegments && !log.closing {
        log.lock.wait()
        groupCommit.waitUntilIdle()
      }
      if log.closing { throw LogStoreError.closed(directory) }
      // With the segments, the index file that covers them, opened now: the one a checkpoint
      // may put in its place meanwhile covers writes made after this moment.
      let segments = try log.beginBackup()
      do throws(LogStoreError) {
        return (segments, try repair.indexFile.openForBackup())
      } catch {
        log.endBackup()
        throw error
      }
    }
  }

  /// Ends what ``beginBackup()`` began; `close()` waits for it.
  func endBackup() { log.lock.withLock { log.endBackup() } }

  /// Throws what a write would throw before it writes: the store is closed or read-only.
  func checkWritable() throws(LogStoreError) {
    try log.lock.withLock { () throws(LogStoreError) in try log.checkWritable() }
  }

  /// Throws ``LogStoreError/Code/closed`` once `close()` has begun: a backup asks between its
  /// writes, so that `close()` does not wait for a whole copy.
  func checkNotClosing() throws(LogStoreError) {
    try log.lock.withLock { () throws(LogStoreError) in
      if log.closing { throw LogStoreError.closed(directory) }
    }
  }

  /// In `.manyProcesses` use: starts, once, the thread that catches up on what other processes
  /// publish as soon as its ``ProcessSharing/signal`` wakes it, so that the commit observer
  /// hears of their changes without a call of this open. It runs until the store closes.
  func watchOtherProcesses() {
    guard let sharing else { return }
    log.lock.withLock {
      guard !watchesOtherProcesses, !log.closing else { return }
      watchesOtherProcesses = true
      let thread = BackgroundThread { [log] in
        while let signal = log.lock.withLock({ log.closing ? nil : sharing.signalToWait() }) {
          signal.wait(milliseconds: 1000)
          // An error here (the store closing, a damaged shared state) is the next call's to
          // report.
          try? sharing.followOthers()
        }
      }
      backgroundThreads.append(thread)
      thread.start()
    }
  }

  private func startBackgroundThreads() {
    guard !options.readOnly else { return }
    if case .interval(let milliseconds) = options.sync {
      let syncer = IntervalSyncer(log: log, milliseconds: milliseconds, sharing: sharing)
      let thread = BackgroundThread { syncer.run() }
      backgroundThreads.append(thread)
      thread.start()
    }
    if options.compaction != .manual {
      let thread = BackgroundThread { [scheduler] in scheduler.run() }
      backgroundThreads.append(thread)
      thread.start()
    }
  }
}

/// What became of one change of a commit (``StoreEngine/commit(_:)``): where it was appended,
/// or why it failed (and then it has no `appended`).
struct CommitOutcome {
  var appended: Appended?
  var error: LogStoreError?
}
