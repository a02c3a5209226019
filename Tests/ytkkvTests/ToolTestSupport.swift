import Foundation
@_exported import LogStoreTesting
import YTKKeyValueStore

/// What a run of the built `ytkkv` printed and returned.
struct ToolResult {
  /// The exit status, or the number of the signal that ended the process.
  var status: Int32
  /// Whether the process exited or was killed by a signal.
  var reason: Process.TerminationReason = .exit
  var standardOutput: String
  var standardError: String
}

/// Runs the `ytkkv` executable built beside this test bundle.
enum Tool {
  /// The built binary.
  static let executable: URL = {
    guard let url = builtExecutable(named: "ytkkv") else {
      fatalError("the ytkkv executable was not found near the test bundle")
    }
    return url
  }()

  /// Runs `ytkkv arguments…` with `input` on standard input.
  @discardableResult
  static func run(_ arguments: [String], input: Data? = nil, environment: [String: String]? = nil)
    throws -> ToolResult
  {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if let environment { process.environment = environment }
    let output = Pipe()
    let error = Pipe()
    process.standardOutput = output
    process.standardError = error
    let inputPipe = Pipe()
    process.standardInput = inputPipe
    try process.run()
    if let input { inputPipe.fileHandleForWriting.write(input) }
    try inputPipe.fileHandleForWriting.close()
    // Read both pipes to the end before waiting, so a large output cannot block the child.
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    let errorData = error.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ToolResult(
      status: process.terminationStatus, reason: process.terminationReason,
      standardOutput: String(decoding: outputData, as: UTF8.self),
      standardError: String(decoding: errorData, as: UTF8.self))
  }
}

extension ToolResult {
  /// Standard output as lines, without the newline that ends the last one.
  var outputLines: [String] { Self.lines(standardOutput) }

  /// Standard error as lines, without the newline that ends the last one.
  var errorLines: [String] { Self.lines(standardError) }

  private static func lines(_ text: String) -> [String] {
    var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    if lines.last == "" { lines.removeLast() }
    return lines
  }
}

/// A failure of a test helper that has no `#expect` of its own to report it.
struct TestSetupError: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}

/// Reads and edits a store's files behind the engine's back, to play a crash or damage.
///
/// Offsets follow docs/FORMAT.md: a record is a 28-byte header, then the table name, the
/// key and the value, so a record starts `28 + table + key` bytes before its value.
enum StoreFiles {
  static let recordHeaderSize = 28

  /// The names of the store's segment files (`NNNNNN.log`), in order.
  static func segments(of store: String) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: store)
      .filter { $0.hasSuffix(".log") }
      .sorted()
  }

  /// The names in `directory` that start with `prefix`, sorted.
  static func names(in directory: String, startingWith prefix: String) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: directory)
      .filter { $0.hasPrefix(prefix) }
      .sorted()
  }

  static func exists(_ path: String) -> Bool {
    FileManager.default.fileExists(atPath: path)
  }

  static func contents(_ path: String) throws -> [UInt8] { try fileBytes(path) }

  static func write(_ bytes: [UInt8], to path: String) throws { try writeFile(path, bytes) }

  /// Where `text` first occurs in the file.
  static func offset(of text: String, in path: String) throws -> Int {
    let bytes = try contents(path)
    let needle = Array(text.utf8)
    guard needle.count <= bytes.count else {
      throw TestSetupError("\(text) is not in \(path)")
    }
    for start in 0...(bytes.count - needle.count)
    where bytes[start..<start + needle.count].elementsEqual(needle) {
      return start
    }
    throw TestSetupError("\(text) is not in \(path)")
  }
}

/// A command's small store, made through the library: each suite says once what its store
/// holds, and each test makes a fresh one in its own scratch directory.
struct StoreFixture: Sendable {
  /// The options the store is made with; a writer that must find the store as it was made
  /// opens it with these too.
  let options: StoreOptions
  private let fill: @Sendable (KeyValueStore) throws -> Void

  init(
    options: StoreOptions = StoreOptions(),
    _ fill: @escaping @Sendable (KeyValueStore) throws -> Void
  ) {
    self.options = options
    self.fill = fill
  }

  /// Makes the store at `path` and closes it, so that the tool can open it.
  func make(at path: String) throws {
    let store = try KeyValueStore(path: path, options: options)
    try fill(store)
    try store.close()
  }

  /// Makes the store as `name` in `scratch` and returns its path.
  func make(in scratch: TemporaryDirectory, named name: String = "test.db") throws -> String {
    let path = scratch.appending(name)
    try make(at: path)
    return path
  }
}

/// Runs `body` while this process holds the store at `path` open for writing, as another
/// program using the library would; a `ytkkv` run inside `body` finds the store locked.
/// The store is closed before this returns, so checks after the call see what it holds.
@discardableResult
func withStoreOpenForWriting<Result>(
  at path: String, options: StoreOptions = StoreOptions(),
  _ body: (KeyValueStore) throws -> Result
) throws -> Result {
  let writer = try KeyValueStore(path: path, options: options)
  let result: Result
  do {
    result = try body(writer)
  } catch {
    try? writer.close()
    throw error
  }
  try writer.close()
  return result
}

/// A small closed store made the way docs/CLI.md makes its damaged example: five items
/// `k1`…`k5` in table `t`, each written with `ytkkv put PATH t kN VALUE --create`, so its one
/// segment holds ten records (a table creation before each put).
struct FiveItemStore {
  static let table = "t"
  static let ids = ["k1", "k2", "k3", "k4", "k5"]

  let path: String

  /// The stored (canonical) JSON of item `n`: unique text, so it can be found on disk.
  static func value(_ number: Int) -> String {
    #"{"n":\#(number),"s":"value number \#(number)"}"#
  }

  /// Five `ytkkv put --create` runs: one record creates the table (the later creations of a
  /// table that exists write nothing), then one put each.
  init(at path: String) throws {
    self.path = path
    for (index, id) in Self.ids.enumerated() {
      let put = try Tool.run(["put", path, Self.table, id, Self.value(index + 1), "--create"])
      guard put.status == 0 else {
        throw TestSetupError("ytkkv put \(id) failed: \(put.standardError)")
      }
    }
  }

  /// The name of the store's only segment file.
  func segment() throws -> String {
    let segments = try StoreFiles.segments(of: path)
    guard segments.count == 1 else {
      throw TestSetupError("expected one segment in \(path), found \(segments)")
    }
    return segments[0]
  }

  /// Where item `n`'s put record starts in the segment, and its length in bytes.
  func record(_ number: Int) throws -> (offset: Int, length: Int) {
    let id = Self.ids[number - 1]
    let value = try StoreFiles.offset(of: Self.value(number), in: path + "/" + segment())
    let keyAndTable = Self.table.utf8.count + id.utf8.count
    return (
      value - StoreFiles.recordHeaderSize - keyAndTable,
      StoreFiles.recordHeaderSize + keyAndTable + Self.value(number).utf8.count
    )
  }

  /// Flips one bit in the middle of item `n`'s value, so that its record fails its checksum;
  /// returns the damaged record's offset and length.
  @discardableResult
  func damageValue(of number: Int) throws -> (offset: Int, length: Int) {
    let file = path + "/" + (try segment())
    let record = try record(number)
    var bytes = try StoreFiles.contents(file)
    bytes[record.offset + record.length - 5] ^= 0x01
    try StoreFiles.write(bytes, to: file)
    return record
  }

  /// Cuts the last record (item 5's put) in half, as a crash in the middle of the write
  /// would; returns where the torn record starts and the bytes left of it.
  func tearLastRecord() throws -> (offset: Int, remaining: Int) {
    let file = path + "/" + (try segment())
    let record = try record(5)
    let bytes = try StoreFiles.contents(file)
    // After it, the sync mark its `ytkkv put` wrote at close (a 36-byte record of kind 8,
    // docs/FORMAT.md), then the zeros of the space reserved past the end (segments are never
    // cut shorter).
    let end = record.offset + record.length
    let markLength = 36
    guard end + markLength <= bytes.count, bytes[end + 4] == 8,
      bytes[(end + markLength)...].allSatisfy({ $0 == 0 })
    else {
      throw TestSetupError("item 5's record and its sync mark do not end the segment")
    }
    let remaining = record.length / 2
    try StoreFiles.write(Array(bytes[..<(record.offset + remaining)]), to: file)
    return (record.offset, remaining)
  }
}

/// Created times as whole microseconds since 1970, the unit the store keeps them in.
enum Microseconds {
  /// Reads decimal seconds such as `1448000061.25` exactly; nil for other text (a sign,
  /// an exponent, or more than six decimals).
  static func fromSeconds(_ text: String) -> Int64? {
    let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
    guard let whole = Int64(parts[0]), parts[0].allSatisfy(\.isASCII),
      parts[0].allSatisfy(\.isNumber)
    else { return nil }
    var fraction: Int64 = 0
    if parts.count == 2 {
      let digits = parts[1]
      guard (1...6).contains(digits.count), digits.allSatisfy({ $0.isASCII && $0.isNumber })
      else { return nil }
      fraction = Int64(digits + String(repeating: "0", count: 6 - digits.count))!
    }
    return whole * 1_000_000 + fraction
  }

  /// A `Date` from the store (`KeyValueItem.createdTime`), rounded to the microsecond.
  static func of(_ date: Date) -> Int64 {
    Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
  }
}
