/// One value of a row, as SQLite returns it.
///
/// Text is decoded from the database's encoding (UTF-8, UTF-16le or UTF-16be); ill-formed
/// sequences become U+FFFD. A column with REAL affinity reads integers as reals, the rowid
/// alias column (`INTEGER PRIMARY KEY`) reads the rowid, and a column added after a row was
/// written reads its default: each as SQLite returns it from `SELECT *`.
public enum SQLiteValue: Sendable, Hashable {
  case null
  case integer(Int64)
  /// Never NaN: SQLite reads a stored NaN as NULL, and so does this reader.
  case real(Double)
  case text(String)
  case blob([UInt8])
}

/// A row of a table: its rowid and its values, one per column of the table in order.
public struct SQLiteRow: Sendable, Hashable {
  public var rowid: Int64
  public var values: [SQLiteValue]

  public init(rowid: Int64, values: [SQLiteValue]) {
    self.rowid = rowid
    self.values = values
  }
}
