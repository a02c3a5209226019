/// The in-memory index of the whole store: which tables exist, and for each a ``TableIndex``
/// from key to the location of its current record.
///
/// It changes only by applying the log's changes, in log order, through ``apply(_:)`` (one
/// change, as a record or a hint file's entry says it), which ``apply(_:at:of:)`` calls for
/// each record read from a segment (each member of a batch): the same code serves recovery, a
/// rebuild after damage, and live writes, so they cannot disagree. Not thread-safe: guarded by the store's
/// index lock.
final class KeyDirectory {
  // Guarded by the store's index lock; the runtime's exclusivity checks are off for speed.
  // Changed only through `insertTable` and `removeTable`, which keep what is derived from it
  // (the tables by bytes, the cached table, the totals) in step. Keyed by the
  // names' bytes (``TableName``): names that are equal strings but different bytes are two
  // tables, as their records are.
  @exclusivity(unchecked) private(set) var tables: [TableName: TableIndex] = [:]
  /// The same tables by the UTF-8 bytes of their names: how writers and the log's replay, which
  /// have the bytes of a record, find a table, and readers too (``table(_:)-(String)``; a
  /// lookup changes nothing, so readers under the shared lock may look up at once).
  private let tablesByBytes = NameTable<Unmanaged<TableIndex>>()
  /// The keys and live bytes of all tables together, which each table updates as it changes.
  private let totals = IndexTotals()
  /// The table the previous record named, to skip hashing its name when consecutive records
  /// share a table (the common case). Only writers use it. The name is copied into memory of
  /// its own (a table's name is at most 255 bytes; a record's table field cannot be longer)
  /// and the table is unretained (`tables` holds it, and every change of `tables` forgets
  /// it), so that checking it costs no reference counting per record.
  private let lastTableName = UnsafeMutableRawBufferPointer.allocate(byteCount: 255, alignment: 1)
  @exclusivity(unchecked) private var lastTableNameLength = 0
  @exclusivity(unchecked) private var lastTable: Unmanaged<TableIndex>?
  /// Room to make in tables about to be created, by their names' bytes (see `reserve(_:)`).
  private let reservations = NameTable<Room>()

  /// Room to make in one table: for `count` more keys, of `keyBytes` bytes in all.
  typealias Room = (count: Int, keyBytes: Int)

  /// The index file the tables' bases are in, if the directory was opened from one.
  private(set) var mapped: MappedIndex?

  /// The index file's tables not made yet, by their places in the file: a table of the file is
  /// made (a ``TableIndex`` over its ``MappedTable``, in `tables`) when first used, so that
  /// opening a store of thousands of tables makes none of them. True at a place while its table
  /// waits; false once it is made (a change that drops or clears it makes it first).
  @exclusivity(unchecked) private var waiting: [Bool] = []
  @exclusivity(unchecked) private var waitingCount = 0
  /// Places of waiting tables that readers met. A reader holds the index lock shared and cannot
  /// make a table; the store makes these with the lock held exclusively and reads again
  /// (``makeWantedTables()``, ``StoreEngine``).
  private let wantedLock = ConditionLock()
  @exclusivity(unchecked) private var wanted: [Int] = []
  /// Room each table made from the file gets for the log after the file, per key the file
  /// holds for it (``reserve(forLogAfterIndexFile:)``): the tables made while the open replays
  /// that log (``settlesLater``) get it as they are made.
  @exclusivity(unchecked) private var roomPerFileKey = 0.0

  /// Tells this directory from every other, for a compaction's listing of it
  /// (``LiveRecords/listedDirectory``): the listing holds this, so it keeps no directory alive,
  /// and, held, no other object can take its address. (A weak reference to the directory
  /// would do the same but move the directory's reference counts to a side table for good,
  /// making every retain and release of it, one or more in each read and write, the slow
  /// kind.)
  final class Identity: Sendable {}
  let identity = Identity()

  /// Whether puts and deletes leave their lookup in the index file for later
  /// (``TableIndex/settle()``): set while the log written after the file is replayed (by an
  /// open, and by a checkpoint putting its new file under the tables), so that neither waits
  /// for those lookups.
  @exclusivity(unchecked) var settlesLater = false

  init() {}

  deinit { lastTableName.deallocate() }

  /// The directory an index file describes: each table's keys are the file's, used in place.
  /// Its tables are made when first used; those with keys that expire are made now, so that
  /// expiries are counted from the open on.
  init(mapped: MappedIndex) {
    self.mapped = mapped
    waiting = [Bool](repeating: true, count: mapped.tableCount)
    waitingCount = mapped.tableCount
    totals.addUnmade(count: mapped.keyCount, liveBytes: mapped.liveBytes)
    for place in mapped.placesWithExpiries { make(place) }
  }

  /// The number of tables, those not made yet included.
  var tableCount: Int { tables.count + waitingCount }

  /// The names of all tables, those not made yet included, in no particular order.
  func tableNames() -> [String] {
    var names = tables.keys.map(\.string)
    if waitingCount > 0, let mapped {
      names.reserveCapacity(names.count + waitingCount)
      for place in waiting.indices where waiting[place] {
        names.append(mapped.name(ofTable: place))
      }
    }
    return names
  }

  /// The place in the index file of the waiting table named `name`, if there is one.
  private func waitingPlace(_ name: UnsafeRawBufferPointer) -> Int? {
    guard waitingCount > 0, let place = mapped?.place(ofTable: name), waiting[place] else {
      return nil
    }
    return place
  }

  private func waitingPlace(_ name: String) -> Int? {
    name.withUTF8Bytes { waitingPlace($0) }
  }

  /// Whether a table named `name` exists, made or not.
  func contains(_ name: String) -> Bool {
    table(name) != nil || waitingPlace(name) != nil
  }

  /// The default lifetime of the table named `name` (µs; 0: none), made or not; nil if there
  /// is no such table. For writers, which read the directory without changing it.
  func lifetime(ofTable name: UnsafeRawBufferPointer) -> Int64? {
    if let table = unretainedMadeTable(name) { return table.takeUnretainedValue().lifetime }
    return waitingPlace(name).map { mapped!.lifetime(ofTable: $0) }
  }

  /// Whether `name` is a table of the index file not made yet; if so, it is noted for
  /// ``makeWantedTables()``. For readers, under the shared lock.
  func wants(_ name: String) -> Bool {
    guard let place = waitingPlace(name) else { return false }
    wantedLock.withLock { wanted.append(place) }
    return true
  }

  /// Makes the tables readers wanted (``wants(_:)``); false, making none, if one's part of the
  /// file is damaged: the store then rebuilds the directory from the log, and no reader ever
  /// meets a table that stands in for a damaged one. Call with the log's lock held and the
  /// index lock held exclusively.
  func makeWantedTables() -> Bool {
    let places = wantedLock.withLock {
      defer { wanted.removeAll() }
      return wanted
    }
    var files: [(place: Int, file: MappedIndex.FileTable)] = []
    for place in places where waiting[place] && !files.contains(where: { $0.place == place }) {
      guard let file = try? mapped!.table(at: place) else { return false }
      files.append((place, file))
    }
    for (place, file) in files { insert(file, at: place) }
    return true
  }

  /// Makes every table not made yet, for what visits them all (``forEachLocation(_:)``). Call
  /// with the index lock held exclusively, or where no reader can be.
  func makeAllTables() {
    guard waitingCount > 0 else { return }
    for place in waiting.indices where waiting[place] { make(place) }
  }

  /// Makes the waiting table at `place` and returns it. A table whose part of the file
  /// contradicts its record is damage found after the open (``baseDamaged``, after which the
  /// store rebuilds the directory from the log): until then a stand-in answers every lookup
  /// that it is damaged (``MappedIndex/tableOrStandIn(at:)``).
  @discardableResult
  private func make(_ place: Int) -> TableIndex {
    let (file, damaged) = mapped!.tableOrStandIn(at: place)
    if damaged { totals.noteBaseDamaged() }
    return insert(file, at: place)
  }

  /// Puts the table of the file at `place`, read as `file`, in the directory.
  @discardableResult
  private func insert(_ file: MappedIndex.FileTable, at place: Int) -> TableIndex {
    waiting[place] = false
    waitingCount -= 1
    let table = TableIndex(totals: totals, base: file.table, baseCounted: true)
    table.creation = file.creation
    // Room for the log after the file, while an open replays it (a table made later, by a
    // reader, gets none).
    if settlesLater { makeRoomForLogAfterFile(in: table) }
    insertTable(table, named: file.name)
    return table
  }

  /// Every table with its name, for a visit of them all under the shared lock: a table of the
  /// index file not made yet is read from the file for the caller alone (it is unchanged since
  /// the file).
  func tablesForReading() -> [(name: String, table: TableIndex)] {
    var all = tables.map { ($0.key.string, $0.value) }
    for place in waiting.indices where waiting[place] {
      all.append((mapped!.name(ofTable: place), fileTableForReading(at: place)))
    }
    return all
  }

  /// The table of the index file at `place`, made for a reader alone, not put in the
  /// directory. One whose part of the file is damaged stands in as ``make(_:)`` has it: every
  /// lookup and walk of it reports the damage, which the reader's caller answers.
  private func fileTableForReading(at place: Int) -> TableIndex {
    let file = mapped!.tableOrStandIn(at: place).file
    let table = TableIndex(base: file.table)
    table.creation = file.creation
    return table
  }

  /// The table to look `name` up in for compaction, which reads under the shared lock: the
  /// made one, or for a table of the index file not made yet, one made of the file for the
  /// caller alone (it is unchanged since the file; ``fileTableForReading(at:)``). Nil if there
  /// is no such table.
  func tableForReading(_ name: String) -> TableIndex? {
    if let table = table(name) { return table }
    return waitingPlace(name).map(fileTableForReading)
  }

  /// A writer found the index file damaged while changing a table: the counts may be off, and
  /// the store must rebuild the directory from its log (``IndexView/apply(_:)``).
  var baseDamaged: Bool { totals.baseDamaged }

  /// Bytes of heap the tables hold.
  var heapBytes: Int { totals.heapBytes }

  /// Every table copied (``TableIndex/init(copying:)``) with its name and creation, for a
  /// checkpoint: taken with the log's lock held, read after it is released. A table of the
  /// index file not made yet is read from the file for the copy (``tablesForReading()``).
  func copyTables() -> [(name: String, table: TableIndex, creation: RecordLocation?)] {
    tablesForReading().map { name, table in (name, TableIndex(copying: table), table.creation) }
  }

  /// The number of keys in all tables. Exact only once settled (``settle()``).
  var itemCount: Int {
    assert(isSettled, "counts read before they were settled")
    return totals.count
  }
  /// The sum of the encoded lengths of the records the index points at, in all tables. Exact
  /// only once settled (``settle()``).
  var liveBytes: Int {
    assert(isSettled, "counts read before they were settled")
    return totals.liveBytes
  }

  /// The keys of all tables that have expired as of `now`, and the bytes of their records:
  /// counted in ``itemCount`` and ``liveBytes`` until compaction drops them.
  func expired(at now: Int64) -> (count: Int, bytes: Int) {
    var total = (count: 0, bytes: 0)
    guard totals.tablesWithExpiries > 0 else { return total }
    for table in tables.values {
      guard let expiring = table.expiring else { continue }
      let gone = expiring.advance(to: now)
      total.count += gone.count
      total.bytes += gone.bytes
    }
    return total
  }

  /// Whether every table's counts are exact: no key an open replayed waits for its lookup in
  /// the index file.
  var isSettled: Bool { totals.unsettled == 0 }

  /// Makes every table's counts exact (``TableIndex/settle()``). A damaged part of the index
  /// file found on the way sets ``baseDamaged``.
  func settle() {
    for table in tables.values where !table.isSettled { table.settle() }
  }

  /// The made table named `name` (by its bytes), if there is one. For readers: it changes
  /// nothing, not even the table cached for writers.
  func table(_ name: String) -> TableIndex? {
    // By the name's bytes, as writers find tables: never by `String`'s `==`, and the name
    // table's hash costs less than the dictionary's.
    return name.withUTF8Bytes { tablesByBytes.find($0) }?.takeUnretainedValue()
  }

  /// The table named by UTF-8 bytes, if it exists, made now if it is a table of the index
  /// file not made yet. Call with the index lock held exclusively, or where no reader can be
  /// (an open's replay); it caches what it found.
  func table(_ name: UnsafeRawBufferPointer) -> TableIndex? {
    unretainedTable(name)?.takeUnretainedValue()
  }

  /// ``table(_:)-(UnsafeRawBufferPointer)`` unretained, for the log's replay, which keeps
  /// tables unretained (``applySoon(_:)``): the directory holds each while it is in use.
  private func unretainedTable(_ name: UnsafeRawBufferPointer) -> Unmanaged<TableIndex>? {
    if let table = unretainedMadeTable(name) { return table }
    return waitingPlace(name).map { Unmanaged.passUnretained(make($0)) }
  }

  /// The made table named by UTF-8 bytes, unretained, if there is one.
  private func unretainedMadeTable(_ name: UnsafeRawBufferPointer) -> Unmanaged<TableIndex>? {
    // Consecutive records mostly name the same table: comparing its bytes is cheaper than
    // hashing them.
    if let lastTable, lastTableNameLength == name.count,
      bytesEqual(UnsafeRawBufferPointer(rebasing: lastTableName[0..<name.count]), name)
    {
      return lastTable
    }
    if let table = tablesByBytes.find(name) {
      if name.count <= lastTableName.count {
        lastTableName.copyMemory(from: name)
        lastTableNameLength = name.count
        lastTable = table
      }
      return table
    }
    // Not by its bytes; by their repair too, in case they are not valid UTF-8 (no valid
    // record has such a name): decoding repairs them as it did when the table was created
    // (``createTable(_:)``), so the same table is found. Valid UTF-8 decodes to itself, bytes
    // and all: a name equal as a `String` but not in its bytes is another table, never found
    // here. ASCII is valid: a new table's first record, in a replay of thousands of tables,
    // makes no `String` here.
    guard name.contains(where: { $0 >= 0x80 }) else { return nil }
    let repaired = TableName(name)
    guard !repaired.string.withUTF8Bytes({ bytesEqual($0, name) }) else { return nil }
    return tables[repaired].map(Unmanaged.passUnretained)
  }

  /// Adds `table` under `name`; a table it replaces leaves the totals.
  private func insertTable(_ table: TableIndex, named name: String) {
    tables.updateValue(table, forKey: TableName(name))?.detachFromTotals()
    name.withUTF8Bytes { _ = tablesByBytes.set($0, .passUnretained(table)) }
    tablesChanged()
  }

  private func removeTable(named name: String) {
    tables.removeValue(forKey: TableName(name))?.detachFromTotals()
    name.withUTF8Bytes { _ = tablesByBytes.set($0, nil) }
    tablesChanged()
  }

  /// Brings what is derived from `tables` up to date: the table cached for writers.
  private func tablesChanged() {
    lastTable = nil
  }

  // MARK: Changes files

  /// What changed since the index file, for a changes file (``ChangesFile``): the places of
  /// the file's tables dropped or cleared since, and every table made, with its place in the
  /// file when its keys are over that file's table. Nil without an index file.
  func changedTables() -> (
    dropped: [Int], tables: [(name: String, place: Int?, table: TableIndex)]
  )? {
    guard let mapped else { return nil }
    var made: [(name: String, place: Int?, table: TableIndex)] = []
    var over = [Bool](repeating: false, count: waiting.count)
    for (name, table) in tables {
      var place: Int?
      if table.base != nil {
        place = name.string.withUTF8Bytes { mapped.place(ofTable: $0) }
        guard let place else { return nil }
        over[place] = true
      }
      made.append((name.string, place, table))
    }
    let dropped = waiting.indices.filter { !waiting[$0] && !over[$0] }
    return (dropped, made)
  }

  /// Puts a changes file's changes over this directory, made of the index file they are over
  /// with nothing applied yet (``init(mapped:)``): it becomes the directory the file was written
  /// from. Throws if they do not fit the index file; the directory is then unusable, and the
  /// caller makes it anew.
  func restore(_ contents: ChangesFile.Contents) throws(ChangesFile.Invalid) {
    guard let mapped, contents.indexFile == mapped.number else {
      throw ChangesFile.Invalid(reason: "it is over another index file")
    }
    for place in contents.dropped {
      guard place < waiting.count else {
        throw ChangesFile.Invalid(reason: "it drops a table the index file does not have")
      }
      // Made first, so that it leaves the totals, as a replay's drop does.
      if waiting[place] { make(place) }
      removeTable(named: mapped.name(ofTable: place))
    }
    for listed in contents.tables {
      let table: TableIndex
      if let place = listed.place {
        guard place < waiting.count, bytesEqual(mapped.nameBytes(ofTable: place), listed.name)
        else { throw ChangesFile.Invalid(reason: "a table does not fit the index file") }
        if waiting[place] {
          table = make(place)
        } else {
          // Made by the open already (its keys have expiries), with no change yet.
          guard let made = self.table(listed.name), made.base != nil, !made.hasChanges else {
            throw ChangesFile.Invalid(reason: "a table listed twice")
          }
          table = made
        }
      } else {
        guard unretainedMadeTable(listed.name) == nil, waitingPlace(listed.name) == nil else {
          throw ChangesFile.Invalid(reason: "a new table has the name of another")
        }
        table = TableIndex(totals: totals)
        insertTable(table, named: String(decoding: listed.name, as: UTF8.self))
      }
      table.lifetime = listed.lifetime
      table.creation = listed.creation
      try table.restore(
        listed.changes, keyBytes: listed.keyBytes, count: listed.count,
        liveBytes: listed.liveBytes)
    }
  }

  // MARK: Applying the log

  /// How many changes ``apply(_:)`` has applied: the only way keys and tables change but for
  /// compaction's own moves, so that a compaction that finds the count as it listed the
  /// directory knows its listing still holds (``judge(count:in:listed:judged:)``).
  @exclusivity(unchecked) private(set) var changesApplied: UInt64 = 0

  /// Applies one change, as a record or a hint file's entry says it. Inside
  /// ``replay(from:_:)`` a put waits a few changes (``applySoon(_:)``); anywhere else it is
  /// applied at once.
  func apply(_ change: LoggedChange) {
    changesApplied &+= 1
    if pendingOwner != nil {
      applySoon(change)
    } else {
      applyNow(change)
    }
  }

  /// Applies `change` now.
  ///
  /// A put into a table that does not exist creates it: a live write never does that (the
  /// store checks first), so in recovery it means the table's creation was lost to damage,
  /// and keeping the data is better than dropping it.
  private func applyNow(_ change: LoggedChange) {
    switch change.kind {
    case .put:
      let table = self.table(change.table) ?? createTable(change.table)
      table.upsert(
        change.key, hash: KeyHash.hash(change.key), location: change.location,
        settleLater: settlesLater, expiry: change.expiry)
    case .delete:
      self.table(change.table)?.remove(
        change.key, hash: KeyHash.hash(change.key), settleLater: settlesLater)
    case .deletePrefix:
      self.table(change.table)?.removeAll(withPrefix: change.key)
    case .createTable:
      // A creation with a lifetime sets the table's default lifetime, existing or not, and is
      // the creation record compaction keeps from then on (it says all a creation says).
      if let table = self.table(change.table) {
        guard let lifetime = change.expiry else { return }
        table.lifetime = lifetime
        table.creation = change.location
      } else {
        let table = createTable(change.table)
        table.lifetime = change.expiry ?? 0
        table.creation = change.location
      }
    case .clearTable:
      if let old = self.table(change.table) {
        let cleared = TableIndex(totals: totals)
        cleared.lifetime = old.lifetime
        cleared.creation = old.creation
        insertTable(cleared, named: String(decoding: change.table, as: UTF8.self))
      }
    case .dropTable:
      // A table of the index file not made yet is made first, so that it leaves the totals.
      _ = unretainedTable(change.table)
      removeTable(named: String(decoding: change.table, as: UTF8.self))
    case .batch, .syncMark:
      // The scanner reads sync marks itself; they change nothing.
      preconditionFailure("batches are applied member by member, sync marks not at all")
    }
  }

  // MARK: Replaying many records

  /// Puts read by recovery but not yet applied, with their tables; see ``applySoon(_:)``.
  @exclusivity(unchecked) private var pendingPuts:
    [(
      table: Unmanaged<TableIndex>, key: UnsafeRawBufferPointer, hash: UInt64,
      location: RecordLocation, expiry: Int64?
    )] = []
  private static let pendingLimit = 16
  /// What keeps the bytes of the pending puts' keys mapped, during ``replay(from:_:)``.
  @exclusivity(unchecked) private var pendingOwner: AnyObject?

  /// Runs `body`, which applies many changes read from bytes that `owner` keeps mapped (a
  /// segment file, or a hint file's bytes), and applies every put kept back before returning.
  ///
  /// The puts kept back are views of those bytes: holding `owner` here, and applying them
  /// all by the end of the call, is what makes sure no key outlives the bytes it points into.
  func replay<E: Error>(from owner: AnyObject, _ body: () throws(E) -> Void) throws(E) {
    precondition(pendingOwner == nil, "one replay at a time")
    pendingOwner = owner
    defer {
      applyPending()
      pendingOwner = nil
    }
    try body()
  }

  /// Applies `change` as ``applyNow(_:)`` does, but a put only a few changes later, for
  /// recovery, which applies millions of records in a row.
  ///
  /// A put's key lands at a random slot of a table that is far larger than the cache, so each
  /// insert waits for memory. Here puts are kept back until a few have been read; then the
  /// slots they will probe first are all loaded at once, so that the waits overlap instead of
  /// following one another, and only then are they inserted. The puts kept back may be to
  /// different tables (a store with a table per conversation interleaves them), which changes
  /// nothing: puts to one table keep their order, and puts to different tables commute. Every
  /// other kind of change applies the puts before it first, so the order of changes is the
  /// log's.
  private func applySoon(_ change: LoggedChange) {
    guard change.kind == .put else {
      applyPending()
      applyNow(change)
      return
    }
    // Unretained: every change that could drop or replace the table applies the pending puts
    // first, so the directory holds it until they are applied; and without a reference to
    // count, finding it and emptying the list cost nothing per put.
    let table =
      unretainedTable(change.table) ?? Unmanaged.passUnretained(createTable(change.table))
    pendingPuts.append(
      (table, change.key, KeyHash.hash(change.key), change.location, change.expiry))
    if pendingPuts.count == Self.pendingLimit { applyPending() }
  }

  /// Applies the puts ``applySoon(_:)`` has kept back, in order, once their slots are loaded.
  private func applyPending() {
    guard !pendingPuts.isEmpty else { return }
    // Borrowed for the call, neither retained nor released (`_withUnsafeGuaranteedRef` is
    // inlined from the standard library's interface, so no platform version limits it).
    for put in pendingPuts { put.table._withUnsafeGuaranteedRef { $0.warm(put.hash) } }
    // (A table over an index file, replayed with `settlesLater`, does not look keys up in the
    // file here; ``TableIndex/settle()`` does later, loading them in groups as here.)
    for put in pendingPuts {
      put.table._withUnsafeGuaranteedRef {
        _ = $0.upsert(
          put.key, hash: put.hash, location: put.location, settleLater: settlesLater,
          expiry: put.expiry)
      }
    }
    pendingPuts.removeAll(keepingCapacity: true)
  }

  private func createTable(_ name: UnsafeRawBufferPointer) -> TableIndex {
    let table = TableIndex(totals: totals)
    if reservations.count > 0, let reservation = reservations.set(name, nil) {
      table.reserve(additional: reservation.count, keyBytes: reservation.keyBytes)
    }
    insertTable(table, named: String(decoding: name, as: UTF8.self))
    return table
  }

  /// Makes room in each named table for `count` more keys of `keyBytes` bytes in all, before
  /// they are applied, so that loading a large store does not grow each table's index step by
  /// step. A table not created yet (its creation is among the records to come) gets its room
  /// when it is.
  func reserve(_ room: NameTable<Room>) {
    room.forEachName { name, room in
      if let table = unretainedTable(name) {
        table._withUnsafeGuaranteedRef {
          $0.reserve(additional: room.count, keyBytes: room.keyBytes)
        }
      } else {
        reservations.set(name, room)
      }
    }
  }

  /// Makes room in the tables opened from an index file for the keys that `bytes` of log
  /// written after it may hold: as many as records of the file's average length fit, shared
  /// among the tables as the file's keys are, and no more than the file holds. Growing an
  /// overlay step by step rewrites it each time (and, while the open's second thread runs,
  /// makes every first write to a page flush both cores' address caches).
  func reserve(forLogAfterIndexFile bytes: Int) {
    guard let mapped, bytes > 0 else { return }
    let count = mapped.keyCount
    let liveBytes = mapped.liveBytes
    guard count > 0, liveBytes >= count else { return }
    let records = min(bytes / (liveBytes / count), count)
    // No table's share can reach the least room worth making (below): the tables are not
    // visited, which in a store of thousands is a cache miss each.
    guard records >= TableIndex.minimumCapacity else { return }
    // The tables of the file not made yet get their share when they are (``make(_:)``).
    roomPerFileKey = Double(records) / Double(count)
    // The file's tables made so far (those the log after it has made since have no base, and
    // grow as their keys come); the room is on top of what the log has put in them so far.
    for table in tables.values { makeRoomForLogAfterFile(in: table) }
  }

  /// Makes room in `table`, if it is one of the index file's, for its share of the log after
  /// the file: ``roomPerFileKey`` for each key of its base.
  private func makeRoomForLogAfterFile(in table: TableIndex) {
    guard let base = table.base, base.count > 0 else { return }
    // In floating point: the products may not fit a 32-bit `Int`.
    let share = (roomPerFileKey * Double(base.count)).rounded(.up)
    // A few keys find room as they come, at little cost: a store of thousands of small tables
    // does not grow each one at open.
    guard share >= Double(TableIndex.minimumCapacity) else { return }
    let keyBytes = share * Double(base.keyBytes) / Double(base.count)
    table.reserve(additional: Int(share), keyBytes: Int(keyBytes.rounded(.up)))
  }

  /// Points the creation record of `table` at `new`, its copy, if it is still in a segment
  /// below `limit` (a compaction's inputs; see ``TableIndex/relocate(_:hash:to:below:listedFrom:)``).
  /// The table is named by its record's bytes, as the puts relocated beside it are.
  func relocateCreation(
    of table: UnsafeRawBufferPointer, below limit: UInt32, to new: RecordLocation
  ) {
    if let table = self.table(table), let creation = table.creation, creation.segment < limit {
      table.creation = new
    }
  }

  /// Every location the index points at, grouped by nothing in particular; for compaction
  /// and verification.
  /// Call with the index lock held exclusively: the tables not made yet are made first.
  func forEachLocation(_ body: (String, UnsafeRawBufferPointer, RecordLocation) -> Void) {
    makeAllTables()
    for (name, table) in tables {
      table.forEachKey { key, location in body(name.string, key, location) }
    }
  }
}

/// What one change of the log says to the index: its kind, table, key and expiry, and where
/// its record is. A record read from a segment says it, and so does a hint file's entry for
/// the record (the index needs no value). Its bytes are views of what it was read from.
struct LoggedChange {
  let kind: RecordKind
  let table: UnsafeRawBufferPointer
  let key: UnsafeRawBufferPointer
  /// As in ``Record/expiry``.
  let expiry: Int64?
  let location: RecordLocation

  init(_ record: Record, at location: RecordLocation) {
    kind = record.kind
    table = record.table
    key = record.key
    expiry = record.expiry
    self.location = location
  }

  init(_ entry: HintFile.Entry, inSegment segment: UInt32) {
    kind = entry.kind
    table = entry.table
    key = entry.key
    expiry = entry.expiry
    location = RecordLocation(
      segment: segment, offset: UInt32(entry.offset), length: UInt32(entry.length))
  }
}
