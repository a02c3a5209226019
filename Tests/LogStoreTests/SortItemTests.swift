import Testing

@testable import LogStore

/// The one order of keys (``bytesPrecede(_:_:)``) as ``SortItem/sort(_:keys:)`` reaches it, by
/// the first 16 bytes as numbers and then the bytes, and as keys are merged into keys sorted
/// already (an index file's, ``SortItem/sort(_:sortedCount:keys:)``).
@Suite("Sorting keys")
struct SortItemTests {
  /// `count` keys of lengths 0 to 40, many sharing their first 16 bytes (zero bytes among them,
  /// so that a key and the same key with zeros after it pad alike), with their items.
  private func keys(_ count: Int, seed: UInt64) -> (keys: [UInt8], items: [SortItem]) {
    var generator = SeededGenerator(seed: seed)
    var keys: [UInt8] = []
    var items: [SortItem] = []
    let shared: [[UInt8]] = [
      Array("user_00000000000".utf8), [0, 0, 0], Array(repeating: 0xFF, count: 16), [],
    ]
    for index in 0..<count {
      var key = shared[Int(generator.next() % 4)]
      let extra = Int(generator.next() % 25)
      for _ in 0..<extra { key.append(UInt8(truncatingIfNeeded: generator.next() % 3)) }
      if generator.next() % 5 == 0 { key = Array(key.prefix(Int(generator.next() % 18))) }
      key.withUnsafeBytes { bytes in
        items.append(
          SortItem(
            key: bytes, keyStart: keys.count,
            location: RecordLocation(segment: 1, offset: UInt32(index), length: 1)))
      }
      keys += key
    }
    return (keys, items)
  }

  private func bytes(of item: SortItem, in keys: [UInt8]) -> [UInt8] {
    Array(keys[item.keyStart..<item.keyStart + item.keyLength])
  }

  /// Whether `items` are in key order (equal keys side by side).
  private func isSorted(_ items: [SortItem], keys: [UInt8]) -> Bool {
    zip(items, items.dropFirst()).allSatisfy { a, b in
      let (x, y) = (bytes(of: a, in: keys), bytes(of: b, in: keys))
      return !y.withUnsafeBytes { y in x.withUnsafeBytes { x in bytesPrecede(y, x) } }
    }
  }

  @Test(
    "items come out in key order, many sharing their first 16 bytes or padding alike",
    arguments: [0, 1, 2, 100, 255, 256, 257, 5_000, 40_000])
  func sortsByBytes(count: Int) {
    var (keys, items) = keys(count, seed: UInt64(count) + 1)
    let before = items
    SortItem.sort(&items, keys: keys)
    #expect(isSorted(items, keys: keys))
    #expect(
      items.map(\.location.offset).sorted() == before.map(\.location.offset).sorted(),
      "the same items")
  }

  @Test(
    "items of which a sorted run comes first are merged into it in key order",
    arguments: [(0, 300), (300, 0), (10, 5_000), (4_000, 30), (3_000, 3_000)])
  func mergesIntoSortedRun(sorted: Int, rest: Int) {
    var (keys, items) = keys(sorted + rest, seed: UInt64(sorted * 7 + rest))
    var first = Array(items[..<sorted])
    SortItem.sort(&first, keys: keys)
    items.replaceSubrange(..<sorted, with: first)
    SortItem.sort(&items, sortedCount: sorted, keys: keys)
    #expect(items.count == sorted + rest)
    #expect(isSorted(items, keys: keys))
  }
}
