/// `ytkkv delete PATH TABLE ID` or `ytkkv delete PATH TABLE --prefix P`.
struct DeleteCommand: Command {
  static let name = "delete"
  static let abstract = "Delete one id, or every id that starts with a prefix."
  static let usage = "ytkkv delete PATH TABLE (ID | --prefix PREFIX)"
  static let discussion = """
    Deleting an id that has no value is not an error. With --prefix, every id that starts
    with PREFIX, byte for byte, is deleted at once (% and _ are ordinary characters); an empty
    PREFIX empties the table. Prints how many items were deleted.

    Options:
      --prefix PREFIX   delete by prefix instead of one id

    Example:
      $ ytkkv delete test.db user_table --prefix user_
      deleted 2 items

    \(StoreAccess.sharingHelp)
    """
  static let flags: Set<String> = [StoreAccess.manyProcessesFlag]
  static let valueOptions: Set<String> = ["--prefix"]

  let path: String
  let table: String
  let target: Target

  enum Target {
    case id(String)
    case prefix(String)
  }

  let manyProcesses: Bool

  init(_ arguments: ParsedArguments) throws(UsageError) {
    manyProcesses = arguments.flags.contains(StoreAccess.manyProcessesFlag)
    if let prefix = arguments.options["--prefix"] {
      let values = try arguments.positional(2)
      (path, table, target) = (values[0], values[1], .prefix(prefix))
    } else {
      let values = try arguments.positional(3)
      (path, table, target) = (values[0], values[1], .id(values[2]))
    }
  }

  func run(_ output: Output) throws -> ExitStatus {
    let store = try StoreAccess.openForWriting(path, manyProcesses: manyProcesses)
    let before = try store.count(in: table)
    switch target {
    case .id(let id): try store.delete(id: id, from: table)
    case .prefix(let prefix): try store.delete(prefix: prefix, from: table)
    }
    let deleted = before - (try store.count(in: table))
    try store.close()
    output.print("deleted \(deleted) item\(deleted == 1 ? "" : "s")")
    return .success
  }
}
