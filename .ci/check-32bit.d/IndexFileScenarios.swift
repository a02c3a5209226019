// Scenarios of index files: a TableIndex written as an index file (IndexSnapshot) and read
// back in place (MappedIndex), looked up and walked in order; a TableIndex over it (the file
// as its base) changed against a model; damaged copies, which must never trap nor give a
// wrong location; and directories whose offsets and lengths reach 2^31 and 2^32, refused.

/// Bytes that stay put while a MappedIndex reads them, as a mapping would.
final class HeldBytes {
  let buffer: UnsafeMutableRawBufferPointer

  init(_ bytes: [UInt8]) {
    buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 64)
    for (index, byte) in bytes.enumerated() { buffer[index] = byte }
  }

  deinit { buffer.deallocate() }

  var view: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: buffer[0..<buffer.count]) }
}

/// The index file of `table` (named "t"), as a checkpoint writes it.
func indexFileBytes(of table: TableIndex, seed: UInt64) -> [UInt8]? {
  guard let tables = IndexSnapshot.tables(of: [("t", TableIndex(copying: table), nil)]) else {
    return nil
  }
  var snapshot = IndexSnapshot(
    segments: [.init(number: 3, salt: 0x8765_4321, coveredLength: 0x7FFF_FFF0)],
    nextSequence: 1 << 40, tables: tables)
  snapshot.sortKeys()
  return snapshot.encoded(number: 7, seed: seed)
}

func indexFileScenario(_ c: inout Checker) -> String {
  let keys = KeySet(count: 30_000)
  var hashes: [UInt64] = []
  for id in 0..<keys.count { hashes.append(KeyHash.hash(keys[id])) }
  let table = TableIndex()
  var model = IndexModel(count: keys.count)
  for _ in 0..<25_000 {
    let id = c.rng.below(keys.count)
    let location = model.randomLocation(&c.rng)
    table.upsert(keys[id], hash: hashes[id], location: location)
    model.set(id, location)
  }
  guard let encoded = indexFileBytes(of: table, seed: c.rng.next()) else {
    c.expect(false, "the index file was not encoded")
    return "no file"
  }
  let held = HeldBytes(encoded)
  let mapped: MappedIndex
  do throws(MappedIndex.Rejection) {
    mapped = try MappedIndex(number: 7, path: "index", bytes: held.view, owner: held)
  } catch {
    c.expect(false, "the index file was refused: \(error.reason)")
    return "refused"
  }
  c.expect(mapped.tableCount == 1 && mapped.name(ofTable: 0) == "t", "one table, named t")
  c.expect(
    mapped.keyCount == model.present && mapped.liveBytes == model.liveBytes,
    "the directory's totals")
  c.expect(
    mapped.segments == [.init(number: 3, salt: 0x8765_4321, coveredLength: 0x7FFF_FFF0)],
    "the position covered")
  c.expect(mapped.nextSequence == 1 << 40, "next sequence \(mapped.nextSequence)")
  let base: MappedTable
  do throws(MappedIndex.Rejection) {
    base = try mapped.table(at: 0).table
  } catch {
    c.expect(false, "the table was refused: \(error.reason)")
    return "table refused"
  }
  c.expect(
    base.count == model.present && base.liveBytes == model.liveBytes,
    "count \(base.count) and live bytes \(base.liveBytes) of the file")
  c.expect(base.verifyAll(), "every part of the file checks")
  var wrong = 0
  for id in 0..<keys.count {
    let expected = model.locations[id].map(MappedLookup.found) ?? .absent
    if base.find(keys[id]) != expected { wrong += 1 }
  }
  c.expect(wrong == 0, "\(wrong) lookups in the file differ from the model")
  // In order, every key once.
  var previous: [UInt8]?
  var walked = 0
  var outOfOrder = 0
  base.forEachEntry { entry in
    let key = Array(entry.key)
    if let previous, !previous.lexicographicallyPrecedes(key) { outOfOrder += 1 }
    previous = key
    walked += 1
    return true
  }
  c.expect(
    walked == model.present && outOfOrder == 0, "walked \(walked), \(outOfOrder) out of order")
  // The place of a prefix: the first key not below it.
  for _ in 0..<200 {
    let probe = Array(keys[1 + c.rng.below(keys.count - 1)].prefix(1 + c.rng.below(6)))
    let place = probe.withUnsafeBytes { base.lowerBound($0) }
    var expected = 0
    for id in 0..<keys.count where model.locations[id] != nil {
      if Array(keys[id]).lexicographicallyPrecedes(probe) { expected += 1 }
    }
    c.expect(place?.rank == expected, "lowerBound rank \(place?.rank ?? -1), expected \(expected)")
  }

  // Changes over the file, as a table opened from it takes them.
  let overlay = TableIndex(base: base)
  model.verify(overlay, keys, hashes: hashes, &c, "a table over the file")
  for _ in 0..<60_000 {
    let id = c.rng.below(keys.count)
    let choice = c.rng.below(100)
    if choice < 50 {
      let location = model.randomLocation(&c.rng)
      if overlay.upsert(keys[id], hash: hashes[id], location: location) != model.locations[id] {
        c.expect(false, "upsert \(id) over the file: previous location differs")
      }
      model.set(id, location)
    } else if choice < 85 {
      if overlay.remove(keys[id], hash: hashes[id]) != model.locations[id] {
        c.expect(false, "remove \(id) over the file: previous location differs")
      }
      model.set(id, nil)
    } else if choice < 99 {
      if let old = model.locations[id] {
        // A copy is as long as its record, and it moves while the key points below `below`.
        let place = model.randomLocation(&c.rng)
        let new = RecordLocation(segment: place.segment, offset: place.offset, length: old.length)
        c.expect(
          overlay.relocate(keys[id], hash: hashes[id], to: new, below: old.segment + 1),
          "relocate \(id)")
        model.set(id, new)
      }
    } else {
      let prefix = [UInt8(c.rng.below(KeySet.groups))]
      for other in 0..<keys.count where model.locations[other] != nil {
        if keys[other].first == prefix[0] { model.set(other, nil) }
      }
      _ = prefix.withUnsafeBytes { overlay.removeAll(withPrefix: $0) }
    }
  }
  model.verify(overlay, keys, hashes: hashes, &c, "after 60,000 changes over the file")

  // Damage: a flipped byte is refused at open or found when read, never a wrong answer.
  var refused = 0
  var found = 0
  for _ in 0..<100 {
    var damaged = encoded
    damaged[c.rng.below(damaged.count)] ^= UInt8(1 << c.rng.below(8))
    let copy = HeldBytes(damaged)
    guard let opened = try? MappedIndex(number: 7, path: "index", bytes: copy.view, owner: copy)
    else {
      refused += 1
      continue
    }
    // A table whose last entries do not end where its record says is refused when made.
    guard let table = try? opened.table(at: 0).table else {
      refused += 1
      continue
    }
    // The copy's model: the file as written (the overlay's changes are not in it).
    for id in 0..<keys.count where id % 11 == 0 {
      let answer = table.find(keys[id])
      if answer == .damaged {
        found += 1
        continue
      }
      let inFile = base.find(keys[id])
      c.expect(answer == inFile, "a damaged copy answered another location for key \(id)")
    }
  }

  // Hostile table records and directories: offsets and lengths at 2^31 and 2^32, checksums
  // made to match. A table record is refused when its table is made; the directory's totals
  // and the end of a name, at open.
  var hostile = 0
  let directoryLength = Int(encoded[48]) | Int(encoded[49]) << 8 | Int(encoded[50]) << 16
  let tableRecord = IndexFileFormat.headerSize + directoryLength
  let totals = IndexFileFormat.headerSize + IndexFileFormat.segmentRecordSize
  for (at, value) in [
    (tableRecord, UInt64(1) << 31), (tableRecord, UInt64(1) << 32),
    (tableRecord + 16, UInt64(1) << 32 - 8), (tableRecord + 16, UInt64(1) << 31),
    (tableRecord + 24, UInt64(1) << 31), (tableRecord + 24, UInt64.max),
    (tableRecord + 32, UInt64(1) << 32), (tableRecord + 40, UInt64(1) << 31 + 64),
    (totals, UInt64(1) << 31), (totals + 8, UInt64.max),
    (totals + IndexFileFormat.totalsSize, UInt64(1) << 32 - 8),
    (totals + IndexFileFormat.totalsSize, UInt64(1) << 31),
  ] {
    var bytes = encoded
    store(value, into: &bytes, at: at)
    let record = Array(bytes[tableRecord..<tableRecord + IndexFileFormat.recordChecksumOffset])
    store(
      CRC32C.mask(CRC32C.checksum(record)), into: &bytes,
      at: tableRecord + IndexFileFormat.recordChecksumOffset)
    let directory = Array(bytes[64..<64 + directoryLength])
    store(CRC32C.mask(CRC32C.checksum(directory)), into: &bytes, at: 56)
    store(CRC32C.mask(CRC32C.checksum(Array(bytes[0..<60]))), into: &bytes, at: 60)
    let copy = HeldBytes(bytes)
    guard let opened = try? MappedIndex(number: 7, path: "index", bytes: copy.view, owner: copy)
    else {
      hostile += 1
      continue
    }
    if (try? opened.table(at: 0)) == nil { hostile += 1 }
  }
  c.expect(hostile == 12, "\(hostile) of 12 hostile records and directories refused")
  return
    "\(model.present) keys over a file of \(encoded.count) bytes; damage: \(refused) refused, "
    + "\(found) found when read"
}
