import YTKKeyValueStore

/// `ytkkv import STORE OLD.sqlite [--table NAME]...`: an old YTKKeyValueStore database, read
/// without SQLite.
struct ImportCommand: Command {
  static let name = "import"
  static let abstract = "Import the tables of an old YTKKeyValueStore SQLite database."
  static let usage = "ytkkv import STORE OLD.sqlite [--table NAME]..."
  static let discussion = """
    Reads OLD.sqlite (and the -wal or hot -journal beside it, as SQLite would) in pure Swift,
    without SQLite, and never writes it. Imports every table with YTKKeyValueStore's columns
    (id, json, createdTime), or only the tables named with --table, into STORE (created if
    missing): each id with its JSON value and its createdTime, to the microsecond. Empty
    tables are created empty; an item with the same id is replaced.

    Rows that cannot be imported (a json column that is not JSON; an id that is not
    well-formed text, or longer than the store allows) are left out and listed on standard
    error, with the reason; so are tables whose name is not well-formed text or not one the
    store allows, with each of their rows. The rest is imported. A file that cannot be read
    (not SQLite, damaged, truncated) imports nothing. Progress is shown on a terminal.

    Options:
      --table NAME   import this table (repeat for several); default: every YTK table

    Exit status: 0 when the import is done (rows left out included), 1 when the file cannot
    be read or the store cannot be written, 64 on bad usage.

    Example:
      $ ytkkv import new.db Documents/database.sqlite --table user_table
      imported 2 tables, 1042 items (1 row left out)

    \(StoreAccess.sharingHelp)
    """
  static let flags: Set<String> = [StoreAccess.manyProcessesFlag]
  static let valueOptions: Set<String> = ["--table"]

  let store: String
  let file: String
  let tables: [String]?

  let manyProcesses: Bool

  init(_ arguments: ParsedArguments) throws(UsageError) {
    manyProcesses = arguments.flags.contains(StoreAccess.manyProcessesFlag)
    let positional = try arguments.positional(2)
    store = positional[0]
    file = positional[1]
    tables = arguments.repeated["--table"]
  }

  func run(_ output: Output) throws -> ExitStatus {
    let existed = StoreAccess.storeExists(store)
    let target = try StoreAccess.openForWriting(store, create: true, manyProcesses: manyProcesses)
    defer { try? target.close() }
    let showProgress = output.errorIsTerminal
    let report: YTKImportReport
    do {
      report = try target.importYTKDatabase(at: file, tables: tables) { rows, total in
        guard showProgress else { return }
        output.progress(
          total == 0 ? "importing: \(rows) rows" : "importing: \(rows) of \(total) rows")
      }
    } catch {
      if showProgress { output.progress(nil) }
      // Nothing was imported: a store this command created is removed again.
      try? target.close()
      if !existed { StoreAccess.removeEmptyStore(store) }
      throw error
    }
    if showProgress { output.progress(nil) }
    try target.close()
    for table in report.rejectedTables {
      output.error("left out: table \"\(table.table)\": \(table.reason)")
    }
    for row in report.rejected {
      output.error("left out: table \"\(row.table)\", id \"\(row.id)\": \(row.reason)")
    }
    func counted(_ count: Int, _ noun: String) -> String {
      "\(count) \(noun)\(count == 1 ? "" : "s")"
    }
    var left: [String] = []
    if !report.rejectedTables.isEmpty { left.append(counted(report.rejectedTables.count, "table")) }
    if !report.rejected.isEmpty { left.append(counted(report.rejected.count, "row")) }
    output.print(
      "imported \(counted(report.tables.count, "table")), \(counted(report.items, "item"))"
        + (left.isEmpty ? "" : " (\(left.joined(separator: " and ")) left out)"))
    return .success
  }
}
