import LogStore

/// One operation of a test workload, applied both to a store and to ``StoreModel``.
package enum StoreOperation: Sendable, Equatable, CustomStringConvertible {
  case createTable(String)
  case put(table: String, key: String, value: String)
  /// A put with an expiry: long past (the key reads as deleted at once, and compaction drops
  /// its record), or far ahead (it reads as any put).
  case expiringPut(table: String, key: String, value: String, expired: Bool)
  case delete(table: String, key: String)
  case deleteMany(table: String, keys: [String])
  case deletePrefix(table: String, prefix: String)
  case clearTable(String)
  case dropTable(String)
  case batch([WriteBatch.Operation])
  case compact
  /// Writes an index file (``LogStore/checkpoint()``); changes no data.
  case checkpoint

  package var description: String {
    switch self {
    case .createTable(let table): "createTable(\(table))"
    case .put(let table, let key, let value): "put(\(table)/\(key) = \(value.prefix(12))…)"
    case .expiringPut(let table, let key, let value, let expired):
      "expiringPut(\(table)/\(key) = \(value.prefix(12))…, \(expired ? "expired" : "later"))"
    case .delete(let table, let key): "delete(\(table)/\(key))"
    case .deleteMany(let table, let keys): "deleteMany(\(table), \(keys.count) keys)"
    case .deletePrefix(let table, let prefix): "deletePrefix(\(table)/\(prefix))"
    case .clearTable(let table): "clearTable(\(table))"
    case .dropTable(let table): "dropTable(\(table))"
    case .batch(let operations): "batch(\(operations.count) operations)"
    case .compact: "compact"
    case .checkpoint: "checkpoint"
    }
  }

  /// Performs the operation on `store`.
  package func apply(to store: LogStore) throws(LogStoreError) {
    switch self {
    case .createTable(let table): try store.createTable(table)
    case .put(let table, let key, let value):
      try store.put(Array(value.utf8), forKey: Array(key.utf8), in: table)
    case .expiringPut(let table, let key, let value, let expired):
      try store.put(
        Array(value.utf8), forKey: Array(key.utf8), in: table,
        expiresAt: StoreOperation.expiry(expired: expired))
    case .delete(let table, let key): try store.delete(key: Array(key.utf8), in: table)
    case .deleteMany(let table, let keys):
      var batch = WriteBatch()
      for key in keys { batch.delete(key: Array(key.utf8), in: table) }
      try store.write(batch)
    case .deletePrefix(let table, let prefix):
      try store.deletePrefix(Array(prefix.utf8), in: table)
    case .clearTable(let table): try store.clearTable(table)
    case .dropTable(let table): try store.dropTable(table)
    case .batch(let operations):
      var batch = WriteBatch()
      for operation in operations { batch.append(operation) }
      try store.write(batch)
    case .compact: try store.compact()
    case .checkpoint: try store.checkpoint()
    }
  }

  /// The expiry of an expiring put: 1970 plus a microsecond, or the year 3000.
  package static func expiry(expired: Bool) -> Timestamp {
    Timestamp(microsecondsSince1970: expired ? 1 : 32_503_680_000_000_000)
  }
}

/// A table name, key or value of ``StoreModel``: its bytes, which is how the store tells names
/// and keys apart. (As `String`s, canonically equivalent texts, `é` precomposed and decomposed,
/// would be one: a store that merged two such tables would match the model.) Written and shown
/// as text.
package struct ModelBytes: Hashable, Comparable, Sendable, ExpressibleByStringLiteral,
  CustomStringConvertible
{
  package var bytes: [UInt8]

  package init(_ bytes: [UInt8]) { self.bytes = bytes }
  package init(_ text: String) { bytes = Array(text.utf8) }
  package init(stringLiteral text: String) { self.init(text) }

  /// The bytes read as UTF-8.
  package var text: String { String(decoding: bytes, as: UTF8.self) }
  package var description: String { text }

  package static func < (a: ModelBytes, b: ModelBytes) -> Bool {
    a.bytes.lexicographicallyPrecedes(b.bytes)
  }
}

/// What a store should hold: tables of keys to values, each told apart by its bytes.
package struct StoreModel: Equatable, Sendable, CustomStringConvertible {
  package var tables: [ModelBytes: [ModelBytes: ModelBytes]] = [:]

  package init() {}

  package init(_ tables: [ModelBytes: [ModelBytes: ModelBytes]]) { self.tables = tables }

  /// The model after `operations`, in order; an operation the store would refuse (a table
  /// that does not exist) changes nothing, as in the store.
  package init(applying operations: some Sequence<StoreOperation>) {
    for operation in operations { apply(operation) }
  }

  package mutating func apply(_ operation: StoreOperation) {
    switch operation {
    case .createTable(let table): _ = applyMember(.createTable(table))
    case .clearTable(let table): _ = applyMember(.clearTable(table))
    case .dropTable(let table): _ = applyMember(.dropTable(table))
    case .put(let table, let key, let value):
      _ = applyMember(
        .put(table: table, key: Array(key.utf8), value: Array(value.utf8), timestamp: nil))
    case .expiringPut(let table, let key, let value, let expired):
      _ = applyMember(
        .expiringPut(
          table: table, key: Array(key.utf8), value: Array(value.utf8), timestamp: nil,
          expiresAt: StoreOperation.expiry(expired: expired)))
    case .delete(let table, let key): _ = applyMember(.delete(table: table, key: Array(key.utf8)))
    case .deleteMany(let table, let keys):
      for key in keys { _ = applyMember(.delete(table: table, key: Array(key.utf8))) }
    case .deletePrefix(let table, let prefix):
      _ = applyMember(.deletePrefix(table: table, prefix: Array(prefix.utf8)))
    case .batch(let operations):
      // A batch applies entirely or not at all: check it first the way the store does.
      var trial = self
      for member in operations {
        guard trial.applyMember(member) else { return }
      }
      self = trial
    case .compact, .checkpoint: break
    }
  }

  /// Applies one change; false (and nothing changed) when it names a table that does not
  /// exist, which the store refuses in a batch. (A table that exists is created again without
  /// a change.)
  private mutating func applyMember(_ operation: WriteBatch.Operation) -> Bool {
    switch operation {
    case .createTable(let table):
      let name = ModelBytes(table)
      if tables[name] == nil { tables[name] = [:] }
      return true
    case .put(let table, let key, let value, _):
      guard tables[ModelBytes(table)] != nil else { return false }
      tables[ModelBytes(table)]![ModelBytes(key)] = ModelBytes(value)
    case .expiringPut(let table, let key, let value, _, let expiresAt):
      guard tables[ModelBytes(table)] != nil else { return false }
      tables[ModelBytes(table)]![ModelBytes(key)] =
        expiresAt.microsecondsSince1970 <= 1 ? nil : ModelBytes(value)
    case .delete(let table, let key):
      guard tables[ModelBytes(table)] != nil else { return false }
      tables[ModelBytes(table)]![ModelBytes(key)] = nil
    case .deletePrefix(let table, let prefix):
      guard let items = tables[ModelBytes(table)] else { return false }
      tables[ModelBytes(table)] = items.filter { !$0.key.bytes.starts(with: prefix) }
    case .clearTable(let table):
      guard tables[ModelBytes(table)] != nil else { return false }
      tables[ModelBytes(table)] = [:]
    case .dropTable(let table):
      guard tables[ModelBytes(table)] != nil else { return false }
      tables[ModelBytes(table)] = nil
    }
    return true
  }

  /// Whether the store refuses `operation` (throws `tableNotFound`) because it names a table
  /// that does not exist at that point. An empty batch is never refused: it writes nothing.
  package func refuses(_ operation: StoreOperation) -> Bool {
    switch operation {
    case .createTable, .compact, .checkpoint: return false
    case .deleteMany(let table, let keys): return !keys.isEmpty && tables[ModelBytes(table)] == nil
    case .put(let table, _, _), .expiringPut(let table, _, _, _), .delete(let table, _),
      .deletePrefix(let table, _),
      .clearTable(let table), .dropTable(let table):
      return tables[ModelBytes(table)] == nil
    case .batch(let operations):
      var trial = self
      return !operations.allSatisfy { trial.applyMember($0) }
    }
  }

  /// What `store` holds, in the model's terms.
  package static func reading(_ store: LogStore) throws(LogStoreError) -> StoreModel {
    var model = StoreModel()
    for table in try store.tableNames() {
      var items: [ModelBytes: ModelBytes] = [:]
      for entry in try store.entries(in: table) {
        items[ModelBytes(entry.key)] = ModelBytes(entry.value)
      }
      model.tables[ModelBytes(table)] = items
    }
    return model
  }

  package var description: String {
    tables.keys.sorted().map { table in
      let items = tables[table]!.sorted { $0.key < $1.key }
      return "\(table): "
        + items.map { "\($0.key)=\($0.value.text.prefix(10))" }.joined(separator: ", ")
    }.joined(separator: "; ")
  }
}
