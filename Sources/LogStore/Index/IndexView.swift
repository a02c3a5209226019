/// What readers see: the key directory, the open segments its locations point into, and the
/// lock that guards both.
///
/// Readers take the lock shared while they find a key and copy its value out of the segment's
/// mapping, so they wait for each other only where a read of an expiring item takes the
/// expiry clock's mutex. Only a thread holding the log's lock changes anything here, and it
/// takes this lock exclusively to do so (docs/DESIGN.md, "Locks"); such a thread may therefore
/// read without this lock, since nobody else can be writing.
///
/// A read that finds the index file damaged (a block fails its checksum when first read)
/// returns nil: ``StoreEngine`` then has the directory rebuilt from the log and reads again.
final class IndexView: @unchecked Sendable {
  let directory: String
  private let verifyChecksums: Bool
  let lock = ReadWriteLock()
  /// The clock every expiry is judged by (``ExpiryClock``): reads, counts, listings and
  /// compaction agree.
  let clock = ExpiryClock()

  // Every `var` below is guarded by `lock` (and changed only under the log's lock too), so the
  // runtime's exclusivity checks, which cost more than the lookups they guard, are off.
  @exclusivity(unchecked) private(set) var keys: KeyDirectory
  @exclusivity(unchecked) private(set) var segments: SegmentLookup
  @exclusivity(unchecked) private(set) var isClosed = false
  /// Records lost to damage: regions the open skipped, plus keys a compaction found pointing
  /// into damage (``StoreStatistics/damagedRecords``).
  @exclusivity(unchecked) private(set) var damagedRecords: Int

  init(
    directory: String, keys: KeyDirectory, segments: [UInt32: SegmentFile], damagedRecords: Int,
    verifyChecksums: Bool
  ) {
    self.directory = directory
    self.keys = keys
    self.segments = SegmentLookup(segments)
    self.damagedRecords = damagedRecords
    self.verifyChecksums = verifyChecksums
  }

  // MARK: Reading (shared lock)

  /// Runs `body` on the key directory under the shared lock, after checking the store is open.
  func read<R>(_ body: (KeyDirectory) throws(LogStoreError) -> R) throws(LogStoreError) -> R {
    try lock.withReadLock { () throws(LogStoreError) -> R in
      if isClosed { throw LogStoreError.closed(directory) }
      return try body(keys)
    }
  }

  /// Looks `key` up in `table` and calls `body` with its record, under the shared lock: the
  /// inner optional is nil when the key has no value, the outer one when the index file was
  /// found damaged. The record is valid only during `body`.
  func withRecord<R, E: Error>(
    key: UnsafeRawBufferPointer, table: String, hash: UInt64,
    _ body: (Record) throws(E) -> R
  ) throws(LogStoreError) -> Result<R, E>?? {
    try lock.withReadLock { () throws(LogStoreError) -> Result<R, E>?? in
      try withRecordLocked(key: key, table: table, hash: hash, body)
    }
  }

  /// ``withRecord(key:table:hash:_:)`` with the shared lock held.
  private func withRecordLocked<R, E: Error>(
    key: UnsafeRawBufferPointer, table: String, hash: UInt64,
    _ body: (Record) throws(E) -> R
  ) throws(LogStoreError) -> Result<R, E>?? {
    if isClosed { throw LogStoreError.closed(directory) }
    guard let index = keys.table(table) else { throw missingTable(table, in: keys) }
    let location: RecordLocation
    switch index.lookup(key, hash: hash) {
    case .found(let found): location = found
    case .absent: return .some(nil)
    case .damaged: return nil
    }
    guard let segment = segments[location.segment] else {
      throw LogStoreError.segmentMissing(location.segment, in: directory)
    }
    let record = try record(at: location, in: segment)
    guard bytesEqual(record.key, key) else { throw pointsElsewhere(table) }
    // An expired item reads as missing (its record stays until compaction drops it).
    if let expiry = record.expiry, expiry <= clock.now() { return .some(nil) }
    return Result { () throws(E) -> R in try body(record) }
  }

  /// Decodes the record at `location` of `segment`, which the caller keeps alive.
  func record(at location: RecordLocation, in segment: SegmentFile) throws(LogStoreError)
    -> Record
  {
    do {
      return try segment.record(at: Int(location.offset), verify: verifyChecksums)
    } catch {
      throw damagedRecord(at: location, in: segment.path, error)
    }
  }

  /// What a walk of a table's items in key order reads from: the segments' bytes `mapped`
  /// (``SegmentLookup/mappedForWalk()``) of `captured`, which holds them open; items expired by
  /// `now` are left out.
  private struct Walk {
    let mapped: Numbered<MappedSegment>
    let captured: SegmentLookup
    let table: String
    let now: Int64
  }

  /// Reads the records of `batch` (a walk's next keys) and calls `body` with each item in
  /// order, leaving out the expired ones, until it returns false (then returns false). Empties
  /// `batch`.
  ///
  /// A walk in key order meets records that mostly lie far apart (their keys were written in
  /// another order), each a cache miss and most a miss of the address translation cache too:
  /// decoded one after the other, the walk would wait for each in turn. So the byte that
  /// decoding reads first (whether the record is a batch's member) is read for every record of
  /// the batch before any is decoded, and their misses overlap; then their checksums are
  /// checked four records at a time (``RecordCodec/intactRecords(_:)``), for the misses of the
  /// rest of each record to overlap too.
  private func visit(_ batch: inout RecordBatch, _ walk: Walk, _ body: EntryVisitor)
    throws(LogStoreError) -> Bool
  {
    defer { batch.removeAll() }
    // A bit per record of the batch.
    var members: UInt32 = 0
    for index in 0..<batch.count {
      let location = batch.items[index].location
      if walk.mapped[location.segment]?.isMember(at: Int(location.offset)) == true {
        members |= 1 << index
      }
    }
    // The records whose checksums are checked here; the others are checked as they are
    // decoded (and, if damaged, found so there, in the walk's order).
    var intact: UInt32 = 0
    if verifyChecksums {
      intact = withUnsafeTemporaryAllocation(
        of: RecordCodec.Located.self, capacity: batch.count
      ) { records in
        var count = 0
        for index in 0..<batch.count {
          let location = batch.items[index].location
          // A missing segment is reported below.
          guard let segment = walk.mapped[location.segment] else { break }
          records[index] = RecordCodec.Located(
            bytes: segment.bytes, offset: Int(location.offset), salt: segment.salt,
            member: members & 1 << index != 0)
          count += 1
        }
        return RecordCodec.intactRecords(UnsafeBufferPointer(rebasing: records[..<count]))
      }
    }
    for index in 0..<batch.count {
      let (key, location) = batch.items[index]
      guard let segment = walk.mapped[location.segment] else {
        throw LogStoreError.segmentMissing(location.segment, in: directory)
      }
      let record: Record
      do {
        record = try segment.record(
          at: Int(location.offset), member: members & 1 << index != 0,
          verify: verifyChecksums && intact & 1 << index == 0)
      } catch {
        throw damagedRecord(at: location, in: walk.captured[location.segment]?.path ?? "?", error)
      }
      guard bytesEqual(record.key, key) else { throw pointsElsewhere(walk.table) }
      if let expiry = record.expiry, expiry <= walk.now { continue }
      guard
        body(
          key, record.value, Timestamp(microsecondsSince1970: record.timestamp),
          record.expiry.map(Timestamp.init(microsecondsSince1970:)))
      else { return false }
    }
    return true
  }

  private func damagedRecord(
    at location: RecordLocation, in path: String, _ error: RecordDecodingError
  ) -> LogStoreError {
    LogStoreError(
      .corrupted, "the record at offset \(location.offset) of \(path) is damaged: \(error.reason)")
  }

  /// The error for an index that points at a record of another key than it says.
  private func pointsElsewhere(_ table: String) -> LogStoreError {
    LogStoreError(.corrupted, "the index of table \"\(table)\" points at a record of another key")
  }

  /// The error for a table that is not there: `invalidTableName` when no table could ever
  /// have that name, `tableNotFound` otherwise.
  func tableNotFound(_ table: String) -> LogStoreError {
    do {
      try table.withUTF8Bytes { bytes throws(LogStoreError) in
        try Mutation.validateTableName(bytes)
      }
    } catch {
      return error
    }
    return LogStoreError(.tableNotFound, "there is no table named \"\(table)\" in \(directory)")
  }

  /// The error of a read that did not find `table` in `keys`: ``LogStoreError/tableNotMade``,
  /// which ``StoreEngine`` answers by making the table and reading again, if it is a table of
  /// the index file not made yet; otherwise ``tableNotFound(_:)-(String)``.
  func missingTable(_ table: String, in keys: KeyDirectory) -> LogStoreError {
    keys.wants(table) ? .tableNotMade(table) : tableNotFound(table)
  }

  func tableNotFound(_ table: UnsafeRawBufferPointer) -> LogStoreError {
    tableNotFound(String(decoding: table, as: UTF8.self))
  }

  // MARK: Iteration

  /// Calls `body` under the shared lock with every key of `table` and its location, in no
  /// particular order, and returns the segments as they were then (a copy keeps them readable
  /// after); nil if the index file was found damaged on the way. `start` is called first with
  /// the number of keys.
  func forEachKey(
    in table: String, start: (Int) -> Void,
    _ body: (UnsafeRawBufferPointer, RecordLocation) -> Void
  ) throws(LogStoreError) -> SegmentLookup? {
    try read { keys throws(LogStoreError) -> SegmentLookup? in
      guard let index = keys.table(table) else { throw missingTable(table, in: keys) }
      start(index.count)
      // Expired keys are left out, by their expiries alone (no record is read).
      guard let expiring = index.expiring else {
        return index.forEachKey(body) ? segments : nil
      }
      expiring.advance(to: clock.now())
      return index.forEachKey { key, location in
        if !expiring.isExpired(key) { body(key, location) }
      } ? segments : nil
    }
  }

  /// The keys of `table` that start with `prefix`, copied with their locations under the
  /// shared lock (into one buffer), and the segments as they are now, which stay mapped even if
  /// a compaction deletes their files meanwhile; nil if the index file was found damaged. For
  /// ``StoreEngine/forEachEntry(in:withPrefix:_:)``, which visits them with
  /// ``forEachEntry(of:in:table:now:_:)``.
  func copyKeys(in table: String, withPrefix prefix: UnsafeRawBufferPointer)
    throws(LogStoreError) -> (SegmentLookup, TableKeys)?
  {
    try read { keys throws(LogStoreError) -> (SegmentLookup, TableKeys)? in
      guard let index = keys.table(table) else { throw missingTable(table, in: keys) }
      return TableKeys(of: index, prefix: prefix).map { (segments, $0) }
    }
  }

  /// Calls `body` with every key `copied` holds, sorted by its bytes, its value and its time
  /// (read from `captured`, without the lock), until `body` returns false. Items that expired
  /// by `now` are left out; `body` gets the expiry of the others that have one.
  func forEachEntry(
    of copied: TableKeys, in captured: SegmentLookup, table: String, now: Int64,
    _ body: EntryVisitor
  ) throws(LogStoreError) {
    var copied = copied
    copied.sort()
    let walk = Walk(mapped: captured.mappedForWalk(), captured: captured, table: table, now: now)
    try copied.keys.withBytes { keys throws(LogStoreError) in
      var batch = RecordBatch()
      for item in copied.items {
        batch.append(
          UnsafeRawBufferPointer(rebasing: keys[item.keyStart..<item.keyStart + item.keyLength]),
          item.location)
        if batch.isFull, try !visit(&batch, walk, body) { return }
      }
      _ = try visit(&batch, walk, body)
    }
  }

  /// The visit of ``StoreEngine/forEachEntry(in:withPrefix:_:)`` for a table unchanged since
  /// its index file, walked where it lies (the file's entries are in key order) instead of
  /// copied; false, having called `body` for nothing, if the table changed since or an entry
  /// of the file is damaged (the caller then copies the keys, and finds the damage). Every
  /// entry is checked before `body` sees the first, so that damage is found while the visit
  /// can still start over; the walk that calls `body` relies on those checks (the file is
  /// never written), and on each record's: its checksum, and that its key is the entry's.
  func forEachUnchangedEntry(
    in table: String, withPrefix prefix: UnsafeRawBufferPointer, now: Int64, _ body: EntryVisitor
  ) throws(LogStoreError) -> Bool {
    guard
      let (captured, base) = try read({
        keys throws(LogStoreError) -> (SegmentLookup, MappedTable)? in
        guard let index = keys.table(table) else { throw missingTable(table, in: keys) }
        return index.unchangedBase.map { (segments, $0) }
      }),
      base.forEachEntry({ _ in true }),
      // The keys with the prefix are together, from the first key not below it.
      let start = prefix.isEmpty ? MappedTable.Place(rank: 0, offset: 0) : base.lowerBound(prefix)
    else { return false }
    let walk = Walk(mapped: captured.mappedForWalk(), captured: captured, table: table, now: now)
    var batch = RecordBatch()
    var stopped = false
    let whole = try base.forEachEntry(from: start, verify: false) {
      (entry) throws(LogStoreError) -> Bool in
      guard bytesHavePrefix(entry.key, prefix) else { return false }
      batch.append(entry.key, entry.location)
      if batch.isFull, try !visit(&batch, walk, body) {
        stopped = true
      }
      return !stopped
    }
    guard whole else {
      throw LogStoreError(.corrupted, "the index file of \(directory) changed while it was read")
    }
    if !stopped { _ = try visit(&batch, walk, body) }
    return true
  }

  // MARK: Changing (log lock held, then this lock exclusively)

  /// Runs `body` with the lock held exclusively. The caller holds the log's lock.
  func change<R>(_ body: () -> R) -> R { lock.withWriteLock(body) }

  /// Applies a record just appended to the log. Call inside ``change(_:)``.
  func apply(_ appended: Appended) {
    // A change counts from exact counts: the first one after an open settles them (a
    // damaged index file found doing so is the writer's to rebuild, as in any change).
    if !keys.isSettled { keys.settle() }
    do {
      let record = try appended.file.record(at: appended.offset, verify: false)
      try keys.apply(record, at: appended.offset, of: appended.file)
    } catch {
      preconditionFailure("a record just written does not decode: \(error)")
    }
  }

  /// Replaces the key directory with one rebuilt from the log. Call inside ``change(_:)``.
  func replaceKeys(_ rebuilt: KeyDirectory) { keys = rebuilt }

  /// Replaces everything with a view read anew from the files (`.manyProcesses`: another
  /// process changed the segments). Call inside ``change(_:)``.
  func replaceAll(with state: RecoveredState) {
    keys = state.keys
    segments = SegmentLookup(state.segments)
    damagedRecords = state.damagedRecords
  }

  /// Adds or removes a segment. Call inside ``change(_:)``.
  func setSegment(_ number: UInt32, _ file: SegmentFile?) { segments[number] = file }

  /// Counts records found lost. Call inside ``change(_:)``.
  func addDamagedRecords(_ count: Int) { damagedRecords += count }

  /// Empties the view for good: every read from now on fails as closed, and the segments are
  /// released (their mappings go once the last reader holding one lets go).
  func close() {
    lock.withWriteLock {
      isClosed = true
      keys = KeyDirectory()
      segments = SegmentLookup()
    }
  }

  /// A table as the changes of a commit written before the one being checked, and not yet
  /// applied, leave it (``checkTables(_:pending:)``).
  enum PendingTable {
    /// Created, with its default lifetime (µs; 0: none).
    case exists(lifetime: Int64)
    case dropped
  }

  /// Checks that every table `mutation` writes to exists, given the tables that changes
  /// written before it but not yet applied create and drop (`pending`), and adds its own.
  /// Returns `mutation` with its puts' expiries final (``Mutation/withFinalExpiry(lifetime:now:)``),
  /// by the default lifetime its table has at its place in the log: a put that commits while
  /// its table's creation is being synced gets the lifetime the creation gives. Call with the
  /// log's lock held (which keeps the index from changing).
  func checkTables(_ mutation: Mutation, pending: inout [TableName: PendingTable])
    throws(LogStoreError) -> Mutation
  {
    var local = pending
    // The lifetime of the table a single put or packed puts name, their only table.
    var lifetime: Int64 = 0
    try mutation.forEachTableUse { kind, table, creation throws(LogStoreError) in
      // By the name's bytes, as the directory has its tables.
      let name = local.isEmpty ? nil : TableName(table)
      let current: Int64?
      switch name.flatMap({ local[$0] }) {
      case .exists(let pendingLifetime)?: current = pendingLifetime
      case .dropped?: current = nil
      case nil: current = keys.lifetime(ofTable: table)
      }
      if kind == .createTable {
        // A creation without a lifetime keeps the one an existing table has.
        local[name ?? TableName(table)] = .exists(lifetime: creation ?? current ?? 0)
        return
      }
      guard let current else { throw tableNotFound(table) }
      if kind == .dropTable { local[name ?? TableName(table)] = .dropped }
      lifetime = current
    }
    pending = local
    return mutation.withFinalExpiry(lifetime: lifetime, now: clock.now)
  }
}

/// The next keys of a walk and where their records are, read together (``IndexView``'s
/// `visit(_:_:_:)`).
struct RecordBatch {
  /// Enough for the misses of most of a batch to overlap (32 measured no faster); at most 32,
  /// the bits of the word that marks the batch's members.
  static let capacity = 16
  private(set) var items: [(key: UnsafeRawBufferPointer, location: RecordLocation)] = []

  init() { items.reserveCapacity(Self.capacity) }

  var count: Int { items.count }
  var isFull: Bool { items.count == Self.capacity }

  mutating func append(_ key: UnsafeRawBufferPointer, _ location: RecordLocation) {
    items.append((key, location))
  }

  mutating func removeAll() { items.removeAll(keepingCapacity: true) }
}

/// What visits a table's items: the key, value and timestamp of each (borrowed for the call),
/// and when it expires (nil: never); it returns false to stop.
package typealias EntryVisitor = (
  _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, _ timestamp: Timestamp,
  _ expires: Timestamp?
) -> Bool

/// A record appended to the log but perhaps not yet applied to the index.
struct Appended {
  let file: SegmentFile
  let offset: Int
  let length: Int
  let firstSequence: UInt64
}
