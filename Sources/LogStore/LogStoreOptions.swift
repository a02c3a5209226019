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
    /// Who opens the store at once. Default ``StoreSharing/oneProcess``: one writing process,
    /// which holds the store's lock while it is open. ``StoreSharing/manyProcesses``: any
    /// number of processes read and write at once, and none holds a lock between calls
    /// (docs/CONCURRENCY.md, "Many processes"). A store in use in one mode refuses an open in
    /// the other with ``LogStoreError/Code/locked``; once nobody has it open, it opens in
    /// either.
    public var sharing: StoreSharing
    /// The file system the engine works on; tests substitute a fault-injecting one.
    package var fileSystem: any FileSystem
    /// A clean close writes a hint file for the active segment when at least this many of its
    /// bytes are covered neither by the index file nor by the segment's hint already there
    /// (``ActiveLog/writeActiveHint(indexCovered:)``): scanning less takes about a
    /// millisecond. Tests lower it.
    package var activeHintMinimumBytes = 1 << 20
    /// Records at least this long are written to the active segment with the file's `pwrite`,
    /// shorter ones through its mapping (``SegmentWriter/append(count:fileWriteMinimum:_:)``):
    /// a large value's fresh pages would each cost a page fault. Tests lower it.
    package var fileWriteMinimumBytes = 64 << 10
    /// Stores with fewer live bytes than this get no index file from a compaction or a close
    /// (``LogStore/checkpoint()`` writes one anyway): reading their whole log takes
    /// milliseconds, and a compaction gives its outputs hint files instead. Tests lower it.
    package var indexFileMinimumLiveBytes = 4 << 20
    /// In `.manyProcesses` use, how many milliseconds an open waits for the store's lock held
    /// by a process that is not a `.oneProcess` writer, and a compaction for one another process
    /// runs, before giving up with ``LogStoreError/Code/locked``. Tests lower it.
    package var otherProcessPatience = 10_000

    /// Options with each setting as given, the others at their defaults.
    public init(
      sync: SyncPolicy = .never, readOnly: Bool = false, corruption: CorruptionPolicy = .salvage,
      compaction: CompactionPolicy = .automatic, maxSegmentSize: Int = 64 << 20,
      verifyChecksumsOnRead: Bool = true, indexFiles: Bool = true,
      sharing: StoreSharing = .oneProcess
    ) {
      self.sync = sync
      self.readOnly = readOnly
      self.corruption = corruption
      self.compaction = compaction
      self.maxSegmentSize = maxSegmentSize
      self.verifyChecksumsOnRead = verifyChecksumsOnRead
      self.indexFiles = indexFiles
      self.sharing = sharing
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
