/// The original pages a hot rollback journal (`<database>-journal`) holds, found as SQLite
/// finds them when it rolls the journal back, without writing anything.
///
/// ```
/// header, at the start of each sector-aligned segment (the rest of its sector unused):
///   0 magic d9 d5 05 f9 20 a1 63 d7   8 number of page records in the segment (4;
///   0xffffffff: as many as the file holds)   12 checksum nonce (4)
///   16 database size in pages before the transaction (4)   20 sector size (4)   24 page size (4)
/// page record: page number (4), the page's original content, checksum (4): the nonce plus
///   the bytes at offsets page size - 200, - 400, ... above 0
/// ```
/// Each header's nonce checks its own segment's records; the sizes count only in the first
/// header. A journal is hot when it is not empty and
/// its first byte is not zero (a committed journal in `PERSIST` mode has a zeroed header).
/// Playing it back restores each record's page and cuts the database to its size before the
/// transaction; playback stops at the first record that is cut short, has page number 0 or
/// the lock-byte page's, or fails its checksum. Records of pages past the original size are
/// skipped. A later record of the same page wins, as SQLite's playback writes them in order.
///
/// SQLite treats a journal as hot only when no other process holds a RESERVED lock on the
/// database, which a reader of bytes cannot see: a journal beside a database another process
/// is writing right now would be played back here. Read files no process is using.
struct RollbackJournal {
  static let magic: [UInt8] = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]
  static let headerSize = 28
  /// The largest super-journal name SQLite's file systems write: a path.
  static let maximumSuperJournalName: UInt32 = 4096

  var pageSize: Int
  /// The database size in pages before the transaction.
  var originalPageCount: UInt32
  /// For each page to restore, the offset of its original content in the journal.
  var pages: [UInt32: UInt64] = [:]

  /// Reads the journal in `source`. Nil when it is not hot or holds no valid first header
  /// (SQLite then plays nothing back). `databasePageSize` stands in for a page size of 0 in
  /// the header, as in journals of old versions.
  static func read(_ source: any SQLiteByteSource, databasePageSize: Int?) throws
    -> RollbackJournal?
  {
    let size = source.size
    guard size >= UInt64(headerSize) else { return nil }
    let header = ByteBuffer(capacity: headerSize)
    try source.read(into: header.prepare(count: headerSize), at: 0)
    guard header.bytes[0] != 0, header.bytes.prefix(8).elementsEqual(magic) else { return nil }
    // Clamped so that a field past Int's range (where Int is 32 bits) fails the checks below.
    let sectorSize = Int(clamping: header.bytes.bigEndianUInt32(at: 20))
    var pageSize = Int(clamping: header.bytes.bigEndianUInt32(at: 24))
    if pageSize == 0, let databasePageSize { pageSize = databasePageSize }
    guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0 else {
      throw SQLiteReaderError.corrupted(
        source.name, "journal header: page size \(pageSize) is not a power of two from 512 to 65536"
      )
    }
    guard sectorSize >= 32, sectorSize <= 65536, sectorSize & (sectorSize - 1) == 0 else {
      throw SQLiteReaderError.corrupted(
        source.name,
        "journal header: sector size \(sectorSize) is not a power of two from 32 to 65536")
    }
    // SQLite reads a header only when its whole sector is in the file.
    guard UInt64(sectorSize) <= size else { return nil }
    if let name = try superJournalName(source) {
      throw SQLiteReaderError.unsupported(
        source.name,
        "the journal belongs to a transaction over several databases (super-journal \(name)); "
          + "whether it committed depends on that file")
    }
    var journal = RollbackJournal(
      pageSize: pageSize, originalPageCount: header.bytes.bigEndianUInt32(at: 16))
    let lockBytePage = Pager.lockBytePage(pageSize: pageSize)
    let recordSize = UInt64(pageSize + 8)
    let record = ByteBuffer(capacity: pageSize + 8)
    var segment: UInt64 = 0
    playback: while segment + UInt64(sectorSize) <= size {
      try source.read(into: header.prepare(count: headerSize), at: segment)
      guard header.bytes.prefix(8).elementsEqual(magic) else { break }
      let nonce = header.bytes.bigEndianUInt32(at: 12)
      let first = segment + UInt64(sectorSize)
      var count = UInt64(header.bytes.bigEndianUInt32(at: 8))
      if count == 0xFFFF_FFFF { count = (size - first) / recordSize }
      var index: UInt64 = 0
      while index < count {
        let offset = first + index * recordSize
        guard offset + recordSize <= size else { break playback }
        try source.read(into: record.prepare(count: pageSize + 8), at: offset)
        let bytes = record.bytes
        let page = bytes.bigEndianUInt32(at: 0)
        guard page != 0, page != lockBytePage else { break playback }
        var checksum = nonce
        var position = pageSize - 200
        while position > 0 {
          checksum = checksum &+ UInt32(bytes[4 + position])
          position -= 200
        }
        guard checksum == bytes.bigEndianUInt32(at: 4 + pageSize) else { break playback }
        if page <= journal.originalPageCount { journal.pages[page] = offset + 4 }
        index += 1
      }
      // The next segment's header starts at the next sector boundary after the records.
      let end = first + count * recordSize
      segment = (end + UInt64(sectorSize) - 1) / UInt64(sectorSize) * UInt64(sectorSize)
    }
    return journal
  }

  /// The name of the super-journal recorded at the journal's end, if there is one:
  /// `[lock-byte page number] name, name length (4), name checksum (4), magic (8)`.
  private static func superJournalName(_ source: any SQLiteByteSource) throws -> String? {
    let size = source.size
    guard size >= 16 else { return nil }
    let tail = ByteBuffer(capacity: 16)
    try source.read(into: tail.prepare(count: 16), at: size - 16)
    let length = tail.bytes.bigEndianUInt32(at: 0)
    guard length > 0, length < maximumSuperJournalName, UInt64(length) <= size - 16,
      tail.bytes[8...].elementsEqual(magic)
    else { return nil }
    let name = ByteBuffer(capacity: Int(length))
    try source.read(into: name.prepare(count: Int(length)), at: size - 16 - UInt64(length))
    var sum: UInt32 = 0
    for byte in name.bytes { sum = sum &+ UInt32(byte) }
    guard sum == tail.bytes.bigEndianUInt32(at: 4), name.bytes[0] != 0 else { return nil }
    let text = name.bytes.prefix { $0 != 0 }
    return String(decoding: text, as: UTF8.self)
  }
}
