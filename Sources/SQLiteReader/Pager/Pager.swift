/// What the reader found beside the database file and honoured, so that it reads the last
/// committed state.
public struct SQLiteRecovery: Sendable, Equatable {
  /// Frames of the WAL that belong to committed transactions: their pages replace the file's.
  public var walCommittedFrames = 0
  /// Frames of the WAL that were ignored: those of a transaction that never committed, and
  /// those from the first invalid frame on (a torn write, or stale frames of an earlier cycle).
  public var walIgnoredFrames = 0
  /// Whether a hot rollback journal was played back (in memory: no file is changed).
  public var journalRolledBack = false
  /// Pages the hot journal put back to their content before the unfinished transaction.
  public var journalPagesRestored = 0

  public init() {}
}

/// The pages of a database as SQLite sees them once it has recovered: a page comes from the
/// WAL's latest committed frame of it, else from the hot journal's original copy, else from
/// the database file. It also knows which pages are never part of a table: the lock-byte
/// page, pointer-map pages and freelist pages.
///
/// Invariant: ``pageCount`` is the database's size in pages, and every page from 1 to it that
/// ``read(_:into:)`` returns is whole: a page the files do not hold is an error, not zeros.
final class Pager {
  /// Where each page's bytes are: the pages the WAL or the journal replace, and the file.
  private struct Sources {
    enum Location {
      case wal(UInt64)
      case journal(UInt64)
    }

    var file: any SQLiteByteSource
    var wal: (any SQLiteByteSource)?
    var journal: (any SQLiteByteSource)?
    var replaced: [UInt32: Location] = [:]
    var pageSize: Int

    func read(_ number: UInt32, pageCount: UInt32, into buffer: ByteBuffer) throws {
      guard number >= 1, number <= pageCount else {
        throw SQLiteReaderError.corrupted(
          file.name, page: number, "the page is outside the database's \(pageCount) pages")
      }
      let target = buffer.prepare(count: pageSize)
      switch replaced[number] {
      case .wal(let offset)?:
        if let wal { return try wal.read(into: target, at: offset) }
      case .journal(let offset)?:
        if let journal { return try journal.read(into: target, at: offset) }
      case nil:
        break
      }
      let offset = UInt64(number - 1) * UInt64(pageSize)
      guard offset + UInt64(pageSize) <= file.size else {
        throw SQLiteReaderError.corrupted(
          file.name, page: number, "the page is cut off by the end of the file (\(file.size) bytes)"
        )
      }
      try file.read(into: target, at: offset)
    }
  }

  private let sources: Sources
  /// The database header of page 1 as recovered; nil for an empty database.
  let header: SQLiteHeader?
  let pageSize: Int
  let usableSize: Int
  let pageCount: UInt32
  /// The largest page number the files hold, up to ``pageCount``: bounds every ``PageSet``.
  let readableLimit: UInt32
  /// The pages the database file holds whole, up to ``pageCount``. Pages above are only in
  /// the WAL or the journal, which can give them any number: ``pageSet()`` keeps those one by
  /// one, so that a set's size follows the files' sizes, not a page number read from them.
  let filePageLimit: UInt32
  /// How many pages the files hold: those up to ``filePageLimit``, and those above it that
  /// the WAL or the journal holds.
  let readablePages: UInt32
  let lockBytePage: UInt32
  let recovery: SQLiteRecovery
  private(set) var freePages = PageSet(limit: 0)

  var file: any SQLiteByteSource { sources.file }
  var name: String { sources.file.name }

  /// The page holding the bytes at offset 2^30 (SQLite's lock bytes) in a database of this
  /// page size; it is never used for content.
  static func lockBytePage(pageSize: Int) -> UInt32 { UInt32(0x4000_0000 / pageSize + 1) }

  /// Opens the database in `file` with what lies beside it, reading the header, the WAL or
  /// hot journal, and the freelist, and checking that they agree.
  init(
    file: any SQLiteByteSource, wal: (any SQLiteByteSource)?, journal: (any SQLiteByteSource)?
  ) throws {
    let name = file.name
    guard file.size > 0 else {
      // SQLite reads an empty file as an empty database, and ignores what is beside it.
      sources = Sources(file: file, pageSize: 512)
      (header, pageSize, usableSize, pageCount, readableLimit) = (nil, 512, 512, 0, 0)
      (filePageLimit, readablePages) = (0, 0)
      (lockBytePage, recovery) = (Self.lockBytePage(pageSize: 512), SQLiteRecovery())
      return
    }
    guard file.size >= UInt64(SQLiteHeader.size) else {
      throw SQLiteReaderError.notADatabase(
        name, "the file is \(file.size) bytes, shorter than the 100-byte database header")
    }
    let first = ByteBuffer(capacity: SQLiteHeader.size)
    try file.read(into: first.prepare(count: SQLiteHeader.size), at: 0)
    guard first.bytes.prefix(16).elementsEqual(SQLiteHeader.magic) else {
      throw SQLiteReaderError.notADatabase(name, "the file does not begin with \"SQLite format 3\"")
    }
    let pageSizeField = first.bytes.bigEndianUInt16(at: 16)
    let filePageSize = SQLiteHeader.pageSize(fromField: pageSizeField)

    var recovery = SQLiteRecovery()
    var replaced: [UInt32: Sources.Location] = [:]
    // The database's size in pages as the WAL's last commit or the journal gives it.
    var available: UInt64?
    var availableFrom = "the file holds"
    var pageSize = filePageSize
    if let journal, let hot = try RollbackJournal.read(journal, databasePageSize: filePageSize) {
      pageSize = hot.pageSize
      available = UInt64(hot.originalPageCount)
      availableFrom = "the journal gives its size before the transaction as"
      for (page, offset) in hot.pages { replaced[page] = .journal(offset) }
      recovery.journalRolledBack = true
      recovery.journalPagesRestored = hot.pages.count
    }
    if let wal, let log = try WriteAheadLog.read(wal) {
      if recovery.journalRolledBack, log.pageSize != pageSize {
        throw SQLiteReaderError.corrupted(
          wal.name, "the WAL's pages are \(log.pageSize) bytes, the journal's \(pageSize ?? 0)")
      }
      pageSize = log.pageSize
      if let count = log.databasePageCount {
        available = UInt64(count)
        availableFrom = "the WAL's last commit gives"
      }
      for (page, offset) in log.pages { replaced[page] = .wal(offset) }
      recovery.walCommittedFrames = log.committedFrames
      recovery.walIgnoredFrames = log.ignoredFrames
    }
    guard let pageSize else {
      throw SQLiteReaderError.notADatabase(
        name, "header: page size \(pageSizeField) is not a power of two from 512 to 65536")
    }
    sources = Sources(
      file: file, wal: wal, journal: journal, replaced: replaced, pageSize: pageSize)
    self.pageSize = pageSize
    self.recovery = recovery
    lockBytePage = Self.lockBytePage(pageSize: pageSize)
    // Without a WAL commit or a journal, the file's size gives the pages SQLite sees, the
    // last one possibly short (which `read` refuses should it be needed).
    let pagesSeen = min(
      available ?? (file.size + UInt64(pageSize) - 1) / UInt64(pageSize), 0xFFFF_FFFE)
    guard pagesSeen > 0 else {
      // A hot journal of the transaction that made the database: rolled back, it is empty.
      (header, usableSize, pageCount, readableLimit) = (nil, pageSize, 0, 0)
      (filePageLimit, readablePages) = (0, 0)
      return
    }

    // Page 1 as recovered, and the header in it.
    let page = ByteBuffer(capacity: pageSize)
    try sources.read(1, pageCount: 1, into: page)
    let header = try SQLiteHeader(page.bytes, file: name)
    guard header.pageSize == pageSize else {
      throw SQLiteReaderError.corrupted(
        name, page: 1,
        "the header gives a page size of \(header.pageSize), but the pages are \(pageSize) bytes")
    }
    var pageCount = UInt32(pagesSeen)
    if header.databaseSizeIsValid {
      guard header.databaseSizeInPages <= pageCount else {
        throw SQLiteReaderError.corrupted(
          name,
          "header: the database has \(header.databaseSizeInPages) pages, but \(availableFrom) "
            + "\(pageCount)")
      }
      pageCount = header.databaseSizeInPages
    }
    self.header = header
    usableSize = header.usableSize
    self.pageCount = pageCount
    let filePages = min(pageCount, UInt32(clamping: file.size / UInt64(pageSize)))
    let beyondFile = replaced.keys.filter { $0 > filePages && $0 <= pageCount }
    filePageLimit = filePages
    readableLimit = max(filePages, beyondFile.max() ?? 0)
    readablePages = filePages + UInt32(beyondFile.count)
    freePages = try readFreelist(header, buffer: page)
  }

  /// An empty set of pages of this database.
  func pageSet() -> PageSet {
    PageSet(limit: readableLimit, denseLimit: filePageLimit)
  }

  /// Reads page `number` (1 to ``pageCount``) into `buffer`, whole.
  func read(_ number: UInt32, into buffer: ByteBuffer) throws {
    try sources.read(number, pageCount: pageCount, into: buffer)
  }

  /// Whether `page` is a pointer-map page of an auto-vacuum database: page 2 and every
  /// (usable size / 5 + 1)th page after it, skipping the lock-byte page.
  func isPointerMapPage(_ page: UInt32) -> Bool {
    guard header?.isAutoVacuum == true, page >= 2 else { return false }
    let span = UInt64(usableSize / 5 + 1)
    var map = (UInt64(page) - 2) / span * span + 2
    if map == UInt64(lockBytePage) { map += 1 }
    return map == UInt64(page)
  }

  /// Checks that `target`, named by `what` on page `from` (nil: the schema), may hold part of
  /// a table: a page of the database that is not the lock-byte page, a pointer-map page or a
  /// free page, and not visited before in this walk; then marks it visited.
  func checkTablePage(
    _ target: UInt32, from: UInt32?, _ what: @autoclosure () -> String, visited: inout PageSet
  ) throws {
    var problem: String?
    if target == 0 || target > pageCount {
      problem = "outside the database's \(pageCount) pages"
    } else if target == lockBytePage {
      problem = "the lock-byte page"
    } else if isPointerMapPage(target) {
      problem = "a pointer-map page"
    } else if freePages.contains(target) {
      problem = "on the freelist"
    } else if !visited.insert(target) {
      problem = "reached a second time: the b-tree or an overflow chain loops"
    }
    if let problem {
      throw SQLiteReaderError.corrupted(name, page: from, "\(what()) is page \(target), \(problem)")
    }
  }

  /// The freelist's pages: trunk pages (next trunk (4), number of leaves (4), leaf page
  /// numbers (4 each)) from the header's first trunk, as many pages in all as the header
  /// counts.
  private func readFreelist(_ header: SQLiteHeader, buffer: ByteBuffer) throws -> PageSet {
    var free = pageSet()
    let expected = UInt64(header.freelistPageCount)
    var found: UInt64 = 0
    var trunk = header.firstFreelistTrunkPage
    var from: UInt32?
    while trunk != 0 {
      found += 1
      guard found <= expected else {
        throw SQLiteReaderError.corrupted(
          name, page: from, "the freelist holds more than the header's \(expected) pages")
      }
      guard trunk >= 2, trunk <= pageCount, trunk != lockBytePage, free.insert(trunk) else {
        throw SQLiteReaderError.corrupted(
          name, page: from, "freelist trunk page \(trunk) is out of range or reached twice")
      }
      try read(trunk, into: buffer)
      let bytes = buffer.bytes
      let leaves = bytes.bigEndianUInt32(at: 4)
      guard leaves <= UInt32(usableSize / 4 - 2) else {
        throw SQLiteReaderError.corrupted(
          name, page: trunk, "the freelist trunk page lists \(leaves) leaves, more than fit")
      }
      for index in 0..<Int(leaves) {
        let leaf = bytes.bigEndianUInt32(at: 8 + 4 * index)
        found += 1
        guard leaf >= 2, leaf <= pageCount, leaf != lockBytePage, free.insert(leaf) else {
          throw SQLiteReaderError.corrupted(
            name, page: trunk,
            "freelist leaf \(index), page \(leaf), is out of range or listed twice")
        }
      }
      guard found <= expected else {
        throw SQLiteReaderError.corrupted(
          name, page: trunk, "the freelist holds more than the header's \(expected) pages")
      }
      from = trunk
      trunk = bytes.bigEndianUInt32(at: 0)
    }
    guard found == expected else {
      throw SQLiteReaderError.corrupted(
        name, "header: \(expected) free pages, but the freelist holds \(found)")
    }
    return free
  }
}
