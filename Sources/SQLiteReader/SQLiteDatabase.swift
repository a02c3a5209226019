/// A read-only view of an SQLite database file, as SQLite itself would read it: with its WAL
/// replayed or its hot rollback journal rolled back, in memory, without writing any file.
///
/// The caller supplies the bytes of the database and, when they exist beside it, of its
/// `-wal` and `-journal` files, each as an ``SQLiteByteSource``. Opening reads the header,
/// the WAL or journal, the freelist and `sqlite_schema`; rows are read when asked for,
/// a page at a time.
///
/// ```swift
/// let database = try SQLiteDatabase(
///   file: SQLiteBytes(fileBytes, name: "old.sqlite"),
///   wal: walBytes.map { SQLiteBytes($0, name: "old.sqlite-wal") },
///   journal: journalBytes.map { SQLiteBytes($0, name: "old.sqlite-journal") })
/// for table in database.tables where table.isReadable {
///   let cursor = try database.cursor(over: table)
///   while try cursor.next() {
///     print(cursor.rowid, try cursor.row().values)
///   }
/// }
/// ```
///
/// What a damaged, truncated or foreign file does: opening or reading throws a
/// ``SQLiteReaderError`` naming the file and page; nothing traps, loops forever, or allocates
/// more than the files' sizes justify.
///
/// A hot journal is played back whenever it is present, because a reader of bytes cannot see
/// the locks that tell SQLite whether another process is in the middle of writing: read only
/// files that no process is using.
///
/// Not thread-safe: use a database and its cursors from one thread at a time.
public final class SQLiteDatabase {
  private let pager: Pager

  /// The database header, as recovered; nil for an empty (0-byte) file, which SQLite reads as
  /// a database without tables.
  public var header: SQLiteHeader? { pager.header }
  /// How the database stores text: the header's encoding, UTF-8 for an empty file.
  public var textEncoding: SQLiteTextEncoding { pager.header?.textEncoding ?? .utf8 }
  /// The database's size in pages.
  public var pageCount: UInt32 { pager.pageCount }
  /// What was honoured beside the file: committed WAL frames, a rolled-back journal.
  public var recovery: SQLiteRecovery { pager.recovery }
  /// Every row of `sqlite_schema`, in its order.
  public let schema: [SQLiteSchemaEntry]
  /// Every table, in `sqlite_schema` order, SQLite's own (`sqlite_sequence`, `sqlite_stat1`)
  /// included; ``SQLiteTable/isReadable`` says which the reader can read.
  public let tables: [SQLiteTable]

  /// Opens the database in `file`, with the WAL and the journal that lie beside it, if any.
  ///
  /// - Parameters:
  ///   - file: The database file's bytes. An empty file is an empty database.
  ///   - wal: The `<database>-wal` file, if it exists. Its committed frames replace the
  ///     file's pages; an invalid WAL header means no frames, as in SQLite.
  ///   - journal: The `<database>-journal` file, if it exists. If it is hot, the original
  ///     pages it holds replace the file's, and the database has its size from before the
  ///     unfinished transaction.
  /// - Throws: ``SQLiteReaderError`` when a file is not an SQLite database, is damaged, or
  ///   uses something this reader does not read; or what a source throws.
  public init(
    file: any SQLiteByteSource, wal: (any SQLiteByteSource)? = nil,
    journal: (any SQLiteByteSource)? = nil
  ) throws {
    pager = try Pager(file: file, wal: wal, journal: journal)
    guard pager.pageCount > 0 else {
      schema = []
      tables = []
      return
    }
    schema = try Self.readSchema(pager)
    tables = schema.filter { $0.type == "table" }.map(SQLiteTable.init)
  }

  /// The table named `name`, compared as SQLite compares names (ASCII letters without case,
  /// an exact match first). Exact is byte for byte: `String`'s `==` would take a name that is
  /// only canonically equivalent (another table's, to SQLite) for this one.
  public func table(named name: String) -> SQLiteTable? {
    tables.first { $0.name.utf8.elementsEqual(name.utf8) }
      ?? tables.first { equalsIgnoringASCIICase($0.name, name) }
  }

  /// A cursor over the rows of `table`, in rowid order.
  ///
  /// - Throws: ``SQLiteReaderError/Code/unsupported`` when the table is not
  ///   ``SQLiteTable/isReadable``.
  public func cursor(over table: SQLiteTable) throws -> SQLiteRowCursor {
    try SQLiteRowCursor(pager: pager, table: table)
  }

  /// Every row of `table`, in rowid order. For large tables, a ``cursor(over:)`` reads
  /// without holding them all.
  public func rows(of table: SQLiteTable) throws -> [SQLiteRow] {
    let cursor = try cursor(over: table)
    var rows: [SQLiteRow] = []
    while try cursor.next() { rows.append(try cursor.row()) }
    return rows
  }

  /// `sqlite_schema`: a table b-tree rooted at page 1, of columns type, name, tbl_name,
  /// rootpage and sql.
  private static func readSchema(_ pager: Pager) throws -> [SQLiteSchemaEntry] {
    let table = SQLiteTable(
      name: "sqlite_schema", rootPage: 1,
      columnNames: ["type", "name", "tbl_name", "rootpage", "sql"])
    let cursor = try SQLiteRowCursor(pager: pager, table: table)
    var entries: [SQLiteSchemaEntry] = []
    var index = 0
    while try cursor.next() {
      let row = try cursor.row()
      func damaged(_ what: String) -> SQLiteReaderError {
        SQLiteReaderError.corrupted(pager.name, "sqlite_schema row \(index): \(what)")
      }
      guard case .text(let type) = row.values[0] else { throw damaged("its type is not text") }
      guard case .text(let name) = row.values[1] else { throw damaged("its name is not text") }
      guard case .text(let tableName) = row.values[2] else {
        throw damaged("its table name is not text")
      }
      var rootPage: UInt32 = 0
      switch row.values[3] {
      case .integer(let page) where page >= 0 && page <= Int64(UInt32.max):
        rootPage = UInt32(page)
      case .null:
        break
      default:
        throw damaged("its root page is not a page number")
      }
      var sql: String?
      switch row.values[4] {
      case .text(let text): sql = text
      case .null: break
      default: throw damaged("its sql is not text")
      }
      entries.append(
        SQLiteSchemaEntry(
          type: type, name: name, tableName: tableName, rootPage: rootPage, sql: sql,
          nameIsWellFormed: try cursor.isWellFormedText(at: 1) ?? true))
      index += 1
    }
    return entries
  }
}
