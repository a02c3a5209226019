/// One change on its way into the log: a single record or a batch.
///
/// A change refers to the caller's memory (its bytes, or its batch) and is only valid during
/// the call that made it; the writer encodes it while the caller waits. It holds no reference
/// of its own, so that passing it through the commit's steps copies a few words each time,
/// and nothing is retained or released.
enum Mutation {
  /// `expiry`: a put's expiry, or a table creation's default lifetime (see
  /// ``Record/expiry``); nil for none.
  case single(
    kind: RecordKind, table: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer,
    value: UnsafeRawBufferPointer, timestamp: Timestamp?, expiry: Int64? = nil)
  case batch(UnsafePointer<WriteBatch>)
  /// Puts into one table, written as a batch record. The commit makes their expiry final in
  /// place (a table's default lifetime), before they are appended.
  case puts(UnsafeMutablePointer<PackedPuts>)

  /// Bytes of the encoded record, checked against the limit of a batch: taken once a change's
  /// expiries are final (a table's default lifetime adds a field to each of its puts), just
  /// before it is appended.
  func checkedLength() throws(LogStoreError) -> Int {
    let length = encodedLength
    if case .single = self { return length }
    try Self.checkBatchLength(length - RecordLayout.headerSize)
    return length
  }

  /// Bytes of the encoded record.
  var encodedLength: Int {
    switch self {
    case .single(_, let table, let key, let value, _, let expiry):
      return RecordLayout.length(
        table: table.count, key: key.count, value: value.count, expiry: expiry)
    case .batch(let batch):
      return RecordLayout.headerSize + Self.membersLength(batch.pointee)
    case .puts(let puts):
      return RecordLayout.headerSize + Self.membersLength(puts.pointee)
    }
  }

  /// Whether it creates, clears or drops a table (``SharedState/Commit/tableChanges``).
  var changesTables: Bool {
    switch self {
    case .single(let kind, _, _, _, _, _):
      return kind == .createTable || kind == .clearTable || kind == .dropTable
    case .batch(let batch):
      return batch.pointee.operations.contains {
        switch $0 {
        case .createTable, .clearTable, .dropTable: true
        default: false
        }
      }
    case .puts:
      return false
    }
  }

  /// Sequence numbers the record takes: one, or one per batch member.
  var sequenceCount: Int {
    switch self {
    case .single: 1
    case .batch(let batch): batch.pointee.count
    case .puts(let puts): puts.pointee.count
    }
  }

  /// The bytes of the batch's members, or any number over the batch limit once the sum
  /// passes it: the sum stops there, so that it cannot overflow where `Int` is 32 bits (each
  /// member is already checked to be under 65 MiB).
  private static func membersLength(_ batch: WriteBatch) -> Int {
    var total = 0
    for operation in batch.operations {
      let key: Int
      let value: Int
      switch operation {
      case .put(_, let k, let v, _), .expiringPut(_, let k, let v, _, _):
        (key, value) = (k.count, v.count)
      case .delete(_, let k), .deletePrefix(_, let k): (key, value) = (k.count, 0)
      case .createTable, .clearTable, .dropTable: (key, value) = (0, 0)
      }
      total += RecordLayout.length(
        table: operation.table.utf8.count, key: key, value: value, expiry: operation.expiry)
      if total > RecordLayout.maxBatchLength { break }
    }
    return total
  }

  /// ``membersLength(_:)-(WriteBatch)`` of packed puts.
  private static func membersLength(_ puts: PackedPuts) -> Int {
    let table = puts.table.utf8.count
    var total = 0
    var keyStart = 0
    var valueStart = 0
    for end in puts.ends {
      total += RecordLayout.length(
        table: table, key: end.key - keyStart, value: end.value - valueStart,
        expiry: puts.expiry)
      if total > RecordLayout.maxBatchLength { break }
      keyStart = end.key
      valueStart = end.value
    }
    return total
  }

  /// Checks names and sizes before anything is locked or written; a batch's total length is
  /// checked once its expiries are final (``checkedLength()``).
  func validateArguments() throws(LogStoreError) {
    switch self {
    case .single(let kind, let table, let key, let value, _, _):
      try Self.validate(kind: kind, table: table, key: key, value: value)
    case .batch(let batch):
      for operation in batch.pointee.operations {
        try operation.withFields { table, key, value throws(LogStoreError) in
          try Self.validate(kind: operation.kind, table: table, key: key, value: value)
        }
      }
    case .puts(let puts):
      try puts.pointee.checkEnds()
      try puts.pointee.table.withUTF8Bytes { table throws(LogStoreError) in
        try Self.validateTableName(table)
      }
      var failure: LogStoreError?
      puts.pointee.forEachPut { key, value, _ in
        guard failure == nil else { return }
        do throws(LogStoreError) {
          try Self.validate(kind: .put, table: nil, key: key, value: value)
        } catch {
          failure = error
        }
      }
      if let failure { throw failure }
    }
  }

  private static func checkBatchLength(_ length: Int) throws(LogStoreError) {
    guard length <= RecordLayout.maxBatchLength else {
      throw LogStoreError(
        .invalidArgument,
        "the batch encodes to \(length) bytes; the limit is \(RecordLayout.maxBatchLength)")
    }
  }

  private static func validate(
    kind: RecordKind, table: UnsafeRawBufferPointer?, key: UnsafeRawBufferPointer,
    value: UnsafeRawBufferPointer
  ) throws(LogStoreError) {
    if let table { try validateTableName(table) }
    guard key.count <= RecordLayout.maxKeyLength else {
      throw LogStoreError(
        .invalidArgument,
        "a key is \(key.count) bytes; the limit is \(RecordLayout.maxKeyLength) bytes")
    }
    guard value.count <= RecordLayout.maxValueLength else {
      throw LogStoreError(
        .invalidArgument,
        "a value is \(value.count) bytes; the limit is \(RecordLayout.maxValueLength) bytes (64 MiB)"
      )
    }
  }

  /// A table name is 1 to 255 bytes of UTF-8 with no NUL byte.
  static func validateTableName(_ name: UnsafeRawBufferPointer) throws(LogStoreError) {
    guard name.count >= 1, name.count <= RecordLayout.maxTableLength, !name.contains(0) else {
      // Control characters (a NUL above all) are shown escaped, not printed raw.
      let shown = String(decoding: name.prefix(40), as: UTF8.self).unicodeScalars.map {
        $0.value < 0x20 || $0.value == 0x7F ? $0.escaped(asASCII: true) : String($0)
      }.joined()
      throw LogStoreError(
        .invalidTableName,
        "invalid table name \"\(shown)\(name.count > 40 ? "…" : "")\" (\(name.count) bytes): "
          + "a table name is 1 to 255 bytes of UTF-8 without NUL characters")
    }
  }

  /// Encodes the record into `destination` (exactly ``encodedLength`` bytes).
  func encode(
    into destination: UnsafeMutableRawBufferPointer, sequence: UInt64, now: Timestamp,
    salt: UInt32
  ) {
    switch self {
    case .single(let kind, let table, let key, let value, let timestamp, let expiry):
      RecordCodec.encode(
        kind: kind, sequence: sequence,
        timestamp: (timestamp ?? now).microsecondsSince1970, table: table, key: key,
        value: value, expiry: expiry, salt: salt, into: destination)
    case .batch(let batch):
      RecordCodec.encodeBatch(
        sequence: sequence, timestamp: now.microsecondsSince1970, salt: salt, into: destination
      ) { members in
        for operation in batch.pointee.operations {
          operation.withFields { table, key, value in
            members.append(
              kind: operation.kind,
              timestamp: (operation.timestamp ?? now).microsecondsSince1970, table: table,
              key: key, value: value, expiry: operation.expiry)
          }
        }
      }
    case .puts(let puts):
      var tableName = puts.pointee.table
      tableName.withUTF8 { tableBytes in
        RecordCodec.encodeBatch(
          sequence: sequence, timestamp: now.microsecondsSince1970, salt: salt,
          into: destination
        ) { members in
          puts.pointee.forEachPut { key, value, timestamp in
            members.append(
              kind: .put, timestamp: (timestamp ?? now).microsecondsSince1970,
              table: UnsafeRawBufferPointer(tableBytes), key: key, value: value,
              expiry: puts.pointee.expiry)
          }
        }
      }
    }
  }

  /// Calls `body` with the kind and table of each record, in order, and for a table's creation
  /// the default lifetime it gives (nil: none given): what the writer checks against the tables
  /// that exist.
  func forEachTableUse(
    _ body: (RecordKind, UnsafeRawBufferPointer, _ lifetime: Int64?) throws(LogStoreError) -> Void
  ) throws(LogStoreError) {
    switch self {
    case .single(let kind, let table, _, _, _, let expiry):
      try body(kind, table, kind == .createTable ? expiry : nil)
    case .batch(let batch):
      for operation in batch.pointee.operations {
        try operation.withFields { table, _, _ throws(LogStoreError) in
          try body(operation.kind, table, nil)
        }
      }
    case .puts(let puts):
      try puts.pointee.table.withUTF8Bytes { table throws(LogStoreError) in
        try body(.put, table, nil)
      }
    }
  }

  /// This change with its puts' expiries final, for puts into a table whose default lifetime
  /// is `lifetime` (µs; 0: none): a put that names no expiry gets the lifetime from `now()`
  /// (none if that passes the largest time), and one that says never (``Timestamp/never``) gets
  /// no expiry field. Packed puts get theirs in place, in the caller's memory; a batch's puts
  /// keep their own (a ``WriteBatch``'s puts do not get the default:
  /// ``LogStore/createTable(_:defaultLifetime:)``).
  func withFinalExpiry(lifetime: Int64, now: () -> Int64) -> Mutation {
    func final(_ expiry: Int64?) -> Int64? {
      if expiry == Timestamp.never.microsecondsSince1970 { return nil }
      guard expiry == nil, lifetime > 0 else { return expiry }
      let (sum, overflow) = now().addingReportingOverflow(lifetime)
      return overflow ? nil : sum
    }
    switch self {
    case .single(.put, let table, let key, let value, let timestamp, let expiry):
      let resolved = final(expiry)
      guard resolved != expiry else { return self }
      return .single(
        kind: .put, table: table, key: key, value: value, timestamp: timestamp, expiry: resolved)
    case .puts(let puts):
      puts.pointee.expiry = final(puts.pointee.expiry)
      return self
    default:
      return self
    }
  }
}
