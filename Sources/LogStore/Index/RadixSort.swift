/// What ``radixSort(_:)`` sorts by: a number, of which only the bytes that differ between
/// items cost a pass.
protocol RadixSorted {
  var radixKey: UInt64 { get }
}

/// Sorts `items` by their ``RadixSorted/radixKey``, a byte of it at a time from the lowest (a
/// radix sort; stable, so items of equal keys keep their order). The counts of every byte are
/// taken in one pass, and the bytes that are the same in every item are skipped, so that keys
/// of a few significant bytes cost a pass each of those. For the placement of an index file's
/// slots (its keys by the group each one's probe starts at).
func radixSort<Item: RadixSorted>(_ items: inout [Item]) {
  let count = items.count
  guard count > 1 else { return }
  var counts = [Int](repeating: 0, count: 8 * 256)
  counts.withUnsafeMutableBufferPointer { counts in
    for item in items {
      let value = item.radixKey
      for byte in 0..<8 {
        counts[byte &* 256 &+ Int(truncatingIfNeeded: value >> UInt64(byte &* 8)) & 255] += 1
      }
    }
  }
  var sorted = items
  for byte in 0..<8 {
    let digits = byte * 256..<(byte + 1) * 256
    if counts[digits].contains(count) { continue }
    var start = 0
    for digit in digits {
      let digitCount = counts[digit]
      counts[digit] = start
      start += digitCount
    }
    let shift = UInt64(byte * 8)
    items.withUnsafeBufferPointer { from in
      sorted.withUnsafeMutableBufferPointer { to in
        counts.withUnsafeMutableBufferPointer { counts in
          for item in from {
            let digit = byte &* 256 &+ Int(truncatingIfNeeded: item.radixKey >> shift) & 255
            to[counts[digit]] = item
            counts[digit] &+= 1
          }
        }
      }
    }
    swap(&items, &sorted)
  }
}
