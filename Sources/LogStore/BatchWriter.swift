/// Writes many puts as a few atomic batches of at most 1,000 operations or 8 MiB of keys and
/// values: what bulk copies (`recover`, an import, `ytkkv load`) need. After an error, every
/// batch before it is in the store and nothing of the failing one.
package struct BatchWriter {
  package static let maxOperations = 1000
  package static let maxBytes = 8 << 20

  let store: LogStore
  private var batch = WriteBatch()
  private var bytes = 0

  package init(store: LogStore) { self.store = store }

  /// Adds the creation of a table, in the same batch as the puts that follow it.
  package mutating func createTable(_ name: String) {
    batch.createTable(name)
  }

  /// Adds a put, writing the batch so far first if the put would take it past a limit.
  package mutating func put(
    _ value: [UInt8], forKey key: [UInt8], in table: String, timestamp: Timestamp?,
    expiresAt: Timestamp? = nil
  ) throws(LogStoreError) {
    if batch.count >= Self.maxOperations || bytes + key.count + value.count > Self.maxBytes {
      try flush()
    }
    batch.put(value, forKey: key, in: table, timestamp: timestamp, expiresAt: expiresAt)
    bytes += key.count + value.count
  }

  /// Writes what is left.
  package mutating func flush() throws(LogStoreError) {
    guard !batch.isEmpty else { return }
    try store.write(batch)
    batch = WriteBatch()
    bytes = 0
  }
}
