import YTKKeyValueStore

/// `ytkkv put PATH TABLE ID JSON`: stores one value.
struct PutCommand: Command {
  static let name = "put"
  static let abstract = "Store a JSON value under an id."
  static let usage = "ytkkv put PATH TABLE ID JSON [--create]"
  static let discussion = """
    JSON is any JSON text; it is stored in canonical form (object keys sorted, no spaces).
    The table must exist, unless --create is given: then the store and the table are
    created as needed.

    Options:
      --create   create the store and the table if they do not exist

    Example:
      $ ytkkv put test.db user_table 2 '{"name": "tangqiao", "age": 30}' --create

    \(StoreAccess.sharingHelp)
    """
  static let flags: Set<String> = ["--create", StoreAccess.manyProcessesFlag]

  let path: String
  let table: String
  let id: String
  let value: JSONValue
  let create: Bool

  let manyProcesses: Bool

  init(_ arguments: ParsedArguments) throws(UsageError) {
    manyProcesses = arguments.flags.contains(StoreAccess.manyProcessesFlag)
    let values = try arguments.positional(4)
    (path, table, id) = (values[0], values[1], values[2])
    create = arguments.flags.contains("--create")
    do {
      value = try JSONReader.parse(Array(values[3].utf8))
    } catch {
      throw UsageError("JSON is not valid: \(error)")
    }
  }

  func run(_ output: Output) throws -> ExitStatus {
    let store = try StoreAccess.openForWriting(path, create: create, manyProcesses: manyProcesses)
    if create { try store.createTable(table) }
    try store.put(value, id: id, into: table)
    try store.close()
    return .success
  }
}
