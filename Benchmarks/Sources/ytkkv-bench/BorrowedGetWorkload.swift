/// Issue 31's gets against LMDB with one read transaction for all of them: this store through
/// `withValue(forKey:in:_:)`, which lends the stored bytes as LMDB lends a pointer into its map,
/// against `mdb_get` in one read-only transaction. Each reads the value's length where the
/// store holds it, without a copy.
let borrowedGetWorkload = Workload(
  name: "get-borrowed",
  title: { "random get of \(thousands($0.keys)) keys, borrowed (LMDB: one read transaction)" },
  unit: .operationsPerSecond, engines: [.logStore, .lmdb],
  prepare: { engine, configuration in
    try filledStore(engine, count: configuration.keys, label: "get-borrowed")
  },
  measure: { engine, scratch, configuration in
    try measureGets(engine, scratch!, configuration) { store, keys in
      if let lmdb = store as? LMDBEngine { return try lmdb.countFoundInOneTransaction(keys) }
      guard let ours = store as? LogStoreEngine else { return 0 }
      var found = 0
      for key in keys
      where try ours.store.withValue(forKey: key, in: LogStoreEngine.table, { $0.count }) ?? 0 > 0 {
        found += 1
      }
      return found
    }
  })
