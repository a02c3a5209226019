/// The tables of a ``KeyDirectory`` by the UTF-8 bytes of their names, for writers and the
/// log's replay, which have the bytes of a record: finding a table this way makes no `String`,
/// allocates nothing and counts no reference.
///
/// An open-addressed table of the names' hashes (``KeyHash``): each slot holds a hash, the table
/// unretained (the directory's `tables` holds it, and changes both together) and where the
/// name's bytes are in an arena. A lookup hashes the bytes and compares a hash or two and the
/// bytes. A dictionary keyed by the bytes cost 60% of replaying the hint files of 10,000 tables
/// written in turn (hashing into the standard library's hasher, comparing, and the reference
/// counts of the keys' arrays and of the tables). Removed tables leave a marker, which the
/// next rebuild drops.
final class TablesByName {
  private struct Slot {
    /// The name's hash, never 0; 0: an empty slot.
    var hash: UInt64 = 0
    /// Nil in a slot whose table was removed (a marker the probes pass over).
    var table: Unmanaged<TableIndex>?
    var nameStart = 0
    var nameLength = 0
  }

  // Raw memory rather than arrays, so that a lookup retains nothing: guarded, as the directory
  // is, by the store's index lock.
  @exclusivity(unchecked) private var slots: UnsafeMutablePointer<Slot>
  @exclusivity(unchecked) private var capacity: Int
  @exclusivity(unchecked) private var names: UnsafeMutableRawPointer
  @exclusivity(unchecked) private var namesCapacity: Int
  @exclusivity(unchecked) private var namesUsed = 0
  /// Slots in use, markers of removed tables included.
  @exclusivity(unchecked) private var used = 0
  @exclusivity(unchecked) private(set) var count = 0

  init() {
    capacity = 16
    slots = .allocate(capacity: capacity)
    slots.initialize(repeating: Slot(), count: capacity)
    namesCapacity = 256
    names = .allocate(byteCount: namesCapacity, alignment: 1)
  }

  deinit {
    slots.deallocate()
    names.deallocate()
  }

  /// The table named by `name`, if there is one.
  func find(_ name: UnsafeRawBufferPointer) -> Unmanaged<TableIndex>? {
    guard let index = position(of: name, hash: Self.hash(name)) else { return nil }
    return slots[index].table
  }

  /// Makes `name` name `table`, or no table when nil.
  func set(_ name: UnsafeRawBufferPointer, _ table: TableIndex?) {
    let hash = Self.hash(name)
    if let index = position(of: name, hash: hash) {
      if let table {
        slots[index].table = Unmanaged.passUnretained(table)
      } else {
        slots[index].table = nil
        count -= 1
      }
      return
    }
    guard let table else { return }
    if (used + 1) * 4 > capacity * 3 { rebuild(room: count + 1) }
    if namesUsed + name.count > namesCapacity { rebuild(room: count + 1, nameBytes: name.count) }
    let mask = capacity - 1
    var index = Int(truncatingIfNeeded: hash) & mask
    while slots[index].hash != 0 { index = (index + 1) & mask }
    slots[index] = Slot(
      hash: hash, table: Unmanaged.passUnretained(table), nameStart: namesUsed,
      nameLength: name.count)
    if let source = name.baseAddress {
      (names + namesUsed).copyMemory(from: source, byteCount: name.count)
    }
    namesUsed += name.count
    used += 1
    count += 1
  }

  /// Room for `tables` more tables, whose names take `nameBytes` bytes, without a rebuild.
  func reserveCapacity(_ tables: Int, nameBytes: Int) {
    if (used + tables) * 4 > capacity * 3 || namesUsed + nameBytes > namesCapacity {
      rebuild(room: count + tables, nameBytes: nameBytes)
    }
  }

  /// The slot of the live table named `name`, if any.
  private func position(of name: UnsafeRawBufferPointer, hash: UInt64) -> Int? {
    let mask = capacity - 1
    var index = Int(truncatingIfNeeded: hash) & mask
    while slots[index].hash != 0 {
      let slot = slots[index]
      if slot.hash == hash, slot.table != nil,
        bytesEqual(
          UnsafeRawBufferPointer(start: names + slot.nameStart, count: slot.nameLength), name)
      {
        return index
      }
      index = (index + 1) & mask
    }
    return nil
  }

  /// Rebuilds the slots with room for `room` tables (at most three quarters full), without the
  /// markers of removed tables, and the arena without their names, with room for `nameBytes`
  /// more bytes of names.
  private func rebuild(room: Int, nameBytes: Int = 0) {
    var size = 16
    while size * 3 < room * 4 { size *= 2 }
    let (oldSlots, oldCapacity, oldNames) = (slots, capacity, names)
    var liveBytes = 0
    for index in 0..<oldCapacity where oldSlots[index].table != nil {
      liveBytes += oldSlots[index].nameLength
    }
    capacity = max(size, capacity)
    slots = .allocate(capacity: capacity)
    slots.initialize(repeating: Slot(), count: capacity)
    namesCapacity = max(256, 2 * (liveBytes + nameBytes))
    names = .allocate(byteCount: namesCapacity, alignment: 1)
    namesUsed = 0
    used = 0
    let mask = capacity - 1
    for old in 0..<oldCapacity where oldSlots[old].table != nil {
      let slot = oldSlots[old]
      var index = Int(truncatingIfNeeded: slot.hash) & mask
      while slots[index].hash != 0 { index = (index + 1) & mask }
      slots[index] = Slot(
        hash: slot.hash, table: slot.table, nameStart: namesUsed, nameLength: slot.nameLength)
      (names + namesUsed).copyMemory(from: oldNames + slot.nameStart, byteCount: slot.nameLength)
      namesUsed += slot.nameLength
      used += 1
    }
    oldSlots.deallocate()
    oldNames.deallocate()
  }

  /// ``KeyHash`` of the bytes, never 0 (0 marks an empty slot).
  private static func hash(_ name: UnsafeRawBufferPointer) -> UInt64 {
    let hash = KeyHash.hash(name)
    return hash == 0 ? 1 : hash
  }
}
