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

extension LogStore {
  /// How a store is opened. Every property has a sensible default.
  public struct Options: Sendable {
    /// When writes reach stable storage. Default ``SyncPolicy/never``.
    public var sync: SyncPolicy
    /// Open without taking the store's lock; every write throws
    /// ``LogStoreError/Code/readOnly``. Nothing on disk is changed, not even a torn tail. Safe
    /// beside a writer: the store is a snapshot, the state after some prefix of the writer's
    /// operations, fixed while it opens (docs/CONCURRENCY.md, rule 8).
    public var readOnly: Bool
    /// What to do with damaged records at open. Default ``CorruptionPolicy/salvage``.
    public var corruption: CorruptionPolicy
    /// When to compact. Default ``CompactionPolicy/automatic``.
    public var compaction: CompactionPolicy
    /// A segment is sealed and a new one started once the next record would take it past
    /// this many bytes. Default 64 MiB; at least 4 KiB, at most 2 GiB (1 GiB on watchOS's
    /// arm64_32, where `Int` is 32 bits). A single record larger than this gets a segment
    /// of its own.
    public var maxSegmentSize: Int
    /// Check each record's checksum when it is read, not only when the store is opened.
    /// Default `true`.
    public var verifyChecksumsOnRead: Bool
    /// Keep a persisted index beside the log (index files, docs/FORMAT.md), so that an open
    /// maps it and reads only the log written after it, instead of reading every record.
    /// Written after each compaction, at ``LogStore/checkpoint()``, and at `close()` when
    /// enough was written since the last one. Default `true`; with `false` none is written or
    /// used (a writer's open removes those there), and every open reads the whole log.
    public var indexFiles: Bool
    /// The file system the engine works on; tests substitute a fault-injecting one.
    package var fileSystem: any FileSystem
    /// A clean close writes a hint file for the active segment when at least this many of its
    /// bytes are covered neither by the index file nor by the segment's hint already there
    /// (``ActiveLog/writeActiveHint(indexCovered:)``): scanning less takes about a
    /// millisecond. Tests lower it.
    package var activeHintMinimumBytes = 1 << 20

    public init(
      sync: SyncPolicy = .never, readOnly: Bool = false, corruption: CorruptionPolicy = .salvage,
      compaction: CompactionPolicy = .automatic, maxSegmentSize: Int = 64 << 20,
      verifyChecksumsOnRead: Bool = true, indexFiles: Bool = true
    ) {
      self.sync = sync
      self.readOnly = readOnly
      self.corruption = corruption
      self.compaction = compaction
      self.maxSegmentSize = maxSegmentSize
      self.verifyChecksumsOnRead = verifyChecksumsOnRead
      self.indexFiles = indexFiles
      self.fileSystem = SystemFileSystem()
    }

    static let minimumSegmentSize = 4 << 10
    /// 2 GiB (record offsets are 32-bit); 1 GiB where `Int` is 32 bits (watchOS's arm64_32),
    /// so that a segment's size plus a record's (at most 256 MiB) never overflows, and a
    /// mapping of it can fit in the address space.
    static let maximumSegmentSize =
      Int.bitWidth == 32 ? 1 << 30 : Int(truncatingIfNeeded: Int64(2) << 30)

    func validated() throws(LogStoreError) -> Options {
      guard (Self.minimumSegmentSize...Self.maximumSegmentSize).contains(maxSegmentSize) else {
        throw LogStoreError(
          .invalidArgument,
          "maxSegmentSize must be between 4 KiB and \(Self.maximumSegmentSize >> 30) GiB, "
            + "not \(maxSegmentSize) bytes")
      }
      if case .interval(let milliseconds) = sync, milliseconds <= 0 {
        throw LogStoreError(
          .invalidArgument, "the sync interval must be positive, not \(milliseconds) ms")
      }
      if case .whenGarbageExceeds(let fraction) = compaction, !(fraction > 0 && fraction < 1) {
        throw LogStoreError(
          .invalidArgument, "the compaction threshold must be between 0 and 1, not \(fraction)")
      }
      return self
    }
  }
}

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

/// A point in time, in microseconds since 1970-01-01 00:00:00 UTC: when a value was written.
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
  public var microsecondsSince1970: Int64

  public init(microsecondsSince1970: Int64) {
    self.microsecondsSince1970 = microsecondsSince1970
  }

  /// The wall-clock time now (`CLOCK_REALTIME`).
  /// As an expiry, never (``LogStore/put(_:forKey:in:timestamp:expiresAt:)``).
  public static let never = Timestamp(microsecondsSince1970: .max)

  public static func now() -> Timestamp {
    Timestamp(microsecondsSince1970: wallClockMicroseconds())
  }

  public static func < (a: Timestamp, b: Timestamp) -> Bool {
    a.microsecondsSince1970 < b.microsecondsSince1970
  }

  public var description: String { "\(microsecondsSince1970)µs since 1970" }
}
