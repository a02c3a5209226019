import CLMDB
import Foundation

/// LMDB through its C API: one transaction per put (as the others commit each put), one
/// read-only transaction per get. MDB_NOSYNC when not durable.
final class LMDBEngine: Engine, @unchecked Sendable {
  // LMDB serializes write transactions itself; read transactions are per thread.
  fileprivate var environment: OpaquePointer?
  fileprivate var table: MDB_dbi = 0

  init(directory: String, durable: Bool) throws {
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    try check(mdb_env_create(&environment), "mdb_env_create")
    try check(mdb_env_set_mapsize(environment, 16 << 30), "mdb_env_set_mapsize")
    let flags = UInt32(durable ? 0 : MDB_NOSYNC)
    try check(mdb_env_open(environment, directory, flags, 0o644), "mdb_env_open")
    var transaction: OpaquePointer?
    try check(mdb_txn_begin(environment, nil, 0, &transaction), "mdb_txn_begin")
    try check(mdb_dbi_open(transaction, nil, 0, &table), "mdb_dbi_open")
    try check(mdb_txn_commit(transaction), "mdb_txn_commit")
  }

  fileprivate func check(_ result: Int32, _ what: String) throws {
    guard result == 0 else {
      throw BenchmarkError("\(what): \(String(cString: mdb_strerror(result)))")
    }
  }

  func put(_ key: [UInt8], _ value: [UInt8]) throws {
    var transaction: OpaquePointer?
    try check(mdb_txn_begin(environment, nil, 0, &transaction), "mdb_txn_begin")
    var key = key
    var value = value
    let result = key.withUnsafeMutableBytes { k in
      value.withUnsafeMutableBytes { v in
        var keyValue = MDB_val(mv_size: k.count, mv_data: k.baseAddress)
        var dataValue = MDB_val(mv_size: v.count, mv_data: v.baseAddress)
        return mdb_put(transaction, table, &keyValue, &dataValue, 0)
      }
    }
    guard result == 0 else {
      mdb_txn_abort(transaction)
      try check(result, "mdb_put")
      return
    }
    try check(mdb_txn_commit(transaction), "mdb_txn_commit")
  }

  func get(_ key: [UInt8]) throws -> Int? {
    var transaction: OpaquePointer?
    try check(mdb_txn_begin(environment, nil, UInt32(MDB_RDONLY), &transaction), "mdb_txn_begin")
    defer { mdb_txn_abort(transaction) }
    var key = key
    var data = MDB_val()
    let result = key.withUnsafeMutableBytes { k in
      var keyValue = MDB_val(mv_size: k.count, mv_data: k.baseAddress)
      return mdb_get(transaction, table, &keyValue, &data)
    }
    if result == MDB_NOTFOUND { return nil }
    try check(result, "mdb_get")
    return Array(UnsafeRawBufferPointer(start: data.mv_data, count: data.mv_size)).count
  }

  func deletePrefix(_ prefix: [UInt8]) throws {
    var transaction: OpaquePointer?
    try check(mdb_txn_begin(environment, nil, 0, &transaction), "mdb_txn_begin")
    var cursor: OpaquePointer?
    try check(mdb_cursor_open(transaction, table, &cursor), "mdb_cursor_open")
    var prefix = prefix
    var key = MDB_val()
    var data = MDB_val()
    var result = prefix.withUnsafeMutableBytes { p in
      key = MDB_val(mv_size: p.count, mv_data: p.baseAddress)
      return mdb_cursor_get(cursor, &key, &data, MDB_SET_RANGE)
    }
    while result == 0
      && UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size).starts(with: prefix)
    {
      try check(mdb_cursor_del(cursor, 0), "mdb_cursor_del")
      result = mdb_cursor_get(cursor, &key, &data, MDB_GET_CURRENT)
    }
    mdb_cursor_close(cursor)
    try check(mdb_txn_commit(transaction), "mdb_txn_commit")
  }

  func scan() throws -> Int {
    var transaction: OpaquePointer?
    try check(mdb_txn_begin(environment, nil, UInt32(MDB_RDONLY), &transaction), "mdb_txn_begin")
    defer { mdb_txn_abort(transaction) }
    var cursor: OpaquePointer?
    try check(mdb_cursor_open(transaction, table, &cursor), "mdb_cursor_open")
    defer { mdb_cursor_close(cursor) }
    var key = MDB_val()
    var data = MDB_val()
    var count = 0
    var result = mdb_cursor_get(cursor, &key, &data, MDB_FIRST)
    while result == 0 {
      _ = Array(UnsafeRawBufferPointer(start: data.mv_data, count: data.mv_size))
      count += 1
      result = mdb_cursor_get(cursor, &key, &data, MDB_NEXT)
    }
    return count
  }

  func close() throws {
    mdb_dbi_close(environment, table)
    mdb_env_close(environment)
    environment = nil
  }
}

extension LMDBEngine {
  /// Looks up every key in one read-only transaction, reading each value's length where LMDB
  /// holds it (no copy); returns how many were found.
  func countFoundInOneTransaction(_ keys: [[UInt8]]) throws -> Int {
    var transaction: OpaquePointer?
    try check(mdb_txn_begin(environment, nil, UInt32(MDB_RDONLY), &transaction), "mdb_txn_begin")
    defer { mdb_txn_abort(transaction) }
    var found = 0
    for key in keys {
      var key = key
      var data = MDB_val()
      let result = key.withUnsafeMutableBytes { k in
        var keyValue = MDB_val(mv_size: k.count, mv_data: k.baseAddress)
        return mdb_get(transaction, table, &keyValue, &data)
      }
      if result == 0, data.mv_size > 0 { found += 1 }
    }
    return found
  }
}
