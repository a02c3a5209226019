/// `ytkkv get PATH TABLE ID`: one value as JSON.
struct GetCommand: Command {
  static let name = "get"
  static let abstract = "Print the value stored under an id, as JSON."
  static let usage = "ytkkv get PATH TABLE ID"
  static let discussion = """
    Prints the stored JSON text (object keys sorted; a string put with put(string:) shows as
    ["s"], a number as [n], as YTKKeyValueStore stored them). Exits with status 1 when the
    id has no value or the table does not exist.

    Example:
      $ ytkkv get test.db user_table 1
      {"age":30,"id":1,"name":"tangqiao"}

    \(StoreAccess.sharingHelp)
    """
  static let flags: Set<String> = [StoreAccess.manyProcessesFlag]

  let path: String
  let table: String
  let id: String

  let manyProcesses: Bool

  init(_ arguments: ParsedArguments) throws(UsageError) {
    manyProcesses = arguments.flags.contains(StoreAccess.manyProcessesFlag)
    let values = try arguments.positional(3)
    (path, table, id) = (values[0], values[1], values[2])
  }

  func run(_ output: Output) throws -> ExitStatus {
    let store = try StoreAccess.openForReading(path, manyProcesses: manyProcesses)
    defer { try? store.close() }
    guard let bytes = try store.storedBytes(id: id, from: table) else {
      output.error("ytkkv get: no item with id \"\(id)\" in table \"\(table)\"")
      return .failure
    }
    output.print(String(decoding: bytes, as: UTF8.self))
    return .success
  }
}
