import Foundation

/// Issue 31's large values: 64 values of 1 MiB or 4 MiB (8 with `--quick`), incompressible
/// (random bytes, a different value per key), as an image or document cache stores them. Each
/// row is milliseconds per value, put, get, or rewrite-then-compact.
enum LargeValues {
  static let sizes = [1 << 20, 4 << 20]

  static func key(_ index: Int) -> [UInt8] { Array("blob_\(index)".utf8) }

  /// Value `index` of size `size`, round `round` (a rewrite gives every key new bytes).
  static func value(_ index: Int, size: Int, round: Int) -> [UInt8] {
    var generator = SplitMix(state: UInt64(index) &* 0x1_0000 &+ UInt64(round) &+ UInt64(size))
    var bytes = [UInt8](repeating: 0, count: size)
    bytes.withUnsafeMutableBytes { raw in
      let words = raw.bindMemory(to: UInt64.self)
      for index in words.indices { words[index] = generator.next() }
    }
    return bytes
  }

  /// A store of `engine` holding `count` values of `size`, closed.
  static func store(_ engine: EngineKind, size: Int, count: Int) throws -> Scratch {
    let scratch = Scratch("large-\(size >> 20)m")
    let store = try engine.make(scratch.path, false)
    for index in 0..<count { try store.put(key(index), value(index, size: size, round: 0)) }
    try store.close()
    return scratch
  }

  static func label(_ size: Int) -> String { "\(size >> 20) MiB" }
}

private let largeValueEngines: [EngineKind] = [.logStore, .levelDB, .rocksDB, .lmdb]

extension EngineKind {
  /// Gets of large values are mostly the check of the value's checksum, which this store
  /// makes on every read and LevelDB by default on none: these two compare the two stores
  /// each way (RocksDB checks by default, with the processor's CRC-32C instruction).
  static let logStoreUnchecked = EngineKind(
    name: "logstore-unchecked",
    summary: "this store, reads not checked (verifyChecksumsOnRead: false)",
    make: {
      try LogStoreEngine(
        directory: $0, durable: $1, compaction: .automatic, verifyChecksumsOnRead: false)
    })
  static let levelDBChecked = EngineKind(
    name: "leveldb-checked", summary: "LevelDB, every read checked (verify_checksums)",
    make: {
      try LevelDBEngine(directory: $0, durable: $1, compression: true, verifyChecksums: true)
    })
}

let largeValueWorkloads: [Workload] = LargeValues.sizes.flatMap { size -> [Workload] in
  let suffix = "\(size >> 20)m"
  let label = LargeValues.label(size)
  return [
    Workload(
      name: "large-put-\(suffix)",
      title: { "put of a \(label) value (\($0.largeValues), ms each)" },
      unit: .milliseconds, engines: largeValueEngines,
      measure: { engine, _, configuration in
        let values = (0..<configuration.largeValues).map {
          LargeValues.value($0, size: size, round: 0)
        }
        let scratch = Scratch("large-put")
        defer { scratch.clean() }
        let store = try engine.make(scratch.path, false)
        defer { try? store.close() }
        let seconds = try timed {
          for (index, value) in values.enumerated() {
            try store.put(LargeValues.key(index), value)
          }
        }
        return seconds * 1000 / Double(values.count)
      }),
    Workload(
      name: "large-get-\(suffix)",
      title: { "get of a \(label) value (\($0.largeValues) × 4, ms each)" },
      unit: .milliseconds, engines: largeValueEngines + [.logStoreUnchecked, .levelDBChecked],
      prepare: { engine, configuration in
        try LargeValues.store(engine, size: size, count: configuration.largeValues)
      },
      measure: { engine, scratch, configuration in
        let count = configuration.largeValues
        let order = shuffled(Array(0..<count * 4), seed: 31).map { LargeValues.key($0 % count) }
        return try withStore(engine, scratch!) { store in
          var bytes = 0
          let seconds = try timed {
            for key in order { bytes += try store.get(key) ?? 0 }
          }
          guard bytes == order.count * size else {
            throw BenchmarkError("\(engine) read \(bytes) bytes")
          }
          return seconds * 1000 / Double(order.count)
        }
      }),
    Workload(
      name: "large-compact-\(suffix)",
      title: { _ in "rewrite of every \(label) value, then a compaction (ms per value)" },
      unit: .milliseconds, engines: largeValueEngines,
      prepare: { engine, configuration in
        try LargeValues.store(engine, size: size, count: configuration.largeValues)
      },
      measure: { engine, scratch, configuration in
        let values = (0..<configuration.largeValues).map {
          LargeValues.value($0, size: size, round: 1)
        }
        // Each run rewrites a copy, so that every run starts from the same store.
        let copy = try scratch!.copy("large-compact")
        defer { copy.clean() }
        return try withStore(engine, copy) { store in
          let seconds = try timed {
            for (index, value) in values.enumerated() {
              try store.put(LargeValues.key(index), value)
            }
            try store.compact()
          }
          return seconds * 1000 / Double(values.count)
        }
      }),
  ]
}
