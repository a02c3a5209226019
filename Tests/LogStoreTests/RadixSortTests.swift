import Testing

@testable import LogStore
@testable import LogStoreTesting

/// The radix sort shared by compaction's listing and the index file's slot placement, and an
/// index file of more keys than one placement chunk.
@Suite("Radix sort")
struct RadixSortTests {
  private struct Item: RadixSorted {
    var key: UInt64
    var position: Int
    var radixKey: UInt64 { key }
  }

  @Test("sorts as a stable sort does, for keys of one byte to eight and of equal bytes")
  func againstStableSort() {
    var generator = SeededGenerator(seed: 5)
    for significantBits in [0, 1, 8, 9, 18, 33, 64] {
      for count in [0, 1, 2, 300, 5_000] {
        let mask = significantBits == 64 ? UInt64.max : (UInt64(1) << significantBits) - 1
        // A constant high part: its bytes, the same in every item, are skipped.
        let items = (0..<count).map { position in
          Item(key: generator.next() & mask | 0x5A00_0000_0000_0000 & ~mask, position: position)
        }
        var sorted = items
        radixSort(&sorted)
        // Stable: equal keys keep their order.
        let expected = items.sorted { ($0.key, $0.position) < ($1.key, $1.position) }
        #expect(
          sorted.map(\.position) == expected.map(\.position),
          "\(significantBits) bits, \(count) items")
      }
    }
  }

  /// Key `id` of ``manyChunks()``: of 16 bytes and fewer (written from its sort item's prefix),
  /// exactly 16, and longer (read from the keys' bytes); key 0 is empty.
  private static func key(_ id: Int) -> [UInt8] {
    switch id % 3 {
    case _ where id == 0: return []
    case 0: return Array("key-\(id)".utf8)
    case 1: return Array("k\(id.zeroPadded(width: 15))".utf8)
    default: return Array("a key longer than sixteen bytes, \(id)".utf8)
    }
  }

  @Test(
    "an index file of more keys than a placement chunk, short and long, finds every key through its slots"
  )
  func manyChunks() throws {
    let table = TableIndex()
    let count = 300_000
    for id in 0..<count {
      let key = Self.key(id)
      key.withUnsafeBytes {
        _ = table.upsert(
          $0, hash: KeyHash.hash($0),
          location: RecordLocation(segment: 1, offset: UInt32(id) * 64 + 64, length: 40))
      }
    }
    let tables = try #require(IndexSnapshot.tables(of: [("t", TableIndex(copying: table), nil)]))
    var snapshot = IndexSnapshot(
      segments: [.init(number: 1, salt: 7, coveredLength: count * 64 + 64)], nextSequence: 1,
      tables: tables)
    snapshot.sortKeys()
    let bytes = try #require(snapshot.encoded(number: 2, seed: 0x1234))
    let held = MappedIndexTests.Held(bytes)
    let index = try MappedIndex(number: 2, path: "index", bytes: held.view, owner: held)
    let mapped = try index.table(at: 0).table
    #expect(mapped.count == count)
    #expect(mapped.verifyAll())
    for id in Array(stride(from: 0, to: count, by: 997)) + [1, 2, 3, 4] {
      let found = Self.key(id).withUnsafeBytes { mapped.find($0) }
      #expect(
        found == .found(RecordLocation(segment: 1, offset: UInt32(id) * 64 + 64, length: 40)))
    }
  }
}
