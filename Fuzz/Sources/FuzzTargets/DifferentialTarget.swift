import LogStore
import LogStoreTesting

/// Fuzz target: a sequence of operations chosen by the input, run against the store (on the
/// simulated file system, with small segments) and against ``StoreModel``; any difference
/// traps.
///
/// Each operation takes a few input bytes: an opcode, then its arguments. Besides every kind
/// of write, the opcodes include compaction, writing an index file, closing and reopening, and a simulated process
/// crash followed by reopening (which must keep every acknowledged write).
package func fuzzDifferential(_ data: UnsafeRawBufferPointer) {
  var input = ByteReader(data)
  let sync: SyncPolicy = input.byte() & 1 == 0 ? .never : .always
  var fileSystem = SimulatedFileSystem()
  func open(_ fileSystem: SimulatedFileSystem) -> LogStore {
    var options = LogStore.Options(
      sync: sync, corruption: .fail, compaction: .manual, maxSegmentSize: 4096)
    options.fileSystem = fileSystem
    // Every close writes the active segment's hint, which the reopen then reads.
    options.activeHintMinimumBytes = 0
    do {
      return try LogStore(path: "/store", options: options)
    } catch {
      preconditionFailure("the store did not open: \(error)")
    }
  }
  var store = open(fileSystem)
  var model = StoreModel()
  // The last two are equal as `String`s and differ in their bytes (`é` precomposed and
  // decomposed): two tables to the store and to the model.
  let tables = ["a", "\u{E9}", "e\u{301}"]
  var steps = 0
  while !input.isEmpty && steps < 200 {
    steps += 1
    let opcode = input.byte()
    let table = tables[Int(input.byte()) % tables.count]
    let operation: StoreOperation
    switch opcode % 16 {
    case 0, 1, 2, 3:
      operation = .put(table: table, key: input.key(), value: input.value())
    case 4:
      // Expired at once, or far ahead (format version 2's expiry field).
      let expired = input.byte() % 2 == 0
      operation = .expiringPut(
        table: table, key: input.key(), value: input.value(), expired: expired)
    case 5, 6: operation = .delete(table: table, key: input.key())
    case 7:
      operation = .deleteMany(
        table: table, keys: (0..<Int(input.byte() % 5)).map { _ in input.key() })
    case 8:
      operation = .deletePrefix(
        table: table, prefix: String(input.key().prefix(Int(input.byte() % 3))))
    case 9: operation = .createTable(table)
    case 10: operation = .clearTable(table)
    case 11: operation = .dropTable(table)
    case 12:
      var members: [WriteBatch.Operation] = []
      for _ in 0..<Int(input.byte() % 5) {
        let memberTable = tables[Int(input.byte()) % tables.count]
        switch input.byte() % 4 {
        case 0: members.append(.delete(table: memberTable, key: Array(input.key().utf8)))
        case 1: members.append(.createTable(memberTable))
        case 2:
          members.append(
            .expiringPut(
              table: memberTable, key: Array(input.key().utf8), value: Array(input.value().utf8),
              timestamp: nil, expiresAt: StoreOperation.expiry(expired: input.byte() % 2 == 0)))
        default:
          members.append(
            .put(
              table: memberTable, key: Array(input.key().utf8), value: Array(input.value().utf8),
              timestamp: nil))
        }
      }
      operation = .batch(members)
    case 13: operation = table == "a" ? .checkpoint : .compact
    case 14:
      try? store.close()
      store = open(fileSystem)
      check(store, model, "after reopening")
      continue
    default:
      // A process crash: what was handed to the OS survives.
      let image = fileSystem.image(.process)
      try? store.close()
      fileSystem = SimulatedFileSystem(files: image)
      store = open(fileSystem)
      check(store, model, "after a crash")
      continue
    }
    let refused = model.refuses(operation)
    do {
      try operation.apply(to: store)
      precondition(!refused, "the store accepted \(operation), which the model refuses")
      model.apply(operation)
    } catch {
      precondition(refused && error.code == .tableNotFound, "\(operation) failed: \(error)")
    }
    check(store, model, "after \(operation)")
  }
  try? store.close()
  check(open(fileSystem), model, "after the final reopen")
}

private func check(_ store: LogStore, _ model: StoreModel, _ when: String) {
  guard let state = try? StoreModel.reading(store) else {
    preconditionFailure("the store could not be read \(when)")
  }
  precondition(
    state == model, "the store differs from the model \(when):\nstore \(state)\nmodel \(model)")
}

/// Reads the fuzzer's bytes as arguments; past the end, zeros.
struct ByteReader {
  private let data: UnsafeRawBufferPointer
  private var position = 0

  init(_ data: UnsafeRawBufferPointer) { self.data = data }

  var isEmpty: Bool { position >= data.count }

  mutating func byte() -> UInt8 {
    defer { position += 1 }
    return position < data.count ? data[position] : 0
  }

  /// One of a few dozen keys, some sharing prefixes.
  mutating func key() -> String { "k\(byte() % 40)" }

  /// A value of 0 to about 1,000 bytes.
  mutating func value() -> String {
    let length = Int(byte()) * 4
    return "v" + String(repeating: Character(UnicodeScalar(97 + byte() % 26)), count: length)
  }
}
