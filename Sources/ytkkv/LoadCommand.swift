import LogStore
import YTKKeyValueStore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// `ytkkv load PATH [--ytk-table NAME]`: items from standard input.
struct LoadCommand: Command {
  static let name = "load"
  static let abstract = "Load items from standard input: JSON Lines, or an old YTK table."
  static let usage = "ytkkv load PATH [--ytk-table NAME]"
  static let discussion = """
    Without options, reads the JSON Lines that 'ytkkv dump' writes, one item per line:
      {"table":"user_table","id":"1","value":{...},"createdTime":1448000000.25}
    createdTime (seconds since 1970) is optional: without it, the time of loading is used.
    expiresTime (seconds since 1970), when given, is when the item expires.
    A line {"table":"name"} creates an empty table. Tables are created as needed.

    With --ytk-table NAME, reads instead what `sqlite3 -json DB 'SELECT * FROM t'` prints
    for a table of an old YTKKeyValueStore SQLite database (a JSON array of
    {"id", "json", "createdTime"} rows; json holds the value as JSON text, createdTime
    seconds since 1970) and loads the rows into table NAME, keeping each createdTime.
    This is the migration path from the SQLite-based YTKKeyValueStore.

    Items are written in batches of up to 1,000, each one atomic: after an error, every
    batch before it is in the store and nothing of the failing one. The store is created if
    it does not exist. Prints how many items and tables were loaded.

    Options:
      --ytk-table NAME   read a sqlite3 -json export of a YTKKeyValueStore table into NAME

    Examples:
      $ ytkkv dump old.db | ytkkv load new.db
      $ sqlite3 -json ytk.sqlite 'SELECT * FROM user_table' | ytkkv load new.db --ytk-table user_table

    \(StoreAccess.sharingHelp)
    """
  static let flags: Set<String> = [StoreAccess.manyProcessesFlag]
  static let valueOptions: Set<String> = ["--ytk-table"]

  let path: String
  let ytkTable: String?

  let manyProcesses: Bool

  init(_ arguments: ParsedArguments) throws(UsageError) {
    manyProcesses = arguments.flags.contains(StoreAccess.manyProcessesFlag)
    path = try arguments.positional(1)[0]
    ytkTable = arguments.options["--ytk-table"]
  }

  /// One item to load.
  struct Item {
    var table: String
    var id: String?
    var value: [UInt8]
    var createdTime: Timestamp?
    /// When the item expires ("expiresTime", as `ytkkv dump` writes it); nil: never.
    var expiresTime: Timestamp? = nil
  }

  func run(_ output: Output) throws -> ExitStatus {
    let store = try StoreAccess.openForWriting(path, create: true, manyProcesses: manyProcesses)
    defer { try? store.close() }
    let loader = BatchLoader(store: store)
    if let ytkTable {
      let input = try readStandardInput()
      // sqlite3 -json prints nothing at all for a table without rows.
      let isEmpty = input.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
      let expected =
        "--ytk-table reads what `sqlite3 -json DB 'SELECT * FROM TABLE'` prints: a JSON array "
        + "of rows, each {\"id\": …, \"json\": …, \"createdTime\": …}"
      let rows: JSONValue
      do {
        rows = isEmpty ? .array([]) : try JSONReader.parse(input)
      } catch {
        throw CommandFailure("standard input is not JSON (\(error)); \(expected)")
      }
      guard case .array(let elements) = rows else {
        throw CommandFailure("standard input is JSON but not an array; \(expected)")
      }
      try loader.createTable(ytkTable)
      for (index, row) in elements.enumerated() {
        try loader.add(try Self.ytkRow(row, number: index + 1, table: ytkTable))
      }
    } else {
      var lines = LineReader(descriptor: 0)
      var number = 0
      while let line = try lines.next() {
        number += 1
        if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
        try loader.add(try Self.jsonLine(line, number: number))
      }
    }
    try loader.flush()
    try store.close()
    output.print(
      "loaded \(loader.items) item\(loader.items == 1 ? "" : "s") into "
        + "\(loader.tables.count) table\(loader.tables.count == 1 ? "" : "s")")
    return .success
  }

  /// An item from one line of `ytkkv dump` output.
  static func jsonLine(_ line: [UInt8], number: Int) throws -> Item {
    let parsed: JSONValue
    do {
      parsed = try JSONReader.parse(line)
    } catch {
      throw CommandFailure("line \(number): \(error)")
    }
    guard case .object(let fields) = parsed, case .string(let table)? = fields["table"] else {
      throw CommandFailure("line \(number): expected an object with a \"table\" string")
    }
    guard let idValue = fields["id"] else {
      return try checked(
        Item(table: table, id: nil, value: [], createdTime: nil), at: "line \(number)")
    }
    guard case .string(let id) = idValue, let value = fields["value"] else {
      throw CommandFailure("line \(number): expected an \"id\" string and a \"value\"")
    }
    var createdTime: Timestamp?
    if let time = fields["createdTime"] {
      guard let stamp = timestamp(time) else {
        throw CommandFailure("line \(number): createdTime must be seconds since 1970")
      }
      createdTime = stamp
    }
    var expiresTime: Timestamp?
    if let time = fields["expiresTime"] {
      guard let stamp = timestamp(time) else {
        throw CommandFailure("line \(number): expiresTime must be seconds since 1970")
      }
      expiresTime = stamp
    }
    return try checked(
      Item(
        table: table, id: id, value: try JSONWriter.bytes(value), createdTime: createdTime,
        expiresTime: expiresTime),
      at: "line \(number)")
  }

  /// `item`, after checking it against the store's limits, so that a bad one is reported
  /// with its place in the input rather than when its batch is written.
  static func checked(_ item: Item, at place: String) throws -> Item {
    do {
      try LogStore.validate(table: item.table, key: Array((item.id ?? "").utf8), value: item.value)
    } catch {
      throw CommandFailure("\(place): \(error.message)")
    }
    return item
  }

  /// An item from one row of a YTKKeyValueStore table exported by `sqlite3 -json`.
  static func ytkRow(_ row: JSONValue, number: Int, table: String) throws -> Item {
    guard case .object(let fields) = row, case .string(let id)? = fields["id"],
      case .string(let json)? = fields["json"]
    else {
      throw CommandFailure("row \(number): expected {\"id\": string, \"json\": string, ...}")
    }
    let value: JSONValue
    do {
      value = try JSONReader.parse(Array(json.utf8))
    } catch {
      throw CommandFailure("row \(number) (id \"\(id)\"): the json column is not JSON: \(error)")
    }
    var createdTime: Timestamp?
    if let time = fields["createdTime"], !time.isNull {
      guard let stamp = timestamp(time) else {
        throw CommandFailure("row \(number) (id \"\(id)\"): createdTime is not seconds since 1970")
      }
      createdTime = stamp
    }
    return try checked(
      Item(table: table, id: id, value: try JSONWriter.bytes(value), createdTime: createdTime),
      at: "row \(number) (id \"\(id)\")")
  }

  /// Seconds since 1970 given as a JSON number or as text (SQLite keeps YTK's as text).
  static func timestamp(_ value: JSONValue) -> Timestamp? {
    switch value {
    case .int(let seconds): YTKTime.timestamp(seconds: String(seconds))
    case .double(let seconds): YTKTime.timestamp(seconds: String(seconds))
    case .string(let text): YTKTime.timestamp(seconds: text)
    default: nil
    }
  }

  /// Reads all of standard input.
  func readStandardInput() throws -> [UInt8] {
    var lines = LineReader(descriptor: 0)
    return try lines.rest()
  }
}

/// Groups items into atomic batches, creating tables first where needed.
final class BatchLoader {
  let store: KeyValueStore
  private var writer: BatchWriter
  private(set) var items = 0
  // By the names' bytes, as the store tells tables apart: a dump of two tables whose names
  // are equal as `String`s but not in their bytes loads as two.
  private(set) var tables: Set<TableName> = []
  private var existing: Set<TableName> = []

  init(store: KeyValueStore) {
    self.store = store
    writer = BatchWriter(store: store.logStore)
  }

  func createTable(_ name: String) throws {
    let table = TableName(name)
    tables.insert(table)
    if existing.contains(table) { return }
    if try !store.tableExists(name) { writer.createTable(name) }
    existing.insert(table)
  }

  func add(_ item: LoadCommand.Item) throws {
    try createTable(item.table)
    guard let id = item.id else { return }
    // An item without an expiry never expires, whatever the table's default: a dump lists
    // every expiry there was. (A batch's puts get no default anyway.)
    try writer.put(
      item.value, forKey: Array(id.utf8), in: item.table, timestamp: item.createdTime,
      expiresAt: item.expiresTime)
    items += 1
  }

  func flush() throws {
    try writer.flush()
  }
}

/// Reads a file descriptor line by line (split on LF), in large chunks.
struct LineReader {
  let descriptor: Int32
  private var buffer: [UInt8] = []
  private var chunk = [UInt8](repeating: 0, count: 1 << 20)
  private var start = 0
  private var finished = false

  init(descriptor: Int32) { self.descriptor = descriptor }

  /// The next line without its LF, or nil at the end.
  mutating func next() throws -> [UInt8]? {
    while true {
      if let newline = buffer[start...].firstIndex(of: 0x0A) {
        let line = Array(buffer[start..<newline])
        start = newline + 1
        return line
      }
      if finished {
        guard start < buffer.count else { return nil }
        let line = Array(buffer[start...])
        start = buffer.count
        return line
      }
      try fill()
    }
  }

  /// Everything not read yet.
  mutating func rest() throws -> [UInt8] {
    while !finished { try fill() }
    let rest = Array(buffer[start...])
    start = buffer.count
    return rest
  }

  private mutating func fill() throws {
    if start > 0 {
      buffer.removeFirst(start)
      start = 0
    }
    let count = chunk.withUnsafeMutableBytes { bytes -> Int in
      while true {
        let result = read(descriptor, bytes.baseAddress!, bytes.count)
        if result < 0 && errno == EINTR { continue }
        return result
      }
    }
    guard count >= 0 else {
      throw CommandFailure("reading standard input failed: errno \(errno)")
    }
    buffer.append(contentsOf: chunk[..<count])
    if count == 0 { finished = true }
  }
}
