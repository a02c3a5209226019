import Foundation
@testable import LogStore

/// A fresh directory under the system's temporary directory, removed when released.
final class TemporaryDirectory {
  let path: String

  init(_ name: String = "logstore") {
    let template = NSTemporaryDirectory() + "/\(name)-XXXXXX"
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
