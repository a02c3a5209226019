import Foundation

/// A fresh directory under the system's temporary directory, removed with everything in it
/// when the last reference goes away.
package final class TemporaryDirectory {
  package let path: String

  package init(_ name: String = "ytkkv") {
    path =
      URL(fileURLWithPath: NSTemporaryDirectory())
      .appendingPathComponent("\(name)-\(UUID().uuidString)").path
    try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  }

  /// A path inside the directory (not created).
  package func appending(_ name: String) -> String { path + "/" + name }

  deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// Runs `body` with the environment variable `name` set to `value`, and puts the variable
/// back as it was (set or not) after. The environment is the process's, and the test targets
/// share one process on Linux: calls run one at a time, body included, so that two tests
/// (of any suites) never see each other's value or restore out of turn. A test that reads
/// `name` without this must not run meanwhile.
package func withEnvironment<R>(_ name: String, setTo value: String, _ body: () throws -> R)
  rethrows -> R
{
  environmentLock.lock()
  defer { environmentLock.unlock() }
  let saved = ProcessInfo.processInfo.environment[name]
  setenv(name, value, 1)
  defer {
    if let saved { setenv(name, saved, 1) } else { unsetenv(name) }
  }
  return try body()
}

/// Held by ``withEnvironment(_:setTo:_:)`` for the whole of each call.
private let environmentLock = NSLock()

/// An executable of this package, built beside the running test bundle (a test target that
/// depends on an executable target gets it built): next to the test executable, else in the
/// package's usual build directories. Nil if it is nowhere.
package func builtExecutable(named name: String) -> URL? {
  var directories: [String] = []
  #if os(Linux)
    if let executable = try? FileManager.default.destinationOfSymbolicLink(
      atPath: "/proc/self/exe")
    {
      directories.append((executable as NSString).deletingLastPathComponent)
    }
  #endif
  let argument0 = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
  directories.append(argument0.deletingLastPathComponent().path)
  for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
    // On Darwin the test bundle is `<build>/<Name>.xctest`, beside the products.
    directories.append((bundle.bundlePath as NSString).deletingLastPathComponent)
  }
  directories.append(Bundle.main.bundleURL.path)
  let packageRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
  for configuration in ["debug", "release"] {
    directories.append(packageRoot.appendingPathComponent(".build/\(configuration)").path)
    for triple in [
      "x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu", "arm64-apple-macosx",
      "x86_64-apple-macosx",
    ] {
      directories.append(
        packageRoot.appendingPathComponent(".build/\(triple)/\(configuration)").path)
    }
  }
  return directories.map { URL(fileURLWithPath: $0 + "/" + name) }.first {
    FileManager.default.isExecutableFile(atPath: $0.path)
  }
}

/// The bytes of the file at `path`.
package func fileBytes(_ path: String) throws -> [UInt8] {
  Array(try Data(contentsOf: URL(fileURLWithPath: path)))
}

/// Writes `bytes` to the file at `path`, created or emptied first, without syncing it. A test
/// reads its files back through the page cache; the sync `Data.write(to:)` makes on Linux, for
/// every damaged copy a suite writes, was most of the damage suite's time on a busy disk.
///
/// With `inPlace`, the bytes go over the start of the existing file, which is not emptied
/// first: an open that has it mapped (the shared state of `.manyProcesses` use) never finds it
/// shorter than its mapping, where a read is a `SIGBUS`, and sees it change as another
/// process's write would change it.
package func writeFile(_ path: String, _ bytes: [UInt8], inPlace: Bool = false) throws {
  func failure() -> POSIXError {
    POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO, userInfo: [NSFilePathErrorKey: path])
  }
  let descriptor = open(path, O_WRONLY | O_CLOEXEC | (inPlace ? 0 : O_CREAT | O_TRUNC), 0o644)
  guard descriptor >= 0 else { throw failure() }
  defer { close(descriptor) }
  var written = 0
  while written < bytes.count {
    let count = bytes.withUnsafeBytes {
      pwrite(descriptor, $0.baseAddress! + written, $0.count - written, off_t(written))
    }
    if count < 0 && errno == EINTR { continue }
    guard count > 0 else { throw failure() }
    written += count
  }
}
