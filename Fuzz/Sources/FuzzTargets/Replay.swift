#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Runs a fuzz target on files, the way libFuzzer would run it on one input: for builds
/// without the fuzzer (where the executables replay corpora) and for the regression tests.
package enum FuzzReplay {
  /// Runs `target` on every file named in `arguments` (directories: every file in them);
  /// returns how many inputs ran.
  @discardableResult
  package static func run(_ paths: [String], _ target: (UnsafeRawBufferPointer) -> Void) -> Int {
    var count = 0
    for path in paths {
      for file in files(at: path) {
        guard let bytes = readFile(file) else { continue }
        bytes.withUnsafeBytes { target($0) }
        count += 1
      }
    }
    return count
  }

  /// The regular files at `path`: the file itself, or the files in a directory, sorted.
  package static func files(at path: String) -> [String] {
    guard let directory = opendir(path) else { return [path] }
    defer { closedir(directory) }
    var names: [String] = []
    while let entry = readdir(directory) {
      // The name's array, not the pointer to it: 256 bytes on Linux, 1,024 on Darwin.
      let capacity = MemoryLayout.size(ofValue: entry.pointee.d_name)
      let name = withUnsafePointer(to: &entry.pointee.d_name) { tuple in
        tuple.withMemoryRebound(to: CChar.self, capacity: capacity) { String(cString: $0) }
      }
      if !name.hasPrefix(".") { names.append(path + "/" + name) }
    }
    return names.sorted()
  }

  static func readFile(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
      let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
      if count <= 0 { break }
      bytes += chunk[..<count]
    }
    return bytes
  }

  /// The entry point of the fuzz executable built without the fuzzer:
  /// `fuzz-ytkkv TARGET FILE_OR_DIRECTORY...` replays inputs through a target.
  package static func main() {
    let arguments = Array(CommandLine.arguments.dropFirst())
    guard let name = arguments.first, let target = FuzzTarget(rawValue: name), arguments.count > 1
    else {
      let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")
      print("usage: fuzz-ytkkv (\(names)) FILE_OR_DIRECTORY...")
      print("(built without -sanitize=fuzzer this replays inputs; Fuzz/run.sh fuzzes)")
      exit(64)
    }
    print("ran \(run(Array(arguments.dropFirst()), target.run)) inputs through \(name)")
  }
}
