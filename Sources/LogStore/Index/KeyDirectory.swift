/// The in-memory index of the whole store: which tables exist, and for each a ``TableIndex``
/// from key to the location of its current record.
///
/// It changes only by applying records, in log order, through ``apply(_:at:)``: the same
/// code path serves recovery (replaying segments) and live writes (applying what was just
/// appended), so the two cannot disagree. Not thread-safe: guarded by the store's index lock.
final class KeyDirectory {
  // Guarded by the store's index lock; the runtime's exclusivity checks are off for speed.
  @exclusivity(unchecked) private(set) var tables: [String: TableIndex] = [:] {
    didSet { tableList = tables.map { ($0.key, $0.value) } }
  }
  /// The same tables as a list: a store has a few, and comparing names is cheaper than hashing
  /// one on every read.
  @exclusivity(unchecked) private var tableList: [(name: String, index: TableIndex)] = []
  /// Where the record that created each existing table is: compaction keeps exactly these
  /// creation records (a table created implicitly by salvage has none).
  @exclusivity(unchecked) private(set) var creations: [String: RecordLocation] = [:]
  /// The table the previous record named, to skip building a `String` per record when
  /// consecutive records share a table (the common case). Only writers use it.
  @exclusivity(unchecked) private var lastTableName: [UInt8] = []
  @exclusivity(unchecked) private var lastTable: TableIndex?
  /// Room to make in tables about to be created (see `reserve(for:)`).
  @exclusivity(unchecked) private var reservations: [String: (count: Int, keyBytes: Int)] = [:]

  var itemCount: Int { tables.values.reduce(0) { $0 + $1.count } }
  var liveBytes: Int { tables.values.reduce(0) { $0 + $1.liveBytes } }

  func table(_ name: String) -> TableIndex? {
    if tableList.count <= 8 {
      for entry in tableList where entry.name == name { return entry.index }
      return nil
    }
    return tables[name]
  }

  /// The table named by UTF-8 bytes, if it exists.
  func table(_ name: UnsafeRawBufferPointer) -> TableIndex? {
    if let lastTable, name.count == lastTableName.count,
      name.count == 0
        || lastTableName.withUnsafeBytes({
          bytesEqual($0.baseAddress!, name.baseAddress!, name.count)
        })
    {
      return lastTable
    }
    let table = tables[String(decoding: name, as: UTF8.self)]
    if let table {
      lastTableName = Array(name)
      lastTable = table
    }
    return table
  }

  private func forgetCachedTable() {
    lastTable = nil
    lastTableName = []
  }

  /// Applies one record that is not a batch, found at `location`.
  ///
  /// A put into a table that does not exist creates it: a live write never does that (the
  /// store checks first), so in recovery it means the table's creation was lost to damage,
  /// and keeping the data is better than dropping it.
  func apply(_ record: Record, at location: RecordLocation) {
    switch record.kind {
    case .put:
      let table = self.table(record.table) ?? createTable(record.table)
      table.upsert(record.key, hash: KeyHash.hash(record.key), location: location)
    case .delete:
      self.table(record.table)?.remove(record.key, hash: KeyHash.hash(record.key))
    case .deletePrefix:
      self.table(record.table)?.removeAll(withPrefix: record.key)
    case .createTable:
      if self.table(record.table) == nil {
        _ = createTable(record.table)
        creations[String(decoding: record.table, as: UTF8.self)] = location
      }
    case .clearTable:
      if self.table(record.table) != nil {
        tables[String(decoding: record.table, as: UTF8.self)] = TableIndex()
        forgetCachedTable()
      }
    case .dropTable:
      let name = String(decoding: record.table, as: UTF8.self)
      tables[name] = nil
      creations[name] = nil
      forgetCachedTable()
    case .batch:
      preconditionFailure("batches are applied member by member")
    }
  }

  // MARK: Replaying many records

  /// Puts read by recovery but not yet applied; see ``applySoon(_:at:)``.
  @exclusivity(unchecked) private var pendingPuts:
    [(key: UnsafeRawBufferPointer, hash: UInt64, location: RecordLocation)] = []
  /// The table of every pending put (a put into another table applies them first).
  @exclusivity(unchecked) private var pendingTable: TableIndex?
  private static let pendingLimit = 16

  /// Applies `record` as ``apply(_:at:)`` does, but a put only a few records later, for
  /// recovery, which applies millions of records in a row.
  ///
  /// A put's key lands at a random slot of a table that is far larger than the cache, so each
  /// insert waits for memory. Here puts are kept back until a few have been read; then the
  /// slots they will probe first are all loaded at once, so that the waits overlap instead of
  /// following one another, and only then are they inserted. Every other kind of record
  /// applies the puts before it first, so the order of changes is the log's. The puts' keys
  /// must stay readable until ``applyPending()``; call it before anything reads the index.
  func applySoon(_ record: Record, at location: RecordLocation) {
    guard record.kind == .put else {
      applyPending()
      apply(record, at: location)
      return
    }
    let table = self.table(record.table) ?? createTable(record.table)
    if table !== pendingTable {
      applyPending()
      pendingTable = table
    }
    pendingPuts.append((record.key, KeyHash.hash(record.key), location))
    if pendingPuts.count == Self.pendingLimit { applyPending() }
  }

  /// Applies the puts ``applySoon(_:at:)`` has kept back.
  func applyPending() {
    guard let table = pendingTable, !pendingPuts.isEmpty else { return }
    table.upsertAll(pendingPuts)
    pendingPuts.removeAll(keepingCapacity: true)
    pendingTable = nil
  }

  /// Applies a batch record found at `location` (its members were checked when it was read).
  func applyBatch(_ batch: Record, at location: RecordLocation, salt: UInt32)
    throws(LogStoreError)
  {
    let valueStart = Int(location.offset) + batch.length - batch.value.count
    try RecordCodec.forEachMember(of: batch, salt: salt, verify: false) {
      member, offset throws(LogStoreError) in
      apply(
        member,
        at: RecordLocation(
          segment: location.segment, offset: UInt32(valueStart + offset),
          length: UInt32(member.length)))
    }
  }

  private func createTable(_ name: UnsafeRawBufferPointer) -> TableIndex {
    let table = TableIndex()
    let key = String(decoding: name, as: UTF8.self)
    if let reservation = reservations.removeValue(forKey: key) {
      table.reserve(additional: reservation.count, keyBytes: reservation.keyBytes)
    }
    tables[key] = table
    forgetCachedTable()
    return table
  }

  /// Makes room for the puts among `entries` (a hint file's) before they are applied, so that
  /// loading a large store does not grow each table's index step by step.
  func reserve(for entries: [HintFile.Entry]) {
    var counts: [String: (count: Int, keyBytes: Int)] = [:]
    // Entries of one table come in runs: count a run, then add it up under the table's name.
    var run: (name: UnsafeRawBufferPointer, count: Int, keyBytes: Int)?
    func finishRun() {
      guard let run else { return }
      let name = String(decoding: run.name, as: UTF8.self)
      let total = counts[name] ?? (0, 0)
      counts[name] = (total.count + run.count, total.keyBytes + run.keyBytes)
    }
    for entry in entries where entry.kind == .put {
      if let current = run, current.name.count == entry.table.count,
        bytesEqual(current.name.baseAddress!, entry.table.baseAddress!, entry.table.count)
      {
        run!.count += 1
        run!.keyBytes += entry.key.count
      } else {
        finishRun()
        run = (entry.table, 1, entry.key.count)
      }
    }
    finishRun()
    for (name, count) in counts {
      if let table = tables[name] {
        table.reserve(additional: count.count, keyBytes: count.keyBytes)
      } else {
        // Not created yet (its creation is among the entries): reserve when it is.
        reservations[name] = count
      }
    }
  }

  /// Moves the creation record of `table` from `old` to `new` if it is still at `old`.
  func relocateCreation(of table: String, from old: RecordLocation, to new: RecordLocation) {
    if creations[table] == old { creations[table] = new }
  }

  /// Every location the index points at, grouped by nothing in particular; for compaction
  /// and verification.
  func forEachLocation(_ body: (String, UnsafeRawBufferPointer, RecordLocation) -> Void) {
    for (name, table) in tables {
      table.forEachKey { key, location in body(name, key, location) }
    }
  }
}
