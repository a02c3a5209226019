// Shared by the KeyValueStore*Tests files: temporary stores, error expectations, snapshots
// of a store's whole contents, and running the `ytkkv` executable built with the tests.

import Foundation
@_exported import LogStoreTesting
import Testing
import YTKKeyValueStore

extension TemporaryDirectory {
  /// Where tests keep their store: a directory the store itself creates on first open.
  var storePath: String { appending("test.db") }
}

/// Opens the store at `path` again after closing `store`.
func reopen(_ store: KeyValueStore, options: StoreOptions = StoreOptions()) throws
  -> KeyValueStore
{
  let path = store.path
  try store.close()
  return try KeyValueStore(path: path, options: options)
}

/// Everything a user can read from a store: its table names and every item of every table,
/// with values and created times. Two snapshots are equal when the stores hold exactly the
/// same data.
struct StoreSnapshot: Equatable, CustomStringConvertible {
  var tableNames: [String]
  var items: [String: [KeyValueItem]]

  init(_ store: KeyValueStore) throws {
    tableNames = try store.tableNames()
    items = [:]
    for name in tableNames {
      items[name] = try store.allItems(in: name)
    }
  }

  var description: String {
    tableNames.map { name in
      let rows = (items[name] ?? []).map { item in
        "  \(item.id): \(item.object) @\(item.createdTime.timeIntervalSince1970)"
      }
      return ([name] + rows).joined(separator: "\n")
    }.joined(separator: "\n")
  }
}

/// Expects `body` to throw a ``KeyValueStoreError`` with `code`, whose message (and
/// description) contains each of `fragments`; returns the error for further checks.
@discardableResult
func expectError(
  _ code: KeyValueStoreError.Code, mentioning fragments: [String] = [],
  sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) -> KeyValueStoreError? {
  let error = #expect(throws: KeyValueStoreError.self, sourceLocation: sourceLocation) {
    try body()
  }
  guard let error else { return nil }
  #expect(
    error.code == code, "expected .\(code), got .\(error.code): \(error.message)",
    sourceLocation: sourceLocation)
  #expect(!error.message.isEmpty, "the message is empty", sourceLocation: sourceLocation)
  #expect(error.description == error.message, sourceLocation: sourceLocation)
  for fragment in fragments {
    #expect(
      error.message.contains(fragment),
      "the message \"\(error.message)\" does not mention \"\(fragment)\"",
      sourceLocation: sourceLocation)
  }
  return error
}

/// A string of exactly `count` bytes of UTF-8, of a repeating pattern of letters.
func asciiString(bytes count: Int) -> String {
  let letters = "abcdefghijklmnopqrstuvwxyz"
  return String(repeating: letters, count: count / 26) + letters.prefix(count % 26)
}

/// The double held by `[x]`, the form in which `put(number:)` stores a number.
func wrappedDouble(_ value: JSONValue?) -> Double? {
  guard case .array(let elements)? = value, elements.count == 1,
    case .double(let double) = elements[0]
  else { return nil }
  return double
}

/// A small, fast, seeded random number generator (SplitMix64), so that "random" workloads
/// are the same on every run.
struct SplitMix64: RandomNumberGenerator {
  private var state: UInt64

  init(seed: UInt64) { state = seed }

  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

  /// A number in `0..<bound`.
  mutating func next(below bound: Int) -> Int {
    Int(next() % UInt64(bound))
  }
}

// MARK: - Threads

/// A value shared between threads, behind a lock. (`NSLock` rather than `Mutex`: the thread
/// sanitizer understands pthread mutexes, not the futex behind `Mutex` on Linux.)
final class Locked<Value: Sendable>: @unchecked Sendable {
  private let lock = NSLock()
  private var stored: Value

  init(_ value: Value) { stored = value }

  func withLock<R: Sendable>(_ body: (inout Value) -> R) -> R {
    lock.withLock { body(&stored) }
  }

  var value: Value { withLock { $0 } }
}

/// A counter shared between threads.
final class SharedCounter: Sendable {
  private let count = Locked(0)

  func increment() { count.withLock { $0 += 1 } }

  var value: Int { count.value }
}

// MARK: - The ytkkv executable

/// The `ytkkv` executable built with this test bundle, and a way to run it.
enum YtkkvTool {
  struct Result {
    var status: Int32
    var standardOutput: String
    var standardError: String
  }

  /// Where `ytkkv` is.
  static func executablePath() -> String? { builtExecutable(named: "ytkkv")?.path }

  /// Runs `ytkkv` with `arguments` and waits for it to exit. Its output goes through files
  /// in `directory`, so a chatty child can never block on a full pipe.
  /// `input`, when given, is its standard input.
  static func run(
    _ arguments: [String], scratch directory: TemporaryDirectory, input: String? = nil
  ) throws -> Result {
    let executable = try #require(
      executablePath(), "the ytkkv executable was not found next to the test bundle")
    let name = UUID().uuidString
    let outputPath = directory.appending("\(name).stdout")
    let errorPath = directory.appending("\(name).stderr")
    _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
    _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
    let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
    let error = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
    defer {
      try? output.close()
      try? error.close()
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let input {
      let inputPath = directory.appending("\(name).stdin")
      try input.write(toFile: inputPath, atomically: true, encoding: .utf8)
      process.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: inputPath))
    } else {
      process.standardInput = FileHandle.nullDevice
    }
    process.standardOutput = output
    process.standardError = error
    try process.run()
    process.waitUntilExit()
    return Result(
      status: process.terminationStatus,
      standardOutput: try String(contentsOfFile: outputPath, encoding: .utf8),
      standardError: try String(contentsOfFile: errorPath, encoding: .utf8))
  }
}
