import SQLiteReader
import YTKKeyValueStore

/// Fuzz target: an SQLite database file, with a WAL, a hot journal or both beside it, opened
/// by `SQLiteReader` and read in full, then read again as `importYTKDatabase` reads it.
///
/// Input layout: `[mode: 1 byte]` then the files. `mode % 4` says which files there are:
/// 0 the database alone (the rest of the input); 1 the database and its WAL; 2 the database
/// and its journal; 3 all three. Every file but the last is preceded by its length (2 bytes,
/// little-endian, cut to what the input holds) and the last takes the rest:
///
///     0: [0][database...]
///     1: [1][n: 2][database: n][wal...]
///     2: [2][n: 2][database: n][journal...]
///     3: [3][n: 2][m: 2][database: n][wal: m][journal...]
///
/// Opening and reading must never trap, loop or fail with anything but an `SQLiteReaderError`
/// naming one of the files. Every table is walked with a cursor, every value read with
/// `value(at:)` and `withUTF8Text(at:_:)`, which must agree (and text `isWellFormedText(at:)`
/// calls well-formed must read as it is, the rest with U+FFFD); `row()` must equal the values
/// read one at a time; rowids must increase; a finished cursor stays finished; a second walk
/// (`rows(of:)`) must give the same rows or the same error. Tables with YTKKeyValueStore's
/// columns are then read as the import reads them (`YTKRow.read`): every item's id must be
/// well-formed text, its value canonical JSON, and its `createdTime`, read from the text's
/// bytes, what the text's String gives. The reading stops after `SQLiteFuzzBudget.values`
/// values, so that no input runs for long; the reader itself is bounded by the pages it has.
///
/// The import itself (`KeyValueStore.importYTKDatabase(at:)`) reads files by path and writes a
/// store on disk. Measured on the seeds (debug build), writing the files alone took 1.0 ms an
/// input beside the 1.6 ms of everything here, and a store per input with the import 29 ms, so
/// this target runs the import's reading and row conversion without files.
package func fuzzSQLite(_ data: UnsafeRawBufferPointer) {
  let files = SQLiteFuzzFiles(data)
  var budget = SQLiteFuzzBudget()
  let database: SQLiteDatabase
  do {
    database = try files.open()
  } catch {
    files.checkError(error, "opening")
    return
  }
  precondition(database.pageCount > 0 || database.tables.isEmpty, "tables without pages")
  for table in database.tables where budget.remains {
    walk(table, of: database, files: files, budget: &budget)
  }
  let ytkTables = database.tables.compactMap { YTKTable($0, encoding: database.textEncoding) }
  for table in ytkTables where budget.remains {
    readAsImport(table, of: database, files: files, budget: &budget)
  }
}

/// The files an input holds (see ``fuzzSQLite(_:)``).
struct SQLiteFuzzFiles {
  static let names = (database: "fuzz.db", wal: "fuzz.db-wal", journal: "fuzz.db-journal")

  var database: [UInt8] = []
  var wal: [UInt8]?
  var journal: [UInt8]?

  init(_ data: UnsafeRawBufferPointer) {
    guard let mode = data.first else { return }
    var position = 1
    func length() -> Int {
      defer { position += 2 }
      guard position + 2 <= data.count else { return 0 }
      return Int(data[position]) | Int(data[position + 1]) << 8
    }
    func take(_ count: Int?) -> [UInt8] {
      let start = min(position, data.count)
      let end = count.map { min(data.count, start + $0) } ?? data.count
      position = end
      return Array(data[start..<end])
    }
    switch mode % 4 {
    case 0:
      database = take(nil)
    case 1, 2:
      let count = length()
      database = take(count)
      if mode % 4 == 1 { wal = take(nil) } else { journal = take(nil) }
    default:
      let (databaseCount, walCount) = (length(), length())
      database = take(databaseCount)
      wal = take(walCount)
      journal = take(nil)
    }
  }

  func open() throws -> SQLiteDatabase {
    try SQLiteDatabase(
      file: SQLiteBytes(database, name: Self.names.database),
      wal: wal.map { SQLiteBytes($0, name: Self.names.wal) },
      journal: journal.map { SQLiteBytes($0, name: Self.names.journal) })
  }

  /// Traps unless `error` is a reader's error about one of the files.
  func checkError(_ error: any Error, _ when: String) {
    guard let error = error as? SQLiteReaderError else {
      preconditionFailure("\(when) threw \(error), not an SQLiteReaderError")
    }
    let names = [Self.names.database, Self.names.wal, Self.names.journal]
    precondition(names.contains(error.file), "\(when): an error names no file: \(error)")
    let codes: [SQLiteReaderError.Code] = [.notADatabase, .corrupted, .unsupported]
    precondition(codes.contains(error.code), "\(when): an error of an unknown code: \(error)")
  }
}

/// How many values one input may read in all.
struct SQLiteFuzzBudget {
  static let values = 50_000
  var left = Self.values

  var remains: Bool { left > 0 }

  /// Takes `count` values; false once the budget is spent.
  mutating func take(_ count: Int) -> Bool {
    left -= max(count, 1)
    return left >= 0
  }
}

/// Reads every row of `table` value by value, checking what must hold; then, if that ended
/// within the budget, reads it again with `rows(of:)`, which must give the same.
private func walk(
  _ table: SQLiteTable, of database: SQLiteDatabase, files: SQLiteFuzzFiles,
  budget: inout SQLiteFuzzBudget
) {
  let cursor: SQLiteRowCursor
  do {
    cursor = try database.cursor(over: table)
  } catch {
    files.checkError(error, "a cursor over \(table.name)")
    precondition(
      !table.isReadable && (error as? SQLiteReaderError)?.code == .unsupported,
      "a cursor over a readable table was refused: \(error)")
    return
  }
  precondition(table.isReadable, "a cursor over an unreadable table")
  var rows: [SQLiteRow] = []
  var failure: SQLiteReaderError?
  var previous: Int64?
  while true {
    guard budget.take(cursor.columnCount) else { return }
    do {
      guard try cursor.next() else { break }
    } catch {
      files.checkError(error, "reading \(table.name)")
      precondition((try? cursor.next()) == false, "a cursor moved on after an error")
      failure = error as? SQLiteReaderError
      break
    }
    if let previous {
      precondition(cursor.rowid > previous, "rowid \(cursor.rowid) after \(previous)")
    }
    previous = cursor.rowid
    // Nil: a value the reader does not evaluate (a default expression), refused by row() too.
    guard let row = checkRow(cursor, files: files) else { return }
    rows.append(row)
  }
  precondition((try? cursor.next()) == false, "a finished cursor moved on")
  guard budget.take(rows.count * max(table.columns.count, 1)) else { return }
  do {
    let again = try database.rows(of: table)
    precondition(failure == nil, "a second walk read what the first refused: \(failure!)")
    precondition(again == rows, "a second walk of \(table.name) read other rows")
  } catch {
    precondition(
      (error as? SQLiteReaderError) == failure,
      "a second walk of \(table.name) failed otherwise: \(error), not \(String(describing: failure))"
    )
  }
}

/// Reads every value of the cursor's row both ways and `row()`; they must agree. Nil when a
/// value cannot be read (an unsupported default), which `row()` must then refuse too.
private func checkRow(_ cursor: SQLiteRowCursor, files: SQLiteFuzzFiles) -> SQLiteRow? {
  var values: [SQLiteValue] = []
  values.reserveCapacity(cursor.columnCount)
  for column in 0..<cursor.columnCount {
    let value: SQLiteValue
    let utf8: [UInt8]?
    let wellFormed: Bool?
    do {
      value = try cursor.value(at: column)
      utf8 = try cursor.withUTF8Text(at: column) { Array($0) }
      wellFormed = try cursor.isWellFormedText(at: column)
    } catch {
      files.checkError(error, "column \(column) of \(cursor.table.name)")
      precondition(
        (error as? SQLiteReaderError)?.code == .unsupported,
        "a value of a row the cursor read failed: \(error)")
      precondition((try? cursor.row()) == nil, "row() read a value value(at:) refused")
      return nil
    }
    switch value {
    case .text(let text):
      guard let utf8 else { preconditionFailure("text that withUTF8Text does not give") }
      precondition(
        String(decoding: utf8, as: UTF8.self) == text,
        "withUTF8Text and value(at:) give different text")
      // Well-formed text reads as it is; the rest has U+FFFD in place of what is ill-formed.
      switch wellFormed {
      case true?: precondition(Array(text.utf8) == utf8, "well-formed text read otherwise")
      case false?:
        precondition(text.unicodeScalars.contains("\u{FFFD}"), "ill-formed text without U+FFFD")
      case nil: preconditionFailure("text that isWellFormedText does not take for text")
      }
    case .real(let real):
      precondition(!real.isNaN, "a NaN read as a real")
      precondition(utf8 == nil && wellFormed == nil, "withUTF8Text gave a real as text")
    default:
      precondition(utf8 == nil && wellFormed == nil, "withUTF8Text gave text for \(value)")
    }
    values.append(value)
  }
  let row: SQLiteRow
  do {
    row = try cursor.row()
  } catch {
    preconditionFailure("row() failed where every value read: \(error)")
  }
  precondition(row == SQLiteRow(rowid: cursor.rowid, values: values), "row() differs")
  return row
}

/// Reads `table` as `importYTKDatabase` does: a first pass over the three columns' text, then
/// a second converting each row. An item's value must be canonical JSON, and its time the
/// one `YTKTime.timestamp(seconds:)` reads from the text as a String.
private func readAsImport(
  _ table: YTKTable, of database: SQLiteDatabase, files: SQLiteFuzzFiles,
  budget: inout SQLiteFuzzBudget
) {
  do {
    let first = try database.cursor(over: table.table)
    while budget.take(3), try first.next() {
      for column in [table.id, table.json, table.createdTime] {
        _ = try first.withUTF8Text(at: column) { $0.count }
      }
    }
    let cursor = try database.cursor(over: table.table)
    while budget.take(3), try cursor.next() {
      switch try YTKRow.read(cursor, table) {
      case .item(let id, let value, let createdTime):
        precondition(
          (try? cursor.value(at: table.id)) == .text(id), "an item's id is not the row's id")
        precondition(
          (try? cursor.isWellFormedText(at: table.id)) == true,
          "an item's id is not well-formed text")
        // The import reads a text createdTime from its bytes; it must agree with the String.
        if case .text(let text)? = try? cursor.value(at: table.createdTime) {
          precondition(
            createdTime == YTKTime.timestamp(seconds: text),
            "createdTime \"\(text)\" read from its bytes differs from its String")
        }
        let canonical = value.withUnsafeBytes { bytes in
          (try? JSONReader.parse(bytes)).flatMap { try? JSONWriter.bytes($0) }
        }
        precondition(canonical == value, "an imported value is not canonical JSON")
      case .rejected:
        break
      }
    }
  } catch {
    files.checkError(error, "importing \(table.name)")
  }
}
