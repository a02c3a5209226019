import Foundation
import LogStore

#if canImport(Glibc)
  import Glibc
#endif

/// Issue 31's compaction rows: a store of N records (keys inserted in a shuffled order, each
/// value different, as real JSON is), half of them overwritten with new values, then one full
/// compaction: this store's `compact()` against LevelDB's and RocksDB's `CompactRange` over
/// the whole key range, with their compression on (the default) and off, and against the file
/// system's own limit, writing the same bytes sequentially and syncing them.
extension EngineKind {
  static let levelDBRaw = EngineKind(
    name: "leveldb-raw", summary: "LevelDB, default options but no compression",
    make: { try LevelDBEngine(directory: $0, durable: $1, compression: false) })
  static let rocksDBRaw = EngineKind(
    name: "rocksdb-raw", summary: "RocksDB, default options but no compression",
    make: { try RocksDBEngine(directory: $0, durable: $1, compression: false) })
  /// This store with compaction left to `compact()`, so that the prepared store keeps its
  /// garbage until the measurement.
  static let logStoreManual = EngineKind(
    name: "logstore", summary: "this store, through LogStore, compaction only when asked",
    make: { try LogStoreEngine(directory: $0, durable: $1, compaction: .manual) })
  /// The same in `.manyProcesses` use, where a compaction's outputs get hint files and no index
  /// file: its swap relocates every key copied.
  static let logStoreSharedManual = EngineKind(
    name: "logstore-shared",
    summary:
      "this store in .manyProcesses use, compaction only when asked (its swap relocates every key)",
    make: {
      try LogStoreEngine(directory: $0, durable: $1, compaction: .manual, sharing: .manyProcesses)
    })
  static let writeAndSync = EngineKind(
    name: "write+fsync",
    summary: "the limit: the bytes this store's compaction wrote, written in 1 MiB steps, synced",
    make: { _, _ in throw BenchmarkError("write+fsync runs only the compaction rows") })
}

extension Dataset {
  /// A value of the same shape and length as ``value`` that differs for each `index` and
  /// `round`: its id and its bio vary.
  static func variedValue(_ index: Int, round: Int) -> [UInt8] {
    var generator = SplitMix(state: UInt64(index) &* 31 &+ UInt64(round))
    var bytes = value
    // "12345" at 6..<11 and "hello world" at 91..<102: five decimal digits, eleven hex ones.
    var id = index % 100_000
    for position in (6..<11).reversed() {
      bytes[position] = UInt8(ascii: "0") + UInt8(id % 10)
      id /= 10
    }
    var bio = generator.next()
    for position in 91..<102 {
      bytes[position] = Array("0123456789abcdef".utf8)[Int(bio & 15)]
      bio >>= 4
    }
    return bytes
  }
}

/// This store's compaction output in MB per second, one entry per run, by workload.
nonisolated(unsafe) var compactionWriteRates: [String: [Double]] = [:]
/// The file system's sequential write-and-sync rate (MB/s) for the same bytes, by workload.
nonisolated(unsafe) var sequentialWriteRates: [String: [Double]] = [:]

private func compactionPeerWorkload(
  name: String, count: KeyPath<Configuration, Int> & Sendable
) -> Workload {
  Workload(
    name: name,
    title: {
      "compaction of \(thousands($0[keyPath: count])) records after 50% were overwritten"
    },
    unit: .milliseconds,
    engines: [
      .logStoreManual, .logStoreSharedManual, .levelDB, .levelDBRaw, .rocksDB, .rocksDBRaw,
      .writeAndSync,
    ],
    prepare: { engine, configuration in
      let scratch = Scratch(name)
      let records = configuration[keyPath: count]
      let order = shuffled(Array(0..<records), seed: 310)
      // The limit writes as many bytes as this store's compaction leaves: found by one.
      let store = try (engine == .writeAndSync ? .logStoreManual : engine).make(scratch.path, false)
      for index in order { try store.put(Dataset.key(index), Dataset.variedValue(index, round: 0)) }
      for index in order where index % 2 == 0 {
        try store.put(Dataset.key(index), Dataset.variedValue(index, round: 1))
      }
      if engine == .writeAndSync, let ours = store as? LogStoreEngine {
        try ours.compact()
        compactionBytes[name] = try ours.store.statistics().diskBytes
      }
      try store.close()
      return scratch
    },
    measure: { engine, scratch, configuration in
      if engine == .writeAndSync {
        let bytes = compactionBytes[name] ?? 0
        let milliseconds = try sequentialWriteAndSync(bytes: bytes, in: scratch!.path) * 1000
        sequentialWriteRates[name, default: []].append(Double(bytes) / milliseconds / 1000)
        return milliseconds
      }
      let copy = try scratch!.copy(name)
      defer { copy.clean() }
      return try withStore(engine, copy) { store in
        let seconds = try timed { try store.compact() }
        if let ours = store as? LogStoreEngine {
          let statistics = try ours.store.statistics()
          guard statistics.liveItems == configuration[keyPath: count] else {
            throw BenchmarkError("compaction left \(statistics.liveItems) items")
          }
          if engine == .logStoreManual {
            compactionWriteRates[name, default: []].append(
              Double(statistics.diskBytes) / seconds / 1_000_000)
          }
        }
        return seconds * 1000
      }
    },
    note:
      "Keys `user_%08d` inserted in a shuffled order, values of 104 bytes that differ per record, every other key overwritten; the time of `compact()` (this store, which also writes an index file) or `CompactRange` over all keys. `logstore-shared` is this store in `.manyProcesses` use, whose compaction writes hint files and no index file, so that its swap relocates every key copied. `leveldb-raw` and `rocksdb-raw` run without compression. `write+fsync` writes as many bytes as this store's compaction left on disk, in 1 MiB `write(2)` calls, then `fsync`."
  )
}

/// The disk bytes of this store after a compaction, by workload.
nonisolated(unsafe) var compactionBytes: [String: Int] = [:]

/// Writes `bytes` bytes to a new file in `directory` in 1 MiB steps, syncs it, and returns the
/// seconds it took.
func sequentialWriteAndSync(bytes: Int, in directory: String) throws -> Double {
  let path = directory + "/sequential"
  defer { unlink(path) }
  let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
  guard fd >= 0 else { throw BenchmarkError("cannot create \(path): errno \(errno)") }
  defer { close(fd) }
  let chunk = [UInt8](repeating: 0x5A, count: 1 << 20)
  return try timed {
    var left = bytes
    while left > 0 {
      let length = min(left, chunk.count)
      let written = chunk.withUnsafeBytes { write(fd, $0.baseAddress, length) }
      guard written == length else { throw BenchmarkError("write failed: errno \(errno)") }
      left -= length
    }
    guard fsync(fd) == 0 else { throw BenchmarkError("fsync failed: errno \(errno)") }
  }
}

let compactionPeerWorkloads = [
  compactionPeerWorkload(name: "compact", count: \.keys),
  compactionPeerWorkload(name: "compact-large", count: \.largeKeys),
]

/// Issue 31's ordered scan: every item of a store whose keys were inserted in a shuffled order
/// and then compacted (LevelDB's and RocksDB's `CompactRange`), read in key order, each value
/// copied; microseconds per item.
let compactedScanWorkload = Workload(
  name: "scan-compacted",
  title: {
    "ordered scan of \(thousands($0.largeKeys)) items inserted shuffled, after a compaction"
  },
  unit: .microsecondsPerItem,
  engines: [.logStore, .levelDB, .rocksDB, .lmdb, .logStoreUnchecked, .levelDBChecked],
  prepare: { engine, configuration in
    let scratch = Scratch("scan-compacted")
    let store = try engine.make(scratch.path, false)
    for index in shuffled(Array(0..<configuration.largeKeys), seed: 311) {
      try store.put(Dataset.key(index), Dataset.variedValue(index, round: 0))
    }
    try store.compact()
    try store.close()
    return scratch
  },
  measure: { engine, scratch, configuration in
    try withStore(engine, scratch!) { store in
      var count = 0
      let seconds = try timed { count = try store.scan() }
      guard count == configuration.largeKeys else {
        throw BenchmarkError("\(engine) read \(count) items")
      }
      return seconds * 1_000_000 / Double(count)
    }
  }
)
