import CRocksDB
import Foundation

/// RocksDB through its C API, default options (its default compression), or without
/// compression.
final class RocksDBEngine: Engine, @unchecked Sendable {
  // RocksDB's handles are thread-safe for puts and gets.
  private let database: OpaquePointer
  private let options: OpaquePointer
  private let readOptions: OpaquePointer
  private let writeOptions: OpaquePointer

  convenience init(directory: String, durable: Bool) throws {
    try self.init(directory: directory, durable: durable, compression: true)
  }

  init(directory: String, durable: Bool, compression: Bool) throws {
    options = rocksdb_options_create()
    rocksdb_options_set_create_if_missing(options, 1)
    if !compression { rocksdb_options_set_compression(options, Int32(rocksdb_no_compression)) }
    var error: UnsafeMutablePointer<CChar>?
    guard let database = rocksdb_open(options, directory, &error) else {
      defer { rocksdb_free(error) }
      throw BenchmarkError("rocksdb_open: \(error.map { String(cString: $0) } ?? "?")")
    }
    self.database = database
    readOptions = rocksdb_readoptions_create()
    writeOptions = rocksdb_writeoptions_create()
    rocksdb_writeoptions_set_sync(writeOptions, durable ? 1 : 0)
  }

  private func check(_ error: UnsafeMutablePointer<CChar>?, _ what: String) throws {
    guard let error else { return }
    defer { rocksdb_free(error) }
    throw BenchmarkError("\(what): \(String(cString: error))")
  }

  func put(_ key: [UInt8], _ value: [UInt8]) throws {
    var error: UnsafeMutablePointer<CChar>?
    key.withUnsafeBytes { k in
      value.withUnsafeBytes { v in
        rocksdb_put(
          database, writeOptions, k.baseAddress, k.count, v.baseAddress, v.count, &error)
      }
    }
    try check(error, "rocksdb_put")
  }

  func get(_ key: [UInt8]) throws -> Int? {
    var error: UnsafeMutablePointer<CChar>?
    var length = 0
    let value = key.withUnsafeBytes { k in
      rocksdb_get(database, readOptions, k.baseAddress, k.count, &length, &error)
    }
    try check(error, "rocksdb_get")
    guard let value else { return nil }
    defer { rocksdb_free(value) }
    return Array(UnsafeRawBufferPointer(start: value, count: length)).count
  }

  func deletePrefix(_ prefix: [UInt8]) throws {
    let batch = rocksdb_writebatch_create()
    defer { rocksdb_writebatch_destroy(batch) }
    let iterator = rocksdb_create_iterator(database, readOptions)
    defer { rocksdb_iter_destroy(iterator) }
    prefix.withUnsafeBytes { rocksdb_iter_seek(iterator, $0.baseAddress, $0.count) }
    while rocksdb_iter_valid(iterator) != 0 {
      var length = 0
      let key = rocksdb_iter_key(iterator, &length)!
      let bytes = UnsafeRawBufferPointer(start: key, count: length)
      guard bytes.starts(with: prefix) else { break }
      rocksdb_writebatch_delete(batch, key, length)
      rocksdb_iter_next(iterator)
    }
    var error: UnsafeMutablePointer<CChar>?
    rocksdb_write(database, writeOptions, batch, &error)
    try check(error, "rocksdb_write")
  }

  func scan() throws -> Int {
    let iterator = rocksdb_create_iterator(database, readOptions)
    defer { rocksdb_iter_destroy(iterator) }
    rocksdb_iter_seek_to_first(iterator)
    var count = 0
    while rocksdb_iter_valid(iterator) != 0 {
      var length = 0
      let value = rocksdb_iter_value(iterator, &length)
      _ = Array(UnsafeRawBufferPointer(start: value, count: length))
      count += 1
      rocksdb_iter_next(iterator)
    }
    return count
  }

  func compact() throws { rocksdb_compact_range(database, nil, 0, nil, 0) }

  func close() throws {
    rocksdb_close(database)
    rocksdb_readoptions_destroy(readOptions)
    rocksdb_writeoptions_destroy(writeOptions)
    rocksdb_options_destroy(options)
  }
}
