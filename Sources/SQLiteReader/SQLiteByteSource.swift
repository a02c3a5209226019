/// Where the reader gets the bytes of one file: the database, its WAL or its journal.
///
/// The reader needs no system calls of its own: the caller opens the files (read-only) and
/// hands them over as sources. The reader asks only for ranges inside `0..<size`, a page or a
/// frame at a time, and never for more than it will use; it never writes. A source that
/// cannot read throws its own error, which the reader passes through unchanged.
///
/// ```swift
/// let database = try SQLiteDatabase(
///   file: SQLiteBytes(databaseBytes, name: "old.sqlite"),
///   wal: walBytes.map { SQLiteBytes($0, name: "old.sqlite-wal") })
/// ```
public protocol SQLiteByteSource {
  /// A name for messages, usually the file's path: errors about this file begin with it.
  var name: String { get }
  /// The size of the file in bytes, fixed for as long as the reader uses the source.
  var size: UInt64 { get }
  /// Fills all of `buffer` with the file's bytes from `offset` on. The reader only asks for
  /// ranges that lie inside `0..<size`.
  func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws
}

/// A file's bytes held in memory: for tests, fuzzing, and files already read whole.
public struct SQLiteBytes: SQLiteByteSource, Sendable {
  /// A name for messages.
  public let name: String
  /// The file's bytes.
  public let bytes: [UInt8]

  public init(_ bytes: [UInt8], name: String = "memory") {
    self.bytes = bytes
    self.name = name
  }

  public var size: UInt64 { UInt64(bytes.count) }

  /// Copies the bytes at `offset`; a range outside the bytes (which the reader never asks
  /// for) throws instead of trapping.
  public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws {
    guard offset <= UInt64(bytes.count), UInt64(buffer.count) <= UInt64(bytes.count) - offset
    else {
      throw SQLiteReaderError.corrupted(
        name, "a read of \(buffer.count) bytes at offset \(offset) is outside the file")
    }
    let start = Int(offset)
    bytes.withUnsafeBytes { source in
      buffer.copyMemory(
        from: UnsafeRawBufferPointer(rebasing: source[start..<start + buffer.count]))
    }
  }
}
