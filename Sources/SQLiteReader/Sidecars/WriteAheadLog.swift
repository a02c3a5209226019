/// The committed pages of a WAL file (`<database>-wal`), found as SQLite finds them when it
/// opens a database whose WAL no process is using, without writing anything.
///
/// ```
/// header (32 bytes): magic (0x377f0682: checksums of little-endian words; 0x377f0683:
///   big-endian), format version 3007000, page size, checkpoint sequence, salt-1, salt-2,
///   checksum-1, checksum-2 (over the first 24 bytes)
/// frame: page number, database size in pages after a commit (0 if the frame is not the
///   last of a transaction), salt-1, salt-2, checksum-1, checksum-2, then the page
/// ```
/// A frame is valid when its salts are the header's and its checksum is right; the checksum
/// runs on from the previous frame's (the header's, for the first), over the frame header's
/// first 8 bytes and the page. The frames up to the last valid commit frame are the WAL's
/// content; everything from the first invalid frame on (a torn write, or stale frames of an
/// earlier cycle with other salts) and every frame after the last commit (an unfinished
/// transaction) is ignored. A later frame of a page replaces an earlier one.
struct WriteAheadLog {
  static let headerSize = 32
  static let frameHeaderSize = 24
  static let formatVersion: UInt32 = 3_007_000

  var pageSize: Int
  /// For each page with a committed frame, the offset of its latest committed page image.
  var pages: [UInt32: UInt64] = [:]
  /// The database size in pages at the last commit; nil when nothing was committed.
  var databasePageCount: UInt32?
  var committedFrames = 0
  /// Frames after the last commit, or from the first invalid one on.
  var ignoredFrames = 0

  /// Reads the WAL in `source`. Nil when it holds no usable header (too short, a wrong magic
  /// number, page size or header checksum): SQLite then ignores the file. A WAL of an
  /// unknown format version is refused, as SQLite refuses it.
  static func read(_ source: any SQLiteByteSource) throws -> WriteAheadLog? {
    guard source.size >= UInt64(headerSize) else { return nil }
    let header = ByteBuffer(capacity: headerSize)
    try source.read(into: header.prepare(count: headerSize), at: 0)
    let bytes = header.bytes
    let magic = bytes.bigEndianUInt32(at: 0)
    guard magic & 0xFFFF_FFFE == 0x377F_0682 else { return nil }
    let bigEndian = magic & 1 == 1
    let version = bytes.bigEndianUInt32(at: 4)
    guard version == formatVersion else {
      throw SQLiteReaderError.unsupported(
        source.name,
        "WAL format version \(version) is not \(formatVersion), the one SQLite 3 writes")
    }
    // Clamped so that a field past Int's range (where Int is 32 bits) fails the check below.
    let pageSize = Int(clamping: bytes.bigEndianUInt32(at: 8))
    guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0 else { return nil }
    var checksum = WALChecksum()
    checksum.add(UnsafeRawBufferPointer(rebasing: bytes[0..<24]), bigEndian: bigEndian)
    guard checksum.s0 == bytes.bigEndianUInt32(at: 24), checksum.s1 == bytes.bigEndianUInt32(at: 28)
    else { return nil }
    let salt1 = bytes.bigEndianUInt32(at: 16)
    let salt2 = bytes.bigEndianUInt32(at: 20)

    var log = WriteAheadLog(pageSize: pageSize)
    var uncommitted: [(page: UInt32, offset: UInt64)] = []
    let frameSize = UInt64(frameHeaderSize + pageSize)
    let totalFrames = (source.size - UInt64(headerSize)) / frameSize
    let frame = ByteBuffer(capacity: Int(frameSize))
    var offset = UInt64(headerSize)
    var frameIndex: UInt64 = 0
    while frameIndex < totalFrames {
      try source.read(into: frame.prepare(count: Int(frameSize)), at: offset)
      let bytes = frame.bytes
      let page = bytes.bigEndianUInt32(at: 0)
      guard page != 0, bytes.bigEndianUInt32(at: 8) == salt1, bytes.bigEndianUInt32(at: 12) == salt2
      else { break }
      var next = checksum
      next.add(UnsafeRawBufferPointer(rebasing: bytes[0..<8]), bigEndian: bigEndian)
      next.add(UnsafeRawBufferPointer(rebasing: bytes[frameHeaderSize...]), bigEndian: bigEndian)
      guard next.s0 == bytes.bigEndianUInt32(at: 16), next.s1 == bytes.bigEndianUInt32(at: 20)
      else { break }
      checksum = next
      uncommitted.append((page, offset + UInt64(frameHeaderSize)))
      let sizeAfterCommit = bytes.bigEndianUInt32(at: 4)
      if sizeAfterCommit != 0 {
        for (page, offset) in uncommitted { log.pages[page] = offset }
        log.committedFrames += uncommitted.count
        uncommitted.removeAll(keepingCapacity: true)
        log.databasePageCount = sizeAfterCommit
      }
      offset += frameSize
      frameIndex += 1
    }
    log.ignoredFrames = Int(clamping: totalFrames) - log.committedFrames
    return log
  }
}

/// The WAL's checksum: over 32-bit words taken in pairs, in the byte order the WAL's magic
/// number chooses, `s0 += x[i] + s1; s1 += x[i+1] + s0`, in wrapping arithmetic, carried on
/// from frame to frame.
struct WALChecksum {
  var s0: UInt32 = 0
  var s1: UInt32 = 0

  /// Adds `bytes`, whose count is a multiple of 8.
  mutating func add(_ bytes: UnsafeRawBufferPointer, bigEndian: Bool) {
    var offset = 0
    if bigEndian {
      while offset + 8 <= bytes.count {
        s0 = s0 &+ bytes.bigEndianUInt32(at: offset) &+ s1
        s1 = s1 &+ bytes.bigEndianUInt32(at: offset + 4) &+ s0
        offset += 8
      }
    } else {
      while offset + 8 <= bytes.count {
        s0 = s0 &+ bytes.littleEndianUInt32(at: offset) &+ s1
        s1 = s1 &+ bytes.littleEndianUInt32(at: offset + 4) &+ s0
        offset += 8
      }
    }
  }
}
