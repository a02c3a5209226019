import LogStore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// An in-memory file system for tests that simulates crashes and injects I/O errors.
///
/// It keeps, for every file, what is on "stable storage" (the contents at its last sync) and
/// the writes made since, in order; and for every directory, the entries made durable by the
/// last directory sync and the creations, renames and removals since. From that it can build
/// the image a crash would leave:
/// - ``CrashMode/process``: everything written survives (the page cache outlives a killed
///   process);
/// - ``CrashMode/power(seed:)``: what was synced survives; of the rest, each file keeps, chosen
///   independently per file (so writes to different files are reordered), either a prefix of
///   its writes, the last one torn at any byte, or any subset of the pages written since its
///   last sync, each page as one of the versions it went through (a disk writes back the page
///   cache in any order: a later page can survive an earlier one); and the directory keeps a
///   prefix of its unsynced changes. A page is ``pageSize`` bytes: 512 by default, a disk
///   sector, so that every loss of whole 4 KiB or 16 KiB memory pages is among the losses. A
///   directory made since the last sync of its parent is lost with everything in it: it is an
///   entry of its parent, which only that sync makes durable.
///
/// Every operation the engine performs is one *call*, counted in ``calls``. A test can
/// ``crash(atCall:mode:tearing:)`` — freeze the file system just before call N, recording the
/// image then, and failing every later call — or ``inject(_:)`` an error (EIO, ENOSPC) into the
/// N-th call, once or from then on. A sync that fails so leaves what it covered off the disk
/// until it is written again, as Linux does (it reports a failed write-back once and marks the
/// pages clean): a later sync that succeeds does not make it durable.
///
/// Writes through a mapping are calls too (they can be crash points and torn, but never fail:
/// a real `memcpy` cannot). A crash in the middle of a `pwrite` can tear it as well (a process
/// killed while the kernel copies a long write keeps the part copied). Thread-safe: one lock
/// guards all state.
///
/// Syncs follow one of two ``Platform``s: on Linux every sync makes data durable (`msync`,
/// `fdatasync`, `fsync`); on Darwin only a full sync does (`F_FULLFSYNC`, which the system
/// file system issues for ``SyncStrength/durable`` and for directories), while an ordered
/// sync (`F_BARRIERFSYNC`) is a barrier: it makes nothing durable, but a power loss that keeps
/// anything the file was written after it keeps everything written before it.
///
/// Two more controls let a test run a read-only open beside a writer on the same file system:
/// ``callHook`` runs test code just before every operation, and ``mappingViolations`` lists
/// every time a file was cut shorter than a live read-only mapping of it, which on a real
/// system kills a reader touching those bytes with `SIGBUS` (and every `madvise` past a
/// mapping).
package final class SimulatedFileSystem: FileSystem, @unchecked Sendable {
  // `@unchecked Sendable`: every stored property is guarded by `lock`, and the file contents
  // behind mappings are shared memory whose use the engine orders itself.

  /// What survives a simulated crash.
  package enum CrashMode: Sendable, Equatable {
    /// Everything written, synced or not.
    case process
    /// What was synced, plus seeded random prefixes of what was not.
    case power(seed: UInt64)
  }

  /// Whose sync rules the file system follows.
  package enum Platform: Sendable, Equatable, CaseIterable {
    /// Every sync is durable.
    case linux
    /// Only a full sync is durable; a barrier is not.
    case darwin
  }

  /// Whose sync rules this file system follows.
  package let platform: Platform
  /// The unit a power loss keeps or loses of what was written since a file's last sync.
  package let pageSize: Int

  /// An error to inject into calls.
  package struct Fault: Sendable, Equatable {
    /// The 1-based number of the call that fails first.
    package var call: Int
    /// `EIO`, `ENOSPC`, …
    package var errorNumber: Int32
    /// Whether every later call fails too (until ``clearFaults()``).
    package var persistent: Bool

    package init(call: Int, errorNumber: Int32, persistent: Bool) {
      self.call = call
      self.errorNumber = errorNumber
      self.persistent = persistent
    }
  }

  // `@unchecked Sendable`: a node is only touched under the file system's lock (its bytes
  // also through mappings, which the engine orders).
  final class Node: @unchecked Sendable {
    var storage: UnsafeMutableRawPointer
    var capacity: Int
    var size = 0
    /// The contents at the last sync: with `pending`, what a process crash leaves.
    var durable: [UInt8] = []
    /// What the disk holds as of the last sync: `durable`, but for the `lost` ranges.
    var onDisk: [UInt8] = []
    /// Ranges a failed sync left off the disk for good, until written again: Linux reports a
    /// failed write-back once and marks the pages clean, so a later sync that succeeds writes
    /// nothing of them (what a failed sync does on Darwin is not documented: the same is
    /// assumed).
    var lost: [Range<Int>] = []
    var pending: [Change] = []
    /// The live mappings of this file, by the number the file system gave each.
    var mappings: [Int: MappingShape] = [:]
    /// Storage the file outgrew while it was mapped, freed with the file: a mapping's bytes
    /// are the new storage from then on, but a pointer taken from it before stays valid.
    var retired: [UnsafeMutableRawPointer] = []

    struct MappingShape {
      var length: Int
      var writable: Bool
    }

    enum Change {
      case write(offset: Int, bytes: [UInt8])
      case resize(Int)
      /// An ordered sync: nothing written after it reaches the disk before what came before.
      case barrier
    }

    init(contents: [UInt8] = []) {
      capacity = max(contents.count, 64)
      storage = Self.zeroedMemory(capacity)
      contents.withUnsafeBytes { storage.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
      size = contents.count
      durable = contents
      onDisk = contents
    }

    deinit {
      free(storage)
      for old in retired { free(old) }
    }

    /// `byteCount` zero bytes from `calloc`, freed with `free`: the system hands over large
    /// ones as pages that are zero until touched, so reserving room for a mapping (the
    /// writer maps a whole segment) costs nothing for the bytes never written.
    private static func zeroedMemory(_ byteCount: Int) -> UnsafeMutableRawPointer {
      guard let memory = calloc(1, byteCount) else {
        fatalError("out of memory for a simulated file of \(byteCount) bytes")
      }
      return memory
    }

    var contents: [UInt8] { Array(UnsafeRawBufferPointer(start: storage, count: size)) }

    func reserve(_ needed: Int) {
      guard needed > capacity else { return }
      let bigger = max(needed, capacity * 2)
      let fresh = Self.zeroedMemory(bigger)
      fresh.copyMemory(from: storage, byteCount: size)
      if mappings.isEmpty { free(storage) } else { retired.append(storage) }
      storage = fresh
      capacity = bigger
    }

    func resize(_ newSize: Int) {
      reserve(newSize)
      if newSize < size {
        memset(storage + newSize, 0, size - newSize)
        forget(newSize..<size)
      }
      size = newSize
      pending.append(.resize(newSize))
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) {
      reserve(offset + bytes.count)
      if offset > size {
        memset(storage + size, 0, offset - size)
      }
      if bytes.count > 0 {
        (storage + offset).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
      }
      size = max(size, offset + bytes.count)
      noteWrite(offset: offset, bytes: Array(bytes))
    }

    /// Records a write made to the contents (through a mapping, or by ``write(_:at:)``): it is
    /// pending, and what it covers of a range lost by a failed sync is dirty again.
    func noteWrite(offset: Int, bytes: [UInt8]) {
      forget(offset..<offset + bytes.count)
      pending.append(.write(offset: offset, bytes: bytes))
    }

    /// Takes `range` out of the lost ranges.
    private func forget(_ range: Range<Int>) {
      guard !range.isEmpty else { return }
      lost = lost.flatMap { part -> [Range<Int>] in
        let before = part.lowerBound..<max(part.lowerBound, min(range.lowerBound, part.upperBound))
        let after = max(part.lowerBound, min(range.upperBound, part.upperBound))..<part.upperBound
        return [before, after].filter { !$0.isEmpty }
      }
    }

    /// A sync of the whole file: the contents become durable, and the disk holds them but for
    /// the lost ranges. A sync that `failed` (an injected fault, not a crash) wrote back what
    /// was pending without success: the pages are clean again, so every write pending joins
    /// the lost ranges, and only writing it again puts it on the disk.
    func synchronize(failed: Bool = false) {
      if failed {
        for case .write(let offset, let data) in pending where !data.isEmpty {
          lost.append(offset..<offset + data.count)
        }
      }
      var disk = contents
      for range in lost {
        for index in range where index < disk.count {
          disk[index] = index < onDisk.count ? onDisk[index] : 0
        }
      }
      onDisk = disk
      durable = contents
      pending = []
    }

    /// The durable contents (or `base`) plus the first `kept` pending changes, the last torn
    /// after `tear` bytes when given.
    func image(kept: Int, tear: Int?, base: [UInt8]? = nil) -> [UInt8] {
      var bytes = base ?? durable
      for (index, change) in pending.prefix(kept).enumerated() {
        if case .write(let offset, let data) = change, index == kept - 1, let tear {
          Self.apply(.write(offset: offset, bytes: Array(data.prefix(tear))), to: &bytes)
        } else {
          Self.apply(change, to: &bytes)
        }
      }
      return bytes
    }

    private static func apply(_ change: Change, to bytes: inout [UInt8]) {
      switch change {
      case .resize(let newSize):
        if newSize < bytes.count {
          bytes.removeLast(bytes.count - newSize)
        } else {
          bytes += [UInt8](repeating: 0, count: newSize - bytes.count)
        }
      case .write(let offset, let data):
        if offset + data.count > bytes.count {
          bytes += [UInt8](repeating: 0, count: offset + data.count - bytes.count)
        }
        bytes.replaceSubrange(offset..<offset + data.count, with: data)
      case .barrier:
        break
      }
    }

    /// What a power loss may leave of the file: what the disk holds, every change before some
    /// barrier (all of them, or none: a later change reaches the disk only after the earlier
    /// ones), and of the changes after that barrier, either a prefix (the last write torn at
    /// any byte) or, page by page, any number of the changes to each page: every page is one of
    /// the versions it went through, independently of the others. The file's size is one it
    /// had: the durable one or one after some prefix of its size changes.
    func powerImage(using generator: inout SeededGenerator, pageSize: Int) -> [UInt8] {
      let barriers = pending.indices.filter {
        if case .barrier = pending[$0] { return true }
        return false
      }
      // Every change before the chosen barrier is kept; those up to the next one are open.
      let crossed = Int(generator.next() % UInt64(barriers.count + 1))
      let openStart = crossed == 0 ? 0 : barriers[crossed - 1] + 1
      let openEnd = crossed < barriers.count ? barriers[crossed] : pending.count
      let open = pending[openStart..<openEnd]
      var bytes = image(kept: openStart, tear: nil, base: onDisk)
      if generator.next() % 2 == 0 {
        var kept = Int(generator.next() % UInt64(open.count + 1))
        var tear: Int?
        if kept > 0, case .write(_, let data) = open[openStart + kept - 1],
          generator.next() % 2 == 0
        {
          tear = Int(generator.next() % UInt64(data.count + 1))
        }
        kept += openStart
        return image(kept: kept, tear: tear, base: onDisk)
      }
      // Page by page: first what each change touches, then which versions each page keeps.
      func touched(_ change: Change, size: Int) -> Range<Int>? {
        switch change {
        case .resize(let newSize): return newSize < size ? newSize..<size : nil
        case .write(let offset, let data): return data.isEmpty ? nil : offset..<offset + data.count
        case .barrier: return nil
        }
      }
      func pages(_ range: Range<Int>) -> ClosedRange<Int> {
        (range.lowerBound / pageSize)...((range.upperBound - 1) / pageSize)
      }
      func size(after change: Change, from size: Int) -> Int? {
        switch change {
        case .resize(let newSize): return newSize
        case .write(let offset, let data):
          return offset + data.count > size ? offset + data.count : nil
        case .barrier: return nil
        }
      }
      var sizes: [Int] = []
      var versions: [Int: Int] = [:]
      var current = bytes.count
      for change in open {
        if let range = touched(change, size: current) {
          for page in pages(range) { versions[page, default: 0] += 1 }
        }
        if let newSize = size(after: change, from: current) {
          current = newSize
          sizes.append(newSize)
        }
      }
      var keptVersions: [Int: Int] = [:]
      for (page, count) in versions.sorted(by: { $0.key < $1.key }) {
        keptVersions[page] = Int(generator.next() % UInt64(count + 1))
      }
      let keptSizes = Int(generator.next() % UInt64(sizes.count + 1))
      let finalSize = keptSizes == 0 ? bytes.count : sizes[keptSizes - 1]
      let largest = max(bytes.count, sizes.max() ?? 0)
      bytes += [UInt8](repeating: 0, count: largest - bytes.count)
      var applied: [Int: Int] = [:]
      current = image(kept: openStart, tear: nil, base: onDisk).count
      for change in open {
        if let range = touched(change, size: current) {
          for page in pages(range) {
            let version = applied[page, default: 0]
            applied[page] = version + 1
            guard version < keptVersions[page, default: 0] else { continue }
            let part =
              max(range.lowerBound, page * pageSize)..<min(range.upperBound, (page + 1) * pageSize)
            if case .write(let offset, let data) = change {
              bytes.replaceSubrange(
                part, with: data[(part.lowerBound - offset)..<(part.upperBound - offset)])
            } else {
              bytes.replaceSubrange(part, with: repeatElement(0, count: part.count))
            }
          }
        }
        if let newSize = size(after: change, from: current) { current = newSize }
      }
      if finalSize < bytes.count {
        bytes.removeLast(bytes.count - finalSize)
      } else {
        bytes += [UInt8](repeating: 0, count: finalSize - bytes.count)
      }
      return bytes
    }
  }

  private enum NamespaceChange {
    case link(String, Node)
    case unlink(String)
    case rename(String, String)
    /// A directory renamed with everything in it: one change, as atomic as rename(2) is.
    case renameDirectory(String, String)

    /// Makes the change in `namespace`, a map from path to file.
    func apply(to namespace: inout [String: Node]) {
      switch self {
      case .link(let path, let node): namespace[path] = node
      case .unlink(let path): namespace[path] = nil
      case .rename(let source, let destination):
        namespace[destination] = namespace[source]
        namespace[source] = nil
      case .renameDirectory(let source, let destination):
        for (path, node) in namespace where path.hasPrefix(source + "/") {
          namespace[path] = nil
          namespace[destination + path.dropFirst(source.count)] = node
        }
      }
    }
  }

  private struct State {
    var files: [String: Node] = [:]
    var durableFiles: [String: Node] = [:]
    var directories: Set<String> = ["/"]
    /// The directories made since the last sync of their parent, which a power loss takes with
    /// everything in them.
    var pendingDirectories: Set<String> = []
    var pendingNamespace: [NamespaceChange] = []
    /// The locks held, and the process holding each.
    var locks: [String: Int32] = [:]
    var calls = 0
    var faults: [Fault] = []
    var activeFault: Fault?
    var crashAt: Int?
    var crashCuts: [CrashCut] = []
    /// The images the crash left, one for each of `crashCuts`; nil before the crash.
    var images: [[String: [UInt8]]]?
    var log: [Call] = []
    var hook: CallHook?
    var mappingViolations: [String] = []
    var mappingsMade = 0
    var dataSyncs = 0
    var dataSyncPause = 0
    var deadProcesses: Set<Int32> = []
  }

  /// One call, as recorded in ``log``.
  package struct Call: Sendable, Equatable {
    package var operation: String
    package var path: String
    /// Bytes written, for writes.
    package var count: Int
  }

  /// An operation about to reach the file system, as ``callHook`` sees it.
  package struct UpcomingCall: Sendable, Equatable, CustomStringConvertible {
    /// The call's number: its place in ``log``, and ``calls`` once it is made. Nil for
    /// operations that are not counted calls, `stat` (``directoryExists(_:)``), `close`,
    /// `madvise` (``FileMapping/release(offset:count:)``) and `unlock`; and for every call
    /// after a crash.
    package var number: Int?
    /// The process making it (``processID`` of the file system or view it goes through).
    package var process: Int32
    package var operation: String
    package var path: String
    /// Bytes written, for writes through a mapping.
    package var count: Int

    package var description: String {
      "\(number.map { "call \($0)" } ?? "uncounted") \(operation) \(path)"
    }
  }

  /// Test code run before an operation; see ``callHook``.
  package typealias CallHook = @Sendable (UpcomingCall) -> Void

  /// Shared by the file system and its views of other processes (``process(_:)``).
  private let state: Guarded<State>
  /// The boot this file system is in (see `init`).
  package let boot: [UInt8]
  /// The process whose calls go through this file system: 4242, or another for a view made
  /// by ``process(_:)``.
  package let processID: Int32

  /// A file system holding `files` (full paths to contents), all durable, whose syncs follow
  /// `platform`'s rules, and whose power losses keep or lose what was written since a sync in
  /// units of `pageSize` bytes.
  ///
  /// `boot` names the system boot the file system is in (``bootSession()``): pass the one of
  /// the file system whose image this is to model a process that died, and leave it out (a new
  /// one is drawn) to model a restart after a power loss.
  package init(
    files: [String: [UInt8]] = [:], platform: Platform = .linux, pageSize: Int = 512,
    boot: [UInt8]? = nil
  ) {
    precondition(pageSize > 0)
    self.platform = platform
    self.pageSize = pageSize
    self.boot = boot ?? (0..<16).map { _ in UInt8.random(in: 0...255) }
    self.processID = 4242
    self.state = Guarded(State())
    state.withLock { state in
      for (path, contents) in files {
        let node = Node(contents: contents)
        state.files[path] = node
        state.durableFiles[path] = node
        var directory = parent(of: path)
        while directory != "/" && !directory.isEmpty {
          state.directories.insert(directory)
          directory = parent(of: directory)
        }
      }
    }
  }

  private init(viewOf fileSystem: SimulatedFileSystem, process: Int32) {
    platform = fileSystem.platform
    pageSize = fileSystem.pageSize
    boot = fileSystem.boot
    processID = process
    state = fileSystem.state
  }

  // MARK: Test controls

  /// The same files, calls, crashes, faults and hook, as another process of the same system
  /// sees them: what goes through the view is done by process `id`, which holds locks of its
  /// own and can be killed alone (``kill(_:)``).
  package func process(_ id: Int32) -> SimulatedFileSystem {
    SimulatedFileSystem(viewOf: self, process: id)
  }

  /// Ends `process` as the kernel ends a killed process: every lock it holds is released and
  /// ``processExists(_:)`` says it is gone. What it wrote stays (the page cache outlives it).
  /// Its threads are the test's to stop: a test parks them (in ``callHook``) before killing.
  package func kill(_ process: Int32) {
    state.withLock { state in
      state.deadProcesses.insert(process)
      state.locks = state.locks.filter { $0.value != process }
    }
  }

  /// Calls made so far.
  package var calls: Int { state.withLock { $0.calls } }

  /// Makes call number `call` (1-based) and every later one fail as a crash would, after
  /// recording the image the crash leaves (``crashImage``). For a write through a mapping,
  /// `tearing` keeps that many bytes of it in the image.
  package func crash(atCall call: Int, mode: CrashMode = .process, tearing: Int? = nil) {
    crash(atCall: call, leaving: [CrashCut(mode: mode, tearing: tearing)])
  }

  /// One image a crash can leave: what survives, and for a write through a mapping, how many
  /// of its bytes (nil: none).
  package struct CrashCut: Sendable, Equatable {
    package var mode: CrashMode
    package var tearing: Int?

    package init(mode: CrashMode, tearing: Int? = nil) {
      self.mode = mode
      self.tearing = tearing
    }
  }

  /// As ``crash(atCall:mode:tearing:)``, recording one image for each of `cuts`
  /// (``crashImages``): every way the same crash point can end, from one run of the workload.
  package func crash(atCall call: Int, leaving cuts: [CrashCut]) {
    state.withLock { state in
      state.crashAt = call
      state.crashCuts = cuts
    }
  }

  /// Every call made so far, in order: a copy made under the lock, which the caller may read
  /// while the store's threads append (sharing the log's storage would leave it written in
  /// place after the caller's reads, ordered only by reference counts, which the thread
  /// sanitizer does not see).
  package var log: [Call] { state.withLock { $0.log.map { $0 } } }

  /// The files a crash left, once the crash point was reached; nil before.
  package var crashImage: [String: [UInt8]]? { state.withLock { $0.images?.first } }

  /// The files the crash left for each cut of ``crash(atCall:leaving:)``, in order, once the
  /// crash point was reached; nil before.
  package var crashImages: [[String: [UInt8]]]? { state.withLock { $0.images } }

  /// The files a crash now would leave.
  package func image(_ mode: CrashMode) -> [String: [UInt8]] {
    state.withLock { state in Self.buildImage(&state, mode: mode, pageSize: pageSize) }
  }

  /// Schedules a failure.
  package func inject(_ fault: Fault) {
    state.withLock { $0.faults.append(fault) }
  }

  /// Removes every scheduled and persistent failure.
  package func clearFaults() {
    state.withLock { state in
      state.faults = []
      state.activeFault = nil
    }
  }

  /// The files a power loss that kept nothing unsynced would leave: the entries of the last
  /// directory sync, each with the contents of its file's last sync, but those in a directory
  /// whose parent was not synced since it was made.
  package var syncedFiles: [String: [UInt8]] {
    state.withLock { state in
      state.durableFiles.filter { !Self.inPendingDirectory($0.key, state) }.mapValues(\.onDisk)
    }
  }

  /// Syncs of a file's data (through its descriptor or a mapping) made so far; directory
  /// syncs are not counted.
  package var dataSyncs: Int { state.withLock { $0.dataSyncs } }

  /// How long each sync of a file's data takes, in microseconds (0, the default: no time).
  /// The syncing thread waits outside the file system's lock, as it would for a disk, so other
  /// threads go on and queue behind the sync.
  package var dataSyncPause: Int {
    get { state.withLock { $0.dataSyncPause } }
    set { state.withLock { $0.dataSyncPause = newValue } }
  }

  /// The current contents of every file (synced or not), for inspection.
  package var files: [String: [UInt8]] {
    state.withLock { state in state.files.mapValues(\.contents) }
  }

  /// Called just before every operation on this file system, its files and its mappings:
  /// every counted call (writes through a mapping included) and the uncounted ones listed at
  /// ``UpcomingCall/number``. It runs on the calling thread, outside the file system's lock,
  /// so it may itself use the file system, for instance to open the same store read-only at
  /// that moment; its own operations reach the hook too (a test tells them apart itself, with
  /// a flag it sets while its code runs). A call is numbered before its hook runs, so the
  /// calls the hook makes come after it in ``log`` though they happen first (a crash point
  /// freezes the file system when the call numbered so *enters*). Nil (the default) calls
  /// nothing.
  package var callHook: CallHook? {
    get { state.withLock { $0.hook } }
    set { state.withLock { $0.hook = newValue } }
  }

  /// Every time a file was cut (`ftruncate`) below bytes that a live read-only mapping of it
  /// could touch: the path, the old and new sizes and the mapping's length. On a real system,
  /// a reader touching a page of the mapping wholly past the new end dies of `SIGBUS`. Writable
  /// mappings do not count: the writer maps its active segment past the file's end on purpose
  /// and never touches what it cut. Also every time pages past a mapping's end were handed back
  /// (`madvise`), which on a real system may drop another mapping's memory.
  package var mappingViolations: [String] { state.withLock { $0.mappingViolations } }

  // MARK: Calls

  /// Starts an operation: a counted one gets its number and its entry in ``log`` (none after
  /// a crash), then the hook runs, if any. Returns the number, for `enter`. Call without the
  /// lock held.
  @discardableResult
  fileprivate func announce(
    _ operation: StaticString, _ path: String, counted: Bool = true, count: Int = 0
  ) -> Int? {
    let (hook, number) = state.withLock { state -> (CallHook?, Int?) in
      guard counted, state.images == nil else { return (state.hook, nil) }
      state.calls += 1
      state.log.append(Call(operation: "\(operation)", path: path, count: count))
      return (state.hook, state.calls)
    }
    hook?(
      UpcomingCall(
        number: number, process: processID, operation: "\(operation)", path: path, count: count))
    return number
  }

  /// Decides the fate of call `number` (from `announce`): go ahead, fail with an injected
  /// error, or fail because the file system has crashed. Returns the number.
  @discardableResult
  private func enter(
    _ state: inout State, _ number: Int?, _ operation: StaticString, _ path: String,
    canFail: Bool = true, tornWrite: (Node, Int, [UInt8])? = nil
  ) throws(LogStoreError) -> Int {
    guard state.images == nil, let number else { throw Self.crashed(operation, path) }
    if let crashAt = state.crashAt, number >= crashAt {
      var images: [[String: [UInt8]]] = []
      for cut in state.crashCuts {
        // A crash in the middle of a write (through a mapping or `pwrite`) keeps its first
        // bytes.
        if let (node, offset, bytes) = tornWrite, let tear = cut.tearing {
          node.pending.append(.write(offset: offset, bytes: Array(bytes.prefix(tear))))
          images.append(Self.buildImage(&state, mode: cut.mode, pageSize: pageSize))
          node.pending.removeLast()
        } else {
          images.append(Self.buildImage(&state, mode: cut.mode, pageSize: pageSize))
        }
      }
      state.images = images
      throw Self.crashed(operation, path)
    }
    guard canFail else { return number }
    if let fault = state.activeFault {
      throw Self.failure(operation, path, fault.errorNumber)
    }
    if let index = state.faults.firstIndex(where: { $0.call == number }) {
      let fault = state.faults.remove(at: index)
      if fault.persistent { state.activeFault = fault }
      throw Self.failure(operation, path, fault.errorNumber)
    }
    return number
  }

  private static func crashed(_ operation: StaticString, _ path: String) -> LogStoreError {
    LogStoreError(.io, "\(operation) failed for \(path): simulated crash", systemError: EIO)
  }

  private static func failure(_ operation: StaticString, _ path: String, _ number: Int32)
    -> LogStoreError
  {
    let text = SystemCall.describe(number)
    let code: LogStoreError.Code =
      switch number {
      case ENOSPC, EDQUOT: .diskFull
      case EACCES, EPERM: .permissionDenied
      default: .io
      }
    return LogStoreError(code, "\(operation) failed for \(path): \(text)", systemError: number)
  }

  private static func buildImage(_ state: inout State, mode: CrashMode, pageSize: Int)
    -> [String: [UInt8]]
  {
    var seed: UInt64 = 0
    if case .power(let value) = mode { seed = value }
    var generator = SeededGenerator(seed: seed)
    // The directory: its durable entries plus a prefix of the changes since.
    var namespace = state.durableFiles
    let keptChanges: Int
    switch mode {
    case .process: keptChanges = state.pendingNamespace.count
    case .power: keptChanges = Int(generator.next() % UInt64(state.pendingNamespace.count + 1))
    }
    for change in state.pendingNamespace.prefix(keptChanges) {
      change.apply(to: &namespace)
    }
    if case .power = mode {
      namespace = namespace.filter { !Self.inPendingDirectory($0.key, state) }
    }
    var image: [String: [UInt8]] = [:]
    for (path, node) in namespace.sorted(by: { $0.key < $1.key }) {
      switch mode {
      case .process:
        image[path] = node.image(kept: node.pending.count, tear: nil)
      case .power:
        image[path] = node.powerImage(using: &generator, pageSize: pageSize)
      }
    }
    return image
  }

  /// Whether `path` lies in a directory made since its parent's last sync (at any depth).
  private static func inPendingDirectory(_ path: String, _ state: State) -> Bool {
    state.pendingDirectories.contains { path.hasPrefix($0 + "/") }
  }

  // MARK: FileSystem

  package func openFile(_ path: String, mode: FileOpenMode) throws(LogStoreError)
    -> any FileHandle
  {
    let number = announce("open", path)
    return try state.withLock { state throws(LogStoreError) -> any FileHandle in
      try enter(&state, number, "open", path)
      if let node = state.files[path] {
        return SimulatedHandle(fileSystem: self, node: node, path: path, writable: mode.writable)
      }
      guard mode.create else {
        throw LogStoreError(
          .io, "open failed for \(path): No such file or directory", systemError: ENOENT)
      }
      guard state.directories.contains(parent(of: path)) else {
        throw LogStoreError(
          .io, "open failed for \(path): No such file or directory", systemError: ENOENT)
      }
      let node = Node()
      state.files[path] = node
      state.pendingNamespace.append(.link(path, node))
      return SimulatedHandle(fileSystem: self, node: node, path: path, writable: true)
    }
  }

  package func createDirectory(_ path: String) throws(LogStoreError) {
    let number = announce("mkdir", path)
    try state.withLock { state throws(LogStoreError) in
      try enter(&state, number, "mkdir", path)
      var directory = path
      while directory != "/" && !directory.isEmpty {
        if state.directories.insert(directory).inserted {
          state.pendingDirectories.insert(directory)
        }
        directory = parent(of: directory)
      }
    }
  }

  package func directoryExists(_ path: String) -> Bool {
    announce("stat", path, counted: false)
    return state.withLock { $0.directories.contains(path) }
  }

  package func contentsOfDirectory(_ path: String) throws(LogStoreError) -> [String] {
    let number = announce("opendir", path)
    return try state.withLock { state throws(LogStoreError) -> [String] in
      try enter(&state, number, "opendir", path)
      // Files and directories, as `readdir` gives them.
      let entries = Set(state.files.keys).union(state.directories)
      return entries.filter { $0 != path && parent(of: $0) == path }.map { name(of: $0) }.sorted()
    }
  }

  package func removeFile(_ path: String) throws(LogStoreError) {
    let number = announce("unlink", path)
    try state.withLock { state throws(LogStoreError) in
      try enter(&state, number, "unlink", path)
      if state.files.removeValue(forKey: path) != nil {
        state.pendingNamespace.append(.unlink(path))
      }
    }
  }

  package func removeDirectory(_ path: String) throws(LogStoreError) {
    let number = announce("rmdir", path)
    try state.withLock { state throws(LogStoreError) in
      try enter(&state, number, "rmdir", path)
      guard !state.files.keys.contains(where: { parent(of: $0) == path }) else {
        throw LogStoreError(
          .io, "rmdir failed for \(path): Directory not empty", systemError: ENOTEMPTY)
      }
      state.directories.remove(path)
      state.pendingDirectories.remove(path)
    }
  }

  package func renameFile(_ source: String, to destination: String) throws(LogStoreError) {
    let number = announce("rename", source)
    try state.withLock { state throws(LogStoreError) in
      try enter(&state, number, "rename", source)
      if state.directories.contains(source) {
        // A directory (recover swaps whole stores): its files and folders move with it.
        let inside = source + "/"
        for directory in state.directories where directory == source || directory.hasPrefix(inside)
        {
          state.directories.remove(directory)
          state.directories.insert(destination + directory.dropFirst(source.count))
        }
        for directory in state.pendingDirectories
        where directory == source || directory.hasPrefix(inside) {
          state.pendingDirectories.remove(directory)
          state.pendingDirectories.insert(destination + directory.dropFirst(source.count))
        }
        var files = state.files
        NamespaceChange.renameDirectory(source, destination).apply(to: &files)
        state.files = files
        state.pendingNamespace.append(.renameDirectory(source, destination))
        return
      }
      guard let node = state.files.removeValue(forKey: source) else {
        throw LogStoreError(
          .io, "rename failed for \(source): No such file or directory", systemError: ENOENT)
      }
      state.files[destination] = node
      state.pendingNamespace.append(.rename(source, destination))
    }
  }

  package func synchronizeDirectory(_ path: String) throws(LogStoreError) {
    let operation: StaticString = platform == .darwin ? "F_FULLFSYNC" : "fsync"
    let number = announce(operation, path)
    try state.withLock { state throws(LogStoreError) in
      try enter(&state, number, operation, path)
      // All of the store lives in one directory, so a directory sync makes every change
      // durable in order.
      var durable = state.durableFiles
      for change in state.pendingNamespace {
        change.apply(to: &durable)
      }
      state.durableFiles = durable
      state.pendingNamespace = []
      // The directories made in this one are entries of it (a sync of their own does not make
      // them durable).
      state.pendingDirectories = state.pendingDirectories.filter { parent(of: $0) != path }
    }
  }

  package func lockFile(_ path: String) throws(LogStoreError) -> any FileLock {
    let number = announce("flock", path)
    return try state.withLock { state throws(LogStoreError) -> any FileLock in
      try enter(&state, number, "flock", path)
      guard state.locks[path] == nil else {
        throw LogStoreError(.locked, "the store is locked by another process: \(path) is held")
      }
      state.locks[path] = processID
      if state.files[path] == nil {
        let node = Node()
        state.files[path] = node
        state.pendingNamespace.append(.link(path, node))
      }
      return SimulatedLock(fileSystem: self, path: path)
    }
  }

  package func openProcessLock(_ path: String) throws(LogStoreError) -> any ProcessLock {
    let number = announce("open", path)
    try state.withLock { state throws(LogStoreError) in
      try enter(&state, number, "open", path)
      if state.files[path] == nil {
        let node = Node()
        state.files[path] = node
        state.pendingNamespace.append(.link(path, node))
      }
    }
    return SimulatedProcessLock(fileSystem: self, path: path)
  }

  /// Takes the lock on `path` if nobody holds it.
  fileprivate func tryLock(_ path: String) throws(LogStoreError) -> Bool {
    let number = announce("flock", path)
    return try state.withLock { state throws(LogStoreError) -> Bool in
      try enter(&state, number, "flock", path)
      guard state.locks[path] == nil else { return false }
      state.locks[path] = processID
      return true
    }
  }

  package func bootSession() throws(LogStoreError) -> [UInt8] { boot }

  package func processExists(_ process: Int32) -> Bool {
    state.withLock { !$0.deadProcesses.contains(process) }
  }

  /// A signal whose post does nothing and whose wait is a pause of a millisecond at most, as
  /// Linux's is a short pause.
  package func commitSignal(for directory: String) throws(LogStoreError) -> any CommitSignal {
    SimulatedCommitSignal()
  }

  /// Makes ``processExists(_:)`` say that `process` is gone.
  package func markDead(_ process: Int32) {
    state.withLock { _ = $0.deadProcesses.insert(process) }
  }

  fileprivate func unlock(_ path: String) {
    announce("unlock", path, counted: false)
    // A killed process's lock is gone already, and may be another's by now.
    state.withLock { state in
      if state.locks[path] == processID { state.locks[path] = nil }
    }
  }

  // MARK: Handle operations

  /// A sync of `node` (through its descriptor, or a mapping's `msync` first): durable unless
  /// this is Darwin and the sync only a barrier.
  fileprivate func synchronize(
    _ node: Node, path: String, mapped: Bool, _ strength: SyncStrength
  ) throws(LogStoreError) {
    let operation: StaticString =
      switch (platform, strength, mapped) {
      case (.linux, _, false): "fdatasync"
      case (.linux, _, true): "msync"
      case (.darwin, .durable, false): "F_FULLFSYNC"
      case (.darwin, .durable, true): "msync, F_FULLFSYNC"
      case (.darwin, .ordered, false): "F_BARRIERFSYNC"
      case (.darwin, .ordered, true): "msync, F_BARRIERFSYNC"
      }
    let number = announce(operation, path)
    let pause = state.withLock { $0.dataSyncPause }
    if pause > 0 { usleep(UInt32(pause)) }
    try state.withLock { state throws(LogStoreError) in
      do throws(LogStoreError) {
        try enter(&state, number, operation, path)
      } catch {
        // Failed, not crashed: what it covered was written back without success.
        if state.images == nil { node.synchronize(failed: true) }
        throw error
      }
      state.dataSyncs += 1
      if platform == .linux || strength == .durable {
        node.synchronize()
      } else {
        node.pending.append(.barrier)
      }
    }
  }

  fileprivate func perform<R>(
    _ operation: StaticString, _ path: String, canFail: Bool = true,
    _ body: () throws(LogStoreError) -> R
  ) throws(LogStoreError) -> R {
    let number = announce(operation, path)
    return try state.withLock { state throws(LogStoreError) -> R in
      try enter(&state, number, operation, path, canFail: canFail)
      return try body()
    }
  }

  /// `ftruncate`: sets the size, and records a violation for every read-only mapping that
  /// could touch bytes the cut removes.
  fileprivate func truncate(_ node: Node, path: String, to size: Int) throws(LogStoreError) {
    let number = announce("ftruncate", path)
    try state.withLock { state throws(LogStoreError) in
      let call = try enter(&state, number, "ftruncate", path)
      for mapping in node.mappings.values.sorted(by: { $0.length < $1.length })
      where !mapping.writable && size < min(node.size, mapping.length) {
        state.mappingViolations.append(
          "call \(call): ftruncate cut \(path) from \(node.size) to \(size) bytes "
            + "under a read-only mapping of \(mapping.length) bytes")
      }
      node.resize(size)
    }
  }

  /// `mmap`: a mapping of `length` bytes of `node`, remembered until it is unmapped.
  fileprivate func map(_ node: Node, path: String, length: Int, writable: Bool)
    throws(LogStoreError) -> any FileMapping
  {
    let number = announce("mmap", path)
    return try state.withLock { state throws(LogStoreError) -> any FileMapping in
      try enter(&state, number, "mmap", path)
      node.reserve(length)
      state.mappingsMade += 1
      let number = state.mappingsMade
      node.mappings[number] = Node.MappingShape(length: length, writable: writable)
      return SimulatedMapping(
        fileSystem: self, node: node, number: number, path: path, length: length)
    }
  }

  /// `pwrite`: a crash point that can tear (a process killed in the middle of a long write
  /// leaves the pages copied so far, as Linux's write loop stops at a fatal signal), and a call
  /// that can fail.
  fileprivate func fileWrite(
    _ node: Node, path: String, bytes: UnsafeRawBufferPointer, offset: Int
  ) throws(LogStoreError) {
    let number = announce("pwrite", path, count: bytes.count)
    try state.withLock { state throws(LogStoreError) in
      try enter(
        &state, number, "pwrite", path, tornWrite: (node, offset, Array(bytes)))
      node.write(bytes, at: offset)
    }
  }

  /// A write through a mapping: a crash point that can tear, never a failure.
  fileprivate func mappedWrite(
    _ node: Node, path: String, offset: Int, count: Int,
    _ body: (UnsafeMutableRawBufferPointer) -> Void
  ) {
    let number = announce("mapped write", path, count: count)
    state.withLock { state in
      let region = UnsafeMutableRawBufferPointer(start: node.storage + offset, count: count)
      body(region)
      let bytes = Array(UnsafeRawBufferPointer(region))
      do {
        try enter(
          &state, number, "mapped write", path, canFail: false, tornWrite: (node, offset, bytes))
      } catch {
        return  // crashed: the bytes are in memory but not in the image
      }
      node.noteWrite(offset: offset, bytes: bytes)
    }
  }
}

private func parent(of path: String) -> String {
  guard let slash = path.lastIndex(of: "/") else { return "" }
  return slash == path.startIndex ? "/" : String(path[..<slash])
}

private func name(of path: String) -> String { StorePath.name(of: path) }

private final class SimulatedLock: FileLock, @unchecked Sendable {
  // Immutable after init; `released` is only touched under the file system's lock via unlock.
  let fileSystem: SimulatedFileSystem
  let path: String
  private let released = OnceFlag()

  init(fileSystem: SimulatedFileSystem, path: String) {
    self.fileSystem = fileSystem
    self.path = path
  }

  func unlock() {
    if released.set() { fileSystem.unlock(path) }
  }

  deinit { unlock() }
}

private final class SimulatedProcessLock: ProcessLock, @unchecked Sendable {
  let fileSystem: SimulatedFileSystem
  let path: String

  init(fileSystem: SimulatedFileSystem, path: String) {
    self.fileSystem = fileSystem
    self.path = path
  }

  func acquire() throws(LogStoreError) {
    while try !fileSystem.tryLock(path) { usleep(50) }
  }

  func tryAcquire() throws(LogStoreError) -> Bool { try fileSystem.tryLock(path) }

  func release() { fileSystem.unlock(path) }
}

private final class SimulatedHandle: FileHandle, @unchecked Sendable {
  // Immutable references; the node's state is guarded by the file system's lock.
  let fileSystem: SimulatedFileSystem
  let node: SimulatedFileSystem.Node
  let path: String
  let writable: Bool

  init(
    fileSystem: SimulatedFileSystem, node: SimulatedFileSystem.Node, path: String, writable: Bool
  ) {
    self.fileSystem = fileSystem
    self.node = node
    self.path = path
    self.writable = writable
  }

  func size() throws(LogStoreError) -> Int {
    try fileSystem.perform("fstat", path) { () throws(LogStoreError) -> Int in node.size }
  }

  func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(LogStoreError) -> Int
  {
    try fileSystem.perform("pread", path) { () throws(LogStoreError) -> Int in
      let count = max(0, min(buffer.count, node.size - offset))
      if count > 0 { buffer.baseAddress!.copyMemory(from: node.storage + offset, byteCount: count) }
      return count
    }
  }

  func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(LogStoreError) {
    try fileSystem.fileWrite(node, path: path, bytes: bytes, offset: offset)
  }

  func truncate(to size: Int) throws(LogStoreError) {
    try fileSystem.truncate(node, path: path, to: size)
  }

  func allocate(upTo size: Int) throws(LogStoreError) {
    try fileSystem.perform("posix_fallocate", path) { () throws(LogStoreError) in
      if size > node.size { node.resize(size) }
    }
  }

  func synchronize(_ strength: SyncStrength) throws(LogStoreError) {
    try fileSystem.synchronize(node, path: path, mapped: false, strength)
  }

  func map(length: Int, writable: Bool) throws(LogStoreError) -> any FileMapping {
    try fileSystem.map(node, path: path, length: length, writable: writable)
  }

  func close() { fileSystem.announce("close", path, counted: false) }
}

private final class SimulatedMapping: FileMapping, @unchecked Sendable {
  // Immutable references; see SimulatedFileSystem.
  let fileSystem: SimulatedFileSystem
  let node: SimulatedFileSystem.Node
  /// The key of this mapping in `node.mappings`.
  let number: Int
  let path: String
  let length: Int

  init(
    fileSystem: SimulatedFileSystem, node: SimulatedFileSystem.Node, number: Int, path: String,
    length: Int
  ) {
    self.fileSystem = fileSystem
    self.node = node
    self.number = number
    self.path = path
    self.length = length
  }

  deinit { fileSystem.releaseMapping(node, number: number) }

  /// The file's storage now: it moves only when the file grows past it while mapped, which
  /// the engine's threads (or a test's, which take turns) order against their reads.
  var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: node.storage, count: length) }

  func write(at offset: Int, count: Int, _ body: (UnsafeMutableRawBufferPointer) -> Void) {
    precondition(offset >= 0 && offset + count <= length)
    fileSystem.mappedWrite(node, path: path, offset: offset, count: count, body)
  }

  func synchronize(offset: Int, count: Int, _ strength: SyncStrength) throws(LogStoreError) {
    try fileSystem.synchronize(node, path: path, mapped: true, strength)
  }

  /// Memory is not simulated: nothing to hand back, but the hook hears of it, and a range past
  /// the mapping (which on a real system may hand back another mapping's pages) is a violation.
  func release(offset: Int, count: Int) {
    fileSystem.announce("madvise", path, counted: false)
    if offset < 0 || count < 0 || offset + count > length {
      fileSystem.recordMappingViolation(
        "madvise of \(path) at \(offset), \(count) bytes, past a mapping of \(length) bytes")
    }
  }
}

extension SimulatedFileSystem {
  fileprivate func releaseMapping(_ node: Node, number: Int) {
    state.withLock { _ in _ = node.mappings.removeValue(forKey: number) }
  }

  fileprivate func recordMappingViolation(_ violation: String) {
    state.withLock { $0.mappingViolations.append(violation) }
  }
}

/// SplitMix64: small, fast, deterministic.
package struct SeededGenerator: RandomNumberGenerator, Sendable {
  private var state: UInt64
  package init(seed: UInt64) { state = seed }
  package mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

/// A value behind a pthread mutex, with `Mutex`'s closure API. (Not `Mutex` itself: the thread
/// sanitizer understands pthread mutexes, not the futex behind `Mutex` on Linux.)
package final class Guarded<Value>: @unchecked Sendable {
  // `value` is only touched inside `withLock`, under `mutex`.
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private var value: Value

  package init(_ value: Value) {
    self.value = value
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  package func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(&value)
  }
}

/// ``SimulatedFileSystem/commitSignal(for:)``.
private final class SimulatedCommitSignal: CommitSignal {
  func post() {}

  func wait(milliseconds: Int) { usleep(UInt32(min(milliseconds, 1)) * 1000) }

  func close() {}
}
