/// The index file the store uses: the one its last open mapped or its last checkpoint wrote,
/// the position of the log it covers, and its size; and where the changes file over it ends,
/// if there is one. Checkpoints replace the index file; a compaction that replaces segments it
/// covers removes it; a rebuild that found it damaged sets it aside, on disk until a new one
/// replaces it. Its changes file goes with it.
///
/// Guarded by the log's lock.
final class IndexFileInUse {
  private let directory: String
  private let fileSystem: any FileSystem
  /// The file's number, the position it covers (its last segment and the length covered
  /// there), its size, and the live bytes it counts.
  private(set) var current:
    (number: UInt32, segment: UInt32, covered: Int, size: Int, liveBytes: Int)?

  /// The changes file over the index file, the one the open used or a close wrote: where it
  /// ends (its last segment, and the bytes it covers there) and its size. Nil when there is
  /// none.
  var changes: (segment: UInt32, covered: Int, size: Int)?

  /// An index file found damaged (by the open, or since: ``setAside()``), no longer used but
  /// kept on disk until a new one replaces it. Its position is what lets a later open read the
  /// log after it as the store that found the damage did (docs/FORMAT.md, "Index files", rule
  /// 5), and the records written since may need that: without it, an open reads the whole log
  /// by the rules of an open without index files, which a stray copy of a record in the damaged
  /// log can mislead. A writer's close writes a new index file whenever there is one
  /// (``Checkpointer/isDueAtClose()``). Its number and its size with its changes file's; nil
  /// when there is none.
  private(set) var damaged: (number: UInt32, size: Int)?

  init(directory: String, fileSystem: any FileSystem, openedFrom state: RecoveredState) {
    self.directory = directory
    self.fileSystem = fileSystem
    use(state)
  }

  /// Makes the index file an open mapped (or none) the one in use, with the changes file the
  /// open put over it.
  func use(_ state: RecoveredState) {
    changes = state.changes
    damaged = state.damagedIndexFile
    let mapped = state.keys.mapped
    current = nil
    if let mapped, let last = mapped.segments.last {
      current = (
        mapped.number, last.number, last.coveredLength, mapped.fileLength, mapped.liveBytes
      )
    }
  }

  /// The bytes of segment `number` the file's position covers: all of a segment before its
  /// last, none of one after it (or without an index file).
  func coveredLength(of number: UInt32) -> Int {
    guard let current, number <= current.segment else { return 0 }
    return number == current.segment ? current.covered : Int.max
  }

  /// Bytes of the file and of its changes file (and of a damaged one kept), for
  /// `statistics().diskBytes`.
  var size: Int { (current?.size ?? 0) + (changes?.size ?? 0) + (damaged?.size ?? 0) }

  /// Makes the file a checkpoint wrote, covering up to `covered` bytes of `segment`, the one
  /// in use; returns the number of the one it replaces, which
  /// ``take(_:segment:covered:size:liveBytes:)`` removes (a close leaves it to the next open).
  func replace(
    with number: UInt32, segment: UInt32, covered: Int, size: Int, liveBytes: Int
  ) -> UInt32? {
    defer {
      current = (number, segment, covered, size, liveBytes)
      changes = nil
    }
    return current?.number
  }

  /// Makes the file a checkpoint or a compaction wrote, covering up to `covered` bytes of
  /// `segment`, the one in use, and removes the one it replaces (a reader that mapped that one
  /// keeps its mapping; the next open would remove it anyway).
  func take(
    _ number: UInt32, segment: UInt32, covered: Int, size: Int, liveBytes: Int
  ) throws(LogStoreError) {
    let previous = replace(
      with: number, segment: segment, covered: covered, size: size, liveBytes: liveBytes)
    if let previous { try removeFiles(of: previous) }
    try removeDamaged()
  }

  /// Removes the damaged file kept on disk (``damaged``), now that a new index file replaces it
  /// or a compaction replaced the segments it covers.
  func removeDamaged() throws(LogStoreError) {
    guard let number = damaged?.number else { return }
    damaged = nil
    try removeFiles(of: number)
  }

  /// Stops using the file, found damaged after the open, and keeps it on disk (``damaged``).
  func setAside() {
    guard let current else { return }
    damaged = (current.number, current.size + (changes?.size ?? 0))
    self.current = nil
    changes = nil
  }

  /// Opens the files a backup copies beside the segments, so that the copy opens as this store
  /// would: the index file in use and the changes file over it, or else a damaged one kept and
  /// its changes file, if it has one (the copy then reads its log after the damaged file's
  /// position, as this store did: rule 5 of "Index files" in docs/FORMAT.md). Once open, a file
  /// stays readable when a checkpoint replaces it before it is copied.
  ///
  /// A file that is no longer there or not the size this store knew (another process replaced
  /// it: the writer beside a read-only store, or another writer in `.manyProcesses` use) is
  /// left out, and so is everything when the index file is: the copy then reads its whole log.
  func openForBackup() throws(LogStoreError) -> [BackupFile] {
    // The file's number, and the size this store knows of both files together (as `damaged`
    // keeps it).
    guard
      let (number, knownSize) = current.map({ ($0.number, $0.size + (changes?.size ?? 0)) })
        ?? damaged
    else { return [] }
    var names = [StoreFileName.index(number)]
    if current == nil || changes != nil { names.append(StoreFileName.changes(number)) }
    var files: [BackupFile] = []
    func closeAll() { for opened in files { opened.file.close() } }
    for name in names {
      let file: any FileHandle
      do {
        file = try fileSystem.openFile(directory + "/" + name, mode: .readOnly)
      } catch  where error.isMissingFile {
        // Left out; a damaged file's changes file may never have been written.
        continue
      } catch {
        closeAll()
        throw error
      }
      do {
        files.append(BackupFile(name: name, file: file, size: try file.size()))
      } catch {
        file.close()
        closeAll()
        throw error
      }
    }
    guard files.first?.name == names[0], files.reduce(0, { $0 + $1.size }) == knownSize else {
      closeAll()
      return []
    }
    return files
  }

  /// Removes index file `number` and the changes file over it, if there is one.
  private func removeFiles(of number: UInt32) throws(LogStoreError) {
    try fileSystem.removeFile(directory + "/" + StoreFileName.index(number))
    try fileSystem.removeFile(directory + "/" + StoreFileName.changes(number))
  }

  /// Removes the file, and a damaged one kept: a compaction replaced segments they cover (the
  /// key directory may still use the file's mapping, which stays valid).
  func remove() throws(LogStoreError) {
    try removeDamaged()
    guard let number = current?.number else { return }
    current = nil
    changes = nil
    try removeFiles(of: number)
  }
}
