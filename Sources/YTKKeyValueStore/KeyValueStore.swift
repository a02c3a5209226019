import LogStore

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// A store of tables of JSON values by id: the API of YTKKeyValueStore, on a log-structured
/// engine of checksummed, append-only segment files instead of SQLite.
///
/// ```swift
/// import YTKKeyValueStore
///
/// let store = try KeyValueStore(path: "test.db")
/// let tableName = "user_table"
/// try store.createTable(tableName)
/// let user: JSONValue = ["id": 1, "name": "tangqiao", "age": 30]
/// try store.put(user, id: "1", into: tableName)
/// let queryUser = try store.object(id: "1", from: tableName)
/// print("query data result: \(queryUser!)")  // {"age":30,"id":1,"name":"tangqiao"}
/// ```
///
/// A store is a directory. Values are kept as UTF-8 JSON text the way YTKKeyValueStore kept
/// them: an object or array as itself (object keys sorted, so equal values are equal bytes),
/// a string `s` put with ``put(string:id:into:expiresAfter:)`` as `["s"]`, a number `n` as `[n]`.
///
/// `KeyValueStore` is `Sendable`: share one instance between threads. Reads wait for each
/// other only for a moment on the expiry clock, when they read an item with an expiry
/// (docs/DESIGN.md, "Locks"). One process at a time may open a store for writing; another gets `.locked`.
/// Every call throws ``KeyValueStoreError``; after ``close()``, `.closed`.
public final class KeyValueStore: Sendable {
  /// The ``LogStore`` underneath, for byte-level access (`import LogStore`): the same store,
  /// whose keys and values are bytes.
  public let logStore: LogStore

  /// The store's directory.
  public var path: String { logStore.path }

  /// The longest id, in bytes of UTF-8.
  public static let maxIDLength = 65_535

  /// How `Encodable` values are stored and `Decodable` ones read (``StoreOptions/coding``).
  let coding: CodingStrategies

  /// The streams of ``changes(in:)``.
  let changeStreams = ChangeStreams()

  /// How data-protection classes are read and set (``StoreOptions/fileProtection``): a
  /// backup gives its copy the store's.
  let protectionAccess: FileProtectionAccess?

  /// Opens the store in directory `path`, creating it (and the directory) if missing.
  ///
  /// - Throws: `.locked` if another process has it open for writing; `.storeNotFound` for a
  ///   read-only open of a missing store; `.corrupted` (with `corruption: .fail`) for damage;
  ///   `.permissionDenied` if the system refuses access (permissions, a sandbox, or protected
  ///   data while the device is locked); `.io` if its files cannot be read or created.
  public init(path: String, options: StoreOptions = StoreOptions()) throws(KeyValueStoreError) {
    coding = options.coding
    protectionAccess = options.protectionAccess
    logStore = try bridge { () throws(LogStoreError) in
      try LogStore(path: path, options: options.logStoreOptions)
    }
    // Once the store is held: an open refused `.locked` must not change the class of files
    // that another process's store is using. The files this open made meanwhile hold nothing
    // yet that a fresh store did not.
    guard !options.readOnly, let access = options.protectionAccess else { return }
    do {
      try options.fileProtection.apply(
        toDirectory: logStore.path, fileSystem: options.logStoreOptions.fileSystem,
        access: access)
    } catch {
      try? logStore.close()
      throw KeyValueStoreError(error)
    }
  }

  /// Syncs and releases the store; later calls throw `.closed`. Calling it twice is fine.
  /// Every stream of ``changes(in:)`` ends.
  public func close() throws(KeyValueStoreError) {
    defer { changeStreams.finishAll() }
    try bridge { () throws(LogStoreError) in try logStore.close() }
  }

  deinit { changeStreams.finishAll() }

  /// Forces everything written so far onto stable storage.
  public func sync() throws(KeyValueStoreError) {
    try bridge { () throws(LogStoreError) in try logStore.sync() }
  }

  /// A store opened with `readOnly: true` (a snapshot) moves forward to the store's current
  /// state, as reopening it would; reads in progress finish on the snapshot they began on. A
  /// store open for writing is always current, and this does nothing.
  public func refresh() throws(KeyValueStoreError) {
    try bridge { () throws(LogStoreError) in try logStore.refresh() }
  }

  // MARK: - Tables

  /// Creates a table; creating an existing one does nothing. A name is 1 to 255 bytes of
  /// UTF-8 without NUL; spaces, quotes and any unicode are fine.
  public func createTable(_ name: String) throws(KeyValueStoreError) {
    try bridge { () throws(LogStoreError) in try logStore.createTable(name) }
  }

  /// Creates a table whose items expire `seconds` after each put that names no lifetime of
  /// its own; or gives an existing table that default (items already in it keep their
  /// expiry). `nil` removes the default: items put from then on without a lifetime never
  /// expire. Writes nothing when the table exists with that default already.
  ///
  /// ```swift
  /// try store.createTable("cache_table", expiresAfter: 3600)  // an hour
  /// try store.put(string: "<html>…</html>", id: "page:/home", into: "cache_table")
  /// ```
  ///
  /// - Throws: `.invalidArgument` for a lifetime that is not a positive number of seconds.
  public func createTable(_ name: String, expiresAfter seconds: Double?)
    throws(KeyValueStoreError)
  {
    let lifetime = try seconds.map { seconds throws(KeyValueStoreError) in
      try Self.lifetime(seconds) ?? 0
    }
    try bridge { () throws(LogStoreError) in
      try logStore.createTable(name, defaultLifetime: lifetime ?? 0)
    }
  }

  /// The default lifetime of the table's items in seconds, or nil when they never expire by
  /// default (``createTable(_:expiresAfter:)``).
  public func defaultLifetime(of table: String) throws(KeyValueStoreError) -> Double? {
    let lifetime = try bridge { () throws(LogStoreError) in try logStore.lifetime(of: table) }
    return lifetime == 0 ? nil : Double(lifetime) / 1_000_000
  }

  /// A lifetime of `seconds` in microseconds; nil for one too long to end (infinity, or
  /// beyond what the clock counts): never.
  static func lifetime(_ seconds: Double) throws(KeyValueStoreError) -> Int64? {
    guard seconds > 0 else {
      throw KeyValueStoreError(
        .invalidArgument,
        "a lifetime is a positive number of seconds (or .infinity for never), not \(seconds)")
    }
    let microseconds = (seconds * 1_000_000).rounded(.up)
    return microseconds < 9.0e18 ? Int64(microseconds) : nil
  }

  /// The expiry to store for a put given `seconds` (see ``put(_:id:into:expiresAfter:)``), in
  /// the engine's terms: nil for the table's default, `Timestamp.never`'s microseconds for
  /// never.
  private func expiry(after seconds: Double?) throws(KeyValueStoreError) -> Int64? {
    guard let seconds else { return nil }
    guard let lifetime = try Self.lifetime(seconds) else {
      return Timestamp.never.microsecondsSince1970
    }
    let (sum, overflow) = logStore.expiryNow().addingReportingOverflow(lifetime)
    return overflow ? Timestamp.never.microsecondsSince1970 : sum
  }

  /// Whether the table exists.
  public func tableExists(_ name: String) throws(KeyValueStoreError) -> Bool {
    try bridge { () throws(LogStoreError) in try logStore.tableExists(name) }
  }

  /// The names of all tables, sorted by their UTF-8 bytes. A table is its name's bytes: two
  /// names that are equal as `String`s but not in their bytes ("é" as one scalar and as "e"
  /// and a combining accent) are two tables, both listed.
  public func tableNames() throws(KeyValueStoreError) -> [String] {
    try bridge { () throws(LogStoreError) in try logStore.tableNames() }
  }

  /// Removes every item of a table and keeps the table. Atomic.
  public func clearTable(_ name: String) throws(KeyValueStoreError) {
    try bridge { () throws(LogStoreError) in try logStore.clearTable(name) }
  }

  /// Removes a table and its items. Atomic.
  public func dropTable(_ name: String) throws(KeyValueStoreError) {
    try bridge { () throws(LogStoreError) in try logStore.dropTable(name) }
  }

  // MARK: - Putting values

  /// Stores `object` under `id`, replacing any value there.
  ///
  /// With `expiresAfter`, the item expires that many seconds from now: from then on it reads
  /// as nil, is not counted or listed, and compaction removes it. `nil` (the default) gives it
  /// the table's default lifetime (``createTable(_:expiresAfter:)``), or none if the table
  /// has none; `.infinity` makes it never expire, whatever the table's default. Every put
  /// (string, number, `Encodable`, batch) takes the same argument.
  ///
  /// ```swift
  /// try store.put(["token": "abc"], id: "session", into: "cache_table", expiresAfter: 600)
  /// ```
  ///
  /// - Throws: `.tableNotFound`; `.invalidArgument` for an id over 65,535 bytes, a value over
  ///   64 MiB of JSON, a double that JSON cannot represent (NaN, infinity), or a lifetime
  ///   that is not a positive number of seconds.
  public func put(
    _ object: JSONValue, id: String, into table: String, expiresAfter seconds: Double? = nil
  ) throws(KeyValueStoreError) {
    let expiry = try expiry(after: seconds)
    try JSONWriter.withText(
      of: object, writeError: { Self.unstorable(id, in: table, $0) },
      body: { json throws(KeyValueStoreError) in
        try putEncoded(bytes: json, id: id, into: table, createdTime: nil, expiry: expiry)
      })
  }

  /// The error for a value the writer refused (``JSONWriter/withText(of:writeError:body:)``).
  private static func unstorable(_ id: String, in table: String, _ error: JSONCodecError)
    -> KeyValueStoreError
  {
    KeyValueStoreError(
      .invalidArgument,
      "the value for id \"\(shown(id))\" in table \"\(table)\" cannot be stored: "
        + error.message)
  }

  /// Stores a string, as YTKKeyValueStore did: `["s"]`. `expiresAfter` as in
  /// ``put(_:id:into:expiresAfter:)``.
  public func put(
    string: String, id: String, into table: String, expiresAfter seconds: Double? = nil
  ) throws(KeyValueStoreError) {
    let expiry = try expiry(after: seconds)
    try JSONWriter.withText(wrapping: string) { json throws(KeyValueStoreError) in
      try putEncoded(bytes: json, id: id, into: table, createdTime: nil, expiry: expiry)
    }
  }

  /// Stores an integer, as YTKKeyValueStore did: `[n]`. `expiresAfter` as in
  /// ``put(_:id:into:expiresAfter:)``.
  public func put(
    number: Int, id: String, into table: String, expiresAfter seconds: Double? = nil
  ) throws(KeyValueStoreError) {
    let expiry = try expiry(after: seconds)
    try JSONWriter.withText(wrapping: Int64(number)) { json throws(KeyValueStoreError) in
      try putEncoded(bytes: json, id: id, into: table, createdTime: nil, expiry: expiry)
    }
  }

  /// Stores a double, as YTKKeyValueStore did: `[n]`. It reads back bit for bit.
  /// `expiresAfter` as in ``put(_:id:into:expiresAfter:)``.
  public func put(
    number: Double, id: String, into table: String, expiresAfter seconds: Double? = nil
  ) throws(KeyValueStoreError) {
    try put(.array([.double(number)]), id: id, into: table, expiresAfter: seconds)
  }

  /// Stores any `Encodable` value as the JSON `JSONEncoder` makes of it (with the store's
  /// ``StoreOptions/coding`` strategies, by default its own: dates as seconds since 2001, data
  /// as Base64; URLs as their absolute string), in the stored form: keys sorted, no spaces.
  ///
  /// The value is encoded straight into the stored text by the store's own encoder, which
  /// writes exactly the bytes that `JSONEncoder`'s output would be stored as.
  ///
  /// - Throws: `.invalidArgument` when the value cannot be encoded (a NaN or infinite
  ///   floating-point number, nesting deeper than 511 levels as with `JSONEncoder`, an error
  ///   thrown by its `encode(to:)`), and as ``put(_:id:into:expiresAfter:)``.
  ///
  /// `expiresAfter` as in ``put(_:id:into:expiresAfter:)``.
  public func put<T: Encodable>(
    encodable value: T, id: String, into table: String, expiresAfter seconds: Double? = nil
  ) throws(KeyValueStoreError) {
    let expiry = try expiry(after: seconds)
    let json: [UInt8]
    do {
      json = try StoredJSONEncoder.encode(value, strategies: coding)
    } catch {
      throw KeyValueStoreError(
        .invalidArgument,
        "the \(T.self) for id \"\(Self.shown(id))\" cannot be encoded as JSON: \(error)")
    }
    try putEncoded(json, id: id, into: table, expiry: expiry)
  }

  /// Stores every object under its id in one atomic batch: after a crash, either all of
  /// them are in the store or none is. The items are written in the order of their ids'
  /// bytes, each stamped with the time of the batch.
  ///
  /// ```swift
  /// try store.put(["u1": ["name": "Ann"], "u2": ["name": "Bo"]], into: "users")
  /// ```
  ///
  /// A batch is written as one record, so a large one holds the store's writers while it is
  /// written; it must encode to at most the batch limit (`.invalidArgument` otherwise),
  /// 256 MiB: each item takes its JSON text, its id, the table's name and 28 bytes (8 more with
  /// an expiry).
  ///
  /// With `expiresAfter`, every item of the batch expires that many seconds from now; as in
  /// ``put(_:id:into:expiresAfter:)`` otherwise.
  ///
  /// - Throws: `.tableNotFound`; `.invalidArgument`, with nothing written, for an id or value
  ///   ``put(_:id:into:expiresAfter:)`` would refuse, or a batch over the limit.
  public func put(
    _ objects: [String: JSONValue], into table: String, expiresAfter seconds: Double? = nil
  ) throws(KeyValueStoreError) {
    try putBatch(objects, into: table, expiry: expiry(after: seconds)) {
      object, values throws(KeyValueStoreError) in
      try JSONWriter.withText(
        of: object.value, writeError: { Self.unstorable(object.key, in: table, $0) },
        body: { text throws(KeyValueStoreError) in values.append(contentsOf: text) })
    }
  }

  /// Stores every value under its id in one atomic batch, each encoded as
  /// ``put(encodable:id:into:expiresAfter:)`` encodes it; as ``put(_:into:expiresAfter:)`` otherwise.
  ///
  /// ```swift
  /// try store.put(encodables: ["u1": user1, "u2": user2], into: "users")
  /// ```
  public func put<T: Encodable>(
    encodables values: [String: T], into table: String, expiresAfter seconds: Double? = nil
  ) throws(KeyValueStoreError) {
    try putBatch(values, into: table, expiry: expiry(after: seconds)) {
      item, stored throws(KeyValueStoreError) in
      do {
        stored += try StoredJSONEncoder.encode(item.value, strategies: coding)
      } catch {
        throw KeyValueStoreError(
          .invalidArgument,
          "the \(T.self) for id \"\(Self.shown(item.key))\" cannot be encoded as JSON: \(error)")
      }
    }
  }

  /// Writes one batch of puts into `table`: the items in the order of their ids' bytes, each
  /// value appended to the batch's value bytes by `encode`. Nothing is written if one fails.
  private func putBatch<Value>(
    _ items: [String: Value], into table: String, expiry: Int64?,
    _ encode: ((key: String, value: Value), inout [UInt8]) throws(KeyValueStoreError) -> Void
  ) throws(KeyValueStoreError) {
    let items = Array(items)
    // The ids' bytes one after another, sorted through their positions: comparing the bytes
    // in place costs no string copies and no reference counting.
    var idBytes: [UInt8] = []
    var bounds = [0]  // item i's id is idBytes[bounds[i]..<bounds[i + 1]]
    bounds.reserveCapacity(items.count + 1)
    for item in items {
      try Self.checkID(item.key)
      idBytes += item.key.utf8
      bounds.append(idBytes.count)
    }
    let order = Self.byteOrder(of: idBytes, bounds: bounds)
    var puts = PackedPuts(table: table, expiry: expiry)
    puts.keys.reserveCapacity(idBytes.count)
    for index in order {
      try encode(items[index], &puts.values)
      puts.keys += idBytes[bounds[index]..<bounds[index + 1]]
      puts.ends.append(
        PackedPuts.End(key: puts.keys.count, value: puts.values.count, timestamp: nil))
    }
    try bridge { () throws(LogStoreError) in
      guard puts.count > 0 else {
        // Nothing to write; the table must still exist, as for any put.
        guard try logStore.tableExists(table) else {
          throw LogStoreError(.tableNotFound, "there is no table named \"\(table)\"")
        }
        return
      }
      try logStore.write(puts)
    }
  }

  /// The positions of the ids packed in `bytes` (id i is `bytes[bounds[i]..<bounds[i + 1]]`)
  /// in the order of their bytes.
  ///
  /// Each id is sorted by eight of its bytes as one integer first: the eight after the prefix
  /// every id shares (ids of one batch tend to share one, `user_` say), so that most
  /// comparisons are one integer comparison and only ties compare the rest.
  static func byteOrder(of bytes: [UInt8], bounds: [Int]) -> [Int] {
    let count = bounds.count - 1
    guard count > 1 else { return Array(0..<count) }
    return bytes.withUnsafeBytes { bytes in
      func id(_ index: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: bytes[bounds[index]..<bounds[index + 1]])
      }
      // The prefix every id shares.
      let first = id(0)
      var shared = first.count
      for index in 1..<count where shared > 0 {
        let other = id(index)
        shared = min(shared, other.count)
        var common = 0
        while common < shared && first[common] == other[common] { common += 1 }
        shared = common
      }
      var keyed = (0..<count).map { index in
        OrderedKey(
          prefix: KeyOrder.prefix(of: id(index), from: shared), position: index, payload: index)
      }
      // A dictionary's ids differ in their bytes: none is dropped.
      _ = keyed.withUnsafeMutableBufferPointer { run in
        KeyOrder.sortKeepingLast(run) { a, b in bytesOrder(id(a), id(b)) }
      }
      return keyed.map(\.payload)
    }
  }

  /// Puts already-encoded JSON text; `ytkkv load` uses it to keep the stored form.
  func putEncoded(
    _ json: [UInt8], id: String, into table: String, createdTime: Timestamp? = nil,
    expiry: Int64? = nil
  ) throws(KeyValueStoreError) {
    try json.withBytes { bytes throws(KeyValueStoreError) in
      try putEncoded(bytes: bytes, id: id, into: table, createdTime: createdTime, expiry: expiry)
    }
  }

  private func putEncoded(
    bytes json: UnsafeRawBufferPointer, id: String, into table: String, createdTime: Timestamp?,
    expiry: Int64? = nil
  ) throws(KeyValueStoreError) {
    try Self.checkID(id)
    try bridge { () throws(LogStoreError) in
      try id.withUTF8Bytes { key throws(LogStoreError) in
        try logStore.put(
          key: key, value: json, table: table, timestamp: createdTime, expiry: expiry)
      }
    }
  }

  static func checkID(_ id: String) throws(KeyValueStoreError) {
    let count = id.utf8.count
    guard count <= maxIDLength else {
      throw KeyValueStoreError(
        .invalidArgument,
        "an id is \(count) bytes of UTF-8; ids are limited to \(maxIDLength) bytes")
    }
  }

  /// An id as shown in messages: cut short when long.
  static func shown(_ id: String) -> String {
    id.count > 60 ? String(id.prefix(60)) + "…" : id
  }

  // MARK: - Reading values

  /// The value stored under `id`, or nil.
  public func object(id: String, from table: String) throws(KeyValueStoreError) -> JSONValue? {
    // The value and the error apart rather than in a `Result`: the value is moved out as it is.
    var value: JSONValue?
    var failure: JSONCodecError?
    try visitStoredValue(id: id, in: table) { bytes, _, _ in
      do throws(JSONCodecError) {
        value = try JSONReader.parse(bytes)
      } catch {
        failure = error
      }
    }
    if let failure { return try Self.storedValue(.failure(failure), id: id, table: table) }
    return value
  }

  /// The string stored under `id` (by ``put(string:id:into:expiresAfter:)``, or a bare JSON string), or
  /// nil. Throws `.typeMismatch` if the id holds something else.
  public func string(id: String, from table: String) throws(KeyValueStoreError) -> String? {
    // The string alone is read from the stored text; anything else is read whole below, for
    // the message.
    var wrapped: Result<String?, JSONCodecError>?
    try visitStoredValue(id: id, in: table) { bytes, _, _ in
      wrapped = Result { () throws(JSONCodecError) in try JSONReader.wrappedString(bytes) }
    }
    guard let wrapped else { return nil }
    if case .success(let string?) = wrapped { return string }
    guard let value = try object(id: id, from: table) else { return nil }
    if let string = Self.scalar(value).stringValue { return string }
    throw mismatch(id, table, value, expected: "a string")
  }

  /// The number stored under `id` (by a `put(number:)`, or a bare JSON number), or nil.
  /// Throws `.typeMismatch` if the id holds something else.
  public func number(id: String, from table: String) throws(KeyValueStoreError) -> Double? {
    guard let value = try object(id: id, from: table) else { return nil }
    if let number = Self.scalar(value).doubleValue { return number }
    throw mismatch(id, table, value, expected: "a number")
  }

  /// The integer stored under `id`, or nil. A stored double counts only if it is a whole
  /// number that fits `Int`; `2.5` throws `.typeMismatch`, as does anything not a number.
  public func integer(id: String, from table: String) throws(KeyValueStoreError) -> Int? {
    guard let value = try object(id: id, from: table) else { return nil }
    if let integer = Self.scalar(value).intValue { return integer }
    throw mismatch(id, table, value, expected: "an integer")
  }

  /// Decodes the value stored under `id` as a `T`, or nil when there is none. Throws
  /// `.typeMismatch` when the stored JSON does not decode as `T`.
  ///
  /// Decoding reads the stored text directly (the store's own decoder, no `Data`), and
  /// accepts and converts exactly what `JSONDecoder` does with the store's
  /// ``StoreOptions/coding`` strategies (by default, its own defaults).
  public func decode<T: Decodable>(_ type: T.Type, id: String, from table: String)
    throws(KeyValueStoreError) -> T?
  {
    // Copied out first: decoding runs the type's own `init(from:)`, which must not run under
    // the store's read lock.
    guard let bytes = try storedBytes(id: id, from: table) else { return nil }
    return try decodeStored(T.self, bytes, id: id, table: table)
  }

  /// `bytes`, the stored value of `id` in `table`, decoded as ``decode(_:id:from:)`` does.
  package func decodeStored<T: Decodable>(
    _ type: T.Type, _ bytes: [UInt8], id: String, table: String
  ) throws(KeyValueStoreError) -> T {
    do {
      return try StoredJSONDecoder.decode(T.self, from: bytes, strategies: coding)
    } catch {
      throw KeyValueStoreError(
        .typeMismatch,
        "the value of id \"\(Self.shown(id))\" in table \"\(table)\" does not decode as "
          + "\(T.self): \(error)")
    }
  }

  /// The item stored under `id`, with its created time, or nil.
  public func item(id: String, from table: String) throws(KeyValueStoreError) -> KeyValueItem? {
    var parsed: Result<JSONValue, JSONCodecError>?
    var created = Timestamp(microsecondsSince1970: 0)
    var expires: Timestamp?
    try visitStoredValue(id: id, in: table) { bytes, timestamp, expiry in
      parsed = Result { () throws(JSONCodecError) in try JSONReader.parse(bytes) }
      created = timestamp
      expires = expiry
    }
    guard let parsed else { return nil }
    let object = try Self.storedValue(parsed, id: id, table: table)
    return KeyValueItem(
      id: id, object: object, createdTime: Self.date(created), expiresTime: expires.map(Self.date))
  }

  /// Calls `body` with the stored bytes of `id`, their timestamp and when they expire (nil:
  /// never), borrowed from the store for the call only (under the index's read lock: `body`
  /// must not call the store). Returns whether the id has a value.
  @discardableResult
  func visitStoredValue(
    id: String, in table: String,
    _ body: (UnsafeRawBufferPointer, Timestamp, Timestamp?) -> Void
  ) throws(KeyValueStoreError) -> Bool {
    try bridge { () throws(LogStoreError) in
      try id.withUTF8Bytes { key throws(LogStoreError) in
        try logStore.visitItem(forKey: key, in: table, body)
      }
    }
  }

  /// Every item of the table, sorted by id (by the ids' UTF-8 bytes).
  ///
  /// For a large table, ``forEachItem(withPrefix:in:_:)`` visits the same items without holding them
  /// all in memory at once.
  public func allItems(in table: String) throws(KeyValueStoreError) -> [KeyValueItem] {
    try items(withPrefix: "", in: table)
  }

  /// Calls `body` with every item of the table whose id starts with `prefix` (by default,
  /// every item), sorted by id (by the ids' UTF-8 bytes), until it returns false. An error
  /// `body` throws ends the visit and is rethrown.
  ///
  /// Values are read and parsed one at a time, so visiting a table needs memory for its ids
  /// but not for all its values. The items are those of the moment the call starts: writes
  /// made meanwhile, by `body` or other threads, do not change what it visits. `body` runs
  /// outside the store's locks, so it may call the store.
  ///
  /// ```swift
  /// try store.forEachItem(withPrefix: "user:", in: "cache") { item in
  ///   users.append(try decoder.decode(User.self, from: Data(item.object.description.utf8)))
  ///   return true
  /// }
  /// ```
  ///
  /// - Throws: `.tableNotFound`; `.corrupted` when a value fails its checksum or is not JSON
  ///   (the visit ends there); what `body` throws.
  public func forEachItem(
    withPrefix prefix: String = "", in table: String, _ body: (KeyValueItem) throws -> Bool
  ) throws {
    var thrown: (any Error)?
    try visitItems(withPrefix: prefix, in: table) { item in
      do {
        return try body(item)
      } catch {
        thrown = error
        return false
      }
    }
    if let thrown { throw thrown }
  }

  /// ``forEachItem(withPrefix:in:_:)`` with a body that does not throw.
  func visitItems(
    withPrefix prefix: String = "", in table: String, _ body: (KeyValueItem) -> Bool
  ) throws(KeyValueStoreError) {
    var failure: KeyValueStoreError?
    try bridge { () throws(LogStoreError) in
      try logStore.forEachItem(in: table, withPrefix: Array(prefix.utf8)) {
        key, value, timestamp, expires in
        let id = String(decoding: key, as: UTF8.self)
        let parsed = Result { () throws(JSONCodecError) in try JSONReader.parse(value) }
        do throws(KeyValueStoreError) {
          let object = try Self.storedValue(parsed, id: id, table: table)
          return body(
            KeyValueItem(
              id: id, object: object, createdTime: Self.date(timestamp),
              expiresTime: expires.map(Self.date)))
        } catch {
          failure = error
          return false
        }
      }
    }
    if let failure { throw failure }
  }

  /// The ids of the table that start with `prefix`, sorted by their bytes: what
  /// ``delete(prefix:from:)`` would remove. The empty prefix lists every id.
  public func ids(withPrefix prefix: String, in table: String) throws(KeyValueStoreError)
    -> [String]
  {
    try bridge { () throws(LogStoreError) in
      try logStore.keys(in: table, withPrefix: Array(prefix.utf8))
    }.map { String(decoding: $0, as: UTF8.self) }
  }

  /// The items of the table whose id starts with `prefix`, sorted by id.
  public func items(withPrefix prefix: String, in table: String) throws(KeyValueStoreError)
    -> [KeyValueItem]
  {
    var items: [KeyValueItem] = []
    try visitItems(withPrefix: prefix, in: table) { item in
      items.append(item)
      return true
    }
    return items
  }

  /// The items of the table whose id starts with `prefix` (by default, all), sorted by id,
  /// each value decoded as a `T` as ``decode(_:id:from:)`` decodes it.
  ///
  /// ```swift
  /// for (id, user, created) in try store.items(as: User.self, in: "users") { … }
  /// ```
  ///
  /// - Throws: `.typeMismatch`, naming the id, for a value that does not decode as `T`;
  ///   `.tableNotFound`; `.corrupted`.
  public func items<T: Decodable>(
    as type: T.Type, withPrefix prefix: String = "", in table: String
  ) throws(KeyValueStoreError) -> [(id: String, value: T, createdTime: Date)] {
    var items: [(id: String, value: T, createdTime: Date)] = []
    var failure: KeyValueStoreError?
    try bridge { () throws(LogStoreError) in
      try logStore.forEachEntry(in: table, withPrefix: Array(prefix.utf8)) {
        key, value, timestamp in
        let id = String(decoding: key, as: UTF8.self)
        do {
          // The entry's bytes are the store's until the next one; the decoder copies what it
          // keeps, and runs outside the store's locks.
          items.append(
            (
              id, try StoredJSONDecoder.decode(T.self, from: Array(value), strategies: coding),
              Self.date(timestamp)
            ))
          return true
        } catch {
          failure = KeyValueStoreError(
            .typeMismatch,
            "the value of id \"\(Self.shown(id))\" in table \"\(table)\" does not decode as "
              + "\(T.self): \(error)")
          return false
        }
      }
    }
    if let failure { throw failure }
    return items
  }

  /// The number of items in the table.
  public func count(in table: String) throws(KeyValueStoreError) -> Int {
    try bridge { () throws(LogStoreError) in try logStore.count(in: table) }
  }

  /// The stored JSON text of `id`, as bytes.
  package func storedBytes(id: String, from table: String) throws(KeyValueStoreError) -> [UInt8]? {
    var stored: [UInt8]?
    try visitStoredValue(id: id, in: table) { bytes, _, _ in stored = Array(bytes) }
    return stored
  }

  /// The stored JSON text of `id`, as bytes, with when it expires (microseconds since 1970, by
  /// the store's expiry clock, `logStore.expiryNow()`; nil: never).
  package func storedItem(id: String, from table: String) throws(KeyValueStoreError)
    -> (bytes: [UInt8], expires: Int64?)?
  {
    var stored: (bytes: [UInt8], expires: Int64?)?
    try visitStoredValue(id: id, in: table) { bytes, _, expires in
      stored = (Array(bytes), expires?.microsecondsSince1970)
    }
    return stored
  }

  private static func storedValue(
    _ parsed: Result<JSONValue, JSONCodecError>, id: String, table: String
  ) throws(KeyValueStoreError) -> JSONValue {
    switch parsed {
    case .success(let value): return value
    case .failure(let error):
      throw KeyValueStoreError(
        .corrupted,
        "the stored value of id \"\(shown(id))\" in table \"\(table)\" is not valid JSON: "
          + error.message)
    }
  }

  /// The value inside YTKKeyValueStore's one-element wrapper `[x]`, or the value itself.
  private static func scalar(_ value: JSONValue) -> JSONValue {
    if case .array(let elements) = value, elements.count == 1 { return elements[0] }
    return value
  }

  private func mismatch(_ id: String, _ table: String, _ value: JSONValue, expected: String)
    -> KeyValueStoreError
  {
    var shown = value.description
    if shown.count > 60 { shown = String(shown.prefix(60)) + "…" }
    return KeyValueStoreError(
      .typeMismatch,
      "id \"\(Self.shown(id))\" in table \"\(table)\" holds \(shown), not \(expected)")
  }

  static func date(_ timestamp: Timestamp) -> Date {
    Date(timeIntervalSince1970: Double(timestamp.microsecondsSince1970) / 1_000_000)
  }

  // MARK: - Deleting

  /// Deletes the item under `id`; a missing id is no error.
  public func delete(id: String, from table: String) throws(KeyValueStoreError) {
    try Self.checkID(id)
    try bridge { () throws(LogStoreError) in
      try id.withUTF8Bytes { key throws(LogStoreError) in try logStore.delete(key: key, in: table) }
    }
  }

  /// Deletes the items under `ids`, all or none (one record, atomic across crashes).
  public func delete(ids: [String], from table: String) throws(KeyValueStoreError) {
    var batch = WriteBatch()
    for id in ids {
      try Self.checkID(id)
      batch.delete(key: Array(id.utf8), in: table)
    }
    try bridge { () throws(LogStoreError) in
      if batch.isEmpty {
        // Nothing to write, but a missing table is still an error: `count` reports it.
        _ = try logStore.count(in: table)
      } else {
        try logStore.write(batch)
      }
    }
  }

  /// Deletes every item whose id starts with `prefix`, byte for byte (`%` and `_` are
  /// ordinary characters, unlike the SQLite original's `LIKE`). An empty prefix clears the
  /// table. Atomic.
  public func delete(prefix: String, from table: String) throws(KeyValueStoreError) {
    try Self.checkID(prefix)
    try bridge { () throws(LogStoreError) in
      try logStore.deletePrefix(Array(prefix.utf8), in: table)
    }
  }

  // MARK: - Maintenance

  /// Reclaims the space of overwritten and deleted data now (it also happens in the
  /// background under the default `.automatic` policy).
  public func compact() throws(KeyValueStoreError) {
    try bridge { () throws(LogStoreError) in try logStore.compact() }
  }

  /// Writes an index file of the store as it is now, so that the next open (the next launch)
  /// maps it instead of reading every record (``LogStore/checkpoint()``). The store does this
  /// itself after compactions and at `close()` when much was written; call it after a large
  /// import, say.
  public func checkpoint() throws(KeyValueStoreError) {
    try bridge { () throws(LogStoreError) in try logStore.checkpoint() }
  }

  /// Items, tables, live and disk bytes, segments and damaged records.
  public func statistics() throws(KeyValueStoreError) -> StoreStatistics {
    try bridge { () throws(LogStoreError) in try logStore.statistics() }
  }
}
