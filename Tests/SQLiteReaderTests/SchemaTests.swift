import Testing

@testable import SQLiteReader

/// What the reader takes from `CREATE TABLE` statements: column names, types, affinities,
/// the rowid alias, defaults, and what it refuses.
@Suite("CREATE TABLE statements")
struct SchemaTests {
  static func table(_ sql: String) -> SQLiteTable {
    SQLiteTable(SQLiteSchemaEntry(type: "table", name: "t", tableName: "t", rootPage: 2, sql: sql))
  }

  @Test("YTKKeyValueStore's tables: three TEXT columns, a primary key that is not the rowid")
  func ytkTable() {
    let table = Self.table(
      "CREATE TABLE user_table ( id TEXT NOT NULL, json TEXT NOT NULL, createdTime TEXT NOT NULL, "
        + "PRIMARY KEY(id))")
    #expect(table.isReadable)
    #expect(table.columns.map(\.name) == ["id", "json", "createdTime"])
    #expect(table.columns.map(\.affinity) == [.text, .text, .text])
    #expect(table.columns.allSatisfy { !$0.isRowidAlias })
    #expect(table.columnIndex(named: "CREATEDTIME") == 2)
    #expect(table.columnIndex(named: "missing") == nil)
  }

  @Test("INTEGER PRIMARY KEY is the rowid, except PRIMARY KEY DESC and other types")
  func rowidAlias() {
    #expect(Self.table("CREATE TABLE t (id INTEGER PRIMARY KEY, v)").columns[0].isRowidAlias)
    #expect(
      Self.table("CREATE TABLE t (id integer primary key autoincrement, v)").columns[0].isRowidAlias
    )
    #expect(
      Self.table("CREATE TABLE t (v, id INTEGER, PRIMARY KEY (id DESC))").columns[1].isRowidAlias)
    #expect(!Self.table("CREATE TABLE t (id INTEGER PRIMARY KEY DESC, v)").columns[0].isRowidAlias)
    #expect(!Self.table("CREATE TABLE t (id INT PRIMARY KEY, v)").columns[0].isRowidAlias)
    #expect(!Self.table("CREATE TABLE t (id INTEGER(8) PRIMARY KEY, v)").columns[0].isRowidAlias)
    #expect(
      !Self.table("CREATE TABLE t (a INTEGER, b INTEGER, PRIMARY KEY (a, b))").columns[0]
        .isRowidAlias)
  }

  @Test("affinity from the declared type, by SQLite's rules in their order")
  func affinities() {
    let table = Self.table(
      "CREATE TABLE t (a INT, b VARCHAR(10), c CLOB, d BLOB, e, f REAL, g FLOATING POINT, "
        + "h DOUBLE PRECISION, i DECIMAL(10,5), j CHARINT, k \"TEXT\")")
    #expect(
      table.columns.map(\.affinity) == [
        .integer, .text, .text, .blob, .blob, .real, .integer, .real, .numeric, .integer, .text,
      ])
    #expect(table.columns[1].declaredType == "VARCHAR(10)")
    #expect(table.columns[7].declaredType == "DOUBLE PRECISION")
    #expect(table.columns[8].declaredType == "DECIMAL(10,5)")
  }

  @Test("quoted names, comments and constraints")
  func names() {
    let table = Self.table(
      #"""
      CREATE TABLE IF NOT EXISTS main."odd ""t""" ( -- the first column
        "col one" TEXT DEFAULT 'a,b' CHECK ("col one" <> ')'), [col two] /* two */ INTEGER,
        `col three` REFERENCES p(id) ON DELETE SET DEFAULT DEFAULT 4, 'col four' COLLATE NOCASE,
        CONSTRAINT pk UNIQUE ("col one"), FOREIGN KEY ([col two]) REFERENCES p(x)
      )
      """#)
    #expect(table.isReadable)
    #expect(table.columns.map(\.name) == ["col one", "col two", "col three", "col four"])
    #expect(table.columns[0].defaultValue == .value(SQLiteValue.text("a,b")))
    #expect(table.columns[2].defaultValue == .value(.integer(4)))
  }

  @Test("defaults take the column's affinity")
  func defaults() {
    let table = Self.table(
      "CREATE TABLE t (a TEXT DEFAULT 15, b REAL DEFAULT 2, c INTEGER DEFAULT 2.0, d DEFAULT -3, "
        + "e TEXT DEFAULT -3, f DEFAULT x'CAFE', g DEFAULT TRUE, h DEFAULT NULL, i, "
        + "j DEFAULT CURRENT_TIMESTAMP, k DEFAULT (1 + 1), l INTEGER DEFAULT '12', m DEFAULT name, "
        + "n REAL DEFAULT 1e3, o TEXT DEFAULT 0x10, p NUMERIC DEFAULT 2.5)")
    #expect(
      table.columns.map(\.defaultValue) == [
        .value(SQLiteValue.text("15")), .value(.real(2)), .value(.integer(2)), .value(.integer(-3)),
        .value(SQLiteValue.text("-3")), .value(.blob([0xCA, 0xFE])), .value(.integer(1)),
        .value(.null),
        .value(.null), .unsupported("CURRENT_TIMESTAMP"), .unsupported("(1 + 1)"),
        .unsupported("'12'"), .value(SQLiteValue.text("name")), .value(.real(1000)),
        .value(SQLiteValue.text("0x10")),
        .value(.real(2.5)),
      ])
  }

  @Test("WITHOUT ROWID, virtual tables, VIRTUAL generated columns and bad SQL are refused")
  func refusals() {
    #expect(
      Self.table("CREATE TABLE t (k PRIMARY KEY, v) WITHOUT ROWID").unsupportedReason?.contains(
        "WITHOUT ROWID") == true)
    #expect(
      Self.table("CREATE TABLE t (k PRIMARY KEY, v) STRICT, WITHOUT ROWID").unsupportedReason != nil
    )
    #expect(
      Self.table("CREATE VIRTUAL TABLE t USING fts5(body)").unsupportedReason?.contains(
        "virtual table") == true)
    #expect(
      Self.table("CREATE TABLE t (a, b AS (a + 1))").unsupportedReason?.contains(
        "column b is a VIRTUAL") == true)
    #expect(
      Self.table("CREATE TABLE t (a, b INT GENERATED ALWAYS AS (a) VIRTUAL)").unsupportedReason
        != nil)
    #expect(Self.table("CREATE TABLE t (a, b INT GENERATED ALWAYS AS (a) STORED)").isReadable)
    #expect(Self.table("CREATE TABLE t (a, b) STRICT").isReadable)
    for bad in [
      "", "CREATE TABLE", "CREATE TABLE t", "CREATE TABLE t (", "CREATE TABLE t ('a)",
      "DROP TABLE t", "CREATE TABLE t ()",
    ] {
      #expect(
        Self.table(bad).unsupportedReason?.hasPrefix("its CREATE TABLE statement could not be read")
          == true, "\(bad)")
    }
  }
}
