#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// The seam between the engine and the operating system.
///
/// Every file operation the engine performs goes through these three protocols, so tests can
/// run the engine on an in-memory file system that injects faults and simulates crashes.
/// ``SystemFileSystem`` is the real implementation. The protocols are `package`-visible: they
/// are for this package's engine and tests, not a public extension point.
///
/// Paths are plain strings; the engine builds them from the store directory and file names.
package protocol FileSystem: Sendable {
  /// Opens (and with `mode.create`, creates) the file at `path`.
  func openFile(_ path: String, mode: FileOpenMode) throws(LogStoreError) -> any FileHandle
  /// Creates the directory at `path` and any missing parents; an existing directory is fine.
  func createDirectory(_ path: String) throws(LogStoreError)
  /// Whether `path` names an existing directory.
  func directoryExists(_ path: String) -> Bool
  /// The names (not paths) of the entries of the directory at `path`, without `.` and `..`;
  /// a listing that fails part way throws (it is never returned cut short).
  func contentsOfDirectory(_ path: String) throws(LogStoreError) -> [String]
  /// Removes the file at `path`; a missing file is not an error.
  func removeFile(_ path: String) throws(LogStoreError)
  /// Removes the empty directory at `path`; a missing one is not an error.
  func removeDirectory(_ path: String) throws(LogStoreError)
  /// Renames the file or directory `source` to `destination`, replacing any file (or empty
  /// directory) there, atomically.
  func renameFile(_ source: String, to destination: String) throws(LogStoreError)
  /// Makes the directory's entries (files created, renamed, removed) durable: `fsync` on the
  /// directory on Linux, `F_FULLFSYNC` on Darwin.
  func synchronizeDirectory(_ path: String) throws(LogStoreError)
  /// Takes an exclusive, non-blocking lock on the file at `path` (creating it), held until the
  /// returned lock is released. Throws ``LogStoreError/Code/locked`` when another open file
  /// description holds it, in this process or another.
  func lockFile(_ path: String) throws(LogStoreError) -> any FileLock
  /// Opens the file at `path` (creating it) as a lock to take and release many times, for
  /// ``StoreSharing/manyProcesses``: it is held only between ``ProcessLock/acquire()`` and
  /// ``ProcessLock/release()``, never while the file is merely open.
  func openProcessLock(_ path: String) throws(LogStoreError) -> any ProcessLock
  /// How a write in ``StoreSharing/manyProcesses`` use excludes the others here: zero when it
  /// takes the lock file (``openProcessLock(_:)``), otherwise a tag naming the kind of
  /// ``SharedMutex`` it takes instead (its C library and size), which the shared state records
  /// so that processes that would lock differently never share a store's writes.
  var sharedMutexKind: UInt16 { get }
  /// The ``SharedMutex`` at `offset` in `mapping` (a writable mapping of the shared state),
  /// whose waits give up after `patience` milliseconds, or nil where writes take the lock file
  /// (``sharedMutexKind`` is zero). The mutex is valid as long as the mapping is.
  func sharedMutex(in mapping: any FileMapping, at offset: Int, path: String, patience: Int)
    -> (any SharedMutex)?
  /// 16 bytes that name the current boot of the system: they change when it restarts, so a
  /// state kept in memory shared between processes is known stale after a power loss.
  /// Linux: `/proc/sys/kernel/random/boot_id`; Darwin: `kern.bootsessionuuid`.
  func bootSession() throws(LogStoreError) -> [UInt8]
  /// This process's ID.
  var processID: Int32 { get }
  /// Whether a process with ID `process` exists (`kill(process, 0)`: it may be another one
  /// that took the number since).
  func processExists(_ process: Int32) -> Bool
  /// The signal by which the processes using the store in `directory` in
  /// ``StoreSharing/manyProcesses`` wake each other when one publishes a write.
  func commitSignal(for directory: String) throws(LogStoreError) -> any CommitSignal
}

/// How a process that published a write wakes the processes watching the store, so that
/// their change streams hear of it without a call of their own (``SystemCommitSignal``).
///
/// Only a hint: a post may be lost or come with nothing new, and a watcher looks at the shared
/// state itself after each wake, so a lost post only delays it to its next one.
package protocol CommitSignal: AnyObject, Sendable {
  /// Wakes every process waiting on this store's signal, this one's included. Never fails.
  func post()
  /// Returns after a post (of any process) or after at most `milliseconds`, or sooner where
  /// the system has no such signal. Called by one thread at a time.
  func wait(milliseconds: Int)
  /// Stops waiting for good; call once no thread waits.
  func close()
}

/// A lock that the kernel releases when its holder dies, taken and released around each write
/// of ``StoreSharing/manyProcesses``: a file's `flock` (``FileSystem/openProcessLock(_:)``), or
/// a ``SharedMutex``.
package protocol ProcessLock: AnyObject, Sendable {
  /// Takes the lock, waiting while another open file description holds it.
  func acquire() throws(LogStoreError)
  /// Takes the lock if nobody holds it; returns whether it did.
  func tryAcquire() throws(LogStoreError) -> Bool
  /// Releases the lock taken by ``acquire()`` or ``tryAcquire()``.
  func release()
}

/// A lock in memory that processes share (in the mapped shared state), which the kernel
/// releases when the thread holding it dies, and which costs no system call to take and
/// release while nobody else wants it: on Linux with glibc, a robust process-shared mutex
/// (``SystemSharedMutex``). It is taken and released by the same thread, around each write of
/// ``StoreSharing/manyProcesses``, in place of the lock file's `flock`.
package protocol SharedMutex: ProcessLock {
  /// Makes the memory a fresh mutex that nobody holds; only while no process can be using it
  /// (the shared state is made anew).
  func initialize() throws(LogStoreError)
}

extension FileSystem {
  /// Creates the directory at `path` and any missing parents (``createDirectory(_:)``), then
  /// syncs the parent of each directory it made. A new directory is an entry of its parent,
  /// which a power loss can take, with everything in the directory, until the parent is
  /// synced: syncs of the files in it and of the directory itself do not make it durable. So
  /// a store opened in a new directory (or a backup made into one) would not survive a power
  /// loss, whatever its syncs promised, on a file system that does not happen to order the
  /// two. Nothing more than ``createDirectory(_:)`` when `path` exists already.
  ///
  /// If a sync fails, the directories it made are removed again (those still empty), so that
  /// the next attempt, which would otherwise find them and sync nothing, makes and syncs them
  /// anew. A process that dies between the two leaves them unsynced, and nothing here can tell:
  /// ``synchronizeEntries(of:)`` is for a caller that can. Returns whether `path` was made.
  @discardableResult
  package func createDirectoryDurably(_ path: String) throws(LogStoreError) -> Bool {
    var missing: [String] = []
    var directory = path
    while !directoryExists(directory) {
      let parent = StorePath.parent(of: directory)
      // `/` and `.` are their own parents, and never made here.
      if parent == directory { break }
      missing.append(directory)
      directory = parent
    }
    try createDirectory(path)
    do {
      for made in missing.reversed() {
        try synchronizeDirectory(StorePath.parent(of: made))
      }
    } catch {
      for made in missing { try? removeDirectory(made) }
      throw error
    }
    return !missing.isEmpty
  }

  /// Syncs the entry of the directory at `path`, and of each directory above it, into its
  /// parent, up to the root (or `.`): for a directory that may have been made by a process that
  /// died before ``createDirectoryDurably(_:)`` synced it.
  package func synchronizeEntries(of path: String) throws(LogStoreError) {
    var directory = path
    var parent = StorePath.parent(of: directory)
    while parent != directory {
      try synchronizeDirectory(parent)
      directory = parent
      parent = StorePath.parent(of: directory)
    }
  }

  /// The error for a store expected at `path` where ``directoryExists(_:)`` found no
  /// directory: `.storeNotFound` when nothing is there (or a file is), but the system's own
  /// error when it would not look: `EACCES` or `EPERM` (permissions, a sandbox: reported as
  /// ``LogStoreError/Code/permissionDenied``), a loop of symbolic links, an I/O error. A store
  /// may well be there then, and an app told it is missing might make a new one elsewhere or
  /// give up on its data. Listing the directory says which.
  package func missingStoreError(_ path: String) -> LogStoreError {
    do throws(LogStoreError) {
      _ = try contentsOfDirectory(path)
    } catch  where error.systemError != ENOENT && error.systemError != ENOTDIR {
      return error
    } catch {}
    return LogStoreError(.storeNotFound, "there is no store at \(path)")
  }

  /// Writes take the lock file unless a file system says otherwise.
  package var sharedMutexKind: UInt16 { 0 }

  package func sharedMutex(
    in mapping: any FileMapping, at offset: Int, path: String, patience: Int
  ) -> (any SharedMutex)? { nil }
}

/// What a sync promises once it returns.
///
/// On Linux both are `fdatasync` (or `msync` for a mapping), which puts the data on stable
/// storage. On Darwin, `fsync` and `msync` only hand the data to the drive, which may keep it
/// in a volatile cache; the two strengths are the two ways to go further.
package enum SyncStrength: Sendable, Equatable {
  /// On stable storage: it survives a power loss. Darwin: `F_FULLFSYNC`, which also empties
  /// the drive's whole cache, the costliest of the syncs.
  case durable
  /// Ordered: after a power loss, nothing written to the file after the sync is there without
  /// everything the sync covered, but the newest data may be lost. Darwin: `F_BARRIERFSYNC`
  /// (an I/O barrier, no cache flush). Linux has no weaker call: the same as `durable`.
  case ordered
}

/// How ``FileSystem/openFile(_:mode:)`` opens a file.
package struct FileOpenMode: Sendable, Equatable {
  /// Open for writing as well as reading.
  package var writable: Bool
  /// Create the file when it does not exist (implies `writable`).
  package var create: Bool

  package static let readOnly = FileOpenMode(writable: false, create: false)
  package static let readWrite = FileOpenMode(writable: true, create: false)
  package static let createOrOpen = FileOpenMode(writable: true, create: true)
}

/// An exclusive lock on a file; released by ``unlock()`` or when the lock is deallocated.
package protocol FileLock: AnyObject, Sendable {
  func unlock()
}

/// An open file. Offsets are absolute (`pread`/`pwrite` style); there is no file position.
package protocol FileHandle: AnyObject, Sendable {
  /// The path the file was opened with, for error messages.
  var path: String { get }
  /// The file's current size in bytes.
  func size() throws(LogStoreError) -> Int
  /// Reads up to `buffer.count` bytes at `offset`; returns fewer only at the end of the file.
  func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(LogStoreError)
    -> Int
  /// Writes all of `bytes` at `offset`, extending the file as needed.
  func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(LogStoreError)
  /// Sets the file's size, cutting it or extending it with zeros.
  func truncate(to size: Int) throws(LogStoreError)
  /// Reserves disk blocks so that the file is at least `size` bytes long and writes below
  /// `size` through a mapping cannot fail for lack of space (`posix_fallocate` on Linux,
  /// `F_PREALLOCATE` on Darwin; where the file system cannot reserve, zeros are written, so a
  /// full disk is still an error here and never a `SIGBUS` later).
  func allocate(upTo size: Int) throws(LogStoreError)
  /// Makes the file's data (and the size needed to read it) durable or ordered (see
  /// ``SyncStrength``): `fdatasync` on Linux, `F_FULLFSYNC` or `F_BARRIERFSYNC` on Darwin.
  func synchronize(_ strength: SyncStrength) throws(LogStoreError)
  /// Maps the first `length` bytes of the file (shared). `length` may exceed the file's
  /// size; only bytes below the size may be touched.
  func map(length: Int, writable: Bool) throws(LogStoreError) -> any FileMapping
  /// Closes the file. Further calls fail; calling it twice is harmless.
  func close()
}

extension FileHandle {
  /// The file's bytes from `offset`, at most `count` of them (fewer at the end of the file),
  /// read into a new array that is not zeroed first: a hint file read at open is copied once,
  /// not cleared and then copied.
  func readBytes(count: Int, at offset: Int = 0) throws(LogStoreError) -> [UInt8] {
    // An array made with no capacity is the standard library's one shared empty array, whose
    // count `init(unsafeUninitializedCapacity:)` writes: threads reading empty files at once
    // would write it together (the thread sanitizer reports it).
    guard count > 0 else { return [] }
    var failure: LogStoreError?
    let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
      do throws(LogStoreError) {
        initialized = try read(into: UnsafeMutableRawBufferPointer(buffer), at: offset)
      } catch {
        failure = error
        initialized = 0
      }
    }
    if let failure { throw failure }
    return bytes
  }

  /// Writes the bytes in `range` over themselves (64 KiB at a time), so that their pages are
  /// dirty again: for bytes that a sync may have failed to write back, which Linux then marks
  /// clean. ``SegmentWriter`` does the same after its own failed sync through its mapping, whose
  /// writes cannot fail; the callers here work on a handle: the clearing of a dead write maps
  /// nothing, and an open maps a last segment it will not append to read-only.
  /// Read from the page cache, which still holds them unless the system dropped those pages;
  /// then the disk's bytes are written back, and each record there reads as damage, never as
  /// data.
  func writeAgain(_ range: Range<Int>) throws(LogStoreError) {
    guard !range.isEmpty else { return }
    var buffer = [UInt8](repeating: 0, count: min(range.count, 64 << 10))
    var offset = range.lowerBound
    while offset < range.upperBound {
      let count = min(buffer.count, range.upperBound - offset)
      try buffer.withMutableBytes { bytes throws(LogStoreError) in
        let part = UnsafeMutableRawBufferPointer(rebasing: bytes[0..<count])
        let read = try self.read(into: part, at: offset)
        try write(UnsafeRawBufferPointer(rebasing: part[0..<read]), at: offset)
      }
      offset += count
    }
  }

  /// Writes zeros over the bytes in `start..<end` (64 KiB at a time).
  func writeZeros(from start: Int, to end: Int) throws(LogStoreError) {
    let zeros = [UInt8](repeating: 0, count: max(0, min(end - start, 64 << 10)))
    var offset = start
    while offset < end {
      let count = min(zeros.count, end - offset)
      try zeros.withBytes { bytes throws(LogStoreError) in
        try write(UnsafeRawBufferPointer(rebasing: bytes[0..<count]), at: offset)
      }
      offset += count
    }
  }
}

/// A shared memory mapping of a file. Bytes written through it are in the operating
/// system's page cache when ``write(at:count:_:)`` returns: they survive the process, not a
/// power failure, until synchronized. Unmapped when deallocated.
package protocol FileMapping: AnyObject, Sendable {
  /// The mapped bytes: `bytes.count` is the mapping length, not the file size.
  var bytes: UnsafeRawBufferPointer { get }
  /// Lets `body` fill `count` bytes at `offset`; the only way the engine writes to a mapping.
  func write(at offset: Int, count: Int, _ body: (UnsafeMutableRawBufferPointer) -> Void)
  /// Makes the bytes in the range durable or ordered (see ``SyncStrength``): `msync` with
  /// `MS_SYNC`, which is enough on Linux; on Darwin followed by the file's `F_FULLFSYNC` or
  /// `F_BARRIERFSYNC`.
  func synchronize(offset: Int, count: Int, _ strength: SyncStrength) throws(LogStoreError)
  /// Lets the operating system take the range's pages out of this process's memory; they stay
  /// in the file (and its cache) and come back when read. An optimization only: it may do
  /// nothing.
  func release(offset: Int, count: Int)
}
