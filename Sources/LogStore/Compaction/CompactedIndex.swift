/// The index file a compaction writes of its outputs, gathered as it copies (docs/FORMAT.md,
/// "Index files"; DESIGN.md, "Replay in log order; compaction keeps order").
///
/// Its position is the end of the last output: the outputs hold the store as it was when the
/// compaction sealed the active segment, and everything written since is in the segments after
/// them, which the store reads over the file as an open does
/// (``Checkpointer/adopt(number:segments:sizes:)``). The file holds every record the compaction
/// copied, at its new place. A key that changed after
/// the seal and before its record was judged is not copied, so the file lacks it, and may lack a
/// table made or dropped meanwhile: the records after the position put such a key or table back,
/// or delete it again, which a directory that lacks it takes the same way.
///
/// Writing it here, rather than relocating every key in memory and then walking the old file
/// for a checkpoint, spares one pass over every key and the heap that relocated keys take.
struct CompactedIndex {
  /// What one table's file entry gathers.
  private struct Table {
    var keys: [UInt8] = []
    /// The keys copied, in the order they were copied: the listing's, key order
    /// (``KeyDirectory/liveRecords(below:)``), so the file takes them as they are.
    var items: [SortItem] = []
    var expiries: [[UInt8]: Int64] = [:]
    var creation: RecordLocation?
    var liveBytes = 0
  }

  private let listing: [ListedTable]
  private var tables: [Table]

  init(listing live: LiveRecords) {
    listing = live.tables
    tables = live.tables.map { listed in
      var table = Table()
      // Room for every listed key at once: grown by doubling, these lists were copied onto
      // fresh pages at each step (at 5M keys, 18% of a compaction's samples in perf, 9% with
      // the room made).
      table.items.reserveCapacity(listed.keyCount)
      table.keys.reserveCapacity(listed.keyBytes)
      return table
    }
  }

  /// Notes that `record`, listed as `item`, was copied to `location`.
  mutating func add(_ record: Record, listedAs item: LiveRecord, copiedTo location: RecordLocation)
  {
    let table = Int(item.table)
    if item.source == .creation {
      tables[table].creation = location
      return
    }
    tables[table].items.append(
      SortItem(key: record.key, keyStart: tables[table].keys.count, location: location))
    tables[table].keys.append(contentsOf: record.key)
    tables[table].liveBytes += Int(location.length)
    if let expiry = record.expiry { tables[table].expiries[Array(record.key)] = expiry }
  }

  /// The file's contents: each listed table that existed when the compaction began, with its
  /// keys in key order. A table existed then if its creation record or one of its keys was
  /// copied, or if it has no creation record (salvage made it). Any other was made after, or
  /// dropped and made again after (a drop takes every key with it), and the records after the
  /// file's position make it. Left in the file, it would have no creation record (a creation
  /// that finds its table there changes nothing but a lifetime), and an empty table without one
  /// is gone after the next compaction.
  ///
  /// A table whose keys were copied but not its creation was made again with a lifetime
  /// meanwhile (that moves the creation record and keeps the keys), or dropped while its keys
  /// were being copied: it is in the file with its keys, and the records after the position
  /// give it its creation again, or drop it.
  consuming func snapshot(segments: [IndexFileFormat.CoveredSegment], nextSequence: UInt64)
    -> IndexSnapshot
  {
    var result: [IndexSnapshot.Table] = []
    result.reserveCapacity(listing.count)
    for position in tables.indices {
      let listed = listing[position]
      var gathered = Table()
      swap(&gathered, &tables[position])
      let existed = gathered.creation != nil || !gathered.items.isEmpty || listed.creation == nil
      guard existed else { continue }
      let sorted = gathered.items.count
      result.append(
        IndexSnapshot.Table(
          name: Array(listed.name.utf8), creation: gathered.creation,
          keys: TableKeys(keys: gathered.keys, items: gathered.items, sortedCount: sorted),
          liveBytes: gathered.liveBytes, expiries: gathered.expiries, lifetime: listed.lifetime))
    }
    var snapshot = IndexSnapshot(segments: segments, nextSequence: nextSequence, tables: result)
    snapshot.sortKeys()
    return snapshot
  }
}
