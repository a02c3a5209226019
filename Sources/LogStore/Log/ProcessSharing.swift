/// `.manyProcesses`: how an open joins the processes that use a store, how a write takes the
/// store's file lock only for itself, and how every call catches up on what the others wrote
/// (docs/CONCURRENCY.md, "Many processes"; the shared state: ``SharedState``).
///
/// A write of this process (``beginWrite()`` to ``endWrite()``) takes the file lock, catches
/// up, marks itself in progress, and publishes its end before releasing the lock; one such
/// write at a time in a process. Everything here is guarded by the log's lock.
final class ProcessSharing: @unchecked Sendable {
  /// The shared state. Nil only for a follower that opened before any writer made it, or whose
  /// state `recover` retired (``lookAgain(insteadOf:)``): it looks for it again now and then
  /// (``followOthers()``). Set with the log's lock and the index lock held (a call reads it
  /// under the shared index lock).
  @exclusivity(unchecked) private(set) var sharedState: SharedLog?
  /// The shared state of a writer, which always has one.
  var shared: SharedLog { sharedState! }
  /// The commit this process's view was last brought up to (log's lock).
  @exclusivity(unchecked) private var seenCommit: SharedState.Commit?
  /// The count of publications when it was: written with the log's lock and the index lock
  /// both held, read with either (a call compares it under the shared index lock).
  @exclusivity(unchecked) private var seenPublications: UInt64 = 0
  /// A follower's view was read from the files at its open, with no commit to start from
  /// (nobody had published yet): its first reload tells the changes from where that view ends
  /// (``ViewEnd``). Cleared once it has seen a commit.
  @exclusivity(unchecked) private var viewReadWithoutCommit: Bool
  /// When a follower without a shared state last looked for one (monotonic nanoseconds).
  @exclusivity(unchecked) private var lastLook: Int64 = .min
  private let log: ActiveLog
  private let indexFile: IndexFileInUse
  /// The system boot this open runs in, which the shared state must belong to.
  let boot: [UInt8]
  /// Posted at each publication, so that other processes' watchers wake, and waited on by this
  /// process's watcher (``StoreEngine/watchOtherProcesses()``). Replaced only by the watcher,
  /// once a follower found the copy `recover` put in the store's place (``signalToWait()``).
  /// Log's lock.
  @exclusivity(unchecked) private(set) var signal: any CommitSignal
  /// A follower found the shared state it looked for (``lookForSharedState()``): after
  /// `recover`, the copy's, whose directory at the store's path is another one, and so may be
  /// its signal, which the copy's writers post (on Darwin its name is made from the
  /// directory's inode; for a follower that opened before any writer it is the same). Log's
  /// lock.
  @exclusivity(unchecked) private var signalIsStale = false
  /// A write of this process holds the store's write lock (``beginWrite()``).
  @exclusivity(unchecked) private(set) var writeInProgress = false
  /// This process's view is behind the log as its writes left it: they deferred catching up
  /// (``beginWrite(deferringCatchUp:)``), and the next catch-up applies them. Cleared by it.
  @exclusivity(unchecked) private(set) var viewBehind = false
  private var index: IndexView { log.index }
  private var directory: String { log.directory }
  private var options: LogStore.Options { log.options }

  /// `openedWithoutCommit`: a follower's open that found no commit and read its view from the
  /// files.
  init(
    shared: SharedLog?, log: ActiveLog, indexFile: IndexFileInUse, boot: [UInt8],
    signal: any CommitSignal, openedWithoutCommit: Bool
  ) {
    self.viewReadWithoutCommit = openedWithoutCommit
    self.sharedState = shared
    self.log = log
    self.indexFile = indexFile
    self.boot = boot
    self.signal = signal
  }

  // MARK: Writes

  /// Takes the store's write lock for a write of this process and catches up on what others
  /// wrote. One such write at a time in a process (``writeInProgress``); call with the log's
  /// lock held, and end with ``endWrite()``.
  ///
  /// With `deferring` (a commit with no commit observer to tell), when this process's view is
  /// behind only by writes that changed no table (``commitToDeferTo()``), it takes the end of the
  /// log from the newest commit and leaves the catching up to the next call that reads
  /// (``followOthers()``), which applies this write too, in log order: what a write checks
  /// against the view is only its tables. Returns whether it did; then the write is not
  /// applied to the view either.
  @discardableResult
  func beginWrite(deferringCatchUp deferring: Bool = false) throws(LogStoreError) -> Bool {
    while writeInProgress { log.lock.wait() }
    // Only a `.oneProcess` open or a restart makes the state anew, and neither can happen while
    // this open is registered: the file was replaced or damaged, and a lock in it is not one.
    guard shared.isUsable(boot: boot) else { throw stateReset() }
    try shared.lock.acquire()
    do {
      // A write in progress that nobody publishes is one whose process died holding the lock.
      if shared.dirty != nil, let commit = shared.currentCommit(boot: boot) {
        try Self.clearDeadWrite(directory: directory, fileSystem: options.fileSystem, commit)
        // It may have died publishing: its commit is the newest, and counted from now on.
        shared.countPublication(of: commit)
        shared.clearDirty()
      }
      if deferring, let commit = commitToDeferTo() {
        log.follow(commit)
        viewBehind = true
      } else {
        try catchUp(shared, locked: true)
      }
      if let active = log.writer {
        shared.markDirty(segment: active.file.number, upTo: active.used)
      }
    } catch {
      shared.lock.release()
      throw error
    }
    writeInProgress = true
    return viewBehind
  }

  /// Publishes what the write appended and releases the write lock. Call with the log's lock
  /// held.
  func endWrite() {
    if log.writer != nil { publish() }
    shared.lock.release()
    writeInProgress = false
    log.lock.broadcast()
  }

  /// Publishes the log as this process leaves it (with the write lock held), and notes it
  /// seen unless the view is behind it.
  func publish() {
    let commit = shared.publish(log.commitState())
    if !viewBehind { noteSeen(commit.publication, commit) }
    signal.post()
  }

  /// The newest commit, when a write may go on from it with this process's view left behind
  /// it: the view is of the same segments and active segment, and no write since changed a
  /// table (the records between are then applied by the next catch-up, as another process's
  /// are, in the active segment the view has; one whose own write started a new segment reads
  /// its view anew there). Nil when nothing was published since the view, or a write must
  /// catch up first.
  private func commitToDeferTo() -> SharedState.Commit? {
    guard let seen = seenCommit, shared.publications != seenPublications,
      let commit = shared.currentCommit(boot: boot), commit.tableChanges == seen.tableChanges,
      segmentContinuing(seen, to: commit) != nil
    else { return nil }
    return commit
  }

  /// The active segment of `commit` when it goes on from `seen`, the commit of this process's
  /// view, in the same segments and active segment, and this process maps that segment as far
  /// as `commit` lets it grow: what was published between the two is then applied in place
  /// (``applyPublished(_:from:to:nextSequence:)``). Nil when the view must be read anew
  /// (``reload(_:from:)``): the segments changed, or another process that took the segment
  /// over with a larger `maxSegmentSize` maps it longer (a writer's capacity is its mapping's
  /// length) and may have appended past this process's mapping, which a reload maps as long as
  /// the commit says before anything in it is read or appended to.
  private func segmentContinuing(_ seen: SharedState.Commit, to commit: SharedState.Commit)
    -> SegmentFile?
  {
    guard commit.generation == seen.generation, commit.activeSegment == seen.activeSegment,
      commit.committedEnd >= seen.committedEnd, let active = index.segments[commit.activeSegment],
      Int(commit.capacity) <= active.mapping.bytes.count
    else { return nil }
    return active
  }

  /// Records that this process's view is `commit`'s, the `publications`-th. Call with the log's
  /// lock held.
  func noteSeen(_ publications: UInt64, _ commit: SharedState.Commit) {
    seenCommit = commit
    viewReadWithoutCommit = false
    viewBehind = false
    index.change { seenPublications = publications }
  }

  // MARK: Catching up

  /// ``followOthers()`` before a commit, which checks only tables, for a caller that holds the
  /// log's lock: with `deferrable`, nothing while no write since this process's view changed a
  /// table (the write defers its catching up: ``beginWrite(deferringCatchUp:)``). Nothing
  /// either while a write of another thread is in progress (syncing without the log's lock):
  /// a catch-up then would note seen a commit without that write, which is not applied yet.
  func catchUpBeforeCommit(deferrable: Bool) throws(LogStoreError) {
    if writeInProgress || deferrable && commitToDeferTo() != nil { return }
    try catchUp(shared, locked: false)
  }

  /// Brings this process's view up to what other processes published, if anything changed
  /// since it last looked: one load when nothing did. Called at the start of every call.
  @inline(__always)
  func followOthers() throws(LogStoreError) {
    let (state, seen) = index.lock.withReadLock { (sharedState, seenPublications) }
    guard let shared = state else {
      try lookForSharedState()
      return
    }
    guard shared.publications != seen else { return }
    try log.lock.withLock { () throws(LogStoreError) in try followOthersLocked(shared) }
  }

  /// ``followOthers()`` for a caller that holds the log's lock: brings this process's view up
  /// to what other processes published (a follower that has not found the shared state yet
  /// stays as it is: looking for it takes the lock).
  func followOthersHoldingLock() throws(LogStoreError) {
    guard let shared = sharedState, shared.publications != seenPublications else { return }
    try followOthersLocked(shared)
  }

  private func followOthersLocked(_ shared: SharedLog) throws(LogStoreError) {
    if !writeInProgress {
      try catchUp(shared, locked: false)
    } else if viewBehind {
      try catchUpBesideDeferredWrite(shared)
    }
  }

  /// While a write of another thread of this process that deferred its catching up
  /// (``beginWrite(deferringCatchUp:)``) syncs without the log's lock, applies what other
  /// processes published before it: the commit it went on from, which stays the newest while it
  /// holds the write lock. A read then sees every write another process completed before it
  /// began (docs/CONCURRENCY.md, "Many processes", rule 2), however long the sync takes. The
  /// view stays behind the write itself, which the next catch-up after it publishes applies.
  private func catchUpBesideDeferredWrite(_ shared: SharedLog) throws(LogStoreError) {
    guard let seen = seenCommit, let commit = shared.currentCommit(boot: boot),
      commit.publication != seen.publication, let active = segmentContinuing(seen, to: commit)
    else { return }
    try applyPublished(
      active, from: Int(seen.committedEnd), to: Int(commit.committedEnd),
      nextSequence: seen.nextSequence)
    // Not ``noteSeen(_:_:)``: the log (which the write already took to this commit and past it)
    // is left as it is, and the view stays behind.
    seenCommit = commit
    index.change { seenPublications = commit.publication }
  }

  /// A follower that opened before any writer, or whose state `recover` retired: looks for the
  /// shared state, at most every 50 ms, and once there is one follows it from its newest commit.
  private func lookForSharedState() throws(LogStoreError) {
    try log.lock.withLock { () throws(LogStoreError) in
      let now = monotonicNanoseconds()
      guard sharedState == nil, lastLook == .min || now - lastLook >= 50_000_000 else { return }
      lastLook = now
      guard
        let found = try SharedLog.open(
          directory: directory, fileSystem: options.fileSystem, writable: false, create: false)
      else { return }
      index.change { sharedState = found }
      signalIsStale = true
      try catchUp(found, locked: false)
    }
  }

  /// The signal for the watcher of other processes' changes to wait on: ``signal``, made anew
  /// first once the follower found a shared state it looked for, such as that of the copy
  /// `recover` put in the store's place, whose writers post the copy's signal (the old one then
  /// closed). Call from the watcher's thread, with the
  /// log's lock held, while it waits on no signal.
  func signalToWait() -> any CommitSignal {
    if signalIsStale {
      signalIsStale = false
      // Should the signal not be made, the old one serves: the watcher then hears of the
      // copy's changes at its timeout.
      if let renewed = try? options.fileSystem.commitSignal(for: directory) {
        signal.close()
        signal = renewed
      }
    }
    return signal
  }

  /// Catches up on the newest commit: the records appended to the active segment since the
  /// last one this process saw, or, when the segments changed (a rotation, a compaction) or the
  /// active segment may grow past this process's mapping of it, a view read anew. Call with the
  /// log's lock held (and, `locked`, the file lock).
  private func catchUp(_ shared: SharedLog, locked: Bool) throws(LogStoreError) {
    let publications = shared.publications
    guard publications != seenPublications else { return }
    guard var commit = shared.currentCommit(boot: boot) else {
      // Only a `.oneProcess` open or a restart makes the state fresh, and neither can happen
      // while this open is registered: the file was replaced or damaged.
      if locked { throw stateReset() }
      guard options.readOnly else { return }
      // A follower is not registered: `recover` may have put the store aside beside it, with a
      // copy in its place (``SharedLog/retire()``). Its view stays as it is, and it looks for
      // the copy's state at its path.
      if SharedState.isRetired(shared.baseAddress) {
        lookAgain(insteadOf: shared)
        return
      }
      // Or a `.oneProcess` writer may have made the state fresh beside it, keeping the count
      // (``SharedLog/reset(boot:)``). Its view stays as it is until a writer publishes again,
      // under a number above this one.
      index.change { seenPublications = publications }
      return
    }
    if let seen = seenCommit, let active = segmentContinuing(seen, to: commit) {
      try applyPublished(
        active, from: Int(seen.committedEnd), to: Int(commit.committedEnd),
        nextSequence: seen.nextSequence)
      log.follow(commit)
    } else {
      // Where the view ends: the commit seen, or for a follower that has seen none, the end of
      // what its open read from the files. Never after `recover` retired the state seen
      // (``lookAgain(insteadOf:)``, which told the gap): the copy's files take the same numbers.
      let viewEnd =
        seenCommit.map(ViewEnd.init) ?? (viewReadWithoutCommit ? ViewEnd(log) : nil)
      // Without the write lock, another process may publish while the view is read: it is
      // read up to a newer commit then.
      commit = try reload(commit, from: locked ? nil : shared)
      if let observer = log.commitObserver {
        if let viewEnd {
          tellChanges(since: viewEnd, upTo: commit, to: observer)
        } else if viewReadWithoutCommit {
          // A view of no segment: nothing to tell the changes from.
          observer(.gap)
        }
      }
    }
    noteSeen(commit.publication, commit)
  }

  /// For a follower whose shared state `recover` retired: drops it and looks for the state at
  /// the store's path again, as a follower that opened before any writer does
  /// (``lookForSharedState()``), keeping its view meanwhile. The view is of the store put
  /// aside: the copy's files take the same numbers, so no commit of the copy's state goes on
  /// from it, and the view is read anew at the first one (``catchUp(_:locked:)``, with no commit
  /// seen). The commit observer hears of a gap, once: what changed between the two stores is
  /// in no log. Call with the log's lock held.
  private func lookAgain(insteadOf retired: SharedLog) {
    // Found again at the path while `recover` copies, before it puts the copy there, the
    // retired state adds nothing to the gap told.
    if seenCommit != nil || seenPublications != 0 || viewReadWithoutCommit {
      log.commitObserver?(.gap)
    }
    seenCommit = nil
    viewReadWithoutCommit = false
    lastLook = monotonicNanoseconds()
    // The copy's state counts its own publications, from 0: one that has none yet has no commit
    // to take.
    index.change {
      sharedState = nil
      seenPublications = 0
    }
    retired.close()
  }

  private func stateReset() -> LogStoreError {
    LogStoreError(.corrupted, "the shared state of \(directory) was reset while this store used it")
  }

  /// Applies the records of `file` in `start..<end`, which another process published.
  private func applyPublished(
    _ file: SegmentFile, from start: Int, to end: Int, nextSequence: UInt64
  ) throws(LogStoreError) {
    guard end > start else { return }
    // The commit's capacity was checked against the mapping (``segmentContinuing(_:to:)``),
    // and a commit's end is within its capacity: this holds unless the shared state was
    // overwritten.
    guard end <= file.mapping.bytes.count else {
      throw LogStoreError(
        .corrupted,
        "the shared state of \(directory) says \(file.path) holds records up to \(end), past "
          + "the \(file.mapping.bytes.count) bytes this process maps")
    }
    var scanner = SegmentScanner(
      bytes: UnsafeRawBufferPointer(rebasing: file.mapping.bytes[0..<end]), owner: file,
      // Published bytes are records to their end, as a sealed segment's are: a bad one among
      // them (once looked at again: this processor may not show all the writer's stores yet)
      // is damage, skipped and counted, and the good ones after it still count.
      salt: file.salt, baseSequence: nextSequence, extent: .published, start: start)
    var failure: LogStoreError?
    let observer = log.commitObserver
    index.change {
      let keys = index.keys
      if !keys.isSettled { keys.settle() }
      var damage = 0
      keys.replay(from: file) {
        while let event = scanner.next() {
          switch event {
          case .record(let record, let offset):
            do throws(LogStoreError) {
              try keys.apply(record, at: offset, of: file)
              observer?(CommittedChange(logged: record, at: offset, of: file))
            } catch {
              failure = error
              observer?(.gap)
            }
          case .damaged:
            damage += 1
            observer?(.gap)
          }
        }
      }
      index.addDamagedRecords(damage)
    }
    if let failure { throw failure }
  }

  /// Where a view ends in the log: the segment its records end in, where, and the number of
  /// the next record.
  private struct ViewEnd {
    let segment: UInt32
    let end: Int
    let nextSequence: UInt64

    init(_ commit: SharedState.Commit) {
      segment = commit.activeSegment
      end = Int(commit.committedEnd)
      nextSequence = commit.nextSequence
    }

    /// The end of the view `log` holds, read from the files: its last segment's records; nil
    /// without a segment.
    init?(_ log: ActiveLog) {
      let sizes = log.segmentSizes
      guard let last = sizes.keys.max(), let size = sizes[last] else { return nil }
      segment = last
      end = size
      nextSequence = log.nextSequence
    }
  }

  /// Tells `observer` of the changes other processes committed between `seen` (where this
  /// process's view ended) and `commit`, after a reload: the records numbered from
  /// `seen.nextSequence` up to `commit.nextSequence`, read from the view's segments from
  /// `seen`'s last one on, in order. Where they cannot
  /// all be read in order (a compaction of another process took some out of the log before
  /// this process looked, or some are damaged), it hears of a gap at that point instead. A
  /// compaction's outputs never tell: they hold what was live, in key order and numbered anew.
  private func tellChanges(
    since seen: ViewEnd, upTo commit: SharedState.Commit,
    to observer: (CommittedChange) -> Void
  ) {
    var expected = seen.nextSequence
    guard expected < commit.nextSequence else { return }
    let sizes = log.segmentSizes
    let numbers = index.segments.numbers.filter {
      $0 >= seen.segment && $0 <= commit.activeSegment
    }.sorted()
    for (position, number) in numbers.enumerated() {
      guard let file = index.segments[number], let header = file.header else { break }
      // Segments hold ever higher sequence numbers: one whose successor starts at or below
      // the next one wanted holds none of those wanted (the outputs of a compaction that came
      // after every change seen).
      if position + 1 < numbers.count,
        let next = index.segments[numbers[position + 1]]?.header,
        next.baseSequence <= expected
      {
        continue
      }
      if header.compaction != nil { break }
      let end = number == commit.activeSegment ? Int(commit.committedEnd) : sizes[number] ?? 0
      let start = number == seen.segment ? seen.end : SegmentHeader.size
      guard start < end, end <= file.mapping.bytes.count else { continue }
      var scanner = SegmentScanner(
        bytes: UnsafeRawBufferPointer(rebasing: file.mapping.bytes[0..<end]), owner: file,
        salt: file.salt, baseSequence: header.baseSequence,
        // Published bytes of the active segment are records to their end.
        extent: .known(header: header, isLast: number == commit.activeSegment),
        start: start)
      // Damage, or the zeros after a sealed segment's last record, ends the scan: on to the
      // next segment, whose first record must be the one wanted.
      while expected < commit.nextSequence, case .record(let record, let offset)? = scanner.next() {
        // (The scanner reads sync marks itself; it never yields one.) Records follow one another
        // in a segment and across a rotation: another number is one lost to damage.
        guard record.sequence == expected else {
          observer(.gap)
          return
        }
        observer(CommittedChange(logged: record, at: offset, of: file))
        // A batch takes one number per member, as the scanner counted them.
        expected = scanner.lastSequence + 1
      }
      if expected >= commit.nextSequence { return }
    }
    observer(.gap)
  }

  /// Reads the store's view anew from the files, up to `commit`, and puts it in place; returns
  /// the commit it was read up to: a newer one of `shared`, when given, if the segments
  /// `commit` names were replaced before they could be read (``Recovery/newestCommit``).
  private func reload(_ commit: SharedState.Commit, from shared: SharedLog?)
    throws(LogStoreError) -> SharedState.Commit
  {
    var recovery = Recovery(directory: directory, options: options, commit: commit)
    if let shared {
      let boot = boot
      recovery.newestCommit = { shared.currentCommit(boot: boot) }
    }
    let state = try recovery.run()
    let read = state.commit ?? commit
    index.change { index.replaceAll(with: state) }
    log.adopt(state, nextFileNumber: read.nextFileNumber)
    log.tableChanges = read.tableChanges
    indexFile.use(state)
    return read
  }

  // MARK: Opening

  /// For a writer's open in `.manyProcesses` use: maps the shared state and takes the lock
  /// file and the write lock (``SharedLog/releaseOpenLocks()`` releases them once the open has
  /// published). Returns the newest commit (nil when the state is fresh: then the open takes
  /// the directory over as a `.oneProcess` writer would), with what a write that died left
  /// past it cleared.
  static func joinWriters(directory: String, options: LogStore.Options)
    throws(LogStoreError) -> (SharedLog, SharedState.Commit?)
  {
    let fileSystem = options.fileSystem
    // Created if missing and made whole: with `create`, there is always one.
    let shared = try SharedLog.open(
      directory: directory, fileSystem: fileSystem, writable: true, create: true,
      patience: options.otherProcessPatience)!
    try acquireForOpen(shared.openLock, directory: directory, options: options)
    // Where writes take a mutex of their own, it is taken once it is known to be one.
    var holdsMutex = false
    func takeWriteLock() throws(LogStoreError) {
      guard shared.writesTakeMutex else { return }
      try acquireForOpen(shared.lock, directory: directory, options: options)
      holdsMutex = true
    }
    do {
      // A `.oneProcess` writer that held the store is gone: its process ID must not make a
      // later open think it is still there (the number may be another process's by then).
      if oneProcessHolder(directory: directory, fileSystem: fileSystem) != nil {
        try recordHolder(0, directory: directory, fileSystem: fileSystem)
      }
      let boot = try fileSystem.bootSession()
      let headerIsValid = SharedState.headerIsValid(shared.baseAddress, boot: boot)
      if headerIsValid && !shared.locksAlike {
        try refuseOtherLocking(shared, directory: directory, fileSystem: fileSystem)
      }
      if headerIsValid && shared.locksAlike {
        shared.dropDeadOpens()
        if shared.opens.isEmpty { try shared.renewWriteLock() }
        try takeWriteLock()
        if let commit = shared.currentCommit(boot: boot) {
          if shared.dirty != nil {
            try clearDeadWrite(directory: directory, fileSystem: fileSystem, commit)
          }
          return (shared, commit)
        }
        // A state with no commit: its maker died before it published (it held the lock file,
        // which this open holds now, so nobody else uses it).
        if holdsMutex { shared.lock.release() }
        holdsMutex = false
      }
      try shared.reset(boot: boot)
      try takeWriteLock()
      return (shared, nil)
    } catch {
      if holdsMutex { shared.lock.release() }
      shared.openLock.release()
      throw error
    }
  }

  /// A state of this boot whose writes lock another way than this process's (a process built
  /// against another C library, or for a word of another size): refused while opens of live
  /// processes use it; otherwise it is made anew, with this process's kind of lock.
  private static func refuseOtherLocking(
    _ shared: SharedLog, directory: String, fileSystem: any FileSystem
  ) throws(LogStoreError) {
    shared.dropDeadOpens()
    guard shared.opens.isEmpty else {
      throw LogStoreError(
        .locked,
        "\(directory) is in .manyProcesses use by processes whose writes take another kind of "
          + "lock (\(SharedState.lockKind(shared.baseAddress)), this process's is "
          + "\(fileSystem.sharedMutexKind): a build against another C library?)")
    }
  }

  /// Takes `lock` for an open: at once, or after the writes of other processes that hold it;
  /// refused at once when a `.oneProcess` writer holds the store (its process ID is in the
  /// lock file), and after ``LogStore/Options/otherProcessPatience`` when another holder (one
  /// of an older version of this library, a process in the middle of its own open, or one
  /// stopped in a write) keeps it.
  private static func acquireForOpen(
    _ lock: any ProcessLock, directory: String, options: LogStore.Options
  ) throws(LogStoreError) {
    let fileSystem = options.fileSystem
    let patience = options.otherProcessPatience
    var waited = 0
    while try !lock.tryAcquire() {
      if let holder = oneProcessHolder(directory: directory, fileSystem: fileSystem),
        fileSystem.processExists(holder)
      {
        throw LogStoreError(
          .locked,
          "\(directory) is open for writing in .oneProcess use by process \(holder): "
            + "open it with the same sharing, or read-only")
      }
      guard waited < patience else {
        throw LogStoreError(.locked, "the lock of \(directory) stayed held for \(patience) ms")
      }
      pauseThread(microseconds: 1000)
      waited += 1
    }
  }

  /// ``LogStore/sharingInUse(at:)``: `.manyProcesses` when the shared state, of this boot,
  /// lists opens of live processes; `.oneProcess` when the lock file is held and names a live
  /// `.oneProcess` writer; nil otherwise. Changes nothing.
  static func sharingInUse(directory: String, fileSystem: any FileSystem) -> StoreSharing? {
    if let shared = try? SharedLog.open(
      directory: directory, fileSystem: fileSystem, writable: false, create: false)
    {
      defer { shared.close() }
      if let boot = try? fileSystem.bootSession(),
        SharedState.headerIsValid(shared.baseAddress, boot: boot),
        shared.opens.contains(where: { fileSystem.processExists($0.process) })
      {
        return .manyProcesses
      }
    }
    // The process ID stays in the lock file after its writer closes: only a held lock counts.
    guard let holder = oneProcessHolder(directory: directory, fileSystem: fileSystem),
      fileSystem.processExists(holder),
      let lock = try? fileSystem.openProcessLock(directory + "/" + StoreFileName.lock),
      let free = try? lock.tryAcquire()
    else { return nil }
    if free { lock.release() }
    return free ? nil : .oneProcess
  }

  /// The process ID a `.oneProcess` writer wrote into the lock file, if any.
  static func oneProcessHolder(directory: String, fileSystem: any FileSystem) -> Int32? {
    guard
      let handle = try? fileSystem.openFile(
        directory + "/" + StoreFileName.lock, mode: .readOnly)
    else { return nil }
    defer { handle.close() }
    var bytes = [UInt8](repeating: 0, count: 4)
    let read = try? bytes.withMutableBytes { buffer throws(LogStoreError) in
      try handle.read(into: buffer, at: 0)
    }
    guard read == 4 else { return nil }
    let process = bytes.withUnsafeBytes { loadLittleEndian(Int32.self, $0.baseAddress!) }
    return process == 0 ? nil : process
  }

  /// Writes this process's ID into the lock file (a `.oneProcess` writer's open), or zero (a
  /// `.manyProcesses` writer's open after it), so that a `.manyProcesses` open that finds the
  /// lock held says why at once.
  static func recordHolder(
    _ process: Int32, directory: String, fileSystem: any FileSystem
  ) throws(LogStoreError) {
    let handle = try fileSystem.openFile(directory + "/" + StoreFileName.lock, mode: .readWrite)
    defer { handle.close() }
    var bytes = [UInt8](repeating: 0, count: 4)
    bytes.withUnsafeMutableBytes { storeLittleEndian(process, $0.baseAddress!) }
    try bytes.withBytes { buffer throws(LogStoreError) in try handle.write(buffer, at: 0) }
  }

  /// For a `.oneProcess` writer's open, with the store's lock held: refuses the store while
  /// opens in `.manyProcesses` use are alive, and otherwise clears what a write that died left
  /// past the published end (as the next `.manyProcesses` writer would: the store is the same
  /// whichever way it is opened next) and makes the shared state fresh, since this writer will
  /// not keep it.
  ///
  /// With `retiring` (``LogStore/recover(path:)``, which puts a copy in the store's place),
  /// the state is then retired (``SharedLog/retire()``), whatever its header says: a follower
  /// that maps it looks for the copy's. Beside a `.oneProcess` writer a follower keeps the
  /// state, which the next `.manyProcesses` writer of the same files publishes in.
  static func leaveSharedUse(
    directory: String, fileSystem: any FileSystem, retiring: Bool = false
  ) throws(LogStoreError) {
    guard
      let shared = try SharedLog.open(
        directory: directory, fileSystem: fileSystem, writable: true, create: false)
    else { return }
    defer { shared.close() }
    let boot = try fileSystem.bootSession()
    // Retires the state, and wakes the followers that wait on the store's signal, so that they
    // find it retired now rather than at their wait's timeout.
    func retire() {
      shared.retire()
      if let signal = try? fileSystem.commitSignal(for: directory) {
        signal.post()
        signal.close()
      }
    }
    guard SharedState.headerIsValid(shared.baseAddress, boot: boot) else {
      if retiring { retire() }
      return
    }
    shared.dropDeadOpens()
    let opens = shared.opens
    if !opens.isEmpty {
      let processes = Set(opens.map(\.process)).sorted().map(String.init).joined(separator: ", ")
      throw LogStoreError(
        .locked,
        "\(directory) is in .manyProcesses use by \(opens.count) open(s) (process \(processes)): "
          + "open it with the same sharing, or read-only")
    }
    if shared.dirty != nil, let commit = shared.currentCommit(boot: boot) {
      do {
        try clearDeadWrite(directory: directory, fileSystem: fileSystem, commit)
      } catch  where error.isMissingFile {
        // The state names a segment the directory no longer has (files put back from a copy):
        // the files say what the store is, as after a restart.
      }
    }
    try shared.reset(boot: boot)
    if retiring { retire() }
  }

  /// A process died inside a write: what it wrote past the published end is not part of the
  /// store. The steps come in an order that leaves a store every open reads whole wherever
  /// this process dies or the power fails between them:
  /// 1. The manifest stops listing the segments an unfinished rotation listed past the
  ///    published active one, so that no reader is told of a file about to go.
  /// 2. The files an unfinished rotation (or a compaction's first step) made under numbers it
  ///    did not publish are removed, and the removal synced.
  /// 3. The active segment is zeroed from the published end to its end, and the zeros synced
  ///    before anything else is written (so that none of it can come back after a crash,
  ///    behind newer records).
  /// Step 3 may zero the mark that sealed the active segment, the only mark that proves its
  /// unsynced records: once it has, no segment may follow it, in the manifest (which a reader
  /// takes) or in the directory (which a `.oneProcess` open or one after a restart takes), or
  /// it would be a sealed segment cut short. Hence the removal first.
  private static func clearDeadWrite(
    directory: String, fileSystem: any FileSystem, _ commit: SharedState.Commit
  ) throws(LogStoreError) {
    var listed = Set<UInt32>()
    if let manifest = try Manifest.read(directory: directory, fileSystem: fileSystem) {
      let published = manifest.segments.filter { $0 <= commit.activeSegment }
      listed = Set(published)
      if published.count < manifest.segments.count {
        try Manifest(segments: published, generation: manifest.generation + 1).publish(
          directory: directory, fileSystem: fileSystem)
      }
    }
    // Numbers from the published next one on were taken by the dead write alone: a live
    // compaction's outputs are below it (reserved and published in its first step).
    var removed = false
    for name in try fileSystem.contentsOfDirectory(directory) {
      switch StoreFileName.classify(name) {
      case .segment(let number), .hint(let number):
        guard number >= commit.nextFileNumber, !listed.contains(number) else { continue }
        try fileSystem.removeFile(directory + "/" + name)
        removed = true
      default:
        continue
      }
    }
    if removed { try fileSystem.synchronizeDirectory(directory) }
    let path = directory + "/" + StoreFileName.segment(commit.activeSegment)
    let handle = try fileSystem.openFile(path, mode: .readWrite)
    defer { handle.close() }
    let size = try handle.size()
    let start = Int(commit.committedEnd)
    // The dead write may have been a sync that failed, its process gone before it wrote the
    // range again (``SegmentWriter/synchronize(_:_:)``): Linux marks the pages of a failed
    // write-back clean, so the next sync would write nothing of them and its mark would claim
    // them. Every sync of the active segment is such a write (under the lock, `dirty` set), so
    // what the commit does not call durable is written again here, and synced with the zeros.
    let published = min(start, size)
    try handle.writeAgain(min(Int(commit.durableEnd), published)..<published)
    if size > start { try handle.writeZeros(from: start, to: size) }
    try handle.synchronize(.durable)
  }
}
