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

  @Test("the checksum of a word is the checksum of its four bytes, little-endian")
  func word() {
    var word: UInt32 = 0x9E37_79B9
    for _ in 0..<1000 {
      let bytes = withUnsafeBytes(of: word.littleEndian) { Array($0) }
      #expect(CRC32C.checksum(ofWord: word) == CRC32C.checksum(bytes))
      word = word &* 0x0019_660D &+ 0x3C6E_F35F
    }
    #expect(CRC32C.checksum(ofWord: 0) == CRC32C.checksum([0, 0, 0, 0]))
    #expect(CRC32C.checksum(ofWord: .max) == CRC32C.checksum([0xFF, 0xFF, 0xFF, 0xFF]))
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

  /// A byte-at-a-time CRC-32C register step, by a table computed here a bit at a time from the
  /// polynomial: the definition, sharing nothing with the tables and the three-chain
  /// combination under test.
  private static let referenceTable: [UInt32] = (0..<256).map { byte in
    var register = UInt32(byte)
    for _ in 0..<8 { register = register & 1 == 1 ? (register >> 1) ^ 0x82F6_3B78 : register >> 1 }
    return register
  }

  /// The reference register after `byte`, from `register`.
  private static func referenceStep(_ register: UInt32, _ byte: UInt8) -> UInt32 {
    referenceTable[Int((register ^ UInt32(byte)) & 0xff)] ^ (register >> 8)
  }

  /// The reference register after `bytes`, from `register` (0xFFFFFFFF at the start).
  private static func referenceRegister(_ register: UInt32, _ bytes: some Sequence<UInt8>)
    -> UInt32
  {
    bytes.reduce(register, referenceStep)
  }

  /// `count` random bytes, 16-byte aligned and followed by 16 more, so that a start from 0 to
  /// 15 gives every alignment of a word and a step.
  private static func randomBytes(_ count: Int) -> UnsafeMutableRawBufferPointer {
    var generator = SystemRandomNumberGenerator()
    let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: count + 16, alignment: 16)
    var index = 0
    while index < bytes.count {
      withUnsafeBytes(of: generator.next()) { word in
        for byte in word where index < bytes.count {
          bytes[index] = byte
          index += 1
        }
      }
    }
    return bytes
  }

  @Test("matches a reference for every length to 4096, from starts of every alignment")
  func everyLength() {
    let bytes = Self.randomBytes(4096)
    defer { bytes.deallocate() }
    // Inputs of 768 bytes and more are read as three chains, whose registers are combined:
    // every length covers every remainder past whole rounds, of up to five rounds.
    for start in 0..<16 {
      var register: UInt32 = 0xFFFF_FFFF
      for length in 0...4096 {
        let input = UnsafeRawBufferPointer(rebasing: bytes[start..<start + length])
        #expect(CRC32C.checksum(input) == ~register, "\(length) bytes from \(start)")
        if length < 4096 { register = Self.referenceStep(register, bytes[start + length]) }
      }
    }
  }

  @Test(
    "four chains extended together give each input's checksum, whatever their lengths, starts and seeds"
  )
  func fourChains() {
    let bytes = Self.randomBytes(4096)
    defer { bytes.deallocate() }
    var generator = SplitMix64(seed: 5)
    // Lengths below a step, equal, and far apart, so that the steps taken together end at
    // every chain's end and before it.
    let lengthSets = [[0, 0, 0, 0], [1, 15, 16, 17], [150, 150, 150, 150], [3, 400, 40, 1000]]
    for round in 0..<200 {
      let lengths =
        round < lengthSets.count
        ? lengthSets[round] : (0..<4).map { _ in Int(generator.next() % 700) }
      var chains: [CRC32C.Chain] = []
      var expected: [UInt32] = []
      for lane in 0..<4 {
        let start = Int(generator.next() % 3000)
        let length = min(lengths[lane], 4096 - start)
        let seed = UInt32(truncatingIfNeeded: generator.next())
        let input = UnsafeRawBufferPointer(rebasing: bytes[start..<start + length])
        chains.append(
          CRC32C.Chain(
            crc: seed, next: UnsafeRawPointer(bytes.baseAddress! + start), remaining: length))
        expected.append(CRC32C.extend(seed, input))
      }
      chains.withUnsafeMutableBufferPointer { CRC32C.extend(four: $0.baseAddress!) }
      #expect(chains.map(\.crc) == expected, "round \(round), lengths \(lengths)")
      #expect(chains.allSatisfy { $0.remaining == 0 })
    }
  }

  @Test("matches a reference for inputs of a mebibyte and odd lengths past it")
  func longInputs() {
    let mebibyte = 1 << 20
    let lengths =
      [mebibyte, mebibyte + 1, mebibyte + 15, mebibyte + 767, mebibyte + 785]
      + [3 * mebibyte + 5]
    let bytes = Self.randomBytes(lengths.last!)
    defer { bytes.deallocate() }
    for start in [0, 5] {
      var register: UInt32 = 0xFFFF_FFFF
      var done = 0
      for length in lengths {
        register = Self.referenceRegister(register, bytes[start + done..<start + length])
        done = length
        let input = UnsafeRawBufferPointer(rebasing: bytes[start..<start + length])
        #expect(CRC32C.checksum(input) == ~register, "\(length) bytes from \(start)")
      }
    }
  }

  @Test("extending at random splits equals checksumming the whole, for long and short inputs")
  func extendAtRandomSplits() {
    var generator = SystemRandomNumberGenerator()
    for total in [200, 5000, (1 << 20) + 333] {
      let bytes = Self.randomBytes(total)
      defer { bytes.deallocate() }
      let whole = UnsafeRawBufferPointer(rebasing: bytes[3..<3 + total])
      let expected = ~Self.referenceRegister(0xFFFF_FFFF, whole[...])
      #expect(CRC32C.checksum(whole) == expected)
      for _ in 0..<(total > 10_000 ? 4 : 50) {
        // One to four cuts, anywhere: pieces of every size, some empty.
        let cuts = (0..<Int.random(in: 1...4, using: &generator)).map { _ in
          Int.random(in: 0...total, using: &generator)
        }
        var crc: UInt32 = 0
        var from = 0
        for cut in cuts.sorted() + [total] {
          crc = CRC32C.extend(crc, UnsafeRawBufferPointer(rebasing: whole[from..<cut]))
          from = cut
        }
        #expect(crc == expected, "\(total) bytes cut at \(cuts.sorted())")
      }
    }
  }

  @Test("a register shifted through zero bytes equals the register over those zeros")
  func shiftThroughZeros() {
    let bytes = (0..<37).map { UInt8(truncatingIfNeeded: $0 &* 71 &+ 5) }
    let register = bytes.withUnsafeBytes { CRC32C.register(of: $0) }
    for count in Array(0...600) + [4096, 65_537, 1 << 20] {
      let padded = bytes + [UInt8](repeating: 0, count: count)
      let expected = padded.withUnsafeBytes { CRC32C.register(of: $0) }
      #expect(CRC32C.shift(register, throughZeroBytes: count) == expected, "\(count) zeros")
    }
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
