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

  var location: RecordLocation
  /// The position of its table in the list ``KeyDirectory/liveRecords(below:)`` returns.
  var table: UInt32
  var source: Source
  /// The ``KeyHash`` of the key the directory holds it for (0 for a creation): the copy checks
  /// that the record there is that key's.
  var keyHash: UInt64

  /// Segment, then offset: the order the copy reads records in.
  var order: UInt64 { UInt64(location.segment) << 32 | UInt64(location.offset) }
}

extension KeyDirectory {
  /// A table as compaction listed it: its name, and the index file's table under it then.
  typealias ListedTable = (name: String, base: MappedTable?)

  /// Every record in a segment numbered below `limit` (compaction's inputs) that the directory
  /// points at (each key's value and each table's creation record), sorted by segment and
  /// offset, with their tables; nil if the index file was found damaged on the way. Call with
  /// the index lock held.
  ///
  /// What compaction keeps is read from the directory once, and the inputs only where it
  /// points. Records in the inputs can only lose their keys while compaction runs (every write
  /// goes to a segment above the limit): each is checked again just before it is copied
  /// (``stillPoints(at:record:in:)``), so that what was overwritten meanwhile is left behind.
  func liveRecords(below limit: UInt32) -> (tables: [ListedTable], records: [LiveRecord])? {
    var listed: [ListedTable] = []
    var records: [LiveRecord] = []
    for (name, table) in tables {
      let position = UInt32(listed.count)
      listed.append((name, table.base))
      if let creation = creations[name], creation.segment < limit {
        records.append(
          LiveRecord(location: creation, table: position, source: .creation, keyHash: 0))
      }
      func add(_ source: LiveRecord.Source) -> (UnsafeRawBufferPointer, RecordLocation) -> Void {
        { key, location in
          guard location.segment < limit else { return }
          records.append(
            LiveRecord(
              location: location, table: position, source: source, keyHash: KeyHash.hash(key)))
        }
      }
      table.forEachChangedKey(add(.changed))
      guard table.forEachBaseKey(add(.base)) else { return nil }
    }
    records.sort { $0.order < $1.order }
    return (listed, records)
  }

  /// Whether `record`, listed as `item` by ``liveRecords(below:)`` in `listed`, is still what
  /// the directory points at. Call with the index lock held.
  func stillPoints(at item: LiveRecord, record: Record, in listed: ListedTable) -> Bool {
    guard item.source != .creation else { return creations[listed.name] == item.location }
    guard let table = table(listed.name) else { return false }
    return table.stillPoints(
      record.key, hash: item.keyHash, at: item.location,
      listedFrom: item.source == .base ? listed.base : nil)
  }
}
