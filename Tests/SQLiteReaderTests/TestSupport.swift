import Foundation
import SQLiteReader
import Testing

/// Opens `bytes` as a database with nothing beside it.
func openDatabase(
  _ bytes: [UInt8], wal: [UInt8]? = nil, journal: [UInt8]? = nil, name: String = "test.db"
) throws -> SQLiteDatabase {
  try SQLiteDatabase(
    file: SQLiteBytes(bytes, name: name), wal: wal.map { SQLiteBytes($0, name: name + "-wal") },
    journal: journal.map { SQLiteBytes($0, name: name + "-journal") })
}

/// Opens `bytes` and reads every readable table whole.
func readEverything(
  _ bytes: [UInt8], wal: [UInt8]? = nil, journal: [UInt8]? = nil
) throws -> [String: [SQLiteRow]] {
  try openDatabase(bytes, wal: wal, journal: journal).everyRow()
}

/// The bytes of a database file (pages of `pageSize`) whose damage changes the meaning of
/// the most, kept by the samples of the damage tests: the database header, each page's b-tree
/// header (after the database header on page 1) and the first cell pointers, and each page's
/// last byte.
func pageEdges(of bytes: [UInt8], pageSize: Int) -> Set<Int> {
  var edges = Set(0..<100)
  for start in stride(from: 0, to: bytes.count, by: pageSize) {
    let header = start == 0 ? 100 : start
    edges.formUnion(header..<min(header + 16, bytes.count))
    edges.insert(min(start + pageSize, bytes.count) - 1)
  }
  return edges
}

extension Array where Element == UInt8 {
  /// Writes `value` big-endian at `offset`.
  mutating func putBigEndian(_ value: UInt32, at offset: Int) {
    for index in 0..<4 {
      self[offset + index] = UInt8(truncatingIfNeeded: value >> (24 - 8 * index))
    }
  }

  func bigEndian(at offset: Int) -> UInt32 {
    (0..<4).reduce(UInt32(0)) { $0 << 8 | UInt32(self[offset + $1]) }
  }

  /// The index of the first occurrence of `pattern`.
  func firstRange(of pattern: String) -> Range<Int>? {
    let needle = Array(pattern.utf8)
    guard count >= needle.count else { return nil }
    for start in 0...(count - needle.count)
    where self[start..<start + needle.count].elementsEqual(needle) {
      return start..<start + needle.count
    }
    return nil
  }
}

/// Expects `body` to throw an ``SQLiteReaderError`` of `code` whose description contains
/// `text`; returns it.
@discardableResult
func expectReaderError(
  _ code: SQLiteReaderError.Code, containing text: String = "",
  sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) -> SQLiteReaderError? {
  do {
    try body()
  } catch let error as SQLiteReaderError {
    if error.code != code || !error.description.contains(text) {
      Issue.record(
        "expected a \(code) error with \"\(text)\", got \(error)", sourceLocation: sourceLocation)
    }
    return error
  } catch {
    Issue.record("expected a \(code) error, got \(error)", sourceLocation: sourceLocation)
    return nil
  }
  Issue.record(
    "expected a \(code) error with \"\(text)\", got none", sourceLocation: sourceLocation)
  return nil
}
