import Foundation
@_exported import LogStoreTesting

@testable import LogStore

extension String {
  var bytes: [UInt8] { Array(utf8) }
}

/// The segment files of a store, in order.
func segmentFiles(in directory: String) throws -> [String] {
  try FileManager.default.contentsOfDirectory(atPath: directory)
    .filter { $0.hasSuffix(".log") }.sorted().map { directory + "/" + $0 }
}

/// A closed segment's bytes up to the end of its last record (its last sync mark, after a
/// close), without the zeros of the space reserved past it (a segment file is never cut
/// shorter, so it keeps them).
func recordBytes(_ path: String) throws -> [UInt8] {
  let bytes = try fileBytes(path)
  let end = try bytes.withUnsafeBytes { buffer in
    let header = try SegmentHeader.decode(buffer)
    var scanner = SegmentScanner(
      bytes: buffer, owner: nil, salt: header.salt, baseSequence: header.baseSequence,
      extent: .sealedWithoutMarks)
    while scanner.next() != nil {}
    return scanner.end
  }
  return Array(bytes[..<end])
}

/// The bytes of `value`, little-endian: for building file contents field by field.
func littleEndianBytes<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
  withUnsafeBytes(of: value.littleEndian) { Array($0) }
}

/// Stores at `offset` the masked CRC-32C of `bytes[range]`, as every header of the format
/// stores its checksum: bytes changed on purpose then pass the check and reach the next one.
func storeChecksum(_ bytes: inout [UInt8], at offset: Int, of range: Range<Int>) {
  let checksum = CRC32C.mask(CRC32C.checksum(Array(bytes[range])))
  bytes.replaceSubrange(offset..<offset + 4, with: littleEndianBytes(checksum))
}

/// Copies every file of directory `source` into `destination` (created if missing).
func copyDirectory(_ source: String, to destination: String) throws {
  let manager = FileManager.default
  try? manager.removeItem(atPath: destination)
  try manager.createDirectory(atPath: destination, withIntermediateDirectories: true)
  for name in try manager.contentsOfDirectory(atPath: source) {
    try manager.copyItem(atPath: source + "/" + name, toPath: destination + "/" + name)
  }
}

extension LogStore {
  /// Every table with its keys and values, as strings, for comparing whole stores.
  func snapshot() throws -> [String: [String: String]] {
    var result: [String: [String: String]] = [:]
    for table in try tableNames() {
      var items: [String: String] = [:]
      for entry in try entries(in: table) {
        items[String(decoding: entry.key, as: UTF8.self)] = String(
          decoding: entry.value, as: UTF8.self)
      }
      result[table] = items
    }
    return result
  }
}
