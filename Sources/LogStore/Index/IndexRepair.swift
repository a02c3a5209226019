/// Keeps the key directory exact and whole: settles the counts an open left for later, and,
/// when the index file turns out damaged after the open checked it (a block fails its checksum
/// when first read), rebuilds the directory from the log and stops using the file
/// (``IndexFileInUse/setAside()``).
///
/// Called with the log's lock held, by whoever needs exact counts or found the damage: a
/// writer, a reader (through ``StoreEngine``), compaction, a checkpoint.
struct IndexRepair {
  let log: ActiveLog
  let indexFile: IndexFileInUse
  private var index: IndexView { log.index }

  /// Makes the index's counts exact where an open left them for later
  /// (``KeyDirectory/settle()``); a directory whose index file turns out damaged on the way is
  /// rebuilt. A compaction settles them before it starts, and an open and a checkpoint's new
  /// directory (which waits for compaction) unsettle them; so does a view read anew in
  /// `.manyProcesses` use, which may happen while this process compacts (the compaction's
  /// last step settles them again before it moves keys to its outputs).
  func settleCounts() {
    guard !index.keys.isSettled else { return }
    index.change { index.keys.settle() }
    if index.keys.baseDamaged { rebuild() }
  }

  /// Rebuilds the key directory from the segments, as an open without an index file does, and
  /// puts it in place. Damage met in the segments is skipped and counted, as
  /// ``CorruptionPolicy/salvage`` does. Call with no compaction running. Readers wait
  /// meanwhile; it takes as long as an open that reads every record.
  func rebuild() {
    var sizes = log.segmentSizes
    // Under `.always` a group's records are applied once their sync, which runs without the
    // lock, succeeds; a sync that fails zeroes them. While one runs they are left out, as the
    // directory being replaced leaves them out: the group applies them to the new one.
    if log.options.sync == .always, log.syncInFlight, let active = log.writer {
      sizes[active.file.number] = active.keptIfSyncFails
    }
    let files = index.segments.byNumber.sorted { $0.key < $1.key }.compactMap {
      number, file -> (file: SegmentFile, size: Int)? in
      guard let size = sizes[number], size <= file.mapping.bytes.count else { return nil }
      return (file, size)
    }
    var damage = 0
    // Counting damage throws nothing.
    let keys = try! KeyDirectory.rebuilt(from: files, replacing: index.keys.mapped) { _, _, _ in
      damage += 1
    }
    index.change {
      index.replaceKeys(keys)
      index.addDamagedRecords(damage)
    }
    // Not used again by this store, but kept on disk until a new index file replaces it (the
    // writer's close writes one): the records written since may need its position.
    indexFile.setAside()
  }
}
