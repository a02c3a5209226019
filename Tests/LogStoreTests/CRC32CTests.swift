import Testing

@testable import LogStore

@Suite("CRC-32C")
struct CRC32CTests {
  @Test("matches the standard check value for \"123456789\"")
  func checkValue() {
    #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
  }

  @Test("matches published test vectors")
  func vectors() {
    // From RFC 3720 (iSCSI), appendix B.4.
    #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
    #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
    #expect(CRC32C.checksum((0..<32).map { UInt8($0) }) == 0x46DD_794E)
    #expect(CRC32C.checksum((0..<32).map { UInt8(31 - $0) }) == 0x113F_DB5C)
    #expect(CRC32C.checksum([]) == 0)
  }

  @Test("extending a checksum equals checksumming the concatenation, at every split")
  func extend() {
    let bytes = (0..<100).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
    let whole = CRC32C.checksum(bytes)
    for split in 0...bytes.count {
      let head = CRC32C.checksum(Array(bytes[..<split]))
      let combined = Array(bytes[split...]).withUnsafeBytes { CRC32C.extend(head, $0) }
      #expect(combined == whole)
    }
    // No bytes leave a checksum as it is, also from a buffer without an address.
    let empty = UnsafeRawBufferPointer(start: nil, count: 0)
    #expect(CRC32C.extend(whole, empty) == whole)
    #expect([UInt8]().withUnsafeBytes { CRC32C.extend(whole, $0) } == whole)
  }

  @Test("masking is undone by unmasking and changes the value")
  func masking() {
    for value: UInt32 in [0, 1, 0xE306_9283, 0xFFFF_FFFF, 0x8000_0000] {
      #expect(CRC32C.unmask(CRC32C.mask(value)) == value)
      #expect(CRC32C.mask(value) != value)
    }
  }

  @Test(
    "the four bytes before a body that give a checksum are found, for bodies of every length to 600 and far past"
  )
  func prefixSolved() {
    var generator = SystemRandomNumberGenerator()
    for length in Array(0...600) + [4096, 65_537, 1 << 20] {
      let body = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
      let prefix = UInt32.random(in: .min ... .max, using: &generator)
      let target = CRC32C.checksum(withUnsafeBytes(of: prefix.littleEndian, Array.init) + body)
      let found = body.withUnsafeBytes { CRC32C.prefix(givingChecksum: target, before: $0) }
      #expect(found == prefix, "before \(length) bytes")
    }
  }
}
