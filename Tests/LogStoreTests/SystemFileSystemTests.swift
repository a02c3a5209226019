import Dispatch
import LogStoreTesting
import Testing

@testable import LogStore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// The real file system's wrappers, on real files: what the simulated file system cannot
/// show.
@Suite("System file system")
struct SystemFileSystemTests {
  private let fileSystem = SystemFileSystem()

  private func contents(_ handle: any FileHandle) throws -> [UInt8] {
    var bytes = [UInt8](repeating: 0xFF, count: try handle.size())
    let read = try bytes.withUnsafeMutableBytes { try handle.read(into: $0, at: 0) }
    #expect(read == bytes.count)
    return bytes
  }

  #if os(Linux)
    @Test(
      "a store lock released is free at once, even while a copy of its descriptor lives (a process being spawned shares it)"
    )
    func releasedLockIsFreeWithCopiesAlive() throws {
      let directory = TemporaryDirectory()
      let path = directory.appending("LOCK")
      let lock = try fileSystem.lockFile(path)
      // The copy a process being spawned holds until it executes its program: a duplicate of
      // the lock's descriptor, found by its path among this process's open files.
      func target(of fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
      }
      let descriptor = try #require((0..<Int32(4096)).first { target(of: $0) == path })
      let copy = dup(descriptor)
      #expect(copy >= 0)
      defer { close(copy) }
      lock.unlock()
      // Taken at once by another open of the file, with the copy still open.
      let other = try fileSystem.openProcessLock(path)
      #expect(try other.tryAcquire())
      other.release()
    }
  #endif

  @Test("allocate and its zero-writing fallback extend a file with zeros and keep its bytes")
  func allocateKeepsBytes() throws {
    let directory = TemporaryDirectory()
    for useFallback in [false, true] {
      let path = directory.path + "/file\(useFallback)"
      let handle = try fileSystem.openFile(path, mode: .createOrOpen)
      defer { handle.close() }
      try [UInt8](repeating: 7, count: 100).withUnsafeBytes { try handle.write($0, at: 0) }
      let target = 200_000  // more than one chunk of the fallback's zeros
      if useFallback {
        try #require(handle as? SystemFileHandle).fillWithZeros(from: 100, to: target)
      } else {
        try handle.allocate(upTo: target)
      }
      let bytes = try contents(handle)
      #expect(bytes.count == target)
      #expect(bytes.prefix(100).allSatisfy { $0 == 7 })
      #expect(bytes.dropFirst(100).allSatisfy { $0 == 0 })
      // Asking for less than the size changes nothing.
      try handle.allocate(upTo: 50)
      #expect(try handle.size() == target)
    }
  }

  @Test("a directory listing keeps names of every length up to the system's limit")
  func longNames() throws {
    let directory = TemporaryDirectory()
    let names = [1, 8, 9, 100, 255].map { String(repeating: "n", count: $0 - 1) + "x" }
    for name in names {
      try fileSystem.openFile(directory.path + "/" + name, mode: .createOrOpen).close()
    }
    #expect(try fileSystem.contentsOfDirectory(directory.path).sorted() == names.sorted())
  }

  @Test("a directory listing that fails part way is an error, never a shorter list")
  func listingFailure() throws {
    // `readdir` as it fails on a damaged directory: one entry, then nil with `errno` set.
    let entry = UnsafeMutablePointer<dirent>.allocate(capacity: 1)
    defer { entry.deallocate() }
    entry.initialize(to: dirent())
    withUnsafeMutableBytes(of: &entry.pointee.d_name) { $0.copyBytes(from: Array("a".utf8)) }
    var calls = 0
    func next(failing: Bool) -> UnsafeMutablePointer<dirent>? {
      calls += 1
      if calls == 1 { return entry }
      if failing { errno = EIO }
      return nil
    }
    expectFailure(.io, EIO, "readdir failed for /store: Input/output error") {
      _ = try SystemFileSystem.names(in: "/store") { next(failing: true) }
    }
    // The end of the directory is nil with `errno` untouched, whatever it held before.
    calls = 0
    errno = ENOENT
    #expect(try SystemFileSystem.names(in: "/store") { next(failing: false) } == ["a"])
  }

  @Test(
    "a store the system will not look into is its error (a loop of links here; EACCES/EPERM in a sandbox), not a missing store"
  )
  func unreachableStore() throws {
    let directory = TemporaryDirectory()
    let loop = directory.appending("loop")
    try #require(symlink(loop, loop) == 0)
    func expectLoop(_ body: () throws -> Void) {
      let error = #expect(throws: LogStoreError.self) { try body() }
      #expect(error?.code == .io)
      #expect(error?.systemError == ELOOP, "\(error?.message ?? "")")
    }
    expectLoop { _ = try LogStore(path: loop, options: LogStore.Options(readOnly: true)) }
    expectLoop { _ = try LogStore(path: loop) }
    expectLoop { _ = try LogStore.verify(path: loop) }
    expectLoop { _ = try LogStore.recover(path: loop) }
    // Nothing there at all is still a missing store.
    let missing = #expect(throws: LogStoreError.self) {
      _ = try LogStore(path: directory.appending("none"), options: LogStore.Options(readOnly: true))
    }
    #expect(missing?.code == .storeNotFound)
  }

  @Test("EACCES and EPERM are permissionDenied, not damage or a generic I/O error")
  func permissionErrors() {
    for code in [EACCES, EPERM] {
      let error = SystemCall.error("open", "/x", code)
      #expect(error.code == .permissionDenied)
      #expect(error.systemError == code)
    }
    #expect(SystemCall.error("open", "/x", ENOSPC).code == .diskFull)
    #expect(SystemCall.error("open", "/x", EIO).code == .io)
  }

  @Test("a mapping syncs, at either strength, what was written through it")
  func mappingSync() throws {
    let directory = TemporaryDirectory()
    let handle = try fileSystem.openFile(directory.path + "/mapped", mode: .createOrOpen)
    defer { handle.close() }
    try handle.allocate(upTo: 8192)
    let mapping = try handle.map(length: 8192, writable: true)
    mapping.write(at: 5000, count: 3) { $0.copyBytes(from: [1, 2, 3]) }
    try mapping.synchronize(offset: 5000, count: 3, .ordered)
    try mapping.synchronize(offset: 5000, count: 3, .durable)
    try handle.synchronize(.durable)
    try fileSystem.synchronizeDirectory(directory.path)
    #expect(try contents(handle)[5000..<5003] == [1, 2, 3])
    // Syncing no bytes, even at the end of the mapping, succeeds.
    try mapping.synchronize(offset: 8192, count: 0, .durable)
  }

  /// The error a failing call throws: its code, the `errno` it carries, and a message that
  /// names the call, the path and the system's reason.
  @discardableResult
  private func expectFailure(
    _ code: LogStoreError.Code, _ systemError: Int32, _ message: String,
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
  ) -> LogStoreError? {
    let error = #expect(throws: LogStoreError.self, sourceLocation: sourceLocation) { try body() }
    #expect(error?.code == code, sourceLocation: sourceLocation)
    #expect(error?.systemError == systemError, sourceLocation: sourceLocation)
    #expect(error?.message == message, sourceLocation: sourceLocation)
    return error
  }

  @Test("createDirectory makes every missing parent, and names the component that is a file")
  func createDirectory() throws {
    let directory = TemporaryDirectory()
    let nested = directory.appending("a/b/c")
    try fileSystem.createDirectory(nested)
    try fileSystem.createDirectory(nested)
    #expect(fileSystem.directoryExists(nested))

    try fileSystem.openFile(directory.appending("file"), mode: .createOrOpen).close()
    let below = directory.appending("file/sub/deeper")
    expectFailure(.io, ENOTDIR, "mkdir failed for \(directory.path)/file/sub: Not a directory") {
      try fileSystem.createDirectory(below)
    }
    expectFailure(.io, ENOTDIR, "\(directory.path)/file exists and is not a directory") {
      try fileSystem.createDirectory(directory.appending("file"))
    }
  }

  @Test("createDirectory takes a path relative to the working directory")
  func createRelativeDirectory() throws {
    let directory = TemporaryDirectory()
    let current = try #require(getcwd(nil, 0))
    defer { free(current) }
    let workingDirectory = String(cString: current)
    try #require(workingDirectory != "/")
    // Up to the root from the working directory, then down to the temporary directory.
    let upward = workingDirectory.split(separator: "/").map { _ in ".." }.joined(separator: "/")
    let relative = upward + directory.path + "/made/here"
    #expect(!relative.hasPrefix("/"))
    try fileSystem.createDirectory(relative)
    #expect(fileSystem.directoryExists(directory.appending("made/here")))
  }

  @Test("removing a missing file or directory is no error; other failures say why")
  func remove() throws {
    let directory = TemporaryDirectory()
    try fileSystem.removeFile(directory.appending("missing"))
    try fileSystem.removeDirectory(directory.appending("missing"))

    try fileSystem.createDirectory(directory.appending("full"))
    try fileSystem.openFile(directory.appending("full/file"), mode: .createOrOpen).close()
    expectFailure(.io, ENOTEMPTY, "rmdir failed for \(directory.path)/full: Directory not empty") {
      try fileSystem.removeDirectory(directory.appending("full"))
    }
    let throughFile = directory.appending("full/file/x")
    expectFailure(.io, ENOTDIR, "unlink failed for \(throughFile): Not a directory") {
      try fileSystem.removeFile(throughFile)
    }
    try fileSystem.removeFile(directory.appending("full/file"))
    try fileSystem.removeDirectory(directory.appending("full"))
    #expect(try fileSystem.contentsOfDirectory(directory.path).isEmpty)
  }

  @Test("opening a missing file for reading fails with ENOENT, which readers treat as removed")
  func openMissing() {
    let directory = TemporaryDirectory()
    let path = directory.appending("missing")
    let error = expectFailure(.io, ENOENT, "open failed for \(path): No such file or directory") {
      _ = try fileSystem.openFile(path, mode: .readOnly)
    }
    #expect(error?.isMissingFile == true)
  }

  @Test("a file opened for reading cannot be extended or mapped for writing")
  func readOnlyHandle() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("file")
    try fileSystem.openFile(path, mode: .createOrOpen).close()
    let handle = try fileSystem.openFile(path, mode: .readOnly)
    defer { handle.close() }
    #if canImport(Darwin)
      let reserve = "fcntl(F_PREALLOCATE)"
    #else
      let reserve = "posix_fallocate"
    #endif
    expectFailure(.io, EBADF, "\(reserve) failed for \(path): Bad file descriptor") {
      try handle.allocate(upTo: 4096)
    }
    #expect(try handle.size() == 0)
    // Reserving nothing asks for nothing (posix_fallocate refuses a length of zero with
    // EINVAL, which is taken as "cannot reserve", and then there are no zeros to write).
    try handle.allocate(upTo: 0)
    #expect(try handle.size() == 0)

    try [UInt8](repeating: 1, count: 4096).withUnsafeBytes {
      let writer = try fileSystem.openFile(path, mode: .createOrOpen)
      defer { writer.close() }
      try writer.write($0, at: 0)
    }
    expectFailure(.permissionDenied, EACCES, "mmap failed for \(path): Permission denied") {
      _ = try handle.map(length: 4096, writable: true)
    }
    let mapping = try handle.map(length: 4096, writable: false)
    #expect(mapping.bytes.allSatisfy { $0 == 1 })
  }

  @Test("a boot session is 16 bytes read from a UUID in either case; other texts are refused")
  func bootSessions() throws {
    let session = try SystemFileSystem().bootSession()
    #expect(session.count == 16 && session.contains { $0 != 0 })
    #expect(try SystemFileSystem().bootSession() == session)
    let bytes = SystemFileSystem.uuidBytes("0A1b2C3d-4E5f-6789-AbCd-EF0123456789\n")
    #expect(bytes?.first == 0x0A && bytes?[1] == 0x1B && bytes?.last == 0x89)
    for text in [
      "", "0a1b", "0a1b2c3d-4e5f-6789-abcd-ef012345678g", String(repeating: "a", count: 33),
    ] {
      #expect(SystemFileSystem.uuidBytes(text) == nil, "\(text)")
    }
  }

  @Test("a process lock held by one descriptor is refused to another until released")
  func processLocks() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("LOCK")
    let first = try SystemFileSystem().openProcessLock(path)
    let second = try SystemFileSystem().openProcessLock(path)
    try first.acquire()
    #expect(try !second.tryAcquire())
    first.release()
    #expect(try second.tryAcquire())
    #expect(try !first.tryAcquire())
    second.release()
    #expect(SystemFileSystem().processExists(SystemFileSystem().processID))
    #expect(!SystemFileSystem().processExists(Int32.max))
  }

  #if os(Linux)
    /// Runs `body` with a handler for `SIGURG` that does nothing and asks for no restart, so
    /// that the signal interrupts the system call a thread waits in (`EINTR`), as an app's
    /// handler for a profiler's or crash reporter's signal can. `SIGURG` because its default is
    /// to be ignored: one that arrives after the handler is put back does nothing. (Linux only:
    /// `sigaction`'s layout differs on Darwin; the retries are the same code on both.)
    private func withInterruptingSignal(_ body: () throws -> Void) throws {
      var action = sigaction()
      action.__sigaction_handler.sa_handler = { _ in }
      sigemptyset(&action.sa_mask)
      action.sa_flags = 0
      var previous = sigaction()
      try #require(sigaction(SIGURG, &action, &previous) == 0)
      defer { sigaction(SIGURG, &previous, nil) }
      try body()
    }

    @Test("a signal that interrupts a wait for a process lock does not end the wait")
    func lockWaitOutlastsSignals() throws {
      try withInterruptingSignal {
        let directory = TemporaryDirectory()
        let path = directory.appending("LOCK")
        let first = try SystemFileSystem().openProcessLock(path)
        let second = try SystemFileSystem().openProcessLock(path)
        try first.acquire()
        let outcome = Guarded<Result<Void, LogStoreError>?>(nil)
        let waiting = SignalledThread {
          let result = Result { () throws(LogStoreError) in try second.acquire() }
          outcome.withLock { $0 = result }
        }
        try waiting.interrupt(count: 5)
        // Still waiting for the lock, however often interrupted.
        #expect(outcome.withLock { $0 } == nil)
        first.release()
        waiting.finish()
        let result = try #require(outcome.withLock { $0 })
        #expect(throws: Never.self) { try result.get() }
        #expect(try !first.tryAcquire())
        second.release()
      }
    }

    @Test("a signal does not cut the store's pauses short")
    func pauseOutlastsSignals() throws {
      try withInterruptingSignal {
        let slept = Guarded<Int64>(0)
        // Long beside the signals, which take a few milliseconds.
        let pause = 500_000
        let waiting = SignalledThread {
          let start = monotonicNanoseconds()
          pauseThread(microseconds: pause)
          slept.withLock { $0 = monotonicNanoseconds() - start }
        }
        try waiting.interrupt(count: 5)
        waiting.finish()
        #expect(slept.withLock { $0 } >= Int64(pause) * 1000)
      }
    }
  #endif
}

#if os(Linux)
  /// A thread that runs `body` with `SIGURG` unblocked (Foundation's threads start with most
  /// signals blocked; an app's threads, the store's own among them, which inherit the mask of
  /// the thread that made them, need not), for a test to interrupt the wait `body` sleeps in.
  /// It stays alive after `body` until ``finish()``: a thread that has ended cannot be
  /// signalled.
  private final class SignalledThread: Sendable {
    private let thread = Guarded<pthread_t?>(nil)
    private let returned = OnceFlag()
    private let leave = DispatchSemaphore(value: 0)
    private let waiting: WaitingThread

    init(_ body: @escaping @Sendable () -> Void) {
      waiting = WaitingThread { [thread, returned, leave] in
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGURG)
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
        thread.withLock { $0 = pthread_self() }
        body()
        returned.set()
        leave.wait()
      }
    }

    /// Signals the thread `count` times, each once it sleeps again: each signal ends the system
    /// call it waits in, which the wait must take up again. Stops once `body` has returned.
    func interrupt(count: Int) throws {
      for _ in 0..<count {
        try waiting.waitUntilAsleep()
        if returned.isSet { return }
        // (Set before `body` began.)
        let target = try #require(thread.withLock { $0 })
        #expect(pthread_kill(target, SIGURG) == 0)
        usleep(2000)
      }
    }

    /// Lets the thread end, and waits until it has.
    func finish() {
      leave.signal()
      waiting.join()
    }
  }
#endif
