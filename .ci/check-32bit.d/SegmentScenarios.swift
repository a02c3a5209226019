// Scenarios of segments: hint files with hostile entries, and the scanner over records, a
// damaged region and a torn tail.
//
// The scenario functions are @_optimize(none): optimizing their long bodies doubles the
// compile time and saves little at run time. Only the harness's own code is affected; the
// engine's files are compiled with -O as in a release build.

/// What a hint entry should say.
struct ExpectedEntry: Equatable {
  var kind: RecordKind
  var offset: Int
  var length: Int
  var sequence: UInt64
  var table: [UInt8]
  var key: [UInt8]
}

/// A segment of `count` records after its header: puts, deletes and table changes in a few
/// tables, with a batch every 50 records. Returns the bytes and, per top-level record, its
/// offset, length and sequence numbers.
func makeSegment(
  _ rng: inout SplitMix, salt: UInt32, fileNumber: UInt32 = 1, baseSequence: UInt64 = 1,
  count: Int, keys: Int = 500, tableChangeOdds: Int = 20
) -> (bytes: [UInt8], records: [(offset: Int, length: Int, first: UInt64, last: UInt64)]) {
  var segment = SegmentHeader(fileNumber: fileNumber, salt: salt, baseSequence: baseSequence)
    .encoded()
  var records: [(offset: Int, length: Int, first: UInt64, last: UInt64)] = []
  var sequence = baseSequence
  let tables = [bytes("t"), bytes("users"), bytes("a-longer-table-name")]
  for index in 0..<count {
    let table = tables[rng.below(tables.count)]
    let key = bytes("k\(rng.below(keys))")
    let record: [UInt8]
    var taken: UInt64 = 1
    if index % 50 == 49 {
      var members: [UInt8] = []
      for member in 0..<3 {
        members += encodeRecord(
          kind: member == 2 ? .delete : .put, member: true, sequence: sequence + UInt64(member),
          table: table, key: bytes("k\(rng.below(keys))"),
          value: member == 2 ? [] : rng.bytes(rng.below(40)), salt: salt)
      }
      record = encodeBatch(sequence: sequence, members: members, salt: salt)
      taken = 3
    } else {
      // Table-wide changes once in `tableChangeOdds` records (drops and clears rarely).
      let choice = rng.below(100)
      let kind: RecordKind =
        index == 0
        ? .createTable
        : rng.below(tableChangeOdds) == 0
          ? (choice < 80 ? .createTable : choice < 90 ? .clearTable : .dropTable)
          : choice < 75 ? .put : choice < 96 ? .delete : .deletePrefix
      let hasKey = kind == .put || kind == .delete || kind == .deletePrefix
      record = encodeRecord(
        kind: kind, sequence: sequence, timestamp: Int64(index), table: table,
        key: kind == .deletePrefix ? Array(key[0..<max(2, key.count - 1)]) : hasKey ? key : [],
        value: kind == .put ? rng.bytes(rng.below(60)) : [], salt: salt)
    }
    records.append((segment.count, record.count, sequence, sequence + taken - 1))
    segment += record
    sequence += taken
  }
  return (segment, records)
}

/// Decodes a hint file, returning its entries or the reason it is refused.
func decodeHint(_ hint: [UInt8], fileNumber: UInt32, salt: UInt32, segmentLength: Int)
  -> Result<[ExpectedEntry], HintFile.Invalid>
{
  hint.withUnsafeBytes { b in
    Result { () throws(HintFile.Invalid) -> [ExpectedEntry] in
      let contents = try HintFile.decode(
        b, fileNumber: fileNumber, salt: salt, segmentLength: segmentLength)
      return contents.entries.map {
        ExpectedEntry(
          kind: $0.kind, offset: $0.offset, length: $0.length, sequence: $0.sequence,
          table: Array($0.table), key: Array($0.key))
      }
    }
  }
}

/// Recomputes a hint file's two checksums (after a deliberate change).
func resealHint(_ hint: inout [UInt8]) {
  store(CRC32C.mask(crc(hint, HintFile.headerSize..<hint.count)), into: &hint, at: 40)
  store(CRC32C.mask(crc(hint, 0..<44)), into: &hint, at: 44)
}

/// Builds the hint of a segment as the engine does (batches as their members).
func buildHint(_ segment: [UInt8], salt: UInt32, fileNumber: UInt32, coveredLength: Int) -> (
  hint: [UInt8], entries: [ExpectedEntry]
) {
  var builder = HintFile.Builder()
  var entries: [ExpectedEntry] = []
  segment.withUnsafeBytes { b in
    var scanner = SegmentScanner(
      bytes: UnsafeRawBufferPointer(rebasing: b[0..<coveredLength]), owner: nil, salt: salt,
      baseSequence: 1, extent: .sealedWithoutMarks)
    func add(_ record: Record, _ offset: Int) {
      builder.add(record, offset: offset)
      entries.append(
        ExpectedEntry(
          kind: record.kind, offset: offset, length: record.length, sequence: record.sequence,
          table: Array(record.table), key: Array(record.key)))
    }
    while let event = scanner.next() {
      guard case .record(let record, let offset) = event else { continue }
      if record.kind == .batch {
        let valueStart = offset + record.length - record.value.count
        try? RecordCodec.forEachMember(of: record, salt: salt) {
          member, at throws(LogStoreError) in add(member, valueStart + at)
        }
      } else {
        add(record, offset)
      }
    }
  }
  return (
    builder.encoded(fileNumber: fileNumber, salt: salt, coveredLength: coveredLength), entries
  )
}

@_optimize(none)
func hintFileScenario(_ c: inout Checker) -> String {
  let salt: UInt32 = 0x41A7_0001
  let (segment, _) = makeSegment(&c.rng, salt: salt, fileNumber: 12, count: 3000)
  let (hint, entries) = buildHint(segment, salt: salt, fileNumber: 12, coveredLength: segment.count)
  switch decodeHint(hint, fileNumber: 12, salt: salt, segmentLength: segment.count) {
  case .success(let decoded):
    c.expect(
      decoded == entries,
      "the hint's \(decoded.count) entries differ from the \(entries.count) written")
  case .failure(let invalid): c.expect(false, "a good hint was refused: \(invalid.reason)")
  }
  c.expect(
    (try? decodeHint(hint, fileNumber: 13, salt: salt, segmentLength: segment.count).get()) == nil,
    "a hint for another segment was accepted")
  c.expect(
    (try? decodeHint(hint, fileNumber: 12, salt: salt, segmentLength: segment.count - 1).get())
      == nil, "a hint covering more than the segment was accepted")

  // A small hint whose entries are made hostile one field at a time, checksums made right:
  // accepted exactly when the entry lies inside the covered bytes.
  let (small, smallEntries) = buildHint(
    segment, salt: salt, fileNumber: 12, coveredLength: 48 + 200)
  let covered = UInt64(48 + 200)
  let firstEntry = HintFile.headerSize
  var refused = 0
  var accepted = 0
  for offset in hostile32 + [48] {
    for length in hostile32 + [UInt32(smallEntries[0].length)] {
      var bytes = small
      store(offset, into: &bytes, at: firstEntry + 4)
      store(length, into: &bytes, at: firstEntry + 8)
      resealHint(&bytes)
      let fits =
        offset >= 48 && length >= 28 && UInt64(offset) + UInt64(length) <= covered
      switch decodeHint(bytes, fileNumber: 12, salt: salt, segmentLength: Int.max) {
      case .success(let decoded):
        c.expect(fits, "entry at \(hex(offset)), \(hex(length)) bytes accepted")
        c.expect(
          decoded.first?.offset == Int(offset) && decoded.first?.length == Int(length),
          "entry read back wrong")
        accepted += 1
      case .failure:
        c.expect(!fits, "entry at \(hex(offset)), \(hex(length)) bytes refused")
        refused += 1
      }
    }
  }
  // The header's numbers.
  let entriesLength = UInt64(small.count - HintFile.headerSize)
  var hostileHeaders: [(at: Int, value: UInt64, width: Int)] = []
  for count in hostile32 where Int(exactly: count) != smallEntries.count {
    hostileHeaders.append((20, UInt64(count), 4))
  }
  for coveredLength: UInt64 in [
    0, 47, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF, 0x1_0000_0000, 0x1_0000_0030, UInt64.max,
  ] {
    hostileHeaders.append((24, coveredLength, 8))
  }
  for length: UInt64 in [
    0, entriesLength - 1, entriesLength + 1, entriesLength + 0x8000_0000,
    entriesLength + 0x1_0000_0000, 0xFFFF_FFFF, UInt64.max,
  ] {
    hostileHeaders.append((32, length, 8))
  }
  for (at, value, width) in hostileHeaders {
    var bytes = small
    if width == 4 {
      store(UInt32(value), into: &bytes, at: at)
    } else {
      store(value, into: &bytes, at: at)
    }
    resealHint(&bytes)
    // Against a segment of 48 + 200 bytes: every one of these is refused.
    c.expect(
      (try? decodeHint(bytes, fileNumber: 12, salt: salt, segmentLength: 48 + 200).get()) == nil,
      "header field at \(at) = \(hex(value)) accepted")
    refused += 1
  }
  // Entry fields: kinds, name lengths, sequence numbers.
  var entryChanges: [(at: Int, value: UInt64, width: Int)] = []
  for kind: UInt64 in [0, 7, 8, 0x81, 0x87, 0xFF] { entryChanges.append((0, kind, 1)) }
  entryChanges.append((1, 0xFF, 1))
  for keyCount: UInt64 in [0xFFFF, 0x8000, 0x7FFF] { entryChanges.append((2, keyCount, 2)) }
  for sequence: UInt64 in [0, RecordLayout.sequenceLimit, UInt64.max, 0x8000_0000_0000_0000] {
    entryChanges.append((12, sequence, 8))
  }
  for (at, value, width) in entryChanges {
    var bytes = small
    switch width {
    case 1: bytes[firstEntry + at] = UInt8(value)
    case 2: store(UInt16(value), into: &bytes, at: firstEntry + at)
    default: store(value, into: &bytes, at: firstEntry + at)
    }
    resealHint(&bytes)
    c.expect(
      (try? decodeHint(bytes, fileNumber: 12, salt: salt, segmentLength: 48 + 200).get()) == nil,
      "entry field at \(at) = \(hex(value)) accepted")
    refused += 1
  }
  for length in 0..<small.count {
    c.expect(
      (try? decodeHint(Array(small[0..<length]), fileNumber: 12, salt: salt, segmentLength: 248)
        .get()) == nil, "a hint cut to \(length) bytes accepted")
    refused += 1
  }
  // Random changes, checksums made right: whatever is accepted keeps the invariants.
  var fuzzAccepted = 0
  for _ in 0..<3000 {
    var bytes = small
    for _ in 0..<1 + c.rng.below(4) {
      bytes[HintFile.headerSize + c.rng.below(bytes.count - HintFile.headerSize)] = UInt8(
        truncatingIfNeeded: c.rng.next())
    }
    resealHint(&bytes)
    if case .success(let decoded) = decodeHint(
      bytes, fileNumber: 12, salt: salt, segmentLength: 48 + 200)
    {
      fuzzAccepted += 1
      var last: UInt64 = 0
      for entry in decoded {
        c.expect(
          entry.offset >= 48 && entry.length >= 28 && entry.offset + entry.length <= 248
            && entry.sequence > last && entry.kind != .batch,
          "an accepted entry breaks the rules")
        last = entry.sequence
      }
    }
  }
  // Near 2^31: a segment of almost 2 GiB (Int.max bytes) and an entry just below its end.
  var builder = HintFile.Builder()
  let record = encodeRecord(kind: .put, sequence: 5, table: [1], key: [2], value: [], salt: salt)
  record.withUnsafeBytes { b in
    if let r = try? RecordCodec.decode(b, at: 0, salt: salt) {
      builder.add(r, offset: 0x7FFF_FFF0 - record.count)
    }
  }
  let edge = builder.encoded(fileNumber: 12, salt: salt, coveredLength: 0x7FFF_FFF0)
  let edgeResult = decodeHint(edge, fileNumber: 12, salt: salt, segmentLength: Int.max)
  c.expect(
    (try? edgeResult.get())?.first?.offset == 0x7FFF_FFF0 - record.count,
    "an entry just below 2^31 was not read back")
  for coveredLength: UInt64 in [0x8000_0000, 0xFFFF_FFFF, 0x1_0000_0000, UInt64.max] {
    var bytes = edge
    store(coveredLength, into: &bytes, at: 24)
    resealHint(&bytes)
    c.expect(
      (try? decodeHint(bytes, fileNumber: 12, salt: salt, segmentLength: Int.max).get()) == nil,
      "covered length \(hex(coveredLength)) accepted")
    refused += 1
  }
  return
    "\(entries.count) entries round-trip; \(refused) hostile hints refused (offsets/lengths to 0xFFFFFFFF, counts, lengths past 2^32), \(accepted) fitting accepted; \(fuzzAccepted)/3000 fuzzed accepted, all in bounds; an entry at 2^31 - 16"
}

/// The scanner's events, as values.
enum ScanEvent: Equatable {
  case record(offset: Int, length: Int, sequence: UInt64)
  case damaged(offset: Int, length: Int)
}

/// Scans `bytes` as the last segment of a version without sync marks (a torn tail when no good
/// record follows a bad one) or as a sealed one of that version, or with `extent` as given.
func scan(
  _ bytes: [UInt8], salt: UInt32, isLast: Bool, start: Int = SegmentHeader.size,
  mayBeBeingWritten: Bool = false, extent: SegmentScanner.Extent? = nil
) -> (events: [ScanEvent], end: Int, torn: Bool, last: UInt64) {
  bytes.withUnsafeBytes { b in
    var scanner = SegmentScanner(
      bytes: b, owner: nil, salt: salt, baseSequence: 1,
      extent: extent ?? (isLast ? .unsealedWithoutMarks : .sealedWithoutMarks), start: start,
      mayBeBeingWritten: mayBeBeingWritten)
    var events: [ScanEvent] = []
    while let event = scanner.next() {
      switch event {
      case .record(let record, let offset):
        events.append(.record(offset: offset, length: record.length, sequence: record.sequence))
      case .damaged(let offset, let length, _):
        events.append(.damaged(offset: offset, length: length))
      }
    }
    return (events, scanner.end, scanner.foundTornTail, scanner.lastSequence)
  }
}

@_optimize(none)
func segmentScannerScenario(_ c: inout Checker) -> String {
  let salt: UInt32 = 0x5CA7_0001
  let (good, records) = makeSegment(&c.rng, salt: salt, count: 40)
  let goodEvents = records.map {
    ScanEvent.record(offset: $0.offset, length: $0.length, sequence: $0.first)
  }
  let clean = scan(good, salt: salt, isLast: true)
  c.expect(clean.events == goodEvents, "a clean segment: \(clean.events.count) events")
  c.expect(clean.end == good.count && !clean.torn, "a clean segment's end")
  c.expect(clean.last == records.last!.last, "lastSequence \(clean.last)")
  // Zeros after the records (reserved space) are the clean end.
  let reserved = scan(good + [UInt8](repeating: 0, count: 4096), salt: salt, isLast: false)
  c.expect(reserved.events == goodEvents && reserved.end == good.count, "zeros after the records")
  // From where a hint left off.
  let resumed = scan(good, salt: salt, isLast: true, start: records[20].offset)
  c.expect(resumed.events == Array(goodEvents[20...]), "a scan from record 20")

  // Record 10's value length made hostile (its checksum then fails too), 13 bytes of
  // garbage after record 20, and record 39 cut in the middle: the torn tail.
  var scenarios = 0
  for valueCount in hostile32 {
    var bytes = good
    let r10 = records[10]
    store(valueCount, into: &bytes, at: r10.offset + RecordLayout.valueLengthOffset)
    if bytes == good { continue }
    let garbage = [UInt8](repeating: 0xA5, count: 13)
    bytes.insert(contentsOf: garbage, at: records[21].offset)
    let shift = garbage.count
    let tornAt = records[39].offset + shift
    let torn = Array(bytes[0..<tornAt + records[39].length / 2])
    var expected = Array(goodEvents[0..<10])
    expected.append(.damaged(offset: r10.offset, length: r10.length))
    expected += goodEvents[11...20]
    expected.append(.damaged(offset: records[21].offset, length: shift))
    for r in records[21..<39] {
      expected.append(.record(offset: r.offset + shift, length: r.length, sequence: r.first))
    }
    for mayBeBeingWritten in [false, true] {
      let last = scan(torn, salt: salt, isLast: true, mayBeBeingWritten: mayBeBeingWritten)
      c.expect(
        last.events == expected,
        "value length \(hex(valueCount)): \(last.events.count) events, \(expected.count) expected")
      c.expect(
        last.torn && last.end == tornAt,
        "value length \(hex(valueCount)): torn tail not found at \(tornAt)")
      c.expect(last.last == records[38].last, "lastSequence after damage")
      // Not the last segment: the cut record is damage to the end.
      let sealed = scan(torn, salt: salt, isLast: false, mayBeBeingWritten: mayBeBeingWritten)
      c.expect(
        sealed.events == expected + [.damaged(offset: tornAt, length: torn.count - tornAt)]
          && !sealed.torn && sealed.end == torn.count,
        "value length \(hex(valueCount)), not last: \(sealed.events.count) events")
      scenarios += 1
    }
  }
  // A torn tail whose header claims a length past 2^31.
  var tail = good
  let header = records[39]
  store(UInt32(0xFFFF_FFF0), into: &tail, at: header.offset + RecordLayout.valueLengthOffset)
  let tailScan = scan(tail, salt: salt, isLast: true)
  c.expect(
    tailScan.events == Array(goodEvents[0..<39]) && tailScan.torn && tailScan.end == header.offset,
    "a last record claiming 4 GiB is not a torn tail")
  return
    "a clean \(records.count)-record segment, reserved zeros, a resumed scan; \(scenarios) scans with a hostile value length, garbage and a torn tail (last segment and not)"
}

/// Sets the checksum of `record`, a whole record.
func storeChecksum(_ record: inout [UInt8], salt: UInt32) {
  record.withUnsafeMutableBytes { RecordCodec.writeChecksum($0, salt: salt) }
}

/// A sync mark (format version 3) saying the bytes before `claim` were synced.
func syncMark(sequence: UInt64, claim: Int, salt: UInt32) -> [UInt8] {
  var out = [UInt8](repeating: 0, count: RecordLayout.syncMarkLength)
  out.withUnsafeMutableBytes {
    RecordCodec.encodeSyncMark(
      sequence: sequence, timestamp: 1, syncedEnd: claim, salt: salt, into: $0)
  }
  return out
}

@_optimize(none)
func syncMarkScenario(_ c: inout Checker) -> String {
  let salt: UInt32 = 0x5F0C_0001
  let (good, records) = makeSegment(&c.rng, salt: salt, count: 60)
  // Synced after record 39: a mark claiming what precedes it, carrying record 39's number.
  let markAt = records[40].offset
  var marked = Array(good[..<markAt])
  marked += syncMark(sequence: records[39].last, claim: markAt, salt: salt)
  marked += good[markAt...]
  let shift = RecordLayout.syncMarkLength
  func events(_ range: Range<Int>, shiftedFrom: Int = 60) -> [ScanEvent] {
    range.map { index in
      let r = records[index]
      return .record(
        offset: r.offset + (index >= shiftedFrom ? shift : 0), length: r.length, sequence: r.first)
    }
  }
  var checked = 0
  // A lost page past the mark (record 50 zeroed): the log ends there, whatever follows.
  var lost = marked
  let r50 = records[50].offset + shift
  for index in r50..<r50 + records[50].length { lost[index] = 0 }
  let ended = scan(lost, salt: salt, isLast: true, extent: .unsealed)
  c.expect(
    ended.events == events(0..<50, shiftedFrom: 40),
    "a loss past the mark: \(ended.events.count) events")
  c.expect(ended.torn && ended.end == r50, "a loss past the mark ends the log at it")
  // The same loss before the mark (record 20): damage, and everything after is kept.
  var damaged = marked
  for index in records[20].offset..<records[20].offset + records[20].length { damaged[index] = 0 }
  let kept = scan(damaged, salt: salt, isLast: true, extent: .unsealed)
  var expected = events(0..<20, shiftedFrom: 40)
  expected.append(.damaged(offset: records[20].offset, length: records[20].length))
  expected += events(21..<60, shiftedFrom: 40)
  c.expect(kept.events == expected, "a loss before the mark: \(kept.events.count) events")
  c.expect(!kept.torn && kept.end == marked.count, "a loss before the mark: the end")
  checked += 2
  // Claims that cannot be: past the mark itself, below the header, at 2^31, 2^32 and beyond,
  // in 64 bits. Such a mark is a bad record: the log ends at it, past what is proven.
  for claim: UInt64 in [UInt64(markAt + 1), 0, 47, 1 << 31, 1 << 32 - 1, 1 << 32, .max] {
    var bogus = marked
    var mark = syncMark(sequence: records[39].last, claim: 48, salt: salt)
    for byte in 0..<8 { mark[28 + byte] = UInt8(truncatingIfNeeded: claim >> UInt64(8 * byte)) }
    storeChecksum(&mark, salt: salt)
    bogus.replaceSubrange(markAt..<markAt + shift, with: mark)
    let result = scan(bogus, salt: salt, isLast: true, extent: .unsealed)
    c.expect(
      result.events == events(0..<40) && result.torn && result.end == markAt, "claim \(hex(claim))")
    checked += 1
  }
  // A sealed segment of version 3 ends with a mark claiming all of it; one cut at a record's
  // end is damage there.
  let closed = good + syncMark(sequence: records[59].last, claim: good.count, salt: salt)
  c.expect(
    scan(closed, salt: salt, isLast: false, extent: .sealed).events == events(0..<60),
    "a sealed segment")
  let cut = scan(Array(closed[..<records[30].offset]), salt: salt, isLast: false, extent: .sealed)
  c.expect(
    cut.events == events(0..<30) + [.damaged(offset: records[30].offset, length: 0)],
    "a sealed segment cut at a record's end")
  checked += 2
  // Every kind and flag is found again after damage: expiring puts and table creations with a
  // lifetime (kind bytes 0x41, 0x43) included.
  var kinds = good
  let after = records[10].offset
  var insert: [UInt8] = []
  var sequence = records[9].last + 1
  for (kind, value) in [(RecordKind.put, 12), (.createTable, 8)] {
    var record = encodeRecord(
      kind: kind, sequence: sequence, table: bytes("t"), key: kind == .put ? bytes("e") : [],
      value: [UInt8](repeating: 1, count: value), salt: salt)
    record[RecordLayout.kindOffset] |= RecordLayout.expiryFlag
    storeChecksum(&record, salt: salt)
    insert += record
    sequence += 1
  }
  kinds.insert(contentsOf: insert, at: after)
  // Record 9's kind byte made invalid: the search for the next record must stop at the
  // expiring put right after it.
  kinds[records[9].offset + RecordLayout.kindOffset] ^= 0x10
  let found = scan(kinds, salt: salt, isLast: false, extent: .sealedWithoutMarks)
  let offsets = found.events.compactMap { event -> Int? in
    if case .record(let offset, _, _) = event { return offset }
    return nil
  }
  let firstLength = RecordLayout.length(table: 1, key: 1, value: 12)
  let renumbered = offsets.contains(after) && offsets.contains(after + firstLength)
  c.expect(renumbered, "an expiring put and a lifetime found again after damage")
  checked += 1
  return
    "\(checked) scans of sync marks: losses past and before one, impossible claims, sealed ends, expiring kinds after damage"
}

@_optimize(none)
func scannerDamageScenario(_ c: inout Checker) -> String {
  let salt: UInt32 = 0xD4A6_0001
  let (good, records) = makeSegment(&c.rng, salt: salt, count: 300)
  var totalRecords = 0
  var totalDamage = 0
  let rounds = 400
  for round in 0..<rounds {
    var bytes = good
    // A few changes: bytes, hostile 32-bit numbers in record headers, cut, or zeroed runs.
    for _ in 0..<1 + c.rng.below(4) {
      let r = records[c.rng.below(records.count)]
      switch c.rng.below(4) {
      case 0: bytes[r.offset + c.rng.below(r.length)] ^= UInt8(1 + c.rng.below(255))
      case 1:
        store(
          hostile32[c.rng.below(hostile32.count)], into: &bytes,
          at: r.offset + RecordLayout.valueLengthOffset)
      case 2:
        let start = r.offset + c.rng.below(r.length)
        for index in start..<min(bytes.count, start + c.rng.below(200)) { bytes[index] = 0 }
      default:
        store(
          UInt16(truncatingIfNeeded: c.rng.next()), into: &bytes,
          at: r.offset + RecordLayout.keyLengthOffset)
      }
    }
    if round % 3 == 0 { bytes.removeLast(c.rng.below(500)) }
    let isLast = round % 2 == 0
    let result = scan(bytes, salt: salt, isLast: isLast)
    // The events tile the bytes from the header to `end` in order; records decode and their
    // sequence numbers rise.
    var position = SegmentHeader.size
    var lastSequence: UInt64 = 0
    for event in result.events {
      switch event {
      case .record(let offset, let length, let sequence):
        c.expect(offset == position, "round \(round): a record at \(offset), expected \(position)")
        c.expect(
          sequence > lastSequence, "round \(round): sequence \(sequence) after \(lastSequence)")
        c.expect(
          (try? decodeRecord(bytes, at: offset, salt: salt).get())?.length == length,
          "round \(round): a reported record does not decode")
        lastSequence = sequence
        position = offset + length
        totalRecords += 1
      case .damaged(let offset, let length):
        c.expect(
          offset == position && length > 0,
          "round \(round): damage at \(offset)+\(length), expected \(position)")
        position = offset + length
        totalDamage += 1
      }
    }
    c.expect(
      result.end == position && position <= bytes.count,
      "round \(round): end \(result.end), events end at \(position)")
    c.expect(!result.torn || isLast, "round \(round): a torn tail in a sealed segment")
  }
  return
    "\(rounds) damaged copies of a \(records.count)-record segment: \(totalRecords) records and \(totalDamage) damaged regions, tiled and in order"
}
