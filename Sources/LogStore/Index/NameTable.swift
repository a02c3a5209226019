/// Values by the UTF-8 bytes of names, for code that has the bytes of a record or a hint
/// file's entry: the directory's tables (``KeyDirectory``), and the room an open makes in each
/// table before applying a hint file. Finding a name makes no `String`, allocates nothing and
/// counts no reference.
///
/// An open-addressed table of the names' hashes (``KeyHash``): each slot holds a hash, the value
/// and where the name's bytes are in an arena. A lookup hashes the bytes and compares a hash or
/// two and the bytes. A dictionary keyed by the bytes cost 60% of replaying the hint files of
/// 10,000 tables written in turn (hashing into the standard library's hasher, comparing, and
/// the reference counts of the keys' arrays and of the tables); one keyed by `String` made a
/// string of each entry's table name. Removed names leave a marker, which the next rebuild
/// drops. The values are meant to be plain data (`Unmanaged` references, counts): the table
/// neither retains nor releases what they point to.
final class NameTable<Value> {
  private struct Slot {
    /// The name's hash, never 0; 0: an empty slot.
    var hash: UInt64 = 0
    /// Nil in a slot whose name was removed (a marker the probes pass over).
    var value: Value?
    var nameStart = 0
    var nameLength = 0
  }

  // Raw memory rather than arrays, so that a lookup retains nothing: guarded by the lock of
  // whatever holds the table (the store's index lock for the directory's).
  @exclusivity(unchecked) private var slots: UnsafeMutablePointer<Slot>
  @exclusivity(unchecked) private var capacity: Int
  @exclusivity(unchecked) private var names: UnsafeMutableRawPointer
  @exclusivity(unchecked) private var namesCapacity: Int
  @exclusivity(unchecked) private var namesUsed = 0
  /// Slots in use, markers of removed names included.
  @exclusivity(unchecked) private var used = 0
  @exclusivity(unchecked) private(set) var count = 0
  /// ``KeyHash``'s seed, read once here: every read of the global goes through a check that
  /// it is initialized, and a read finds its table by name.
  private let seed = KeyHash.seed

  init() {
    capacity = 16
    slots = .allocate(capacity: capacity)
    slots.initialize(repeating: Slot(), count: capacity)
    namesCapacity = 256
    names = .allocate(byteCount: namesCapacity, alignment: 1)
  }

  deinit {
    slots.deinitialize(count: capacity)
    slots.deallocate()
    names.deallocate()
  }

  /// The value of `name`, if it has one.
  func find(_ name: UnsafeRawBufferPointer) -> Value? {
    guard let index = position(of: name, hash: hash(name)) else { return nil }
    return slots[index].value
  }

  /// Gives `name` the value `value`, or none when nil; returns the value it had.
  @discardableResult
  func set(_ name: UnsafeRawBufferPointer, _ value: Value?) -> Value? {
    let hash = self.hash(name)
    if let index = position(of: name, hash: hash) {
      let previous = slots[index].value
      slots[index].value = value
      if value == nil { count -= 1 }
      return previous
    }
    guard let value else { return nil }
    if (used + 1) * 4 > capacity * 3 { rebuild(room: count + 1) }
    if namesUsed + name.count > namesCapacity { rebuild(room: count + 1, nameBytes: name.count) }
    let mask = capacity - 1
    var index = Int(truncatingIfNeeded: hash) & mask
    while slots[index].hash != 0 { index = (index + 1) & mask }
    slots[index] = Slot(hash: hash, value: value, nameStart: namesUsed, nameLength: name.count)
    if let source = name.baseAddress {
      (names + namesUsed).copyMemory(from: source, byteCount: name.count)
    }
    namesUsed += name.count
    used += 1
    count += 1
    return nil
  }

  /// Calls `body` with every name that has a value, and the value, in no particular order.
  func forEachName(_ body: (UnsafeRawBufferPointer, Value) -> Void) {
    for index in 0..<capacity {
      guard let value = slots[index].value else { continue }
      body(
        UnsafeRawBufferPointer(
          start: names + slots[index].nameStart, count: slots[index].nameLength),
        value)
    }
  }

  /// The slot of `name` if it has a value.
  private func position(of name: UnsafeRawBufferPointer, hash: UInt64) -> Int? {
    let mask = capacity - 1
    var index = Int(truncatingIfNeeded: hash) & mask
    while slots[index].hash != 0 {
      if slots[index].hash == hash, slots[index].value != nil,
        bytesEqual(
          UnsafeRawBufferPointer(
            start: names + slots[index].nameStart, count: slots[index].nameLength), name)
      {
        return index
      }
      index = (index + 1) & mask
    }
    return nil
  }

  /// Rebuilds the slots with room for `room` names (at most three quarters full), without the
  /// markers of removed names, and the arena without their bytes, with room for `nameBytes`
  /// more bytes of names.
  private func rebuild(room: Int, nameBytes: Int = 0) {
    var size = 16
    while size * 3 < room * 4 { size *= 2 }
    let (oldSlots, oldCapacity, oldNames) = (slots, capacity, names)
    var liveBytes = 0
    for index in 0..<oldCapacity where oldSlots[index].value != nil {
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
    for old in 0..<oldCapacity where oldSlots[old].value != nil {
      let slot = oldSlots[old]
      var index = Int(truncatingIfNeeded: slot.hash) & mask
      while slots[index].hash != 0 { index = (index + 1) & mask }
      slots[index] = Slot(
        hash: slot.hash, value: slot.value, nameStart: namesUsed, nameLength: slot.nameLength)
      (names + namesUsed).copyMemory(from: oldNames + slot.nameStart, byteCount: slot.nameLength)
      namesUsed += slot.nameLength
      used += 1
    }
    oldSlots.deinitialize(count: oldCapacity)
    oldSlots.deallocate()
    oldNames.deallocate()
  }

  /// ``KeyHash`` of the bytes, never 0 (0 marks an empty slot).
  private func hash(_ name: UnsafeRawBufferPointer) -> UInt64 {
    let hash = KeyHash.hash(name, seed: seed)
    return hash == 0 ? 1 : hash
  }
}
