import Foundation

/// What a run of the built `ytkkv` printed and returned.
struct ToolResult {
  var status: Int32
  var standardOutput: String
  var standardError: String
}

/// Runs the `ytkkv` executable built beside this test bundle.
enum Tool {
  /// The built binary: the test bundle and the executables share a build directory.
  static let executable: URL = {
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
      directory = URL(fileURLWithPath: exe).deletingLastPathComponent()
    }
    // On macOS the bundle is a directory: …/debug/X.xctest/Contents/MacOS/X.
    for candidate in [directory, directory.appendingPathComponent("../../..").standardized] {
      let binary = candidate.appendingPathComponent("ytkkv")
      if FileManager.default.isExecutableFile(atPath: binary.path) { return binary }
    }
    fatalError("the ytkkv executable was not found near \(directory.path)")
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
      status: process.terminationStatus,
      standardOutput: String(decoding: outputData, as: UTF8.self),
      standardError: String(decoding: errorData, as: UTF8.self))
  }
}

/// A fresh directory under the system's temporary directory, removed when released.
final class ScratchDirectory {
  let path: String

  init() {
    path = NSTemporaryDirectory() + "ytkkv-tests-" + UUID().uuidString
    try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  }

  func appending(_ name: String) -> String { path + "/" + name }

  deinit { try? FileManager.default.removeItem(atPath: path) }
}
