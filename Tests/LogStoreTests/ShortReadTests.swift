import Testing

@testable import LogStore
@testable import LogStoreTesting

/// Files that are not what the store's own records say: one that another program cuts between
/// its size being read and its bytes, a manifest too large to be one or naming a lost file, a
/// damaged header, and a segment too large to scan alone whose damage stops the open part way.
@Suite("Files cut while read, lost, oversized, or damaged")
struct ShortReadTests {
  private static let path = "/store"

  private func options(
    _ fileSystem: SimulatedFileSystem, corruption: CorruptionPolicy = .salvage
  ) -> LogStore.Options {
    var options = LogStore.Options(
      corruption: corruption, compaction: .manual, maxSegmentSize: 4096)
    options.fileSystem = fileSystem
    return options
  }

  /// The files of a closed store whose first segments are compaction outputs (with hint
  /// files), what it holds, and its segment files in order.
  private func storeFiles() throws -> (
    files: [String: [UInt8]], model: [String: [String: String]], segments: [String]
  ) {
    let fileSystem = SimulatedFileSystem()
    let store = try LogStore(path: Self.path, options: options(fileSystem))
    try store.createTable("t")
    for index in 0..<200 {
      try store.put("value \(index)".bytes, forKey: "k\(index % 70)".bytes, in: "t")
    }
    try store.compact()
    try store.put("after".bytes, forKey: "k1".bytes, in: "t")
    let model = try store.snapshot()
    try store.close()
    let files = fileSystem.files
    return (files, model, files.keys.filter { $0.hasSuffix(".log") }.sorted())
  }

  /// Makes the first read of a file whose name ends with `suffix` find it cut to half its size.
  private func cutBeforeFirstRead(of suffix: String, in fileSystem: SimulatedFileSystem) -> OnceFlag
  {
    let cut = OnceFlag()
    fileSystem.callHook = { call in
      guard call.operation == "pread", call.path.hasSuffix(suffix), cut.set() else { return }
      let handle = try! fileSystem.openFile(call.path, mode: .init(writable: true, create: false))
      try! handle.truncate(to: try! handle.size() / 2)
      handle.close()
    }
    return cut
  }

  @Test("a manifest or hint file cut while it is read is not used; the open reads the segments")
  func manifestAndHintCut() throws {
    let (files, model, _) = try storeFiles()
    #expect(files.keys.contains { $0.hasSuffix(".hint") })
    for suffix in [Manifest.fileName, ".hint"] {
      let fileSystem = SimulatedFileSystem(files: files)
      let cut = cutBeforeFirstRead(of: suffix, in: fileSystem)
      var readOnly = options(fileSystem, corruption: .fail)
      readOnly.readOnly = true
      let store = try LogStore(path: Self.path, options: readOnly)
      #expect(cut.isSet, "\(suffix)")
      #expect(try store.snapshot() == model, "\(suffix)")
    }
  }

  @Test("a last segment whose creation was cut short, and that shrinks while read, is removed")
  func cutShortSegmentShrinks() throws {
    let (original, model, segments) = try storeFiles()
    var files = original
    let last = try #require(segments.last)
    let number = try #require(UInt32(last.dropFirst(Self.path.count + 1).prefix(6)))
    // A segment created with its space reserved, the crash coming before its header was written.
    let extra = Self.path + "/" + StoreFileName.segment(number + 1)
    files[extra] = [UInt8](repeating: 0, count: 4096)
    let fileSystem = SimulatedFileSystem(files: files)
    let cut = OnceFlag()
    fileSystem.callHook = { call in
      guard call.operation == "pread", call.path == extra, cut.set() else { return }
      let handle = try! fileSystem.openFile(extra, mode: .init(writable: true, create: false))
      try! handle.truncate(to: 100)
      handle.close()
    }
    let store = try LogStore(path: Self.path, options: options(fileSystem, corruption: .fail))
    #expect(cut.isSet)
    #expect(try store.snapshot() == model)
    #expect(fileSystem.files[extra] == nil)
  }

  @Test("verify reads a segment cut while it is read as far as it goes")
  func verifiedSegmentCut() throws {
    let (files, _, segments) = try storeFiles()
    let fileSystem = SimulatedFileSystem(files: files)
    let whole = try LogStore.verify(path: Self.path, fileSystem: fileSystem)
    let first = try #require(segments.first)
    let cut = cutBeforeFirstRead(of: first, in: fileSystem)
    let report = try LogStore.verify(path: Self.path, fileSystem: fileSystem)
    #expect(cut.isSet)
    #expect(report.records < whole.records)
    #expect(report.segments == whole.segments)
  }

  @Test("a manifest larger than any store's is not read; the open uses the directory listing")
  func oversizedManifest() throws {
    let (original, model, _) = try storeFiles()
    var files = original
    files[Self.path + "/" + Manifest.fileName] = [UInt8](repeating: 7, count: (1 << 24) + 1)
    var readOnly = options(SimulatedFileSystem(files: files), corruption: .fail)
    readOnly.readOnly = true
    let store = try LogStore(path: Self.path, options: readOnly)
    #expect(try store.snapshot() == model)
  }

  @Test("a read-only open of a store whose manifest names a lost segment reads the files there")
  func manifestNamesLostSegment() throws {
    let (original, model, segments) = try storeFiles()
    var files = original
    // The active segment holds only the put made after the compaction.
    files[try #require(segments.last)] = nil
    var readOnly = options(SimulatedFileSystem(files: files), corruption: .fail)
    readOnly.readOnly = true
    let store = try LogStore(path: Self.path, options: readOnly)
    var expected = model
    expected["t"]!["k1"] = "value 141"
    #expect(try store.snapshot() == expected)
  }

  @Test("compaction copies the records of a segment whose header is damaged")
  func compactionOfDamagedHeader() throws {
    let writer = SimulatedFileSystem()
    let original = try LogStore(path: Self.path, options: options(writer))
    try original.createTable("t")
    for index in 0..<200 {
      try original.put("value \(index)".bytes, forKey: "k\(index % 70)".bytes, in: "t")
    }
    let model = try original.snapshot()
    try original.close()
    var files = writer.files
    let first = Self.path + "/" + StoreFileName.segment(1)
    files[first]![40] ^= 0x01  // a reserved byte: the header fails its checksum, the salt stays
    let fileSystem = SimulatedFileSystem(files: files)
    let store = try LogStore(path: Self.path, options: options(fileSystem))
    #expect(try store.statistics().damagedRecords == 1)
    try store.compact()
    #expect(try store.snapshot() == model)
    try store.close()
    let reopened = try LogStore(path: Self.path, options: options(fileSystem, corruption: .fail))
    #expect(try reopened.snapshot() == model)
  }

  @Test(
    "damage in a segment scanned on a second thread stops the open under .fail, with the scan far ahead"
  )
  func pipelineStopsEarly() throws {
    let writer = SimulatedFileSystem()
    // Without an index file, and without the active segment's hint the close would write, so
    // that the open reads the whole segment (with either, it would read none of it).
    var options = LogStore.Options(compaction: .manual, indexFiles: false)
    options.activeHintMinimumBytes = .max
    options.fileSystem = writer
    let store = try LogStore(path: Self.path, options: options)
    try store.createTable("t")
    // 15 chunks of 4,096 records; the damage is in the eighth, so more than the four chunks the
    // scan may run ahead are still to come when the open stops.
    let count = 60_000
    let value = [UInt8](repeating: 0x61, count: 100)
    for number in 0..<count {
      try store.put(value, forKey: "key-\(100_000 + number)".bytes, in: "t")
    }
    try store.close()
    var files = writer.files
    let segment = Self.path + "/" + StoreFileName.segment(1)
    let creation = RecordLayout.length(table: 1, key: 0, value: 0)
    let record = RecordLayout.length(table: 1, key: 10, value: value.count)
    let damagedAt = SegmentHeader.size + creation + 30_000 * record + record / 2
    #expect(files[segment]!.count > damagedAt + Recovery.pipelineThreshold)
    files[segment]![damagedAt] ^= 0x01
    let fileSystem = SimulatedFileSystem(files: files)
    options.fileSystem = fileSystem
    options.corruption = .fail
    let error = #expect(throws: LogStoreError.self) {
      try LogStore(path: Self.path, options: options)
    }
    #expect(error?.code == .corrupted)
    options.corruption = .salvage
    let salvaged = try LogStore(path: Self.path, options: options)
    #expect(try salvaged.count(in: "t") == count - 1)
    #expect(try salvaged.statistics().damagedRecords == 1)
  }
}
