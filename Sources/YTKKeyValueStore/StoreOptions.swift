import LogStore

/// How ``KeyValueStore`` opens a store. Every property has a default; set only what you need.
///
/// ```swift
/// var options = StoreOptions()
/// options.sync = .always
/// let store = try KeyValueStore(path: "test.db", options: options)
/// ```
public struct StoreOptions: Sendable, Equatable {
  /// The engine's options, which the properties from ``sync`` to ``indexFiles`` read and
  /// set: the store opens its ``LogStore`` with these. The other properties are the store's
  /// own.
  public var logStoreOptions: LogStore.Options

  /// When writes reach stable storage. Default `.never`: each write is handed to the
  /// operating system before the call returns, which survives the app crashing but not the
  /// device losing power. `.always` syncs every write (concurrent writers share syncs);
  /// `.interval(milliseconds:)` syncs in the background at most that often (on Apple
  /// platforms with an ordering barrier, not a full flush: docs/PLATFORMS.md).
  public var sync: SyncPolicy {
    get { logStoreOptions.sync }
    set { logStoreOptions.sync = newValue }
  }
  /// Open without the store's lock; every write throws `.readOnly`. Default `false`. Safe
  /// beside a writer in another process (an app extension beside its app): the store is a
  /// snapshot, the state after some prefix of the writer's operations, fixed while it opens;
  /// open it again to see later writes.
  public var readOnly: Bool {
    get { logStoreOptions.readOnly }
    set { logStoreOptions.readOnly = newValue }
  }
  /// What opening does with damaged records. Default `.salvage`: skip and count them
  /// (`statistics().damagedRecords`). `.fail` throws `.corrupted` naming file and offset.
  public var corruption: CorruptionPolicy {
    get { logStoreOptions.corruption }
    set { logStoreOptions.corruption = newValue }
  }
  /// When space is reclaimed. Default `.automatic` (in the background once garbage passes
  /// 25% of the disk bytes and 4 MiB); `.whenGarbageExceeds(fraction:)` sets the fraction;
  /// `.manual` leaves it to ``KeyValueStore/compact()``.
  public var compaction: CompactionPolicy {
    get { logStoreOptions.compaction }
    set { logStoreOptions.compaction = newValue }
  }
  /// A segment file is sealed and a new one started past this many bytes. Default 64 MiB,
  /// between 4 KiB and 2 GiB (1 GiB where `Int` is 32 bits: watchOS on arm64_32).
  public var maxSegmentSize: Int {
    get { logStoreOptions.maxSegmentSize }
    set { logStoreOptions.maxSegmentSize = newValue }
  }
  /// Check each value's checksum when it is read, not only at open. Default `true`.
  public var verifyChecksumsOnRead: Bool {
    get { logStoreOptions.verifyChecksumsOnRead }
    set { logStoreOptions.verifyChecksumsOnRead = newValue }
  }
  /// Keep a persisted index beside the data, so that an open maps it and reads only what was
  /// written after it instead of every record (``LogStore/Options/indexFiles``). Default
  /// `true`.
  public var indexFiles: Bool {
    get { logStoreOptions.indexFiles }
    set { logStoreOptions.indexFiles = newValue }
  }
  /// Who opens the store at once. Default `.oneProcess`: one writing process, which holds the
  /// store's lock while it is open; other processes open it read-only. `.manyProcesses`: an
  /// app, its widgets and its extensions all read and write at once, no lock is held between
  /// calls, and every call sees what any process completed before it began
  /// (docs/CONCURRENCY.md, "Many processes"). Every process must open the store in the same
  /// mode: an open in the other one throws `.locked` while the store is in use.
  public var sharing: StoreSharing {
    get { logStoreOptions.sharing }
    set { logStoreOptions.sharing = newValue }
  }

  /// The data-protection class of the store's directory and files on iOS, iPadOS, tvOS,
  /// watchOS and visionOS. Default `.completeUntilFirstUserAuthentication`, the system's own
  /// default for app data: the store works in the background once the device has been
  /// unlocked after starting. A writer's open sets it on the directory and the files there;
  /// files created later inherit it. Ignored by read-only opens, on macOS and off Apple
  /// platforms. See docs/PLATFORMS.md before choosing `.complete`.
  public var fileProtection: FileProtection
  /// How ``fileProtection`` is read and set: the system's calls, or none where there is no data
  /// protection (``FileProtectionAccess/system``); tests give their own.
  package var protectionAccess: FileProtectionAccess? = .system
  /// How `Encodable` values are stored and `Decodable` ones read: their dates, `Data` and
  /// keys. Default `CodingStrategies()`, `JSONEncoder`'s and `JSONDecoder`'s defaults: what
  /// is stored is what `JSONEncoder()` writes, and `JSONDecoder()` reads it. Not recorded in
  /// the store: open it with the strategies it was written with.
  public var coding: CodingStrategies

  /// Options with each setting as given, the others at their defaults.
  public init(
    sync: SyncPolicy = .never, readOnly: Bool = false, corruption: CorruptionPolicy = .salvage,
    compaction: CompactionPolicy = .automatic, maxSegmentSize: Int = 64 << 20,
    verifyChecksumsOnRead: Bool = true,
    fileProtection: FileProtection = .completeUntilFirstUserAuthentication,
    indexFiles: Bool = true, coding: CodingStrategies = CodingStrategies(),
    sharing: StoreSharing = .oneProcess
  ) {
    logStoreOptions = LogStore.Options(
      sync: sync, readOnly: readOnly, corruption: corruption, compaction: compaction,
      maxSegmentSize: maxSegmentSize, verifyChecksumsOnRead: verifyChecksumsOnRead,
      indexFiles: indexFiles, sharing: sharing)
    self.fileProtection = fileProtection
    self.coding = coding
  }

  /// Whether `a` and `b` say the same. (`LogStore.Options` is not `Equatable`: the file system
  /// it holds, which tests substitute, is not a value to compare.)
  public static func == (a: StoreOptions, b: StoreOptions) -> Bool {
    a.sync == b.sync && a.readOnly == b.readOnly && a.corruption == b.corruption
      && a.compaction == b.compaction && a.maxSegmentSize == b.maxSegmentSize
      && a.verifyChecksumsOnRead == b.verifyChecksumsOnRead && a.indexFiles == b.indexFiles
      && a.fileProtection == b.fileProtection && a.coding == b.coding && a.sharing == b.sharing
  }
}
