import Testing

@testable import LogStore

/// Encodes one record into a fresh array; `valueBytes`, when given, is the value instead of
/// `value` (a batch's value is its encoded members).
func encodeRecord(
  _ kind: RecordKind = .put, sequence: UInt64 = 7, timestamp: Int64 = 1_448_000_000_000_000,
  table: String = "user_table", key: String = "1", value: String = "{\"id\":1}",
  valueBytes: [UInt8]? = nil, salt: UInt32 = 0x1234_5678, member: Bool = false,
  expiry: Int64? = nil
) -> [UInt8] {
  let tableBytes = Array(table.utf8)
  let keyBytes = Array(key.utf8)
  let valueBytes = valueBytes ?? Array(value.utf8)
  var out = [UInt8](
    repeating: 0,
    count: RecordLayout.length(
      table: tableBytes.count, key: keyBytes.count, value: valueBytes.count, expiry: expiry))
  tableBytes.withUnsafeBytes { t in
    keyBytes.withUnsafeBytes { k in
      valueBytes.withUnsafeBytes { v in
        out.withUnsafeMutableBytes { destination in
          RecordCodec.encode(
            kind: kind, member: member, sequence: sequence, timestamp: timestamp, table: t,
            key: k, value: v, expiry: expiry, salt: salt, into: destination)
        }
      }
    }
  }
  return out
}

func decodeRecord(_ bytes: [UInt8], salt: UInt32 = 0x1234_5678, member: Bool = false) -> Result<
  (kind: RecordKind, sequence: UInt64, table: String, key: String, value: String, length: Int),
  RecordDecodingError
> {
  bytes.withUnsafeBytes { buffer in
    Result { () throws(RecordDecodingError) in
      let record = try RecordCodec.decode(buffer, at: 0, salt: salt, member: member)
      return (
        record.kind, record.sequence, String(decoding: record.table, as: UTF8.self),
        String(decoding: record.key, as: UTF8.self), String(decoding: record.value, as: UTF8.self),
        record.length
      )
    }
  }
}

@Suite("Record codec")
struct RecordCodecTests {
  @Test(
    "the records found intact four at a time are exactly those that decode with their checksum checked"
  )
  func intactRecords() {
    var generator = SplitMix64(seed: 17)
    for round in 0..<300 {
      // Up to 32 records in two segments' worth of bytes with their own salts; some damaged
      // (a flipped bit anywhere: the checksum, the header or the value), some past the end.
      let salts: [UInt32] = [0x1234_5678, 0x9ABC_DEF0]
      var segments: [[UInt8]] = [[], []]
      var places: [(segment: Int, offset: Int, member: Bool)] = []
      let count = round < 33 ? round : Int(generator.next() % 33)
      for index in 0..<count {
        let segment = Int(generator.next() % 2)
        let member = generator.next() % 5 == 0
        let valueLength = Int(generator.next() % (generator.next() % 4 == 0 ? 400 : 40))
        var record = encodeRecord(
          sequence: UInt64(index + 1), key: "k\(index)",
          value: String(repeating: "v", count: valueLength), salt: salts[segment], member: member,
          expiry: generator.next() % 3 == 0 ? 99 : nil)
        if generator.next() % 4 == 0 {
          let bit = Int(generator.next() % UInt64(record.count * 8))
          record[bit / 8] ^= 1 << (bit % 8)
        }
        places.append((segment, segments[segment].count, member))
        segments[segment] += record
      }
      // A record cut short by its segment's end, and one placed past it.
      if count > 0, generator.next() % 2 == 0 { segments[places.last!.segment].removeLast() }
      if count > 1, generator.next() % 2 == 0 {
        places[0].offset = segments[places[0].segment].count + 1
      }
      segments[0].withUnsafeBytes { first in
        segments[1].withUnsafeBytes { second in
          let buffers = [first, second]
          let located = places.map {
            RecordCodec.Located(
              bytes: buffers[$0.segment], offset: $0.offset, salt: salts[$0.segment],
              member: $0.member)
          }
          let intact = located.withUnsafeBufferPointer { RecordCodec.intactRecords($0) }
          for (index, record) in located.enumerated() {
            let decodes =
              (try? RecordCodec.decode(
                record.bytes, at: record.offset, salt: record.salt, member: record.member,
                verify: true)) != nil
            #expect((intact & 1 << index != 0) == decodes, "round \(round), record \(index)")
          }
          #expect(count == 32 || intact >> count == 0, "round \(round)")
        }
      }
    }
  }

  @Test("a record decodes to the fields it was encoded from")
  func roundTrip() throws {
    let bytes = encodeRecord()
    #expect(bytes.count == 28 + 10 + 1 + 8)
    let record = try decodeRecord(bytes).get()
    #expect(record.kind == .put)
    #expect(record.sequence == 7)
    #expect(record.table == "user_table")
    #expect(record.key == "1")
    #expect(record.value == "{\"id\":1}")
    #expect(record.length == bytes.count)
  }

  @Test("the layout is little-endian as documented")
  func layout() {
    let bytes = encodeRecord(sequence: 0x0102_0304_0506_0708, timestamp: 0x1122_3344_5566_7788)
    #expect(bytes[4] == RecordKind.put.rawValue)
    #expect(bytes[5] == 10)
    #expect(bytes[6] == 1 && bytes[7] == 0)
    #expect(Array(bytes[8..<12]) == [8, 0, 0, 0])
    #expect(Array(bytes[12..<20]) == [8, 7, 6, 5, 4, 3, 2, 1])
    #expect(Array(bytes[20..<28]) == [0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11])
    #expect(Array(bytes[28..<38]) == Array("user_table".utf8))
  }

  @Test("every truncation of a record is reported as truncated, never as a record")
  func truncations() {
    let bytes = encodeRecord()
    for length in 0..<bytes.count {
      #expect(throws: RecordDecodingError.truncated) {
        try decodeRecord(Array(bytes[..<length])).get()
      }
    }
  }

  @Test("flipping any bit of a record makes it fail to decode")
  func flippedBits() {
    let bytes = encodeRecord()
    for index in bytes.indices {
      for bit in 0..<8 {
        var damaged = bytes
        damaged[index] ^= UInt8(1 << bit)
        #expect(throws: RecordDecodingError.self) { try decodeRecord(damaged).get() }
      }
    }
  }

  @Test("a record does not verify under another segment's salt")
  func salt() {
    let bytes = encodeRecord(salt: 1)
    #expect(throws: RecordDecodingError.damaged("checksum mismatch")) {
      try decodeRecord(bytes, salt: 2).get()
    }
  }

  @Test(
    "a checksum changed for another salt, a new sequence number and a cleared member flag equals the one computed over the bytes, at every length to 5000 and far past it, by the shift and by the product with the shift of one"
  )
  func checksumChange() {
    var generator = SeededGenerator(seed: 31)
    let lengths = Array(0...5000) + [65_536, 1 << 20, (4 << 20) + 3]
    for valueLength in lengths {
      let value = (0..<valueLength).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
      let (old, new) = (UInt32(truncatingIfNeeded: generator.next()), UInt32(valueLength))
      let sequence = generator.next() % RecordLayout.sequenceLimit
      // Every third length keeps its number (a change of the salt alone).
      let renumbered =
        valueLength % 3 == 0 ? sequence : generator.next() % RecordLayout.sequenceLimit
      for member in [false, true] where valueLength % 7 == 0 || valueLength > 5000 || !member {
        let encoded = encodeRecord(sequence: sequence, valueBytes: value, salt: old, member: member)
        var expected = encodeRecord(
          sequence: renumbered, valueBytes: value, salt: old, member: member)
        expected[RecordLayout.kindOffset] &= ~RecordLayout.memberFlag
        expected.withUnsafeMutableBytes { RecordCodec.writeChecksum($0, salt: new) }
        // The change's register shifted through the rest of the record, by the shift and as a
        // product (``SegmentBuilder`` computes it so).
        let register = RecordCodec.changingRegister(
          salts: old ^ new, clearingMember: member, sequences: sequence ^ renumbered)
        let zeros = encoded.count - RecordCodec.changingLength
        let change = CRC32C.shift(register, throughZeroBytes: zeros)
        let product = CRC32C.multiply(register, CRC32C.shift(CRC32C.one, throughZeroBytes: zeros))
        #expect(product == change, "value of \(valueLength) bytes, member \(member)")
        let stored = CRC32C.unmask(encoded.withUnsafeBytes { $0.load(as: UInt32.self) })
        let changed = CRC32C.mask(stored ^ change)
        #expect(
          changed == expected.withUnsafeBytes { $0.load(as: UInt32.self) },
          "value of \(valueLength) bytes, member \(member)")
        // Read without `decodeRecord`, which makes the value a `String`: repairing random bytes
        // as UTF-8 throws inside the standard library, and the test library records a
        // backtrace of every throw (about 84 of this test's 91 s).
        let sequenceRead = expected.withUnsafeBytes {
          try? RecordCodec.decode($0, at: 0, salt: new, member: false).sequence
        }
        #expect(sequenceRead == renumbered)
      }
    }
  }

  @Test(
    "the product of registers is the polynomials' product: it commutes, 1 is its unit, and it shifts as the zero bytes do"
  )
  func registerProduct() {
    var generator = SeededGenerator(seed: 32)
    for _ in 0..<2000 {
      let (a, b) = (
        UInt32(truncatingIfNeeded: generator.next()), UInt32(truncatingIfNeeded: generator.next())
      )
      #expect(CRC32C.multiply(a, b) == CRC32C.multiply(b, a))
      #expect(CRC32C.multiply(a, CRC32C.one) == a)
      let zeros = Int(generator.next() % 100_000)
      #expect(
        CRC32C.multiply(a, CRC32C.shift(CRC32C.one, throughZeroBytes: zeros))
          == CRC32C.shift(a, throughZeroBytes: zeros))
    }
  }

  @Test("batch members and top-level records are never taken for each other")
  func memberFlag() {
    let member = encodeRecord(member: true)
    #expect(throws: RecordDecodingError.self) { try decodeRecord(member, member: false).get() }
    #expect((try? decodeRecord(member, member: true).get()) != nil)
    let top = encodeRecord()
    #expect(throws: RecordDecodingError.self) { try decodeRecord(top, member: true).get() }
  }

  @Test(
    "expiry fields: a put's and a creation's round-trip; on any other kind, too short, or of the wrong size they are damage; every cut and flipped bit is refused"
  )
  func expiryFields() throws {
    func decoded(_ bytes: [UInt8]) throws(RecordDecodingError) -> (Int64?, String, Int) {
      let result = bytes.withUnsafeBytes { buffer in
        Result { () throws(RecordDecodingError) in
          let record = try RecordCodec.decode(buffer, at: 0, salt: 0x1234_5678)
          return (record.expiry, String(decoding: record.value, as: UTF8.self), record.length)
        }
      }
      return try result.get()
    }
    let put = encodeRecord(expiry: 1_900_000_000_000_000)
    #expect(put.count == encodeRecord().count + 8)
    #expect(put[4] == RecordKind.put.rawValue | 0x40)
    var (expiry, value, length) = try decoded(put)
    #expect(expiry == 1_900_000_000_000_000 && value == "{\"id\":1}" && length == put.count)
    (expiry, value, _) = try decoded(encodeRecord(expiry: nil))
    #expect(expiry == nil && value == "{\"id\":1}")
    let creation = encodeRecord(.createTable, key: "", value: "", expiry: 3_600_000_000)
    (expiry, value, _) = try decoded(creation)
    #expect(expiry == 3_600_000_000 && value.isEmpty)
    let member = encodeRecord(member: true, expiry: 5)
    let memberExpiry = member.withUnsafeBytes { buffer in
      try? RecordCodec.decode(buffer, at: 0, salt: 0x1234_5678, member: true).expiry
    }
    #expect(memberExpiry == 5)

    /// `bytes` with its kind byte or'ed with the expiry flag and its checksum made good again.
    func flagged(_ bytes: [UInt8]) -> [UInt8] {
      var bytes = bytes
      bytes[4] |= 0x40
      bytes.withUnsafeMutableBytes { RecordCodec.writeChecksum($0, salt: 0x1234_5678) }
      return bytes
    }
    let refused: [(String, [UInt8])] = [
      ("a delete", flagged(encodeRecord(.delete, value: "12345678"))),
      ("a prefix delete", flagged(encodeRecord(.deletePrefix, value: "12345678"))),
      ("a clear", flagged(encodeRecord(.clearTable, key: "", value: "12345678"))),
      ("a put whose value has no room", flagged(encodeRecord(value: "1234567"))),
      ("a creation of 9 bytes", flagged(encodeRecord(.createTable, key: "", value: "123456789"))),
      ("a creation with a key", flagged(encodeRecord(.createTable, key: "k", value: "12345678"))),
    ]
    for (what, bytes) in refused {
      #expect(throws: RecordDecodingError.self, "\(what)") { try decoded(bytes) }
    }
    #expect((try? decoded(flagged(encodeRecord(.createTable, key: "", value: "12345678")))) != nil)
    for cut in 0..<put.count {
      #expect(throws: RecordDecodingError.truncated) { try decoded(Array(put[..<cut])) }
    }
    for index in put.indices {
      for bit in 0..<8 {
        var damaged = put
        damaged[index] ^= UInt8(1 << bit)
        #expect(throws: RecordDecodingError.self) { try decoded(damaged) }
      }
    }
  }

  @Test("headers that break the rules of their kind are rejected")
  func kindRules() {
    // A delete carries no value; a table operation no key; every kind but batch a table.
    #expect(throws: RecordDecodingError.self) {
      try decodeRecord(encodeRecord(.delete, value: "x")).get()
    }
    #expect(throws: RecordDecodingError.self) {
      try decodeRecord(encodeRecord(.dropTable, key: "k", value: "")).get()
    }
    #expect(throws: RecordDecodingError.self) {
      try decodeRecord(encodeRecord(.put, table: "")).get()
    }
    #expect((try? decodeRecord(encodeRecord(.createTable, key: "", value: "")).get()) != nil)
  }

  @Test(
    "a sync mark is a top-level record of no table and no key whose value is the 8 bytes of the offset it claims; never a batch member, never with an expiry"
  )
  func syncMarks() throws {
    var mark = [UInt8](repeating: 0, count: RecordLayout.syncMarkLength)
    mark.withUnsafeMutableBytes {
      RecordCodec.encodeSyncMark(
        sequence: 9, timestamp: 5, syncedEnd: 4_000, salt: 0x1234_5678, into: $0)
    }
    let record = try mark.withUnsafeBytes { buffer throws(RecordDecodingError) in
      try RecordCodec.decode(buffer, at: 0, salt: 0x1234_5678)
    }
    #expect(record.kind == .syncMark && record.sequence == 9 && record.length == mark.count)
    #expect(RecordCodec.syncedEnd(of: record) == 4_000)
    // Any other shape of kind 8 is damage: a table, a key, another value length.
    for (table, key, value) in [("t", "", "12345678"), ("", "k", "12345678"), ("", "", "1234")] {
      #expect(throws: RecordDecodingError.self, "\(table)/\(key)/\(value)") {
        try decodeRecord(encodeRecord(.syncMark, table: table, key: key, value: value)).get()
      }
    }
    // The member flag on a batch or a sync mark, the expiry flag on a sync mark.
    for raw: UInt8 in [0x87, 0x88, 0x48, 0xC8] {
      #expect(RecordLayout.kind(ofRaw: raw, member: raw & 0x80 != 0) == nil, "kind byte \(raw)")
    }
    #expect(RecordLayout.kind(ofRaw: 0x08, member: false)?.kind == .syncMark)
    #expect(RecordLayout.kind(ofRaw: 0x41, member: false)?.hasExpiry == true)
    #expect(RecordLayout.kind(ofRaw: 0xC1, member: true)?.kind == .put)
  }

  @Test("a sequence number of 2^62 or more is damage, even with a good checksum")
  func sequenceLimit() throws {
    let highest = RecordLayout.sequenceLimit - 1
    #expect(try decodeRecord(encodeRecord(sequence: highest)).get().sequence == highest)
    for sequence in [RecordLayout.sequenceLimit, UInt64.max - 1, UInt64.max] {
      #expect(throws: RecordDecodingError.self) {
        try decodeRecord(encodeRecord(sequence: sequence)).get()
      }
    }
  }

  @Test("a value length of 2^31 or more is refused, not converted (32-bit Int)")
  func hugeValueLength() {
    for length: UInt32 in [0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF] {
      var bytes = encodeRecord()
      withUnsafeBytes(of: length.littleEndian) {
        bytes.replaceSubrange(
          RecordLayout.valueLengthOffset..<RecordLayout.valueLengthOffset + 4, with: $0)
      }
      #expect(throws: RecordDecodingError.self) { try decodeRecord(bytes).get() }
    }
  }

  /// A batch record of sequence 7 whose value is `members`.
  private func batch(_ members: [UInt8]) -> [UInt8] {
    encodeRecord(.batch, sequence: 7, table: "", key: "", valueBytes: members)
  }

  /// A member of a batch: a put of `key` in table "t".
  private func member(_ key: String, sequence: UInt64) -> [UInt8] {
    encodeRecord(.put, sequence: sequence, table: "t", key: key, value: "v", member: true)
  }

  /// What checking the members of the batch record `bytes` finds: their count, or the reason
  /// it gives; and what `forEachMember` does: the keys it visits, or the error it throws.
  private func checkMembers(_ bytes: [UInt8]) throws -> (
    validated: Result<Int, RecordDecodingError>, visited: Result<[String], LogStoreError>
  ) {
    try bytes.withUnsafeBytes { buffer in
      let record = try RecordCodec.decode(buffer, at: 0, salt: 0x1234_5678)
      let validated = Result { () throws(RecordDecodingError) in
        try RecordCodec.validateMembers(of: record, salt: 0x1234_5678)
      }
      var keys: [String] = []
      let visited = Result { () throws(LogStoreError) -> [String] in
        try RecordCodec.forEachMember(of: record, salt: 0x1234_5678) { member, _ in
          keys.append(String(decoding: member.key, as: UTF8.self))
        }
        return keys
      }
      if case .failure = visited {
        #expect(keys.isEmpty, "members were visited before the refusal")
      }
      return (validated, visited)
    }
  }

  @Test("a batch's members are all checked before any is visited; each refusal says where")
  func batchMembers() throws {
    let first = member("a", sequence: 7)
    let good = try checkMembers(batch(first + member("b", sequence: 8)))
    #expect(good.validated == .success(2))
    #expect(try good.visited.get() == ["a", "b"])

    var damaged = member("b", sequence: 8)
    damaged[damaged.count - 1] ^= 1
    let gap = "batch member at \(first.count) is out of sequence"
    let cases: [(members: [UInt8], reason: String)] = [
      (first + damaged, "batch member at \(first.count): checksum mismatch"),
      (first + member("b", sequence: 9), gap),
      (member("a", sequence: 8), "batch member at 0 is out of sequence"),
      (
        first + Array(member("b", sequence: 8).dropLast()),
        "batch member at \(first.count): the record runs past the end of its buffer"
      ),
      (
        first + encodeRecord(sequence: 8), "batch member at \(first.count): invalid record kind 0x1"
      ),
    ]
    for (members, reason) in cases {
      let result = try checkMembers(batch(members))
      #expect(result.validated == .failure(.damaged(reason)))
      #expect(throws: LogStoreError(.corrupted, reason)) { try result.visited.get() }
    }
  }

  @Test("random bytes never decode and never trap")
  func randomBytes() {
    var generator = SplitMix64(seed: 42)
    var decoded = 0
    for _ in 0..<20_000 {
      let count = Int(generator.next() % 96)
      let bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
      if (try? decodeRecord(bytes).get()) != nil { decoded += 1 }
    }
    #expect(decoded == 0)
  }
}

/// A small deterministic random number generator for tests.
struct SplitMix64: RandomNumberGenerator {
  var state: UInt64
  init(seed: UInt64) { state = seed }
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}
