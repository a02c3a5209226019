import Testing

@testable import LogStore

/// Encodes one record into a fresh array.
func encodeRecord(
  _ kind: RecordKind = .put, sequence: UInt64 = 7, timestamp: Int64 = 1_448_000_000_000_000,
  table: String = "user_table", key: String = "1", value: String = "{\"id\":1}",
  salt: UInt32 = 0x1234_5678, member: Bool = false
) -> [UInt8] {
  let tableBytes = Array(table.utf8)
  let keyBytes = Array(key.utf8)
  let valueBytes = Array(value.utf8)
  var out = [UInt8](
    repeating: 0,
    count: RecordLayout.length(
      table: tableBytes.count, key: keyBytes.count, value: valueBytes.count))
  tableBytes.withUnsafeBytes { t in
    keyBytes.withUnsafeBytes { k in
      valueBytes.withUnsafeBytes { v in
        out.withUnsafeMutableBytes { destination in
          RecordCodec.encode(
            kind: kind, member: member, sequence: sequence, timestamp: timestamp, table: t,
            key: k, value: v, salt: salt, into: destination)
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

  @Test("batch members and top-level records are never taken for each other")
  func memberFlag() {
    let member = encodeRecord(member: true)
    #expect(throws: RecordDecodingError.self) { try decodeRecord(member, member: false).get() }
    #expect((try? decodeRecord(member, member: true).get()) != nil)
    let top = encodeRecord()
    #expect(throws: RecordDecodingError.self) { try decodeRecord(top, member: true).get() }
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
