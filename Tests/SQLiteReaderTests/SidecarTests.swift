import SQLiteReader
import Testing

/// A WAL written the way the format describes, for tests: an independent writer of frames and
/// checksums, so that a mistake in the reader's is not made twice.
struct WALWriter {
  var bytes: [UInt8] = []
  var pageSize: Int
  var bigEndian: Bool
  var salts: (UInt32, UInt32) = (0x1234_5678, 0x9abc_def0)
  private var checksum: (UInt32, UInt32) = (0, 0)

  init(pageSize: Int = 512, bigEndian: Bool = false, version: UInt32 = 3_007_000) {
    self.pageSize = pageSize
    self.bigEndian = bigEndian
    for word in [
      bigEndian ? 0x377F_0683 : 0x377F_0682, version, UInt32(pageSize), 0, salts.0, salts.1,
    ] {
      append(word)
    }
    checksum = Self.checksum(bytes[0..<24], (0, 0), bigEndian: bigEndian)
    append(checksum.0)
    append(checksum.1)
  }

  private mutating func append(_ word: UInt32) {
    bytes += (0..<4).map { UInt8(truncatingIfNeeded: word >> (24 - 8 * $0)) }
  }

  static func checksum(
    _ data: ArraySlice<UInt8>, _ start: (UInt32, UInt32), bigEndian: Bool
  ) -> (UInt32, UInt32) {
    var (s0, s1) = start
    let data = Array(data)
    func word(_ at: Int) -> UInt32 {
      let b = data[at..<at + 4].map(UInt32.init)
      return bigEndian
        ? b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3] : b[3] << 24 | b[2] << 16 | b[1] << 8 | b[0]
    }
    for at in stride(from: 0, to: data.count, by: 8) {
      s0 = s0 &+ word(at) &+ s1
      s1 = s1 &+ word(at + 4) &+ s0
    }
    return (s0, s1)
  }

  /// Appends a frame of `page` with `content`; `commit` is the database size after a
  /// commit, 0 for a frame inside a transaction.
  mutating func frame(
    _ page: UInt32, _ content: [UInt8], commit: UInt32, salt: UInt32? = nil,
    badChecksum: Bool = false
  ) {
    let start = bytes.count
    append(page)
    append(commit)
    append(salt ?? salts.0)
    append(salts.1)
    var next = Self.checksum(bytes[start..<start + 8], checksum, bigEndian: bigEndian)
    next = Self.checksum(content[...], next, bigEndian: bigEndian)
    checksum = next
    append(next.0 ^ (badChecksum ? 1 : 0))
    append(next.1)
    bytes += content
  }
}

/// A rollback journal written the way the format describes, for tests.
struct JournalWriter {
  var bytes: [UInt8] = []
  var pageSize: Int
  var sectorSize: Int
  var nonce: UInt32 = 0x0bad_cafe

  init(pageSize: Int = 512, sectorSize: Int = 512) {
    self.pageSize = pageSize
    self.sectorSize = sectorSize
  }

  /// Starts a segment: a header padded to a sector boundary.
  mutating func header(records: UInt32, originalPages: UInt32, pageSizeField: UInt32? = nil) {
    bytes += Array(repeating: 0, count: (sectorSize - bytes.count % sectorSize) % sectorSize)
    let start = bytes.count
    bytes += [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]
    for word in [
      records, nonce, originalPages, UInt32(sectorSize), pageSizeField ?? UInt32(pageSize),
    ] {
      bytes += (0..<4).map { UInt8(truncatingIfNeeded: word >> (24 - 8 * $0)) }
    }
    bytes += Array(repeating: 0, count: sectorSize - (bytes.count - start))
  }

  /// Appends a record of page `page`'s original `content`.
  mutating func record(_ page: UInt32, _ content: [UInt8], badChecksum: Bool = false) {
    var checksum = nonce
    var at = pageSize - 200
    while at > 0 {
      checksum &+= UInt32(content[at])
      at -= 200
    }
    if badChecksum { checksum &+= 1 }
    for word in [page] { bytes += (0..<4).map { UInt8(truncatingIfNeeded: word >> (24 - 8 * $0)) } }
    bytes += content
    bytes += (0..<4).map { UInt8(truncatingIfNeeded: checksum >> (24 - 8 * $0)) }
  }
}

/// What lies beside a database: WAL frames and hot journals, built by hand around small.db,
/// whose page 3 is table ytk's only page.
@Suite("WAL files and hot journals")
struct SidecarTests {
  static let pageSize = 512

  /// small.db, and copies whose page 3 says "kez 1" or "kez 2" where small.db says "key 1".
  static func databases() throws -> (original: [UInt8], changed: [UInt8], changedAgain: [UInt8]) {
    let original = try committedFixture("small.db")
    let range = try #require(original.firstRange(of: "key 1"))
    #expect(range.lowerBound / pageSize == 2, "key 1 is on page 3")
    var changed = original
    changed[range.lowerBound + 2] = UInt8(ascii: "z")
    var again = changed
    again[range.lowerBound + 4] = UInt8(ascii: "2")
    return (original, changed, again)
  }

  static func page(_ number: Int, of bytes: [UInt8]) -> [UInt8] {
    Array(bytes[(number - 1) * pageSize..<number * pageSize])
  }

  /// The ids of table ytk as the reader reads them.
  static func ids(_ file: [UInt8], wal: [UInt8]? = nil, journal: [UInt8]? = nil) throws -> [String]
  {
    try readEverything(file, wal: wal, journal: journal)["ytk"]?.map {
      if case SQLiteValue.text(let id) = $0.values[0] { return id }
      return "?"
    } ?? []
  }

  static let original = ["key 0", "key 1", "key 2"]
  static let changed = ["key 0", "kez 1", "key 2"]

  @Test("a committed frame replaces the file's page")
  func committedFrame() throws {
    let (file, changed, _) = try Self.databases()
    for bigEndian in [false, true] {
      var wal = WALWriter(bigEndian: bigEndian)
      wal.frame(3, Self.page(3, of: changed), commit: 10)
      #expect(try Self.ids(file, wal: wal.bytes) == Self.changed)
      let database = try openDatabase(file, wal: wal.bytes)
      #expect(database.recovery.walCommittedFrames == 1)
      #expect(database.recovery.walIgnoredFrames == 0)
    }
  }

  @Test("frames after the last commit frame are ignored")
  func uncommittedFrames() throws {
    let (file, changed, again) = try Self.databases()
    var wal = WALWriter()
    wal.frame(3, Self.page(3, of: changed), commit: 0)
    #expect(try Self.ids(file, wal: wal.bytes) == Self.original)
    wal.frame(1, Self.page(1, of: file), commit: 10)
    wal.frame(3, Self.page(3, of: again), commit: 0)
    #expect(try Self.ids(file, wal: wal.bytes) == Self.changed)
    let database = try openDatabase(file, wal: wal.bytes)
    #expect(database.recovery.walCommittedFrames == 2)
    #expect(database.recovery.walIgnoredFrames == 1)
  }

  @Test("the latest committed frame of a page wins")
  func latestFrame() throws {
    let (file, changed, again) = try Self.databases()
    var wal = WALWriter()
    wal.frame(3, Self.page(3, of: changed), commit: 10)
    wal.frame(3, Self.page(3, of: again), commit: 10)
    #expect(try Self.ids(file, wal: wal.bytes) == ["key 0", "kez 2", "key 2"])
  }

  @Test("a frame with other salts or a wrong checksum ends the WAL")
  func invalidFrames() throws {
    let (file, changed, again) = try Self.databases()
    var salt = WALWriter()
    salt.frame(3, Self.page(3, of: changed), commit: 10)
    salt.frame(3, Self.page(3, of: again), commit: 10, salt: 7)
    #expect(try Self.ids(file, wal: salt.bytes) == Self.changed)
    var checksum = WALWriter()
    checksum.frame(3, Self.page(3, of: changed), commit: 10)
    checksum.frame(3, Self.page(3, of: again), commit: 10, badChecksum: true)
    checksum.frame(2, Self.page(2, of: file), commit: 10)
    #expect(try Self.ids(file, wal: checksum.bytes) == Self.changed)
    var torn = WALWriter()
    torn.frame(3, Self.page(3, of: changed), commit: 10)
    #expect(try Self.ids(file, wal: Array(torn.bytes.dropLast())) == Self.original)
  }

  @Test("a WAL without a valid header is ignored; one of another version is refused")
  func walHeaders() throws {
    let (file, changed, _) = try Self.databases()
    var wal = WALWriter()
    wal.frame(3, Self.page(3, of: changed), commit: 10)
    var badHeader = wal.bytes
    badHeader[25] ^= 1
    #expect(try Self.ids(file, wal: badHeader) == Self.original)
    #expect(try Self.ids(file, wal: Array(wal.bytes[0..<31])) == Self.original)
    #expect(try Self.ids(file, wal: []) == Self.original)
    var version = WALWriter(version: 3_007_001)
    version.frame(3, Self.page(3, of: changed), commit: 10)
    expectReaderError(.unsupported, containing: "test.db-wal: WAL format version 3007001") {
      _ = try openDatabase(file, wal: version.bytes)
    }
  }

  @Test("the last commit frame gives the database's size")
  func walSize() throws {
    let (file, _, _) = try Self.databases()
    var wal = WALWriter()
    wal.frame(2, Self.page(2, of: file), commit: 9)
    expectReaderError(.corrupted, containing: "has 10 pages, but the WAL's last commit gives 9") {
      _ = try openDatabase(file, wal: wal.bytes)
    }
    var other = WALWriter(pageSize: 1024)
    other.frame(2, Self.page(2, of: file) + Self.page(3, of: file), commit: 5)
    expectReaderError(
      .corrupted, containing: "header gives a page size of 512, but the pages are 1024"
    ) {
      _ = try openDatabase(file, wal: other.bytes)
    }
  }

  @Test("a hot journal's pages replace the file's")
  func hotJournal() throws {
    let (original, changed, _) = try Self.databases()
    var journal = JournalWriter()
    journal.header(records: 1, originalPages: 10)
    journal.record(3, Self.page(3, of: original))
    #expect(try Self.ids(changed, journal: journal.bytes) == Self.original)
    let database = try openDatabase(changed, journal: journal.bytes)
    #expect(database.recovery.journalRolledBack)
    #expect(database.recovery.journalPagesRestored == 1)
    // A record count of 0xffffffff: as many records as the file holds.
    var unsynced = JournalWriter()
    unsynced.header(records: 0xFFFF_FFFF, originalPages: 10)
    unsynced.record(3, Self.page(3, of: original))
    #expect(try Self.ids(changed, journal: unsynced.bytes) == Self.original)
  }

  @Test("a journal that is empty, zeroed or without a valid header is not hot")
  func journalsThatAreNotHot() throws {
    let (original, changed, _) = try Self.databases()
    var journal = JournalWriter()
    journal.header(records: 1, originalPages: 10)
    journal.record(3, Self.page(3, of: original))
    #expect(try Self.ids(changed, journal: []) == Self.changed)
    var zeroed = journal.bytes
    for index in 0..<28 { zeroed[index] = 0 }
    #expect(try Self.ids(changed, journal: zeroed) == Self.changed)
    var magic = journal.bytes
    magic[7] ^= 1
    #expect(try Self.ids(changed, journal: magic) == Self.changed)
    #expect(try Self.ids(changed, journal: Array(journal.bytes[0..<300])) == Self.changed)
    #expect(try openDatabase(changed, journal: zeroed).recovery.journalRolledBack == false)
  }

  @Test("playback stops at the first record that fails its checksum or is cut short")
  func journalPlaybackStops() throws {
    let (original, changed, _) = try Self.databases()
    let changedPage2 = Self.page(2, of: changed)  // the same as the original's
    var bad = JournalWriter()
    bad.header(records: 2, originalPages: 10)
    bad.record(2, changedPage2, badChecksum: true)
    bad.record(3, Self.page(3, of: original))
    #expect(try Self.ids(changed, journal: bad.bytes) == Self.changed)
    var cut = JournalWriter()
    cut.header(records: 2, originalPages: 10)
    cut.record(3, Self.page(3, of: original))
    cut.record(2, changedPage2)
    #expect(try Self.ids(changed, journal: Array(cut.bytes.dropLast())) == Self.original)
    // A segment whose record count is 0 holds no records; the next header follows it.
    var segments = JournalWriter()
    segments.header(records: 0, originalPages: 10)
    segments.nonce = 1
    segments.header(records: 1, originalPages: 10)
    segments.record(3, Self.page(3, of: original))
    #expect(try Self.ids(changed, journal: segments.bytes) == Self.original)
    // The last segment of a crashed transaction: its records were never synced, so its count
    // is still 0 and they are not played back.
    var tail = JournalWriter()
    tail.header(records: 0, originalPages: 10)
    tail.record(3, Self.page(3, of: original))
    #expect(try Self.ids(changed, journal: tail.bytes) == Self.changed)
  }

  @Test("each segment's records are checked with its own nonce")
  func segmentsHaveTheirOwnNonce() throws {
    let (original, changed, _) = try Self.databases()
    var journal = JournalWriter()
    journal.header(records: 1, originalPages: 10)
    journal.record(2, Self.page(2, of: changed))
    journal.nonce = 0x5eed
    journal.header(records: 1, originalPages: 10)
    journal.record(3, Self.page(3, of: original))
    #expect(try Self.ids(changed, journal: journal.bytes) == Self.original)
  }

  @Test("the journal's original size cuts the database; records past it are skipped")
  func journalSize() throws {
    let (original, changed, _) = try Self.databases()
    // The transaction grew the file by a page and wrote the new size in page 1.
    var grown = changed + Self.page(5, of: changed)
    grown.putBigEndian(11, at: 28)
    var journal = JournalWriter()
    journal.header(records: 3, originalPages: 10)
    journal.record(1, Self.page(1, of: original))
    journal.record(11, Self.page(3, of: changed))
    journal.record(3, Self.page(3, of: original))
    let database = try openDatabase(grown, journal: journal.bytes)
    #expect(database.pageCount == 10)
    #expect(database.recovery.journalPagesRestored == 2)
    #expect(try Self.ids(grown, journal: journal.bytes) == Self.original)
  }

  /// Seen while writing the `sqlite` fuzz target, confirmed with its harness
  /// (Fuzz/Regressions/sqlite/far-journal-page): a journal record of page 4,294,966,784 once
  /// made every walk allocate a 512 MiB set of visited pages, and let a payload claim as many
  /// bytes as that many pages hold.
  @Test("a WAL or journal page numbered far past the file costs what the files hold")
  func farPage() throws {
    let (original, changed, _) = try Self.databases()
    // Page 1 whose header size does not count (version-valid-for is not the change counter),
    // so the sidecar's size of 0xffffff00 pages stands.
    var first = Self.page(1, of: original)
    first.putBigEndian(first.bigEndian(at: 24) &+ 1, at: 92)
    let far: UInt32 = 0xFFFF_FE00
    var journal = JournalWriter()
    journal.header(records: 3, originalPages: 0xFFFF_FF00)
    journal.record(1, first)
    journal.record(far, Self.page(3, of: changed))
    journal.record(3, Self.page(3, of: original))
    var wal = WALWriter()
    wal.frame(1, first, commit: 0)
    wal.frame(far, Self.page(3, of: changed), commit: 0)
    wal.frame(3, Self.page(3, of: original), commit: 0xFFFF_FF00)
    // The row of page 10 with an overflow chain, claiming a payload of 0x7fff0000 bytes: more
    // than the 11 pages the files hold.
    var claims = changed
    let cell = Int(claims.bigEndian(at: 9 * Self.pageSize + 8) >> 16)
    let at = 9 * Self.pageSize + cell
    claims.replaceSubrange(at..<at + 6, with: [0x87, 0xFF, 0xFC, 0x80, 0x00, 31])
    for (name, sidecar) in [("journal", journal.bytes), ("WAL", wal.bytes)] {
      let isJournal = name == "journal"
      let database = try openDatabase(
        changed, wal: isJournal ? nil : sidecar, journal: isJournal ? sidecar : nil)
      #expect(database.pageCount == 0xFFFF_FF00, "\(name)")
      #expect(
        try Self.ids(changed, wal: isJournal ? nil : sidecar, journal: isJournal ? sidecar : nil)
          == Self.original, "\(name)")
      expectReaderError(.corrupted, containing: "is larger than the database") {
        _ = try readEverything(
          claims, wal: isJournal ? nil : sidecar, journal: isJournal ? sidecar : nil)
      }
    }
  }

  @Test("a journal of a multi-database transaction, or with absurd sizes, is refused")
  func refusedJournals() throws {
    let (original, changed, _) = try Self.databases()
    var journal = JournalWriter()
    journal.header(records: 1, originalPages: 10)
    journal.record(3, Self.page(3, of: original))
    // The super-journal record: lock-byte page number, name, length, checksum, magic.
    var superJournal = journal.bytes
    let name = Array("/data/app/main.db-mj1A2B3C".utf8)
    superJournal.putBigEndianAppending(UInt32(0x4000_0000 / Self.pageSize + 1))
    superJournal += name
    superJournal.putBigEndianAppending(UInt32(name.count))
    superJournal.putBigEndianAppending(name.reduce(UInt32(0)) { $0 &+ UInt32($1) })
    superJournal += [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]
    expectReaderError(.unsupported, containing: "super-journal /data/app/main.db-mj1A2B3C") {
      _ = try openDatabase(changed, journal: superJournal)
    }
    var sector = journal.bytes
    sector.putBigEndian(3, at: 20)
    expectReaderError(.corrupted, containing: "test.db-journal: journal header: sector size 3") {
      _ = try openDatabase(changed, journal: sector)
    }
    var pageSize = JournalWriter()
    pageSize.header(records: 1, originalPages: 10, pageSizeField: 1000)
    expectReaderError(.corrupted, containing: "journal header: page size 1000") {
      _ = try openDatabase(changed, journal: pageSize.bytes)
    }
  }
}

extension Array where Element == UInt8 {
  mutating func putBigEndianAppending(_ value: UInt32) {
    append(contentsOf: (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) })
  }
}
