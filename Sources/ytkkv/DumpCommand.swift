import LogStore
import YTKKeyValueStore

/// `ytkkv dump PATH [TABLE]`: every item as JSON Lines.
struct DumpCommand: Command {
  static let name = "dump"
  static let abstract = "Write every item as JSON Lines, for backups and 'ytkkv load'."
  static let usage = "ytkkv dump PATH [TABLE]"
  static let discussion = """
    Writes one line per item, tables in name order and ids in byte order:
      {"table":"user_table","id":"1","value":{"age":30,"id":1,"name":"tangqiao"},"createdTime":1448000000.25}
    value is the stored JSON; createdTime is seconds since 1970 (UTC), to the microsecond;
    an item that expires has expiresTime too, in the same form. Expired items are left out.
    Empty tables are written as {"table":"name"} so that 'ytkkv load' recreates them.
    Works while another process has the store open (it reads a snapshot).

    Example:
      $ ytkkv dump test.db > backup.jsonl && ytkkv load copy.db < backup.jsonl

    \(StoreAccess.sharingHelp)
    """
  static let flags: Set<String> = [StoreAccess.manyProcessesFlag]

  let path: String
  let table: String?

  let manyProcesses: Bool

  init(_ arguments: ParsedArguments) throws(UsageError) {
    manyProcesses = arguments.flags.contains(StoreAccess.manyProcessesFlag)
    let values = try arguments.positional(1, 2)
    path = values[0]
    table = values.count > 1 ? values[1] : nil
  }

  func run(_ output: Output) throws -> ExitStatus {
    let store = try StoreAccess.openForReading(path, manyProcesses: manyProcesses)
    defer { try? store.close() }
    let tables = try table.map { [$0] } ?? store.tableNames()
    for table in tables {
      let tableJSON = try JSONWriter.bytes(.string(table))
      // One entry in memory at a time: a store may be larger than the memory of the machine
      // dumping it.
      var visited = 0
      var failure: (any Error)?
      try store.logStore.forEachItem(in: table) { key, value, timestamp, expires in
        visited += 1
        do {
          var line = Array("{\"table\":".utf8) + tableJSON
          line += Array(",\"id\":".utf8)
          line += try JSONWriter.bytes(.string(String(decoding: key, as: UTF8.self)))
          line += Array(",\"value\":".utf8)
          line.append(contentsOf: value)
          line += Array(",\"createdTime\":".utf8)
          line += Array(Formatting.seconds(timestamp).utf8)
          if let expires {
            line += Array(",\"expiresTime\":".utf8) + Array(Formatting.seconds(expires).utf8)
          }
          line.append(UInt8(ascii: "}"))
          output.print(String(decoding: line, as: UTF8.self))
          return true
        } catch {
          failure = error
          return false
        }
      }
      if let failure { throw failure }
      if visited == 0 {
        output.print("{\"table\":" + String(decoding: tableJSON, as: UTF8.self) + "}")
      }
    }
    return .success
  }
}
