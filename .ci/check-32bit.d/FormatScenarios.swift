// Scenarios of the formats: CRC-32C, records and their headers, batches, segment headers,
// manifests and hint files, with hostile numbers where `Int` is 32 bits.
//
// The scenario functions are @_optimize(none): optimizing their long bodies doubles the
// compile time and saves little at run time. Only the harness's own code is affected; the
// engine's files are compiled with -O as in a release build.

/// Numbers a damaged 32-bit length field may hold: the edges of a 32-bit Int and of UInt32,
/// and the engine's own limits.
let hostile32: [UInt32] = [
  0, 1, 27, 28, 0x7FFF, 0xFFFF, 0x10000, 0x03FF_FFFF, 0x0400_0000, 0x0400_0001, 0x1000_0000,
  0x1000_0001, 0x7FFF_FFE4, 0x7FFF_FFFE, 0x7FFF_FFFF, 0x8000_0000, 0x8000_0001, 0xFFFE_FFE4,
  0xFFFF_FFF0, 0xFFFF_FFFE, 0xFFFF_FFFF,
]

@_optimize(none)
func platformScenario(_ c: inout Checker) -> String {
  c.expect(Int.bitWidth == 32, "Int is \(Int.bitWidth) bits, not 32")
  c.expect(MemoryLayout<UnsafeRawPointer>.size == 4, "pointers are not 32 bits")
  c.expect(Int.max == 2_147_483_647, "Int.max is \(Int.max)")
  c.expect(Int(exactly: UInt32(0x8000_0000)) == nil, "Int(exactly: 2^31) is not nil")
  c.expect(Int(clamping: UInt32.max) == Int.max, "Int(clamping: UInt32.max) is not Int.max")
  // KeyHash folds with multipliedFullWidth, which runtime.c's __multi3 computes here.
  var pairs = 0
  let edges: [UInt64] = [0, 1, 0xFFFF_FFFF, 0x1_0000_0000, 0x8000_0000_0000_0000, UInt64.max]
  for i in 0..<20_006 {
    let a = i < 6 ? edges[i] : c.rng.next()
    let b = i < 6 ? edges[5 - i] : c.rng.next()
    let product = a.multipliedFullWidth(by: b)
    let (a0, a1, b0, b1) = (a & 0xFFFF_FFFF, a >> 32, b & 0xFFFF_FFFF, b >> 32)
    let (p00, p01, p10, p11) = (a0 &* b0, a0 &* b1, a1 &* b0, a1 &* b1)
    let middle = (p00 >> 32) &+ (p01 & 0xFFFF_FFFF) &+ (p10 & 0xFFFF_FFFF)
    let high = p11 &+ (p01 >> 32) &+ (p10 >> 32) &+ (middle >> 32)
    c.expect(
      product.high == high && product.low == a &* b,
      "\(hex(a)) * \(hex(b)): multipliedFullWidth is wrong")
    pairs += 1
  }
  // Memory from calloc is zero, also when it reuses freed blocks.
  for size in [16, 1000, 70_000, 3 << 20] {
    for _ in 0..<2 {
      let memory = IndexMemory.allocateZeroed(byteCount: size)
      var zero = true
      for index in stride(from: 0, to: size, by: 61)
      where memory.load(fromByteOffset: index, as: UInt8.self) != 0 {
        zero = false
      }
      c.expect(zero, "IndexMemory.allocateZeroed(\(size)) is not zeroed")
      memory.storeBytes(of: 0xAB, toByteOffset: size - 1, as: UInt8.self)
      IndexMemory.deallocate(memory, byteCount: size)
    }
  }
  return "Int and pointers 32 bits; 64x64->128 multiply right for \(pairs) pairs; zeroed memory"
}

@_optimize(none)
func crc32cScenario(_ c: inout Checker) -> String {
  var ascending = [UInt8](repeating: 0, count: 32)
  for index in 0..<32 { ascending[index] = UInt8(index) }
  let vectors: [([UInt8], UInt32)] = [
    ([], 0), (bytes("a"), 0xC1D0_4330), (bytes("123456789"), 0xE306_9283),
    ([UInt8](repeating: 0, count: 32), 0x8A91_36AA),
    ([UInt8](repeating: 0xFF, count: 32), 0x62A8_AB43), (ascending, 0x46DD_794E),
    (ascending.reversed(), 0x113F_DB5C),
    (bytes("The quick brown fox jumps over the lazy dog"), 0x2262_0404),
  ]
  for (input, expected) in vectors {
    let got = CRC32C.checksum(input)
    c.expect(got == expected, "CRC32C of \(input.count) bytes is \(hex(got)), not \(hex(expected))")
  }
  // Every length up to 300 at every alignment up to 16 (the 16-, 8- and 1-byte loops), and
  // extend() across every split of one buffer.
  let data = c.rng.bytes(320)
  var compared = 0
  for start in 0..<16 {
    for length in 0...300 {
      let got = crc(data, start..<start + length)
      let expected = referenceCRC32C(data, from: start, to: start + length)
      c.expect(
        got == expected, "CRC32C of \(length) bytes at \(start): \(hex(got)) != \(hex(expected))")
      compared += 1
    }
  }
  let whole = CRC32C.checksum(data)
  for split in 0...data.count {
    let extended = data.withUnsafeBytes {
      CRC32C.extend(crc(data, 0..<split), UnsafeRawBufferPointer(rebasing: $0[split...]))
    }
    c.expect(extended == whole, "extend at \(split) differs from the whole")
  }
  for _ in 0..<1000 {
    let value = c.rng.next32()
    c.expect(CRC32C.unmask(CRC32C.mask(value)) == value, "unmask(mask(\(hex(value))))")
  }
  c.expect(CRC32C.mask(0) == 0xA282_EAD8, "mask(0)")
  // The four bytes before a body that give a checksum (a salt solved from a record), for
  // bodies of every length to 300 and some past 64 KiB.
  var solved = 0
  for length in Array(0...300) + [4096, 70_000] {
    let body = c.rng.bytes(length)
    let prefix = c.rng.next32()
    var whole: [UInt8] = []
    for shift in stride(from: 0, to: 32, by: 8) {
      whole.append(UInt8(truncatingIfNeeded: prefix >> UInt32(shift)))
    }
    whole += body
    let target = CRC32C.checksum(whole)
    let found = body.withUnsafeBytes { CRC32C.prefix(givingChecksum: target, before: $0) }
    c.expect(found == prefix, "prefix before \(length) bytes: \(hex(found)), not \(hex(prefix))")
    solved += 1
  }
  // A checksum changed for a copy (another salt, a new sequence number, the member flag
  // cleared) by the product with the shift past the changed bytes, as compaction changes it,
  // against the checksum computed over the changed bytes; and shifts up to 2^31 zero bytes.
  var changed = 0
  for length in Array(28...200) + [4096, 70_000] {
    var record = c.rng.bytes(length)
    record[4] |= 0x80
    let (old, new) = (c.rng.next32(), c.rng.next32())
    let (sequence, renumbered) = (c.rng.next(), c.rng.next())
    func checksum(_ salt: UInt32) -> UInt32 {
      var input: [UInt8] = []
      for shift in stride(from: 0, to: 32, by: 8) {
        input.append(UInt8(truncatingIfNeeded: salt >> UInt32(shift)))
      }
      return CRC32C.checksum(input + record[4...])
    }
    let before = checksum(old)
    record[4] &= 0x7F
    for byte in 0..<8 {
      record[12 + byte] ^= UInt8(truncatingIfNeeded: (sequence ^ renumbered) >> UInt64(8 * byte))
    }
    let change = CRC32C.multiply(
      RecordCodec.changingRegister(
        salts: old ^ new, clearingMember: true, sequences: sequence ^ renumbered),
      CRC32C.shift(CRC32C.one, throughZeroBytes: length - RecordCodec.changingLength))
    c.expect(before ^ change == checksum(new), "checksum of a copy of \(length) bytes")
    changed += 1
  }
  for zeros in [0, 1, 1 << 20, Int(Int32.max)] {
    let register = c.rng.next32()
    c.expect(
      CRC32C.multiply(register, CRC32C.shift(CRC32C.one, throughZeroBytes: zeros))
        == CRC32C.shift(register, throughZeroBytes: zeros),
      "shift through \(zeros) zero bytes as a product")
  }
  return
    "\(vectors.count) known vectors, \(compared) lengths/alignments vs bitwise, extend, mask, \(solved) prefixes solved, \(changed) copies' checksums changed"
}

/// Decodes the record at `offset`, returning it or the error.
func decodeRecord(
  _ bytes: [UInt8], at offset: Int, salt: UInt32, member: Bool = false, verify: Bool = true
) -> Result<Record, RecordDecodingError> {
  bytes.withUnsafeBytes { b in
    Result { () throws(RecordDecodingError) -> Record in
      try RecordCodec.decode(b, at: offset, salt: salt, member: member, verify: verify)
    }
  }
}

func describe(_ result: Result<Record, RecordDecodingError>) -> String {
  switch result {
  case .success(let record): "decoded (\(record.length) bytes)"
  case .failure(.truncated): "truncated"
  case .failure(.damaged(let reason)): "damaged: \(reason)"
  }
}

@_optimize(none)
func recordCodecScenario(_ c: inout Checker) -> String {
  let salt: UInt32 = 0x5EED_0001
  var roundTrips = 0
  let kinds: [RecordKind] = [.put, .delete, .deletePrefix, .createTable, .clearTable, .dropTable]
  let sequences: [UInt64] = [
    1, 0x7FFF_FFFF, 0x8000_0000, 0x1_0000_0001, RecordLayout.sequenceLimit - 1,
  ]
  let timestamps: [Int64] = [Int64.min, -1, 0, 1_700_000_000_000_000, Int64.max]
  for kind in kinds {
    for member in [false, true] {
      for tableCount in [1, 7, 255] {
        for keyCount in [0, 1, 15, 16, 17, 4096, 65535] {
          if keyCount > 0 && (kind == .createTable || kind == .clearTable || kind == .dropTable) {
            continue
          }
          for valueCount in [0, 1, 100, 70_000] {
            if valueCount > 0 && kind != .put { continue }
            let sequence = sequences[c.rng.below(sequences.count)]
            let timestamp = timestamps[c.rng.below(timestamps.count)]
            let table = c.rng.bytes(tableCount)
            let key = c.rng.bytes(keyCount)
            let value = c.rng.bytes(valueCount)
            let record = encodeRecord(
              kind: kind, member: member, sequence: sequence, timestamp: timestamp,
              table: table, key: key, value: value, salt: salt)
            // At an odd offset inside a larger buffer, with bytes after it.
            let buffer = c.rng.bytes(3) + record + c.rng.bytes(5)
            switch decodeRecord(buffer, at: 3, salt: salt, member: member) {
            case .success(let r):
              c.expect(
                r.kind == kind && r.sequence == sequence && r.timestamp == timestamp
                  && r.length == record.count && Array(r.table) == table && Array(r.key) == key
                  && Array(r.value) == value,
                "round trip of \(kind.rawValue)/\(tableCount)/\(keyCount)/\(valueCount) differs")
            case .failure(let error):
              c.expect(false, "round trip of a good record failed: \(error.reason)")
            }
            // The other member flag, another salt, a cut: refused.
            c.expect(
              (try? decodeRecord(buffer, at: 3, salt: salt, member: !member).get()) == nil,
              "decoded with the wrong member flag")
            c.expect(
              decodeRecord(buffer, at: 3, salt: salt &+ 1, member: member).isChecksumMismatch,
              "decoded with another salt")
            let cut = Array(buffer[0..<3 + record.count - 1])
            c.expect(
              describe(decodeRecord(cut, at: 3, salt: salt, member: member)) == "truncated",
              "a record cut short is not truncated")
            roundTrips += 1
          }
        }
      }
    }
  }
  // The largest value, 64 MiB, is accepted; one byte more is refused before anything is
  // read. (Structure only: the checksum of large values is the round trips' above.)
  var big = [UInt8](
    repeating: 0, count: RecordLayout.length(table: 1, key: 1, value: RecordLayout.maxValueLength))
  big.withUnsafeMutableBytes {
    RecordCodec.writeHeader(
      kind: .put, member: false, tableLength: 1, keyLength: 1,
      valueLength: RecordLayout.maxValueLength,
      sequence: 9, timestamp: 0, into: $0.baseAddress!)
  }
  let bigResult = decodeRecord(big, at: 0, salt: salt, verify: false)
  c.expect(
    (try? bigResult.get())?.value.count == RecordLayout.maxValueLength,
    "the largest value is refused: \(describe(bigResult))")
  store(UInt32(RecordLayout.maxValueLength + 1), into: &big, at: RecordLayout.valueLengthOffset)
  big.append(0)
  let tooBigResult = decodeRecord(big, at: 0, salt: salt, verify: false)
  c.expect(
    describe(tooBigResult) == "damaged: malformed put header",
    "a value of 64 MiB + 1: \(describe(tooBigResult))")
  // Offsets outside the buffer, at the edges of Int: refused as truncated, never a trap.
  let small = encodeRecord(kind: .put, sequence: 1, table: [1], key: [], value: [], salt: salt)
  for offset in [
    -1, -28, Int.min, Int.min + 1, Int.max, Int.max - 27, small.count, small.count + 1, 2,
  ] {
    c.expect(
      describe(decodeRecord(small, at: offset, salt: salt)) == "truncated",
      "decode at offset \(offset) is not truncated")
  }
  return
    "\(roundTrips) round trips (all kinds, both member flags, keys to 65535 bytes), a 64 MiB value, offsets at Int's edges"
}

extension Result where Success == Record, Failure == RecordDecodingError {
  var isChecksumMismatch: Bool {
    if case .failure(.damaged("checksum mismatch")) = self { return true }
    return false
  }
}

/// What the header rules (docs/FORMAT.md) say of a header, computed without the engine:
/// nil when the header is acceptable.
func headerProblem(
  rawKind: UInt8, member: Bool, tableCount: Int, keyCount: Int, valueCount: UInt32,
  sequence: UInt64
) -> String? {
  let base = rawKind & 0x3F
  let expiry = rawKind & 0x40 != 0
  guard (rawKind & 0x80 != 0) == member, base >= 1, base <= 8 else { return "kind" }
  // The expiry flag (format version 2): only on puts and table creations. A batch and a
  // sync mark (format version 3) are never members.
  guard !expiry || base == 1 || base == 3 else { return "kind" }
  guard !member || base < 7 else { return "kind" }
  guard sequence < 1 << 62 else { return "sequence" }
  let value = UInt64(valueCount)
  if expiry {
    guard value >= 8 else { return "expiry" }
    if base == 3 { return tableCount > 0 && keyCount == 0 && value == 8 ? nil : "table" }
    return tableCount > 0 && value - 8 <= 64 << 20 ? nil : "put"
  }
  switch base {
  case 8:
    return tableCount == 0 && keyCount == 0 && value == 8 ? nil : "mark"
  case 7:
    return tableCount == 0 && keyCount == 0 && value <= 256 << 20 ? nil : "batch"
  case 1: return tableCount > 0 && value <= 64 << 20 ? nil : "put"
  case 2, 6: return tableCount > 0 && value == 0 ? nil : "delete"
  default: return tableCount > 0 && keyCount == 0 && value == 0 ? nil : "table"
  }
}

@_optimize(none)
func damagedHeaderScenario(_ c: inout Checker) -> String {
  let salt: UInt32 = 77
  // Room for any header whose value is at most 1 byte, so that those decode in full.
  let room = RecordLayout.headerSize + 255 + 65535 + 1
  var buffer = c.rng.bytes(room)
  var decodes = 0
  var refused = 0
  var accepted = 0
  let tableCounts: [UInt8] = [0, 1, 255]
  let keyCounts: [UInt16] = [0, 1, 0x7FFF, 0x8000, 0xFFFF]
  let sequences: [UInt64] = [
    1, RecordLayout.sequenceLimit - 1, RecordLayout.sequenceLimit, UInt64.max,
  ]
  for raw in 0...255 {
    let rawKind = UInt8(raw)
    for tableCount in tableCounts {
      for keyCount in keyCounts {
        for valueCount in hostile32 {
          let sequence = sequences[c.rng.below(sequences.count)]
          buffer[RecordLayout.kindOffset] = rawKind
          buffer[RecordLayout.tableLengthOffset] = tableCount
          store(keyCount, into: &buffer, at: RecordLayout.keyLengthOffset)
          store(valueCount, into: &buffer, at: RecordLayout.valueLengthOffset)
          store(sequence, into: &buffer, at: RecordLayout.sequenceOffset)
          let length =
            UInt64(RecordLayout.headerSize) + UInt64(tableCount) + UInt64(keyCount)
            + UInt64(valueCount)
          for member in [false, true] {
            let problem = headerProblem(
              rawKind: rawKind, member: member, tableCount: Int(tableCount),
              keyCount: Int(keyCount), valueCount: valueCount, sequence: sequence)
            let result = decodeRecord(buffer, at: 0, salt: salt, member: member, verify: false)
            decodes += 1
            func what() -> String {
              "kind \(hex(rawKind)) member \(member) table \(tableCount) key \(keyCount) "
                + "value \(hex(valueCount)) sequence \(hex(sequence))"
            }
            if problem != nil {
              refused += 1
              var damaged = false
              if case .failure(.damaged) = result { damaged = true }
              c.expect(damaged, "\(what()): \(describe(result)), expected damaged (\(problem!))")
            } else if length > UInt64(room) {
              refused += 1
              var truncated = false
              if case .failure(.truncated) = result { truncated = true }
              c.expect(truncated, "\(what()): \(describe(result)), expected truncated")
            } else {
              accepted += 1
              let r = try? result.get()
              let expirySize = rawKind & 0x40 != 0 ? 8 : 0
              c.expect(
                r?.length == Int(length) && r?.table.count == Int(tableCount)
                  && r?.key.count == Int(keyCount)
                  && r?.value.count == Int(valueCount) - expirySize
                  && (r?.expiry != nil) == (expirySize > 0),
                "\(what()): \(describe(result)), expected a record of \(length) bytes")
              // The checksum is random bytes: refused; made right: accepted.
              c.expect(
                decodeRecord(buffer, at: 0, salt: salt, member: member).isChecksumMismatch,
                "\(what()): a wrong checksum passed")
              var fixed = buffer
              rechecksumRecord(&fixed, at: 0, length: Int(length), salt: salt)
              c.expect(
                (try? decodeRecord(fixed, at: 0, salt: salt, member: member).get()) != nil,
                "\(what()): a right checksum failed")
            }
          }
        }
      }
    }
  }
  return
    "\(decodes) headers (every kind byte; key counts to 0xFFFF; value counts incl. 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF): \(refused) refused, \(accepted) accepted, as the rules say"
}

@_optimize(none)
func batchMemberScenario(_ c: inout Checker) -> String {
  let salt: UInt32 = 0xBA7C_0001
  var members: [UInt8] = []
  var memberOffsets: [Int] = []
  for index in 0..<5 {
    memberOffsets.append(members.count)
    members += encodeRecord(
      kind: index == 4 ? .delete : .put, member: true, sequence: 100 + UInt64(index),
      table: bytes("t"), key: [UInt8(index)], value: index == 4 ? [] : c.rng.bytes(index * 10),
      salt: salt)
  }
  let batch = encodeBatch(sequence: 100, members: members, salt: salt)
  var seen: [Int] = []
  switch decodeRecord(batch, at: 0, salt: salt) {
  case .success(let record):
    do throws(RecordDecodingError) {
      let count = try RecordCodec.validateMembers(of: record, salt: salt)
      c.expect(count == 5, "validateMembers counted \(count)")
    } catch {
      c.expect(false, "a good batch was refused: \(error.reason)")
    }
    do throws(LogStoreError) {
      try RecordCodec.forEachMember(of: record, salt: salt) {
        member, offset throws(LogStoreError) in
        seen.append(offset)
      }
    } catch {
      c.expect(false, "a good batch was refused: \(error.message)")
    }
  case .failure(let error): c.expect(false, "a good batch did not decode: \(error.reason)")
  }
  c.expect(seen == memberOffsets, "forEachMember offsets \(seen.count)")
  // A member's length fields made hostile, the batch's checksum made right again: the batch
  // decodes (its own header is fine) and its members are refused, never a trap.
  var refused = 0
  for memberIndex in [0, 2, 4] {
    for valueCount in hostile32 {
      for field in [
        RecordLayout.valueLengthOffset, RecordLayout.keyLengthOffset, RecordLayout.sequenceOffset,
        RecordLayout.kindOffset,
      ] {
        var damaged = batch
        let at = RecordLayout.headerSize + memberOffsets[memberIndex] + field
        switch field {
        case RecordLayout.valueLengthOffset: store(valueCount, into: &damaged, at: at)
        case RecordLayout.keyLengthOffset:
          store(UInt16(truncatingIfNeeded: valueCount), into: &damaged, at: at)
        case RecordLayout.sequenceOffset: store(UInt64(valueCount) << 31, into: &damaged, at: at)
        default: damaged[at] = UInt8(truncatingIfNeeded: valueCount)
        }
        if damaged == batch { continue }
        rechecksumRecord(&damaged, at: 0, length: damaged.count, salt: salt)
        // The member's own checksum no longer matches either way; without verification the
        // structure alone must refuse it, or find it fine.
        for verify in [true, false] {
          guard let record = try? decodeRecord(damaged, at: 0, salt: salt).get() else {
            c.expect(false, "the batch itself was refused")
            continue
          }
          do throws(RecordDecodingError) {
            _ = try RecordCodec.validateMembers(of: record, salt: salt, verify: verify)
            c.expect(
              !verify,
              "a damaged member passed with verification (field \(field), \(hex(valueCount)))")
          } catch {
            c.expect(error != .truncated, "validateMembers threw \(error.reason)")
            refused += 1
          }
        }
      }
    }
  }
  return "a 5-member batch; \(refused) batches with hostile member fields refused as corrupted"
}

@_optimize(none)
func packedPutsScenario(_ c: inout Checker) -> String {
  let salt: UInt32 = 0x0B47_C401
  // The same puts as packed puts and as a WriteBatch encode to the same record.
  var packed = PackedPuts(table: "users")
  var batch = WriteBatch()
  for index in 0..<300 {
    let key = bytes("key\(index)")
    let value = c.rng.bytes(index % 70)
    let time = Timestamp(microsecondsSince1970: Int64(index) * 1_000_003)
    packed.append(key: key, value: value, timestamp: time)
    batch.put(value, forKey: key, in: "users", timestamp: time)
  }
  func encoded(_ mutation: Mutation) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: mutation.encodedLength)
    bytes.withUnsafeMutableBytes {
      mutation.encode(
        into: $0, sequence: 77, now: Timestamp(microsecondsSince1970: 9), salt: salt)
    }
    return bytes
  }
  do throws(LogStoreError) {
    try withUnsafeMutablePointer(to: &packed) { packed throws(LogStoreError) in
      try Mutation.puts(packed).validateArguments()
    }
  } catch {
    c.expect(false, "good packed puts were refused: \(error.message)")
  }
  let record = withUnsafeMutablePointer(to: &packed) { encoded(.puts($0)) }
  c.expect(
    record == withUnsafePointer(to: batch) { encoded(.batch($0)) },
    "packed puts encode as the same WriteBatch")
  if let decoded = try? decodeRecord(record, at: 0, salt: salt).get() {
    let members = try? RecordCodec.validateMembers(of: decoded, salt: salt)
    c.expect(members == 300, "members: \(members ?? -1) of 300")
  } else {
    c.expect(false, "the packed puts do not decode")
  }
  // Hostile ends: past the bytes, backwards, and at 2^31 - 1, where the sum of the members'
  // lengths would pass what a 32-bit Int holds. Refused as arguments, never a trap.
  let hostile: [[PackedPuts.End]] = [
    [.init(key: 1, value: Int.max, timestamp: nil)],
    [.init(key: 1, value: 1, timestamp: nil), .init(key: 0, value: 1, timestamp: nil)],
    (0..<40).map { _ in .init(key: 0, value: Int.max, timestamp: nil) },
    [.init(key: Int.max, value: Int.max, timestamp: nil)],
  ]
  var refused = 0
  for ends in hostile {
    var puts = PackedPuts(table: "t", keys: [1], values: [2], ends: ends)
    do throws(LogStoreError) {
      try withUnsafeMutablePointer(to: &puts) { puts throws(LogStoreError) in
        try Mutation.puts(puts).validateArguments()
      }
      c.expect(false, "packed puts with hostile ends were accepted")
    } catch {
      c.expect(error.code == .invalidArgument, "hostile ends: \(error.code.name)")
      refused += 1
    }
  }
  // Ends declaring 40 puts of 64 MiB (no bytes behind them: only the length is computed),
  // clamped at Int.max: the members' lengths sum to about Int.max and stop past the limit.
  var sum = PackedPuts(table: "t")
  sum.ends = (1...40).map {
    .init(
      key: 0, value: Int(clamping: Int64($0) * Int64(RecordLayout.maxValueLength)),
      timestamp: nil)
  }
  c.expect(
    withUnsafeMutablePointer(to: &sum) { Mutation.puts($0).encodedLength }
      > RecordLayout.maxBatchLength,
    "encodedLength of 2.5 GiB of packed puts")
  return "300 packed puts encoded as the same batch; \(refused) sets of hostile ends refused"
}

@_optimize(none)
func writeBatchScenario(_ c: inout Checker) -> String {
  let salt: UInt32 = 0x0B47_C400
  var batch = WriteBatch()
  batch.createTable("users")
  for index in 0..<200 {
    batch.put(c.rng.bytes(index % 50), forKey: bytes("key\(index)"), in: "users")
  }
  batch.delete(key: bytes("key3"), in: "users")
  batch.deletePrefix(bytes("key1"), in: "users")
  batch.clearTable("users")
  batch.dropTable("users")
  let encoded = withUnsafePointer(to: batch) { batch in
    let mutation = Mutation.batch(batch)
    do throws(LogStoreError) {
      try mutation.validateArguments()
    } catch {
      c.expect(false, "a good batch was refused: \(error.message)")
    }
    var encoded = [UInt8](repeating: 0, count: mutation.encodedLength)
    encoded.withUnsafeMutableBytes {
      mutation.encode(
        into: $0, sequence: 1000, now: Timestamp(microsecondsSince1970: 5), salt: salt)
    }
    return encoded
  }
  if let record = try? decodeRecord(encoded, at: 0, salt: salt).get() {
    c.expect(record.kind == .batch && record.length == encoded.count, "the batch's header")
    let members = try? RecordCodec.validateMembers(of: record, salt: salt)
    c.expect(members == batch.count, "members: \(members ?? -1) of \(batch.count)")
  } else {
    c.expect(false, "the encoded batch does not decode")
  }
  // 40 puts of 64 MiB (one shared array): 2.5 GiB, past what a 32-bit Int holds. The sum
  // must stop past the 256 MiB limit and the batch be refused as an argument (by the length
  // a commit checks once its expiries are final), not trap.
  let large = [UInt8](repeating: 7, count: RecordLayout.maxValueLength)
  var huge = WriteBatch()
  for index in 0..<40 { huge.put(large, forKey: [UInt8(index)], in: "t") }
  withUnsafePointer(to: huge) { huge in
    let hugeMutation = Mutation.batch(huge)
    c.expect(
      hugeMutation.encodedLength > RecordLayout.maxBatchLength,
      "encodedLength \(hugeMutation.encodedLength) of a 2.5 GiB batch")
    do throws(LogStoreError) {
      try hugeMutation.validateArguments()
      _ = try hugeMutation.checkedLength()
      c.expect(false, "a 2.5 GiB batch was accepted")
    } catch {
      c.expect(error.code == .invalidArgument, "a 2.5 GiB batch: \(error.code.name)")
    }
  }
  // Single changes over the limits.
  var refused = 0
  let cases: [(table: [UInt8], key: Int, value: Int, code: LogStoreError.Code)] = [
    ([1], 65536, 0, .invalidArgument), ([1], 0, RecordLayout.maxValueLength + 1, .invalidArgument),
    ([UInt8](repeating: 65, count: 256), 0, 0, .invalidTableName), ([], 0, 0, .invalidTableName),
    ([65, 0], 0, 0, .invalidTableName),
  ]
  for item in cases {
    let key = [UInt8](repeating: 1, count: item.key)
    let value = [UInt8](repeating: 2, count: item.value)
    item.table.withUnsafeBytes { t in
      key.withUnsafeBytes { k in
        value.withUnsafeBytes { v in
          do throws(LogStoreError) {
            try Mutation.single(kind: .put, table: t, key: k, value: v, timestamp: nil)
              .validateArguments()
            c.expect(false, "a put over the limits was accepted")
          } catch {
            c.expect(error.code == item.code, "\(error.code.name) instead of \(item.code.name)")
            refused += 1
          }
        }
      }
    }
  }
  return
    "a \(batch.count)-operation batch encoded and decoded; a 2.5 GiB batch refused; \(refused) oversized puts refused"
}

@_optimize(none)
func segmentHeaderScenario(_ c: inout Checker) -> String {
  var decoded = 0
  let marks: [SegmentHeader.CompactionMark?] = [
    nil,
    SegmentHeader.CompactionMark(
      firstOutput: 0xFFFF_FFFF, outputIndex: 0x8000_0000, outputCount: 0xFFFF_FFFF),
  ]
  for fileNumber: UInt32 in [1, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF] {
    for baseSequence: UInt64 in [0, 1, 0xFFFF_FFFF, RecordLayout.sequenceLimit - 1] {
      for mark in marks {
        let header = SegmentHeader(
          fileNumber: fileNumber, salt: c.rng.next32(), baseSequence: baseSequence,
          compaction: mark)
        let bytes = header.encoded()
        let back = bytes.withUnsafeBytes { b in
          Result { () throws(SegmentHeader.DecodingError) -> SegmentHeader in
            try SegmentHeader.decode(b)
          }
        }
        c.expect((try? back.get()) == header, "segment header round trip \(fileNumber)")
        decoded += 1
      }
    }
  }
  func decode(_ bytes: [UInt8]) -> SegmentHeader.DecodingError? {
    bytes.withUnsafeBytes { b in
      do throws(SegmentHeader.DecodingError) {
        _ = try SegmentHeader.decode(b)
        return nil
      } catch { return error }
    }
  }
  func resealed(_ bytes: [UInt8]) -> [UInt8] {
    var bytes = bytes
    store(CRC32C.mask(crc(bytes, 0..<44)), into: &bytes, at: 44)
    return bytes
  }
  let good = SegmentHeader(fileNumber: 3, salt: 4, baseSequence: 5).encoded()
  var refused = 0
  c.expect(decode([UInt8](repeating: 0, count: 48)) == .incomplete, "zeros")
  c.expect(decode(Array(good[0..<47])) == .incomplete, "47 bytes")
  for sequence: UInt64 in [RecordLayout.sequenceLimit, UInt64.max, 0x8000_0000_0000_0000] {
    var bytes = good
    store(sequence, into: &bytes, at: 32)
    c.expect(decode(resealed(bytes))?.isDamage == true, "base sequence \(hex(sequence)) accepted")
    refused += 1
  }
  var newer = good
  store(UInt16(4), into: &newer, at: 8)
  c.expect(decode(resealed(newer)) == .unsupportedVersion(4), "version 4")
  for version: UInt16 in [1, 2] {
    var older = good
    store(version, into: &older, at: 8)
    c.expect(decode(resealed(older)) == nil, "version \(version) (before sync marks) not read")
  }
  for index in 0..<48 {
    var bytes = good
    bytes[index] ^= 0x10
    c.expect(decode(bytes)?.isDamage == true, "a flipped bit at \(index) passed")
    refused += 1
  }
  return
    "\(decoded) round trips (file numbers and marks to 0xFFFFFFFF); \(refused + 3) damaged or short headers refused"
}

@_optimize(none)
func manifestScenario(_ c: inout Checker) -> String {
  func decode(_ bytes: [UInt8]) -> Result<Manifest, Manifest.Invalid> {
    bytes.withUnsafeBytes { b in
      Result { () throws(Manifest.Invalid) -> Manifest in try Manifest.decode(b) }
    }
  }
  func resealed(_ bytes: [UInt8]) -> [UInt8] {
    var bytes = bytes
    let end = bytes.count - 4
    store(CRC32C.mask(crc(bytes, 0..<end)), into: &bytes, at: end)
    return bytes
  }
  let lists: [[UInt32]] = [
    [], [1], [1, 2, 3], [7, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFE, 0xFFFF_FFFF],
    Array(1...5000).map { UInt32($0) * 3 },
  ]
  for segments in lists {
    let manifest = Manifest(segments: segments, generation: UInt64.max - 1)
    c.expect(
      (try? decode(manifest.encoded()).get()) == manifest,
      "manifest of \(segments.count) segments does not round-trip")
  }
  let good = Manifest(segments: [1, 2, 3], generation: 9).encoded()
  var refused = 0
  let counts: [UInt32] = hostile32 + [2, 4, 0x4000_0000, 0x4000_0001, 0x4000_0003, 0xC000_0003]
  for count in counts where count != 3 {
    var bytes = good
    store(count, into: &bytes, at: 12)
    c.expect((try? decode(resealed(bytes)).get()) == nil, "count \(hex(count)) accepted")
    refused += 1
  }
  var descending = good
  store(UInt32(1), into: &descending, at: 28)
  c.expect((try? decode(resealed(descending)).get()) == nil, "descending segments accepted")
  var newer = good
  store(UInt16(2), into: &newer, at: 8)
  c.expect((try? decode(resealed(newer)).get()) == nil, "version 2 accepted")
  for length in 0..<good.count {
    c.expect((try? decode(Array(good[0..<length])).get()) == nil, "\(length) bytes accepted")
    refused += 1
  }
  return
    "\(lists.count) round trips (to 5000 segments, numbers to 0xFFFFFFFF); \(refused + 2) hostile counts, orders, versions and cuts refused"
}

/// Expiry fields (format version 2): records with one round-trip, hostile value lengths with
/// the flag are refused without a trap, and a table's expiring keys count records whose lengths
/// sum past 2^31 only as far as the caller's sums allow (each length is a UInt32).
@_optimize(none)
func expiryScenario(_ c: inout Checker) -> String {
  let salt: UInt32 = 0xA5A5_0101
  var records = 0
  for expiry: Int64 in [1, Int64(Int32.max) + 1, 1 << 40, Int64.max - 1] {
    let table = bytes("t")
    let key = bytes("key")
    let value = c.rng.bytes(c.rng.below(100))
    var out = [UInt8](
      repeating: 0,
      count: RecordLayout.length(table: 1, key: 3, value: value.count, expiry: expiry))
    table.withUnsafeBytes { t in
      key.withUnsafeBytes { k in
        value.withUnsafeBytes { v in
          out.withUnsafeMutableBytes { d in
            RecordCodec.encode(
              kind: .put, sequence: 9, timestamp: 1, table: t, key: k, value: v, expiry: expiry,
              salt: salt, into: d)
          }
        }
      }
    }
    let decoded = out.withUnsafeBytes { buffer in
      try? RecordCodec.decode(buffer, at: 0, salt: salt)
    }
    c.expect(decoded?.expiry == expiry, "expiry \(expiry) did not round-trip")
    c.expect(decoded?.value.count == value.count, "the value lost or gained bytes")
    c.expect(decoded?.length == out.count, "the length is not the record's")
    // Hostile value lengths with the flag: refused or cut short, never a trap.
    for length in hostile32 {
      var damaged = out
      store(length, into: &damaged, at: RecordLayout.valueLengthOffset)
      rechecksumRecord(&damaged, at: 0, length: damaged.count, salt: salt)
      let result = damaged.withUnsafeBytes { buffer in
        try? RecordCodec.decode(buffer, at: 0, salt: salt)
      }
      if let result {
        c.expect(result.length == damaged.count, "a hostile length decoded past the bytes")
      }
    }
    records += 1
  }
  let keys = ExpiringKeys()
  for index in 0..<3 {
    bytes("k\(index)").withUnsafeBytes { keys.set($0, expiry: 10, length: 0x7000_0000) }
  }
  bytes("k0").withUnsafeBytes { keys.remove($0) }
  let (count, total) = keys.advance(to: 10)
  c.expect(count == 2, "two keys expired, counted \(count)")
  // 2 × 0x7000_0000 is past Int.max here: the sum is kept in 64 bits and clamped.
  c.expect(total == Int.max, "expired bytes \(total), not clamped to Int.max")
  return "\(records) expiring records, hostile lengths refused"
}

/// The JSON layer reads up to seven bytes of a short string as one word: the same word here,
/// where `Int` and pointers are 32 bits, as the bytes assembled one by one.
func byteWordsScenario(_ c: inout Checker) -> String {
  var checked = 0
  for _ in 0..<2000 {
    let count = c.rng.below(8)
    // Bytes past the string's end, which the loads must not take in.
    let bytes = (0..<count + 8).map { _ in UInt8(truncatingIfNeeded: c.rng.below(256)) }
    var expected: UInt64 = 0
    for index in 0..<count { expected |= UInt64(bytes[index]) << (UInt64(index) * 8) }
    let word = bytes.withUnsafeBufferPointer { ByteWords.loadShort($0.baseAddress!, count: count) }
    c.expect(word == expected, "ByteWords.loadShort of \(count) bytes")
    c.expect(
      ByteWords.firstBytes(count) == (count == 0 ? 0 : UInt64.max >> (64 - UInt64(count) * 8)),
      "ByteWords.firstBytes(\(count))")
    checked += 1
  }
  // Keys ordered by their bytes: the prefixes are the bytes' big-endian numbers, and a run
  // sorted keeping the last of repeated keys is in byte order with no key twice.
  var runs = 0
  for _ in 0..<300 {
    let count = c.rng.below(24)
    let keys: [[UInt8]] = (0..<count).map { _ in
      (0..<c.rng.below(11)).map { _ in UInt8(truncatingIfNeeded: 0x61 + c.rng.below(3)) }
    }
    var run: [OrderedKey<Int>] = []
    for index in 0..<count {
      let key = keys[index]
      var expected: UInt64 = 0
      for offset in 0..<8 {
        expected = expected << 8 | UInt64(offset < key.count ? key[offset] : 0)
      }
      let prefix = key.withUnsafeBytes { KeyOrder.prefix(of: $0) }
      c.expect(prefix == expected, "KeyOrder.prefix of \(key.count) bytes")
      run.append(OrderedKey(prefix: prefix, position: index, payload: index))
    }
    let kept = run.withUnsafeMutableBufferPointer { run in
      KeyOrder.sortKeepingLast(run) { a, b in
        keys[a].withUnsafeBytes { a in keys[b].withUnsafeBytes { b in bytesOrder(a, b) } }
      }
    }
    let sorted = keys.sorted { $0.lexicographicallyPrecedes($1) }
    let distinct = sorted.indices.filter { $0 == 0 || sorted[$0] != sorted[$0 - 1] }.count
    c.expect(kept == distinct, "KeyOrder kept \(kept) of \(distinct) distinct keys")
    for index in 0..<kept {
      let key = keys[run[index].payload]
      if index > 0 {
        let before = keys[run[index - 1].payload]
        c.expect(before.lexicographicallyPrecedes(key), "KeyOrder: keys out of order or repeated")
      }
      // The last of the equal keys was kept.
      for later in (run[index].payload + 1)..<max(count, run[index].payload + 1) {
        c.expect(keys[later] != key, "KeyOrder: an earlier one of equal keys was kept")
      }
    }
    runs += 1
  }
  return "\(checked) short loads and masks, \(runs) runs of keys ordered"
}

extension SegmentHeader.DecodingError {
  /// Whether the header was refused as damaged (not as cut short, nor as newer).
  var isDamage: Bool {
    if case .damaged = self { return true }
    return false
  }
}

/// The shared state of `.manyProcesses` use: commits round-trip with offsets up to 2^31 - 1;
/// a commit slot with any offset at 2^31 or past it, fields out of order, or a flipped bit is
/// refused without a trap (its offsets become `Int`s); headers of another boot are refused.
@_optimize(none)
func sharedStateScenario(_ c: inout Checker) -> String {
  func encoded(_ commit: SharedState.Commit) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: 64)
    bytes.withUnsafeMutableBytes { commit.encode(into: $0.baseAddress!) }
    return bytes
  }
  func decode(_ bytes: [UInt8]) -> SharedState.Commit? {
    bytes.withUnsafeBytes { SharedState.Commit.decode($0.baseAddress!) }
  }
  func resealed(_ bytes: [UInt8]) -> [UInt8] {
    var bytes = bytes
    store(CRC32C.mask(crc(bytes, 0..<60)), into: &bytes, at: 60)
    return bytes
  }
  let top: UInt32 = 0x7FFF_FFFF
  var good = SharedState.Commit(
    generation: UInt64.max, nextSequence: (1 << 62) - 1, activeSegment: 0x7FFF_FFFE,
    capacity: top, committedEnd: top, allocated: top, durableEnd: top, dataEnd: top,
    markedEnd: top, nextFileNumber: 0x7FFF_FFFF)
  good.publication = UInt64.max
  c.expect(decode(encoded(good)) == good, "a commit at the limits does not round-trip")
  let bytes = encoded(good)
  var refused = 0
  // Each offset field (capacity at 20 through markedEnd at 40) at hostile values: the order of
  // the fields or the 2^31 bound refuses each.
  for offset in stride(from: 20, through: 40, by: 4) {
    for value in hostile32 where value > top {
      var hostile = bytes
      store(value, into: &hostile, at: offset)
      c.expect(decode(resealed(hostile)) == nil, "\(hex(value)) at \(offset) accepted")
      refused += 1
    }
  }
  for index in 0..<64 {
    var flipped = bytes
    flipped[index] ^= 0x10
    c.expect(decode(flipped) == nil, "a flipped bit at \(index) passed")
    refused += 1
  }
  let boot = (0..<16).map { UInt8($0 * 7) }
  var state = [UInt8](repeating: 0xEE, count: SharedState.size)
  // The lock kind of a 32-bit glibc build (a 24-byte pthread_mutex_t).
  state.withUnsafeMutableBytes {
    SharedState.initialize($0.baseAddress!, boot: boot, lockKind: 0x0118)
  }
  let valid = state.withUnsafeBytes { SharedState.headerIsValid($0.baseAddress!, boot: boot) }
  c.expect(valid, "a fresh header is not valid")
  let kind = state.withUnsafeBytes { SharedState.lockKind($0.baseAddress!) }
  c.expect(kind == 0x0118, "the lock kind read back as \(kind)")
  let otherBoot = state.withUnsafeBytes {
    SharedState.headerIsValid($0.baseAddress!, boot: boot.map { $0 ^ 1 })
  }
  c.expect(!otherBoot, "another boot's header was taken")
  c.expect(
    state[SharedState.headerLength + 4..<SharedState.size].allSatisfy { $0 == 0 }, "not zeroed")
  return
    "a commit at 2^31 - 1 round-trips; \(refused) hostile or flipped slots refused; boots told apart"
}
