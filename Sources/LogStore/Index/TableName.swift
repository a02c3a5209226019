/// A table's name as the store tells tables apart: by its UTF-8 bytes. Two names are one table
/// exactly when their bytes are equal, as a record holds the name (docs/FORMAT.md), as the
/// store compares keys, and as SQLite, which YTKKeyValueStore used, compared them.
///
/// `String`'s own `==`, hash and order are Unicode canonical equivalence: "é" as U+00E9 and as
/// "e" followed by U+0301, "K" and U+212A KELVIN SIGN, "Å" and U+212B ANGSTROM SIGN are equal
/// strings of different bytes. Keyed by `String`, the directory made such names one table in
/// memory while the log kept both spellings, and a compaction, which copies a record only
/// under its own name's bytes, lost the items of one. So every dictionary, set and comparison
/// of table names uses this type (or compares the bytes themselves), in the engine and in the
/// layers above it.
package struct TableName: Hashable, Sendable {
  /// The name as given: its bytes are the table's.
  package let string: String

  package init(_ string: String) { self.string = string }

  /// The name of the bytes of a record or a file. Bytes that are not UTF-8 are repaired as
  /// `String(decoding:as:)` repairs them (no record a `String` wrote holds such a name).
  package init(_ bytes: UnsafeRawBufferPointer) {
    string = String(decoding: bytes, as: UTF8.self)
  }

  @inlinable
  package static func == (a: TableName, b: TableName) -> Bool {
    a.string.hasSameUTF8(as: b.string)
  }

  @inlinable
  package func hash(into hasher: inout Hasher) {
    string.withUTF8Bytes { hasher.combine(bytes: $0) }
  }
}

extension String {
  /// Whether this string and `other` hold the same UTF-8 bytes: what makes two table names one
  /// table (``TableName``), unlike `==`, which holds for canonically equivalent strings too.
  @inlinable @inline(__always)
  package func hasSameUTF8(as other: String) -> Bool {
    hasSameRepresentation(as: other) || Self.sameUTF8(self, other)
  }

  /// Whether this string is `other` word for word: the same small string (whose bytes are in
  /// it) or the same storage, so the same bytes, found without reading them (`String`'s `==`
  /// asks this first too). False says nothing: equal strings may be stored apart. Only where a
  /// string is two words, as on every 64-bit platform; elsewhere always false.
  ///
  /// A read names its table so (a constant, or the small string of a short name, as the
  /// directory's own is), and reading both strings' bytes on every read cost a get about 140
  /// instructions (8%). The words are read in place, borrowed: no reference is counted.
  @inlinable @inline(__always)
  package func hasSameRepresentation(as other: String) -> Bool {
    typealias Words = (UInt64, UInt64)
    return MemoryLayout<String>.size == MemoryLayout<Words>.size
      && unsafeBitCast(self, to: Words.self) == unsafeBitCast(other, to: Words.self)
  }

  /// Whether `a` and `b` hold the same UTF-8 bytes, read: ``hasSameUTF8(as:)`` without its
  /// fast path, out of line.
  @usableFromInline @inline(never)
  static func sameUTF8(_ a: String, _ b: String) -> Bool {
    a.utf8.count == b.utf8.count
      && a.withUTF8Bytes { a in b.withUTF8Bytes { b in bytesEqual(a, b) } }
  }
}
