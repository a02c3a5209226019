extension LogStore {
  /// Writes a copy of the store, as it is at one moment, into a new directory at `path`, while
  /// the store stays in use.
  ///
  /// The copy holds exactly the state after the writes that had returned when the backup
  /// fixed its moment, at the start of the call (in `.manyProcesses` use, those of every
  /// process): writes made while it copies are not in it, and a batch, a prefix delete or a
  /// table clear is in it whole or not at all. Writers wait only while that moment is fixed (a
  /// list of files is made), not while the files are copied; compaction goes on meanwhile too,
  /// but leaves the files it replaces on disk until the copy is done. The copy is a store of its
  /// own: open it with `LogStore(path:)`. It is on stable storage when the call returns. The index file the store uses comes along, so
  /// the copy opens as fast as the store would, without reading its whole log.
  ///
  /// A read-only store is copied as it was when it was opened.
  ///
  /// ```swift
  /// let store = try LogStore(path: "/tmp/example.store")
  /// try store.backup(to: "/tmp/example-backup.store")
  /// let copy = try LogStore(path: "/tmp/example-backup.store")
  /// ```
  ///
  /// The copy is assembled beside `path`, in a directory named `path.backing-up-<time>-<n>`,
  /// and moved to `path` once complete, so that `path` never holds a partial copy. A failed
  /// backup removes what it wrote; one cut short by a crash may leave that directory behind,
  /// which can be deleted.
  ///
  /// - Parameter path: Where the copy goes: nothing may be there, or an empty directory
  ///   (which the copy replaces). Missing parent directories are created.
  /// - Throws: ``LogStoreError/Code/invalidArgument`` when something is at `path` (a file, a
  ///   directory that is not empty) or `path` is inside the store;
  ///   ``LogStoreError/Code/closed`` when the store is closed, or closes while the copy is
  ///   made; ``LogStoreError/Code/io``, ``LogStoreError/Code/diskFull`` or
  ///   ``LogStoreError/Code/permissionDenied`` when the copy cannot be written. The store
  ///   itself is never changed by a backup that fails.
  public func backup(to path: String) throws(LogStoreError) {
    try backup(to: path) { _ throws(LogStoreError) in }
  }

  /// ``backup(to:)``, calling `prepare` with the copy's directory (beside `path`, renamed to
  /// it at the end) once it is made and before anything is written into it: where the app API
  /// gives it a data-protection class, which the files made in it then inherit. A `prepare`
  /// that throws fails the backup.
  package func backup(
    to path: String, preparingDirectory prepare: (String) throws(LogStoreError) -> Void
  ) throws(LogStoreError) {
    try StoreBackup(engine: engine, destination: StorePath.trimmingTrailingSlashes(path)).run(
      preparingDirectory: prepare)
  }
}

/// One segment a backup copies, fixed with the log's lock held.
struct BackupSource {
  /// The open segment. Its mapping stays valid while this holds it, even if a compaction drops
  /// the segment meanwhile; its bytes below `length` never change again.
  let file: SegmentFile
  /// The bytes that belong to the store at the backup's moment, from the start of the file:
  /// all of a sealed segment, the active one up to the end of its last record.
  let length: Int
  /// The segment is sealed and has a hint file. Neither changes again, so the hint describes
  /// the copy as well; but for a read-only store, whose last segment counts as sealed, the
  /// writer beside it may replace the hint, which is copied only if it still covers no more
  /// than `length` (``StoreBackup``'s `copyHint`).
  let copiesHint: Bool
  /// For the last segment: the last sequence number handed out at the backup's moment. Its
  /// copy ends with a sync mark (carrying that number) saying all of it is durable, as a
  /// closed store's last segment does: the copy is synced, though the store's own marks may
  /// not say so that far.
  let endingMarkSequence: UInt64?
}

/// An index or changes file a backup copies, opened with the log's lock held, and its size
/// then. Index and changes files never change once written, and an open file stays readable
/// when the store removes it.
struct BackupFile {
  let name: String
  let file: any FileHandle
  let size: Int
}

/// A copy of a store as it is at one moment, made while the store stays in use
/// (``LogStore/backup(to:)``). Nothing in the copy's format is new: it is a store like any
/// other.
///
/// 1. *Fix the moment* (log's lock held, briefly; ``StoreEngine/beginBackup()``): every change
///    appended is applied; the live segments are listed with their lengths, the active one's
///    up to its last record. Sealed segments never change, and the active one only grows, so
///    these bytes are the store at this moment whatever writers do next. From now on a
///    compaction that replaces segments leaves their files until the backup ends.
///    The index file in use (with its changes file) is opened then too: it covers the start of
///    those segments, and stays readable while the backup holds it open.
/// 2. *Copy* (no lock): into a new directory beside the destination, each segment up to its
///    length (from its mapping, which the backup holds), the active one's followed by a sync
///    mark, the hint file of each sealed segment that has one (if it covers no more than the
///    bytes copied: beside a read-only store, a writer's close may have replaced it), and the
///    index file, each synced; then a manifest naming exactly those segments, and the
///    directory synced. The copy's first open maps the index file and reads only the log
///    after it, as the store's would. A damaged index file the store set aside is copied in
///    its place, since the copy must read the log after it as the store did (docs/FORMAT.md,
///    "Index files", rule 5).
/// 3. *Put in place*: the directory is renamed to the destination (which must be missing or
///    empty), and the destination's parent synced.
/// 4. *End* (``StoreEngine/endBackup()``): files compactions retired meanwhile are removed.
///
/// A failure removes what was written; the store itself is only read.
struct StoreBackup {
  let engine: StoreEngine
  let destination: String
  private var source: String { engine.directory }
  private var fileSystem: any FileSystem { engine.options.fileSystem }

  /// Bytes copied per write; between writes the backup stops if the store is closing.
  static let chunkSize = 1 << 20

  /// Makes the copy; `prepare` is called with its directory once it is made, before anything
  /// is written into it.
  func run(preparingDirectory prepare: (String) throws(LogStoreError) -> Void)
    throws(LogStoreError)
  {
    let destinationWasDirectory = try checkDestination()
    let (sources, indexFiles) = try engine.beginBackup()
    defer {
      for opened in indexFiles { opened.file.close() }
      engine.endBackup()
    }
    let stamp = CalendarTime(Timestamp.now()).iso8601(basic: true)
    let unique = String(UInt32.random(in: .min ... .max), radix: 16)
    let temporary = destination + ".backing-up-" + stamp + "-" + unique
    do {
      // Its parents too, synced where new: the rename below is synced only in the parent.
      try fileSystem.createDirectoryDurably(temporary)
      try prepare(temporary)
      for source in sources { try copy(source, into: temporary) }
      for file in indexFiles { try copy(file, into: temporary) }
      try Manifest(segments: sources.map(\.file.number), generation: 1).publish(
        directory: temporary, fileSystem: fileSystem)
      try fileSystem.renameFile(temporary, to: destination)
    } catch {
      try? LogStore.removeStoreDirectory(temporary, fileSystem: fileSystem)
      throw error
    }
    do {
      try fileSystem.synchronizeDirectory(StorePath.parent(of: destination))
    } catch {
      // The copy is whole, but its place may not survive a power loss, and a backup that
      // throws leaves no copy. It is moved back aside before it is removed, so that a removal
      // cut short never leaves part of a store at `destination`; an empty directory that was
      // there is put back.
      if (try? fileSystem.renameFile(destination, to: temporary)) != nil {
        try? LogStore.removeStoreDirectory(temporary, fileSystem: fileSystem)
        if destinationWasDirectory { try? fileSystem.createDirectory(destination) }
      }
      throw error
    }
  }

  /// Refuses a destination that holds anything, or lies inside the store; returns whether it
  /// is an (empty) directory.
  private func checkDestination() throws(LogStoreError) -> Bool {
    func refused(_ reason: String) -> LogStoreError {
      LogStoreError(
        .invalidArgument, "cannot back up the store at \(source) to \(destination): \(reason)")
    }
    if destination == source || destination.hasPrefix(source + "/") {
      throw refused("a backup cannot go inside the store it copies")
    }
    if fileSystem.directoryExists(destination) {
      guard try fileSystem.contentsOfDirectory(destination).isEmpty else {
        throw refused("the directory is not empty (a backup goes to a new or empty directory)")
      }
      return true
    }
    if let handle = try? fileSystem.openFile(destination, mode: .readOnly) {
      handle.close()
      throw refused("a file is there (a backup goes to a new or empty directory)")
    }
    return false
  }

  /// Copies `source`'s bytes, and its hint file if it has one, into `directory`.
  private func copy(_ source: BackupSource, into directory: String) throws(LogStoreError) {
    let bytes = source.file.mapping.bytes
    guard source.length <= bytes.count else {
      throw LogStoreError(
        .io, "\(source.file.path) is mapped shorter than the \(source.length) bytes to copy")
    }
    try writeFile(directory + "/" + StoreFileName.segment(source.file.number)) {
      handle throws(LogStoreError) in
      var offset = 0
      while offset < source.length {
        try engine.checkNotClosing()
        let end = min(offset + Self.chunkSize, source.length)
        try handle.write(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]), at: offset)
        offset = end
      }
      if let sequence = source.endingMarkSequence {
        // Synced with the bytes before it, and in the store only once the whole copy is.
        var mark = [UInt8](repeating: 0, count: RecordLayout.syncMarkLength)
        mark.withUnsafeMutableBytes { buffer in
          RecordCodec.encodeSyncMark(
            sequence: sequence, timestamp: Timestamp.now().microsecondsSince1970,
            syncedEnd: source.length, salt: source.file.salt, into: buffer)
        }
        try mark.withBytes { mark throws(LogStoreError) in
          try handle.write(mark, at: source.length)
        }
      }
    }
    if source.copiesHint { try copyHint(of: source, into: directory) }
  }

  /// Copies `source`, a whole file that never changes (a hint, index or changes file), into
  /// `directory`, a chunk at a time.
  private func copy(_ source: BackupFile, into directory: String) throws(LogStoreError) {
    let (file, size) = (source.file, source.size)
    var chunk = [UInt8](repeating: 0, count: min(size, Self.chunkSize))
    try writeFile(directory + "/" + source.name) { handle throws(LogStoreError) in
      var offset = 0
      while offset < size {
        try engine.checkNotClosing()
        let count = min(chunk.count, size - offset)
        try chunk.withMutableBytes { buffer throws(LogStoreError) in
          let part = UnsafeMutableRawBufferPointer(rebasing: buffer[..<count])
          guard try file.read(into: part, at: offset) == count else {
            throw LogStoreError(.io, "\(file.path) got shorter while it was copied")
          }
          try handle.write(UnsafeRawBufferPointer(part), at: offset)
        }
        offset += count
      }
    }
  }

  /// Copies the hint file of `segment` into `directory` if it describes the bytes copied: its
  /// header names the segment and covers no more than `segment.length`. Beside a read-only
  /// store, the writer may have changed the file since the reader opened: removed it when
  /// compacting the segment away (the reader still has the segment open), or renamed a hint
  /// over it at a clean close, covering records appended after the reader's moment, which the
  /// copy does not hold. Either is left out, and the copy's open scans the segment. The file
  /// open here never changes: a new hint takes its name, not its bytes.
  private func copyHint(of segment: BackupSource, into directory: String) throws(LogStoreError) {
    let name = StoreFileName.hint(segment.file.number)
    let hint: any FileHandle
    do {
      hint = try fileSystem.openFile(source + "/" + name, mode: .readOnly)
    } catch  where error.isMissingFile {
      return
    }
    defer { hint.close() }
    guard
      let covered = HintFile.coveredLength(
        readingHeaderOf: hint, fileNumber: segment.file.number, salt: segment.file.salt),
      covered <= segment.length
    else { return }
    try copy(BackupFile(name: name, file: hint, size: try hint.size()), into: directory)
  }

  /// Creates the file at `path`, lets `fill` write it, and syncs it.
  private func writeFile(
    _ path: String, _ fill: (any FileHandle) throws(LogStoreError) -> Void
  ) throws(LogStoreError) {
    let handle = try fileSystem.openFile(path, mode: .createOrOpen)
    defer { handle.close() }
    try fill(handle)
    try handle.synchronize(.durable)
  }
}
