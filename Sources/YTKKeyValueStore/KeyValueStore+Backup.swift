import LogStore

extension KeyValueStore {
  /// Writes a copy of the whole store, as it is at one moment, into a new directory at
  /// `path`, while the store stays in use (``LogStore/backup(to:)``).
  ///
  /// The copy holds every table and item (with its created time) as they were when the call
  /// began: puts made while it copies are not in it, and a `delete(ids:)`, a
  /// `delete(prefix:)` or a `clearTable` is in it whole or not at all. Other threads keep
  /// reading and writing meanwhile; they wait only for the moment to be fixed, not for the
  /// copy. The copy is on stable storage when the call returns, and opens as a store of its
  /// own, as fast as this one would (its index file comes along). A read-only store is copied
  /// as it was when it was opened.
  ///
  /// On iOS, iPadOS, tvOS, watchOS and visionOS the copy has the data-protection class of the
  /// store's directory (``StoreOptions/fileProtection``), given to the copy's directory before
  /// anything is written into it: no file of the copy is ever less protected than the store.
  ///
  /// ```swift
  /// let store = try KeyValueStore(path: "test.db")
  /// try store.backup(to: "backups/test-2026-11-29.db")
  /// let copy = try KeyValueStore(
  ///   path: "backups/test-2026-11-29.db", options: StoreOptions(readOnly: true))
  /// ```
  ///
  /// - Parameter path: Where the copy goes: nothing may be there, or an empty directory.
  ///   Missing parent directories are created.
  /// - Throws: `.invalidArgument` when something is at `path` (a file, a directory that is
  ///   not empty) or `path` is inside the store; `.closed` when the store is closed or closes
  ///   meanwhile; `.io`, `.diskFull` or `.permissionDenied` when the copy cannot be written.
  ///   A failed backup removes what it wrote and leaves the store as it was.
  public func backup(to path: String) throws(KeyValueStoreError) {
    try bridge { () throws(LogStoreError) in
      guard let access = protectionAccess, let protection = try access.classOf(logStore.path)
      else { return try logStore.backup(to: path) }
      try logStore.backup(to: path) { directory throws(LogStoreError) in
        try protection.apply(
          toDirectory: directory, fileSystem: logStore.options.fileSystem, access: access)
      }
    }
  }
}
