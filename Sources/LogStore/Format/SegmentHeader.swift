/// The header at the start of every segment file.
///
/// ```
/// offset size field
///  0      8   magic         "YTKKVSEG"
///  8      2   version       format version: 3 (2: before sync marks; 1: before record expiry
///                           fields; both read alike)
/// 10      2   flags         bit 0: written by compaction
/// 12      4   fileNumber    the number in the file's name (guards against mixed-up files)
/// 16      4   salt          random; seeds every record checksum in this file, so records
///                           copied from another file never verify here
/// 20      4   firstOutput   compaction only: number of the first output file; every segment
///                           numbered below it is an input this compaction replaces
/// 24      4   outputIndex   compaction only: 0-based position among the outputs
/// 28      4   outputCount   compaction only: how many outputs the compaction wrote
/// 32      8   baseSequence  the sequence number of the first record (or the next one)
/// 40      4   reserved      zero
/// 44      4   checksum      masked CRC-32C of bytes 0..<44
/// ```
/// All integers are little-endian. Records start at offset 48.
package struct SegmentHeader: Equatable, Sendable {
  package static let size = 48
  /// Where ``salt`` is stored: a header that fails its checks reports it (``DecodingError``).
  static let saltOffset = 16
  static let magic: [UInt8] = Array("YTKKVSEG".utf8)
  static let currentVersion: UInt16 = 3
  /// The oldest version read. Version 2 is version 3 without sync marks
  /// (``RecordKind/syncMark``), version 1 version 2 without expiry fields in records
  /// (``RecordLayout/expiryFlag``). A writer appends to a segment of the current version only.
  static let oldestVersion: UInt16 = 1
  /// The first version whose active segments record their syncs with sync marks.
  static let syncMarksVersion: UInt16 = 3

  var version: UInt16 = SegmentHeader.currentVersion
  var fileNumber: UInt32
  var salt: UInt32
  var baseSequence: UInt64
  /// Present for segments written by compaction.
  var compaction: CompactionMark?

  /// Which compaction wrote a segment, and where it stands among that compaction's outputs.
  struct CompactionMark: Equatable, Sendable {
    var firstOutput: UInt32
    var outputIndex: UInt32
    var outputCount: UInt32
  }

  func encoded() -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: SegmentHeader.size)
    bytes.withUnsafeMutableBytes { buffer in
      let base = buffer.baseAddress!
      base.copyMemory(from: SegmentHeader.magic, byteCount: 8)
      storeLittleEndian(version, base + 8)
      storeLittleEndian(UInt16(compaction == nil ? 0 : 1), base + 10)
      storeLittleEndian(fileNumber, base + 12)
      storeLittleEndian(salt, base + Self.saltOffset)
      storeLittleEndian(compaction?.firstOutput ?? 0, base + 20)
      storeLittleEndian(compaction?.outputIndex ?? 0, base + 24)
      storeLittleEndian(compaction?.outputCount ?? 0, base + 28)
      storeLittleEndian(baseSequence, base + 32)
      let checksum = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buffer[0..<44]))
      storeLittleEndian(CRC32C.mask(checksum), base + 44)
    }
    return bytes
  }

  /// Why bytes are not a segment header.
  package enum DecodingError: Error, Equatable {
    /// Fewer than 48 bytes, or all of them zero: a file whose creation was cut short.
    case incomplete
    /// A header from a newer version of the format.
    case unsupportedVersion(UInt16)
    /// Anything else; with the salt as stored, which a damaged header still holds (there are
    /// 48 bytes): a segment is salvaged with it, and if only other header bytes were hit, its
    /// records still verify.
    case damaged(String, storedSalt: UInt32)
  }

  package static func decode(_ bytes: UnsafeRawBufferPointer) throws(DecodingError)
    -> SegmentHeader
  {
    guard bytes.count >= size, let base = bytes.baseAddress else { throw .incomplete }
    let header = UnsafeRawBufferPointer(start: base, count: size)
    if header.allSatisfy({ $0 == 0 }) { throw .incomplete }
    func damaged(_ reason: String) -> DecodingError {
      .damaged(reason, storedSalt: loadLittleEndian(UInt32.self, base + saltOffset))
    }
    // Every version keeps a 48-byte header whose last four bytes check the rest, so a newer
    // version is recognized only by a header that checks: a damaged version byte is damage.
    let stored = CRC32C.unmask(loadLittleEndian(UInt32.self, base + 44))
    guard stored == CRC32C.checksum(UnsafeRawBufferPointer(rebasing: header[0..<44])) else {
      throw damaged("segment header checksum mismatch")
    }
    guard bytesEqual(UnsafeRawBufferPointer(rebasing: header[0..<8]), magic) else {
      throw damaged("not a segment file (bad magic)")
    }
    let version = loadLittleEndian(UInt16.self, base + 8)
    if version > currentVersion { throw .unsupportedVersion(version) }
    guard version >= oldestVersion else { throw damaged("unknown format version \(version)") }
    let flags = loadLittleEndian(UInt16.self, base + 10)
    var compaction: CompactionMark?
    if flags & 1 != 0 {
      compaction = CompactionMark(
        firstOutput: loadLittleEndian(UInt32.self, base + 20),
        outputIndex: loadLittleEndian(UInt32.self, base + 24),
        outputCount: loadLittleEndian(UInt32.self, base + 28))
    }
    let baseSequence = loadLittleEndian(UInt64.self, base + 32)
    guard baseSequence < RecordLayout.sequenceLimit else {
      throw damaged("base sequence number out of range")
    }
    return SegmentHeader(
      version: version, fileNumber: loadLittleEndian(UInt32.self, base + 12),
      salt: loadLittleEndian(UInt32.self, base + saltOffset), baseSequence: baseSequence,
      compaction: compaction)
  }
}
