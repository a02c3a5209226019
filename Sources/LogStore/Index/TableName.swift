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

  /// Whether a record whose table name is `recordBytes` belongs to the table named `name`
  /// (its bytes): the same bytes, or bytes that are not UTF-8 and whose repair
  /// (``init(_:)-(UnsafeRawBufferPointer)``) is the name, as a replay reads such a record.
  /// Compaction and `verify` compare so, lest a table a replay read be dropped or called damage.
  package static func names(
    _ name: UnsafeRawBufferPointer, recordBytes: UnsafeRawBufferPointer
  ) -> Bool {
    bytesEqual(name, recordBytes)
      || (recordBytes.contains { $0 >= 0x80 }
        && TableName(recordBytes).string.withUTF8Bytes { bytesEqual($0, name) })
  }

  package static func == (a: TableName, b: TableName) -> Bool {
    a.string.hasSameUTF8(as: b.string)
  }

  package func hash(into hasher: inout Hasher) {
    string.withUTF8Bytes { hasher.combine(bytes: $0) }
  }
}

extension String {
  /// Whether this string and `other` hold the same UTF-8 bytes: what makes two table names one
  /// table (``TableName``), unlike `==`, which holds for canonically equivalent strings too.
  package func hasSameUTF8(as other: String) -> Bool {
    utf8.count == other.utf8.count
      && withUTF8Bytes { a in other.withUTF8Bytes { b in bytesEqual(a, b) } }
  }
}
