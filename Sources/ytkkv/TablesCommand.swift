/// `ytkkv tables PATH`: every table with its number of items.
struct TablesCommand: Command {
  static let name = "tables"
  static let abstract = "List the tables of a store with their item counts."
  static let usage = "ytkkv tables PATH"
  static let discussion = """
    Prints one line per table, sorted by the UTF-8 bytes of the names: the name, a tab, the
    number of items. A table is its name's bytes: two names that look alike but are different
    bytes (an accent precomposed or not) are two tables.
    Works while another process has the store open (it reads a snapshot).

    Example:
      $ ytkkv tables test.db
      user_table	1

    \(StoreAccess.sharingHelp)
    """
  static let flags: Set<String> = [StoreAccess.manyProcessesFlag]

  let path: String

  let manyProcesses: Bool

  init(_ arguments: ParsedArguments) throws(UsageError) {
    manyProcesses = arguments.flags.contains(StoreAccess.manyProcessesFlag)
    path = try arguments.positional(1)[0]
  }

  func run(_ output: Output) throws -> ExitStatus {
    let store = try StoreAccess.openForReading(path, manyProcesses: manyProcesses)
    defer { try? store.close() }
    for table in try store.tableNames() {
      output.print("\(table)\t\(try store.count(in: table))")
    }
    return .success
  }
}
