/// One store under test, driven through its own API: the same work for every engine.
///
/// Keys and values arrive as prepared byte arrays so that no engine pays for making them.
protocol Engine: AnyObject {
  /// Opens (creating if needed) a store in `directory`. With `durable`, every write must be
  /// on stable storage before it returns.
  init(directory: String, durable: Bool) throws
  func put(_ key: [UInt8], _ value: [UInt8]) throws
  /// Reads the value of `key` into memory the caller owns; returns its length, or nil.
  func get(_ key: [UInt8]) throws -> Int?
  /// Deletes every key that starts with `prefix`.
  func deletePrefix(_ prefix: [UInt8]) throws
  /// Reads every item; returns how many there were.
  func scan() throws -> Int
  func close() throws
  /// Brings the store to its compacted state, as its own compaction does (LevelDB and RocksDB:
  /// a full compaction of the key range; this store: `compact()`, which also writes an index
  /// file); engines without one do nothing.
  func compact() throws
  /// Whether several threads may call `put` at once.
  static var allowsConcurrentWriters: Bool { get }
}

extension Engine {
  static var allowsConcurrentWriters: Bool { true }
  func compact() throws {}
}

/// An engine by name, as the command line gives it.
struct EngineKind: Hashable, Sendable, CustomStringConvertible {
  let name: String
  let summary: String
  let make: @Sendable (String, Bool) throws -> any Engine

  var description: String { name }

  static func == (a: EngineKind, b: EngineKind) -> Bool { a.name == b.name }
  func hash(into hasher: inout Hasher) { hasher.combine(name) }

  static let logStore = EngineKind(
    name: "logstore", summary: "this store, through LogStore (bytes)",
    make: { try LogStoreEngine(directory: $0, durable: $1) })
  static let sqliteYTK = EngineKind(
    name: "sqlite-ytk",
    summary: "SQLite as YTKKeyValueStore used it: default journal and synchronous settings",
    make: { try SQLiteEngine(directory: $0, durable: $1, tuned: false) })
  static let sqliteWAL = EngineKind(
    name: "sqlite-wal", summary: "SQLite with journal_mode=WAL, synchronous=NORMAL",
    make: { try SQLiteEngine(directory: $0, durable: $1, tuned: true) })
  static let levelDB = EngineKind(
    name: "leveldb", summary: "LevelDB, default options",
    make: { try LevelDBEngine(directory: $0, durable: $1) })
  static let lmdb = EngineKind(
    name: "lmdb", summary: "LMDB, default flags (MDB_NOSYNC when not durable)",
    make: { try LMDBEngine(directory: $0, durable: $1) })
  static let rocksDB = EngineKind(
    name: "rocksdb", summary: "RocksDB, default options",
    make: { try RocksDBEngine(directory: $0, durable: $1) })
  static let hardware = EngineKind(
    name: "hardware",
    summary: "the limit: one write(2) per put (and fdatasync when durable), one pread(2) per get",
    make: { try HardwareEngine(directory: $0, durable: $1) })

  static let all: [EngineKind] = [
    .logStore, .sqliteYTK, .sqliteWAL, .levelDB, .lmdb, .rocksDB, .hardware,
  ]
}

struct BenchmarkError: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}
