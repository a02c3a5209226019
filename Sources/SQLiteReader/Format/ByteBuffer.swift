/// A block of bytes the reader owns and reuses: pages are read into these, and payloads that
/// spill onto overflow pages are put together in one, so that walking a table allocates
/// nothing per page or per row once the buffers have grown to size.
///
/// Its memory stays at one address until ``reserve(_:)`` grows it, so a view of it
/// (``bytes``) is valid until the next `reserve` or read into it.
final class ByteBuffer {
  // Each buffer belongs to one cursor or pager, used by one thread at a time, and no access
  // to these overlaps another, so the runtime's per-access check is left out.
  @exclusivity(unchecked) private(set) var base: UnsafeMutablePointer<UInt8>
  @exclusivity(unchecked) private(set) var capacity: Int
  /// The bytes in use: the first `count` of the buffer.
  @exclusivity(unchecked) var count = 0

  init(capacity: Int) {
    self.capacity = max(capacity, 16)
    base = .allocate(capacity: self.capacity)
  }

  deinit { base.deallocate() }

  /// Makes room for `needed` bytes, keeping the first `count`.
  func reserve(_ needed: Int) {
    guard needed > capacity else { return }
    let grown = max(needed, capacity &* 2)
    let moved = UnsafeMutablePointer<UInt8>.allocate(capacity: grown)
    moved.update(from: base, count: count)
    base.deallocate()
    base = moved
    capacity = grown
  }

  /// Appends `source` (which must not be a view of this buffer).
  func append(_ source: UnsafeRawBufferPointer) {
    reserve(count + source.count)
    UnsafeMutableRawPointer(base + count).copyMemory(
      from: source.baseAddress ?? UnsafeRawPointer(base), byteCount: source.count)
    count += source.count
  }

  func append(_ byte: UInt8) {
    reserve(count + 1)
    base[count] = byte
    count += 1
  }

  /// The bytes in use.
  var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

  /// The first `count` bytes, to be filled: sets ``count``.
  func prepare(count: Int) -> UnsafeMutableRawBufferPointer {
    reserve(count)
    self.count = count
    return UnsafeMutableRawBufferPointer(start: base, count: count)
  }
}

// Big-endian integers of the file format. Callers check that the bytes are in range first;
// these only assemble them.
extension UnsafeRawBufferPointer {
  @inline(__always)
  func bigEndianUInt16(at offset: Int) -> Int {
    Int(self[offset]) << 8 | Int(self[offset + 1])
  }

  @inline(__always)
  func bigEndianUInt32(at offset: Int) -> UInt32 {
    UInt32(self[offset]) << 24 | UInt32(self[offset + 1]) << 16 | UInt32(self[offset + 2]) << 8
      | UInt32(self[offset + 3])
  }

  @inline(__always)
  func littleEndianUInt32(at offset: Int) -> UInt32 {
    UInt32(self[offset]) | UInt32(self[offset + 1]) << 8 | UInt32(self[offset + 2]) << 16
      | UInt32(self[offset + 3]) << 24
  }

  /// The `count`-byte big-endian integer at `offset` (1 to 8 bytes), sign-extended.
  @inline(__always)
  func bigEndianSignedInteger(at offset: Int, count: Int) -> Int64 {
    var value = UInt64(self[offset])
    var index = offset + 1
    while index < offset + count {
      value = value << 8 | UInt64(self[index])
      index += 1
    }
    let unused = UInt64(64 - 8 * count)
    return Int64(bitPattern: value << unused) >> unused
  }

  /// A varint of the file format at `offset`: 1 to 9 bytes, seven bits from each byte whose
  /// high bit says another follows, and all eight bits from a ninth. Nil when it runs past
  /// `end` (which must be at most `count`).
  @inline(__always)
  func varint(at offset: Int, end: Int) -> (value: UInt64, length: Int)? {
    guard offset < end else { return nil }
    let first = self[offset]
    if first < 0x80 { return (UInt64(first), 1) }
    var value = UInt64(first & 0x7f)
    var index = offset + 1
    while index < end {
      let byte = self[index]
      if index - offset == 8 { return (value << 8 | UInt64(byte), 9) }
      value = value << 7 | UInt64(byte & 0x7f)
      index += 1
      if byte < 0x80 { return (value, index - offset) }
    }
    return nil
  }
}
