import YTKKeyValueStore

/// `ytkkv backup STORE DEST`: copies a store, as it is at one moment, to a new directory.
struct BackupCommand: Command {
  static let name = "backup"
  static let abstract = "Copy a store, as it is at one moment, to a new directory."
  static let usage = "ytkkv backup STORE DEST"
  static let discussion = """
    Writes a copy of STORE to DEST, which must not exist or be an empty directory. The copy
    is the store as it was at one moment, whole: when the command opened it (in
    .manyProcesses use, when it began to copy). Writes another process makes after that are
    not in it. It works while another process has the store open for writing,
    even while it compacts, and is on stable storage when the command ends. DEST opens as a
    store of its own. The tables and items printed are the copy's. A backup that fails removes
    what it wrote.

    Example:
      $ ytkkv backup test.db backups/test.db
      backed up 2 tables, 3 items to backups/test.db

    \(StoreAccess.sharingHelp)
    """
  static let flags: Set<String> = [StoreAccess.manyProcessesFlag]

  let path: String
  let destination: String

  let manyProcesses: Bool

  init(_ arguments: ParsedArguments) throws(UsageError) {
    manyProcesses = arguments.flags.contains(StoreAccess.manyProcessesFlag)
    let positional = try arguments.positional(2)
    path = positional[0]
    destination = positional[1]
  }

  func run(_ output: Output) throws -> ExitStatus {
    let store = try StoreAccess.openForReading(path, manyProcesses: manyProcesses)
    defer { try? store.close() }
    try store.backup(to: destination)
    // Counted in the copy, which holds the store as it was at the backup's moment. The store
    // itself has moved on by now in `.manyProcesses` use: each of its calls follows what the
    // apps wrote since, which the copy does not hold.
    let copy = try KeyValueStore(path: destination, options: StoreOptions(readOnly: true))
    defer { try? copy.close() }
    let statistics = try copy.statistics()
    output.print(
      "backed up \(statistics.tables) table\(statistics.tables == 1 ? "" : "s"), "
        + "\(statistics.liveItems) item\(statistics.liveItems == 1 ? "" : "s") to \(destination)")
    return .success
  }
}
