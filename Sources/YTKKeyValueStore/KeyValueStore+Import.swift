import LogStore
import SQLiteReader

/// What ``KeyValueStore/importYTKDatabase(at:tables:)`` did.
public struct YTKImportReport: Sendable {
  /// The tables imported (created if missing), sorted by their names' UTF-8 bytes, as
  /// ``KeyValueStore/tableNames()`` lists them.
  public var tables: [String]
  /// The items stored.
  public var items: Int
  /// The rows left out, each with its table, its id, and why.
  public var rejected: [(table: String, id: String, reason: String)]
  /// The tables of the file with YTKKeyValueStore's columns that were not made, each with why
  /// (a name that is not well-formed text, or one this store does not allow), sorted as
  /// ``tables`` is. Each of their rows is in ``rejected`` too; an empty table is listed here
  /// only.
  public var rejectedTables: [(table: String, reason: String)]

  /// A report of these tables, items, rejected rows and rejected tables.
  public init(
    tables: [String] = [], items: Int = 0,
    rejected: [(table: String, id: String, reason: String)] = [],
    rejectedTables: [(table: String, reason: String)] = []
  ) {
    self.tables = tables
    self.items = items
    self.rejected = rejected
    self.rejectedTables = rejectedTables
  }
}

extension KeyValueStore {
  /// Imports the tables of an old YTKKeyValueStore SQLite database: every table whose columns
  /// are YTKKeyValueStore's (`id`, `json`, `createdTime`), or only `tables`. The file is read
  /// in pure Swift, without SQLite, and never written; a `-wal` or hot `-journal` beside it is
  /// honoured, so the rows are those SQLite would return (docs/MIGRATION.md).
  ///
  /// Each row becomes an item of the table of the same name (created if missing), with its
  /// id, its JSON value in the stored form, and its `createdTime` (seconds since 1970, kept
  /// to the microsecond). An item with the same id is replaced. Imported items never expire,
  /// but in a table with a default lifetime, which each then gets from the import, as a put
  /// does. A row whose `json` is not JSON (or whose id is not text, or too long) is left out
  /// and listed in the report; so is a row whose id or `json` is text that is not well-formed
  /// (bytes that are not UTF-8), which no `String` holds, and every row of a table whose name
  /// is such text, or is not one this store allows (1 to 255 bytes without NUL); the table is
  /// not made, and is listed in the report's `rejectedTables`, empty or not.
  ///
  /// ```swift
  /// let report = try store.importYTKDatabase(at: oldPath)
  /// print("\(report.items) items in \(report.tables.count) tables")
  /// for row in report.rejected { print("left out \(row.table)/\(row.id): \(row.reason)") }
  /// ```
  ///
  /// A file that cannot be read (not SQLite, damaged, truncated) imports nothing. Into tables
  /// new to the store, rows are written as they are read, and a failure removes those tables
  /// again; when one of the tables exists in the store, the whole file is read once before
  /// anything is written. A store error while writing (a full disk) removes the tables the
  /// import created; tables that existed keep what was written.
  ///
  /// - Throws: `.io` when the file cannot be opened or read; `.corrupted` when it is not an
  ///   SQLite database or is damaged (the message names the file and the page); `.tableNotFound`
  ///   for a name in `tables` the file does not have; `.invalidArgument` for one without
  ///   YTKKeyValueStore's columns; `.readOnly`.
  @discardableResult
  public func importYTKDatabase(at path: String, tables: [String]? = nil)
    throws(KeyValueStoreError) -> YTKImportReport
  {
    try importYTKDatabase(at: path, tables: tables, progress: nil)
  }

  /// ``importYTKDatabase(at:tables:)``, calling `progress` with the rows read so far and
  /// how many the file's tables hold, every 10,000 rows and at the end. The total is known
  /// (else 0) when the file was read once before writing, as it is when a table exists; that
  /// first reading reports its rows with a total of 0.
  package func importYTKDatabase(
    at path: String, tables names: [String]?,
    progress: ((_ rows: Int, _ total: Int) -> Void)?
  ) throws(KeyValueStoreError) -> YTKImportReport {
    let source = try YTKSource(path: path)
    defer { source.close() }
    let database: SQLiteDatabase
    do {
      database = try source.open()
    } catch {
      throw source.storeError(error)
    }
    let chosen = try source.chosenTables(of: database, named: names)
    // The tables written to; the rows of the others are read only to be listed.
    let imported = chosen.filter { $0.refusal == nil }

    // Rows are read and converted on a second thread while this one writes what the other
    // has converted. Without a second thread, this one does both in turn.
    let producer = YTKRowProducer(database: database, tables: chosen)
    let queue = YTKChunkQueue()
    let thread = BackgroundThread {
      do {
        while let chunk = try producer.nextChunk(raw: queue.isRunningLow) {
          guard queue.put(chunk) else { break }
        }
        queue.finish(failure: nil)
      } catch {
        queue.finish(failure: error)
      }
    }
    let concurrent = thread.tryStart()
    defer {
      // Before the file is closed: the producer reads it.
      queue.cancel()
      thread.join()
    }

    // A file that cannot be read imports nothing. When every table is new to the store, the
    // rows are written as they are read, and a failure removes the tables again. When a
    // table exists, whose items could not be put back, the whole file is read once first.
    // By the names' bytes, as the store tells tables apart (``TableName``): a table of the file
    // whose name is equal as a `String` to one of the store's, but not in its bytes, is new.
    let existing = Set(try tableNames().map(TableName.init))
    var total = 0
    if imported.contains(where: { existing.contains(TableName($0.name)) }) {
      do {
        for table in chosen {
          let cursor = try database.cursor(over: table.table)
          while try cursor.next() {
            _ = try cursor.withUTF8Text(at: table.id) { $0.count }
            _ = try cursor.withUTF8Text(at: table.json) { $0.count }
            _ = try cursor.withUTF8Text(at: table.createdTime) { $0.count }
            total += 1
            if total % 10_000 == 0 { progress?(total, 0) }
          }
        }
      } catch {
        throw source.storeError(error)
      }
    }

    var report = YTKImportReport(
      tables: imported.map(\.name).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) },
      rejectedTables: chosen.compactMap { table in table.refusal.map { (table.name, $0) } }
        .sorted { $0.table.utf8.lexicographicallyPrecedes($1.table.utf8) })
    var done = 0
    var canonicalizer = JSONCanonicalizer()
    var output = JSONOutput(capacity: 4096)
    defer { output.release() }
    do {
      var creation = WriteBatch()
      for table in imported where !existing.contains(TableName(table.name)) {
        creation.createTable(table.name)
      }
      try logStore.write(creation)
      while let chunk = try concurrent ? queue.take() : producer.nextChunk() {
        let (puts, rejected) = chunk.finish(with: &canonicalizer, output: &output)
        // (A table whose rows are all left out, as a refused table's are, may not exist.)
        if puts.count > 0 { try logStore.write(puts) }
        report.items += puts.count
        report.rejected += rejected.map { (puts.table, $0.id, $0.reason) }
        let before = done
        done += chunk.rows
        if done / 10_000 != before / 10_000 { progress?(done, total) }
      }
    } catch {
      removeCreatedTables(imported.map(\.name), existing: existing)
      throw source.storeError(error)
    }
    progress?(done, total)
    return report
  }

  /// After a failed import: drops the tables it created (best effort; the store's own error
  /// is the one reported).
  private func removeCreatedTables(_ names: [String], existing: Set<TableName>) {
    for name in names where !existing.contains(TableName(name)) {
      try? dropTable(name)
    }
  }
}

/// A table of the SQLite file with YTKKeyValueStore's columns, and where they are.
/// (`package`: the `sqlite` fuzz target converts rows as the import does.)
package struct YTKTable {
  package var table: SQLiteTable
  package var id: Int
  package var json: Int
  package var createdTime: Int
  /// How the file stores text.
  package var encoding: SQLiteTextEncoding
  /// Why every row of the table is left out (each listed with it), or nil when its rows are
  /// imported: its name is one this store cannot hold (not well-formed, or over the store's
  /// limits: SQLite's names may be longer than 255 bytes, or empty).
  package var refusal: String?
  package var name: String { table.name }

  package init?(_ table: SQLiteTable, encoding: SQLiteTextEncoding) {
    guard table.isReadable, let id = table.columnIndex(named: "id"),
      let json = table.columnIndex(named: "json"),
      let createdTime = table.columnIndex(named: "createdTime")
    else { return nil }
    self.table = table
    self.id = id
    self.json = json
    self.createdTime = createdTime
    self.encoding = encoding
    if !table.nameIsWellFormed {
      // Its name reads with U+FFFD in place of what is ill-formed, as another table's may:
      // imported under that reading, two tables would become one, and one's rows replace the
      // other's of the same id.
      refusal =
        "the table's name is not well-formed \(encoding), which no String holds (it reads as "
        + "\"\(table.name)\")"
    } else {
      // Refused per row rather than for the whole file: the other tables are imported, and
      // every row of this one is listed.
      do {
        try LogStore.validate(table: table.name, key: [], value: [])
      } catch {
        refusal = "the table's name is not one this store allows: \(error.message)"
      }
    }
  }
}

/// One row of a YTK table, as an item or as a rejection.
package enum YTKRow {
  case item(id: String, value: [UInt8], createdTime: Timestamp?)
  case rejected(id: String, reason: String)

  package static func read(_ cursor: SQLiteRowCursor, _ table: YTKTable) throws -> YTKRow {
    var canonicalizer = JSONCanonicalizer()
    return try read(cursor, table, using: &canonicalizer)
  }

  /// The row, its JSON turned into the stored form by `canonicalizer` (kept from row to row,
  /// so that its working memory is reused).
  static func read(
    _ cursor: SQLiteRowCursor, _ table: YTKTable, using canonicalizer: inout JSONCanonicalizer
  ) throws -> YTKRow {
    let idValue = try cursor.value(at: table.id)
    if let refusal = table.refusal {
      if case .text(let id) = idValue { return .rejected(id: id, reason: refusal) }
      return .rejected(id: describe(idValue), reason: refusal)
    }
    guard case .text(let id) = idValue else {
      let shown = describe(idValue)
      return .rejected(id: shown, reason: "the id is \(shown), not text")
    }
    // An id that is not well-formed reads with U+FFFD in place of what is ill-formed, as
    // another row's id (or a well-formed id holding U+FFFD) may: imported under that reading,
    // one of the rows would silently replace the other.
    guard try cursor.isWellFormedText(at: table.id) == true else {
      let reason = try illFormedReason("the id", cursor, table.id, table.encoding)
      return .rejected(id: id, reason: reason)
    }
    let parsed: Result<[UInt8], JSONCodecError>? = try cursor.withUTF8Text(at: table.json) {
      text in
      Result { () throws(JSONCodecError) -> [UInt8] in
        var output = JSONOutput(capacity: text.count + 16)
        defer { output.release() }
        try canonicalizer.append(canonicalTextOf: text, to: &output)
        return output.bytes()
      }
    }
    let value: [UInt8]
    switch parsed {
    case nil:
      return .rejected(
        id: id, reason: "the json column is \(describe(try cursor.value(at: table.json))), not text"
      )
    case .failure(let error)?:
      return .rejected(id: id, reason: "the json column is not JSON: \(error.message)")
    case .success(let bytes)?:
      value = bytes
    }
    // The canonicalizer refuses ill-formed UTF-8 itself; UTF-16 text reached it converted,
    // an unpaired surrogate read as U+FFFD, which would change the value.
    if table.encoding != .utf8, try cursor.isWellFormedText(at: table.json) != true {
      let reason = try illFormedReason("the json column", cursor, table.json, table.encoding)
      return .rejected(id: id, reason: reason)
    }
    do {
      try LogStore.validate(table: table.name, key: Array(id.utf8), value: value)
    } catch {
      return .rejected(id: id, reason: error.message)
    }
    let createdTime: Timestamp?
    // Text (what FMDB stored) is read in place, without making a String; text that is not a
    // time gets the import's time, as NULL and a blob do.
    if let time = try cursor.withUTF8Text(at: table.createdTime, YTKTime.timestamp(utf8:)) {
      createdTime = time
    } else {
      switch try cursor.value(at: table.createdTime) {
      case .integer(let seconds): createdTime = YTKTime.timestamp(seconds: String(seconds))
      case .real(let seconds): createdTime = YTKTime.timestamp(seconds: "\(seconds)")
      // Not text: that was read above.
      case .null, .blob, .text: createdTime = nil
      }
    }
    return .item(id: id, value: value, createdTime: createdTime)
  }

  /// Why text that is not well-formed is left out: in a UTF-8 file with its bytes (the first
  /// 32), in a UTF-16 file with what is wrong in it.
  private static func illFormedReason(
    _ what: String, _ cursor: SQLiteRowCursor, _ column: Int, _ encoding: SQLiteTextEncoding
  ) throws -> String {
    guard encoding == .utf8 else {
      return "\(what) is not well-formed \(encoding) (an unpaired surrogate), which no String holds"
    }
    let bytes = try cursor.withUTF8Text(at: column) { text in
      let hex = text.prefix(32).map { byte in
        let digits = String(byte, radix: 16, uppercase: true)
        return byte < 0x10 ? "0" + digits : digits
      }
      return hex.joined(separator: " ") + (text.count > 32 ? " …" : "")
    }
    return "\(what) is not well-formed UTF-8 (bytes \(bytes ?? "")), which no String holds"
  }

  private static func describe(_ value: SQLiteValue) -> String {
    switch value {
    case .null: "NULL"
    case .integer(let number): "the integer \(number)"
    case .real(let number): "the real \(number)"
    case .text(let text): "\"\(text)\""
    case .blob(let bytes): "a blob of \(bytes.count) bytes"
    }
  }
}

/// YTKKeyValueStore's `createdTime`: an `NSDate` bound through FMDB, which SQLite keeps as
/// the text of seconds since 1970 (`"1448000061.25"`).
package enum YTKTime {
  /// Seconds since 1970 as decimal text, to the microsecond (rounded half up); exponents and
  /// other forms through `Double`. Nil for text that is not a number, or is out of range.
  package static func timestamp(seconds text: String) -> Timestamp? {
    var trimmed = Substring(text)
    while trimmed.first == " " { trimmed.removeFirst() }
    while trimmed.last == " " { trimmed.removeLast() }
    let negative = trimmed.hasPrefix("-")
    let body = negative ? trimmed.dropFirst() : trimmed
    let parts = body.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
    guard let whole = parts.first, !whole.isEmpty, whole.allSatisfy({ $0.isASCII && $0.isNumber }),
      parts.count == 1 || (parts[1].allSatisfy { $0.isASCII && $0.isNumber } && !parts[1].isEmpty)
    else {
      guard let value = Double(trimmed), value.isFinite, abs(value) < 9e12 else { return nil }
      return Timestamp(microsecondsSince1970: Int64((value * 1_000_000).rounded()))
    }
    guard let seconds = Int64(whole), seconds < 9_000_000_000_000 else { return nil }
    var micros: Int64 = 0
    if parts.count == 2 {
      let digits = parts[1]
      // Six digits at most (ASCII, checked above), padded with zeros to microseconds.
      let kept = digits.prefix(6)
      for digit in kept.utf8 { micros = micros * 10 + Int64(digit - UInt8(ascii: "0")) }
      for _ in kept.count..<6 { micros *= 10 }
      if let next = digits.dropFirst(6).first, next >= "5" { micros += 1 }
    }
    let total = seconds * 1_000_000 + micros
    return Timestamp(microsecondsSince1970: negative ? -total : total)
  }

  /// ``timestamp(seconds:)`` of UTF-8 text (ill-formed sequences read as U+FFFD). The common
  /// form, `[-]digits[.digits]` between spaces, is read from the bytes without making a
  /// String (a String's Characters cost microseconds per row on a large import); anything
  /// else goes through ``timestamp(seconds:)``.
  package static func timestamp(utf8 text: UnsafeRawBufferPointer) -> Timestamp? {
    let space = UInt8(ascii: " ")
    let zero = UInt8(ascii: "0")
    var start = 0
    var end = text.count
    while start < end && text[start] == space { start += 1 }
    while end > start && text[end - 1] == space { end -= 1 }
    let negative = start < end && text[start] == UInt8(ascii: "-")
    if negative { start += 1 }
    // The whole seconds: 1 to 18 digits (so that they fit in an Int64).
    var seconds: Int64 = 0
    var index = start
    while index < end, text[index] &- zero < 10, index - start < 18 {
      seconds = seconds * 10 + Int64(text[index] &- zero)
      index += 1
    }
    var fast = index > start && (index == end || text[index] == UInt8(ascii: "."))
    var micros: Int64 = 0
    if fast && index < end {
      // The fraction: at least one digit; six kept, the seventh rounds half up.
      let fraction = index + 1
      index = fraction
      while index < end, text[index] &- zero < 10 {
        let position = index - fraction
        if position < 6 {
          micros = micros * 10 + Int64(text[index] &- zero)
        } else if position == 6 && text[index] >= UInt8(ascii: "5") {
          micros += 1
        }
        index += 1
      }
      let digits = index - fraction
      fast = digits > 0 && index == end
      for _ in min(digits, 6)..<6 { micros *= 10 }
    }
    guard fast else { return timestamp(seconds: String(decoding: text, as: UTF8.self)) }
    guard seconds < 9_000_000_000_000 else { return nil }
    let total = seconds * 1_000_000 + micros
    return Timestamp(microsecondsSince1970: negative ? -total : total)
  }
}

/// The SQLite file and what lies beside it, opened read-only through the engine's file
/// system (the store's one place for system calls).
final class YTKSource {
  let path: String
  private let fileSystem = SystemFileSystem()
  private var handles: [any FileHandle] = []

  init(path: String) throws(KeyValueStoreError) {
    self.path = path
  }

  /// Opens the file, and its `-wal` and `-journal` when they exist, as the reader's sources.
  func open() throws -> SQLiteDatabase {
    let file = try source(path, required: true)!
    return try SQLiteDatabase(
      file: file, wal: try source(path + "-wal", required: false),
      journal: try source(path + "-journal", required: false))
  }

  private func source(_ path: String, required: Bool) throws(LogStoreError) -> FileSource? {
    let handle: any FileHandle
    do {
      handle = try fileSystem.openFile(path, mode: .readOnly)
    } catch {
      if !required && error.isMissingFile { return nil }
      throw error
    }
    handles.append(handle)
    return FileSource(handle: handle, size: UInt64(try handle.size()))
  }

  func close() {
    for handle in handles { handle.close() }
  }

  /// The tables to import: the ones named (each must exist and have YTK's columns), or every
  /// table with YTK's columns.
  func chosenTables(of database: SQLiteDatabase, named names: [String]?)
    throws(KeyValueStoreError) -> [YTKTable]
  {
    let encoding = database.textEncoding
    guard let names else {
      return database.tables.compactMap { YTKTable($0, encoding: encoding) }
    }
    var chosen: [YTKTable] = []
    // Names are compared by their bytes, as SQLite and the store compare them: a name equal
    // as a `String` but not in its bytes names another table.
    for name in names where !chosen.contains(where: { $0.name.hasSameUTF8(as: name) }) {
      // A name that is not well-formed reads with U+FFFD, but it is not the name of that
      // reading, which may be another table's: no String names it.
      guard
        let table = database.tables.first(where: {
          $0.nameIsWellFormed && $0.name.hasSameUTF8(as: name)
        })
      else {
        throw KeyValueStoreError(.tableNotFound, "\(path) has no table named \"\(name)\"")
      }
      guard let ytk = YTKTable(table, encoding: encoding) else {
        throw KeyValueStoreError(
          .invalidArgument,
          "table \"\(name)\" of \(path) is not a YTKKeyValueStore table "
            + (table.unsupportedReason
              ?? "(it has no id, json and createdTime columns)"))
      }
      chosen.append(ytk)
    }
    return chosen
  }

  /// A failure while reading, as the store reports it.
  func storeError(_ error: any Error) -> KeyValueStoreError {
    switch error {
    case let error as KeyValueStoreError: return error
    case let error as LogStoreError: return KeyValueStoreError(error)
    case let error as SQLiteReaderError:
      return KeyValueStoreError(
        error.code == .unsupported ? .invalidArgument : .corrupted, error.description)
    default: return KeyValueStoreError(.io, "reading \(path): \(error)")
    }
  }
}

/// An open file as the SQLite reader reads it.
struct FileSource: SQLiteByteSource {
  let handle: any FileHandle
  let size: UInt64
  var name: String { handle.path }

  func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws {
    guard let start = Int(exactly: offset) else {
      throw LogStoreError(.io, "\(name): offset \(offset) is beyond what this platform reads")
    }
    let count = try handle.read(into: buffer, at: start)
    guard count == buffer.count else {
      throw LogStoreError(.io, "\(name) ended at \(start + count) while being read")
    }
  }
}
