/// Up to eight bytes as one word, the first in its low byte: the key hash reads a key's last
/// bytes so, and the JSON writer checks and copies short strings a word at a time and orders
/// keys by their first eight bytes.
///
/// `@usableFromInline` as well as `package`: without it, the JSON layer's calls of these
/// `@inlinable` methods stayed calls (the compiler inlines a `package` type's methods into
/// another module only when the type is usable from inline), 140 instructions a JSON put.
@usableFromInline package enum ByteWords {
  /// A mask of the first `count` bytes of a word (the first in its low byte), for a count
  /// of zero to seven.
  @inlinable @inline(__always)
  package static func firstBytes(_ count: Int) -> UInt64 {
    (UInt64(1) &<< (UInt64(truncatingIfNeeded: count) &* 8)) &- 1
  }

  /// The `count` bytes at `raw`, none to seven, as a word with the first in its low byte
  /// and zeros above the last: at most two loads, which overlap unless `count` is 1, 2 or 4.
  @inlinable @inline(__always)
  package static func loadShort(_ raw: UnsafeRawPointer, count: Int) -> UInt64 {
    if count >= 4 {
      let low = UInt32(littleEndian: raw.loadUnaligned(as: UInt32.self))
      let high = UInt32(
        littleEndian: raw.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self))
      return UInt64(low) | UInt64(high) &<< (UInt64(truncatingIfNeeded: count &- 4) &* 8)
    }
    if count >= 2 {
      let low = UInt16(littleEndian: raw.loadUnaligned(as: UInt16.self))
      let high = UInt16(
        littleEndian: raw.loadUnaligned(fromByteOffset: count &- 2, as: UInt16.self))
      return UInt64(low) | UInt64(high) &<< (UInt64(truncatingIfNeeded: count &- 2) &* 8)
    }
    return count == 1 ? UInt64(raw.load(as: UInt8.self)) : 0
  }
}
