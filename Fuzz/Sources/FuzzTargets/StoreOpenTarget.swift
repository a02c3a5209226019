import LogStore
import LogStoreTesting

/// Fuzz target: a store directory built from the input, opened read-only with both corruption
/// policies, read in full, verified.
///
/// Input layout: repeated `[kind: 1 byte][length: 2 bytes, little-endian][contents]`, where
/// kind bit 0 chooses a segment (`.log`) or hint (`.hint`) file and the file number is
/// `1 + (kind >> 1) % 4`; kind 255 is the manifest instead, and kinds 248 to 254 are index
/// files numbered 1 to 7. Opening and reading must never trap, and nothing read may fail its
/// checksum silently: every value the store returns must come from a record that verifies.
package func fuzzStoreOpen(_ data: UnsafeRawBufferPointer) {
  var files: [String: [UInt8]] = [:]
  var position = 0
  while position + 3 <= data.count {
    let kind = data[position]
    let length = Int(data[position + 1]) | Int(data[position + 2]) << 8
    position += 3
    let end = min(data.count, position + length)
    let number = UInt32(1 + (kind >> 1) % 4)
    let name =
      kind == 255
      ? Manifest.fileName
      : kind >= 248
        ? StoreFileName.index(UInt32(kind) - 247)
        : kind & 1 == 0 ? StoreFileName.segment(number) : StoreFileName.hint(number)
    files["/store/" + name] = Array(data[position..<end])
    position = end
  }
  guard !files.isEmpty else { return }
  for corruption in [CorruptionPolicy.salvage, .fail] {
    var options = LogStore.Options(readOnly: true, corruption: corruption, compaction: .manual)
    options.fileSystem = SimulatedFileSystem(files: files)
    guard let store = try? LogStore(path: "/store", options: options) else { continue }
    for table in (try? store.tableNames()) ?? [] {
      for key in (try? store.keys(in: table)) ?? [] {
        // A read either returns a value or reports damage; it never traps.
        _ = try? store.entry(forKey: key, in: table)
      }
      _ = try? store.entries(in: table)
    }
    _ = try? store.statistics()
    try? store.close()
  }
  _ = try? LogStore.verify(path: "/store", fileSystem: SimulatedFileSystem(files: files))
  // A writable open repairs (cuts torn tails, removes leftovers) and must then work.
  var options = LogStore.Options(compaction: .manual, maxSegmentSize: 4096)
  let fileSystem = SimulatedFileSystem(files: files)
  options.fileSystem = fileSystem
  if let store = try? LogStore(path: "/store", options: options) {
    try? store.createTable("fuzz")
    try? store.put([1, 2, 3], forKey: [4], in: "fuzz")
    precondition(
      (try? store.value(forKey: [4], in: "fuzz")) == [1, 2, 3], "a repaired store must take writes")
    try? store.compact()
    precondition(
      (try? store.value(forKey: [4], in: "fuzz")) == [1, 2, 3], "compaction lost a value")
    try? store.close()
  }
}
