/// Where the current record of a key lives: segment file number, byte offset of the record
/// in that file, and the record's encoded length.
struct RecordLocation: Equatable, Hashable, Sendable {
  var segment: UInt32
  var offset: UInt32
  var length: UInt32
}

/// The number of keys and live bytes of every table of a ``KeyDirectory`` together.
///
/// Each ``TableIndex`` adds its own changes here as it makes them, so that the store's totals
/// (`statistics()`, and the automatic-compaction check every megabyte written) cost the same
/// whatever the number of tables, instead of a sum over all of them. Guarded, like the tables,
/// by the store's index lock.
final class IndexTotals {
  @exclusivity(unchecked) fileprivate(set) var count = 0
  @exclusivity(unchecked) fileprivate(set) var liveBytes = 0
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

  @exclusivity(unchecked) private var arena: UnsafeMutableRawPointer
  @exclusivity(unchecked) private var arenaCapacity: Int
  @exclusivity(unchecked) private var arenaUsed = 0
  @exclusivity(unchecked) private var arenaGarbage = 0

  private static let arenaEntryHeader = 6
  private static let removalGroup = 16
  /// Folds in slots loaded ahead of use, so that the loads are not optimized away.
  @exclusivity(unchecked) private var warmed: UInt32 = 0
  private static let minimumCapacity = 16

  /// A table whose changes are added to `totals`; by default, to totals of its own.
  init(totals: IndexTotals = IndexTotals()) {
    self.totals = totals
    slots = Self.allocateSlots(Self.minimumCapacity)
    mask = Self.minimumCapacity - 1
    arenaCapacity = 256
    arena = IndexMemory.allocateZeroed(byteCount: arenaCapacity)
  }

  deinit {
    Self.deallocateSlots(slots, mask + 1)
    IndexMemory.deallocate(arena, byteCount: arenaCapacity)
  }

  /// Empty slots (all zero: a hash of 0 marks an empty slot).
  private static func allocateSlots(_ capacity: Int) -> UnsafeMutablePointer<Slot> {
    IndexMemory.allocateZeroed(byteCount: capacity * MemoryLayout<Slot>.stride)
      .bindMemory(to: Slot.self, capacity: capacity)
  }

  private static func deallocateSlots(_ slots: UnsafeMutablePointer<Slot>, _ capacity: Int) {
    IndexMemory.deallocate(
      UnsafeMutableRawPointer(slots), byteCount: capacity * MemoryLayout<Slot>.stride)
  }

  /// Bytes of memory the index holds (slots and arena), for measurements.
  var allocatedBytes: Int { (mask + 1) * MemoryLayout<Slot>.stride + arenaCapacity }

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
    totals = IndexTotals()
    totals.count = count
    totals.liveBytes = liveBytes
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
    while true {
      let slot = slots[index]
      if slot.hash == 0 { return -1 - index }
      if slot.hash == hash && bytesEqual(keyBytes(slot.keyReference), key) { return index }
      index = (index + 1) & mask
    }
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

  func find(_ key: UnsafeRawBufferPointer, hash: UInt64) -> RecordLocation? {
    let index = probe(key, Self.slotHash(hash))
    return index >= 0 ? recordLocation(of: slots[index]) : nil
  }

  // MARK: Changes

  /// Points `key` at `location`; returns where it pointed before, if anywhere.
  @discardableResult
  func upsert(_ key: UnsafeRawBufferPointer, hash: UInt64, location: RecordLocation)
    -> RecordLocation?
  {
    let slotHash = Self.slotHash(hash)
    let index = probe(key, slotHash)
    if index >= 0 {
      let previous = recordLocation(of: slots[index])
      slots[index].segment = location.segment
      slots[index].offset = location.offset
      setRecordLength(slots[index].keyReference, location.length)
      adjust(count: 0, liveBytes: Int(location.length) - Int(previous.length))
      return previous
    }
    var empty = -1 - index
    if (count + 1) * 4 > (mask + 1) * 3 {
      grow()
      empty = -1 - probe(key, slotHash)
    }
    let reference = appendKey(key, length: location.length)
    slots[empty] = Slot(
      hash: slotHash, keyReference: reference, segment: location.segment,
      offset: location.offset)
    adjust(count: 1, liveBytes: Int(location.length))
    return nil
  }

  /// Points `key` at `new` only if it still points at `old`; compaction uses this so that a
  /// write made while it copied is never undone. Returns whether it did.
  func relocate(
    _ key: UnsafeRawBufferPointer, hash: UInt64, from old: RecordLocation,
    to new: RecordLocation
  ) -> Bool {
    let index = probe(key, Self.slotHash(hash))
    guard index >= 0, recordLocation(of: slots[index]) == old else { return false }
    slots[index].segment = new.segment
    slots[index].offset = new.offset
    setRecordLength(slots[index].keyReference, new.length)
    adjust(count: 0, liveBytes: Int(new.length) - Int(old.length))
    return true
  }

  /// Removes `key`; returns where it pointed, if it was present.
  @discardableResult
  func remove(_ key: UnsafeRawBufferPointer, hash: UInt64) -> RecordLocation? {
    let index = probe(key, Self.slotHash(hash))
    guard index >= 0 else { return nil }
    let previous = recordLocation(of: slots[index])
    removeSlot(at: index)
    return previous
  }

  /// Removes every key that starts with `prefix`; returns how many there were.
  ///
  /// Walks the key arena in order (sequential memory, unlike the slots, which are in hash
  /// order) and looks up the slot of each matching key by its hash and arena reference.
  @discardableResult
  func removeAll(withPrefix prefix: UnsafeRawBufferPointer) -> Int {
    let before = count
    if prefix.count == 0 {
      removeEverything()
      return before
    }
    // Matching keys are removed in groups: the slots of a group are loaded together first,
    // so that their cache misses overlap (as in KeyDirectory.applySoon).
    var group: [(reference: UInt32, hash: UInt64)] = []
    group.reserveCapacity(Self.removalGroup)
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
      if entry.loadUnaligned(as: UInt32.self) != Self.removedEntry
        && Self.hasPrefix(key, prefix)
      {
        group.append((UInt32(position), KeyHash.hash(key)))
        if group.count == Self.removalGroup { removeGroup() }
      }
      position += Self.arenaEntryHeader + keyLength
    }
    removeGroup()
    squeezeArenaIfWasteful()
    return before - count
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

  /// Empties the table, keeping its allocated room.
  private func removeEverything() {
    slots.update(repeating: Slot(hash: 0, keyReference: 0, segment: 0, offset: 0), count: mask + 1)
    adjust(count: -count, liveBytes: -liveBytes)
    arenaUsed = 0
    arenaGarbage = 0
  }

  /// Marks an arena entry whose key was removed (in its record-length field, which no record
  /// can fill): walks of the arena skip it.
  private static let removedEntry = UInt32.max

  private func removeSlot(at index: Int, squeeze: Bool = true) {
    let reference = slots[index].keyReference
    adjust(count: -1, liveBytes: -Int(recordLength(reference)))
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
    if arenaGarbage > 1 << 16 && arenaGarbage * 2 > arenaUsed { squeezeArena() }
  }

  // MARK: Iteration

  /// Calls `body` with every key and its location, in no particular order. `body` must not
  /// change the index.
  func forEachKey(_ body: (UnsafeRawBufferPointer, RecordLocation) throws -> Void) rethrows {
    for index in 0...mask {
      let slot = slots[index]
      if slot.hash != 0 { try body(keyBytes(slot.keyReference), recordLocation(of: slot)) }
    }
  }

  // MARK: Storage

  /// Makes room for `additional` more keys of `keyBytes` bytes in all, at once.
  func reserve(additional: Int, keyBytes: Int) {
    var capacity = mask + 1
    while (count + additional) * 4 > capacity * 3 { capacity *= 2 }
    if capacity > mask + 1 { rehash(capacity: capacity) }
    let needed = arenaUsed + additional * Self.arenaEntryHeader + keyBytes
    if needed > arenaCapacity { resizeArena(needed) }
  }

  private func grow() {
    rehash(capacity: (mask + 1) * 2)
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
  }

  private func appendKey(_ key: UnsafeRawBufferPointer, length: UInt32) -> UInt32 {
    let needed = Self.arenaEntryHeader + key.count
    if arenaUsed + needed > arenaCapacity {
      resizeArena(max(arenaCapacity + arenaCapacity / 2, arenaUsed + needed))
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
  }
}
