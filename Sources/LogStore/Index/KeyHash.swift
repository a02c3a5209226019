/// The hash of keys in the index: a multiply-and-fold mix over 8-byte words, with a seed
/// chosen at random so that keys chosen by an attacker cannot be made to collide on purpose.
/// The in-memory index uses a seed chosen per process; an index file stores the seed its
/// tables were built with (docs/FORMAT.md), so the function itself must never change.
enum KeyHash {
  static let seed: UInt64 = UInt64.random(in: .min ... .max)

  @inline(__always)
  private static func fold(_ a: UInt64, _ b: UInt64) -> UInt64 {
    let product = a.multipliedFullWidth(by: b)
    return product.high ^ product.low
  }

  @inline(__always)
  static func hash(_ key: UnsafeRawBufferPointer) -> UInt64 { hash(key, seed: seed) }

  @inline(__always)
  static func hash(_ key: UnsafeRawBufferPointer, seed: UInt64) -> UInt64 {
    let count = key.count
    var h = seed ^ (UInt64(truncatingIfNeeded: count) &* 0x9E37_79B9_7F4A_7C15)
    var tail: UInt64 = 0
    // A buffer without an address has no bytes: it hashes as every other empty key does, with
    // no words and an empty tail.
    if var p = key.baseAddress {
      var remaining = count
      while remaining >= 16 {
        let a = p.loadUnaligned(as: UInt64.self)
        let b = (p + 8).loadUnaligned(as: UInt64.self)
        h = fold(a ^ 0xA076_1D64_78BD_642F, b ^ h)
        p += 16
        remaining -= 16
      }
      if remaining >= 8 {
        h = fold(
          p.loadUnaligned(as: UInt64.self) ^ 0xE703_7ED1_A0B4_28DB, h ^ 0x8EBC_6AF0_9C88_C6E3)
        p += 8
        remaining -= 8
      }
      tail = ByteWords.loadShort(p, count: remaining)
    }
    h = fold(tail ^ 0x5899_65CC_7537_4CC3, h ^ 0x1D8E_4E27_C47D_124F)
    return fold(h, 0xA076_1D64_78BD_642F)
  }
}
