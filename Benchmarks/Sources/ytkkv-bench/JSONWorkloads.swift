import CLevelDB
import Foundation
import LogStore
import YTKKeyValueStore

/// Issue 14's rows: the JSON API against the engine underneath it, and the Codable API against
/// Foundation's coders alone. Each workload pairs the API call (first engine, "ours") with its
/// baseline on the same data in the same run, so the ratio column is the target's ratio.
extension EngineKind {
  static let ytkObject = EngineKind(
    name: "ytk-object", summary: "KeyValueStore.object(id:) / put(_:id:into:) of a JSONValue",
    make: { _, _ in throw BenchmarkError("ytk-object runs only the JSON workloads") })
  static let ytkBatch = EngineKind(
    name: "ytk-batch", summary: "KeyValueStore.put(_:into:), batches of 1,000 JSONValues",
    make: { _, _ in throw BenchmarkError("ytk-batch runs only the batch-put workload") })
  static let ytkObserved = EngineKind(
    name: "ytk-observed",
    summary: "KeyValueStore.put(_:id:into:) with a change stream on the table, read by a task",
    make: { _, _ in throw BenchmarkError("ytk-observed runs only the observed-put workload") })
  static let ytkUnread = EngineKind(
    name: "ytk-unread",
    summary: "KeyValueStore.put(_:id:into:) with a change stream on the table nobody reads",
    make: { _, _ in throw BenchmarkError("ytk-unread runs only the observed-put workload") })
  static let ytkExpiring = EngineKind(
    name: "ytk-expiring",
    summary: "KeyValueStore.put(_:id:into:expiresAfter:) / object(id:) of items that expire",
    make: { _, _ in throw BenchmarkError("ytk-expiring runs only the expiring-put workload") })
  static let ytkString = EngineKind(
    name: "ytk-string", summary: "KeyValueStore.string(id:) / put(string:id:into:)",
    make: { _, _ in throw BenchmarkError("ytk-string runs only the JSON workloads") })
  static let ytkCodable = EngineKind(
    name: "ytk-codable",
    summary: "KeyValueStore.put(encodable:id:into:) / decode(_:id:from:), end to end",
    make: { _, _ in throw BenchmarkError("ytk-codable runs only the JSON workloads") })
  static let jsonEncoder = EngineKind(
    name: "jsonencoder", summary: "Foundation's JSONEncoder().encode alone, no storage",
    make: { _, _ in throw BenchmarkError("jsonencoder runs only the JSON workloads") })
  static let jsonDecoder = EngineKind(
    name: "jsondecoder", summary: "Foundation's JSONDecoder().decode alone, no storage",
    make: { _, _ in throw BenchmarkError("jsondecoder runs only the JSON workloads") })
  static let ytkScan = EngineKind(
    name: "ytk-scan", summary: "KeyValueStore.forEachItem: ids sorted, each value parsed",
    make: { _, _ in throw BenchmarkError("ytk-scan runs only the JSON workloads") })
  static let jsonValueFloor = EngineKind(
    name: "jsonvalue-floor",
    summary:
      "LogStore's get, then the same JSONValue built key by key from the bytes' strings without parsing: what a parser that hashes every key costs at least",
    make: { _, _ in throw BenchmarkError("jsonvalue-floor runs only the JSON workloads") })
  static let levelDBJSON = EngineKind(
    name: "leveldb-json",
    summary: "LevelDB's ordered iterator, each value parsed with JSONValue(parsing:)",
    make: { _, _ in throw BenchmarkError("leveldb-json runs only the JSON workloads") })
}

/// The JSON workloads' data.
enum JSONDataset {
  static let table = "t"
  /// The benchmark's 6-field dictionary (the same members as `Dataset.valueText`).
  static let object: JSONValue = [
    "id": 12345, "name": "tangqiao", "age": 30, "city": "Beijing",
    "tags": ["ios", "swift", "kv"], "bio": "hello world",
  ]
  static func ids(_ count: Int) -> [String] {
    Dataset.keys(count).map { String(decoding: $0, as: UTF8.self) }
  }

  /// A struct with an `Int`, a `String`, a `URL`, an `[Int]`, a `Date` and an optional
  /// `String`, as the issue measured Codable with.
  struct Profile: Codable, Equatable {
    var id: Int
    var name: String
    var homepage: URL
    var scores: [Int]
    var joined: Date
    var nickname: String?
  }

  static func profiles(_ count: Int) -> [Profile] {
    (0..<count).map { index in
      Profile(
        id: index, name: "user \(index)",
        homepage: URL(string: "https://example.com/users/\(index)")!,
        scores: [index % 100, index % 7, 42, 1000 + index % 13],
        joined: Date(timeIntervalSince1970: 1_500_000_000 + Double(index) * 61.5),
        nickname: index % 2 == 0 ? "nick\(index)" : nil)
    }
  }
}

/// A store of `count` items made through `KeyValueStore`, so that its values are the stored
/// form; `fill` puts each.
private func apiStore(
  _ label: String, count: Int, fill: (KeyValueStore, String, Int) throws -> Void
) throws -> Scratch {
  let scratch = Scratch(label)
  let store = try KeyValueStore(path: scratch.path)
  try store.createTable(JSONDataset.table)
  for (index, id) in JSONDataset.ids(count).enumerated() { try fill(store, id, index) }
  try store.close()
  return scratch
}

/// Random gets of every id of the prepared store: ours through `get`, the baseline through
/// `LogStore.value(forKey:in:)` of the same stored bytes.
private func measureGets(
  _ engine: EngineKind, _ scratch: Scratch, count: Int,
  get: (KeyValueStore, String) throws -> Bool
) throws -> Double {
  let order = shuffled(Array(0..<count), seed: 14)
  if engine == .logStore {
    let keys = Dataset.keys(count)
    let store = try LogStore(path: scratch.path)
    defer { try? store.close() }
    let seconds = try timed {
      for index in order {
        guard try store.value(forKey: keys[index], in: JSONDataset.table) != nil else {
          throw BenchmarkError("lost key \(index)")
        }
      }
    }
    return Double(count) / seconds
  }
  let ids = JSONDataset.ids(count)
  let store = try KeyValueStore(path: scratch.path)
  defer { try? store.close() }
  let seconds = try timed {
    for index in order {
      guard try get(store, ids[index]) else { throw BenchmarkError("lost id \(ids[index])") }
    }
  }
  return Double(count) / seconds
}

/// LogStore's get of each stored value, then the value's `JSONValue` made from its bytes the
/// cheapest way there is: its twelve strings made from their places in the text (found once,
/// since every value is the same text), its numbers as constants, its array and dictionary
/// built directly. No parser into `JSONValue` can do less.
private func measureJSONValueFloor(_ scratch: Scratch, count: Int) throws -> Double {
  let order = shuffled(Array(0..<count), seed: 14)
  let keys = Dataset.keys(count)
  let store = try LogStore(path: scratch.path)
  defer { try? store.close() }
  guard let sample = try store.value(forKey: keys[0], in: JSONDataset.table) else {
    throw BenchmarkError("lost key 0")
  }
  // The quoted strings of the canonical text, in order: age, bio, "hello world", city,
  // "Beijing", id, name, "tangqiao", tags, "ios", "swift", "kv".
  var ranges: [Range<Int>] = []
  var open: Int?
  for (index, byte) in sample.enumerated() where byte == UInt8(ascii: "\"") {
    if let start = open {
      ranges.append(start..<index)
      open = nil
    } else {
      open = index + 1
    }
  }
  guard ranges.count == 12 else { throw BenchmarkError("unexpected stored text") }
  var members = 0
  let seconds = try timed {
    for index in order {
      guard let bytes = try store.value(forKey: keys[index], in: JSONDataset.table) else {
        throw BenchmarkError("lost key \(index)")
      }
      let value = bytes.withUnsafeBufferPointer { buffer -> JSONValue in
        func string(_ number: Int) -> String {
          String(decoding: UnsafeBufferPointer(rebasing: buffer[ranges[number]]), as: UTF8.self)
        }
        return .object([
          string(0): .int(30), string(1): .string(string(2)), string(3): .string(string(4)),
          string(5): .int(12345), string(6): .string(string(7)),
          string(8): .array([.string(string(9)), .string(string(10)), .string(string(11))]),
        ])
      }
      if case .object(let object) = value { members += object.count }
    }
  }
  guard members == count * 6 else { throw BenchmarkError("built \(members) members") }
  return Double(count) / seconds
}

/// Puts of `count` new ids into an empty store: ours through `put`, the baseline through
/// `LogStore.put` of the bytes ours stores.
private func measurePuts(
  _ engine: EngineKind, count: Int, storedBytes: [UInt8],
  put: (KeyValueStore, String) throws -> Void
) throws -> Double {
  let scratch = Scratch("json-put")
  defer { scratch.clean() }
  if engine == .logStore {
    let keys = Dataset.keys(count)
    let store = try LogStore(path: scratch.path)
    defer { try? store.close() }
    try store.createTable(JSONDataset.table)
    let seconds = try timed {
      for key in keys { try store.put(storedBytes, forKey: key, in: JSONDataset.table) }
    }
    return Double(count) / seconds
  }
  let ids = JSONDataset.ids(count)
  let store = try KeyValueStore(path: scratch.path)
  defer { try? store.close() }
  try store.createTable(JSONDataset.table)
  let seconds = try timed {
    for id in ids { try put(store, id) }
  }
  return Double(count) / seconds
}

/// The bytes `KeyValueStore` stores for a value put by `put`.
private func storedBytes(_ put: (KeyValueStore, String) throws -> Void) throws -> [UInt8] {
  let scratch = Scratch("json-stored")
  defer { scratch.clean() }
  let store = try KeyValueStore(path: scratch.path)
  defer { try? store.close() }
  try store.createTable(JSONDataset.table)
  try put(store, "x")
  guard let bytes = try store.logStore.value(forKey: Array("x".utf8), in: JSONDataset.table)
  else { throw BenchmarkError("the value just put is missing") }
  return bytes
}

let jsonGetWorkload = Workload(
  name: "json-get",
  title: { "object(id:) of \(thousands($0.keys)) random ids, against LogStore's get" },
  unit: .operationsPerSecond, engines: [.ytkObject, .logStore, .jsonValueFloor],
  prepare: { _, configuration in
    try apiStore("json-get", count: configuration.keys) { store, id, _ in
      try store.put(JSONDataset.object, id: id, into: JSONDataset.table)
    }
  },
  measure: { engine, scratch, configuration in
    if engine == .jsonValueFloor {
      return try measureJSONValueFloor(scratch!, count: configuration.keys)
    }
    return try measureGets(engine, scratch!, count: configuration.keys) { store, id in
      try store.object(id: id, from: JSONDataset.table) != nil
    }
  },
  note:
    "The 6-field dictionary, stored as its canonical text (104 bytes). `logstore` reads the same stored bytes by key (`LogStore.value(forKey:in:)`, a copy into an array). `jsonvalue-floor` is that get plus the same `JSONValue` made the usual way from its strings' places in the bytes, with no parsing (each key made a string and hashed into a new dictionary): the least a parser that builds its objects key by key pays, which `object(id:)` does. Target: ≥ 0.6× logstore."
)

let jsonPutWorkload = Workload(
  name: "json-put",
  title: { "put(_:id:into:) of \(thousands($0.keys)) new ids, against LogStore's put" },
  unit: .operationsPerSecond, engines: [.ytkObject, .logStore],
  measure: { engine, _, configuration in
    let put: (KeyValueStore, String) throws -> Void = { store, id in
      try store.put(JSONDataset.object, id: id, into: JSONDataset.table)
    }
    return try measurePuts(
      engine, count: configuration.keys, storedBytes: try storedBytes(put), put: put)
  },
  note:
    "The 6-field dictionary as a `JSONValue`; `logstore` puts the canonical text ours stores. Sync `.never` on both. Target: ≥ 0.6×."
)

let batchPutWorkload = Workload(
  name: "batch-put",
  title: {
    "put(_:into:) of \(thousands($0.keys)) new ids in batches of 1,000, against single puts"
  },
  unit: .operationsPerSecond, engines: [.ytkBatch, .ytkObject],
  measure: { engine, _, configuration in
    try measureBatchPuts(engine, count: configuration.keys, sync: .never)
  },
  note:
    "The 6-field dictionary as a `JSONValue` under each id; `ytk-batch` puts them 1,000 to an atomic batch, `ytk-object` one put each. Sync `.never` (the default) on both. Target (issue 13): ≥ 3× per item."
)

let batchPutSyncWorkload = Workload(
  name: "batch-put-sync",
  title: { _ in
    "put(_:into:) of 2,000 new ids in batches of 1,000, against single puts, sync .always"
  },
  unit: .operationsPerSecond, engines: [.ytkBatch, .ytkObject],
  measure: { engine, _, _ in try measureBatchPuts(engine, count: 2_000, sync: .always) },
  note:
    "As batch-put, with sync `.always`: each single put waits for its own sync, a batch for one."
)

/// Puts `count` new ids, 1,000 to a batch (`ytk-batch`) or one at a time (`ytk-object`).
private func measureBatchPuts(_ engine: EngineKind, count: Int, sync: SyncPolicy) throws
  -> Double
{
  let ids = JSONDataset.ids(count)
  var batches: [[String: JSONValue]] = []
  for start in stride(from: 0, to: ids.count, by: 1000) {
    var batch: [String: JSONValue] = [:]
    for id in ids[start..<min(start + 1000, ids.count)] { batch[id] = JSONDataset.object }
    batches.append(batch)
  }
  let scratch = Scratch("batch-put")
  defer { scratch.clean() }
  let store = try KeyValueStore(path: scratch.path, options: StoreOptions(sync: sync))
  defer { try? store.close() }
  try store.createTable(JSONDataset.table)
  let seconds = try timed {
    if engine == .ytkObject {
      for id in ids { try store.put(JSONDataset.object, id: id, into: JSONDataset.table) }
    } else {
      for batch in batches { try store.put(batch, into: JSONDataset.table) }
    }
  }
  guard try store.count(in: JSONDataset.table) == ids.count else {
    throw BenchmarkError("the puts stored \(try store.count(in: JSONDataset.table)) items")
  }
  return Double(ids.count) / seconds
}

let observedPutWorkload = Workload(
  name: "observed-put",
  title: {
    "put(_:id:into:) of \(thousands($0.keys)) new ids, with and without a change stream"
  },
  unit: .operationsPerSecond, engines: [.ytkObject, .ytkObserved, .ytkUnread],
  measure: { engine, _, configuration in
    let ids = JSONDataset.ids(configuration.keys)
    let scratch = Scratch("observed-put")
    defer { scratch.clean() }
    let store = try KeyValueStore(path: scratch.path)
    defer { try? store.close() }
    try store.createTable(JSONDataset.table)
    var consumer: Task<Int, Never>?
    var unread: AsyncStream<KeyValueChange>?
    if engine == .ytkObserved {
      let changes = store.changes(in: JSONDataset.table)
      consumer = Task.detached {
        var count = 0
        for await _ in changes { count += 1 }
        return count
      }
    } else if engine == .ytkUnread {
      unread = store.changes(in: JSONDataset.table)
    }
    let seconds = try timed {
      for id in ids { try store.put(JSONDataset.object, id: id, into: JSONDataset.table) }
    }
    withExtendedLifetime(unread) {}
    if let consumer {
      try store.close()
      let seen = waitForTask(consumer)
      // A consumer that falls behind by more than the buffer sees its stream end early.
      guard seen == ids.count || seen >= KeyValueStore.changeBufferLimit else {
        throw BenchmarkError("the consumer saw \(seen) changes of \(ids.count)")
      }
    }
    return Double(ids.count) / seconds
  },
  note:
    "The 6-field dictionary as a `JSONValue` under each id, sync `.never`: `ytk-object` with no change stream, `ytk-observed` with one that a detached task reads, `ytk-unread` with one nobody reads (it buffers 10,000 changes, then ends). Target (issue 13): no stream costs writers nothing measurable."
)

let expiringPutWorkload = Workload(
  name: "expiring-put",
  title: {
    "put(_:id:into:) of \(thousands($0.keys)) new ids, then count(in:) and object(id:) of each, with and without an expiry"
  },
  unit: .operationsPerSecond, engines: [.ytkObject, .ytkExpiring],
  measure: { engine, _, configuration in
    let ids = JSONDataset.ids(configuration.keys)
    let scratch = Scratch("expiring-put")
    defer { scratch.clean() }
    let store = try KeyValueStore(path: scratch.path)
    defer { try? store.close() }
    try store.createTable(JSONDataset.table)
    let lifetime: Double? = engine == .ytkExpiring ? 3600 : nil
    var found = 0
    let seconds = try timed {
      for id in ids {
        try store.put(JSONDataset.object, id: id, into: JSONDataset.table, expiresAfter: lifetime)
      }
      found = try store.count(in: JSONDataset.table)
      for id in ids where try store.object(id: id, from: JSONDataset.table) == nil {
        found -= 1
      }
    }
    guard found == ids.count else { throw BenchmarkError("\(found) of \(ids.count) items read") }
    return Double(ids.count) / seconds
  },
  note:
    "The 6-field dictionary as a `JSONValue` under each new id, sync `.never`, then the table's count and a read of every id: `ytk-object` without an expiry, `ytk-expiring` with `expiresAfter: 3600` (an 8-byte field in each record, the id and expiry kept in memory for counts and listings). Issue 13 sets no target; this measures what expiry costs."
)

let stringGetWorkload = Workload(
  name: "string-get",
  title: { "string(id:) of \(thousands($0.keys)) random ids, against LogStore's get" },
  unit: .operationsPerSecond, engines: [.ytkString, .logStore],
  prepare: { _, configuration in
    try apiStore("string-get", count: configuration.keys) { store, id, _ in
      try store.put(string: Dataset.valueText, id: id, into: JSONDataset.table)
    }
  },
  measure: { engine, scratch, configuration in
    try measureGets(engine, scratch!, count: configuration.keys) { store, id in
      try store.string(id: id, from: JSONDataset.table) != nil
    }
  },
  note:
    "The 104-byte JSON text as a string, stored as YTKKeyValueStore stored strings: `[\"…\"]`, its quotes escaped. `logstore` reads the same stored bytes. Target: ≥ 0.8×."
)

let stringPutWorkload = Workload(
  name: "string-put",
  title: { "put(string:id:into:) of \(thousands($0.keys)) new ids, against LogStore's put" },
  unit: .operationsPerSecond, engines: [.ytkString, .logStore],
  measure: { engine, _, configuration in
    let put: (KeyValueStore, String) throws -> Void = { store, id in
      try store.put(string: Dataset.valueText, id: id, into: JSONDataset.table)
    }
    return try measurePuts(
      engine, count: configuration.keys, storedBytes: try storedBytes(put), put: put)
  },
  note: "`logstore` puts the bytes ours stores for the string. Target: ≥ 0.8×."
)

let codablePutWorkload = Workload(
  name: "codable-put",
  title: { "put(encodable:) of \(thousands($0.keys / 2)) structs, against JSONEncoder alone" },
  unit: .operationsPerSecond, engines: [.ytkCodable, .jsonEncoder],
  measure: { engine, _, configuration in
    let count = configuration.keys / 2
    let profiles = JSONDataset.profiles(count)
    if engine == .jsonEncoder {
      var bytes = 0
      let seconds = try timed {
        for profile in profiles { bytes += try JSONEncoder().encode(profile).count }
      }
      guard bytes > count * 50 else { throw BenchmarkError("encoded only \(bytes) bytes") }
      return Double(count) / seconds
    }
    let scratch = Scratch("codable-put")
    defer { scratch.clean() }
    let ids = JSONDataset.ids(count)
    let store = try KeyValueStore(path: scratch.path)
    defer { try? store.close() }
    try store.createTable(JSONDataset.table)
    let seconds = try timed {
      for index in 0..<count {
        try store.put(encodable: profiles[index], id: ids[index], into: JSONDataset.table)
      }
    }
    return Double(count) / seconds
  },
  note:
    "A struct with an `Int`, a `String`, a `URL`, an `[Int]`, a `Date` and an optional `String` (nil in half). Ours encodes and stores (sync `.never`); `jsonencoder` only encodes, with a new `JSONEncoder()` per value as the store's old path did. Target: ≥ 1.5×."
)

let codableGetWorkload = Workload(
  name: "codable-get",
  title: { "decode(_:id:from:) of \(thousands($0.keys / 2)) structs, against JSONDecoder alone" },
  unit: .operationsPerSecond, engines: [.ytkCodable, .jsonDecoder],
  prepare: { _, configuration in
    let profiles = JSONDataset.profiles(configuration.keys / 2)
    return try apiStore("codable-get", count: configuration.keys / 2) { store, id, index in
      try store.put(encodable: profiles[index], id: id, into: JSONDataset.table)
    }
  },
  measure: { engine, scratch, configuration in
    let count = configuration.keys / 2
    let order = shuffled(Array(0..<count), seed: 14)
    let ids = JSONDataset.ids(count)
    let store = try KeyValueStore(path: scratch!.path)
    defer { try? store.close() }
    if engine == .jsonDecoder {
      // The same stored bytes, read beforehand: only the decoding is timed.
      let texts = try ids.map { id in
        guard let bytes = try store.logStore.value(forKey: Array(id.utf8), in: JSONDataset.table)
        else { throw BenchmarkError("lost \(id)") }
        return Data(bytes)
      }
      var sum = 0
      let seconds = try timed {
        for index in order {
          sum &+= try JSONDecoder().decode(JSONDataset.Profile.self, from: texts[index]).id
        }
      }
      guard sum == (0..<count).reduce(0, +) else { throw BenchmarkError("decoded wrong ids") }
      return Double(count) / seconds
    }
    var sum = 0
    let seconds = try timed {
      for index in order {
        guard
          let profile = try store.decode(
            JSONDataset.Profile.self, id: ids[index], from: JSONDataset.table)
        else { throw BenchmarkError("lost \(ids[index])") }
        sum &+= profile.id
      }
    }
    guard sum == (0..<count).reduce(0, +) else { throw BenchmarkError("decoded wrong ids") }
    return Double(count) / seconds
  },
  note:
    "Ours reads by id and decodes; `jsondecoder` decodes the same stored bytes, already in memory as `Data`, with a new `JSONDecoder()` per value. Target: ≥ 1.5×."
)

let jsonScanWorkload = Workload(
  name: "json-scan",
  title: { "ordered scan of \(thousands($0.keys)) items, each value parsed" },
  unit: .operationsPerSecond, engines: [.ytkScan, .levelDBJSON],
  prepare: { engine, configuration in
    if engine == .levelDBJSON {
      return try filledStore(.levelDB, count: configuration.keys, label: "scan")
    }
    return try apiStore("json-scan", count: configuration.keys) { store, id, _ in
      try store.put(JSONDataset.object, id: id, into: JSONDataset.table)
    }
  },
  measure: { engine, scratch, configuration in
    var count = 0
    var members = 0
    let seconds: Double
    if engine == .levelDBJSON {
      let store = try LevelDBEngine(directory: scratch!.path, durable: false)
      defer { try? store.close() }
      seconds = try timed {
        try store.forEachValue { value in
          if case .object(let object) = try JSONValue(parsing: value) { members += object.count }
          count += 1
        }
      }
    } else {
      let store = try KeyValueStore(path: scratch!.path)
      defer { try? store.close() }
      seconds = try timed {
        try store.forEachItem(in: JSONDataset.table) { item in
          if case .object(let object) = item.object { members += object.count }
          count += 1
          return true
        }
      }
    }
    guard count == configuration.keys, members == count * 6 else {
      throw BenchmarkError("\(engine) visited \(count) items, \(members) members")
    }
    return Double(count) / seconds
  },
  note:
    "Every item in key order with its value parsed into a `JSONValue`: ours with `forEachItem` (which also makes each item's id and created time), LevelDB with its iterator and `JSONValue(parsing:)` on each value (the same parser). Target: ≥ 0.5×."
)

let jsonWorkloads = [
  jsonGetWorkload, jsonPutWorkload, batchPutWorkload, batchPutSyncWorkload, observedPutWorkload,
  expiringPutWorkload,
  stringGetWorkload,
  stringPutWorkload,
  codablePutWorkload,
  codableGetWorkload, jsonScanWorkload,
]

let jsonEngines: [EngineKind] = [
  .ytkObject, .ytkBatch, .ytkObserved, .ytkUnread, .ytkExpiring, .ytkString, .ytkCodable,
  .jsonEncoder, .jsonDecoder, .ytkScan, .levelDBJSON,
]

/// Issue 14's targets (and issue 13's batch target), for whichever JSON workloads ran.
func jsonTargets(_ results: [WorkloadResult]) -> [Target] {
  let goals: [(workload: String, baseline: EngineKind, description: String, ratio: Double)] = [
    ("json-get", .logStore, "object(id:): ≥ 0.6× LogStore's get of the same bytes", 0.6),
    ("json-put", .logStore, "put(_ object:): ≥ 0.6× LogStore's put of the same bytes", 0.6),
    ("batch-put", .ytkObject, "put(_:into:), batches of 1,000: ≥ 3× single puts (issue 13)", 3),
    (
      "batch-put-sync", .ytkObject,
      "put(_:into:), batches of 1,000, sync .always: ≥ 3× single puts (issue 13)", 3
    ),
    ("string-get", .logStore, "string(id:): ≥ 0.8× LogStore's get of the same bytes", 0.8),
    ("string-put", .logStore, "put(string:): ≥ 0.8× LogStore's put of the same bytes", 0.8),
    ("codable-put", .jsonEncoder, "put(encodable:): ≥ 1.5× JSONEncoder().encode alone", 1.5),
    ("codable-get", .jsonDecoder, "decode(_:id:from:): ≥ 1.5× JSONDecoder().decode alone", 1.5),
    ("json-scan", .levelDBJSON, "forEachItem: ≥ 0.5× LevelDB's scan, each value parsed", 0.5),
  ]
  return goals.compactMap { goal in
    guard let result = results.first(where: { $0.workload.name == goal.workload }) else {
      return nil
    }
    // Judged by the rounds' own ratios (``WorkloadResult/pairedAdvantage(over:)``); the
    // ratio of the medians is shown beside it.
    let paired = result.pairedAdvantage(over: goal.baseline)
    let ofMedians = result.advantage(over: goal.baseline)
    func shown(_ ratio: Double?) -> String { ratio.map { String(format: "%.2f×", $0) } ?? "n/a" }
    return Target(
      description: goal.description,
      measured: "\(shown(paired)) (of the medians: \(shown(ofMedians)))",
      met: (paired ?? 0) >= goal.ratio)
  }
}

/// The value of `task`, waited for from synchronous code.
private func waitForTask<T: Sendable>(_ task: Task<T, Never>) -> T {
  let done = DispatchSemaphore(value: 0)
  let result = LockedBox<T?>(nil)
  Task.detached {
    result.value = await task.value
    done.signal()
  }
  done.wait()
  return result.value!
}

/// A value shared between a task and the thread waiting for it.
private final class LockedBox<T>: @unchecked Sendable {
  private let lock = NSLock()
  private var stored: T
  init(_ value: T) { stored = value }
  var value: T {
    get { lock.withLock { stored } }
    set { lock.withLock { stored = newValue } }
  }
}
