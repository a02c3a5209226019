#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Whether the `count` bytes at `a` and at `b` are the same (`memcmp`).
@inline(__always)
func bytesEqual(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ count: Int) -> Bool {
  memcmp(a, b, count) == 0
}

/// The order of the `count` bytes at `a` and at `b`, compared as unsigned bytes (`memcmp`):
/// negative if `a`'s come first, zero if equal, positive if `b`'s come first.
@inline(__always)
func compareBytes(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ count: Int) -> Int32 {
  memcmp(a, b, count)
}
