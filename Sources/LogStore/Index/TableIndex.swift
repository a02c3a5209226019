/// The number of keys and live bytes of every table of a ``KeyDirectory`` together.
///
/// Each ``TableIndex`` adds its own changes here as it makes them, so that the store's totals
/// (`statistics()`, and the automatic-compaction check every megabyte written) cost the same
/// whatever the number of tables, instead of a sum over all of them. Guarded, like the tables,
/// by the store's index lock.
final class IndexTotals {
  @exclusivity(unchecked) fileprivate(set) var count = 0
  @exclusivity(unchecked) fileprivate(set) var liveBytes = 0
  /// A writer found a table's index file damaged while changing the table (``TableIndex``):
  /// its counts may be wrong, and the store rebuilds its index from the log.
  @exclusivity(unchecked) fileprivate(set) var baseDamaged = false
  /// Bytes of heap the tables hold (``TableIndex/allocatedBytes``).
  @exclusivity(unchecked) fileprivate(set) var heapBytes = 0
  /// Keys whose counting waits for a lookup in their table's index file
  /// (``TableIndex/settle()``): while there are any, `count` and `liveBytes` are not exact.
  @exclusivity(unchecked) fileprivate(set) var unsettled = 0
  /// Tables that have keys with an expiry (``TableIndex/expiring``): while there are none,
  /// nothing has expired, and `statistics()` need not visit each table to know it.
  @exclusivity(unchecked) fileprivate(set) var tablesWithExpiries = 0

  /// Counts the keys and live bytes of tables not made yet (an index file's, counted from its
  /// directory at open; ``TableIndex/init(totals:base:baseCounted:)`` makes them later).
  func addUnmade(count: Int, liveBytes: Int) {
    self.count += count
    self.liveBytes += liveBytes
  }

  /// A table's part of the index file was found damaged when it was made.
  func noteBaseDamaged() { baseDamaged = true }
}

/// The in-memory index of one table: a hash table from key bytes to ``RecordLocation``.
///
/// Open addressing with linear probing and backward-shift deletion (no tombstones), at most
/// three quarters full. A slot is 16 bytes: 32 bits of the key's hash (0 marks an empty slot),
/// a reference into the key arena, and the record's segment and offset. The arena holds each
/// key once as `[record length: u32][key count: u16][key bytes]`; deleted keys leave garbage
/// in it that is squeezed out when it passes half the arena.
///
/// Memory per key is therefore 16 bytes / load factor (21 to 43 bytes) plus 6 bytes and the
/// key itself in the arena (which grows by half when full). Not thread-safe: the store guards
/// it with its index lock.
///
/// A table opened from an index file has that file's table as its *base*: the keys here are
/// an overlay of what changed since. A key here hides the base's entry for it: a live entry
/// replaces it, a *tombstone* (an arena entry whose record length is ``tombstone``) deletes
/// it. A tombstone is kept only for a key the base holds. `count` and `liveBytes` are those of
/// the table as a whole, base included.
///
/// Knowing what a key hid in the base costs a lookup in the file, two cache misses on pages
/// an open has not touched yet. An open replaying the log written after the index file
/// therefore leaves that lookup for later (`settleLater`): it counts such a key as if the
/// base did not hold it, keeps a tombstone for every key it deletes, and lists the key as
/// *unsettled*. ``settle()`` looks them all up at once and corrects the counts; until then
/// lookups and iteration are right (an entry here hides the base's either way) but `count`
/// and `liveBytes` are not, and nothing but lookups and iteration may use the table.
final class TableIndex {
  private struct Slot {
    var hash: UInt32
    var keyReference: UInt32
    var segment: UInt32
    var offset: UInt32
  }

  // Guarded by the store's index lock; the runtime's exclusivity checks are off for speed.
  @exclusivity(unchecked) private var slots: UnsafeMutablePointer<Slot>
  @exclusivity(unchecked) private var mask: Int
  @exclusivity(unchecked) private(set) var count = 0
  /// The sum of the encoded lengths of the records the index points at.
  @exclusivity(unchecked) private(set) var liveBytes = 0
  /// The directory's totals, which every change of `count` and `liveBytes` updates too.
  @exclusivity(unchecked) private var totals: IndexTotals

  /// The keys that have an expiry (nil until one does): see ``ExpiringKeys``.
  @exclusivity(unchecked) private(set) var expiring: ExpiringKeys?
  /// The lifetime a put into this table gets when it names none, in microseconds; 0: none.
  /// Set by the table's creation record; the store, not the index, applies it to puts.
  @exclusivity(unchecked) var lifetime: Int64 = 0
  /// Where the record that created the table is: compaction keeps exactly the creation records
  /// of the tables that exist (a table created implicitly by salvage has none).
  @exclusivity(unchecked) var creation: RecordLocation?

  /// The index file's table under this one, if the table was opened from one.
  @exclusivity(unchecked) private(set) var base: MappedTable?
  /// Slots in use: live entries and tombstones.
  @exclusivity(unchecked) private var occupied = 0

  @exclusivity(unchecked) private var arena: UnsafeMutableRawPointer
  @exclusivity(unchecked) private var arenaCapacity: Int
  @exclusivity(unchecked) private var arenaUsed = 0
  @exclusivity(unchecked) private var arenaGarbage = 0
  /// The arena references of the unsettled keys, in increasing order (the arena only grows,
  /// and is not squeezed while any are unsettled).
  @exclusivity(unchecked) private var unsettled: [UInt32] = []

  private static let arenaEntryHeader = 6
  /// How many keys are looked up or removed together, their slots loaded first.
  private static let lookupGroup = 16
  /// Folds in slots loaded ahead of use, so that the loads are not optimized away.
  @exclusivity(unchecked) private var warmed: UInt32 = 0
  static let minimumCapacity = 16

  /// A table whose changes are added to `totals`; by default, to totals of its own. With a
  /// `base`, it starts as that index file's table.
  ///
  /// `baseCounted` says the totals count the base's keys and live bytes already: a table of an
  /// index file made after the open (``KeyDirectory``), whose keys the open counted from the
  /// file's directory.
  init(totals: IndexTotals = IndexTotals(), base: MappedTable? = nil, baseCounted: Bool = false) {
    self.totals = totals
    self.base = base
    // A table over an index file holds only what changes after it, often nothing: it starts
    // with the least room, so that opening a store of thousands of tables allocates and
    // clears almost nothing for them. Its first insert grows it.
    let capacity = base == nil ? Self.minimumCapacity : 1
    slots = Self.allocateSlots(capacity)
    mask = capacity - 1
    arenaCapacity = base == nil ? 256 : 0
    arena = IndexMemory.allocateZeroed(byteCount: arenaCapacity)
    if let base {
      if baseCounted {
        count = base.count
        liveBytes = base.liveBytes
      } else {
        adjust(count: base.count, liveBytes: base.liveBytes)
      }
      lifetime = base.lifetime
      loadBaseExpiries()
    }
    allocationChanged()
  }

  /// A copy of `other` with memory of its own (the base, which never changes, is shared) and
  /// totals of its own: two memory copies, for a checkpoint, which copies the tables while it
  /// holds the log's lock and reads the copies after releasing it.
  init(copying other: TableIndex) {
    precondition(other.unsettled.isEmpty, "an unsettled table copied")
    totals = IndexTotals()
    base = other.base
    mask = other.mask
    slots = Self.allocateSlots(other.mask + 1)
    slots.update(from: other.slots, count: other.mask + 1)
    arenaCapacity = max(other.arenaUsed, 1)
    arena = IndexMemory.allocateZeroed(byteCount: arenaCapacity)
    arena.copyMemory(from: other.arena, byteCount: other.arenaUsed)
    arenaUsed = other.arenaUsed
    arenaGarbage = other.arenaGarbage
    occupied = other.occupied
    lifetime = other.lifetime
    creation = other.creation
    adjust(count: other.count, liveBytes: other.liveBytes)
    allocationChanged()
    setExpiring(other.expiring.map { ExpiringKeys(copying: $0) })
  }

  deinit {
    if expiring != nil { totals.tablesWithExpiries -= 1 }
    totals.heapBytes -= countedHeapBytes
    Self.deallocateSlots(slots, mask + 1)
    IndexMemory.deallocate(arena, byteCount: arenaCapacity)
  }

  /// Empty slots (all zero: a hash of 0 marks an empty slot).
  private static func allocateSlots(_ capacity: Int) -> UnsafeMutablePointer<Slot> {
    IndexMemory.allocateZeroed(
      byteCount: capacity * MemoryLayout<Slot>.stride, touchedWhole: true
    )
    .bindMemory(to: Slot.self, capacity: capacity)
  }

  private static func deallocateSlots(_ slots: UnsafeMutablePointer<Slot>, _ capacity: Int) {
    IndexMemory.deallocate(
      UnsafeMutableRawPointer(slots), byteCount: capacity * MemoryLayout<Slot>.stride)
  }

  /// Bytes of memory the index holds (slots, arena and the list of unsettled keys), for
  /// measurements.
  var allocatedBytes: Int {
    (mask + 1) * MemoryLayout<Slot>.stride + arenaCapacity
      + unsettled.capacity * MemoryLayout<UInt32>.stride
  }
  /// What `allocatedBytes` was when the totals last heard of it.
  @exclusivity(unchecked) private var countedHeapBytes = 0

  /// Tells the totals of a change of `allocatedBytes`.
  private func allocationChanged() {
    let now = allocatedBytes
    totals.heapBytes += now - countedHeapBytes
    countedHeapBytes = now
  }

  /// Changes the number of keys and live bytes, here and in the totals: every change to
  /// either goes through here, so the totals never drift from the sum over the tables.
  @inline(__always)
  private func adjust(count countChange: Int, liveBytes bytesChange: Int) {
    count += countChange
    liveBytes += bytesChange
    totals.count += countChange
    totals.liveBytes += bytesChange
  }

  /// Takes the table out of the totals it was counted in, for a table that leaves its
  /// directory (dropped, or replaced by an empty one when cleared): it counts only towards
  /// totals of its own from then on.
  func detachFromTotals() {
    totals.count -= count
    totals.liveBytes -= liveBytes
    totals.heapBytes -= countedHeapBytes
    totals.unsettled -= unsettled.count
    let withExpiries = expiring == nil ? 0 : 1
    totals.tablesWithExpiries -= withExpiries
    totals = IndexTotals()
    totals.count = count
    totals.liveBytes = liveBytes
    totals.heapBytes = countedHeapBytes
    totals.unsettled = unsettled.count
    totals.tablesWithExpiries = withExpiries
  }

  // MARK: Lookup

  @inline(__always)
  private static func slotHash(_ hash: UInt64) -> UInt32 {
    let high = UInt32(truncatingIfNeeded: hash >> 32)
    return high == 0 ? 1 : high
  }

  @inline(__always)
  private func keyBytes(_ reference: UInt32) -> UnsafeRawBufferPointer {
    let entry = arena + Int(reference)
    let count = Int(entry.loadUnaligned(fromByteOffset: 4, as: UInt16.self))
    return UnsafeRawBufferPointer(start: entry + Self.arenaEntryHeader, count: count)
  }

  @inline(__always)
  private func recordLength(_ reference: UInt32) -> UInt32 {
    (arena + Int(reference)).loadUnaligned(as: UInt32.self)
  }

  @inline(__always)
  private func setRecordLength(_ reference: UInt32, _ length: UInt32) {
    (arena + Int(reference)).storeBytes(of: length, as: UInt32.self)
  }

  /// The slot holding `key`, or the empty slot where it would go (negative: `-1 - index`).
  @inline(__always)
  private func probe(_ key: UnsafeRawBufferPointer, _ hash: UInt32) -> Int {
    // Truncating: where `Int` is 32 bits wide, a hash above `Int32.max` must not trap.
    var index = Int(truncatingIfNeeded: hash) & mask
    var slot = slots[index]
    while slot.hash != 0 {
      if slot.hash == hash && bytesEqual(keyBytes(slot.keyReference), key) { return index }
      index = (index + 1) & mask
      slot = slots[index]
    }
    return -1 - index
  }

  /// The record length of a tombstone's arena entry (no record is that long).
  private static let tombstone = UInt32.max - 1

  @inline(__always)
  private func isTombstone(_ slot: Slot) -> Bool {
    recordLength(slot.keyReference) == Self.tombstone
  }

  @inline(__always)
  private func recordLocation(of slot: Slot) -> RecordLocation {
    RecordLocation(
      segment: slot.segment, offset: slot.offset, length: recordLength(slot.keyReference))
  }

  /// Loads the slot where the probe for `hash` starts, so that the lookup or insert that
  /// follows finds it in the cache. Warming the slots of a few keys first and then using them
  /// lets their cache misses overlap instead of following one another.
  @inline(__always)
  func warm(_ hash: UInt64) {
    // Kept, so that the load is not optimized away.
    warmed ^= slots[Int(truncatingIfNeeded: Self.slotHash(hash)) & mask].hash
  }

  /// Where `key`'s record is, for readers: they may not change the table, so a damaged base
  /// is reported, for the caller to deal with.
  func lookup(_ key: UnsafeRawBufferPointer, hash: UInt64) -> MappedLookup {
    // Nothing changed since the index file (most tables of a store of many): its slots, which
    // a probe would find empty, are not read (a cache miss a read, in a store of thousands).
    guard occupied > 0 else { return base?.find(key) ?? .absent }
    let index = probe(key, Self.slotHash(hash))
    if index >= 0 {
      let slot = slots[index]
      return isTombstone(slot) ? .absent : .found(recordLocation(of: slot))
    }
    return base?.find(key) ?? .absent
  }

  /// Where `key`'s record is. A damaged base answers nil and is recorded in the totals
  /// (``IndexTotals/baseDamaged``), so only a thread that may change the table calls this.
  func find(_ key: UnsafeRawBufferPointer, hash: UInt64) -> RecordLocation? {
    switch lookup(key, hash: hash) {
    case .found(let location): return location
    case .absent: return nil
    case .damaged:
      totals.baseDamaged = true
      return nil
    }
  }

  /// Where the base has `key`'s record (nil without a base); damage as in ``find(_:hash:)``.
  private func baseFind(_ key: UnsafeRawBufferPointer) -> RecordLocation? {
    guard let base else { return nil }
    switch base.find(key) {
    case .found(let location): return location
    case .absent: return nil
    case .damaged:
      totals.baseDamaged = true
      return nil
    }
  }

  /// Whether `key` still points at `location`, which it pointed at when compaction listed it
  /// (``KeyDirectory/liveRecords(below:)``), in `base` if it was found there; nil if the base
  /// was found damaged. A key with no entry here has the base's location, and a base never
  /// changes: while it is still the one listed from, nothing is looked up. (It is not when the
  /// directory was read anew meanwhile, as another process's rotation makes a `.manyProcesses`
  /// store do: then the base is asked.)
  func stillPoints(
    _ key: UnsafeRawBufferPointer, hash: UInt64, at location: RecordLocation,
    listedFrom base: ObjectIdentifier?
  ) -> Bool? {
    let index = probe(key, Self.slotHash(hash))
    if index >= 0 {
      return !isTombstone(slots[index]) && recordLocation(of: slots[index]) == location
    }
    return basePoints(key, listedFrom: base) { $0 == location }
  }

  /// For a key with no entry here: whether the base has it where compaction listed it from
  /// the base `listed` names, which `listedPlace` tells; nil if the base was found damaged.
  /// While `listed` is still the base nothing is looked up: a base never changes. (The base is
  /// named by its identity, which the listing holds, so that no reference is counted per key.)
  private func basePoints(
    _ key: UnsafeRawBufferPointer, listedFrom listed: ObjectIdentifier?,
    listedPlace: (RecordLocation) -> Bool
  ) -> Bool? {
    if let listed, let base, listed == ObjectIdentifier(base) { return true }
    switch base?.find(key) ?? .absent {
    case .found(let found): return listedPlace(found)
    case .absent: return false
    case .damaged: return nil
    }
  }

  // MARK: Changes

  /// Points `key` at `location`; returns where it pointed before, if anywhere (nil also when
  /// `settleLater` left the base unasked).
  @discardableResult
  func upsert(
    _ key: UnsafeRawBufferPointer, hash: UInt64, location: RecordLocation,
    settleLater: Bool = false, expiry: Int64? = nil
  ) -> RecordLocation? {
    setExpiry(of: key, to: expiry, length: location.length)
    let slotHash = Self.slotHash(hash)
    let index = probe(key, slotHash)
    if index >= 0 {
      let hidden = isTombstone(slots[index])
      let previous = recordLocation(of: slots[index])
      slots[index].segment = location.segment
      slots[index].offset = location.offset
      setRecordLength(slots[index].keyReference, location.length)
      if hidden {
        adjust(count: 1, liveBytes: Int(location.length))
        return nil
      }
      adjust(count: 0, liveBytes: Int(location.length) - Int(previous.length))
      return previous
    }
    if settleLater && base != nil {
      // Counted as a new key until `settle()` asks the base.
      let reference = insert(key, slotHash: slotHash, at: -1 - index, location: location)
      addUnsettled(reference)
      adjust(count: 1, liveBytes: Int(location.length))
      return nil
    }
    let previous = baseFind(key)
    insert(key, slotHash: slotHash, at: -1 - index, location: location)
    adjust(
      count: previous == nil ? 1 : 0, liveBytes: Int(location.length) - Int(previous?.length ?? 0))
    return previous
  }

  /// Puts `key` in the empty slot `empty` (where its probe ended), growing the table first if
  /// it is full; a tombstone when `location` is nil. Counts nothing. Returns the key's arena
  /// reference.
  @discardableResult
  private func insert(
    _ key: UnsafeRawBufferPointer, slotHash: UInt32, at empty: Int, location: RecordLocation?
  ) -> UInt32 {
    var empty = empty
    if (occupied + 1) * 4 > (mask + 1) * 3 {
      grow()
      empty = -1 - probe(key, slotHash)
    }
    let reference = appendKey(key, length: location?.length ?? Self.tombstone)
    slots[empty] = Slot(
      hash: slotHash, keyReference: reference, segment: location?.segment ?? 0,
      offset: location?.offset ?? 0)
    occupied += 1
    return reference
  }

  /// Points `key` at `new`, the copy compaction made of its record, if it still points into
  /// the compaction's inputs (the segments numbered below `limit`); returns whether it did. A
  /// key that points there points at the record that was copied: every change made since the
  /// listing points at a segment above the outputs, so a write made while compaction copied is
  /// never undone.
  ///
  /// `base` is the base the key was listed from, if it was: while that base is still this
  /// table's, a key with no entry here still points where it was listed, without a lookup (a
  /// base never changes). A key listed from here with no entry now was removed since.
  func relocate(
    _ key: UnsafeRawBufferPointer, hash: UInt64, to new: RecordLocation, below limit: UInt32,
    listedFrom base: MappedTable? = nil
  ) -> Bool {
    precondition(unsettled.isEmpty, "an unsettled table compacted")
    let slotHash = Self.slotHash(hash)
    let index = probe(key, slotHash)
    // A copy is as long as its record: the key's length, its expiry's and the table's live
    // bytes stay as they are.
    if index < 0 {
      guard
        let points = basePoints(
          key, listedFrom: base.map(ObjectIdentifier.init), listedPlace: { $0.segment < limit })
      else {
        totals.baseDamaged = true
        return false
      }
      guard points else { return false }
      insert(key, slotHash: slotHash, at: -1 - index, location: new)
      return true
    }
    guard !isTombstone(slots[index]), recordLocation(of: slots[index]).segment < limit else {
      return false
    }
    slots[index].segment = new.segment
    slots[index].offset = new.offset
    return true
  }

  /// Removes `key`; returns where it pointed, if it was present (nil also when `settleLater`
  /// left the base unasked).
  @discardableResult
  func remove(_ key: UnsafeRawBufferPointer, hash: UInt64, settleLater: Bool = false)
    -> RecordLocation?
  {
    expiring?.remove(key)
    let slotHash = Self.slotHash(hash)
    let index = probe(key, slotHash)
    if settleLater && base != nil && index < 0 {
      // A tombstone in case the base holds the key, which `settle()` finds out.
      addUnsettled(insert(key, slotHash: slotHash, at: -1 - index, location: nil))
      return nil
    }
    guard index >= 0 else {
      // A key only the base holds is hidden by a tombstone.
      guard let previous = baseFind(key) else { return nil }
      insert(key, slotHash: slotHash, at: -1 - index, location: nil)
      adjust(count: -1, liveBytes: -Int(previous.length))
      return previous
    }
    guard !isTombstone(slots[index]) else { return nil }
    let previous = recordLocation(of: slots[index])
    if isUnsettled(slots[index].keyReference) || baseFind(key) != nil {
      makeTombstone(at: index)
    } else {
      removeSlot(at: index)
    }
    return previous
  }

  /// Turns the live entry in slot `index` into a tombstone, for a key the base holds.
  private func makeTombstone(at index: Int) {
    let reference = slots[index].keyReference
    adjust(count: -1, liveBytes: -Int(recordLength(reference)))
    setRecordLength(reference, Self.tombstone)
    slots[index].segment = 0
    slots[index].offset = 0
  }

  /// Removes every key that starts with `prefix`; returns how many there were.
  ///
  /// Walks the key arena in order (sequential memory, unlike the slots, which are in hash
  /// order) and looks up the slot of each matching key by its hash and arena reference.
  @discardableResult
  func removeAll(withPrefix prefix: UnsafeRawBufferPointer) -> Int {
    settle()
    expiring?.removeAll(withPrefix: prefix)
    let before = count
    if prefix.count == 0 {
      removeEverything()
      return before
    }
    removeFromOverlay(withPrefix: prefix)
    if let base { hideInBase(base, withPrefix: prefix) }
    return before - count
  }

  /// Puts a tombstone over every key of the base that starts with `prefix` and has no entry
  /// here (those that have one were dealt with by ``removeFromOverlay(withPrefix:)``).
  private func hideInBase(_ base: MappedTable, withPrefix prefix: UnsafeRawBufferPointer) {
    guard let first = base.lowerBound(prefix) else {
      totals.baseDamaged = true
      return
    }
    let intact = base.forEachEntry(from: first) { entry in
      guard Self.hasPrefix(entry.key, prefix) else { return false }
      let slotHash = Self.slotHash(KeyHash.hash(entry.key))
      let index = probe(entry.key, slotHash)
      if index < 0 {
        insert(entry.key, slotHash: slotHash, at: -1 - index, location: nil)
        adjust(count: -1, liveBytes: -Int(entry.location.length))
      }
      return true
    }
    if !intact { totals.baseDamaged = true }
  }

  /// Removes (or, for keys the base holds, turns into tombstones) the live entries here whose
  /// keys start with `prefix`.
  private func removeFromOverlay(withPrefix prefix: UnsafeRawBufferPointer) {
    // Matching keys are removed in groups: the slots of a group are loaded together first,
    // so that their cache misses overlap (as in KeyDirectory.applySoon).
    var group: [(reference: UInt32, hash: UInt64)] = []
    group.reserveCapacity(Self.lookupGroup)
    func removeGroup() {
      for member in group { warm(member.hash) }
      for member in group {
        removeSlot(at: slotIndex(of: member.reference, hash: member.hash), squeeze: false)
      }
      group.removeAll(keepingCapacity: true)
    }
    var position = 0
    let end = arenaUsed
    while position < end {
      let entry = arena + position
      let keyLength = Int(entry.loadUnaligned(fromByteOffset: 4, as: UInt16.self))
      let key = UnsafeRawBufferPointer(start: entry + Self.arenaEntryHeader, count: keyLength)
      let length = entry.loadUnaligned(as: UInt32.self)
      if length != Self.removedEntry && length != Self.tombstone && Self.hasPrefix(key, prefix) {
        let hash = KeyHash.hash(key)
        if base != nil && baseFind(key) != nil {
          // Turned in place: no slot moves, so the group's slots are still found.
          makeTombstone(at: slotIndex(of: UInt32(position), hash: hash))
        } else {
          group.append((UInt32(position), hash))
          if group.count == Self.lookupGroup { removeGroup() }
        }
      }
      position += Self.arenaEntryHeader + keyLength
    }
    removeGroup()
    squeezeArenaIfWasteful()
  }

  /// Whether `key` starts with `prefix` (not empty), comparing eight bytes at a time.
  @inline(__always)
  private static func hasPrefix(_ key: UnsafeRawBufferPointer, _ prefix: UnsafeRawBufferPointer)
    -> Bool
  {
    guard key.count >= prefix.count else { return false }
    let a = key.baseAddress!
    let b = prefix.baseAddress!
    var offset = 0
    while prefix.count - offset >= 8 {
      if a.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        != b.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
      {
        return false
      }
      offset += 8
    }
    while offset < prefix.count {
      if a.load(fromByteOffset: offset, as: UInt8.self)
        != b.load(fromByteOffset: offset, as: UInt8.self)
      {
        return false
      }
      offset += 1
    }
    return true
  }

  /// The slot holding the key stored at arena offset `reference`.
  private func slotIndex(of reference: UInt32, hash: UInt64) -> Int {
    let slotHash = Self.slotHash(hash)
    var index = Int(truncatingIfNeeded: slotHash) & mask
    while slots[index].hash != slotHash || slots[index].keyReference != reference {
      precondition(slots[index].hash != 0, "an arena entry without a slot")
      index = (index + 1) & mask
    }
    return index
  }

  /// Empties the table, keeping its allocated room (and letting go of the base).
  private func removeEverything() {
    slots.update(repeating: Slot(hash: 0, keyReference: 0, segment: 0, offset: 0), count: mask + 1)
    adjust(count: -count, liveBytes: -liveBytes)
    occupied = 0
    arenaUsed = 0
    arenaGarbage = 0
    base = nil
    setExpiring(nil)
    totals.unsettled -= unsettled.count
    unsettled = []
    allocationChanged()
  }

  /// Marks an arena entry whose key was removed (in its record-length field, which no record
  /// can fill): walks of the arena skip it.
  private static let removedEntry = UInt32.max

  private func removeSlot(at index: Int, squeeze: Bool = true) {
    let reference = slots[index].keyReference
    if recordLength(reference) != Self.tombstone {
      adjust(count: -1, liveBytes: -Int(recordLength(reference)))
    }
    occupied -= 1
    arenaGarbage += Self.arenaEntryHeader + keyBytes(reference).count
    setRecordLength(reference, Self.removedEntry)
    var hole = index
    var next = (hole + 1) & mask
    while slots[next].hash != 0 {
      let ideal = Int(truncatingIfNeeded: slots[next].hash) & mask
      // The entry at `next` may fill the hole if the hole lies on its probe path, that is,
      // between its ideal slot and `next` (cyclically).
      if (next &- ideal) & mask >= (next &- hole) & mask {
        slots[hole] = slots[next]
        hole = next
      }
      next = (next + 1) & mask
    }
    slots[hole].hash = 0
    if squeeze { squeezeArenaIfWasteful() }
  }

  private func squeezeArenaIfWasteful() {
    // Unsettled keys are listed by their place in the arena, which a squeeze would move.
    if unsettled.isEmpty && arenaGarbage > 1 << 16 && arenaGarbage * 2 > arenaUsed {
      squeezeArena()
    }
  }

  // MARK: Settling

  /// Whether `count` and `liveBytes` are exact: no key waits for ``settle()``.
  var isSettled: Bool { unsettled.isEmpty }

  private func addUnsettled(_ reference: UInt32) {
    let capacity = unsettled.capacity
    unsettled.append(reference)
    totals.unsettled += 1
    if unsettled.capacity != capacity { allocationChanged() }
  }

  /// Whether the key at arena offset `reference` waits for ``settle()``.
  private func isUnsettled(_ reference: UInt32) -> Bool {
    guard let last = unsettled.last, reference <= last else { return false }
    var low = 0
    var high = unsettled.count
    while low < high {
      let middle = (low + high) / 2
      if unsettled[middle] < reference { low = middle + 1 } else { high = middle }
    }
    return unsettled[low] == reference
  }

  /// Looks up in the base every key whose counting was left for later, and makes `count` and
  /// `liveBytes` exact: a key the base held counted once too often, and a tombstone for a key
  /// it did not hold is dropped. The lookups go in groups whose slot groups, then entries, are
  /// loaded before any is used, so that their cache misses overlap. A damaged part of the
  /// base is recorded in the totals (``IndexTotals/baseDamaged``), as ``find(_:hash:)`` does.
  func settle() {
    guard !unsettled.isEmpty else { return }
    if let base {
      var hashes = [UInt64](repeating: 0, count: Self.settleGroup)
      var start = 0
      while start < unsettled.count {
        let end = min(start + Self.settleGroup, unsettled.count)
        for position in start..<end {
          hashes[position - start] = KeyHash.hash(keyBytes(unsettled[position]), seed: base.seed)
          warmed ^= base.warmGroup(hashes[position - start])
        }
        for position in start..<end { warmed ^= base.warmEntry(hashes[position - start]) }
        for position in start..<end {
          let reference = unsettled[position]
          let key = keyBytes(reference)
          switch base.find(key, hash: hashes[position - start]) {
          case .found(let hidden):
            adjust(count: -1, liveBytes: -Int(hidden.length))
          case .absent:
            if recordLength(reference) == Self.tombstone {
              removeSlot(at: slotIndex(of: reference, hash: KeyHash.hash(key)), squeeze: false)
            }
          case .damaged:
            totals.baseDamaged = true
          }
        }
        start = end
      }
    }
    totals.unsettled -= unsettled.count
    unsettled = []
    allocationChanged()
    squeezeArenaIfWasteful()
  }

  private static let settleGroup = 16

  // MARK: Changes files

  /// Whether the table has changes over its base (or keys, without one).
  var hasChanges: Bool { occupied > 0 }

  /// Adds every key here, the changes over the base (live entries with their expiries, and
  /// tombstones, each unsettled or not), to the table `builder` has begun.
  func addChanges(to builder: inout ChangesFile.Builder) {
    for index in 0...mask where slots[index].hash != 0 {
      let slot = slots[index]
      let length = recordLength(slot.keyReference)
      let key = keyBytes(slot.keyReference)
      let isTombstone = length == Self.tombstone
      builder.add(
        key,
        location: isTombstone
          ? nil : RecordLocation(segment: slot.segment, offset: slot.offset, length: length),
        unsettled: isUnsettled(slot.keyReference),
        expiry: isTombstone ? nil : expiring?.expiry(of: key))
    }
  }

  /// Makes this table, which has no changes yet, the table a changes file describes: its
  /// `changes` over the base, and its `count` and `liveBytes` as they were counted when the
  /// file was written (with its unsettled keys counted as a replay counts them). Expiries
  /// change as the log's puts and deletes change them: a key written with one gets it, any
  /// other key written or deleted loses the base's. Throws if the changes cannot be this
  /// table's: a key listed twice, or a tombstone or an unsettled key without a base.
  func restore(_ changes: ChangesFile.Changes, keyBytes bytes: Int, count: Int, liveBytes: Int)
    throws(ChangesFile.Invalid)
  {
    precondition(occupied == 0 && unsettled.isEmpty, "changes restored into a changed table")
    reserve(additional: changes.count, keyBytes: bytes)
    // The keys go into the arena in the file's order, and into the slots in the order of the
    // slot each one's probe starts at. At scale the slots are far larger than the caches, and
    // the file lists the keys in its writer's slot order, which another process's hash seed
    // scatters: filled in order, the slots are written front to back instead of at a cache
    // miss a key. Ordering them by block of slots (4,096 blocks at most, one counting pass) is
    // enough: the slots of a block are filled while they are in the caches.
    let blockShift = max(0, (mask + 1).trailingZeroBitCount - 12)
    var blockStarts = [Int](repeating: 0, count: ((mask + 1) >> blockShift) + 1)
    var unplaced: [Slot] = []
    unplaced.reserveCapacity(changes.count)
    var settling: [UInt32] = []
    for change in changes {
      guard base != nil || (change.location != nil && !change.unsettled) else {
        throw ChangesFile.Invalid(reason: "a table without an index file's keys hides some")
      }
      setExpiry(of: change.key, to: change.expiry, length: change.location?.length ?? 0)
      let reference = appendKey(change.key, length: change.location?.length ?? Self.tombstone)
      let slot = Slot(
        hash: Self.slotHash(KeyHash.hash(change.key)), keyReference: reference,
        segment: change.location?.segment ?? 0, offset: change.location?.offset ?? 0)
      blockStarts[(Int(truncatingIfNeeded: slot.hash) & mask) >> blockShift + 1] += 1
      unplaced.append(slot)
      // In arena order, as the list must be.
      if change.unsettled { settling.append(reference) }
    }
    for block in 1..<blockStarts.count { blockStarts[block] += blockStarts[block - 1] }
    // Not with no capacity, which would write the count of the shared empty array
    // (``FileHandle/readBytes(count:at:)``).
    let ordered =
      unplaced.isEmpty
      ? []
      : [Slot](unsafeUninitializedCapacity: unplaced.count) { ordered, initialized in
        for slot in unplaced {
          let block = (Int(truncatingIfNeeded: slot.hash) & mask) >> blockShift
          ordered.initializeElement(at: blockStarts[block], to: slot)
          blockStarts[block] += 1
        }
        initialized = unplaced.count
      }
    unplaced = []
    for slot in ordered {
      var index = Int(truncatingIfNeeded: slot.hash) & mask
      while slots[index].hash != 0 {
        // The slot's key is read only on a hash match: reading it for every key would be a
        // cache miss each, the arena being in the file's order.
        if slots[index].hash == slot.hash
          && bytesEqual(keyBytes(slots[index].keyReference), keyBytes(slot.keyReference))
        {
          throw ChangesFile.Invalid(reason: "a key listed twice")
        }
        index = (index + 1) & mask
      }
      slots[index] = slot
      occupied += 1
    }
    unsettled = settling
    totals.unsettled += settling.count
    adjust(count: count - self.count, liveBytes: liveBytes - self.liveBytes)
    allocationChanged()
  }

  // MARK: Expiry

  /// The keys that have not expired as of `now` (``ExpiryClock``) and the bytes of their
  /// records. Exact once settled, like ``count``.
  func liveCount(at now: Int64) -> (count: Int, liveBytes: Int) {
    guard let expiring else { return (count, liveBytes) }
    let gone = expiring.advance(to: now)
    return (count - gone.count, liveBytes - gone.bytes)
  }

  /// Gives the keys of the base (the index file's table) their expiries, as the file lists
  /// them: for a table opened from an index file.
  func loadBaseExpiries() {
    guard let base, !base.expiringEntries.isEmpty else { return }
    let keys = ExpiringKeys()
    for offset in base.expiringEntries {
      // Checked when the file was opened; checked again, as every read of an entry is.
      guard let entry = base.entry(at: offset), let expiry = entry.expiry else {
        totals.baseDamaged = true
        continue
      }
      keys.set(entry.key, expiry: expiry, length: entry.location.length)
    }
    setExpiring(keys)
  }

  /// Gives `key`, written in a record of `length` bytes, its expiry, or none (nil: the key's
  /// expiry from before is gone, as a put without one or a delete takes it away).
  private func setExpiry(of key: UnsafeRawBufferPointer, to expiry: Int64?, length: UInt32) {
    if let expiry {
      if expiring == nil { setExpiring(ExpiringKeys()) }
      expiring!.set(key, expiry: expiry, length: length)
    } else if let expiring {
      expiring.remove(key)
    }
  }

  /// Sets ``expiring``, counting in the totals the tables that have keys with an expiry.
  private func setExpiring(_ keys: ExpiringKeys?) {
    if (expiring == nil) != (keys == nil) { totals.tablesWithExpiries += keys == nil ? -1 : 1 }
    expiring = keys
  }

  // MARK: Iteration

  /// Calls `body` with every key and its location, in no particular order (the base's keys
  /// in their order, after the others). `body` must not change the index. Returns false if
  /// the base was found damaged on the way (some keys were then not visited).
  @discardableResult
  func forEachKey<E: Error>(_ body: (UnsafeRawBufferPointer, RecordLocation) throws(E) -> Void)
    throws(E) -> Bool
  {
    try forEachChangedKey(body)
    return try forEachBaseKey(body)
  }

  /// The base, when nothing changed since it (no key here): the table is then the base's
  /// entries exactly, in their order.
  var unchangedBase: MappedTable? { occupied == 0 ? base : nil }

  /// Calls `body` with every live key here (all of them, without a base), in no order.
  func forEachChangedKey<E: Error>(
    _ body: (UnsafeRawBufferPointer, RecordLocation) throws(E) -> Void
  ) throws(E) {
    for index in 0...mask {
      let slot = slots[index]
      if slot.hash != 0 && !isTombstone(slot) {
        try body(keyBytes(slot.keyReference), recordLocation(of: slot))
      }
    }
  }

  /// Calls `ordered` with every live key the base holds too, in key order (with its location
  /// here when it changed since the base), then `rest` with the live keys only here, in no
  /// order; returns false if the base was found damaged on the way (some keys were then not
  /// visited). For a sort: only the keys `rest` gets need sorting. A compaction relocates every
  /// key it copies to an entry here, and those keep their place in the base's order.
  @discardableResult
  func forEachKey(
    baseOrdered ordered: (UnsafeRawBufferPointer, RecordLocation) -> Void,
    rest: (UnsafeRawBufferPointer, RecordLocation) -> Void
  ) -> Bool {
    guard let base else {
      forEachChangedKey(rest)
      return true
    }
    guard occupied > 0 else {
      return base.forEachEntry { entry in
        ordered(entry.key, entry.location)
        return true
      }
    }
    // The slots of keys the base holds, a bit each, which the second pass leaves out.
    var inBase = [UInt64](repeating: 0, count: (mask + 64) / 64)
    // The base's entries are looked up here in groups: the slots of a group are loaded together
    // first, so that their cache misses overlap (as in KeyDirectory.applySoon).
    var group: [(entry: MappedTable.Entry, hash: UInt64)] = []
    group.reserveCapacity(Self.lookupGroup)
    func visitGroup() {
      for member in group { warm(member.hash) }
      for (entry, hash) in group {
        let index = probe(entry.key, Self.slotHash(hash))
        if index < 0 {
          ordered(entry.key, entry.location)
          continue
        }
        inBase[index >> 6] |= 1 << UInt64(index & 63)
        // A tombstone here: deleted since.
        if !isTombstone(slots[index]) { ordered(entry.key, recordLocation(of: slots[index])) }
      }
      group.removeAll(keepingCapacity: true)
    }
    let intact = base.forEachEntry { entry in
      group.append((entry, KeyHash.hash(entry.key)))
      if group.count == Self.lookupGroup { visitGroup() }
      return true
    }
    visitGroup()
    guard intact else { return false }
    for index in 0...mask where inBase[index >> 6] & (1 << UInt64(index & 63)) == 0 {
      let slot = slots[index]
      if slot.hash != 0 && !isTombstone(slot) {
        rest(keyBytes(slot.keyReference), recordLocation(of: slot))
      }
    }
    return true
  }

  /// Calls `body` with every key of the base that has no entry here, in key order. Returns
  /// false if the base was found damaged on the way.
  @discardableResult
  func forEachBaseKey<E: Error>(_ body: (UnsafeRawBufferPointer, RecordLocation) throws(E) -> Void)
    throws(E) -> Bool
  {
    guard let base else { return true }
    return try base.forEachEntry { (entry) throws(E) -> Bool in
      // Keys with an entry here are changed or deleted.
      if occupied == 0 || probe(entry.key, Self.slotHash(KeyHash.hash(entry.key))) < 0 {
        try body(entry.key, entry.location)
      }
      return true
    }
  }

  // MARK: Storage

  /// Makes room for `additional` more keys of `keyBytes` bytes in all, at once.
  func reserve(additional: Int, keyBytes: Int) {
    var capacity = mask + 1
    while (occupied + additional) * 4 > capacity * 3 { capacity *= 2 }
    if capacity > mask + 1 { rehash(capacity: capacity) }
    let needed = arenaUsed + additional * Self.arenaEntryHeader + keyBytes
    if needed > arenaCapacity { resizeArena(needed) }
  }

  /// Doubles the slots; a table over an index file, which starts with one, goes straight to
  /// the room a new table starts with.
  private func grow() {
    rehash(capacity: max((mask + 1) * 2, Self.minimumCapacity))
  }

  private func rehash(capacity: Int) {
    let oldSlots = slots
    let oldCapacity = mask + 1
    slots = Self.allocateSlots(capacity)
    mask = capacity - 1
    for index in 0..<oldCapacity {
      let slot = oldSlots[index]
      guard slot.hash != 0 else { continue }
      var position = Int(truncatingIfNeeded: slot.hash) & mask
      while slots[position].hash != 0 { position = (position + 1) & mask }
      slots[position] = slot
    }
    Self.deallocateSlots(oldSlots, oldCapacity)
    allocationChanged()
  }

  private func appendKey(_ key: UnsafeRawBufferPointer, length: UInt32) -> UInt32 {
    let needed = Self.arenaEntryHeader + key.count
    if arenaUsed + needed > arenaCapacity {
      resizeArena(max(arenaCapacity + arenaCapacity / 2, arenaUsed + needed, 256))
    }
    let reference = arenaUsed
    let entry = arena + reference
    entry.storeBytes(of: length, as: UInt32.self)
    entry.storeBytes(of: UInt16(key.count), toByteOffset: 4, as: UInt16.self)
    if key.count > 0 {
      (entry + Self.arenaEntryHeader).copyMemory(from: key.baseAddress!, byteCount: key.count)
    }
    arenaUsed += needed
    return UInt32(reference)
  }

  private func resizeArena(_ capacity: Int) {
    precondition(capacity <= UInt32.max, "a table's keys exceed 4 GiB of memory")
    let bigger = IndexMemory.allocateZeroed(byteCount: capacity)
    bigger.copyMemory(from: arena, byteCount: arenaUsed)
    IndexMemory.deallocate(arena, byteCount: arenaCapacity)
    arena = bigger
    arenaCapacity = capacity
    allocationChanged()
  }

  /// Copies the live keys into a fresh arena, dropping the garbage of removed keys.
  private func squeezeArena() {
    let live = arenaUsed - arenaGarbage
    let capacity = max(256, live + live / 4)
    let fresh = IndexMemory.allocateZeroed(byteCount: capacity)
    var used = 0
    for index in 0...mask where slots[index].hash != 0 {
      let entry = arena + Int(slots[index].keyReference)
      let size =
        Self.arenaEntryHeader + Int(entry.loadUnaligned(fromByteOffset: 4, as: UInt16.self))
      (fresh + used).copyMemory(from: entry, byteCount: size)
      slots[index].keyReference = UInt32(used)
      used += size
    }
    IndexMemory.deallocate(arena, byteCount: arenaCapacity)
    arena = fresh
    arenaCapacity = capacity
    arenaUsed = used
    arenaGarbage = 0
    allocationChanged()
  }
}
