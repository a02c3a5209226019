#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

// The package's byte comparisons, all here: equality of two byte ranges, and the order of
// keys. The JSON layer compares its keys with them too; `@inlinable`, so that they inline
// there as they do in the engine (this file is the IO layer, where `memcmp` may be called).

/// Whether `a` and `b` hold the same bytes (lengths included).
@inlinable @inline(__always)
package func bytesEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
  guard a.count == b.count else { return false }
  // An empty buffer may have no address.
  guard a.count > 0 else { return true }
  return memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0
}

/// Whether `a` holds the bytes of `b` (a format's magic number, say).
func bytesEqual(_ a: UnsafeRawBufferPointer, _ b: [UInt8]) -> Bool {
  b.withUnsafeBytes { bytesEqual(a, $0) }
}

/// Whether `a` sorts before `b` by their bytes, compared as unsigned numbers, a prefix before
/// what it is a prefix of: what "sorted by key bytes" means throughout the store.
@inlinable @inline(__always)
package func bytesPrecede(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
  let common = min(a.count, b.count)
  if common > 0 {
    let order = memcmp(a.baseAddress!, b.baseAddress!, common)
    if order != 0 { return order < 0 }
  }
  return a.count < b.count
}

/// The order of `a` and `b` by their bytes, as ``bytesPrecede(_:_:)`` orders them: negative
/// when `a` sorts first, zero when they are equal, positive when `b` does.
@inlinable @inline(__always)
package func bytesOrder(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
  let common = min(a.count, b.count)
  if common > 0 {
    let order = memcmp(a.baseAddress!, b.baseAddress!, common)
    if order != 0 { return order < 0 ? -1 : 1 }
  }
  return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
}

/// Whether `bytes` starts with `prefix` (every key starts with the empty prefix).
@inline(__always)
func bytesHavePrefix(_ bytes: UnsafeRawBufferPointer, _ prefix: UnsafeRawBufferPointer) -> Bool {
  guard bytes.count >= prefix.count else { return false }
  guard prefix.count > 0 else { return true }
  return memcmp(bytes.baseAddress!, prefix.baseAddress!, prefix.count) == 0
}
