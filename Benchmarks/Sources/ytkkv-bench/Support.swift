import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Monotonic seconds.
func now() -> Double {
  var time = timespec()
  clock_gettime(CLOCK_MONOTONIC, &time)
  return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

/// The seconds `body` takes.
func timed(_ body: () throws -> Void) rethrows -> Double {
  let start = now()
  try body()
  return now() - start
}

/// The workloads' data: keys `user_%08d` and the issue's JSON value (104 bytes; the issue calls
/// it "110-byte", but the text given is 104 bytes long).
enum Dataset {
  static let valueText =
    #"{"id":12345,"name":"tangqiao","age":30,"city":"Beijing","tags":["ios","swift","kv"],"bio":"hello world"}"#
  static let value = Array(valueText.utf8)

  static func key(_ index: Int) -> [UInt8] {
    let digits = String(index)
    return Array(("user_" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits).utf8)
  }

  static func keys(_ count: Int, offset: Int = 0) -> [[UInt8]] {
    (0..<count).map { key($0 + offset) }
  }

  /// Keys that are never stored: the same length and prefix as the stored ones.
  static func missingKeys(_ count: Int) -> [[UInt8]] {
    (0..<count).map { index in
      let digits = String(index)
      return Array(
        ("user_x" + String(repeating: "0", count: max(0, 7 - digits.count)) + digits).utf8)
    }
  }
}

/// A deterministic shuffle, so every engine reads the same random order.
func shuffled<T>(_ items: [T], seed: UInt64) -> [T] {
  var generator = SplitMix(state: seed)
  var result = items
  result.shuffle(using: &generator)
  return result
}

struct SplitMix: RandomNumberGenerator {
  var state: UInt64
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

/// A field of /proc/self/status in bytes (VmRSS, RssAnon, RssFile).
func processStatus(_ field: String) -> Int {
  guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else {
    return 0
  }
  for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
    let number = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first
    return (number.flatMap { Int($0) } ?? 0) * 1024
  }
  return 0
}

/// The bytes of the files under `path`, as allocated on disk (`du`), and as their sizes.
func directorySize(_ path: String) -> (allocated: Int, apparent: Int) {
  var allocated = 0
  var apparent = 0
  let manager = FileManager.default
  guard let enumerator = manager.enumerator(atPath: path) else { return (0, 0) }
  for case let name as String in enumerator {
    var info = stat()
    if stat(path + "/" + name, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG {
      allocated += Int(info.st_blocks) * 512
      apparent += Int(info.st_size)
    }
  }
  return (allocated, apparent)
}

/// A fresh directory for one run, removed by `clean()`.
final class Scratch {
  let path: String

  init(_ label: String) {
    let base = ProcessInfo.processInfo.environment["BENCH_DIR"] ?? NSTemporaryDirectory()
    path = base + "/ytkkv-bench-\(label)-" + UUID().uuidString.prefix(8)
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  }

  func clean() { try? FileManager.default.removeItem(atPath: path) }

  /// A copy of this directory's contents in a new scratch directory.
  func copy(_ label: String) throws -> Scratch {
    let copy = Scratch(label)
    try? FileManager.default.removeItem(atPath: copy.path)
    try FileManager.default.copyItem(atPath: path, toPath: copy.path)
    return copy
  }
}

/// Drops the page cache's copy of nothing: a hint to make runs more alike between engines.
func settle() {
  sync()
  usleep(20_000)
}

/// Runs `body` on `count` new threads at once and waits. (Not `concurrentPerform`: it runs no
/// more iterations at once than there are cores, and writers that wait on a disk need not.)
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
  let group = DispatchGroup()
  for index in 0..<count {
    group.enter()
    let thread = Thread {
      body(index)
      group.leave()
    }
    thread.start()
  }
  group.wait()
}

extension Array where Element: BinaryFloatingPoint {
  var median: Element {
    let sorted = self.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted.count % 2 == 1
      ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
  }
}

/// glibc's `malloc_trim` (in malloc.h, which the Glibc module does not import): returns freed
/// heap to the system, so that memory measurements count only what is in use.
@_silgen_name("malloc_trim")
func mallocTrim(_ pad: Int) -> Int32
