/// Strings of up to 15 bytes of UTF-8, made and read in the form a `String` holds them in.
///
/// On 64-bit platforms a `String` of up to 15 bytes of UTF-8 keeps them within its own 16
/// bytes: in order from the low byte of its first word, zeros after them, and in its last
/// byte the count under the flags `0xE0` (all ASCII) or `0xA0` (not). Every key of a stored
/// object and most of its string values are that short, and a reader makes one for each.
/// The standard library's ways of making one (`String(decoding:as:)`,
/// `String(unsafeUninitializedCapacity:initializingUTF8With:)`) take 100 to 250 instructions,
/// through a closure and a validation or a copy; making one here takes a few, and so does
/// reading one's bytes for the writer.
///
/// That form is fixed by the Swift ABI: the compiler writes every string literal of up to 15
/// bytes into the binary in it, so a standard library that read it differently would break
/// every app already built, and the standard library on Apple platforms ships with the OS. The
/// Linux toolchain uses the same form. Elsewhere (32-bit platforms, whose `String` is 12
/// bytes, and big-endian ones) ``isAvailable`` is false, and callers use the standard
/// library's ways. `InlineStringTests` checks the form against literals and against strings the
/// standard library makes.
enum InlineString {
  #if (arch(x86_64) || arch(arm64)) && _endian(little)
    static let isAvailable = true
  #else
    static let isAvailable = false
  #endif

  /// The flags of an in-line string in its top byte: its bytes are in line (`0x20`), it is
  /// never freed (`0x80`), and it is all ASCII (`0x40`).
  private static let inLineFlag: UInt64 = 0x20 << 56
  private static let asciiFlags: UInt64 = 0xE0 << 56
  private static let otherFlags: UInt64 = 0xA0 << 56

  /// The string whose `count` bytes (at most 15, valid UTF-8) are `low` then `high`, each
  /// with its first byte lowest, with zeros above the last.
  ///
  /// Only where ``isAvailable``.
  @inline(__always)
  static func make(low: UInt64, high: UInt64, count: Int) -> String {
    #if (arch(x86_64) || arch(arm64)) && _endian(little)
      let isASCII = (low | high) & 0x8080_8080_8080_8080 == 0
      let flags = isASCII ? asciiFlags : otherFlags
      let top = flags | UInt64(truncatingIfNeeded: count) << 56
      var form = (low.littleEndian, (high | top).littleEndian)
      // Moved out rather than cast: a cast copies, and a copied `String` is retained, which
      // for an in-line one is a call that finds nothing to count.
      return withUnsafeMutablePointer(to: &form) { words in
        words.withMemoryRebound(to: String.self, capacity: 1) { $0.move() }
      }
    #else
      preconditionFailure("in-line strings are made only where InlineString.isAvailable")
    #endif
  }

  /// The string of the `count` bytes at `source`, at most 15 and valid UTF-8, reading none
  /// outside them.
  ///
  /// Only where ``isAvailable``.
  @inline(__always)
  static func make(_ source: UnsafePointer<UInt8>, count: Int) -> String {
    let raw = UnsafeRawPointer(source)
    if count > 8 {
      // The last eight bytes, less those the first word holds.
      let last = UInt64(
        littleEndian: raw.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self))
      return make(
        low: UInt64(littleEndian: raw.loadUnaligned(as: UInt64.self)),
        high: last &>> (UInt64(truncatingIfNeeded: 16 &- count) &* 8), count: count)
    }
    if count == 8 {
      return make(
        low: UInt64(littleEndian: raw.loadUnaligned(as: UInt64.self)), high: 0, count: 8)
    }
    return make(low: loadShort(source, count: count), high: 0, count: count)
  }

  /// The string of `utf8`, which must be valid UTF-8 (the scanner has checked it): made in line
  /// when it is short enough and ``isAvailable``; otherwise made by the standard library, which
  /// checks it again.
  @inline(__always)
  static func string(validUTF8 utf8: UnsafeBufferPointer<UInt8>) -> String {
    if isAvailable, utf8.count <= 15 {
      guard let source = utf8.baseAddress else { return "" }
      return make(source, count: utf8.count)
    }
    return String(decoding: utf8, as: UTF8.self)
  }

  /// The bytes of `string` when it holds them in line: its first eight (or fewer) in `low`,
  /// the rest in `high`, zeros above the last; nil for a longer string, or where
  /// ``isAvailable`` is false.
  @inline(__always)
  static func bytes(of string: String) -> (low: UInt64, high: UInt64, count: Int)? {
    #if (arch(x86_64) || arch(arm64)) && _endian(little)
      let (first, second) = unsafeBitCast(string, to: (UInt64, UInt64).self)
      let high = UInt64(littleEndian: second)
      guard high & inLineFlag != 0 else { return nil }
      return (
        UInt64(littleEndian: first), high & 0x00FF_FFFF_FFFF_FFFF,
        Int(truncatingIfNeeded: (high &>> 56) & 0x0F)
      )
    #else
      return nil
    #endif
  }

  /// A mask of the first `count` bytes of a word (the first in its low byte); all eight from
  /// eight on.
  @inline(__always)
  static func firstBytes(_ count: Int) -> UInt64 {
    count >= 8 ? UInt64.max : (UInt64(1) &<< (UInt64(truncatingIfNeeded: count) &* 8)) &- 1
  }

  /// The `count` bytes at `source`, none to seven, as a word with the first in its low byte
  /// and zeros above the last: at most two loads, which overlap unless `count` is 1, 2 or 4.
  @inline(__always)
  static func loadShort(_ source: UnsafePointer<UInt8>, count: Int) -> UInt64 {
    let raw = UnsafeRawPointer(source)
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
    return count == 1 ? UInt64(source[0]) : 0
  }
}
