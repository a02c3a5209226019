/// What a process that opens a store with ``StoreSharing/manyProcesses`` shares with the
/// others: the lock every write takes (held only while it appends and publishes), the lock
/// file an open takes, and the shared state (`SHARED`, ``SharedState``) that says where the
/// log ends.
///
/// A writer takes ``lock``, catches up on what the others appended since it last looked,
/// appends, and publishes the new end (``publish(_:)``) before it releases the lock. A call
/// that only reads compares ``publications`` with what it saw last (one load) and catches up
/// only when it changed (what it saw is ``ProcessSharing``'s).
final class SharedLog: @unchecked Sendable {
  let directory: String
  /// The lock every write takes: the mutex in the shared state where the system has one
  /// (``FileSystem/sharedMutex(in:at:path:patience:)``), otherwise ``openLock``.
  let lock: any ProcessLock
  /// `LOCK`'s `flock`, which an open holds while it joins the others (a `.oneProcess` writer
  /// holds it for as long as it is open), so that the two modes exclude each other.
  let openLock: any ProcessLock
  /// The mutex, where writes take one.
  private let mutex: (any SharedMutex)?
  private let fileSystem: any FileSystem
  private let handle: any FileHandle
  private let mapping: any FileMapping
  /// This open's entry among the opens that use the store; nil for a follower, which writes
  /// nothing to the shared state.
  private(set) var entry: SharedState.Open?

  /// The mapped bytes of the state.
  var baseAddress: UnsafeRawPointer { mapping.bytes.baseAddress! }
  private var base: UnsafeRawPointer { baseAddress }

  private init(
    directory: String, fileSystem: any FileSystem, openLock: any ProcessLock,
    handle: any FileHandle, mapping: any FileMapping, writable: Bool, patience: Int
  ) {
    self.directory = directory
    self.fileSystem = fileSystem
    self.openLock = openLock
    // A follower writes nothing, and takes no lock.
    mutex =
      writable
      ? fileSystem.sharedMutex(
        in: mapping, at: SharedState.mutexOffset, path: directory + "/" + SharedState.fileName,
        patience: patience) : nil
    lock = mutex ?? openLock
    self.handle = handle
    self.mapping = mapping
  }

  /// Opens the shared state of the store in `directory`; with `create`, creates it (all
  /// zeros, which no process takes for a valid state) if it is not there. Nil when it is not
  /// there (or, read-only, too short to be one). A wait for the write lock gives up after
  /// `patience` milliseconds where it is a ``SharedMutex``.
  static func open(
    directory: String, fileSystem: any FileSystem, writable: Bool, create: Bool,
    patience: Int = LogStore.Options().otherProcessPatience
  ) throws(LogStoreError) -> SharedLog? {
    let path = directory + "/" + SharedState.fileName
    let handle: any FileHandle
    do {
      handle = try fileSystem.openFile(
        path, mode: create ? .createOrOpen : writable ? .readWrite : .readOnly)
    } catch  where error.isMissingFile {
      return nil
    }
    do {
      if writable {
        if try handle.size() < SharedState.size { try handle.allocate(upTo: SharedState.size) }
      } else if try handle.size() < SharedState.size {
        handle.close()
        return nil
      }
      let mapping = try handle.map(length: SharedState.size, writable: writable)
      let openLock = try fileSystem.openProcessLock(directory + "/" + StoreFileName.lock)
      return SharedLog(
        directory: directory, fileSystem: fileSystem, openLock: openLock, handle: handle,
        mapping: mapping, writable: writable, patience: patience)
    } catch {
      handle.close()
      throw error
    }
  }

  // MARK: Reading

  /// How many commits were published: a call that finds the number it saw last has nothing
  /// to catch up on.
  var publications: UInt64 {
    loadLittleEndian(UInt64.self, base + SharedState.publicationsOffset)
  }

  /// Whether the state is one of this boot whose writes lock as this process's do: a writer
  /// that finds it otherwise must not take a lock in it (``lock``), nor trust it.
  func isUsable(boot: [UInt8]) -> Bool {
    SharedState.headerIsValid(base, boot: boot) && locksAlike
  }

  /// Whether the state's header says its writes lock as this process's do (a header that
  /// checks, with another ``SharedState/lockKind(_:)``, is another build's).
  var locksAlike: Bool { SharedState.lockKind(base) == fileSystem.sharedMutexKind }

  /// Whether writes take a mutex of their own, apart from ``openLock``.
  var writesTakeMutex: Bool { mutex != nil }

  /// The newest commit, if the state is one of this boot with a commit that checks: of the
  /// two slots, the one that checks with the higher publication number (a slot being written as
  /// it is read fails its checksum, and the other one is taken).
  func currentCommit(boot: [UInt8]) -> SharedState.Commit? {
    guard SharedState.headerIsValid(base, boot: boot) else { return nil }
    let first = slot(0)
    guard let second = slot(1) else { return first }
    guard let first else { return second }
    return first.publication < second.publication ? second : first
  }

  /// The commit in slot `index` (0 or 1), if it checks.
  private func slot(_ index: Int) -> SharedState.Commit? {
    SharedState.Commit.decode(base + SharedState.slotOffset + 64 * index)
  }

  /// How far a write in progress may have written: the segment and the end, or nil.
  var dirty: (segment: UInt32, end: UInt32)? {
    let word = loadLittleEndian(UInt64.self, base + SharedState.dirtyOffset)
    guard word != 0 else { return nil }
    return (UInt32(truncatingIfNeeded: word >> 32), UInt32(truncatingIfNeeded: word))
  }

  /// The opens that use the store now, as their entries say.
  var opens: [SharedState.Open] {
    (0..<SharedState.openCapacity).compactMap { index in
      SharedState.Open(word: loadLittleEndian(UInt64.self, base + openOffset(index)))
    }
  }

  private func openOffset(_ index: Int) -> Int {
    SharedState.opensOffset + SharedState.openLength * index
  }

  // MARK: Writing (with `lock` held)

  private func store<T: FixedWidthInteger>(_ value: T, at offset: Int) {
    mapping.write(at: offset, count: MemoryLayout<T>.size) { buffer in
      storeLittleEndian(value, buffer.baseAddress!)
    }
  }

  /// Makes the write lock, where it is a mutex, one that nobody holds. Only with ``openLock``
  /// held and no live open listed: nobody else can hold it or wait for it then (a writer is
  /// listed from its open, which holds ``openLock`` until then, until its close has released
  /// it), so that not even memory of the state overwritten can keep the store locked once
  /// every process that used it is gone.
  func renewWriteLock() throws(LogStoreError) { try mutex?.initialize() }

  /// Makes the state a fresh one of `boot`: no commit, no opens, no holder, and a write lock
  /// nobody holds. Only with ``openLock`` held and no live open in `.manyProcesses` use (a
  /// state found from another boot, damaged, or left by opens that are all gone).
  ///
  /// The count of publications goes on from where it was: followers are not listed, so one
  /// may still map the state, and it compares only the count. Started again from zero, the
  /// count would pass the number the follower saw last, which then took the commit of that
  /// number for the one it had already read, and served its old view.
  func reset(boot: [UInt8]) throws(LogStoreError) {
    let count = publications
    mapping.write(at: 0, count: SharedState.size) { buffer in
      SharedState.initialize(buffer.baseAddress!, boot: boot, lockKind: fileSystem.sharedMutexKind)
      storeLittleEndian(count, buffer.baseAddress! + SharedState.publicationsOffset)
    }
    try renewWriteLock()
  }

  /// Marks the state as one of a store that ``LogStore/recover(path:)`` puts aside, with a
  /// copy in its place: its magic becomes ``SharedState/retiredMagic`` (so its header no
  /// longer checks, and no process uses it), then the count of publications goes up. Only
  /// with ``openLock`` held and no live open in `.manyProcesses` use.
  ///
  /// Followers are not listed, so one may still map this file, and the copy at their path has
  /// a state of its own (once a `.manyProcesses` writer opens it), whose publications this
  /// file never hears of. The count makes a follower look, and the magic tells it to look for
  /// the state at its path again, and to read its view anew once a writer publishes there: its
  /// view, of the store put aside, says nothing of the copy, whose files take the same
  /// numbers.
  func retire() {
    let count = publications
    mapping.write(at: 0, count: SharedState.retiredMagic.count) { buffer in
      buffer.copyBytes(from: SharedState.retiredMagic)
    }
    store(count &+ 1, at: SharedState.publicationsOffset)
  }

  /// Publishes `commit`, numbered one more than the publications so far: written whole into
  /// the older slot, then the count of publications goes up, then the mark of a write in
  /// progress is cleared (in that order: a process that dies between two of the steps leaves
  /// the mark, and the writer that clears its write finishes the count,
  /// ``countPublication(of:)``). Returns the commit as published, with its number.
  @discardableResult
  func publish(_ commit: SharedState.Commit) -> SharedState.Commit {
    var commit = commit
    // A slot that does not check counts as number 0. The new commit goes into the slot that
    // does not hold the newest, numbered above both slots' numbers too, whatever happened to
    // the count.
    let first = slot(0)?.publication ?? 0
    let second = slot(1)?.publication ?? 0
    let count = max(publications, first, second) &+ 1
    commit.publication = count
    mapping.write(at: SharedState.slotOffset + 64 * (first <= second ? 0 : 1), count: 64) {
      buffer in commit.encode(into: buffer.baseAddress!)
    }
    store(count, at: SharedState.publicationsOffset)
    store(UInt64(0), at: SharedState.dirtyOffset)
    return commit
  }

  /// Raises the count of publications to `commit`'s number, the newest commit, when a process
  /// died after writing it into its slot but before counting it: calls that compare the count
  /// with the one they saw (``ProcessSharing``) then see it. With ``lock`` held.
  func countPublication(of commit: SharedState.Commit) {
    if publications < commit.publication {
      store(commit.publication, at: SharedState.publicationsOffset)
    }
  }

  /// Forgets the mark of a write in progress, once what it wrote is cleared.
  func clearDirty() { store(UInt64(0), at: SharedState.dirtyOffset) }

  /// Says that a write in progress may write into `segment` up to `end`; called before it
  /// does, so that if its process dies, the next writer knows what to clear.
  func markDirty(segment: UInt32, upTo end: Int) {
    store(
      UInt64(segment) << 32 | UInt64(UInt32(truncatingIfNeeded: end)), at: SharedState.dirtyOffset)
  }

  /// Adds this open to the opens that use the store, first dropping those whose processes are
  /// gone. Throws ``LogStoreError/Code/locked`` when every entry is taken.
  func register() throws(LogStoreError) {
    dropDeadOpens()
    let open = SharedState.Open(
      process: fileSystem.processID, token: UInt32.random(in: 1...UInt32.max))
    for index in 0..<SharedState.openCapacity
    where loadLittleEndian(UInt64.self, base + openOffset(index)) == 0 {
      store(open.word, at: openOffset(index))
      entry = open
      return
    }
    throw LogStoreError(
      .locked,
      "\(directory) is open \(SharedState.openCapacity) times in .manyProcesses use already")
  }

  /// Removes this open's entry.
  func unregister() {
    guard let entry else { return }
    for index in 0..<SharedState.openCapacity
    where loadLittleEndian(UInt64.self, base + openOffset(index)) == entry.word {
      store(UInt64(0), at: openOffset(index))
    }
    self.entry = nil
  }

  /// The compaction running now in some process: that process, and the numbers it reserved
  /// for its outputs.
  var compaction: (process: Int32, outputs: Range<UInt32>)? {
    let process = Int32(
      bitPattern: loadLittleEndian(UInt32.self, base + SharedState.compactorOffset))
    guard process != 0 else { return nil }
    let first = loadLittleEndian(UInt32.self, base + SharedState.compactionFirstOffset)
    let room = loadLittleEndian(UInt32.self, base + SharedState.compactionRoomOffset)
    return (process, first..<first &+ room)
  }

  /// Records that this process runs a compaction whose outputs take `outputs`; the process
  /// word last, since it is what says a compaction runs.
  func beginCompaction(outputs: Range<UInt32>) {
    store(outputs.lowerBound, at: SharedState.compactionFirstOffset)
    store(UInt32(outputs.count), at: SharedState.compactionRoomOffset)
    store(UInt32(bitPattern: fileSystem.processID), at: SharedState.compactorOffset)
  }

  /// Records that no compaction runs.
  func endCompaction() { store(UInt32(0), at: SharedState.compactorOffset) }

  /// Whether `process` still exists.
  func processExists(_ process: Int32) -> Bool { fileSystem.processExists(process) }

  /// Removes the entries of processes that no longer exist (killed, or gone without closing).
  func dropDeadOpens() {
    for index in 0..<SharedState.openCapacity {
      let word = loadLittleEndian(UInt64.self, base + openOffset(index))
      guard let open = SharedState.Open(word: word) else { continue }
      if !fileSystem.processExists(open.process) { store(UInt64(0), at: openOffset(index)) }
    }
  }

  /// Releases what an open held while it joined: the write lock, then the lock file.
  func releaseOpenLocks() {
    if writesTakeMutex { lock.release() }
    openLock.release()
  }

  /// Lets go of the files.
  func close() {
    handle.close()
  }
}
