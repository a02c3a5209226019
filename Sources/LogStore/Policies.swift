/// When the engine forces written data onto stable storage.
public enum SyncPolicy: Sendable, Equatable, Hashable {
  /// Every write is handed to the operating system before the call returns: it survives the
  /// process crashing, not the machine losing power. The default.
  case never
  /// Every write is on stable storage before the call returns (`msync`; on Apple platforms
  /// also `F_FULLFSYNC`). Writers that arrive while a sync is in flight share the next one
  /// (group commit).
  case always
  /// A background thread syncs what was written at most every `milliseconds`: durably on
  /// Linux; on Apple platforms with an ordering barrier (`F_BARRIERFSYNC`), so a power loss
  /// keeps a prefix of the writes but may lose more than the last interval. `sync()` and
  /// `close()` flush fully. See docs/PLATFORMS.md.
  case interval(milliseconds: Int)
}

/// What opening a store does with records that fail their checksum (other than a torn
/// tail at the end of the last segment, which is always cut off: it is the normal result of a
/// crash mid-write, or of a power loss that kept pages written after ones it lost, past what
/// was synced; docs/FORMAT.md, "Recovery").
public enum CorruptionPolicy: Sendable, Equatable, Hashable {
  /// Skip damaged records, count them (`statistics().damagedRecords`) and open. The default.
  case salvage
  /// Refuse to open: throw ``LogStoreError/Code/corrupted`` naming the file and offset.
  case fail
}

/// When the engine reclaims the space of overwritten and deleted records.
public enum CompactionPolicy: Sendable, Equatable, Hashable {
  /// Only when ``LogStore/compact()`` is called.
  case manual
  /// In the background, with the library's default threshold: when garbage is over 25% of
  /// the store's disk bytes and at least 4 MiB.
  case automatic
  /// In the background, when garbage passes `fraction` (0 < fraction < 1) of the disk bytes
  /// (and at least 4 MiB).
  case whenGarbageExceeds(fraction: Double)
}

/// Who opens a store at once.
public enum StoreSharing: Sendable, Equatable, Hashable {
  /// One writing process holds the store while it is open (its lock file stays locked), and
  /// other processes open read-only snapshots. The default.
  case oneProcess
  /// Any number of processes (an app, its widgets and extensions in an App Group container)
  /// read and write at once. No lock is held between calls: a write takes the store's file
  /// lock only while it appends and publishes, and every call first catches up on what the
  /// others wrote since this process last looked (docs/CONCURRENCY.md, "Many processes").
  case manyProcesses
}
