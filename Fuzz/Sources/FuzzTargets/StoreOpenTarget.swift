import LogStore
import LogStoreTesting

/// Fuzz target: a store directory built from the input, opened read-only with both corruption
/// policies, read in full, verified. The paths must agree, by the one rule of recovery: `.fail`
/// refuses exactly the stores whose `.salvage` open meets damage, and when it opens it reads the
/// same items and counts the same damage (met after the open, in an index file); `verify`
/// reports a problem wherever an open counted damage, and checks the index file a writer's open
/// uses.
///
/// Input layout: repeated `[kind: 1 byte][length: 2 bytes, little-endian][contents]`, where
/// kind bit 0 chooses a segment (`.log`) or hint (`.hint`) file and the file number is
/// `1 + (kind >> 1) % 4`; kind 255 is the manifest instead, kinds 248 to 254 are index
/// files numbered 1 to 7, and kinds 240 to 247 changes files over index files 1 to 8. Opening and reading must never trap, and nothing read may fail its
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
        : kind >= 240
          ? StoreFileName.changes(UInt32(kind) - 239)
          : kind & 1 == 0 ? StoreFileName.segment(number) : StoreFileName.hint(number)
    files["/store/" + name] = Array(data[position..<end])
    position = end
  }
  guard !files.isEmpty else { return }
  /// What an open found: damage it met at open, damage counted after reading, and every item
  /// it reads, by the bytes of its table's name (names equal as `String`s but not in their
  /// bytes are two tables).
  struct Seen: Equatable {
    var damageAtOpen: Int
    var damage: Int
    var items: [[UInt8]: [[UInt8]: [UInt8]?]]
  }
  var seen: [CorruptionPolicy: Seen] = [:]
  for corruption in [CorruptionPolicy.salvage, .fail] {
    var options = LogStore.Options(readOnly: true, corruption: corruption, compaction: .manual)
    options.fileSystem = SimulatedFileSystem(files: files)
    guard let store = try? LogStore(path: "/store", options: options) else { continue }
    let damageAtOpen = store.openReport.damagedRecords
    let damage = (try? store.statistics().damagedRecords) ?? 0
    var items: [[UInt8]: [[UInt8]: [UInt8]?]] = [:]
    for table in (try? store.tableNames()) ?? [] {
      var values: [[UInt8]: [UInt8]?] = [:]
      for key in (try? store.keys(in: table)) ?? [] {
        // A read either returns a value or reports damage; it never traps.
        values[key] = try? store.entry(forKey: key, in: table)?.value
      }
      items[Array(table.utf8)] = values
      _ = try? store.entries(in: table)
    }
    seen[corruption] = Seen(damageAtOpen: damageAtOpen, damage: damage, items: items)
    _ = try? store.statistics()
    try? store.close()
  }
  if let salvaged = seen[.salvage] {
    if let strict = seen[.fail] {
      // Damage met after the open (an index file's part, read first when counts are settled)
      // is counted by both policies alike.
      precondition(salvaged.damageAtOpen == 0, ".fail opened a store whose open met damage")
      precondition(strict == salvaged, "the two policies read different stores")
    } else {
      precondition(salvaged.damageAtOpen > 0, ".fail refused a store whose open met no damage")
    }
  }
  let report = try? LogStore.verify(path: "/store", fileSystem: SimulatedFileSystem(files: files))
  if let report, let salvaged = seen[.salvage], salvaged.damage > 0 {
    precondition(!report.isClean, "verify found nothing where an open counted damage")
  }
  // A writable open repairs (cuts torn tails, removes leftovers) and must then work.
  var options = LogStore.Options(compaction: .manual, maxSegmentSize: 4096)
  let fileSystem = SimulatedFileSystem(files: files)
  options.fileSystem = fileSystem
  if let store = try? LogStore(path: "/store", options: options) {
    if let report, let used = store.openReport.indexFile {
      // `verify` judges index files by the open's rule, against the segments a writer's open
      // reads: the one used is checked in full, not passed over as stale.
      precondition(report.indexFiles > 0, "verify checked no index file where an open used one")
      precondition(
        !report.notes.contains { $0.file == StoreFileName.index(used) },
        "verify called the index file an open used stale")
    }
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
