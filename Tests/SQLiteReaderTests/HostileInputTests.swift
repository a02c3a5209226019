import Foundation
import LogStoreTesting
import Testing

@testable import SQLiteReader

/// Damaged, truncated and foreign files: each is read to some answer or refused with an
/// ``SQLiteReaderError`` naming the page; none traps, loops or allocates without bound.
///
/// `small.db` (committed): pages of 512 bytes. Page 1 sqlite_schema; page 2 the interior page
/// of table t (cells to leaves 5, 6, 7, right child 10); 3 table ytk; 4 ytk's index; 5-7 and
/// 10 leaves of t; 8 and 9 the overflow chain of the last row of t, on page 10.
@Suite("Damaged, truncated and foreign files")
struct HostileInputTests {
  static let pageSize = 512

  static func small() throws -> [UInt8] { try committedFixture("small.db") }

  /// The offset of byte `offset` of page `page`.
  static func at(_ page: Int, _ offset: Int) -> Int { (page - 1) * pageSize + offset }

  @Test("small.db reads as SQLite wrote it")
  func smallReads() throws {
    let rows = try readEverything(try Self.small())
    #expect(rows["t"]?.count == 31)
    let pattern: [UInt8] = Array(0...255)
    let blob = Array([[UInt8]](repeating: pattern, count: 5).joined())
    #expect(rows["t"]?.last?.values[2] == SQLiteValue.blob(blob))
    #expect(
      rows["ytk"]?.map(\.values[0]) == [
        SQLiteValue.text("key 0"), SQLiteValue.text("key 1"), SQLiteValue.text("key 2"),
      ])
  }

  @Test("an empty file is an empty database, as SQLite reads it")
  func emptyFile() throws {
    let database = try openDatabase([], wal: try Self.small(), journal: [1, 2, 3])
    #expect(database.tables.isEmpty)
    #expect(database.header == nil)
    #expect(database.pageCount == 0)
  }

  @Test("a short file, or one without SQLite's header string, is not a database")
  func notADatabase() throws {
    expectReaderError(.notADatabase, containing: "shorter than the 100-byte") {
      _ = try openDatabase(Array(repeating: 0x53, count: 99))
    }
    expectReaderError(.notADatabase, containing: "test.db: the file does not begin") {
      _ = try openDatabase(
        Array("PK\u{3}\u{4} a zip file, not a database at all".utf8)
          + Array(repeating: 0, count: 512))
    }
  }

  @Test("every truncation of a database is refused")
  func everyTruncation() throws {
    let bytes = try Self.small()
    for length in 1..<bytes.count {
      #expect(throws: SQLiteReaderError.self, "cut to \(length) bytes") {
        _ = try readEverything(Array(bytes[0..<length]))
      }
    }
  }

  @Test("every byte flipped reads to an answer or is refused; unused bytes change nothing")
  func everyByteFlipped() throws {
    let bytes = try Self.small()
    let original = try readEverything(bytes)
    let unused = Self.unusedBytes(bytes)
    // At sample depth: every page's headers and last byte, the first and last unused byte of
    // each run of them, and every seventh byte.
    let unusedEdges = unused.filter { !unused.contains($0 - 1) || !unused.contains($0 + 1) }
    let edges = pageEdges(of: bytes, pageSize: Self.pageSize).union(unusedEdges)
    let positions = TestDepth.cases(bytes.indices, every: 7, keeping: edges.contains)
    var refused = 0
    var changed = 0
    for position in positions {
      for mask: UInt8 in [0xFF, 0x01] {
        var damaged = bytes
        damaged[position] ^= mask
        do {
          let answer = try readEverything(damaged)
          if answer != original { changed += 1 }
          #expect(answer == original || !unused.contains(position), "unused byte \(position)")
          #expect(position >= 16, "the header string, byte \(position), was damaged")
        } catch let error as SQLiteReaderError {
          refused += 1
          #expect(!unused.contains(position), "unused byte \(position): \(error)")
          if position < 16 { #expect(error.code == .notADatabase) }
        }
      }
    }
    // Most damage to a small database lands in its structure or its data: some is refused,
    // some reads as different values; both happen here, each in more than one case in 20.
    let cases = positions.count * 2
    #expect(
      refused * 20 > cases && changed * 20 > cases,
      "refused \(refused), changed \(changed) of \(cases), \(TestDepth.current)")
  }

  /// Bytes of b-tree pages between the cell pointer array and the cell content area: no
  /// reader of the database looks at them.
  static func unusedBytes(_ bytes: [UInt8]) -> Set<Int> {
    var unused: Set<Int> = []
    for page in 1...(bytes.count / pageSize) {
      let header = page == 1 ? 100 : 0
      let kind = bytes[at(page, header)]
      guard [2, 5, 10, 13].contains(kind) else { continue }
      let cells = Int(bytes[at(page, header + 3)]) << 8 | Int(bytes[at(page, header + 4)])
      let content = Int(bytes[at(page, header + 5)]) << 8 | Int(bytes[at(page, header + 6)])
      let pointersEnd = header + (kind == 2 || kind == 5 ? 12 : 8) + 2 * cells
      for offset in pointersEnd..<content { unused.insert(at(page, offset)) }
    }
    return unused
  }

  @Test("a b-tree page that points to itself is refused")
  func pageThatPointsToItself() throws {
    var bytes = try Self.small()
    bytes.putBigEndian(2, at: Self.at(2, 8))  // page 2's right child: page 2
    expectReaderError(
      .corrupted, containing: "page 2: the right-most child is page 2, reached a second time"
    ) {
      _ = try readEverything(bytes)
    }
  }

  @Test("two cells that point to the same child are refused")
  func sharedChild() throws {
    var bytes = try Self.small()
    let secondCell = Int(bytes.bigEndian(at: Self.at(2, 14)) >> 16)
    bytes.putBigEndian(5, at: Self.at(2, secondCell))  // cell 1's child: page 5, cell 0's
    expectReaderError(
      .corrupted, containing: "page 2: cell 1's child is page 5, reached a second time"
    ) {
      _ = try readEverything(bytes)
    }
  }

  @Test("an overflow chain that loops, ends early or leaves the database is refused")
  func overflowChains() throws {
    let bytes = try Self.small()
    var loop = bytes
    loop.putBigEndian(8, at: Self.at(8, 0))
    expectReaderError(
      .corrupted, containing: "page 8: the next overflow page is page 8, reached a second time"
    ) {
      _ = try readEverything(loop)
    }
    var short = bytes
    short.putBigEndian(0, at: Self.at(8, 0))
    expectReaderError(.corrupted, containing: "page 8: the overflow chain ends after") {
      _ = try readEverything(short)
    }
    var outside = bytes
    outside.putBigEndian(11, at: Self.at(8, 0))
    expectReaderError(
      .corrupted,
      containing: "page 8: the next overflow page is page 11, outside the database's 10 pages"
    ) {
      _ = try readEverything(outside)
    }
    var intoTree = bytes
    intoTree.putBigEndian(5, at: Self.at(8, 0))  // a leaf of the same table, read before
    expectReaderError(.corrupted, containing: "page 5, reached a second time") {
      _ = try readEverything(intoTree)
    }
  }

  @Test("absurd page sizes and reserved bytes are refused")
  func absurdPageSizes() throws {
    let bytes = try Self.small()
    for field: UInt16 in [0, 2, 3, 256, 511, 513, 1000, 0xFFFF] {
      var damaged = bytes
      damaged[16] = UInt8(field >> 8)
      damaged[17] = UInt8(field & 0xFF)
      expectReaderError(.notADatabase, containing: "page size \(field) is not a power of two") {
        _ = try openDatabase(damaged)
      }
    }
    // Sizes SQLite writes, but not this file's.
    for (field, problem) in [
      (1, "page 1: the page is cut off by the end of the file (5120 bytes)"),
      (1024, "the database has 10 pages, but the file holds 5"),
      (32768, "page 1: the page is cut off by the end of the file (5120 bytes)"),
    ] {
      var damaged = bytes
      damaged[16] = UInt8(field >> 8)
      damaged[17] = UInt8(field & 0xFF)
      expectReaderError(.corrupted, containing: problem) { _ = try openDatabase(damaged) }
    }
    var reserved = bytes
    reserved[20] = 40
    expectReaderError(.notADatabase, containing: "leave less than 480 usable bytes") {
      _ = try openDatabase(reserved)
    }
  }

  @Test("a stale database size in the header (SQLite before 3.7.0) gives way to the file's")
  func staleDatabaseSize() throws {
    var bytes = try Self.small()
    bytes.putBigEndian(99, at: 28)
    bytes.putBigEndian(bytes.bigEndian(at: 24) &+ 1, at: 92)  // version-valid-for: stale
    let database = try openDatabase(bytes)
    #expect(database.pageCount == 10)
    #expect(try database.everyRow() == (try readEverything(try Self.small())))
  }

  @Test("a database size in the header beyond the file is refused")
  func sizeBeyondTheFile() throws {
    var bytes = try Self.small()
    bytes.putBigEndian(11, at: 28)
    expectReaderError(.corrupted, containing: "the database has 11 pages, but the file holds 10") {
      _ = try openDatabase(bytes)
    }
  }

  @Test("a payload size larger than the database is refused before it is allocated")
  func absurdPayloadSize() throws {
    var bytes = try Self.small()
    // Cell 0 of page 10 (the row with the overflow chain): a 9-byte payload size of 2^63.
    let cell = Int(bytes.bigEndian(at: Self.at(10, 8)) >> 16)
    bytes.replaceSubrange(
      Self.at(10, cell)..<Self.at(10, cell + 10),
      with: [0x81] + Array(repeating: 0x80, count: 7) + [0x00, 31])
    expectReaderError(.corrupted, containing: "is larger than the database") {
      _ = try readEverything(bytes)
    }
  }

  @Test("cells outside the page, pages of the wrong kind and rows out of order are refused")
  func damagedPages() throws {
    let bytes = try Self.small()
    var outside = bytes
    outside.putBigEndian(0xFFFF_0000, at: Self.at(5, 8))
    expectReaderError(
      .corrupted, containing: "page 5: cell 0 points outside the page (offset 65535)"
    ) {
      _ = try readEverything(outside)
    }
    var index = bytes
    index[Self.at(5, 0)] = 10
    expectReaderError(.corrupted, containing: "page 5: an index b-tree page where a table") {
      _ = try readEverything(index)
    }
    var unknown = bytes
    unknown[Self.at(5, 0)] = 7
    expectReaderError(.corrupted, containing: "page 5: page type 7 is not a b-tree page's") {
      _ = try readEverything(unknown)
    }
    var swapped = bytes
    swapped.swapAt(Self.at(5, 8), Self.at(5, 10))
    swapped.swapAt(Self.at(5, 9), Self.at(5, 11))
    expectReaderError(
      .corrupted, containing: "page 5: cell 1 has rowid 1, not above the previous row's 2"
    ) {
      _ = try readEverything(swapped)
    }
    var tooMany = bytes
    tooMany[Self.at(5, 3)] = 0x01  // 256 + 10 cells: their pointers do not fit
    expectReaderError(.corrupted, containing: "page 5: 266 cells do not fit in the page") {
      _ = try readEverything(tooMany)
    }
  }

  @Test("a b-tree deeper than 20 levels is refused")
  func deepTree() throws {
    let small = try Self.small()
    // Page 1 of small.db (table t's root is page 2), then interior pages 2...22 each with
    // only a right child, the next page, and an empty leaf, page 23.
    var bytes = Array(small[0..<Self.pageSize])
    for page in 2...22 {
      var interior = [UInt8](repeating: 0, count: Self.pageSize)
      interior[0] = 5
      interior.putBigEndian(UInt32(page + 1), at: 8)
      bytes += interior
    }
    var leaf = [UInt8](repeating: 0, count: Self.pageSize)
    leaf[0] = 13
    bytes += leaf
    bytes.putBigEndian(23, at: 28)
    let database = try openDatabase(bytes)
    let table = try #require(database.table(named: "t"))
    expectReaderError(
      .corrupted, containing: "page 22: the b-tree of table t is deeper than 20 levels"
    ) {
      _ = try database.rows(of: table)
    }
  }

  @Test("freelist and pointer-map pages are never read as a table's")
  func freeAndPointerMapPages() throws {
    var bytes = try Self.small()
    // Make page 9 (the end of the overflow chain) a freelist trunk page with no leaves.
    bytes.putBigEndian(9, at: 32)
    bytes.putBigEndian(1, at: 36)
    bytes.replaceSubrange(Self.at(9, 0)..<Self.at(9, 8), with: [0, 0, 0, 0, 0, 0, 0, 0])
    expectReaderError(
      .corrupted, containing: "page 8: the next overflow page is page 9, on the freelist"
    ) {
      _ = try readEverything(bytes)
    }
    var vacuum = try Self.small()
    vacuum.putBigEndian(4, at: 52)  // auto-vacuum: page 2 is a pointer-map page
    expectReaderError(.corrupted, containing: "the root of table t is page 2, a pointer-map page") {
      _ = try readEverything(vacuum)
    }
  }

  @Test("a freelist that loops or disagrees with the header is refused")
  func damagedFreelist() throws {
    var loop = try Self.small()
    loop.putBigEndian(9, at: 32)
    loop.putBigEndian(3, at: 36)
    loop.replaceSubrange(Self.at(9, 0)..<Self.at(9, 8), with: [0, 0, 0, 9, 0, 0, 0, 0])
    expectReaderError(
      .corrupted, containing: "freelist trunk page 9 is out of range or reached twice"
    ) {
      _ = try openDatabase(loop)
    }
    var count = try Self.small()
    count.putBigEndian(9, at: 32)
    count.putBigEndian(2, at: 36)
    count.replaceSubrange(Self.at(9, 0)..<Self.at(9, 8), with: [0, 0, 0, 0, 0, 0, 0, 0])
    expectReaderError(.corrupted, containing: "header: 2 free pages, but the freelist holds 1") {
      _ = try openDatabase(count)
    }
    var leaves = try Self.small()
    leaves.putBigEndian(9, at: 32)
    leaves.putBigEndian(2, at: 36)
    leaves.replaceSubrange(Self.at(9, 0)..<Self.at(9, 8), with: [0, 0, 0, 0, 0xFF, 0, 0, 0])
    expectReaderError(
      .corrupted, containing: "page 9: the freelist trunk page lists 4278190080 leaves"
    ) {
      _ = try openDatabase(leaves)
    }
  }

  @Test("every byte of a WAL or a hot journal flipped, every length cut: read or refused")
  func damagedSidecars() throws {
    let (original, changed, again) = try SidecarTests.databases()
    var wal = WALWriter()
    wal.frame(3, SidecarTests.page(3, of: changed), commit: 10)
    wal.frame(3, SidecarTests.page(3, of: again), commit: 0)
    var journal = JournalWriter()
    journal.header(records: 2, originalPages: 10)
    journal.record(1, SidecarTests.page(1, of: original))
    journal.record(3, SidecarTests.page(3, of: original))
    let before = "key 0,key 1,key 2"
    let after = "key 0,kez 1,key 2"
    func read(_ file: [UInt8], wal: [UInt8]? = nil, journal: [UInt8]? = nil) -> String {
      do {
        return try SidecarTests.ids(file, wal: wal, journal: journal).joined(separator: ",")
      } catch is SQLiteReaderError {
        return "refused"
      } catch {
        Issue.record("not an SQLiteReaderError: \(error)")
        return "?"
      }
    }
    // The WAL's checksums cover every byte: damage ends the WAL before the damaged frame, or
    // its header, so the file reads as it was before the commit or after it. Only another
    // format version (bytes 4-7) is refused, as SQLite refuses it.
    for position in wal.bytes.indices {
      var damaged = wal.bytes
      damaged[position] ^= 0x5A
      let outcome = read(original, wal: damaged)
      let expected = (4..<8).contains(position) ? ["refused"] : [before, after]
      #expect(expected.contains(outcome), "WAL byte \(position): \(outcome)")
    }
    for length in 0..<wal.bytes.count {
      let outcome = read(original, wal: Array(wal.bytes[0..<length]))
      #expect([before, after].contains(outcome), "WAL cut to \(length): \(outcome)")
    }
    // A journal record's checksum samples every 200th byte of the page: other damage to a
    // page image is played back as it is, in SQLite as here. Damage elsewhere reads as the
    // file before or after the rollback, or is refused; a damaged original size (bytes 16-19)
    // may cut the database anywhere.
    let sampled = Set(stride(from: SidecarTests.pageSize - 200, to: 0, by: -200))
    for position in journal.bytes.indices {
      var damaged = journal.bytes
      damaged[position] ^= 0x5A
      let outcome = read(changed, journal: damaged)
      let record = (position - 512) % (SidecarTests.pageSize + 8) - 4
      let unsampledPageByte =
        position >= 512 && record >= 0 && record < SidecarTests.pageSize
        && !sampled.contains(record)
      if !unsampledPageByte && !(16..<20).contains(position) {
        #expect(
          [before, after, "refused"].contains(outcome), "journal byte \(position): \(outcome)")
      }
    }
    for length in 0..<journal.bytes.count {
      let outcome = read(changed, journal: Array(journal.bytes[0..<length]))
      #expect([before, after, "refused"].contains(outcome), "journal cut to \(length): \(outcome)")
    }
  }
}
