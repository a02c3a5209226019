/// A group of changes written as one record: after a crash, either all of them are in the
/// store or none is.
///
/// Operations apply in the order they were added, so a batch may create a table and then
/// put keys into it.
///
/// ```swift
/// var batch = WriteBatch()
/// batch.createTable("users")
/// batch.put(Array("tangqiao".utf8), forKey: Array("1".utf8), in: "users")
/// batch.delete(key: Array("2".utf8), in: "users")
/// try store.write(batch)
/// ```
public struct WriteBatch: Sendable, Equatable {
  /// One change in a batch.
  public enum Operation: Sendable, Equatable {
    /// With `timestamp` nil, the put is stamped with the time the batch is written.
    case put(table: String, key: [UInt8], value: [UInt8], timestamp: Timestamp?)
    /// A put that expires at `expiresAt` (``LogStore/put(_:forKey:in:timestamp:expiresAt:)``).
    case expiringPut(
      table: String, key: [UInt8], value: [UInt8], timestamp: Timestamp?, expiresAt: Timestamp)
    /// Removes `key` from `table`, if it is there.
    case delete(table: String, key: [UInt8])
    /// Removes every key of `table` that starts with `prefix`, byte for byte.
    case deletePrefix(table: String, prefix: [UInt8])
    /// Creates the table; nothing if it exists.
    case createTable(String)
    /// Removes every key of the table, keeping the table.
    case clearTable(String)
    /// Removes the table and its keys.
    case dropTable(String)
  }

  /// The operations, in the order they apply.
  public private(set) var operations: [Operation] = []

  /// An empty batch.
  public init() {}

  /// The number of operations.
  public var count: Int { operations.count }
  /// Whether the batch has no operation.
  public var isEmpty: Bool { operations.isEmpty }

  /// Sets `key` in `table` to `value`, stamped with `timestamp` (by default, the time the
  /// batch is written).
  /// With `expiresAt`, the key expires then (see ``LogStore/put(_:forKey:in:timestamp:expiresAt:)``).
  public mutating func put(
    _ value: [UInt8], forKey key: [UInt8], in table: String, timestamp: Timestamp? = nil,
    expiresAt: Timestamp? = nil
  ) {
    if let expiresAt {
      operations.append(
        .expiringPut(
          table: table, key: key, value: value, timestamp: timestamp, expiresAt: expiresAt))
    } else {
      operations.append(.put(table: table, key: key, value: value, timestamp: timestamp))
    }
  }

  /// Removes `key` from `table`, if it is there.
  public mutating func delete(key: [UInt8], in table: String) {
    operations.append(.delete(table: table, key: key))
  }

  /// Removes every key of `table` that starts with `prefix`, byte for byte.
  public mutating func deletePrefix(_ prefix: [UInt8], in table: String) {
    operations.append(.deletePrefix(table: table, prefix: prefix))
  }

  /// Creates the table `name`; nothing if it exists.
  public mutating func createTable(_ name: String) { operations.append(.createTable(name)) }
  /// Removes every key of the table `name`, keeping the table.
  public mutating func clearTable(_ name: String) { operations.append(.clearTable(name)) }
  /// Removes the table `name` and its keys.
  public mutating func dropTable(_ name: String) { operations.append(.dropTable(name)) }
  /// Adds `operation` after those already in the batch.
  public mutating func append(_ operation: Operation) { operations.append(operation) }
}

extension WriteBatch.Operation {
  var kind: RecordKind {
    switch self {
    case .put, .expiringPut: .put
    case .delete: .delete
    case .deletePrefix: .deletePrefix
    case .createTable: .createTable
    case .clearTable: .clearTable
    case .dropTable: .dropTable
    }
  }

  /// A put's timestamp, when it has one of its own.
  var timestamp: Timestamp? {
    switch self {
    case .put(_, _, _, let timestamp), .expiringPut(_, _, _, let timestamp, _): timestamp
    default: nil
    }
  }

  /// An expiring put's expiry, in microseconds since 1970; nil for `Timestamp.never`'s.
  var expiry: Int64? {
    guard case .expiringPut(_, _, _, _, let expiresAt) = self,
      expiresAt != Timestamp.never
    else { return nil }
    return expiresAt.microsecondsSince1970
  }

  var table: String {
    switch self {
    case .put(let table, _, _, _), .expiringPut(let table, _, _, _, _), .delete(let table, _),
      .deletePrefix(let table, _):
      table
    case .createTable(let table), .clearTable(let table), .dropTable(let table): table
    }
  }

  /// Calls `body` with the operation's table, key and value bytes.
  func withFields<R, E: Error>(
    _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws(E)
      -> R
  ) throws(E) -> R {
    var table = self.table
    let key: [UInt8]
    let value: [UInt8]
    switch self {
    case .put(_, let k, let v, _), .expiringPut(_, let k, let v, _, _): (key, value) = (k, v)
    case .delete(_, let k), .deletePrefix(_, let k): (key, value) = (k, [])
    default: (key, value) = ([], [])
    }
    // The standard library's `with…` functions rethrow untyped errors; carry the typed one
    // out through a Result.
    var result: Result<R, E>?
    table.withUTF8 { tableBytes in
      key.withUnsafeBytes { keyBytes in
        value.withUnsafeBytes { valueBytes in
          result = Result { () throws(E) -> R in
            try body(UnsafeRawBufferPointer(tableBytes), keyBytes, valueBytes)
          }
        }
      }
    }
    return try result!.get()
  }
}
