import Foundation
import YTKKeyValueStore

/// YTKKeyValueStore's class, with its methods under their Objective-C selectors, on this
/// store's engine: a drop-in for apps that call the original from Objective-C or Swift.
///
/// As the original did, the methods log an error and return nil, `false`, 0 or nothing;
/// ``lastError`` keeps the last one for an app that wants to know. ``keyValueStore`` is the
/// `KeyValueStore` underneath, the API to move to.
///
/// The limits are the store's, which the original (on SQLite) did not have: a table name is
/// at most 255 bytes of UTF-8 and an id at most 65,535 (`KeyValueStore.maxIDLength`), fixed
/// by the store's record format. A call over one is refused as other failures are, with
/// `.invalidTableName` or `.invalidArgument` naming the length and the limit.
open class YTKKeyValueStore: YTKCompatObject, @unchecked Sendable {
  // `@unchecked Sendable`: its one stored property is a `Sendable` connection.
  let connection: Connection

  init(connection: Connection) {
    self.connection = connection
    super.init()
  }

  /// The store named `database.sqlite`, as the original's `init` opened.
  public override convenience init() { self.init(dbWithName: "database.sqlite") }
}

extension YTKKeyValueStore {
  // MARK: Opening and closing

  #if canImport(ObjectiveC)
    /// `initDBWithName:`: the store called `name` in the platform's place for app data
    /// (`KeyValueStore(name:)`). The original kept its SQLite file in Documents: bring its data
    /// over with `KeyValueStore.importYTKDatabase` (docs/MIGRATION.md).
    @objc(initDBWithName:)
    public convenience init(dbWithName name: String) {
      self.init(
        connection: Connection { () throws(KeyValueStoreError) in
          try KeyValueStore.path(ofStoreNamed: name)
        })
    }

    /// `initWithDBWithPath:`: the store in directory `path`.
    @objc(initWithDBWithPath:)
    public convenience init(dbWithPath path: String) {
      self.init(connection: Connection { path })
    }
  #else
    /// `initDBWithName:`: the store called `name` in the platform's place for app data
    /// (`KeyValueStore(name:)`). The original kept its SQLite file in Documents: bring its data
    /// over with `KeyValueStore.importYTKDatabase` (docs/MIGRATION.md).
    public convenience init(dbWithName name: String) {
      self.init(
        connection: Connection { () throws(KeyValueStoreError) in
          try KeyValueStore.path(ofStoreNamed: name)
        })
    }

    /// `initWithDBWithPath:`: the store in directory `path`.
    public convenience init(dbWithPath path: String) {
      self.init(connection: Connection { path })
    }
  #endif

  /// Closes the store: what was written is flushed (once no other instance of this process
  /// has the same store open: instances of one path share one open), and later calls do
  /// nothing.
  public func close() { connection.close() }

  /// The store underneath while it is open: the Swift API, for code moving off this one.
  public var keyValueStore: KeyValueStore? { connection.keyValueStore }

  /// The error of the last call that failed (each failure replaces it; a call that succeeds
  /// leaves it), nil if none has.
  public var lastError: KeyValueStoreError? { connection.lastError }

  /// ``lastError``'s message, for Objective-C.
  public var lastErrorMessage: String? { connection.lastError?.message }

  /// Whether failures are logged (`NSLog` on Apple platforms, standard error elsewhere), as
  /// the original logged them in debug builds. On by default.
  public var logsErrors: Bool {
    get { connection.logsErrors }
    set { connection.logsErrors = newValue }
  }

  // MARK: Tables

  /// `createTableWithName:`: creates the table; nothing if it exists.
  public func createTable(withName tableName: String) {
    connection.run(table: tableName, ()) { store throws(KeyValueStoreError) in
      try store.createTable(tableName)
    }
  }

  /// `isTableExists:`.
  public func isTableExists(_ tableName: String) -> Bool {
    connection.run(table: tableName, false) { store throws(KeyValueStoreError) in
      try store.tableExists(tableName)
    }
  }

  /// `clearTable:`: removes every item, keeps the table.
  public func clearTable(_ tableName: String) {
    connection.run(table: tableName, ()) { store throws(KeyValueStoreError) in
      try store.clearTable(tableName)
    }
  }

  /// `dropTable:`: removes the table and its items.
  public func dropTable(_ tableName: String) {
    connection.run(table: tableName, ()) { store throws(KeyValueStoreError) in
      try store.dropTable(tableName)
    }
  }

  // MARK: Values

  /// `putObject:withId:intoTable:`: stores `object`, a dictionary or an array of JSON values
  /// (what `JSONSerialization` takes at the top), under `objectId`.
  public func putObject(_ object: Any, withId objectId: String, intoTable tableName: String) {
    connection.run(table: tableName, ()) { store throws(KeyValueStoreError) in
      try store.put(FoundationValues.jsonValue(of: object), id: objectId, into: tableName)
    }
  }

  /// `getObjectById:fromTable:`: the value as Foundation objects (containers mutable), or nil.
  public func getObjectById(_ objectId: String, fromTable tableName: String) -> Any? {
    getYTKKeyValueItemById(objectId, fromTable: tableName)?.itemObject
  }

  /// `getYTKKeyValueItemById:fromTable:`: the item with its created time, or nil.
  public func getYTKKeyValueItemById(_ objectId: String, fromTable tableName: String)
    -> YTKKeyValueItem?
  {
    connection.run(table: tableName, nil) { store throws(KeyValueStoreError) in
      try store.item(id: objectId, from: tableName).map(Self.item)
    }
  }

  /// `putString:withId:intoTable:`: stores `[string]`, as the original did.
  public func putString(_ string: String, withId stringId: String, intoTable tableName: String) {
    putObject([string], withId: stringId, intoTable: tableName)
  }

  /// `getStringById:fromTable:`: the first element of a stored array, if it is a string.
  public func getStringById(_ stringId: String, fromTable tableName: String) -> String? {
    (firstElement(ofArrayAt: stringId, in: tableName) as? NSString).map { String($0) }
  }

  /// `putNumber:withId:intoTable:`: stores `[number]`, as the original did.
  public func putNumber(_ number: NSNumber, withId numberId: String, intoTable tableName: String) {
    putObject(NSArray(object: number), withId: numberId, intoTable: tableName)
  }

  /// `getNumberById:fromTable:`: the first element of a stored array, if it is a number.
  public func getNumberById(_ numberId: String, fromTable tableName: String) -> NSNumber? {
    firstElement(ofArrayAt: numberId, in: tableName) as? NSNumber
  }

  /// `getAllItemsFromTable:`: every item, by id; empty for a table that does not exist (the
  /// original's query failed and found nothing), nil for a name the original refused.
  public func getAllItemsFromTable(_ tableName: String) -> [YTKKeyValueItem]? {
    connection.run(table: tableName, nil) { store throws(KeyValueStoreError) in
      guard try store.tableExists(tableName) else { return [] }
      return try store.allItems(in: tableName).map(Self.item)
    }
  }

  /// `getCountFromTable:`: the number of items; 0 for a table that does not exist.
  public func getCountFromTable(_ tableName: String) -> UInt {
    connection.run(table: tableName, 0) { store throws(KeyValueStoreError) in
      UInt(try store.count(in: tableName))
    }
  }

  // MARK: Deleting

  /// `deleteObjectById:fromTable:`.
  public func deleteObjectById(_ objectId: String, fromTable tableName: String) {
    connection.run(table: tableName, ()) { store throws(KeyValueStoreError) in
      try store.delete(id: objectId, from: tableName)
    }
  }

  /// `deleteObjectsByIdArray:fromTable:`: all of them or, on an error, none.
  public func deleteObjectsByIdArray(_ objectIdArray: [String], fromTable tableName: String) {
    connection.run(table: tableName, ()) { store throws(KeyValueStoreError) in
      try store.delete(ids: objectIdArray, from: tableName)
    }
  }

  /// `deleteObjectsByIdPrefix:fromTable:`: the ids that start with `objectIdPrefix`, byte for
  /// byte. (The original's SQL `LIKE` also took `%` and `_` for wildcards and ignored the case of
  /// ASCII letters; docs/MIGRATION.md.)
  public func deleteObjectsByIdPrefix(_ objectIdPrefix: String, fromTable tableName: String) {
    connection.run(table: tableName, ()) { store throws(KeyValueStoreError) in
      try store.delete(prefix: objectIdPrefix, from: tableName)
    }
  }

  /// The first element of the array stored under `id`: where `putString:` and `putNumber:`
  /// put their value (nil when the value is not an array, or an empty one).
  private func firstElement(ofArrayAt id: String, in tableName: String) -> Any? {
    guard let array = getObjectById(id, fromTable: tableName) as? NSArray, array.count > 0
    else { return nil }
    return array[0]
  }

  private static func item(_ item: KeyValueItem) -> YTKKeyValueItem {
    YTKKeyValueItem(
      itemId: item.id, itemObject: FoundationValues.object(of: item.object),
      createdTime: item.createdTime)
  }
}
