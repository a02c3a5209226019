// Changes files (Format/ChangesFile.swift): written, read back and put into a table, and with
// hostile counts, places and locations, which must be refused where they do not fit, never
// trap, where `Int` is 32 bits.

/// Decodes a changes file over index file 7, returning its contents or why it is refused.
private func decodeChanges(_ bytes: [UInt8]) -> Result<ChangesFile.Contents, ChangesFile.Invalid> {
  bytes.withUnsafeBytes { b in
    do throws(ChangesFile.Invalid) {
      return .success(try ChangesFile.decode(b, indexFile: 7))
    } catch {
      return .failure(error)
    }
  }
}

/// Recomputes a changes file's two checksums (after a deliberate change).
private func resealChanges(_ bytes: inout [UInt8]) {
  store(CRC32C.mask(crc(bytes, ChangesFile.headerSize..<bytes.count)), into: &bytes, at: 44)
  store(CRC32C.mask(crc(bytes, 0..<48)), into: &bytes, at: 48)
}

func changesFileScenario(_ c: inout Checker) -> String {
  let segments: [IndexFileFormat.CoveredSegment] = [
    .init(number: 3, salt: 0xC4A6_0001, coveredLength: 1 << 20),
    .init(number: 0x7FFF_FFFE, salt: 0xC4A6_0002, coveredLength: 0x7FFF_FFF0),
  ]
  // A table with no place in the index file and thousands of keys, and one over place 0 with
  // tombstones and unsettled keys.
  var keys: [[UInt8]: RecordLocation] = [:]
  while keys.count < 5_000 {
    let segment = c.rng.next() & 1 == 0 ? segments[0] : segments[1]
    let length = UInt32(28 + c.rng.next() % 200)
    let offset = UInt32(48 + c.rng.next() % UInt64(segment.coveredLength - 48 - Int(length)))
    keys[c.rng.bytes(1 + Int(c.rng.next() % 40))] = RecordLocation(
      segment: segment.number, offset: offset, length: length)
  }
  var builder = ChangesFile.Builder(
    indexFile: 7, nextSequence: 1 << 40, segments: segments, dropped: [0x7FFF_FFFF, 2])
  bytes("new").withUnsafeBytes { name in
    builder.beginTable(
      name: name, place: nil, lifetime: -1, count: keys.count, liveBytes: 0x7FFF_FFFF,
      creation: RecordLocation(segment: 3, offset: 48, length: 40))
  }
  for (key, location) in keys {
    key.withUnsafeBytes { builder.add($0, location: location, unsettled: false) }
  }
  bytes("over").withUnsafeBytes { name in
    builder.beginTable(
      name: name, place: 0x7FFF_FFFF, lifetime: 0, count: 0, liveBytes: 0, creation: nil)
  }
  bytes("gone").withUnsafeBytes { builder.add($0, location: nil, unsettled: true) }
  let file = builder.finish()

  var summary = ""
  switch decodeChanges(file) {
  case .success(let contents):
    c.expect(contents.segments == segments, "the position read back wrong")
    c.expect(contents.dropped == [0x7FFF_FFFF, 2], "the dropped places read back wrong")
    c.expect(contents.nextSequence == 1 << 40, "the next sequence number read back wrong")
    c.expect(contents.tables.count == 2, "\(contents.tables.count) tables read back")
    if contents.tables.count == 2 {
      let new = contents.tables[0]
      c.expect(new.place == nil && new.lifetime == -1, "the first table's fields read back wrong")
      c.expect(new.liveBytes == 0x7FFF_FFFF, "live bytes of 2^31 - 1 read back wrong")
      let over = contents.tables[1]
      c.expect(over.place == 0x7FFF_FFFF, "a place at 2^31 - 1 read back wrong")
      var read: [(key: [UInt8], location: RecordLocation?, unsettled: Bool)] = []
      for change in over.changes {
        read.append((Array(change.key), change.location, change.unsettled))
      }
      c.expect(
        read.count == 1 && read[0].key == bytes("gone") && read[0].location == nil
          && read[0].unsettled, "a tombstone read back wrong")
      // Put into a table: every key found where it was.
      let table = TableIndex()
      do throws(ChangesFile.Invalid) {
        try table.restore(new.changes, keyBytes: new.keyBytes, count: new.count, liveBytes: 0)
      } catch {
        c.expect(false, "a good table was refused: \(error.reason)")
      }
      var wrong = 0
      for (key, location) in keys {
        let found = key.withUnsafeBytes { table.find($0, hash: KeyHash.hash($0)) }
        if found != location { wrong += 1 }
      }
      c.expect(wrong == 0, "\(wrong) keys not found where they were")
      c.expect(table.count == keys.count, "\(table.count) keys counted")
      summary = "\(keys.count) keys written, read and put into a table"
    }
  case .failure(let invalid):
    c.expect(false, "a good changes file was refused: \(invalid.reason)")
  }

  // Hostile counts in the header and in the table's header: refused unless they are the real
  // ones, never a trap.
  var refused = 0
  let tableHeader = ChangesFile.headerSize + segments.count * ChangesFile.segmentRecordSize + 8
  let fields: [(at: Int, real: UInt32)] = [
    (32, 2), (36, 2), (40, 2), (tableHeader, ChangesFile.noPlace), (tableHeader + 4, 3),
    (tableHeader + 44, UInt32(keys.count)), (ChangesFile.headerSize + 32, 0x7FFF_FFFF),
  ]
  for field in fields {
    for value in hostile32 where value != field.real {
      var changed = file
      store(value, into: &changed, at: field.at)
      resealChanges(&changed)
      if case .failure = decodeChanges(changed) { refused += 1 }
    }
  }
  // A place past what a 32-bit `Int` holds, in a table's header and among the dropped.
  for value in hostile32 where value > 0x7FFF_FFFF && value != ChangesFile.noPlace {
    var changed = file
    store(value, into: &changed, at: ChangesFile.headerSize + 32)
    resealChanges(&changed)
    if case .success = decodeChanges(changed) {
      c.expect(Int.bitWidth == 64, "a dropped place \(hex(value)) accepted where Int is 32 bits")
    }
  }
  // The first change's location: accepted exactly when it lies inside its covered segment.
  let firstChange = tableHeader + ChangesFile.tableHeaderSize + 3
  var accepted = 0
  for offset in hostile32 {
    for length in hostile32 {
      var changed = file
      store(UInt32(3), into: &changed, at: firstChange)
      store(offset, into: &changed, at: firstChange + 4)
      store(length, into: &changed, at: firstChange + 8)
      resealChanges(&changed)
      let fits = offset >= 48 && length >= 28 && UInt64(offset) + UInt64(length) <= 1 << 20
      switch decodeChanges(changed) {
      case .success:
        c.expect(fits, "a change at \(hex(offset)), \(hex(length)) bytes accepted")
        accepted += 1
      case .failure:
        c.expect(!fits, "a change at \(hex(offset)), \(hex(length)) bytes refused")
      }
    }
  }
  // A covered length past 2^31 is a position only where `Int` holds it.
  var past = file
  store(UInt64(1) << 32, into: &past, at: ChangesFile.headerSize + 16 + 8)
  resealChanges(&past)
  if case .success = decodeChanges(past) {
    c.expect(Int.bitWidth == 64, "a covered length of 2^32 accepted where Int is 32 bits")
  }
  // Cut anywhere: refused.
  for length in stride(from: 0, to: file.count, by: 997) {
    if case .success = decodeChanges(Array(file[..<length])) {
      c.expect(false, "a file cut to \(length) bytes accepted")
    }
  }
  return summary + "; \(refused) hostile counts refused, \(accepted) locations accepted"
}
