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

/// What a store should hold: tables of string keys to string values.
package struct StoreModel: Equatable, Sendable, CustomStringConvertible {
  package var tables: [String: [String: String]] = [:]

  package init() {}

  package init(_ tables: [String: [String: String]]) { self.tables = tables }

  /// The model after `operations`, in order; an operation the store would refuse (a table
  /// that does not exist) changes nothing, as in the store.
  package init(applying operations: some Sequence<StoreOperation>) {
    for operation in operations { apply(operation) }
  }

  package mutating func apply(_ operation: StoreOperation) {
    switch operation {
    case .createTable(let table): if tables[table] == nil { tables[table] = [:] }
    case .put(let table, let key, let value):
      if tables[table] != nil { tables[table]![key] = value }
    case .expiringPut(let table, let key, let value, let expired):
      if tables[table] != nil { tables[table]![key] = expired ? nil : value }
    case .delete(let table, let key): tables[table]?[key] = nil
    case .deleteMany(let table, let keys): for key in keys { tables[table]?[key] = nil }
    case .deletePrefix(let table, let prefix):
      tables[table] = tables[table]?.filter { !$0.key.utf8.starts(with: prefix.utf8) }
    case .clearTable(let table): if tables[table] != nil { tables[table] = [:] }
    case .dropTable(let table): tables[table] = nil
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

  private mutating func applyMember(_ operation: WriteBatch.Operation) -> Bool {
    switch operation {
    case .createTable(let table):
      apply(.createTable(table))
      return true
    case .put(let table, let key, let value, _):
      guard tables[table] != nil else { return false }
      tables[table]![String(decoding: key, as: UTF8.self)] = String(decoding: value, as: UTF8.self)
    case .expiringPut(let table, let key, let value, _, let expiresAt):
      guard tables[table] != nil else { return false }
      tables[table]![String(decoding: key, as: UTF8.self)] =
        expiresAt.microsecondsSince1970 <= 1 ? nil : String(decoding: value, as: UTF8.self)
    case .delete(let table, let key):
      guard tables[table] != nil else { return false }
      tables[table]![String(decoding: key, as: UTF8.self)] = nil
    case .deletePrefix(let table, let prefix):
      guard tables[table] != nil else { return false }
      tables[table] = tables[table]!.filter { !$0.key.utf8.starts(with: prefix) }
    case .clearTable(let table):
      guard tables[table] != nil else { return false }
      tables[table] = [:]
    case .dropTable(let table):
      guard tables[table] != nil else { return false }
      tables[table] = nil
    }
    return true
  }

  /// Whether the store refuses `operation` (throws `tableNotFound`) because it names a table
  /// that does not exist at that point. An empty batch is never refused: it writes nothing.
  package func refuses(_ operation: StoreOperation) -> Bool {
    switch operation {
    case .createTable, .compact, .checkpoint: return false
    case .deleteMany(let table, let keys): return !keys.isEmpty && tables[table] == nil
    case .put(let table, _, _), .expiringPut(let table, _, _, _), .delete(let table, _),
      .deletePrefix(let table, _),
      .clearTable(let table), .dropTable(let table):
      return tables[table] == nil
    case .batch(let operations):
      var trial = self
      return !operations.allSatisfy { trial.applyMember($0) }
    }
  }

  /// What `store` holds, in the model's terms.
  package static func reading(_ store: LogStore) throws(LogStoreError) -> StoreModel {
    var model = StoreModel()
    for table in try store.tableNames() {
      var items: [String: String] = [:]
      for entry in try store.entries(in: table) {
        items[String(decoding: entry.key, as: UTF8.self)] = String(
          decoding: entry.value, as: UTF8.self)
      }
      model.tables[table] = items
    }
    return model
  }

  package var description: String {
    tables.keys.sorted().map { table in
      "\(table): "
        + (tables[table]!.keys.sorted().map { "\($0)=\(tables[table]![$0]!.prefix(10))" }.joined(
          separator: ", "))
    }.joined(separator: "; ")
  }
}
