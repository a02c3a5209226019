import YTKKeyValueStore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// `ytkkv demo [PATH]`: YTKKeyValueStore's own example, run against a real store.
struct DemoCommand: Command {
  static let name = "demo"
  static let abstract = "Run the YTKKeyValueStore example on a store and show each step."
  static let usage = "ytkkv demo [PATH]"
  static let discussion = """
    Creates the table user_table, puts the user {"id": 1, "name": "tangqiao", "age": 30}
    under id "1", reads it back, shows its item with its created time, adds two more items
    whose ids start with "user_", deletes them by prefix and counts what is left.

    PATH is the store's directory; it is created if missing. Without PATH the demo uses a
    fresh directory under the system's temporary directory and leaves it there, so that
    other commands can look at it.

    Example:
      ytkkv demo /tmp/test.db && ytkkv dump /tmp/test.db
    """

  let path: String?

  init(_ arguments: ParsedArguments) throws(UsageError) {
    path = try arguments.positional(0, 1).first
  }

  func run(_ output: Output) throws -> ExitStatus {
    let path = try self.path ?? Self.temporaryStorePath()
    let store = try KeyValueStore(path: path)
    output.print("Opened the store at \(path)")

    let tableName = "user_table"
    try store.createTable(tableName)
    output.print("createTable(\"\(tableName)\")")

    let key = "1"
    let user: JSONValue = ["id": 1, "name": "tangqiao", "age": 30]
    try store.put(user, id: key, into: tableName)
    output.print("put(\(user), id: \"\(key)\", into: \"\(tableName)\")")

    guard let queryUser = try store.object(id: key, from: tableName) else {
      throw CommandFailure("the user just put is missing")
    }
    output.print("query data result: \(queryUser)")

    if let item = try store.item(id: key, from: tableName) {
      let created = Timestamp(
        microsecondsSince1970: Int64((item.createdTime.timeIntervalSince1970 * 1e6).rounded()))
      output.print(
        "item(id: \"\(item.id)\"): object \(item.object), createdTime \(Formatting.iso8601(created))"
      )
    }

    try store.put(string: "a plain string", id: "user_name", into: tableName)
    try store.put(number: 98.5, id: "user_score", into: tableName)
    output.print(
      "put(string: \"a plain string\", id: \"user_name\"), put(number: 98.5, id: \"user_score\")")
    output.print("count(in: \"\(tableName)\") = \(try store.count(in: tableName))")

    try store.delete(prefix: "user_", from: tableName)
    output.print("delete(prefix: \"user_\", from: \"\(tableName)\")")
    output.print("count(in: \"\(tableName)\") = \(try store.count(in: tableName))")

    try store.close()
    output.print("Closed. Look inside with: ytkkv dump \(path)")
    return .success
  }

  /// A new directory for the demo's store, under `$TMPDIR` or `/tmp`.
  static func temporaryStorePath() throws -> String {
    var base = "/tmp"
    if let tmp = getenv("TMPDIR") { base = String(cString: tmp) }
    var template = Array((base + "/ytkkv-demo-XXXXXX").utf8CString)
    let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    guard made != nil else {
      throw CommandFailure("could not create a temporary directory in \(base)")
    }
    let directory = template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
    return String(decoding: directory, as: UTF8.self) + "/test.db"
  }
}
