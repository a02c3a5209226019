#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// The real file system: thin wrappers over the C library's calls, through ``SystemCall``.
package struct SystemFileSystem: FileSystem {
  package init() {}

  package func openFile(_ path: String, mode: FileOpenMode) throws(LogStoreError)
    -> any FileHandle
  {
    var flags: Int32 = mode.writable || mode.create ? O_RDWR : O_RDONLY
    if mode.create { flags |= O_CREAT }
    flags |= O_CLOEXEC
    let fd = try SystemCall.retrying("open", path) { open(path, flags, 0o644) }
    return SystemFileHandle(fd: fd, path: path)
  }

  package func createDirectory(_ path: String) throws(LogStoreError) {
    if directoryExists(path) { return }
    var prefix = path.hasPrefix("/") ? "/" : ""
    for component in path.split(separator: "/") {
      prefix += component
      if mkdir(prefix, 0o755) != 0 {
        let code = errno
        if code != EEXIST { throw SystemCall.error("mkdir", prefix, code) }
      }
      prefix += "/"
    }
    // Every component exists now (`EEXIST` is fine): a directory, or why not. A `stat` that
    // fails says why (`EACCES`, a loop of links), where "not a directory" would be wrong.
    var info = stat()
    _ = try SystemCall.retrying("stat", path) { stat(path, &info) }
    guard (info.st_mode & S_IFMT) == S_IFDIR else {
      throw LogStoreError(.io, "\(path) exists and is not a directory", systemError: ENOTDIR)
    }
  }

  package func directoryExists(_ path: String) -> Bool {
    var info = stat()
    guard stat(path, &info) == 0 else { return false }
    return (info.st_mode & S_IFMT) == S_IFDIR
  }

  package func contentsOfDirectory(_ path: String) throws(LogStoreError) -> [String] {
    guard let directory = opendir(path) else {
      throw SystemCall.error("opendir", path, errno)
    }
    defer { closedir(directory) }
    return try Self.names(in: path) { readdir(directory) }
  }

  /// The names of the entries `next` reads one by one (`readdir` of the open directory at
  /// `path`; a test's stand-in that fails), without `.` and `..`.
  ///
  /// `readdir` returns nil both at the end and when it fails (`EIO`, `ENOENT` for a directory
  /// gone, `EOVERFLOW`), and only `errno` tells them apart, so it is cleared before each call.
  /// A failure is an error, never a shorter list: a writer's open takes the segments from the
  /// listing and numbers its next file above the highest listed, so a list cut short would
  /// leave segments out of the store and then create one over a segment it did not see.
  static func names(
    in path: String, _ next: () -> UnsafeMutablePointer<dirent>?
  ) throws(LogStoreError) -> [String] {
    var names: [String] = []
    errno = 0
    while let entry = next() {
      // `d_name` is a fixed array of characters (256 on Linux, 1,024 on Darwin), NUL-terminated.
      let capacity = MemoryLayout.size(ofValue: entry.pointee.d_name)
      let name = withUnsafePointer(to: &entry.pointee.d_name) { tuple in
        tuple.withMemoryRebound(to: CChar.self, capacity: capacity) { String(cString: $0) }
      }
      if name != "." && name != ".." { names.append(name) }
      errno = 0
    }
    let code = errno
    if code != 0 { throw SystemCall.error("readdir", path, code) }
    return names
  }

  package func removeFile(_ path: String) throws(LogStoreError) {
    if unlink(path) != 0 {
      let code = errno
      if code != ENOENT { throw SystemCall.error("unlink", path, code) }
    }
  }

  package func removeDirectory(_ path: String) throws(LogStoreError) {
    if rmdir(path) != 0 {
      let code = errno
      if code != ENOENT { throw SystemCall.error("rmdir", path, code) }
    }
  }

  package func renameFile(_ source: String, to destination: String) throws(LogStoreError) {
    _ = try SystemCall.retrying("rename", source) { rename(source, destination) }
  }

  package func synchronizeDirectory(_ path: String) throws(LogStoreError) {
    let fd = try SystemCall.retrying("open", path) { open(path, O_RDONLY | O_CLOEXEC) }
    defer { _ = closeDescriptor(fd) }
    #if canImport(Darwin)
      try SystemCall.flush(fd, path, .durable)
    #else
      _ = try SystemCall.retrying("fsync", path) { fsync(fd) }
    #endif
  }

  package func lockFile(_ path: String) throws(LogStoreError) -> any FileLock {
    let fd = try SystemCall.retrying("open", path) {
      open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
    }
    // A lock just released can look held for a moment: a process being spawned elsewhere in
    // this program briefly shares every open file, our lock's included, until it executes its
    // program. So a held lock is tried again for up to 25 ms before it counts as held.
    var attempts = 0
    while flock(fd, LOCK_EX | LOCK_NB) != 0 {
      let code = errno
      if code == EINTR { continue }
      if code == EWOULDBLOCK && attempts < 25 {
        attempts += 1
        usleep(1000)
        continue
      }
      _ = closeDescriptor(fd)
      if code == EWOULDBLOCK {
        throw LogStoreError(
          .locked,
          "the store is locked by another process (or another open store in this one): "
            + "\(path) is held", systemError: code)
      }
      throw SystemCall.error("flock", path, code)
    }
    return SystemFileLock(fd: fd)
  }

  package func openProcessLock(_ path: String) throws(LogStoreError) -> any ProcessLock {
    let fd = try SystemCall.retrying("open", path) {
      open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
    }
    return SystemProcessLock(fd: fd, path: path)
  }

  package var sharedMutexKind: UInt16 {
    #if canImport(Glibc)
      SystemSharedMutex.kind
    #else
      // Darwin has no robust mutex (a dead holder would leave it held), nor a C library
      // whose mutexes another build could share here: the lock file.
      0
    #endif
  }

  package func sharedMutex(
    in mapping: any FileMapping, at offset: Int, path: String, patience: Int
  ) -> (any SharedMutex)? {
    #if canImport(Glibc)
      guard let mapping = mapping as? SystemFileMapping else { return nil }
      return SystemSharedMutex(mapping: mapping, offset: offset, path: path, patience: patience)
    #else
      return nil
    #endif
  }

  package func bootSession() throws(LogStoreError) -> [UInt8] {
    #if canImport(Darwin)
      // "kern.bootsessionuuid": a UUID in text, new at each boot.
      var text = [CChar](repeating: 0, count: 64)
      var length = text.count
      guard sysctlbyname("kern.bootsessionuuid", &text, &length, nil, 0) == 0 else {
        throw SystemCall.error("sysctl kern.bootsessionuuid", "", errno)
      }
      let uuid = String(cString: text)
    #else
      let path = "/proc/sys/kernel/random/boot_id"
      let handle = try openFile(path, mode: .readOnly)
      defer { handle.close() }
      var bytes = [UInt8](repeating: 0, count: 64)
      let count = try bytes.withMutableBytes { buffer throws(LogStoreError) in
        try handle.read(into: buffer, at: 0)
      }
      let uuid = String(decoding: bytes[0..<count], as: UTF8.self)
    #endif
    guard let session = Self.uuidBytes(uuid) else {
      throw LogStoreError(.io, "the system's boot session is not a UUID: \(uuid)")
    }
    return session
  }

  /// The 16 bytes of a UUID in text ("8-4-4-4-12" hexadecimal digits, any case).
  static func uuidBytes(_ text: String) -> [UInt8]? {
    let digits = text.utf8.filter { $0 != UInt8(ascii: "-") && $0 != UInt8(ascii: "\n") }
    guard digits.count == 32 else { return nil }
    var bytes: [UInt8] = []
    for index in stride(from: 0, to: 32, by: 2) {
      guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else {
        return nil
      }
      bytes.append(high << 4 | low)
    }
    return bytes
  }

  private static func hexValue(_ digit: UInt8) -> UInt8? {
    switch digit {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
    default: nil
    }
  }

  package var processID: Int32 { getpid() }

  package func processExists(_ process: Int32) -> Bool {
    // EPERM: it exists, but this process may not signal it (another user's, or a sandbox's).
    kill(process, 0) == 0 || errno == EPERM
  }

  package func commitSignal(for directory: String) throws(LogStoreError) -> any CommitSignal {
    // Every process that opens the directory, under whatever path, finds the same numbers.
    var info = stat()
    _ = try SystemCall.retrying("stat", directory) { stat(directory, &info) }
    return SystemCommitSignal(name: "org.ytkkeyvaluestore.commit.\(info.st_dev).\(info.st_ino)")
  }
}

/// `close(2)` under a name that does not clash with the methods called `close()`.
@inline(__always)
private func closeDescriptor(_ fd: Int32) -> Int32 {
  #if canImport(Darwin)
    return Darwin.close(fd)
  #elseif canImport(Musl)
    return Musl.close(fd)
  #else
    return Glibc.close(fd)
  #endif
}

/// A lock held by keeping a `flock`ed descriptor open.
final class SystemFileLock: FileLock {
  private let fd: Int32
  private let released = OnceFlag()

  init(fd: Int32) { self.fd = fd }

  /// Unlocks, then closes. Closing alone is not enough: a process being spawned elsewhere in
  /// this program shares every open file until it executes its program, and while its copy of
  /// the descriptor lives the lock would stay held (an open of the store right after a close
  /// could find it locked). `LOCK_UN` releases it for every copy.
  func unlock() {
    if released.set() {
      _ = flock(fd, LOCK_UN)
      _ = closeDescriptor(fd)
    }
  }

  deinit { unlock() }
}

/// A lock file kept open, `flock`ed only between `acquire` and `release`.
final class SystemProcessLock: ProcessLock {
  private let fd: Int32
  private let path: String

  init(fd: Int32, path: String) {
    self.fd = fd
    self.path = path
  }

  func acquire() throws(LogStoreError) {
    _ = try SystemCall.retrying("flock", path) { flock(fd, LOCK_EX) }
  }

  func tryAcquire() throws(LogStoreError) -> Bool {
    while flock(fd, LOCK_EX | LOCK_NB) != 0 {
      let code = errno
      if code == EINTR { continue }
      if code == EWOULDBLOCK { return false }
      throw SystemCall.error("flock", path, code)
    }
    return true
  }

  func release() { _ = flock(fd, LOCK_UN) }

  deinit { _ = closeDescriptor(fd) }
}

#if canImport(Glibc)
  /// A robust, process-shared `pthread_mutex_t` in a mapping of the shared state. The kernel
  /// marks it when the thread holding it dies (the thread's robust list), and the next to take
  /// it is told (`EOWNERDEAD`) and makes it usable again; what the dead write left is the
  /// shared state's to say (its `dirty` mark). Taken and released without a system call while
  /// nobody else wants it, where a `flock` costs two.
  ///
  /// A wait for it ends after `patience` milliseconds with ``LogStoreError/Code/locked``: a
  /// holder stopped inside its write (or memory of the shared state overwritten) fails the
  /// others' writes rather than hanging them.
  final class SystemSharedMutex: SharedMutex, @unchecked Sendable {
    /// glibc's mutex, of this size: processes built against another C library (or for a
    /// word of another size) lay it out differently and must not share it.
    static let kind = UInt16(0x0100) | UInt16(MemoryLayout<pthread_mutex_t>.size)
    /// Kept so that the memory the mutex lives in stays mapped.
    private let mapping: SystemFileMapping
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let path: String
    private let patience: Int
    static let triesBeforeSleeping = 1000

    init(mapping: SystemFileMapping, offset: Int, path: String, patience: Int) {
      precondition(
        offset % 8 == 0 && offset + MemoryLayout<pthread_mutex_t>.size <= mapping.bytes.count)
      self.mapping = mapping
      self.mutex = mapping.mutableAddress(at: offset).bindMemory(
        to: pthread_mutex_t.self, capacity: 1)
      self.path = path
      self.patience = patience
    }

    func initialize() throws(LogStoreError) {
      var attributes = pthread_mutexattr_t()
      pthread_mutexattr_init(&attributes)
      defer { pthread_mutexattr_destroy(&attributes) }
      // Each step only once the one before it succeeded.
      func check(_ code: Int32, _ operation: StaticString) throws(LogStoreError) {
        guard code != 0 else { return }
        throw LogStoreError(
          .io, "\(operation) failed for \(path): \(SystemCall.describe(code))", systemError: code)
      }
      try check(
        pthread_mutexattr_setpshared(&attributes, Int32(PTHREAD_PROCESS_SHARED)),
        "pthread_mutexattr_setpshared")
      try check(
        pthread_mutexattr_setrobust(&attributes, Int32(PTHREAD_MUTEX_ROBUST)),
        "pthread_mutexattr_setrobust")
      try check(pthread_mutex_init(mutex, &attributes), "pthread_mutex_init")
    }

    func acquire() throws(LogStoreError) {
      // A write holds the lock for about a microsecond; a sleep and the wake-up after it cost
      // far more (hundreds of microseconds on the 2-core virtual machine this was measured
      // on, where four writer processes took 227 ms instead of 257 ms for 200,000 puts for
      // trying first: docs/PERFORMANCE.md). So a waiter tries it this many times (tens of
      // microseconds) before it sleeps, as glibc's adaptive mutexes do (which cannot be
      // robust).
      for _ in 0..<Self.triesBeforeSleeping {
        if try tryAcquire() { return }
      }
      // glibc's timed wait takes a time of the wall clock.
      var deadline = timespec()
      clock_gettime(CLOCK_REALTIME, &deadline)
      let nanoseconds = Int(deadline.tv_nsec) + patience % 1000 * 1_000_000
      deadline.tv_sec += patience / 1000 + nanoseconds / 1_000_000_000
      deadline.tv_nsec = nanoseconds % 1_000_000_000
      let code = pthread_mutex_timedlock(mutex, &deadline)
      if code == ETIMEDOUT {
        throw LogStoreError(
          .locked,
          "the write lock in \(path) stayed held for \(patience) ms (a process stopped inside "
            + "a write?)", systemError: code)
      }
      try settle(code, "pthread_mutex_timedlock")
    }

    func tryAcquire() throws(LogStoreError) -> Bool {
      let code = pthread_mutex_trylock(mutex)
      if code == EBUSY { return false }
      try settle(code, "pthread_mutex_trylock")
      return true
    }

    /// Takes what locking returned: held (0), or held from a holder that died, which is made
    /// usable again at once.
    private func settle(_ code: Int32, _ operation: StaticString) throws(LogStoreError) {
      guard code != 0 else { return }
      if code == EOWNERDEAD {
        let consistent = pthread_mutex_consistent(mutex)
        if consistent == 0 { return }
        pthread_mutex_unlock(mutex)
        throw SystemCall.error("pthread_mutex_consistent", path, consistent)
      }
      throw LogStoreError(
        .locked,
        "\(operation) failed for the write lock in \(path): \(SystemCall.describe(code)); "
          + "close every process that uses the store", systemError: code)
    }

    func release() { pthread_mutex_unlock(mutex) }
  }
#endif

/// An open file descriptor. The descriptor is immutable until ``close()``; closing races
/// only with calls the engine has already finished (it closes a file only after the last
/// user is gone).
final class SystemFileHandle: FileHandle {
  let fd: Int32
  let path: String
  private let isClosed = OnceFlag()

  init(fd: Int32, path: String) {
    self.fd = fd
    self.path = path
  }

  deinit { close() }

  func size() throws(LogStoreError) -> Int {
    var info = stat()
    _ = try SystemCall.retrying("fstat", path) { fstat(fd, &info) }
    // off_t is 64 bits everywhere; Int is 32 on watchOS's arm64_32 (and 32-bit Linux).
    guard let size = Int(exactly: info.st_size) else {
      throw LogStoreError(
        .io, "\(path) is \(info.st_size) bytes, more than this platform can address",
        systemError: EOVERFLOW)
    }
    return size
  }

  func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(LogStoreError)
    -> Int
  {
    var done = 0
    while done < buffer.count {
      let count = try SystemCall.retrying("pread", path) {
        pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
      }
      if count == 0 { break }
      done += count
    }
    return done
  }

  func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(LogStoreError) {
    var done = 0
    while done < bytes.count {
      let count = try SystemCall.retrying("pwrite", path) {
        pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
      }
      done += count
    }
  }

  func truncate(to size: Int) throws(LogStoreError) {
    _ = try SystemCall.retrying("ftruncate", path) { ftruncate(fd, off_t(size)) }
  }

  func allocate(upTo size: Int) throws(LogStoreError) {
    #if canImport(Darwin)
      let current = try self.size()
      guard size > current else { return }
      // Blocks from the physical end of the file (past any reserved before), then the size.
      var request = fstore_t(
        fst_flags: UInt32(F_ALLOCATEALL), fst_posmode: F_PEOFPOSMODE, fst_offset: 0,
        fst_length: off_t(size - current), fst_bytesalloc: 0)
      while fcntl(fd, F_PREALLOCATE, &request) == -1 {
        let code = errno
        if code == EINTR { continue }
        // exFAT, SMB, NFS and others cannot reserve: write the zeros instead.
        if code == ENOTSUP || code == EOPNOTSUPP || code == EINVAL {
          return try fillWithZeros(from: current, to: size)
        }
        throw SystemCall.error("fcntl(F_PREALLOCATE)", path, code)
      }
      try truncate(to: size)
    #else
      // Only the new range: where the file system cannot reserve, glibc's fallback writes a
      // byte into every block of the range it is given, so a range from 0 would walk the whole
      // file at every reservation.
      let current = try self.size()
      guard size > current else { return }
      // posix_fallocate returns the error instead of setting errno. glibc writes zeros itself
      // where the file system cannot reserve; musl reports EOPNOTSUPP, and so do we then.
      let reserve = { posix_fallocate(self.fd, off_t(current), off_t(size - current)) }
      var result = reserve()
      while result == EINTR { result = reserve() }
      if result == 0 { return }
      if result == EOPNOTSUPP || result == EINVAL {
        return try fillWithZeros(from: current, to: size)
      }
      throw SystemCall.error("posix_fallocate", path, result)
    #endif
  }

  /// Extends the file to `size` by writing zeros from `start` (its current size), so every
  /// block is really on the disk: a full disk fails here, with `ENOSPC`.
  func fillWithZeros(from start: Int, to size: Int) throws(LogStoreError) {
    guard size > start else { return }
    let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
    defer { chunk.deallocate() }
    chunk.initializeMemory(as: UInt8.self, repeating: 0)
    var offset = start
    while offset < size {
      let count = min(chunk.count, size - offset)
      try write(UnsafeRawBufferPointer(rebasing: chunk[..<count]), at: offset)
      offset += count
    }
  }

  func synchronize(_ strength: SyncStrength) throws(LogStoreError) {
    #if canImport(Darwin)
      try SystemCall.flush(fd, path, strength)
    #else
      _ = try SystemCall.retrying("fdatasync", path) { fdatasync(fd) }
    #endif
  }

  func map(length: Int, writable: Bool) throws(LogStoreError) -> any FileMapping {
    precondition(length > 0, "a mapping must not be empty")
    let protection = writable ? PROT_READ | PROT_WRITE : PROT_READ
    guard let address = mmap(nil, length, protection, MAP_SHARED, fd, 0),
      address != MAP_FAILED
    else {
      throw SystemCall.error("mmap", path, errno)
    }
    return SystemFileMapping(address: address, length: length, file: self)
  }

  func close() {
    if isClosed.set() {
      _ = closeDescriptor(fd)
    }
  }
}

/// A shared `mmap` of a file, unmapped on deallocation.
///
/// `@unchecked Sendable`: the address and length never change; the bytes behind them are
/// shared memory whose use the engine's locks order (a record is written before the index
/// lock publishes it, and never written again).
final class SystemFileMapping: FileMapping, @unchecked Sendable {
  private let address: UnsafeMutableRawPointer
  private let length: Int
  /// The mapped file: its descriptor is what Darwin's full sync needs. The engine closes a
  /// file only with its last mapping (``SegmentFile``).
  private let file: SystemFileHandle

  init(address: UnsafeMutableRawPointer, length: Int, file: SystemFileHandle) {
    self.address = address
    self.length = length
    self.file = file
  }

  deinit { munmap(address, length) }

  var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: address, count: length) }

  /// The mapped memory at `offset`, for a lock that lives in it (``SystemSharedMutex``).
  func mutableAddress(at offset: Int) -> UnsafeMutableRawPointer { address + offset }

  @inline(__always)
  func write(at offset: Int, count: Int, _ body: (UnsafeMutableRawBufferPointer) -> Void) {
    precondition(offset >= 0 && count >= 0 && offset <= length && count <= length - offset)
    body(UnsafeMutableRawBufferPointer(start: address + offset, count: count))
  }

  func release(offset: Int, count: Int) {
    #if os(Linux)
      // For a shared file mapping this unmaps the pages; dirty ones stay dirty in the page
      // cache and are written back as usual. (Darwin's MADV_DONTNEED is not specified as
      // carefully for shared mappings, so it is not used there.)
      let page = Int(sysconf(Int32(_SC_PAGESIZE)))
      let start = (offset + page - 1) / page * page
      // Never past the mapping: the pages there may be another mapping's.
      let end = min(offset + count, length) / page * page
      if end > start { madvise(address + start, end - start, MADV_DONTNEED) }
    #endif
  }

  func synchronize(offset: Int, count: Int, _ strength: SyncStrength) throws(LogStoreError) {
    guard count > 0 else { return }
    let page = Int(sysconf(Int32(_SC_PAGESIZE)))
    let start = offset / page * page
    _ = try SystemCall.retrying("msync", file.path) {
      msync(address + start, offset + count - start, MS_SYNC)
    }
    #if canImport(Darwin)
      // msync hands the pages to the drive; only F_FULLFSYNC empties its cache.
      try SystemCall.flush(file.fd, file.path, strength)
    #endif
  }
}
