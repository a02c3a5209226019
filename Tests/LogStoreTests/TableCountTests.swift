import Testing

@testable import LogStore

/// Stores with thousands of tables, as apps with a table per conversation or per account keep:
/// the store's totals are kept as running sums and its tables are found by name or by the bytes
/// of a record, so these check that every kind of change keeps both right.
@Suite("Many tables")
struct TableCountTests {
  /// What the store should hold: every table with its keys and values.
  private typealias Model = [String: [[UInt8]: [UInt8]]]

  private static func tableName(_ number: Int) -> String { "conversation_\(number)" }

  /// Checks `statistics()` against the model, and its live bytes against a sum over the tables
  /// (which the model cannot know: they are the lengths of the encoded records).
  private func checkTotals(_ store: LogStore, _ model: Model) throws {
    let statistics = try store.statistics()
    #expect(statistics.tables == model.count)
    #expect(statistics.liveItems == model.values.reduce(0) { $0 + $1.count })
    let summed = try store.engine.readIndex { keys in
      (
        items: keys.tables.values.reduce(0) { $0 + $1.count },
        bytes: keys.tables.values.reduce(0) { $0 + $1.liveBytes }
      )
    }
    #expect(statistics.liveItems == summed.items)
    #expect(statistics.liveBytes == summed.bytes)
  }

  /// Checks every table's existence, count and values against the model.
  private func checkContents(_ store: LogStore, _ model: Model) throws {
    #expect(
      try store.tableNames() == model.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
    for (table, items) in model {
      #expect(try store.count(in: table) == items.count)
      for (key, value) in items { #expect(try store.value(forKey: key, in: table) == value) }
    }
  }

  @Test(
    "totals stay right through creates, puts, deletes, prefix deletes, clears, drops and batches over 3,000 tables, and after reopening"
  )
  func totalsThroughEveryChange() throws {
    let tables = 3_000
    var model: Model = [:]
    var generator = SplitMix64(seed: 12)
    func pick(_ count: Int) -> Int { Int(generator.next() % UInt64(count)) }
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    var liveBytesBeforeClose = 0
    do {
      let store = try LogStore(path: path, options: .init(compaction: .manual))
      for number in 0..<tables {
        try store.createTable(Self.tableName(number))
        model[Self.tableName(number)] = [:]
      }
      try checkTotals(store, model)
      for step in 0..<TestDepth.choose(sample: 10_000, full: 30_000) {
        let table = Self.tableName(pick(tables))
        let key = Array("key_\(pick(40))".utf8)
        let choice = pick(1000)
        if model[table] == nil {
          // Dropped: recreated, empty.
          try store.createTable(table)
          model[table] = [:]
        } else if choice < 700 {
          let value = Array(repeating: UInt8(truncatingIfNeeded: step), count: 1 + pick(60))
          try store.put(value, forKey: key, in: table)
          model[table]![key] = value
        } else if choice < 850 {
          try store.delete(key: key, in: table)
          model[table]![key] = nil
        } else if choice < 900 {
          let prefix = Array("key_\(pick(4))".utf8)
          try store.deletePrefix(prefix, in: table)
          model[table] = model[table]!.filter { !$0.key.starts(with: prefix) }
        } else if choice < 910 {
          try store.clearTable(table)
          model[table] = [:]
        } else if choice < 920 {
          try store.dropTable(table)
          model[table] = nil
        } else {
          // A batch that touches several tables, creates one and drops another.
          var batch = WriteBatch()
          for _ in 0..<5 {
            let other = Self.tableName(pick(tables))
            guard model[other] != nil else { continue }
            let key = Array("key_\(pick(40))".utf8)
            let value = Array("batch \(step)".utf8)
            batch.put(value, forKey: key, in: other)
            model[other]![key] = value
          }
          let created = Self.tableName(tables + step)
          batch.createTable(created)
          batch.put(Array("first".utf8), forKey: Array("key_0".utf8), in: created)
          model[created] = [Array("key_0".utf8): Array("first".utf8)]
          let dropped = Self.tableName(pick(tables))
          if model[dropped] != nil {
            batch.dropTable(dropped)
            model[dropped] = nil
          }
          try store.write(batch)
        }
        if step % 3_000 == 0 { try checkTotals(store, model) }
      }
      try checkTotals(store, model)
      try checkContents(store, model)
      liveBytesBeforeClose = try store.statistics().liveBytes
      try store.close()
    }
    let reopened = try LogStore(path: path, options: .init(compaction: .manual))
    defer { try? reopened.close() }
    try checkTotals(reopened, model)
    try checkContents(reopened, model)
    #expect(try reopened.statistics().liveBytes == liveBytesBeforeClose)
  }

  @Test(
    "compaction keeps the totals and contents of 2,000 tables, and so does opening from its hints")
  func totalsThroughCompaction() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let options = LogStore.Options(compaction: .manual, maxSegmentSize: 256 << 10)
    var model: Model = [:]
    let tables = 2_000
    do {
      let store = try LogStore(path: path, options: options)
      // Items interleaved over the tables, written twice (the first copies become garbage),
      // then some tables dropped and some cleared.
      for round in 0..<2 {
        for item in 0..<10_000 {
          let table = Self.tableName(item % tables)
          if round == 0 && item < tables { try store.createTable(table) }
          let key = Array("key_\(item / tables)".utf8)
          let value = Array("round \(round) item \(item)".utf8)
          try store.put(value, forKey: key, in: table)
          model[table, default: [:]][key] = value
        }
      }
      for number in stride(from: 0, to: tables, by: 7) {
        try store.dropTable(Self.tableName(number))
        model[Self.tableName(number)] = nil
      }
      for number in stride(from: 3, to: tables, by: 11) where model[Self.tableName(number)] != nil {
        try store.clearTable(Self.tableName(number))
        model[Self.tableName(number)] = [:]
      }
      #expect(try store.statistics().segments > 2)
      try checkTotals(store, model)
      try store.compact()
      try checkTotals(store, model)
      try checkContents(store, model)
      try store.close()
    }
    let reopened = try LogStore(path: path, options: options)
    defer { try? reopened.close() }
    #expect(reopened.engine.openReport.hintEntries > 0)
    try checkTotals(reopened, model)
    try checkContents(reopened, model)
  }

  @Test(
    "tables are found by name and by bytes as their number crosses the short list's limit both ways, and a table dropped and made again starts empty"
  )
  func findingTablesAcrossTheShortList() throws {
    let directory = TemporaryDirectory()
    let store = try LogStore(path: directory.appending("store"))
    defer { try? store.close() }
    var model: Model = [:]
    // Up to 20 tables and back down to none, one at a time, twice; after every change each
    // name is looked up (by name: tableExists, count; by bytes: put, which checks the table).
    for _ in 0..<2 {
      for number in 0..<20 {
        try store.createTable(Self.tableName(number))
        model[Self.tableName(number)] = [:]
        for table in model.keys {
          try store.put(Array(table.utf8), forKey: Array("\(number)".utf8), in: table)
          model[table]![Array("\(number)".utf8)] = Array(table.utf8)
        }
        try checkTotals(store, model)
      }
      for number in (0..<20).reversed() {
        try store.dropTable(Self.tableName(number))
        model[Self.tableName(number)] = nil
        #expect(try !store.tableExists(Self.tableName(number)))
        #expect(throws: LogStoreError.self) {
          try store.put([1], forKey: [1], in: Self.tableName(number))
        }
        try checkContents(store, model)
        try checkTotals(store, model)
      }
    }
  }
}
