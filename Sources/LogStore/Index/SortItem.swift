/// A key of ``StoreEngine/forEachEntry(in:withPrefix:_:)`` being sorted: where its bytes are, its first 16
/// bytes as two big-endian numbers (zero-padded), and where its record is.
///
/// Comparing the numbers orders nearly all keys without reading their bytes: when they
/// differ, the keys differ at the same place, or the shorter key ended there and is a
/// prefix of the other, which sorts first either way. Only keys whose first 16 bytes (as
/// padded) are equal are compared byte by byte.
struct SortItem {
  var prefix: (high: UInt64, low: UInt64)
  var keyStart: Int
  var keyLength: Int
  var location: RecordLocation

  init(key: UnsafeRawBufferPointer, keyStart: Int, location: RecordLocation) {
    // The first 16 bytes, zero-padded, read as two big-endian numbers.
    var padded: (UInt64, UInt64) = (0, 0)
    if let start = key.baseAddress {
      withUnsafeMutableBytes(of: &padded) {
        $0.baseAddress!.copyMemory(from: start, byteCount: min(key.count, 16))
      }
    }
    prefix = (UInt64(bigEndian: padded.0), UInt64(bigEndian: padded.1))
    self.keyStart = keyStart
    keyLength = key.count
    self.location = location
  }

  /// Sorts `items` by their keys' bytes, which are in `keys`.
  static func sort(_ items: inout [SortItem], keys: [UInt8]) {
    sort(&items[...], keys: keys)
  }

  /// Sorts `items` by their keys' bytes, which are in `keys`.
  static func sort(_ items: inout ArraySlice<SortItem>, keys: [UInt8]) {
    keys.withUnsafeBytes { buffer in
      // Nil only when every key is empty, and then no key's bytes are read.
      let base = buffer.baseAddress
      items.sort { a, b in precedes(a, b, base) }
    }
  }

  /// Whether `a`'s key sorts before `b`'s; their bytes are at `base` (nil only when every key
  /// is empty).
  @inline(__always)
  static func precedes(_ a: SortItem, _ b: SortItem, _ base: UnsafeRawPointer?) -> Bool {
    precedes(
      a, UnsafeRawBufferPointer(start: base.map { $0 + a.keyStart }, count: a.keyLength),
      b, UnsafeRawBufferPointer(start: base.map { $0 + b.keyStart }, count: b.keyLength))
  }

  /// Whether `a`'s key, `aKey`, sorts before `b`'s, `bKey`: for keys in different buffers.
  @inline(__always)
  static func precedes(
    _ a: SortItem, _ aKey: UnsafeRawBufferPointer, _ b: SortItem, _ bKey: UnsafeRawBufferPointer
  ) -> Bool {
    if a.prefix.high != b.prefix.high { return a.prefix.high < b.prefix.high }
    if a.prefix.low != b.prefix.low { return a.prefix.low < b.prefix.low }
    return bytesPrecede(aKey, bKey)
  }

  /// Sorts `items`, of which the first `sortedCount` are sorted already (a base's keys, walked
  /// in order): only the rest is sorted, and the two runs merged.
  static func sort(_ items: inout [SortItem], sortedCount: Int, keys: [UInt8]) {
    guard sortedCount < items.count else { return }
    guard sortedCount > 0 else {
      sort(&items, keys: keys)
      return
    }
    sort(&items[sortedCount...], keys: keys)
    var merged: [SortItem] = []
    merged.reserveCapacity(items.count)
    keys.withUnsafeBytes { buffer in
      let base = buffer.baseAddress
      var left = 0
      var right = sortedCount
      while left < sortedCount && right < items.count {
        if precedes(items[right], items[left], base) {
          merged.append(items[right])
          right += 1
        } else {
          merged.append(items[left])
          left += 1
        }
      }
      merged.append(contentsOf: items[left..<sortedCount])
      merged.append(contentsOf: items[right...])
    }
    items = merged
  }
}
