/// An embedded, log-structured key-value store: named tables of byte keys to byte values.
///
/// Every change is appended to a segment file as a checksummed record; an in-memory hash
/// index maps each key to its latest record. Opening a store replays its segments; a torn
/// write at the end of the log (a crash mid-write) is cut off, and damaged records elsewhere
/// are skipped or refused according to ``Options/corruption``. Compaction rewrites the live
/// records and drops the rest, in the background or on ``compact()``.
///
/// ```swift
/// let store = try LogStore(path: "/tmp/example.store")
/// try store.createTable("users")
/// try store.put(Array("tangqiao".utf8), forKey: Array("1".utf8), in: "users")
/// let name = try store.value(forKey: Array("1".utf8), in: "users")  // the bytes of "tangqiao"
/// try store.close()
/// ```
///
/// A `LogStore` is safe to use from any number of threads. Readers wait for writers only while
/// an index entry changes, and for each other only for a moment on the expiry clock, which a
/// read of an item with an expiry asks. One process at a time may open a
/// store for writing; another gets ``LogStoreError/Code/locked``. A store opened with
/// ``Options/readOnly`` takes no lock and may be opened beside a writer in another process or
/// this one: it sees a snapshot, the state after some prefix of the writer's operations, fixed
/// while it opens (docs/CONCURRENCY.md, rule 8).
///
/// Every method throws ``LogStoreError``; after ``close()`` every method throws
/// ``LogStoreError/Code/closed``.
public final class LogStore: Sendable {
  /// The store's directory.
  public let path: String
  let engine: StoreEngine

  /// The options the store was opened with.
  public var options: Options { engine.options }

  /// How opening the store rebuilt its index (records scanned, hint entries read).
  package var openReport: OpenReport { engine.openReport }

  /// Opens the store in directory `path`, creating it (and the directory) if missing, unless
  /// `options.readOnly` is set.
  ///
  /// - Throws: ``LogStoreError/Code/locked`` if another process (or another open store in
  ///   this one) has it open for writing; ``LogStoreError/Code/storeNotFound`` for a
  ///   read-only open of a missing store; ``LogStoreError/Code/corrupted`` with
  ///   ``CorruptionPolicy/fail`` and damage, or for files of a newer format;
  ///   ``LogStoreError/Code/io`` when a file cannot be read.
  public init(path: String, options: Options = Options()) throws(LogStoreError) {
    let path = StorePath.trimmingTrailingSlashes(path)
    self.path = path
    engine = try StoreEngine(directory: path, options: options)
  }

  deinit { try? engine.close() }

  /// Syncs what was written, releases every file and the lock. Later calls throw
  /// ``LogStoreError/Code/closed``; calling `close()` again is harmless.
  public func close() throws(LogStoreError) { try engine.close() }

  /// Forces everything written so far onto stable storage.
  public func sync() throws(LogStoreError) { try engine.sync() }

  /// A read-only store opened as a snapshot moves it forward to the store's current state:
  /// it reads the store's files again as an open does (the index file, hint files, and the log
  /// after them), and reads in progress finish on the snapshot they began on. A store open for
  /// writing is always current, and this does nothing.
  public func refresh() throws(LogStoreError) { try engine.refresh() }

  /// How the store at `path` is in use by live processes right now: ``StoreSharing/oneProcess``
  /// while a `.oneProcess` writer has it open, ``StoreSharing/manyProcesses`` while writers
  /// in that mode have it open, nil when no writer does (then an open in either mode
  /// succeeds). A tool that works beside apps (`ytkkv`) opens the store in the mode this
  /// returns; the answer can change as soon as it is given.
  public static func sharingInUse(at path: String) -> StoreSharing? {
    ProcessSharing.sharingInUse(directory: path, fileSystem: SystemFileSystem())
  }

  // MARK: Tables

  /// Creates a table; creating one that exists does nothing (and writes nothing).
  ///
  /// - Throws: ``LogStoreError/Code/invalidTableName`` unless the name is 1 to 255 bytes of
  ///   UTF-8 without NUL.
  public func createTable(_ name: String) throws(LogStoreError) {
    try tableChange(.createTable, name)
  }

  /// Removes every key of a table, keeping the table; one record, so it is atomic.
  public func clearTable(_ name: String) throws(LogStoreError) {
    try tableChange(.clearTable, name)
  }

  /// Removes a table and every key in it; one record, so it is atomic.
  public func dropTable(_ name: String) throws(LogStoreError) {
    try tableChange(.dropTable, name)
  }

  /// Creates a table whose puts expire `defaultLifetime` microseconds after they are written
  /// unless they say otherwise (0: never), or gives an existing table that default (puts
  /// written before keep their expiry). Writes nothing when the table exists with that
  /// default already. A ``WriteBatch``'s puts do not get the default: each says its own.
  ///
  /// - Throws: ``LogStoreError/Code/invalidArgument`` for a negative lifetime.
  public func createTable(_ name: String, defaultLifetime: Int64) throws(LogStoreError) {
    guard defaultLifetime >= 0 else {
      throw LogStoreError(.invalidArgument, "a table's default lifetime cannot be negative")
    }
    try tableChange(.createTable, name, expiry: defaultLifetime)
  }

  /// The default lifetime of a table's puts in microseconds (0: none); see
  /// ``createTable(_:defaultLifetime:)``.
  public func lifetime(of table: String) throws(LogStoreError) -> Int64 {
    try engine.readIndex { keys throws(LogStoreError) in
      guard let index = keys.table(table) else {
        throw engine.index.missingTable(table, in: keys)
      }
      return index.lifetime
    }
  }

  private func tableChange(_ kind: RecordKind, _ name: String, expiry: Int64? = nil)
    throws(LogStoreError)
  {
    try name.withUTF8Bytes { table throws(LogStoreError) in
      try engine.commit(
        .single(
          kind: kind, table: table, key: .empty, value: .empty, timestamp: nil, expiry: expiry))
    }
  }

  /// The clock expiries are judged by: now, in microseconds since 1970, never going back.
  /// Give a put an expiry of this plus a lifetime.
  public func expiryNow() -> Int64 { engine.index.clock.now() }

  /// The clock itself, for tests that move it forward.
  package var expiryClock: ExpiryClock { engine.index.clock }

  /// Whether the table exists.
  ///
  /// - Throws: ``LogStoreError/Code/invalidTableName`` for a name no table can have.
  public func tableExists(_ name: String) throws(LogStoreError) -> Bool {
    try name.withUTF8Bytes { bytes throws(LogStoreError) in try Mutation.validateTableName(bytes) }
    return try engine.readIndex { keys throws(LogStoreError) in keys.contains(name) }
  }

  /// The names of all tables, sorted by their UTF-8 bytes.
  public func tableNames() throws(LogStoreError) -> [String] {
    try engine.readIndex { keys throws(LogStoreError) in keys.tableNames() }
      .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
  }

  /// The number of keys in a table, less those that have expired.
  public func count(in table: String) throws(LogStoreError) -> Int {
    let now = engine.index.clock.now()
    return try engine.readCounts { keys throws(LogStoreError) in
      guard let index = keys.table(table) else {
        throw engine.index.missingTable(table, in: keys)
      }
      return index.liveCount(at: now).count
    }
  }

  // MARK: Keys

  /// Sets `key` in `table` to `value`.
  ///
  /// - Parameters:
  ///   - value: the bytes to store, at most 64 MiB.
  ///   - key: the key, at most 65,535 bytes.
  ///   - table: a table created before.
  ///   - timestamp: when the value was written; by default, now. Tools that copy data from
  ///     elsewhere pass the original time.
  ///   - expiresAt: when the value expires (by ``expiryNow()``'s clock): from then on the key
  ///     reads as missing, is not counted or listed, and compaction drops its record. Nil:
  ///     the table's default lifetime from now (``createTable(_:defaultLifetime:)``), or
  ///     never if it has none; ``Timestamp/never``: never, whatever the table's default.
  /// - Throws: ``LogStoreError/Code/tableNotFound``; ``LogStoreError/Code/invalidArgument``
  ///   for a key over 65,535 bytes or a value over 64 MiB.
  public func put(
    _ value: [UInt8], forKey key: [UInt8], in table: String, timestamp: Timestamp? = nil,
    expiresAt: Timestamp? = nil
  ) throws(LogStoreError) {
    try key.withBytes { key throws(LogStoreError) in
      try value.withBytes { value throws(LogStoreError) in
        try put(
          key: key, value: value, table: table, timestamp: timestamp,
          expiry: expiresAt?.microsecondsSince1970)
      }
    }
  }

  /// ``put(_:forKey:in:timestamp:expiresAt:)`` on borrowed bytes, without copying them first;
  /// `expiry` in microseconds since 1970.
  package func put(
    key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, table: String,
    timestamp: Timestamp? = nil, expiry: Int64? = nil
  ) throws(LogStoreError) {
    try table.withUTF8Bytes { table throws(LogStoreError) in
      try engine.commit(
        .single(
          kind: .put, table: table, key: key, value: value, timestamp: timestamp, expiry: expiry))
    }
  }

  /// The value of `key` in `table`, or nil when it has none.
  public func value(forKey key: [UInt8], in table: String) throws(LogStoreError) -> [UInt8]? {
    try withValue(forKey: key, in: table) { Array($0) }
  }

  /// Calls `body` with the value of `key` in `table` where the store holds it, without copying
  /// it, and returns what `body` returns; nil, without calling `body`, when the key has no
  /// value.
  ///
  /// ```swift
  /// let length = try store.withValue(forKey: Array("user_1".utf8), in: "users") { $0.count }
  /// let name = try store.withValue(forKey: Array("user_1".utf8), in: "users") { bytes in
  ///   String(decoding: bytes, as: UTF8.self)
  /// }
  /// ```
  ///
  /// The bytes are the store's own (its mapping of the log), checked as every read checks them
  /// (checksum, table and key). They are valid only until `body` returns: `body` must not keep
  /// the buffer or a pointer into it, and copies what it keeps (`Array(value)`, a decoded
  /// value). `body` runs while the store's index is locked for reading, as LMDB's pointer lives
  /// in its read transaction: it must not call the store, and should be brief, since writes
  /// wait for it. ``value(forKey:in:)`` is this with `Array(value)`.
  ///
  /// - Throws: ``LogStoreError`` as ``value(forKey:in:)`` does (a record that fails its
  ///   checksum: ``LogStoreError/Code/corrupted``; no such table: `tableNotFound`).
  @inlinable
  public func withValue<R>(
    forKey key: [UInt8], in table: String, _ body: (_ value: UnsafeRawBufferPointer) -> R
  ) throws(LogStoreError) -> R? {
    // Inlinable, around a call that is not generic: a generic call from another module would
    // otherwise run unspecialized, looking up `R`'s metadata at every step (a third of a get).
    var result: R?
    try visitValue(forKey: key, in: table) { result = body($0) }
    return result
  }

  /// ``withValue(forKey:in:_:)`` without a generic result.
  @usableFromInline
  func visitValue(
    forKey key: [UInt8], in table: String, _ body: (UnsafeRawBufferPointer) -> Void
  ) throws(LogStoreError) {
    try key.withBytes { key throws(LogStoreError) in
      _ = try visitItem(forKey: key, in: table) { value, _, _ in body(value) }
    }
  }

  /// The value of `key` in `table` with the time it was written and when it expires, or nil.
  public func entry(forKey key: [UInt8], in table: String) throws(LogStoreError) -> Entry? {
    var entry: Entry?
    _ = try key.withBytes { keyBytes throws(LogStoreError) in
      try visitItem(forKey: keyBytes, in: table) { value, timestamp, expires in
        entry = Entry(key: key, value: Array(value), timestamp: timestamp, expires: expires)
      }
    }
    return entry
  }

  /// Calls `body` with the value of `key` (borrowed from the store's memory, valid only during
  /// the call) and its timestamp; nil when the key has none. `body` runs under the index's
  /// read lock and must not call the store.
  package func withValue<R>(
    forKey key: UnsafeRawBufferPointer, in table: String,
    _ body: (UnsafeRawBufferPointer, Timestamp) -> R
  ) throws(LogStoreError) -> R? {
    try engine.withRecord(key: key, table: table) {
      record throws(Never) -> R in
      body(record.value, Timestamp(microsecondsSince1970: record.timestamp))
    }?.get()
  }

  /// Calls `body` with the value of `key` (borrowed, as in ``withValue(forKey:in:_:)``), its
  /// timestamp and when it expires (nil: never); returns whether the key has a value (and
  /// `body` ran). Without a generic result, for callers in other modules: a generic call from
  /// outside this module runs unspecialized and looks up its result types' metadata at run
  /// time on every call.
  package func visitItem(
    forKey key: UnsafeRawBufferPointer, in table: String,
    _ body: (UnsafeRawBufferPointer, Timestamp, Timestamp?) -> Void
  ) throws(LogStoreError) -> Bool {
    try engine.withRecord(key: key, table: table) {
      record throws(Never) in
      body(
        record.value, Timestamp(microsecondsSince1970: record.timestamp),
        record.expiry.map(Timestamp.init(microsecondsSince1970:)))
    } != nil
  }

  /// The largest value a record holds (64 MiB).
  package static let maxValueLength = RecordLayout.maxValueLength

  /// Checks a table name, key and value against the limits a put enforces, without writing:
  /// for tools that want to report a bad item where they found it.
  public static func validate(table: String, key: [UInt8], value: [UInt8]) throws(LogStoreError) {
    try table.withUTF8Bytes { table throws(LogStoreError) in
      try key.withBytes { key throws(LogStoreError) in
        try value.withBytes { value throws(LogStoreError) in
          try Mutation.single(kind: .put, table: table, key: key, value: value, timestamp: nil)
            .validateArguments()
        }
      }
    }
  }

  /// Removes `key` from `table`; a missing key is not an error.
  public func delete(key: [UInt8], in table: String) throws(LogStoreError) {
    try key.withBytes { key throws(LogStoreError) in
      try delete(key: key, in: table)
    }
  }

  /// ``delete(key:in:)`` on borrowed bytes.
  package func delete(key: UnsafeRawBufferPointer, in table: String) throws(LogStoreError) {
    try table.withUTF8Bytes { table throws(LogStoreError) in
      try engine.commit(
        .single(kind: .delete, table: table, key: key, value: .empty, timestamp: nil))
    }
  }

  /// Removes every key of `table` that starts with `prefix` (byte for byte); one record, so
  /// it is atomic. An empty prefix removes every key.
  public func deletePrefix(_ prefix: [UInt8], in table: String) throws(LogStoreError) {
    try prefix.withBytes { prefix throws(LogStoreError) in
      try table.withUTF8Bytes { table throws(LogStoreError) in
        try engine.commit(
          .single(kind: .deletePrefix, table: table, key: prefix, value: .empty, timestamp: nil))
      }
    }
  }

  /// Applies every operation of `batch`, in order, as one record: all or nothing, also across
  /// a crash. An empty batch does nothing.
  ///
  /// - Throws: ``LogStoreError/Code/tableNotFound`` if an operation names a table that does
  ///   not exist at that point of the batch (nothing is written then).
  public func write(_ batch: WriteBatch) throws(LogStoreError) {
    // An empty batch writes nothing, but a closed or read-only store refuses it as any write.
    guard !batch.isEmpty else { return try engine.checkWritable() }
    try withUnsafePointer(to: batch) { batch throws(LogStoreError) in
      try engine.commit(.batch(batch))
    }
  }

  /// Writes puts into one table atomically, as one batch record (the record a
  /// ``WriteBatch`` of the same puts makes).
  package func write(_ puts: PackedPuts) throws(LogStoreError) {
    guard puts.count > 0 else { return try engine.checkWritable() }
    var puts = puts
    try withUnsafeMutablePointer(to: &puts) { puts throws(LogStoreError) in
      try engine.commit(.puts(puts))
    }
  }

  /// A key's value, the time it was written, and when it expires.
  public struct Entry: Sendable, Hashable {
    /// The key, as stored.
    public var key: [UInt8]
    /// The value, as stored.
    public var value: [UInt8]
    /// When the value was written (the wall clock at its put).
    public var timestamp: Timestamp
    /// When the value expires; nil: never.
    public var expires: Timestamp?

    /// An entry of `key` holding `value`, written at `timestamp`, expiring at `expires` (nil: never).
    public init(key: [UInt8], value: [UInt8], timestamp: Timestamp, expires: Timestamp? = nil) {
      self.key = key
      self.value = value
      self.timestamp = timestamp
      self.expires = expires
    }
  }

  /// Every key of `table` with its value and timestamp, sorted by key bytes.
  ///
  /// For a large table, ``forEachEntry(in:withPrefix:_:)`` visits the same entries without holding them
  /// all in memory at once.
  public func entries(in table: String) throws(LogStoreError) -> [Entry] {
    var entries: [Entry] = []
    try forEachItem(in: table) { key, value, timestamp, expires in
      entries.append(
        Entry(key: Array(key), value: Array(value), timestamp: timestamp, expires: expires))
      return true
    }
    return entries
  }

  /// Calls `body` with every key of `table`, its value and its timestamp, in the order of the
  /// keys' bytes, until `body` returns false.
  ///
  /// The key and value are borrowed, not copied: they are valid only during the call, and
  /// `body` copies what it keeps. Values are read one at a time, so visiting a table needs
  /// memory for its keys but not for all its values. The entries are those of the moment the
  /// call starts; writes made meanwhile (by `body` or other threads) do not change them. A
  /// value whose record fails its checksum ends the visit with
  /// ``LogStoreError/Code/corrupted``.
  ///
  /// With a `prefix`, only the keys that start with it are visited (the empty prefix: all).
  public func forEachEntry(
    in table: String, withPrefix prefix: [UInt8] = [],
    _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, _ timestamp: Timestamp)
      -> Bool
  ) throws(LogStoreError) {
    try prefix.withBytes { prefix throws(LogStoreError) in
      try engine.forEachEntry(in: table, withPrefix: prefix) { key, value, timestamp, _ in
        body(key, value, timestamp)
      }
    }
  }

  /// ``forEachEntry(in:withPrefix:_:)`` that also gives when each item expires (nil: never).
  package func forEachItem(
    in table: String, withPrefix prefix: [UInt8] = [], _ body: EntryVisitor
  ) throws(LogStoreError) {
    try prefix.withBytes { prefix throws(LogStoreError) in
      try engine.forEachEntry(in: table, withPrefix: prefix, body)
    }
  }

  /// Every key of `table` that starts with `prefix` (by default, every key), sorted by their
  /// bytes: the keys ``deletePrefix(_:in:)`` would remove.
  public func keys(in table: String, withPrefix prefix: [UInt8] = []) throws(LogStoreError)
    -> [[UInt8]]
  {
    var keys: [[UInt8]] = []
    try prefix.withBytes { prefix throws(LogStoreError) -> Void in
      try engine.forEachKey(
        in: table,
        restart: { count in
          keys = []
          if prefix.isEmpty { keys.reserveCapacity(count) }
        },
        { key, _ in if bytesHavePrefix(key, prefix) { keys.append(Array(key)) } })
    }
    keys.sort { a, b in a.withUnsafeBytes { a in b.withUnsafeBytes { b in bytesPrecede(a, b) } } }
    return keys
  }

  // MARK: Maintenance

  /// Rewrites the live records into new segments and deletes the old ones, reclaiming the
  /// space of overwritten and deleted data. Reads and writes go on meanwhile; they wait only
  /// while the index switches to the new files. Safe against crashes at any point.
  public func compact() throws(LogStoreError) { try engine.compact() }

  /// ``compact()``, calling `progress` now and then with the bytes of old segments processed
  /// so far and their total (on the calling thread). The records are copied in key order, not
  /// segment by segment: the bytes processed are the total's share that the records read so
  /// far stand for.
  public func compact(progress: (_ done: Int, _ total: Int) -> Void) throws(LogStoreError) {
    try withoutActuallyEscaping(progress) { progress throws(LogStoreError) in
      try engine.compact(progress: progress)
    }
  }

  /// Blocks until automatic compaction has caught up: no compaction running, garbage below
  /// the policy's threshold, and the index file that follows a compaction written. Under heavy
  /// writes the background compactor can fall
  /// behind; this waits for it (for tests, benchmarks, or before measuring disk use). Returns
  /// at once under ``CompactionPolicy/manual``. Throws the error of an automatic compaction
  /// that failed meanwhile (a full disk, say).
  public func waitForCompaction() throws(LogStoreError) { try engine.waitForCompaction() }

  /// Writes an index file of the store as it is now (docs/FORMAT.md, "Index files"), so that
  /// the next open maps it and reads only the log written after, instead of every record.
  /// Writes go on meanwhile. The store does this itself after each compaction and at `close()`
  /// when enough was written since the last one; call it after loading much data, say, to
  /// make the next launch fast at once. Does nothing when ``Options/indexFiles`` is off or an
  /// index file already covers the whole log.
  public func checkpoint() throws(LogStoreError) { try engine.checkpoint() }

  /// What the store holds and how much space it takes.
  public func statistics() throws(LogStoreError) -> StoreStatistics {
    try engine.statistics()
  }
}
