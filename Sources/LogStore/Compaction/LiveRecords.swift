/// A record compaction copies: one the key directory points at, in a segment being compacted.
struct LiveRecord {
  enum Source: UInt8 {
    /// Its table's creation record.
    case creation
    /// A key's value, found among the keys changed since the index file (or in a directory
    /// without one).
    case changed
    /// A key's value, found in the index file.
    case base
  }

  // In this order, the fields take 32 bytes (a million of them are listed for a million keys).
  var location: RecordLocation
  /// The position of its table in the list ``KeyDirectory/liveRecords(below:)`` returns.
  var table: UInt32
  /// Its place in the listing, before the listing is sorted by location: the keys of a table
  /// that come from the index file are listed in key order, so the index file a compaction
  /// writes (``CompactedIndex``) takes that order from here instead of sorting them again.
  var rank: UInt32
  var source: Source
  /// The ``KeyHash`` of the key the directory holds it for (0 for a creation): the copy checks
  /// that the record there is that key's.
  var keyHash: UInt64

  /// Segment, then offset: the order the copy reads records in.
  var order: UInt64 { UInt64(location.segment) << 32 | UInt64(location.offset) }
}

extension LiveRecord: RadixSorted {
  var radixKey: UInt64 { order }
}

/// A table as compaction listed it: its name, the index file's table under it then, and
/// what the index file a compaction writes needs of it.
struct ListedTable {
  var name: String
  var base: MappedTable?
  /// Where its creation record was (none for a table salvage made).
  var creation: RecordLocation?
  /// Its default lifetime for puts, µs (0: none).
  var lifetime: Int64
  /// The ranks (``LiveRecord/rank``) of its keys changed since the index file, then of its
  /// keys in the index file (in key order).
  var changedRanks: Range<Int>
  var baseRanks: Range<Int>
  /// The bytes of the keys listed.
  var keyBytes: Int
}

/// What compaction keeps, listed from the directory (``KeyDirectory/liveRecords(below:)``).
struct LiveRecords {
  var tables: [ListedTable]
  /// In the order of their segments and offsets.
  var records: [LiveRecord]
  /// The directory listed, by its ``KeyDirectory/identity`` (a directory replaced meanwhile,
  /// by a rebuild or another process's rotation, is not kept alive for this, and a new one
  /// never passes for it), and how many changes it had applied then
  /// (``KeyDirectory/changesApplied``).
  let listedDirectory: KeyDirectory.Identity
  var listedChanges: UInt64
}

extension KeyDirectory {
  /// Every record in a segment numbered below `limit` (compaction's inputs) that the directory
  /// points at (each key's value and each table's creation record), sorted by segment and
  /// offset, with their tables; nil if the index file was found damaged on the way. Call with
  /// the index lock held.
  ///
  /// What compaction keeps is read from the directory once, and the inputs only where it
  /// points. Records in the inputs can only lose their keys while compaction runs (every write
  /// goes to a segment above the limit): each is checked again just before it is copied
  /// (``judge(count:in:listed:judged:)``), so that what was overwritten meanwhile is left behind.
  func liveRecords(below limit: UInt32) -> LiveRecords? {
    var listed: [ListedTable] = []
    var records: [LiveRecord] = []
    // Room for every key and creation at once, when the count is known: growing by doubling
    // copied the list and touched fresh pages of twice its size.
    let all = tablesForReading()
    records.reserveCapacity((isSettled ? itemCount : 0) + all.count)
    for (name, table) in all {
      let position = UInt32(listed.count)
      let creation = table.creation
      if let creation, creation.segment < limit {
        records.append(
          LiveRecord(
            location: creation, table: position, rank: UInt32(records.count), source: .creation,
            keyHash: 0))
      }
      let changedStart = records.count
      var keyBytes = 0
      table.forEachChangedKey { key, at in
        keyBytes += records.appendListed(.changed, key, at: at, table: position, below: limit)
      }
      let baseStart = records.count
      guard
        table.forEachBaseKey({ key, at in
          keyBytes += records.appendListed(.base, key, at: at, table: position, below: limit)
        })
      else { return nil }
      listed.append(
        ListedTable(
          name: name, base: table.base, creation: creation, lifetime: table.lifetime,
          changedRanks: changedStart..<baseStart, baseRanks: baseStart..<records.count,
          keyBytes: keyBytes))
    }
    // Sorted before it is handed over: sorted inside the result, the list had a second
    // reference here, and the sort's second pass copied all of it again.
    radixSort(&records)
    return LiveRecords(
      tables: listed, records: records, listedDirectory: identity, listedChanges: changesApplied)
  }

  /// Whether each of `count` records, listed by ``liveRecords(below:)`` as `live`, is still
  /// what the directory points at: `listed(i)` gives the i-th (its listing and key), `judged`
  /// takes the answer. False if the index file was found damaged. Call with the index lock
  /// held.
  ///
  /// When this directory has applied no change since it was listed, every record is: nothing
  /// is looked up (a key's lookup in a large table is a miss in the cache, and a compaction
  /// with no writes beside it made one for every record). Otherwise runs of records of one
  /// table look it up once, and nothing in the loop is retained and released per record: each
  /// such atomic operation waits for the loads before it, so that the lookups of successive
  /// keys could not overlap.
  func judge(
    count: Int, in live: LiveRecords,
    listed: (Int) -> (item: LiveRecord, key: UnsafeRawBufferPointer),
    judged: (Int, Bool) -> Void
  ) -> Bool {
    if live.listedDirectory === identity && live.listedChanges == changesApplied {
      for position in 0..<count { judged(position, true) }
      return true
    }
    let tables = live.tables
    var position = 0
    while position < count {
      // A run of records of one listed table. Its fields are read in place: a copy of it would
      // retain and release each of its references.
      let listedTable = listed(position).item.table
      let at = Int(listedTable)
      let table = tableForReading(tables[at].name)
      let base = tables[at].base.map(ObjectIdentifier.init)
      repeat {
        let (item, key) = listed(position)
        guard item.table == listedTable else { break }
        if item.source == .creation {
          judged(position, table?.creation == item.location)
        } else if let table {
          guard
            let points = table.stillPoints(
              key, hash: item.keyHash, at: item.location,
              listedFrom: item.source == .base ? base : nil)
          else { return false }
          judged(position, points)
        } else {
          judged(position, false)
        }
        position += 1
      } while position < count
    }
    return true
  }
}

extension [LiveRecord] {
  /// Appends the listing of a key at `at` in the listed table `table`, ranked by its place,
  /// unless it is in a segment from `limit` up; returns the bytes of the key listed (0 if none).
  fileprivate mutating func appendListed(
    _ source: LiveRecord.Source, _ key: UnsafeRawBufferPointer, at: RecordLocation, table: UInt32,
    below limit: UInt32
  ) -> Int {
    guard at.segment < limit else { return 0 }
    append(
      LiveRecord(
        location: at, table: table, rank: UInt32(count), source: source,
        keyHash: KeyHash.hash(key)))
    return key.count
  }
}
