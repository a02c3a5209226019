import Foundation
@_exported import LogStoreTesting
import Testing

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

/// The last operation number a child process acknowledged on its standard output, one number
/// a line; a line cut short by a kill is not an acknowledgement.
func lastAcknowledged(_ text: String) -> Int {
  let complete =
    text.hasSuffix("\n") ? text : String(text[..<(text.lastIndex(of: "\n") ?? text.startIndex)])
  return complete.split(separator: "\n").last.flatMap { Int($0) } ?? 0
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

  /// Every table with its keys and values, by the bytes of the tables' names: unlike
  /// ``snapshot()``, whose `String` keys make canonically equivalent names one, two tables whose
  /// names differ only in their bytes stay two.
  func tablesByBytes() throws -> [[UInt8]: [[UInt8]: [UInt8]]] {
    var result: [[UInt8]: [[UInt8]: [UInt8]]] = [:]
    for table in try tableNames() {
      #expect(result[Array(table.utf8)] == nil, "table \(table) listed twice")
      var items: [[UInt8]: [UInt8]] = [:]
      for entry in try entries(in: table) { items[entry.key] = entry.value }
      result[Array(table.utf8)] = items
    }
    return result
  }
}

/// An index file's bytes, read and changed field by field (the layout is drawn in
/// `IndexFile.swift`), for tests that make files a faulty writer could leave.
struct IndexFileBytes {
  typealias F = IndexFileFormat
  var bytes: [UInt8]

  init(_ bytes: [UInt8]) { self.bytes = bytes }

  /// The little-endian number of `size` bytes at `offset`.
  func field(_ offset: Int, _ size: Int) -> Int {
    Int(truncatingIfNeeded: unsignedField(offset, size))
  }

  func unsignedField(_ offset: Int, _ size: Int) -> UInt64 {
    bytes[offset..<offset + size].enumerated().reduce(0) {
      $0 | UInt64($1.element) << (8 * $1.offset)
    }
  }

  /// Where the record of table `name` starts: the directory's references give each name's end
  /// in its names, in the records' order; the records follow the directory.
  func tableRecord(_ name: String) -> Int? {
    let tableCount = field(44, 4)
    let references = F.headerSize + F.segmentRecordSize * field(40, 4) + F.totalsSize
    let names = references + tableCount * F.tableReferenceSize
    var start = 0
    for place in 0..<tableCount {
      let end = field(references + place * F.tableReferenceSize, 4)
      if bytes[names + start..<names + end].elementsEqual(name.utf8) {
        return F.headerSize + field(48, 8) + place * F.tableRecordSize
      }
      start = end
    }
    return nil
  }

  /// Makes the checksum of the table record at `record` match its fields again.
  mutating func resealRecord(_ record: Int) {
    store(bytes.withUnsafeBytes { F.recordChecksum($0.baseAddress! + record) }, at: record + 80)
  }

  /// Where the entry of rank `rank` of the table whose record is at `record` starts.
  func entry(_ rank: Int, ofTable record: Int) -> Int {
    var entry = field(record + 16, 8)
    for _ in 0..<rank { entry += entryLength(at: entry) }
    return entry
  }

  /// The length of the entry at `entry`: its header, its key, and its expiry if it has one.
  func entryLength(at entry: Int) -> Int {
    let hasExpiry = UInt32(field(entry + 4, 4)) & F.expiryBit != 0
    return F.entryHeaderSize + field(entry + 16, 2) + (hasExpiry ? RecordLayout.expirySize : 0)
  }

  /// `key`'s hash as the file's slot groups were built with it.
  func hash(_ key: [UInt8]) -> UInt64 {
    key.withUnsafeBytes { KeyHash.hash($0, seed: unsignedField(24, 8)) }
  }

  /// Where the first slot of the group `hash`'s probe starts at is, in the table at `record`.
  func firstSlot(_ hash: UInt64, ofTable record: Int) -> Int {
    field(record + 32, 8) + F.firstGroup(hash, of: field(record + 48, 4)) * F.groupSize
  }

  /// Where the slot of `key`, whose entry is at `entry`, is in the table at `record`.
  func slot(of key: [UInt8], entry: Int, ofTable record: Int) -> Int? {
    let hash = hash(key)
    let groups = field(record + 32, 8)
    let groupCount = field(record + 48, 4)
    let reference = entry - field(record + 16, 8) + 1
    var group = F.firstGroup(hash, of: groupCount)
    for _ in 0..<groupCount {
      for slot in 0..<F.slotsPerGroup {
        let at = groups + group * F.groupSize + slot * 8
        if UInt32(field(at, 4)) == F.tag(hash) && field(at + 4, 4) == reference { return at }
      }
      group = (group + 1) % groupCount
    }
    return nil
  }

  /// Stores `value` at `offset`.
  mutating func store<T: FixedWidthInteger>(_ value: T, at offset: Int) {
    bytes.replaceSubrange(offset..<offset + MemoryLayout<T>.size, with: littleEndianBytes(value))
  }

  /// Makes the checksum of the slot group holding the byte at `offset` (of the table at
  /// `record`) match again.
  mutating func resealGroup(holding offset: Int, ofTable record: Int) {
    let groups = field(record + 32, 8)
    let group = groups + (offset - groups) / F.groupSize * F.groupSize
    store(bytes.withUnsafeBytes { F.groupChecksum($0.baseAddress! + group) }, at: group + 60)
  }
}
