import LogStore

/// A deterministic stream of store operations: the same seed gives the same operations, so a
/// writer process and the test that kills it agree on what was written.
///
/// Mostly puts and overwrites over a few hundred keys in three tables, with deletes, batches,
/// prefix deletes, table clears and drops (followed by re-creation), and, when asked,
/// compactions. Two of the tables' names are equal as `String`s and differ in their bytes
/// (`caché`, its `é` precomposed and decomposed), which the store keeps apart.
package struct WorkloadGenerator: Sendable {
  private var random: SeededGenerator
  private let compactionEvery: Int?
  private var step = 0
  private let tables: [String]

  /// - Parameters:
  ///   - compactionEvery: insert a compaction every this many operations.
  ///   - tablePrefix: put before the tables' names, so that several writers of one store
  ///     each have tables of their own.
  package init(seed: UInt64, compactionEvery: Int? = nil, tablePrefix: String = "") {
    random = SeededGenerator(seed: seed)
    self.compactionEvery = compactionEvery
    tables = [tablePrefix + "users", tablePrefix + "cach\u{E9}", tablePrefix + "cache\u{301}"]
  }

  private mutating func pick(_ bound: Int) -> Int { Int(random.next() % UInt64(bound)) }

  private mutating func key() -> String { "key_\(pick(300))" }

  private mutating func value() -> String {
    let length = 1 + pick(400)
    let letter = Character(UnicodeScalar(UInt8(97 + pick(26))))
    return "v\(step)-" + String(repeating: letter, count: length)
  }

  package mutating func next() -> StoreOperation {
    step += 1
    if step <= tables.count { return .createTable(tables[step - 1]) }
    if let compactionEvery, step % compactionEvery == 0 { return .compact }
    let table = tables[pick(tables.count)]
    switch pick(100) {
    case 0..<50: return .put(table: table, key: key(), value: value())
    case 50..<55:
      return .expiringPut(table: table, key: key(), value: value(), expired: pick(2) == 0)
    case 55..<70: return .delete(table: table, key: key())
    case 70..<76: return .deleteMany(table: table, keys: (0..<(1 + pick(6))).map { _ in key() })
    case 76..<88:
      var operations: [WriteBatch.Operation] = []
      for _ in 0..<(1 + pick(6)) {
        if pick(4) == 0 {
          operations.append(.delete(table: table, key: Array(key().utf8)))
        } else if pick(8) == 0 {
          operations.append(
            .expiringPut(
              table: table, key: Array(key().utf8), value: Array(value().utf8), timestamp: nil,
              expiresAt: StoreOperation.expiry(expired: pick(2) == 0)))
        } else {
          operations.append(
            .put(table: table, key: Array(key().utf8), value: Array(value().utf8), timestamp: nil))
        }
      }
      return .batch(operations)
    case 88..<95: return .deletePrefix(table: table, prefix: "key_\(pick(30))")
    case 95..<97: return .clearTable(table)
    case 97..<99:
      // Drop and create again in one batch, so the table is never missing for long.
      return .batch([.dropTable(table), .createTable(table)])
    default: return .createTable(table)
    }
  }
}
