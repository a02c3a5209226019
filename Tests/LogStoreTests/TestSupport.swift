import Foundation

@testable import LogStore

/// A fresh directory under the system's temporary directory, removed when released.
final class TemporaryDirectory {
  let path: String

  init(_ name: String = "logstore") {
    var base = NSTemporaryDirectory()
    while base.hasSuffix("/") && base.count > 1 { base.removeLast() }
    let template = base + "/\(name)-XXXXXX"
    var bytes = Array(template.utf8CString)
    let created = bytes.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    precondition(created != nil, "mkdtemp failed")
    path = String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// A path inside the directory.
  func appending(_ name: String) -> String { path + "/" + name }

  deinit { try? FileManager.default.removeItem(atPath: path) }
}

extension String {
  var bytes: [UInt8] { Array(utf8) }
}

/// The segment files of a store, in order.
func segmentFiles(in directory: String) throws -> [String] {
  try FileManager.default.contentsOfDirectory(atPath: directory)
    .filter { $0.hasSuffix(".log") }.sorted().map { directory + "/" + $0 }
}

func fileBytes(_ path: String) throws -> [UInt8] {
  Array(try Data(contentsOf: URL(fileURLWithPath: path)))
}

func writeFile(_ path: String, _ bytes: [UInt8]) throws {
  try Data(bytes).write(to: URL(fileURLWithPath: path))
}

/// Copies every file of directory `source` into `destination` (created if missing).
func copyDirectory(_ source: String, to destination: String) throws {
  let manager = FileManager.default
  try? manager.removeItem(atPath: destination)
  try manager.createDirectory(atPath: destination, withIntermediateDirectories: true)
  for name in try manager.contentsOfDirectory(atPath: source) {
    try manager.copyItem(atPath: source + "/" + name, toPath: destination + "/" + name)
  }
}

extension LogStore {
  /// Every table with its keys and values, as strings, for comparing whole stores.
  func snapshot() throws -> [String: [String: String]] {
    var result: [String: [String: String]] = [:]
    for table in try tableNames() {
      var items: [String: String] = [:]
      for entry in try entries(in: table) {
        items[String(decoding: entry.key, as: UTF8.self)] = String(
          decoding: entry.value, as: UTF8.self)
      }
      result[table] = items
    }
    return result
  }
}

/// An executable built beside this test bundle (the test target depends on it).
func builtExecutable(_ name: String) -> URL {
  var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
  if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
    directory = URL(fileURLWithPath: exe).deletingLastPathComponent()
  }
  for candidate in [directory, directory.appendingPathComponent("../../..").standardized] {
    let binary = candidate.appendingPathComponent(name)
    if FileManager.default.isExecutableFile(atPath: binary.path) { return binary }
  }
  fatalError("the executable \(name) was not found near \(directory.path)")
}
