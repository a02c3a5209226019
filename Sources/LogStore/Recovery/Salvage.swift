/// What ``LogStore/recover(path:)`` saved and lost.
public struct SalvageReport: Sendable, Equatable {
  /// Tables in the new store.
  public var tables = 0
  /// Keys whose values were copied into the new store.
  public var items = 0
  /// Damaged regions of the old store that were skipped (their records are lost).
  public var damagedRegions = 0
  /// Keys whose latest value could not be read back (it failed its checksum) and were left out.
  /// Items that expire while the recovery runs are not among them: they are left out as
  /// expired ones are, and counted nowhere.
  public var unreadableItems = 0
  /// Where the damaged store now is.
  public var damagedStorePath: String
}

extension LogStore {
  /// Rebuilds a damaged store: copies every readable table and value (with its timestamp)
  /// into a fresh store, then moves the damaged one aside to `PATH.damaged-<time>` and puts the
  /// fresh one at `path`.
  ///
  /// The store's lock is held throughout, so no other process can write to it meanwhile.
  /// Nothing is deleted: the damaged store stays beside the new one for inspection.
  /// Read-only opens in `.manyProcesses` use may stay open beside it: each keeps the view it
  /// had, of the damaged store, and reads the new one once a writer publishes in it.
  ///
  /// A recovery cut short between its two renames (a crash, a power loss) left nothing at
  /// `path`: the damaged store is aside, and its complete copy waits beside it. Running this
  /// again finishes that one (its report counts the tables and items of the copy, and no
  /// damage), and so does the next writer's open of `path`, which would otherwise start an
  /// empty store there.
  ///
  /// - Throws: ``LogStoreError/Code/locked`` when another process has it open;
  ///   ``LogStoreError/Code/storeNotFound`` when there is no store at `path`.
  public static func recover(path: String) throws(LogStoreError) -> SalvageReport {
    try recover(path: path, fileSystem: SystemFileSystem(), now: .now())
  }

  /// ``recover(path:)`` on another file system (tests), at the time `now` (which names the
  /// damaged store's new place). `keysListed` is called with the damaged store, open read-only,
  /// once a table's keys are listed and before their values are read: tests move its expiry
  /// clock there.
  package static func recover(
    path: String, fileSystem: any FileSystem, now: Timestamp,
    keysListed: (LogStore) -> Void = { _ in }
  ) throws(LogStoreError) -> SalvageReport {
    let path = StorePath.trimmingTrailingSlashes(path)
    guard fileSystem.directoryExists(path) else {
      guard let damaged = try finishInterruptedRecovery(at: path, fileSystem: fileSystem) else {
        throw fileSystem.missingStoreError(path)
      }
      var options = Options(readOnly: true)
      options.fileSystem = fileSystem
      let store = try LogStore(path: path, options: options)
      defer { try? store.close() }
      let statistics = try store.statistics()
      return SalvageReport(
        tables: statistics.tables, items: statistics.liveItems, damagedStorePath: damaged)
    }
    let lock = try fileSystem.lockFile(path + "/" + StoreFileName.lock)
    defer { lock.unlock() }
    // Opens in `.manyProcesses` use hold the lock only while they write: they must be gone.
    // Followers may stay, and follow the copy once a writer opens it: they are told to look for
    // its state, since the one they map stays with the store put aside.
    try ProcessSharing.leaveSharedUse(directory: path, fileSystem: fileSystem, retiring: true)
    // A `.manyProcesses` writer's open that waits for the lock meanwhile is refused once it
    // reads this process's ID there, as beside a `.oneProcess` writer. Let in when the lock is
    // released, it would hold the lock file of the store put aside while it wrote the copy.
    try ProcessSharing.recordHolder(fileSystem.processID, directory: path, fileSystem: fileSystem)

    // Names that are free, even when recovering twice within a second.
    let stamp = CalendarTime(now).iso8601(basic: true)
    var suffix = stamp
    var attempt = 1
    while fileSystem.directoryExists(path + ".damaged-" + suffix)
      || fileSystem.directoryExists(path + ".recovering-" + suffix)
    {
      attempt += 1
      suffix = stamp + "-\(attempt)"
    }
    let fresh = path + ".recovering-" + suffix
    let damaged = path + ".damaged-" + suffix
    var report = SalvageReport(damagedStorePath: damaged)
    do {
      var oldOptions = Options(readOnly: true, corruption: .salvage)
      oldOptions.fileSystem = fileSystem
      let old = try LogStore(path: path, options: oldOptions)
      defer { try? old.close() }
      report.damagedRegions = try old.statistics().damagedRecords
      var newOptions = Options(compaction: .manual)
      newOptions.fileSystem = fileSystem
      let new = try LogStore(path: fresh, options: newOptions)
      for table in try old.tableNames() {
        // With its default lifetime; items keep their expiries, and expired ones are not read.
        try new.createTable(table, defaultLifetime: old.lifetime(of: table))
        report.tables += 1
        // Batches of up to 1,000 items or 8 MiB (a batch holds at most 256 MiB).
        var writer = BatchWriter(store: new)
        let keys = try old.keys(in: table)
        keysListed(old)
        for key in keys {
          let read: Entry?
          do {
            read = try old.entry(forKey: key, in: table)
          } catch {
            report.unreadableItems += 1
            continue
          }
          // Nil: the item expired since the keys were listed (nothing else writes to the
          // store, whose lock this holds). It is left out as one expired before, not lost.
          guard let entry = read else { continue }
          try writer.put(
            entry.value, forKey: key, in: table, timestamp: entry.timestamp,
            expiresAt: entry.expires)
          report.items += 1
        }
        try writer.flush()
      }
      try new.close()
    } catch {
      try? removeStoreDirectory(fresh, fileSystem: fileSystem)
      throw error
    }
    do {
      try fileSystem.renameFile(path, to: damaged)
    } catch {
      try? removeStoreDirectory(fresh, fileSystem: fileSystem)
      throw error
    }
    try fileSystem.renameFile(fresh, to: path)
    try fileSystem.synchronizeDirectory(StorePath.parent(of: path))
    return report
  }

  /// Puts the copy of a recovery interrupted between its two renames at `path`, where nothing
  /// is; returns where the damaged store was put aside, or nil when there is no such recovery.
  ///
  /// The copy is complete once the damaged store has been moved: that rename comes only after
  /// the copy was closed (synced). So a `.recovering-` directory with a `.damaged-` one of the
  /// same suffix beside it is a finished copy, and one without is an unfinished one, which is
  /// left alone. Only one can be waiting: the next writer's open of `path` finishes it.
  package static func finishInterruptedRecovery(at path: String, fileSystem: any FileSystem)
    throws(LogStoreError) -> String?
  {
    let parent = StorePath.parent(of: path)
    let name = StorePath.name(of: path)
    let recovering = name + ".recovering-"
    guard let names = try? fileSystem.contentsOfDirectory(parent) else { return nil }
    let existing = Set(names)
    let suffixes = names.filter { $0.hasPrefix(recovering) }.map { $0.dropFirst(recovering.count) }
    guard let suffix = suffixes.filter({ existing.contains(name + ".damaged-" + $0) }).max()
    else { return nil }
    try fileSystem.renameFile(path + ".recovering-" + suffix, to: path)
    try fileSystem.synchronizeDirectory(parent)
    return path + ".damaged-" + suffix
  }

  /// Removes a store directory this code created, and the files in it (``recover(path:)``'s
  /// copy, a backup's).
  static func removeStoreDirectory(_ path: String, fileSystem: any FileSystem)
    throws(LogStoreError)
  {
    for name in try fileSystem.contentsOfDirectory(path) {
      try fileSystem.removeFile(path + "/" + name)
    }
    try fileSystem.removeDirectory(path)
  }
}
