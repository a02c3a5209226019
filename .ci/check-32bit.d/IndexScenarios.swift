// Scenarios of the index: TableIndex grown to tens of thousands of keys and checked against
// a model after inserts, overwrites, removals and prefix removals, with hashes over the whole
// UInt64 range (KeyHash's, and chosen ones that collide at 2^31 and at the table's end); and
// KeyDirectory rebuilt from a segment, as recovery does, and from its hint file.

/// Keys by number, in one block of memory that stays put (TableIndex.upsert takes
/// pointers). Key 0 is empty; the others are [group, number (4 bytes, big-endian), filler],
/// 5 to 33 bytes, and every 1009th 300 to 500 bytes.
struct KeySet {
  let count: Int
  private let memory: UnsafeMutableRawBufferPointer
  private var starts: [Int]

  static let groups = 53

  init(count: Int) {
    self.count = count
    var starts = [0]
    var total = 0
    for id in 0..<count {
      total += KeySet.length(id)
      starts.append(total)
    }
    memory = UnsafeMutableRawBufferPointer.allocate(byteCount: max(total, 1), alignment: 8)
    for id in 1..<count {
      let start = starts[id]
      memory[start] = UInt8(id % KeySet.groups)
      memory[start + 1] = UInt8(truncatingIfNeeded: id >> 24)
      memory[start + 2] = UInt8(truncatingIfNeeded: id >> 16)
      memory[start + 3] = UInt8(truncatingIfNeeded: id >> 8)
      memory[start + 4] = UInt8(truncatingIfNeeded: id)
      for index in 5..<KeySet.length(id) {
        memory[start + index] = UInt8(truncatingIfNeeded: id &* 31 &+ index)
      }
    }
    self.starts = starts
  }

  private static func length(_ id: Int) -> Int {
    if id == 0 { return 0 }
    return id % 1009 == 0 ? 300 + id % 200 : 5 + id % 29
  }

  subscript(id: Int) -> UnsafeRawBufferPointer {
    UnsafeRawBufferPointer(rebasing: memory[starts[id]..<starts[id + 1]])
  }

  /// The number a key was made from.
  static func id(of key: UnsafeRawBufferPointer) -> Int {
    key.count < 5 ? 0 : Int(key[1]) << 24 | Int(key[2]) << 16 | Int(key[3]) << 8 | Int(key[4])
  }
}

/// A TableIndex and what it should hold.
struct IndexModel {
  var locations: [RecordLocation?]
  var present = 0
  var liveBytes = 0

  init(count: Int) { locations = [RecordLocation?](repeating: nil, count: count) }

  mutating func set(_ id: Int, _ location: RecordLocation?) {
    if let old = locations[id] {
      present -= 1
      liveBytes -= Int(old.length)
    }
    if let location {
      present += 1
      liveBytes += Int(location.length)
    }
    locations[id] = location
  }

  /// A location anywhere in 32 bits; a record length that keeps the live bytes under 1 GiB
  /// (a 32-bit store's address space), now and then a quarter of it.
  func randomLocation(_ rng: inout SplitMix) -> RecordLocation {
    var length = UInt32(28 + rng.below(4096))
    if rng.below(2000) == 0 && liveBytes < 1 << 29 {
      length = 0x1000_0000 + UInt32(rng.below(1 << 16))
    }
    // Segment numbers are below 2^31 (StoreFileName.maximumNumber); index files use bit 31.
    return RecordLocation(
      segment: rng.next32() & 0x7FFF_FFFF, offset: rng.next32(), length: length)
  }

  /// Checks count, live bytes, every key by iteration and by lookup.
  func verify(
    _ table: TableIndex, _ keys: KeySet, hashes: [UInt64], _ c: inout Checker, _ when: String
  ) {
    c.expect(table.count == present, "\(when): count \(table.count), model \(present)")
    c.expect(
      table.liveBytes == liveBytes, "\(when): liveBytes \(table.liveBytes), model \(liveBytes)")
    var seen = [Bool](repeating: false, count: keys.count)
    var visited = 0
    var wrong = 0
    table.forEachKey { key, location in
      let id = KeySet.id(of: key)
      if id >= keys.count || seen[id] || locations[id] != location || !key.elementsEqual(keys[id]) {
        wrong += 1
      } else {
        seen[id] = true
      }
      visited += 1
    }
    c.expect(
      visited == present && wrong == 0, "\(when): forEachKey visited \(visited), \(wrong) wrong")
    var mismatches = 0
    for id in 0..<keys.count where table.find(keys[id], hash: hashes[id]) != locations[id] {
      mismatches += 1
    }
    c.expect(mismatches == 0, "\(when): \(mismatches) lookups differ from the model")
  }
}

func tableIndexScenario(_ c: inout Checker) -> String {
  let keys = KeySet(count: 60_000)
  var hashes: [UInt64] = []
  var slotHashesAbove31Bits = 0
  var topBit = 0
  for id in 0..<keys.count {
    let hash = KeyHash.hash(keys[id])
    hashes.append(hash)
    if hash >> 63 != 0 { topBit += 1 }
    if hash >> 32 >= 0x8000_0000 { slotHashesAbove31Bits += 1 }
  }
  c.expect(
    slotHashesAbove31Bits > keys.count / 4,
    "only \(slotHashesAbove31Bits) of \(keys.count) hashes have a slot hash of 2^31 or more")
  let table = TableIndex()
  var model = IndexModel(count: keys.count)
  table.reserve(additional: 1000, keyBytes: 20_000)
  // Fill to 50,000 keys in random order.
  var order = Array(0..<keys.count)
  for index in stride(from: order.count - 1, to: 0, by: -1) {
    order.swapAt(index, c.rng.below(index + 1))
  }
  for id in order[0..<50_000] {
    let location = model.randomLocation(&c.rng)
    let previous = table.upsert(keys[id], hash: hashes[id], location: location)
    if previous != nil { c.expect(false, "insert of a new key \(id) found a previous location") }
    model.set(id, location)
  }
  model.verify(table, keys, hashes: hashes, &c, "after 50,000 inserts")
  let peak = table.count
  var counts = (
    upserts: 0, removes: 0, finds: 0, relocations: 0, prefixRemovals: 0, removedByPrefix: 0
  )
  var largest = peak
  let operations = 150_000
  for step in 1...operations {
    let id = c.rng.below(keys.count)
    let choice = c.rng.below(1000)
    if choice < 560 {
      let location = model.randomLocation(&c.rng)
      let previous = table.upsert(keys[id], hash: hashes[id], location: location)
      if previous != model.locations[id] {
        c.expect(false, "upsert \(id): previous location differs")
      }
      model.set(id, location)
      counts.upserts += 1
    } else if choice < 720 {
      let previous = table.remove(keys[id], hash: hashes[id])
      if previous != model.locations[id] {
        c.expect(false, "remove \(id): previous location differs")
      }
      model.set(id, nil)
      counts.removes += 1
    } else if choice < 900 {
      if table.find(keys[id], hash: hashes[id]) != model.locations[id] {
        c.expect(false, "find \(id) differs")
      }
      counts.finds += 1
    } else if choice < 999 {
      let place = model.randomLocation(&c.rng)
      if let old = model.locations[id] {
        // A copy is as long as its record, and it moves only while the key points below the
        // limit (a compaction's inputs).
        let new = RecordLocation(segment: place.segment, offset: place.offset, length: old.length)
        if choice % 2 == 0 {
          c.expect(
            table.relocate(keys[id], hash: hashes[id], to: new, below: old.segment + 1),
            "relocate \(id)")
          model.set(id, new)
        } else {
          c.expect(
            !table.relocate(keys[id], hash: hashes[id], to: new, below: old.segment),
            "relocate a key that points at or above the limit")
        }
      } else {
        c.expect(
          !table.relocate(keys[id], hash: hashes[id], to: place, below: .max),
          "relocate an absent key")
      }
      counts.relocations += 1
    } else {
      // A prefix: a group's byte, the first bytes of a key (up to 12: the 8-byte compare),
      // or one that matches nothing.
      var prefix: [UInt8]
      switch c.rng.below(20) {
      case 0..<5: prefix = [UInt8(c.rng.below(KeySet.groups))]
      case 5..<17:
        let key = keys[1 + c.rng.below(keys.count - 1)]
        prefix = Array(key[0..<1 + c.rng.below(min(key.count, 12))])
      default: prefix = [0xEE, 1, 2]
      }
      var expected = 0
      for other in 0..<keys.count where model.locations[other] != nil {
        let key = keys[other]
        if key.count >= prefix.count && key.first == prefix.first
          && key.prefix(prefix.count).elementsEqual(prefix)
        {
          model.set(other, nil)
          expected += 1
        }
      }
      let removed = prefix.withUnsafeBytes { table.removeAll(withPrefix: $0) }
      c.expect(
        removed == expected,
        "removeAll(withPrefix: \(prefix.count) bytes) removed \(removed), expected \(expected)")
      counts.prefixRemovals += 1
      counts.removedByPrefix += removed
    }
    largest = max(largest, table.count)
    if step % 50_000 == 0 {
      model.verify(table, keys, hashes: hashes, &c, "after \(step) operations")
    }
  }
  // Everything (an empty prefix), then the table is used again.
  let final = table.count
  let all = [UInt8]().withUnsafeBytes { table.removeAll(withPrefix: $0) }
  c.expect(all == model.present, "removeAll(withPrefix: []) removed \(all) of \(model.present)")
  for id in 0..<keys.count { model.set(id, nil) }
  model.verify(table, keys, hashes: hashes, &c, "after removing everything")
  for id in 0..<5000 {
    let location = model.randomLocation(&c.rng)
    table.upsert(keys[id], hash: hashes[id], location: location)
    model.set(id, location)
  }
  model.verify(table, keys, hashes: hashes, &c, "after refilling")
  return
    "\(peak) keys (largest \(largest), \(final) at the end), \(counts.upserts) upserts, \(counts.removes) removes, \(counts.finds) finds, \(counts.relocations) relocations, \(counts.prefixRemovals) prefix removals (\(counts.removedByPrefix) keys); \(slotHashesAbove31Bits)/\(keys.count) slot hashes >= 2^31, \(topBit) with bit 63"
}

func syntheticHashScenario(_ c: inout Checker) -> String {
  let keys = KeySet(count: 20_000)
  // Every 20th key's hash has one of these upper halves: collisions on the slot hash (0 and
  // 1 both become 1), at 2^31, and at the last slot, whose probes wrap to the first.
  let specials: [UInt64] = [
    0, 1, 2, 0x7FFF_FFFF, 0x8000_0000, 0x8000_0001, 0xFFFF_FFFE, 0xFFFF_FFFF,
  ]
  var hashes: [UInt64] = []
  var mixer = SplitMix(seed: c.rng.next())
  for id in 0..<keys.count {
    let random = mixer.next()
    hashes.append(
      id % 20 == 0 ? specials[(id / 20) % specials.count] << 32 | (random & 0xFFFF_FFFF) : random)
  }
  let table = TableIndex()
  var model = IndexModel(count: keys.count)
  var batches = 0
  for step in 1...120_000 {
    let choice = c.rng.below(100)
    let id = c.rng.below(keys.count)
    if choice < 40 {
      let location = model.randomLocation(&c.rng)
      let previous = table.upsert(keys[id], hash: hashes[id], location: location)
      if previous != model.locations[id] { c.expect(false, "upsert \(id): previous differs") }
      model.set(id, location)
    } else if choice < 50 {
      // A group of 16 applied together, as recovery does (duplicates apply in order).
      var puts: [(key: UnsafeRawBufferPointer, hash: UInt64, location: RecordLocation)] = []
      for _ in 0..<16 {
        let member = c.rng.below(keys.count)
        let location = model.randomLocation(&c.rng)
        puts.append((keys[member], hashes[member], location))
        model.set(member, location)
      }
      for put in puts { table.warm(put.hash) }
      for put in puts { _ = table.upsert(put.key, hash: put.hash, location: put.location) }
      batches += 1
    } else if choice < 75 {
      let previous = table.remove(keys[id], hash: hashes[id])
      if previous != model.locations[id] { c.expect(false, "remove \(id): previous differs") }
      model.set(id, nil)
    } else if choice < 95 {
      if table.find(keys[id], hash: hashes[id]) != model.locations[id] {
        c.expect(false, "find \(id)")
      }
    } else if let old = model.locations[id] {
      let place = model.randomLocation(&c.rng)
      let new = RecordLocation(segment: place.segment, offset: place.offset, length: old.length)
      c.expect(
        table.relocate(keys[id], hash: hashes[id], to: new, below: old.segment + 1),
        "relocate \(id)")
      model.set(id, new)
    }
    if step % 40_000 == 0 {
      model.verify(table, keys, hashes: hashes, &c, "after \(step) operations")
    }
  }
  let peak = table.count
  let all = [UInt8]().withUnsafeBytes { table.removeAll(withPrefix: $0) }
  c.expect(all == peak, "removing everything removed \(all) of \(peak)")
  for id in 0..<keys.count { model.set(id, nil) }
  model.verify(table, keys, hashes: hashes, &c, "after removing everything")
  return
    "\(keys.count) keys, every 20th with a slot hash of 1, 2^31-1, 2^31, 2^32-1 (collision chains, wrap-around); \(batches) groups of 16 warmed, then upserted; \(peak) keys at the end"
}

// MARK: KeyDirectory

/// What a KeyDirectory should hold: tables of keys and where their records are.
struct DirectoryModel {
  var tables: [String: [[UInt8]: RecordLocation]] = [:]

  mutating func apply(_ record: Record, at location: RecordLocation) {
    let name = String(decoding: record.table, as: UTF8.self)
    let key = Array(record.key)
    switch record.kind {
    case .put:
      if tables[name] == nil { tables[name] = [:] }
      tables[name]![key] = location
    case .delete: tables[name]?[key] = nil
    case .deletePrefix:
      if let table = tables[name] {
        tables[name] = table.filter { !$0.key.starts(with: key) }
      }
    case .createTable: if tables[name] == nil { tables[name] = [:] }
    case .clearTable: if tables[name] != nil { tables[name] = [:] }
    case .dropTable: tables[name] = nil
    case .batch, .syncMark: break
    }
  }

  var itemCount: Int { tables.values.reduce(0) { $0 + $1.count } }
  var liveBytes: Int {
    tables.values.reduce(0) { sum, table in sum + table.values.reduce(0) { $0 + Int($1.length) } }
  }

  func verify(_ directory: KeyDirectory, _ c: inout Checker, _ what: String) {
    c.expect(
      directory.tables.count == tables.count,
      "\(what): \(directory.tables.count) tables, model \(tables.count)")
    c.expect(
      directory.itemCount == itemCount, "\(what): \(directory.itemCount) items, model \(itemCount)")
    c.expect(
      directory.liveBytes == liveBytes,
      "\(what): liveBytes \(directory.liveBytes), model \(liveBytes)")
    var wrong = 0
    for (name, keys) in tables {
      guard let table = directory.table(name) else {
        c.expect(false, "\(what): table \(name) is missing")
        continue
      }
      for (key, location) in keys {
        let found = key.withUnsafeBytes { table.find($0, hash: KeyHash.hash($0)) }
        if found != location { wrong += 1 }
      }
    }
    var visited = 0
    directory.forEachLocation { name, key, location in
      visited += 1
      if tables[name]?[Array(key)] != location { wrong += 1 }
    }
    c.expect(
      wrong == 0 && visited == itemCount, "\(what): \(wrong) keys differ, \(visited) visited")
  }
}

func keyDirectoryScenario(_ c: inout Checker) -> String {
  let salt: UInt32 = 0xD1C7_0001
  let segmentNumber: UInt32 = 0x7FFF_FFFF
  let (segment, records) = makeSegment(
    &c.rng, salt: salt, fileNumber: segmentNumber, count: 30_000, keys: 20_000,
    tableChangeOdds: 3000)
  var model = DirectoryModel()
  // Recovery's way: scan inside a replay (puts a few at a time), batches member by member.
  let scanned = KeyDirectory()
  var events = 0
  // The segment's bytes are an array here: this object stands for the file that owns them.
  final class SegmentOwner {}
  let owner = SegmentOwner()
  segment.withUnsafeBytes { b in
    var scanner = SegmentScanner(
      bytes: b, owner: owner, salt: salt, baseSequence: 1, extent: .unsealedWithoutMarks)
    scanned.replay(from: owner) {
      while let event = scanner.next() {
        guard case .record(let record, let offset) = event else {
          c.expect(false, "damage in a clean segment")
          continue
        }
        events += 1
        let location = RecordLocation(
          segment: segmentNumber, offset: UInt32(offset), length: UInt32(record.length))
        if record.kind == .batch {
          let valueStart = offset + record.length - record.value.count
          do throws(LogStoreError) {
            try RecordCodec.forEachMember(of: record, salt: salt) {
              member, at throws(LogStoreError) in
              let memberLocation = RecordLocation(
                segment: segmentNumber, offset: UInt32(valueStart + at),
                length: UInt32(member.length))
              scanned.apply(LoggedChange(member, at: memberLocation))
              model.apply(member, at: memberLocation)
            }
          } catch {
            c.expect(false, "batch members: \(error.message)")
          }
        } else {
          scanned.apply(LoggedChange(record, at: location))
          model.apply(record, at: location)
        }
      }
    }
  }
  c.expect(events == records.count, "\(events) records scanned of \(records.count)")
  model.verify(scanned, &c, "from the segment")
  // Recovery from the hint file: room reserved first, then every entry applied.
  let (hint, _) = buildHint(
    segment, salt: salt, fileNumber: segmentNumber, coveredLength: segment.count)
  let hinted = KeyDirectory()
  var entries = 0
  hint.withUnsafeBytes { b in
    do throws(HintFile.Invalid) {
      let contents = try HintFile.decode(
        b, fileNumber: segmentNumber, salt: salt, segmentLength: segment.count)
      let room = NameTable<KeyDirectory.Room>()
      for entry in contents.entries where entry.kind == .put {
        let counted = room.find(entry.table) ?? (0, 0)
        room.set(entry.table, (counted.count + 1, counted.keyBytes + entry.key.count))
      }
      hinted.reserve(room)
      for entry in contents.entries {
        hinted.apply(LoggedChange(entry, inSegment: segmentNumber))
        entries += 1
      }
    } catch {
      c.expect(false, "the hint was refused: \(error.reason)")
    }
  }
  model.verify(hinted, &c, "from the hint")
  return
    "\(records.count) records (\(segment.count >> 10) KiB) scanned into a KeyDirectory and \(entries) hint entries into another: \(model.itemCount) keys in \(model.tables.count) tables, both as the model says"
}
