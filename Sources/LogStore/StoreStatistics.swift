/// What a store holds and how much space it takes.
public struct StoreStatistics: Sendable, Equatable, Hashable {
  /// Tables that exist.
  public var tables: Int
  /// Keys with a value, across all tables.
  public var liveItems: Int
  /// Encoded bytes of the records those keys point at.
  public var liveBytes: Int
  /// Bytes of the store's segment, hint and index files, not counting space reserved ahead of the
  /// active segment's last record (at most 1 MiB). Sealed segments keep their reserved space
  /// (zeros, at most 1 MiB each) until compaction replaces them: a file is never cut shorter
  /// while a reader may have it mapped.
  public var diskBytes: Int
  /// Segment files.
  public var segments: Int
  /// Places where damage was met and skipped since the store was opened (under
  /// ``CorruptionPolicy/salvage``); zero for an undamaged store. Despite the name, not a
  /// count of records: what one unit is depends on where the damage was found.
  ///
  /// - At open, one for each damaged region skipped in a segment that was scanned (the bytes
  ///   between two good records, however many records they held), and one for each segment
  ///   whose header is missing, damaged or names another file.
  /// - At each compaction since, one for each *key* whose latest value lay in damage met while
  ///   copying the inputs, and which was dropped from the store (its value was unreadable).
  ///
  /// Damage the open did not read (in the part of a segment a valid hint file covers) is
  /// counted only if a compaction drops a key for it; a read that reaches it throws
  /// ``LogStoreError/Code/corrupted`` without counting it. ``LogStore/verify(path:)`` finds all
  /// of it. The count comes from the engine; docs/FORMAT.md ("Recovery") says the same.
  public var damagedRecords: Int
  /// Bytes of the index file the store opened from or last wrote, mapped read-only: clean
  /// memory the system can drop and read back from the file (docs/FORMAT.md, "Index
  /// files"). Zero without one.
  public var indexMappedBytes = 0
  /// Bytes of heap the index holds: all of it for a store opened without an index file, else
  /// the changes since it (the *overlay*).
  public var indexHeapBytes = 0
  /// Bytes compaction could reclaim: `diskBytes - liveBytes`.
  public var garbageBytes: Int { diskBytes - liveBytes }

  /// Statistics with these counts (the others zero).
  public init(
    tables: Int, liveItems: Int, liveBytes: Int, diskBytes: Int, segments: Int,
    damagedRecords: Int
  ) {
    self.tables = tables
    self.liveItems = liveItems
    self.liveBytes = liveBytes
    self.diskBytes = diskBytes
    self.segments = segments
    self.damagedRecords = damagedRecords
  }
}
