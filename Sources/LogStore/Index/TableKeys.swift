/// The keys of one table and their locations, copied into one buffer for sorting: what
/// iteration (``StoreEngine/forEachEntry(in:withPrefix:_:)``) and a checkpoint (``IndexSnapshot``) both
/// take from a ``TableIndex``.
struct TableKeys {
  /// The keys, one after another; `items` says where each is.
  var keys: [UInt8] = []
  var items: [SortItem] = []
  /// The first `sortedCount` items are in key order already: the keys the base holds, walked
  /// first.
  var sortedCount = 0

  /// Every key of `table` that starts with `prefix`; nil if its base was found damaged on the
  /// way.
  init?(
    of table: TableIndex,
    prefix: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)
  ) {
    if prefix.isEmpty { items.reserveCapacity(table.count) }
    func add(_ key: UnsafeRawBufferPointer, _ location: RecordLocation) {
      guard bytesHavePrefix(key, prefix) else { return }
      items.append(SortItem(key: key, keyStart: keys.count, location: location))
      keys.append(contentsOf: key)
    }
    // The keys the index file holds first, in its order: only the keys added since need
    // sorting.
    var restStart: Int?
    let intact = table.forEachKey(
      baseOrdered: add,
      rest: { key, location in
        if restStart == nil { restStart = items.count }
        add(key, location)
      })
    guard intact else { return nil }
    sortedCount = restStart ?? items.count
  }

  /// Keys gathered elsewhere (``CompactedIndex``): `items` point into `keys`, and the first
  /// `sortedCount` of them are in key order.
  init(keys: [UInt8], items: [SortItem], sortedCount: Int) {
    self.keys = keys
    self.items = items
    self.sortedCount = sortedCount
  }

  /// Sorts the items by their keys' bytes.
  mutating func sort() {
    SortItem.sort(&items, sortedCount: sortedCount, keys: keys)
    sortedCount = items.count
  }
}
