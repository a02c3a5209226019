import LogStore

/// This store, through the byte-level engine.
final class LogStoreEngine: Engine {
  let store: LogStore
  static let table = "t"

  convenience init(directory: String, durable: Bool) throws {
    try self.init(directory: directory, durable: durable, compaction: .automatic)
  }

  init(
    directory: String, durable: Bool, compaction: CompactionPolicy,
    verifyChecksumsOnRead: Bool = true, sharing: StoreSharing = .oneProcess
  ) throws {
    store = try LogStore(
      path: directory,
      options: LogStore.Options(
        sync: durable ? .always : .never, compaction: compaction,
        verifyChecksumsOnRead: verifyChecksumsOnRead, sharing: sharing))
    try store.createTable(Self.table)
  }

  func put(_ key: [UInt8], _ value: [UInt8]) throws {
    try store.put(value, forKey: key, in: Self.table)
  }

  func get(_ key: [UInt8]) throws -> Int? {
    try store.value(forKey: key, in: Self.table)?.count
  }

  func deletePrefix(_ prefix: [UInt8]) throws {
    try store.deletePrefix(prefix, in: Self.table)
  }

  /// Visits every item in key order and copies its value, as the peers' iterators do.
  func scan() throws -> Int {
    var count = 0
    try store.forEachEntry(in: Self.table) { _, value, _ in
      _ = Array(value)
      count += 1
      return true
    }
    return count
  }

  func compact() throws { try store.compact() }

  func close() throws { try store.close() }
}
