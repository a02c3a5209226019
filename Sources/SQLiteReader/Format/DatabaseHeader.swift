/// How a database stores text. Fixed when the database is made (`PRAGMA encoding`).
public enum SQLiteTextEncoding: Sendable, Equatable, CustomStringConvertible {
  case utf8
  case utf16LittleEndian
  case utf16BigEndian

  /// The encoding as `PRAGMA encoding` names it: `UTF-8`, `UTF-16le` or `UTF-16be`.
  public var description: String {
    switch self {
    case .utf8: "UTF-8"
    case .utf16LittleEndian: "UTF-16le"
    case .utf16BigEndian: "UTF-16be"
    }
  }
}

/// The first 100 bytes of a database file, which describe the rest of it.
///
/// ```
/// offset size field
///      0   16 "SQLite format 3\0"
///     16    2 page size: a power of two from 512 to 32768, or 1 meaning 65536
///     18    1 write version, 19 1 read version: 1 rollback journal, 2 WAL
///     20    1 bytes reserved at the end of each page
///     21    3 payload fractions: 64, 32, 32
///     24    4 file change counter
///     28    4 database size in pages (valid when non-zero and the counter equals offset 92)
///     32    4 first freelist trunk page      36 4 number of freelist pages
///     40    4 schema cookie                  44 4 schema format (1 to 4)
///     48    4 suggested cache size           52 4 largest root page (non-zero: auto-vacuum)
///     56    4 text encoding: 1 UTF-8, 2 UTF-16le, 3 UTF-16be
///     60    4 user version                   64 4 incremental vacuum (non-zero: on)
///     68    4 application id                 72 20 zero
///     92    4 version-valid-for              96 4 SQLite version that wrote the file
/// ```
/// All integers are big-endian.
public struct SQLiteHeader: Sendable, Equatable {
  /// The size of the header, at the start of page 1.
  public static let size = 100
  static let magic: [UInt8] = Array("SQLite format 3\0".utf8)

  /// Bytes per page, 512 to 65536.
  public var pageSize: Int
  /// 1 for a rollback journal, 2 for WAL.
  public var writeVersion: UInt8
  /// 1 for a rollback journal, 2 for WAL; a file with more is refused.
  public var readVersion: UInt8
  /// Bytes at the end of each page that hold no content (extensions use them).
  public var reservedBytesPerPage: Int
  public var fileChangeCounter: UInt32
  /// The database size in pages as stored; ``databaseSizeIsValid`` says whether it counts.
  public var databaseSizeInPages: UInt32
  public var firstFreelistTrunkPage: UInt32
  public var freelistPageCount: UInt32
  public var schemaCookie: UInt32
  /// 1 to 4; 0 in a database that has never had a schema.
  public var schemaFormat: UInt32
  /// The largest root page number in an auto-vacuum database, zero otherwise.
  public var largestRootPage: UInt32
  public var textEncoding: SQLiteTextEncoding
  public var userVersion: UInt32
  public var isIncrementalVacuum: Bool
  public var applicationID: UInt32
  public var versionValidFor: UInt32
  /// The `SQLITE_VERSION_NUMBER` of the SQLite that last wrote the file.
  public var sqliteVersionNumber: UInt32

  /// Bytes of each page that hold content: the page size less the reserved bytes.
  public var usableSize: Int { pageSize - reservedBytesPerPage }
  /// Whether the database has pointer-map pages (auto-vacuum, full or incremental).
  public var isAutoVacuum: Bool { largestRootPage != 0 }
  /// Whether ``databaseSizeInPages`` is the database's size. Files written by SQLite before
  /// 3.7.0 leave it stale; then the file's size gives the size instead.
  public var databaseSizeIsValid: Bool {
    databaseSizeInPages != 0 && fileChangeCounter == versionValidFor
  }

  /// The page size stored at offset 16, or nil if it is none SQLite writes.
  static func pageSize(fromField field: Int) -> Int? {
    if field == 1 { return 65536 }
    guard field >= 512, field <= 32768, field & (field - 1) == 0 else { return nil }
    return field
  }

  /// Reads and checks the header in the first 100 bytes of `bytes`, as SQLite does before it
  /// trusts a file: errors name `file`.
  init(_ bytes: UnsafeRawBufferPointer, file: String) throws {
    guard bytes.count >= Self.size, bytes.prefix(16).elementsEqual(Self.magic) else {
      throw SQLiteReaderError.notADatabase(file, "the file does not begin with \"SQLite format 3\"")
    }
    let pageSizeField = bytes.bigEndianUInt16(at: 16)
    guard let pageSize = Self.pageSize(fromField: pageSizeField) else {
      throw SQLiteReaderError.notADatabase(
        file, "header: page size \(pageSizeField) is not a power of two from 512 to 65536")
    }
    self.pageSize = pageSize
    writeVersion = bytes[18]
    readVersion = bytes[19]
    guard readVersion <= 2 else {
      throw SQLiteReaderError.notADatabase(
        file, "header: read version \(readVersion) is newer than any this reader knows (1, 2)")
    }
    reservedBytesPerPage = Int(bytes[20])
    guard pageSize - reservedBytesPerPage >= 480 else {
      throw SQLiteReaderError.notADatabase(
        file,
        "header: \(reservedBytesPerPage) reserved bytes leave less than 480 usable bytes of a "
          + "\(pageSize)-byte page")
    }
    guard bytes[21] == 64, bytes[22] == 32, bytes[23] == 32 else {
      throw SQLiteReaderError.notADatabase(
        file,
        "header: payload fractions \(bytes[21]), \(bytes[22]), \(bytes[23]) are not 64, 32, 32")
    }
    fileChangeCounter = bytes.bigEndianUInt32(at: 24)
    databaseSizeInPages = bytes.bigEndianUInt32(at: 28)
    firstFreelistTrunkPage = bytes.bigEndianUInt32(at: 32)
    freelistPageCount = bytes.bigEndianUInt32(at: 36)
    schemaCookie = bytes.bigEndianUInt32(at: 40)
    schemaFormat = bytes.bigEndianUInt32(at: 44)
    // SQLite looks at the low byte only.
    guard schemaFormat & 0xFF <= 4 else {
      throw SQLiteReaderError.unsupported(
        file, "header: schema format \(schemaFormat) is newer than any this reader knows (1-4)")
    }
    largestRootPage = bytes.bigEndianUInt32(at: 52)
    switch bytes.bigEndianUInt32(at: 56) {
    // 0: a database that has never had a schema, which SQLite reads as UTF-8.
    case 0, 1: textEncoding = .utf8
    case 2: textEncoding = .utf16LittleEndian
    case 3: textEncoding = .utf16BigEndian
    case let other:
      throw SQLiteReaderError.corrupted(
        file, "header: text encoding \(other) is none of 1 (UTF-8), 2 (UTF-16le), 3 (UTF-16be)")
    }
    userVersion = bytes.bigEndianUInt32(at: 60)
    isIncrementalVacuum = bytes.bigEndianUInt32(at: 64) != 0
    applicationID = bytes.bigEndianUInt32(at: 68)
    versionValidFor = bytes.bigEndianUInt32(at: 92)
    sqliteVersionNumber = bytes.bigEndianUInt32(at: 96)
  }
}
