/// What ``LogStore/recover(path:)`` saved and lost.
public struct SalvageReport: Sendable, Equatable {
  /// Tables in the new store.
  public var tables = 0
  /// Keys whose values were copied into the new store.
  public var items = 0
  /// Damaged regions of the old store that were skipped (their records are lost).
  public var damagedRegions = 0
  /// Keys whose latest value could not be read back (it failed its checksum) and were left out.
  public var unreadableItems = 0
  /// Where the damaged store now is.
  public var damagedStorePath = ""
}

extension LogStore {
  /// Rebuilds a damaged store: copies every readable table and value (with its timestamp)
  /// into a fresh store, then moves the damaged one aside to `PATH.damaged-<time>` and puts the
  /// fresh one at `path`.
  ///
  /// The store's lock is held throughout, so no other process can write to it meanwhile.
  /// Nothing is deleted: the damaged store stays beside the new one for inspection.
  ///
  /// - Throws: ``LogStoreError/Code/locked`` when another process has it open;
  ///   ``LogStoreError/Code/storeNotFound`` when there is no store at `path`.
  public static func recover(path: String) throws(LogStoreError) -> SalvageReport {
    try recover(path: path, fileSystem: SystemFileSystem(), now: .now())
  }

  /// ``recover(path:)`` on another file system (tests), at the time `now` (which names the
  /// damaged store's new place).
  package static func recover(path: String, fileSystem: any FileSystem, now: Timestamp)
    throws(LogStoreError) -> SalvageReport
  {
    let path = StorePath.trimmingTrailingSlashes(path)
    guard fileSystem.directoryExists(path) else {
      throw LogStoreError(.storeNotFound, "there is no store at \(path)")
    }
    let lock = try fileSystem.lockFile(path + "/" + StoreFileName.lock)
    defer { lock.unlock() }

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
        try new.createTable(table)
        report.tables += 1
        // Batches of up to 1,000 items or 8 MiB (a batch holds at most 256 MiB).
        var writer = BatchWriter(store: new)
        for key in try old.keys(in: table) {
          guard let entry = try? old.entry(forKey: key, in: table) else {
            report.unreadableItems += 1
            continue
          }
          try writer.put(entry.value, forKey: key, in: table, timestamp: entry.timestamp)
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

  /// Removes a store directory this code created, and the files in it.
  private static func removeStoreDirectory(_ path: String, fileSystem: any FileSystem)
    throws(LogStoreError)
  {
    for name in try fileSystem.contentsOfDirectory(path) {
      try fileSystem.removeFile(path + "/" + name)
    }
    try fileSystem.removeDirectory(path)
  }
}
