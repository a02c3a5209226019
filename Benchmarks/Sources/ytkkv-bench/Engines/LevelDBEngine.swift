import CLevelDB
import Foundation

/// LevelDB through its C API, default options (Snappy compression), or without compression, or
/// checking the checksum of every block a read reads (`verify_checksums`, off by default).
final class LevelDBEngine: Engine, @unchecked Sendable {
  // LevelDB's handles are thread-safe for puts and gets.
  private let database: OpaquePointer
  private let options: OpaquePointer
  private let readOptions: OpaquePointer
  private let writeOptions: OpaquePointer

  convenience init(directory: String, durable: Bool) throws {
    try self.init(directory: directory, durable: durable, compression: true)
  }

  init(directory: String, durable: Bool, compression: Bool, verifyChecksums: Bool = false) throws {
    options = leveldb_options_create()
    leveldb_options_set_create_if_missing(options, 1)
    if !compression { leveldb_options_set_compression(options, Int32(leveldb_no_compression)) }
    var error: UnsafeMutablePointer<CChar>?
    guard let database = leveldb_open(options, directory, &error) else {
      defer { leveldb_free(error) }
      throw BenchmarkError("leveldb_open: \(error.map { String(cString: $0) } ?? "?")")
    }
    self.database = database
    readOptions = leveldb_readoptions_create()
    if verifyChecksums { leveldb_readoptions_set_verify_checksums(readOptions, 1) }
    writeOptions = leveldb_writeoptions_create()
    leveldb_writeoptions_set_sync(writeOptions, durable ? 1 : 0)
  }

  private func check(_ error: UnsafeMutablePointer<CChar>?, _ what: String) throws {
    guard let error else { return }
    defer { leveldb_free(error) }
    throw BenchmarkError("\(what): \(String(cString: error))")
  }

  func put(_ key: [UInt8], _ value: [UInt8]) throws {
    var error: UnsafeMutablePointer<CChar>?
    key.withUnsafeBytes { k in
      value.withUnsafeBytes { v in
        leveldb_put(
          database, writeOptions, k.baseAddress, k.count, v.baseAddress, v.count, &error)
      }
    }
    try check(error, "leveldb_put")
  }

  func get(_ key: [UInt8]) throws -> Int? {
    var error: UnsafeMutablePointer<CChar>?
    var length = 0
    let value = key.withUnsafeBytes { k in
      leveldb_get(database, readOptions, k.baseAddress, k.count, &length, &error)
    }
    try check(error, "leveldb_get")
    guard let value else { return nil }
    defer { leveldb_free(value) }
    return Array(UnsafeRawBufferPointer(start: value, count: length)).count
  }

  func deletePrefix(_ prefix: [UInt8]) throws {
    let batch = leveldb_writebatch_create()
    defer { leveldb_writebatch_destroy(batch) }
    let iterator = leveldb_create_iterator(database, readOptions)
    defer { leveldb_iter_destroy(iterator) }
    prefix.withUnsafeBytes { leveldb_iter_seek(iterator, $0.baseAddress, $0.count) }
    while leveldb_iter_valid(iterator) != 0 {
      var length = 0
      let key = leveldb_iter_key(iterator, &length)!
      let bytes = UnsafeRawBufferPointer(start: key, count: length)
      guard bytes.starts(with: prefix) else { break }
      leveldb_writebatch_delete(batch, key, length)
      leveldb_iter_next(iterator)
    }
    var error: UnsafeMutablePointer<CChar>?
    leveldb_write(database, writeOptions, batch, &error)
    try check(error, "leveldb_write")
  }

  func scan() throws -> Int {
    let iterator = leveldb_create_iterator(database, readOptions)
    defer { leveldb_iter_destroy(iterator) }
    leveldb_iter_seek_to_first(iterator)
    var count = 0
    while leveldb_iter_valid(iterator) != 0 {
      var length = 0
      let value = leveldb_iter_value(iterator, &length)
      _ = Array(UnsafeRawBufferPointer(start: value, count: length))
      count += 1
      leveldb_iter_next(iterator)
    }
    return count
  }

  /// Calls `body` with every value in key order, in place (no copy).
  func forEachValue(_ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
    let iterator = leveldb_create_iterator(database, readOptions)
    defer { leveldb_iter_destroy(iterator) }
    leveldb_iter_seek_to_first(iterator)
    while leveldb_iter_valid(iterator) != 0 {
      var length = 0
      let value = leveldb_iter_value(iterator, &length)
      try body(UnsafeRawBufferPointer(start: value, count: length))
      leveldb_iter_next(iterator)
    }
  }

  func compact() throws { leveldb_compact_range(database, nil, 0, nil, 0) }

  func close() throws {
    leveldb_close(database)
    leveldb_readoptions_destroy(readOptions)
    leveldb_writeoptions_destroy(writeOptions)
    leveldb_options_destroy(options)
  }
}
