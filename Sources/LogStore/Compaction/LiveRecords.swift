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
  var source: Source
  /// The ``KeyHash`` of the key the directory holds it for (0 for a creation): the copy checks
  /// that the record there is that key's.
  var keyHash: UInt64
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
  /// How many of its keys were listed, and their bytes.
  var keyCount: Int
  var keyBytes: Int
}

/// What compaction keeps, listed from the directory (``KeyDirectory/liveRecords(below:)``).
struct LiveRecords {
  var tables: [ListedTable]
  /// Table by table (by name), each table's creation first, then its keys in key order: the
  /// order the copy writes them in.
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
  /// points at (each key's value and each table's creation record), table by table in the
  /// order of their names, each table's creation first and then its keys in key order, with
  /// their tables; nil if the index file was found damaged on the way. Call with the index
  /// lock held.
  ///
  /// What compaction keeps is read from the directory once, and the inputs only where it
  /// points. Records in the inputs can only lose their keys while compaction runs (every write
  /// goes to a segment above the limit): each is checked again just before it is copied
  /// (``judge(count:in:listed:judged:)``), so that what was overwritten meanwhile is left behind.
  ///
  /// The keys of the index file come in key order from it; those changed since are sorted
  /// (their first 16 bytes as numbers, ``SortItem``) and merged in. So the outputs hold each
  /// table in key order, as an SSTable does, and reading a table in order reads them front to
  /// back.
  func liveRecords(below limit: UInt32) -> LiveRecords? {
    var listed: [ListedTable] = []
    var records: [LiveRecord] = []
    // Tables in the order of their names' bytes: the outputs are then in the order of table
    // and key, the same from one compaction of a store to the next.
    let all = tablesForReading().sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    // Room for every key and creation at once, when the count is known: growing by doubling
    // copied the list and touched fresh pages of twice its size.
    records.reserveCapacity((isSettled ? itemCount : 0) + all.count)
    var changed = ChangedKeys()
    for (name, table) in all {
      let position = UInt32(listed.count)
      let creation = table.creation
      if let creation, creation.segment < limit {
        records.append(
          LiveRecord(location: creation, table: position, source: .creation, keyHash: 0))
      }
      let keysStart = records.count
      var keyBytes = 0
      table.forEachChangedKey { key, at in
        guard at.segment < limit else { return }
        changed.add(key, at: at)
        keyBytes += key.count
      }
      changed.sort()
      guard
        table.forEachBaseKey({ key, at in
          guard at.segment < limit else { return }
          changed.append(preceding: key, to: &records, table: position)
          records.append(
            LiveRecord(location: at, table: position, source: .base, keyHash: KeyHash.hash(key)))
          keyBytes += key.count
        })
      else { return nil }
      changed.append(preceding: nil, to: &records, table: position)
      listed.append(
        ListedTable(
          name: name, base: table.base, creation: creation, lifetime: table.lifetime,
          keyCount: records.count - keysStart, keyBytes: keyBytes))
    }
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

/// The keys of one table changed since the index file, copied and sorted so that the listing
/// can merge them into the index file's keys (``KeyDirectory/liveRecords(below:)``).
private struct ChangedKeys {
  var keys: [UInt8] = []
  var items: [SortItem] = []
  /// The next item to merge.
  var next = 0

  mutating func add(_ key: UnsafeRawBufferPointer, at location: RecordLocation) {
    items.append(SortItem(key: key, keyStart: keys.count, location: location))
    keys.append(contentsOf: key)
  }

  mutating func sort() { SortItem.sort(&items, keys: keys) }

  /// Appends to `records` the listings of the keys not merged yet that sort before `key`
  /// (all of them when nil); once all are, empties the lists for the next table.
  mutating func append(
    preceding key: UnsafeRawBufferPointer?, to records: inout [LiveRecord], table: UInt32
  ) {
    guard next < items.count else { return }
    keys.withUnsafeBytes { all in
      let bound = key.map {
        SortItem(key: $0, keyStart: 0, location: RecordLocation(segment: 0, offset: 0, length: 0))
      }
      while next < items.count {
        let item = items[next]
        let bytes = UnsafeRawBufferPointer(
          rebasing: all[item.keyStart..<item.keyStart + item.keyLength])
        if let key, let bound, !SortItem.precedes(item, bytes, bound, key) { break }
        records.append(
          LiveRecord(
            location: item.location, table: table, source: .changed,
            keyHash: KeyHash.hash(bytes)))
        next += 1
      }
    }
    if next == items.count {
      keys.removeAll(keepingCapacity: true)
      items.removeAll(keepingCapacity: true)
      next = 0
    }
  }
}
