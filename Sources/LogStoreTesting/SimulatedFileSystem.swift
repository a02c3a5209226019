import LogStore
import Synchronization

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
/// - ``CrashMode/power(seed:)``: what was synced survives; of the rest, each file keeps a
///   prefix of its writes (chosen independently per file, so writes to different files are
///   reordered), the last kept write may be torn at any byte, and the directory keeps a prefix
///   of its unsynced changes.
///
/// Every operation the engine performs is one *call*, counted in ``calls``. A test can
/// ``crash(atCall:tearing:)`` — freeze the file system just before call N, recording the
/// image then, and failing every later call — or ``inject(_:)`` an error (EIO, ENOSPC) into the
/// N-th call, once or from then on.
///
/// Writes through a mapping are calls too (they can be crash points and torn, but never fail:
/// a real `memcpy` cannot). Thread-safe: one lock guards all state.
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
    var durable: [UInt8] = []
    var pending: [Change] = []
    var mappings = 0

    enum Change {
      case write(offset: Int, bytes: [UInt8])
      case resize(Int)
    }

    init(contents: [UInt8] = []) {
      capacity = max(contents.count, 64)
      storage = .allocate(byteCount: capacity, alignment: 16)
      storage.initializeMemory(as: UInt8.self, repeating: 0, count: capacity)
      contents.withUnsafeBytes { storage.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
      size = contents.count
      durable = contents
    }

    deinit { storage.deallocate() }

    var contents: [UInt8] { Array(UnsafeRawBufferPointer(start: storage, count: size)) }

    func reserve(_ needed: Int) {
      guard needed > capacity else { return }
      precondition(mappings == 0, "a mapped simulated file cannot grow past its mapping")
      let bigger = max(needed, capacity * 2)
      let fresh = UnsafeMutableRawPointer.allocate(byteCount: bigger, alignment: 16)
      fresh.initializeMemory(as: UInt8.self, repeating: 0, count: bigger)
      fresh.copyMemory(from: storage, byteCount: size)
      storage.deallocate()
      storage = fresh
      capacity = bigger
    }

    func resize(_ newSize: Int) {
      reserve(newSize)
      if newSize < size {
        (storage + newSize).initializeMemory(as: UInt8.self, repeating: 0, count: size - newSize)
      }
      size = newSize
      pending.append(.resize(newSize))
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) {
      reserve(offset + bytes.count)
      if offset > size {
        (storage + size).initializeMemory(as: UInt8.self, repeating: 0, count: offset - size)
      }
      if bytes.count > 0 {
        (storage + offset).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
      }
      size = max(size, offset + bytes.count)
      pending.append(.write(offset: offset, bytes: Array(bytes)))
    }

    func synchronize() {
      durable = contents
      pending = []
    }

    /// The durable contents plus the first `kept` pending changes, the last torn after
    /// `tear` bytes when given.
    func image(kept: Int, tear: Int?) -> [UInt8] {
      var bytes = durable
      for (index, change) in pending.prefix(kept).enumerated() {
        switch change {
        case .resize(let newSize):
          if newSize < bytes.count {
            bytes.removeLast(bytes.count - newSize)
          } else {
            bytes += [UInt8](repeating: 0, count: newSize - bytes.count)
          }
        case .write(let offset, var data):
          if index == kept - 1, let tear { data = Array(data.prefix(tear)) }
          if offset + data.count > bytes.count {
            bytes += [UInt8](repeating: 0, count: offset + data.count - bytes.count)
          }
          bytes.replaceSubrange(offset..<offset + data.count, with: data)
        }
      }
      return bytes
    }
  }

  private enum NamespaceChange {
    case link(String, Node)
    case unlink(String)
    case rename(String, String)
  }

  private struct State {
    var files: [String: Node] = [:]
    var durableFiles: [String: Node] = [:]
    var directories: Set<String> = ["/"]
    var pendingNamespace: [NamespaceChange] = []
    var locks: Set<String> = []
    var calls = 0
    var faults: [Fault] = []
    var activeFault: Fault?
    var crashAt: Int?
    var crashTear: Int?
    var crashMode: CrashMode = .process
    var image: [String: [UInt8]]?
    var log: [Call] = []
  }

  /// One call, as recorded in ``log``.
  package struct Call: Sendable, Equatable {
    package var operation: String
    package var path: String
    /// Bytes written, for writes.
    package var count: Int
  }

  private let state = Guarded(State())

  /// A file system holding `files` (full paths to contents), all durable.
  package init(files: [String: [UInt8]] = [:]) {
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

  // MARK: Test controls

  /// Calls made so far.
  package var calls: Int { state.withLock { $0.calls } }

  /// Makes call number `call` (1-based) and every later one fail as a crash would, after
  /// recording the image the crash leaves (``crashImage``). For a write through a mapping,
  /// `tearing` keeps that many bytes of it in the image.
  package func crash(atCall call: Int, mode: CrashMode = .process, tearing: Int? = nil) {
    state.withLock { state in
      state.crashAt = call
      state.crashTear = tearing
      state.crashMode = mode
    }
  }

  /// Every call made so far, in order.
  package var log: [Call] { state.withLock { $0.log } }

  /// The files a crash left, once the crash point was reached; nil before.
  package var crashImage: [String: [UInt8]]? { state.withLock { $0.image } }

  /// The files a crash now would leave.
  package func image(_ mode: CrashMode) -> [String: [UInt8]] {
    state.withLock { state in Self.buildImage(&state, mode: mode) }
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

  /// The current contents of every file (synced or not), for inspection.
  package var files: [String: [UInt8]] {
    state.withLock { state in state.files.mapValues(\.contents) }
  }

  // MARK: Calls

  /// Counts a call and decides its fate: go ahead, fail with an injected error, or fail
  /// because the file system has crashed.
  private func enter(
    _ state: inout State, _ operation: StaticString, _ path: String, canFail: Bool = true,
    tornWrite: (Node, Int, [UInt8])? = nil
  ) throws(LogStoreError) {
    if state.image != nil { throw Self.crashed(operation, path) }
    state.calls += 1
    state.log.append(Call(operation: "\(operation)", path: path, count: tornWrite?.2.count ?? 0))
    if let crashAt = state.crashAt, state.calls >= crashAt {
      // A crash in the middle of a write through a mapping keeps its first bytes.
      if let (node, offset, bytes) = tornWrite, let tear = state.crashTear {
        node.pending.append(.write(offset: offset, bytes: Array(bytes.prefix(tear))))
        state.image = Self.buildImage(&state, mode: state.crashMode)
        node.pending.removeLast()
      } else {
        state.image = Self.buildImage(&state, mode: state.crashMode)
      }
      throw Self.crashed(operation, path)
    }
    guard canFail else { return }
    if let fault = state.activeFault {
      throw Self.failure(operation, path, fault.errorNumber)
    }
    if let index = state.faults.firstIndex(where: { $0.call == state.calls }) {
      let fault = state.faults.remove(at: index)
      if fault.persistent { state.activeFault = fault }
      throw Self.failure(operation, path, fault.errorNumber)
    }
  }

  private static func crashed(_ operation: StaticString, _ path: String) -> LogStoreError {
    LogStoreError(.io, "\(operation) failed for \(path): simulated crash", systemError: EIO)
  }

  private static func failure(_ operation: StaticString, _ path: String, _ number: Int32)
    -> LogStoreError
  {
    let text = String(cString: strerror(number))
    return LogStoreError(
      number == ENOSPC || number == EDQUOT ? .diskFull : .io,
      "\(operation) failed for \(path): \(text)", systemError: number)
  }

  private static func buildImage(_ state: inout State, mode: CrashMode) -> [String: [UInt8]] {
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
      switch change {
      case .link(let path, let node): namespace[path] = node
      case .unlink(let path): namespace[path] = nil
      case .rename(let source, let destination):
        namespace[destination] = namespace[source]
        namespace[source] = nil
      }
    }
    var image: [String: [UInt8]] = [:]
    for (path, node) in namespace.sorted(by: { $0.key < $1.key }) {
      switch mode {
      case .process:
        image[path] = node.image(kept: node.pending.count, tear: nil)
      case .power:
        let kept = Int(generator.next() % UInt64(node.pending.count + 1))
        var tear: Int?
        if kept > 0, case .write(_, let bytes) = node.pending[kept - 1], generator.next() % 2 == 0 {
          tear = Int(generator.next() % UInt64(bytes.count + 1))
        }
        image[path] = node.image(kept: kept, tear: tear)
      }
    }
    return image
  }

  // MARK: FileSystem

  package func openFile(_ path: String, mode: FileOpenMode) throws(LogStoreError)
    -> any FileHandle
  {
    try state.withLock { state throws(LogStoreError) -> any FileHandle in
      try enter(&state, "open", path)
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
    try state.withLock { state throws(LogStoreError) in
      try enter(&state, "mkdir", path)
      var directory = path
      while directory != "/" && !directory.isEmpty {
        state.directories.insert(directory)
        directory = parent(of: directory)
      }
    }
  }

  package func directoryExists(_ path: String) -> Bool {
    state.withLock { $0.directories.contains(path) }
  }

  package func contentsOfDirectory(_ path: String) throws(LogStoreError) -> [String] {
    try state.withLock { state throws(LogStoreError) -> [String] in
      try enter(&state, "opendir", path)
      return state.files.keys.filter { parent(of: $0) == path }.map { name(of: $0) }.sorted()
    }
  }

  package func removeFile(_ path: String) throws(LogStoreError) {
    try state.withLock { state throws(LogStoreError) in
      try enter(&state, "unlink", path)
      if state.files.removeValue(forKey: path) != nil {
        state.pendingNamespace.append(.unlink(path))
      }
    }
  }

  package func renameFile(_ source: String, to destination: String) throws(LogStoreError) {
    try state.withLock { state throws(LogStoreError) in
      try enter(&state, "rename", source)
      guard let node = state.files.removeValue(forKey: source) else {
        throw LogStoreError(
          .io, "rename failed for \(source): No such file or directory", systemError: ENOENT)
      }
      state.files[destination] = node
      state.pendingNamespace.append(.rename(source, destination))
    }
  }

  package func synchronizeDirectory(_ path: String) throws(LogStoreError) {
    try state.withLock { state throws(LogStoreError) in
      try enter(&state, "fsync", path)
      // All of the store lives in one directory, so a directory sync makes every change
      // durable in order.
      var durable = state.durableFiles
      for change in state.pendingNamespace {
        switch change {
        case .link(let path, let node): durable[path] = node
        case .unlink(let path): durable[path] = nil
        case .rename(let source, let destination):
          durable[destination] = durable[source]
          durable[source] = nil
        }
      }
      state.durableFiles = durable
      state.pendingNamespace = []
    }
  }

  package func lockFile(_ path: String) throws(LogStoreError) -> any FileLock {
    try state.withLock { state throws(LogStoreError) -> any FileLock in
      try enter(&state, "flock", path)
      guard !state.locks.contains(path) else {
        throw LogStoreError(.locked, "the store is locked by another process: \(path) is held")
      }
      state.locks.insert(path)
      if state.files[path] == nil {
        let node = Node()
        state.files[path] = node
        state.pendingNamespace.append(.link(path, node))
      }
      return SimulatedLock(fileSystem: self, path: path)
    }
  }

  fileprivate func unlock(_ path: String) {
    state.withLock { _ = $0.locks.remove(path) }
  }

  // MARK: Handle operations

  fileprivate func perform<R>(
    _ operation: StaticString, _ path: String, canFail: Bool = true,
    _ body: () throws(LogStoreError) -> R
  ) throws(LogStoreError) -> R {
    try state.withLock { state throws(LogStoreError) -> R in
      try enter(&state, operation, path, canFail: canFail)
      return try body()
    }
  }

  /// A write through a mapping: a crash point that can tear, never a failure.
  fileprivate func mappedWrite(
    _ node: Node, path: String, offset: Int, count: Int,
    _ body: (UnsafeMutableRawBufferPointer) -> Void
  ) {
    state.withLock { state in
      let region = UnsafeMutableRawBufferPointer(start: node.storage + offset, count: count)
      body(region)
      let bytes = Array(UnsafeRawBufferPointer(region))
      do {
        try enter(&state, "mapped write", path, canFail: false, tornWrite: (node, offset, bytes))
      } catch {
        return  // crashed: the bytes are in memory but not in the image
      }
      node.pending.append(.write(offset: offset, bytes: bytes))
    }
  }
}

private func parent(of path: String) -> String {
  guard let slash = path.lastIndex(of: "/") else { return "" }
  return slash == path.startIndex ? "/" : String(path[..<slash])
}

private func name(of path: String) -> String {
  guard let slash = path.lastIndex(of: "/") else { return path }
  return String(path[path.index(after: slash)...])
}

private final class SimulatedLock: FileLock, @unchecked Sendable {
  // Immutable after init; `released` is only touched under the file system's lock via unlock.
  let fileSystem: SimulatedFileSystem
  let path: String
  private let released = Atomic<Bool>(false)

  init(fileSystem: SimulatedFileSystem, path: String) {
    self.fileSystem = fileSystem
    self.path = path
  }

  func unlock() {
    if !released.exchange(true, ordering: .acquiringAndReleasing) { fileSystem.unlock(path) }
  }

  deinit { unlock() }
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
    try fileSystem.perform("pwrite", path) { () throws(LogStoreError) in
      node.write(bytes, at: offset)
    }
  }

  func truncate(to size: Int) throws(LogStoreError) {
    try fileSystem.perform("ftruncate", path) { () throws(LogStoreError) in node.resize(size) }
  }

  func allocate(upTo size: Int) throws(LogStoreError) {
    try fileSystem.perform("posix_fallocate", path) { () throws(LogStoreError) in
      if size > node.size { node.resize(size) }
    }
  }

  func synchronize() throws(LogStoreError) {
    try fileSystem.perform("fdatasync", path) { () throws(LogStoreError) in node.synchronize() }
  }

  func map(length: Int, writable: Bool) throws(LogStoreError) -> any FileMapping {
    try fileSystem.perform("mmap", path) { () throws(LogStoreError) -> any FileMapping in
      node.reserve(length)
      node.mappings += 1
      return SimulatedMapping(fileSystem: fileSystem, node: node, path: path, length: length)
    }
  }

  func close() {}
}

private final class SimulatedMapping: FileMapping, @unchecked Sendable {
  // Immutable references; see SimulatedFileSystem.
  let fileSystem: SimulatedFileSystem
  let node: SimulatedFileSystem.Node
  let path: String
  let length: Int

  init(fileSystem: SimulatedFileSystem, node: SimulatedFileSystem.Node, path: String, length: Int) {
    self.fileSystem = fileSystem
    self.node = node
    self.path = path
    self.length = length
  }

  deinit { fileSystem.releaseMapping(node) }

  var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: node.storage, count: length) }

  func write(at offset: Int, count: Int, _ body: (UnsafeMutableRawBufferPointer) -> Void) {
    precondition(offset >= 0 && offset + count <= length)
    fileSystem.mappedWrite(node, path: path, offset: offset, count: count, body)
  }

  func synchronize(offset: Int, count: Int) throws(LogStoreError) {
    try fileSystem.perform("msync", path) { () throws(LogStoreError) in node.synchronize() }
  }

  /// Memory is not simulated: nothing to hand back.
  func release(offset: Int, count: Int) {}
}

extension SimulatedFileSystem {
  fileprivate func releaseMapping(_ node: Node) {
    state.withLock { _ in node.mappings -= 1 }
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
