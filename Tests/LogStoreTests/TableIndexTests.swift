import Testing

@testable import LogStore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

@Suite("Table index")
struct TableIndexTests {
  private func location(_ value: Int) -> RecordLocation {
    RecordLocation(
      segment: UInt32(value % 7), offset: UInt32(value), length: UInt32(40 + value % 100))
  }

  @Test("the key hash gives the values earlier builds wrote index files with, at every tail length")
  func keyHashNeverChanges() {
    // An index file keeps the seed its tables were hashed with and is read by later builds, so
    // the function must give these values forever: keys of 0 to 33 bytes, every length of the
    // tail after the 16- and 8-byte steps, under one seed.
    let expected: [UInt64] = [
      0xd80a_ecd1_9e17_d652, 0x233d_0102_40d1_1938, 0xd541_1d8f_62ef_c850,
      0xfc7f_ef6c_916a_5a9f, 0x768b_8d80_890a_37cf, 0xd365_6fb2_b49c_a61d,
      0x398a_9e7a_e908_7c33, 0x9992_cf27_ae2f_f89c, 0x34d5_e34f_e5dd_9097,
      0xb64d_8bd1_270a_c2c6, 0xb210_41e9_83af_8526, 0x04c5_e61e_2113_de7f,
      0x6fc1_4e4a_2064_7080, 0xbd0a_bd3e_0630_e624, 0x5e42_08ee_d544_cce0,
      0x29e4_8f6c_2f23_a86a, 0x5769_d9ef_2cc7_7640, 0x2b84_d3a5_97c3_6536,
      0x07dd_5636_3f9e_d6a6, 0x526b_a0d3_8ac2_589e, 0xece3_9f78_b007_628b,
      0x7dc1_72cc_24ec_e1d9, 0x98fa_6d59_01e2_af77, 0x22c3_0e22_6360_c448,
      0xf2bb_7db1_6808_0cb6, 0xd68b_aa5f_f13e_238e, 0xcb3a_04ae_edde_8f83,
      0x792e_c9b7_b099_1908, 0xd03c_7e9e_b43c_58f0, 0x09e2_240b_51c6_bd6c,
      0x1851_ff1a_cc32_6ad9, 0xa794_5c46_7073_3c7f, 0x63a0_9523_0c7a_2af1,
      0x43d1_5826_2d03_fee1,
    ]
    for length in 0...33 {
      let key = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 0xB5) }
      let hash = key.withUnsafeBytes { KeyHash.hash($0, seed: 0x0123_4567_89AB_CDEF) }
      #expect(hash == expected[length], "a key of \(length) bytes")
    }
  }

  @Test(
    "random puts, removes and prefix removes agree with a dictionary, through growth and squeezes")
  func matchesModel() {
    var generator = SplitMix64(seed: 7)
    let index = TableIndex()
    var model: [[UInt8]: RecordLocation] = [:]
    func key(_ number: UInt64) -> [UInt8] { Array("k\(number % 5_000)".utf8) }
    for step in 0..<60_000 {
      let choice = generator.next() % 100
      if choice < 60 {
        let key = key(generator.next())
        let place = location(step)
        let previous = key.withUnsafeBytes {
          index.upsert($0, hash: KeyHash.hash($0), location: place)
        }
        #expect(previous == model[key])
        model[key] = place
      } else if choice < 95 {
        let key = key(generator.next())
        let removed = key.withUnsafeBytes { index.remove($0, hash: KeyHash.hash($0)) }
        #expect(removed == model.removeValue(forKey: key))
      } else {
        let prefix = Array("k\(generator.next() % 60)".utf8)
        let removed = prefix.withUnsafeBytes { index.removeAll(withPrefix: $0) }
        let matching = model.keys.filter { $0.starts(with: prefix) }
        #expect(removed == matching.count)
        for key in matching { model[key] = nil }
      }
    }
    #expect(index.count == model.count)
    #expect(index.liveBytes == model.values.reduce(0) { $0 + Int($1.length) })
    for (key, place) in model {
      #expect(key.withUnsafeBytes { index.find($0, hash: KeyHash.hash($0)) } == place)
    }
    var seen = 0
    index.forEachKey { key, place in
      seen += 1
      #expect(model[Array(key)] == place)
    }
    #expect(seen == model.count)
    // An empty prefix removes everything, and the index still works afterwards.
    #expect(
      index.removeAll(withPrefix: UnsafeRawBufferPointer(start: nil, count: 0)) == model.count)
    #expect(index.count == 0 && index.liveBytes == 0)
    let again = Array("again".utf8)
    again.withUnsafeBytes { _ = index.upsert($0, hash: KeyHash.hash($0), location: location(1)) }
    #expect(again.withUnsafeBytes { index.find($0, hash: KeyHash.hash($0)) } == location(1))
  }

  @Test(
    "a table big enough for huge-page memory grows, finds, removes and squeezes like a small one")
  func largeTable() {
    let index = TableIndex()
    let count = 300_000
    func key(_ number: Int) -> [UInt8] { Array("user_\(number)".utf8) }
    for number in 0..<count {
      key(number).withUnsafeBytes {
        _ = index.upsert($0, hash: KeyHash.hash($0), location: location(number))
      }
    }
    #expect(index.count == count)
    #expect(index.allocatedBytes >= 2 << 20)
    // Every key found; one tenth removed by prefix (user_1, user_1x, user_1xx, ...).
    var found = 0
    for number in 0..<count
    where key(number).withUnsafeBytes({
      index.find($0, hash: KeyHash.hash($0)) == location(number)
    }) {
      found += 1
    }
    #expect(found == count)
    let prefix = Array("user_1".utf8)
    let removed = prefix.withUnsafeBytes { index.removeAll(withPrefix: $0) }
    let expected = (0..<count).filter { key($0).starts(with: prefix) }.count
    #expect(removed == expected)
    #expect(index.count == count - expected)
    for number in [0, 1, 12, 123, 2_000, 199_999, 299_999] {
      let place = key(number).withUnsafeBytes { index.find($0, hash: KeyHash.hash($0)) }
      #expect(place == (key(number).starts(with: prefix) ? nil : location(number)))
    }
  }

  @Test("keys whose hashes have no high bits share a slot tag and are still told apart")
  func hashesWithoutHighBits() {
    let index = TableIndex()
    // The slot tag is the hash's high half; zero means an empty slot, so these all get tag 1.
    let keys = (0..<40).map { Array("zero-high-\($0)".utf8) }
    for (number, key) in keys.enumerated() {
      key.withUnsafeBytes {
        _ = index.upsert($0, hash: UInt64(number % 3), location: location(number))
      }
    }
    for (number, key) in keys.enumerated() {
      #expect(key.withUnsafeBytes { index.find($0, hash: UInt64(number % 3)) } == location(number))
    }
    #expect(keys[7].withUnsafeBytes { index.remove($0, hash: 1) } == location(7))
    #expect(keys[7].withUnsafeBytes { index.find($0, hash: 1) } == nil)
    #expect(keys[8].withUnsafeBytes { index.find($0, hash: 2) } == location(8))
    #expect(index.count == keys.count - 1)
  }

  @Test("a prefix of eight bytes or more removes exactly the keys that start with it")
  func longPrefixes() {
    let index = TableIndex()
    let keys = [
      "conversation-17/a", "conversation-17/b", "conversation-17", "conversation-170/a",
      "conversation-18/a", "conversatioN-17/a", "conv", "other-key-entirely",
    ].map { Array($0.utf8) }
    for (number, key) in keys.enumerated() {
      key.withUnsafeBytes {
        _ = index.upsert($0, hash: KeyHash.hash($0), location: location(number))
      }
    }
    // 16 bytes: two whole words compared and no byte left over; then 15: a word and 7 bytes.
    for (prefix, expected) in [("conversation-17/", 2), ("conversation-17", 2)] {
      let removed = Array(prefix.utf8).withUnsafeBytes { index.removeAll(withPrefix: $0) }
      #expect(removed == expected, "prefix \(prefix)")
    }
    let left = keys.filter { key in
      key.withUnsafeBytes { index.find($0, hash: KeyHash.hash($0)) } != nil
    }.map { String(decoding: $0, as: UTF8.self) }
    #expect(
      Set(left) == ["conversation-18/a", "conversatioN-17/a", "conv", "other-key-entirely"])
  }

  @Test("index memory is zero when allocated and usable to its last byte, below and above 2 MiB")
  func indexMemory() {
    for byteCount in [1, 4_096, (2 << 20) - 8, 2 << 20, (2 << 20) + 8, 5 << 20] {
      let memory = IndexMemory.allocateZeroed(byteCount: byteCount)
      let bytes = UnsafeMutableRawBufferPointer(start: memory, count: byteCount)
      #expect(bytes.allSatisfy { $0 == 0 })
      #expect(Int(bitPattern: memory) % 16 == 0)
      for offset in stride(from: 0, to: byteCount, by: 4_093) { bytes[offset] = 0xA5 }
      bytes[byteCount - 1] = 0x5A
      #expect(bytes[byteCount - 1] == 0x5A)
      #expect(byteCount == 1 || bytes[0] == 0xA5)
      IndexMemory.deallocate(memory, byteCount: byteCount)
    }
  }

  #if os(Linux)
    @Test(
      "index memory of 2 MiB and more is a mapping of its own, which deallocate unmaps, even where the aligned mapping fails"
    )
    func indexMemoryWithoutAlignment() {
      let page = Int(sysconf(Int32(_SC_PAGESIZE)))
      for byteCount in [2 << 20, (2 << 20) + 8] {
        // No aligned region (a process out of address space for the extra 2 MiB).
        let memory = IndexMemory.mapZeroed(byteCount, touchedWhole: true) { _ in nil }
        let bytes = UnsafeMutableRawBufferPointer(start: memory, count: byteCount)
        #expect(bytes.allSatisfy { $0 == 0 })
        bytes[byteCount - 1] = 0x5A
        // What deallocate unmaps, whole pages from `memory` to the next 2 MiB, is mapped: the
        // C library's memory would not start at a page (glibc's never does), and unmapping it
        // would fail and leak it, or take pages the allocator hands out again.
        #expect(Int(bitPattern: memory) % page == 0)
        let length = (byteCount + (2 << 20) - 1) / (2 << 20) * (2 << 20)
        #expect(msync(memory, length, MS_ASYNC) == 0)
        IndexMemory.deallocate(memory, byteCount: byteCount)
      }
    }
  #endif
}
