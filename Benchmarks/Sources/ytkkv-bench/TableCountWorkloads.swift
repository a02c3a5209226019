import Foundation
import LogStore

/// Issue 12's rows: the same items spread over 1, 100 or 10,000 tables, as apps that keep a
/// table per conversation or per account do. Each "engine" is this store holding the items in
/// that many tables; every cost per operation should be the same in all three, so the ratio
/// column (against one table) should stay near 1.
extension EngineKind {
  static let oneTable = tableCountEngine(1)
  static let hundredTables = tableCountEngine(100)
  static let tenThousandTables = tableCountEngine(10_000)
}

private func tableCountEngine(_ tables: Int) -> EngineKind {
  EngineKind(
    name: "\(tables)-table\(tables == 1 ? "" : "s")",
    summary: "this store, through LogStore, with the items spread over \(tables) table(s)",
    make: { _, _ in throw BenchmarkError("the table-count engines run only the tables workloads") }
  )
}

let tableCountEngines: [EngineKind] = [.oneTable, .hundredTables, .tenThousandTables]

/// The table counts of the tables workloads, by engine.
private let tableCounts: [EngineKind: Int] = [
  .oneTable: 1, .hundredTables: 100, .tenThousandTables: 10_000,
]

/// The tables workloads' data: item `i` is key `Dataset.key(i)` in table `i % tables`, so that
/// consecutive writes go to different tables (a conversation app's writes interleave too).
private enum TableCountDataset {
  static func tableNames(_ tables: Int) -> [String] {
    (0..<tables).map { "table_\($0)" }
  }

  /// A store of `items` items over `tables` tables, written one put at a time and closed.
  static func store(tables: Int, items: Int) throws -> Scratch {
    let scratch = Scratch("tables-\(tables)")
    let names = tableNames(tables)
    let store = try LogStore(path: scratch.path)
    for name in names { try store.createTable(name) }
    for (index, key) in Dataset.keys(items).enumerated() {
      try store.put(Dataset.value, forKey: key, in: names[index % tables])
    }
    try store.close()
    return scratch
  }

  typealias Item = (key: [UInt8], table: String)

  /// Every item once, in an order shuffled with `seed`: its key and its table's name.
  static func itemsInRandomOrder(tables: Int, items: Int, seed: UInt64) -> [Item] {
    let names = tableNames(tables)
    let keys = Dataset.keys(items)
    return shuffled(Array(0..<items), seed: seed).map { (keys[$0], names[$0 % tables]) }
  }
}

/// One tables workload: a store per table count, prepared once; `measure` gets the table
/// count and the prepared store.
private func tablesWorkload(
  name: String, title: @escaping @Sendable (Configuration) -> String, unit: Unit,
  note: String,
  measure: @escaping @Sendable (_ tables: Int, Scratch, Configuration) throws -> Double
) -> Workload {
  Workload(
    name: name, title: title, unit: unit,
    engines: tableCountEngines,
    prepare: { engine, configuration in
      try TableCountDataset.store(tables: tableCounts[engine]!, items: configuration.tableItems)
    },
    measure: { engine, scratch, configuration in
      try measure(tableCounts[engine]!, scratch!, configuration)
    },
    note: note)
}

/// The time to open the store of `tables` tables at `scratch` (with `indexFiles` or without)
/// and read its last item, in milliseconds; with `freshProcess`, in a new process of this
/// benchmark (timed inside it), as an app's launch meets it.
private func reopenMilliseconds(
  tables: Int, _ scratch: Scratch, _ configuration: Configuration, indexFiles: Bool,
  freshProcess: Bool
) throws -> Double {
  guard freshProcess else {
    return try tablesReopenMilliseconds(
      path: scratch.path, tables: tables, items: configuration.tableItems, indexFiles: indexFiles)
  }
  return try childNumber(
    [
      "--child-tables-reopen-time", scratch.path, String(tables),
      String(configuration.tableItems), indexFiles ? "index" : "log",
    ], failure: "the reopen child for \(tables) tables failed")
}

/// The time to open the store of `tables` tables and `items` items at `path` and read its last
/// item, in milliseconds. The child's side of the `-fresh` rows prints it.
func tablesReopenMilliseconds(path: String, tables: Int, items: Int, indexFiles: Bool) throws
  -> Double
{
  var store: LogStore?
  let lastKey = Dataset.key(items - 1)
  let lastTable = "table_\((items - 1) % tables)"
  let seconds = try timed {
    store = try LogStore(path: path, options: LogStore.Options(indexFiles: indexFiles))
    guard try store!.value(forKey: lastKey, in: lastTable) != nil else {
      throw BenchmarkError("\(tables) tables: lost keys on reopen")
    }
  }
  try store?.close()
  return seconds * 1000
}

/// The reopen rows: with the index file or without (`indexFiles: false`, the open reads the
/// log's hint files), in this process or in a fresh one.
private func tablesReopenWorkload(indexFiles: Bool, freshProcess: Bool) -> Workload {
  tablesWorkload(
    name: "tables-reopen" + (indexFiles ? "" : "-log") + (freshProcess ? "-fresh" : ""),
    title: {
      "reopen of \(thousands($0.tableItems)) items in 1, 100 or 10k tables"
        + (indexFiles ? "" : ", without index files") + (freshProcess ? ", in a fresh process" : "")
    },
    unit: .milliseconds,
    note: "The time covers the open and one get; the store was closed cleanly before."
      + (indexFiles ? "" : " With `indexFiles: false`: the open reads the log (its hint files).")
      + (freshProcess
        ? " The open and the get run in a new process of this benchmark (timed inside it)." : ""),
    measure: { tables, scratch, configuration in
      try reopenMilliseconds(
        tables: tables, scratch, configuration, indexFiles: indexFiles, freshProcess: freshProcess)
    })
}

let tableCountWorkloads: [Workload] = [
  tablesReopenWorkload(indexFiles: true, freshProcess: false),
  tablesReopenWorkload(indexFiles: false, freshProcess: false),
  tablesReopenWorkload(indexFiles: true, freshProcess: true),
  tablesReopenWorkload(indexFiles: false, freshProcess: true),
  tablesWorkload(
    name: "tables-put",
    title: { "random overwrite of \(thousands($0.tableItems)) items in 1, 100 or 10k tables" },
    unit: .operationsPerSecond,
    note: "Each run overwrites every item once, in a random order, in a copy of the store.",
    measure: { tables, scratch, configuration in
      let copy = try scratch.copy("tables-put-run")
      defer { copy.clean() }
      let items = TableCountDataset.itemsInRandomOrder(
        tables: tables, items: configuration.tableItems, seed: 12)
      let store = try LogStore(path: copy.path)
      defer { try? store.close() }
      let seconds = try timed {
        for item in items { try store.put(Dataset.value, forKey: item.key, in: item.table) }
      }
      return Double(items.count) / seconds
    }),
  tablesWorkload(
    name: "tables-get",
    title: { "random get of \(thousands($0.tableItems)) items in 1, 100 or 10k tables" },
    unit: .operationsPerSecond,
    note: "Each run reads every item once, in a random order.",
    measure: { tables, scratch, configuration in
      let items = TableCountDataset.itemsInRandomOrder(
        tables: tables, items: configuration.tableItems, seed: 13)
      let store = try LogStore(path: scratch.path)
      defer { try? store.close() }
      let seconds = try timed {
        for item in items where try store.value(forKey: item.key, in: item.table) == nil {
          throw BenchmarkError("\(tables) tables: lost an item of \(item.table)")
        }
      }
      return Double(items.count) / seconds
    }),
  tablesWorkload(
    name: "tables-stats",
    title: { "statistics() of \(thousands($0.tableItems)) items in 1, 100 or 10k tables" },
    unit: .operationsPerSecond,
    note: "Calls of `statistics()` per second, each on the open store (10,000 calls a run).",
    measure: { tables, scratch, configuration in
      let store = try LogStore(path: scratch.path)
      defer { try? store.close() }
      var items = 0
      let calls = 10_000
      let seconds = try timed {
        for _ in 0..<calls { items = try store.statistics().liveItems }
      }
      guard items == configuration.tableItems else {
        throw BenchmarkError("\(tables) tables: statistics() counts \(items) items")
      }
      return Double(calls) / seconds
    }),
]
