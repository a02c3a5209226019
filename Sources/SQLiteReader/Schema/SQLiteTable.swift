/// One row of `sqlite_schema` (also called `sqlite_master`): a table, index, view or trigger.
public struct SQLiteSchemaEntry: Sendable, Hashable {
  /// `"table"`, `"index"`, `"view"` or `"trigger"`.
  public var type: String
  public var name: String
  /// The table an index or trigger belongs to; a table's own name for a table.
  public var tableName: String
  /// The root page of a table's or index's b-tree; 0 for views, triggers and virtual tables.
  public var rootPage: UInt32
  /// The statement that made the object; nil for indexes SQLite makes itself (for a
  /// `PRIMARY KEY` or `UNIQUE` constraint).
  public var sql: String?
  /// Whether ``name`` is well-formed text in the database's encoding. When it is not, its
  /// ill-formed sequences read as U+FFFD, and another object's name can read the same.
  public var nameIsWellFormed = true
}

/// How a column converts values, from its declared type (SQLite's "type affinity"). The
/// reader needs it for two things SQLite does when it reads: a REAL column returns integers
/// as reals, and a column's default is converted to its affinity.
public enum SQLiteAffinity: Sendable, Hashable {
  case text
  case numeric
  case integer
  case real
  /// No conversion: a column declared `BLOB` or without a type.
  case blob

  /// SQLite's rules, in order: a type containing "INT" is INTEGER; "CHAR", "CLOB" or "TEXT"
  /// TEXT; "BLOB" or no type BLOB; "REAL", "FLOA" or "DOUB" REAL; anything else NUMERIC.
  init(declaredType: String) {
    let type = declaredType.utf8.map(asciiUppercase)
    func contains(_ word: StaticString) -> Bool {
      let needle = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
      guard type.count >= needle.count else { return false }
      return (0...type.count - needle.count).contains { start in
        type[start..<start + needle.count].elementsEqual(needle)
      }
    }
    if contains("INT") {
      self = .integer
    } else if contains("CHAR") || contains("CLOB") || contains("TEXT") {
      self = .text
    } else if contains("BLOB") || type.isEmpty {
      self = .blob
    } else if contains("REAL") || contains("FLOA") || contains("DOUB") {
      self = .real
    } else {
      self = .numeric
    }
  }
}

/// A column of a table, from its `CREATE TABLE` statement.
public struct SQLiteColumn: Sendable, Hashable {
  public var name: String
  /// The declared type as written (`"TEXT"`, `"VARCHAR(10)"`), empty when there is none.
  public var declaredType: String
  public var affinity: SQLiteAffinity
  /// Whether the column is the table's `INTEGER PRIMARY KEY`: another name for the rowid,
  /// whose value is the row's rowid (the record keeps NULL in its place).
  public var isRowidAlias: Bool
  /// What the column reads in a row written before it was added (`ALTER TABLE ADD COLUMN`).
  var defaultValue: ColumnDefault
}

/// A column's value in rows that have no field for it.
enum ColumnDefault: Sendable, Hashable {
  case value(SQLiteValue)
  /// A default the reader does not evaluate (an expression, or a literal whose conversion
  /// to the column's affinity it does not do): its SQL.
  case unsupported(String)
}

/// A table of the database, as `sqlite_schema` describes it.
///
/// Every entry of type `table` is one, SQLite's own included (`sqlite_sequence`,
/// `sqlite_stat1`); ``unsupportedReason`` says when the reader cannot read its rows.
public struct SQLiteTable: Sendable, Hashable {
  public var name: String
  /// Whether ``name`` is well-formed text in the database's encoding
  /// (``SQLiteSchemaEntry/nameIsWellFormed``): when it is not, it reads with U+FFFD, and
  /// another table's name can read the same.
  public var nameIsWellFormed = true
  /// The root page of the table's b-tree.
  public var rootPage: UInt32
  /// The `CREATE TABLE` statement, as stored.
  public var sql: String
  /// The columns in order: the values of each ``SQLiteRow``. Empty when the statement
  /// could not be read (see ``unsupportedReason``).
  public var columns: [SQLiteColumn]
  /// Why the reader cannot read this table's rows, or nil when it can: a `WITHOUT ROWID`
  /// table (stored as an index b-tree), a virtual table (its rows come from a module), a
  /// `VIRTUAL` generated column (computed when read, not stored), or a statement the reader
  /// could not parse.
  public var unsupportedReason: String?

  /// Whether the reader can read the table's rows.
  public var isReadable: Bool { unsupportedReason == nil }

  /// The index of the column named `name`, compared as SQLite compares names (ASCII letters
  /// without case); nil if there is none.
  public func columnIndex(named name: String) -> Int? {
    columns.firstIndex { $0.name == name }
      ?? columns.firstIndex {
        equalsIgnoringASCIICase($0.name, name)
      }
  }

  /// The table described by `entry`, whose type is `table`.
  init(_ entry: SQLiteSchemaEntry) {
    name = entry.name
    nameIsWellFormed = entry.nameIsWellFormed
    rootPage = entry.rootPage
    sql = entry.sql ?? ""
    columns = []
    let definition: TableDefinition
    do {
      definition = try CreateTableParser.parse(sql)
    } catch let failure as CreateTableParser.Failure {
      unsupportedReason = "its CREATE TABLE statement could not be read: \(failure.reason)"
      return
    } catch {
      unsupportedReason = "its CREATE TABLE statement could not be read"
      return
    }
    if definition.isVirtual {
      unsupportedReason = "a virtual table: its rows come from a module, not from the file"
      return
    }
    if definition.isWithoutRowid {
      unsupportedReason =
        "a WITHOUT ROWID table, stored as an index b-tree, which this reader "
        + "does not read"
      return
    }
    // The rowid alias: a single-column primary key of type INTEGER, except a column
    // constraint `PRIMARY KEY DESC` (a quirk SQLite keeps for compatibility).
    var alias: Int?
    if let index = definition.columns.firstIndex(where: { $0.isPrimaryKey }) {
      let column = definition.columns[index]
      if column.isIntegerType, !column.isPrimaryKeyDescending { alias = index }
    } else if definition.tablePrimaryKey.count == 1,
      let index = definition.columns.firstIndex(where: {
        equalsIgnoringASCIICase($0.name, definition.tablePrimaryKey[0])
      }),
      definition.columns[index].isIntegerType
    {
      alias = index
    }
    for (index, column) in definition.columns.enumerated() {
      if column.generated == .virtual {
        unsupportedReason =
          "column \(column.name) is a VIRTUAL generated column, computed when "
          + "read and not stored"
      }
      let affinity = SQLiteAffinity(declaredType: column.declaredType)
      columns.append(
        SQLiteColumn(
          name: column.name, declaredType: column.declaredType, affinity: affinity,
          isRowidAlias: index == alias,
          defaultValue: ColumnDefault(column.defaultValue, affinity: affinity)))
    }
  }

  /// A table of the given columns, none an alias, for `sqlite_schema` itself.
  init(name: String, rootPage: UInt32, columnNames: [String]) {
    self.name = name
    self.rootPage = rootPage
    sql = ""
    columns = columnNames.map {
      SQLiteColumn(
        name: $0, declaredType: "", affinity: .blob, isRowidAlias: false,
        defaultValue: .value(.null))
    }
  }
}
