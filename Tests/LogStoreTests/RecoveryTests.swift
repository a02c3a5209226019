import Foundation
import Testing

@testable import LogStore

@Suite("Recovery")
struct RecoveryTests {
  /// A store with `count` keys `k0…` in table "t", written in one session each so the last
  /// record's start is known; returns the segment path and where the last record starts.
  private func storeWithRecords(_ directory: TemporaryDirectory, count: Int) throws -> (
    path: String, segment: String, lastStart: Int
  ) {
    let path = directory.appending("store")
    let store = try LogStore(path: path)
    try store.createTable("t")
    for index in 0..<count - 1 {
      try store.put(Array("value \(index)".utf8), forKey: Array("k\(index)".utf8), in: "t")
    }
    try store.close()
    let segment = try #require(try segmentFiles(in: path).last)
    let lastStart = try recordBytes(segment).count
    let again = try LogStore(path: path)
    try again.put(Array("value \(count - 1)".utf8), forKey: Array("k\(count - 1)".utf8), in: "t")
    try again.close()
    return (path, segment, lastStart)
  }

  @Test(
    "reopening applies records in log order although puts are inserted in groups: repeated keys, deletes, clears and other tables between them"
  )
  func groupedReplayKeepsLogOrder() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    var generator = SplitMix64(seed: 11)
    let store = try LogStore(path: path)
    for table in ["a", "b"] { try store.createTable(table) }
    for step in 0..<3_000 {
      let table = generator.next() % 4 == 0 ? "b" : "a"
      // Few keys, so that one group of puts often holds the same key more than once.
      let key = Array("k\(generator.next() % 40)".utf8)
      switch generator.next() % 100 {
      case 0..<80: try store.put(Array("v\(step)".utf8), forKey: key, in: table)
      case 80..<92: try store.delete(key: key, in: table)
      case 92..<96: try store.deletePrefix(Array("k\(generator.next() % 4)".utf8), in: table)
      case 96..<98: try store.clearTable(table)
      default:
        var batch = WriteBatch()
        batch.put(Array("batch \(step)".utf8), forKey: key, in: table)
        batch.delete(key: Array("k\(generator.next() % 40)".utf8), in: table)
        try store.write(batch)
      }
    }
    let expected = try store.snapshot()
    try store.close()
    let reopened = try LogStore(path: path, options: .init(corruption: .fail))
    #expect(try reopened.snapshot() == expected)
    try reopened.close()
  }

  @Test(
    "a segment large enough to be scanned on a second thread: damage in it is skipped and counted or refused, a torn tail cut, as in a small one"
  )
  func largeSegmentScannedAlongside() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let count = 20_000
    func key(_ number: Int) -> [UInt8] { Array("key-\(100_000 + number)".utf8) }
    let value = [UInt8](repeating: 0x61, count: 100)
    let store = try LogStore(path: path)
    try store.createTable("t")
    for number in 0..<count - 1 { try store.put(value, forKey: key(number), in: "t") }
    try store.close()
    // The last record in a session of its own, whose end a crash cuts short: the close before
    // proved the rest durable.
    let again = try LogStore(path: path)
    try again.put(value, forKey: key(count - 1), in: "t")
    try again.close()
    let segment = try #require(try segmentFiles(in: path).last)
    // The first close wrote a hint of what it covered: without it, the open scans it all.
    try FileManager.default.removeItem(atPath: String(segment.dropLast(4)) + ".hint")
    var bytes = try recordBytes(segment)
    #expect(bytes.count > Recovery.pipelineThreshold * 2)

    // Damage one record's key deep inside the segment, far past the first chunk of events,
    // and cut the last record in half (and the sync mark after it).
    let damagedKey = key(12_345)
    let damagedAt = try #require(
      (0..<bytes.count - damagedKey.count).first {
        bytes[$0..<$0 + damagedKey.count].elementsEqual(damagedKey)
      })
    bytes[damagedAt + 2] ^= 0x01
    let recordLength = RecordLayout.length(table: 1, key: damagedKey.count, value: value.count)
    bytes.removeLast(RecordLayout.syncMarkLength + recordLength / 2)
    try writeFile(segment, bytes)

    let salvaged = try LogStore(path: path, options: .init(readOnly: true))
    #expect(try salvaged.statistics().damagedRecords == 1)
    #expect(try salvaged.count(in: "t") == count - 2)
    #expect(try salvaged.value(forKey: damagedKey, in: "t") == nil)
    #expect(try salvaged.value(forKey: key(count - 1), in: "t") == nil)
    #expect(try salvaged.value(forKey: key(12_344), in: "t") == value)
    #expect(try salvaged.value(forKey: key(count - 2), in: "t") == value)
    #expect(salvaged.openReport.scannedRecords == count - 1)
    try salvaged.close()

    let error = #expect(throws: LogStoreError.self) {
      try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    }
    #expect(error?.code == .corrupted)
    let recordStart = damagedAt - (recordLength - value.count - damagedKey.count)
    #expect(error?.message.contains("offset \(recordStart)") == true, "\(error?.message ?? "")")

    // A writer cuts the torn tail and goes on after the last good record.
    let writer = try LogStore(path: path)
    try writer.put(value, forKey: key(count - 1), in: "t")
    #expect(try writer.count(in: "t") == count - 1)
    try writer.close()
  }

  @Test("a torn tail is cut off at every byte of the last record, leaving exactly the others")
  func tornTailAtEveryOffset() throws {
    let directory = TemporaryDirectory()
    let (path, segment, lastStart) = try storeWithRecords(directory, count: 5)
    let original = try recordBytes(segment)
    #expect(lastStart < original.count)
    for cut in lastStart...original.count {
      try writeFile(segment, Array(original[..<cut]))
      let store = try LogStore(path: path, options: .init(corruption: .fail))
      // The last put is whole once only the sync mark after it is cut.
      let expected = cut >= original.count - RecordLayout.syncMarkLength ? 5 : 4
      #expect(try store.count(in: "t") == expected, "cut at \(cut)")
      for index in 0..<4 {
        #expect(
          try store.value(forKey: Array("k\(index)".utf8), in: "t") == Array("value \(index)".utf8))
      }
      #expect(try store.statistics().damagedRecords == 0)
      // The store goes on working after the cut: a new record lands where the torn one was.
      try store.put(Array("after".utf8), forKey: Array("new".utf8), in: "t")
      try store.close()
      let reopened = try LogStore(path: path, options: .init(corruption: .fail))
      #expect(try reopened.value(forKey: Array("new".utf8), in: "t") == Array("after".utf8))
      #expect(try reopened.count(in: "t") == expected + 1)
      try reopened.close()
    }
  }

  @Test("a flipped byte in a record: salvage skips and counts it, fail refuses to open")
  func flippedByteInTheMiddle() throws {
    let directory = TemporaryDirectory()
    let (path, segment, _) = try storeWithRecords(directory, count: 3)
    let original = try fileBytes(segment)
    // The second put (k1) is the third record: after the header, createTable, and k0.
    let header = SegmentHeader.size
    let create = RecordLayout.length(table: 1, key: 0, value: 0)
    let first = RecordLayout.length(table: 1, key: 2, value: 7)
    let secondStart = header + create + first
    let secondLength = RecordLayout.length(table: 1, key: 2, value: 7)
    for position in secondStart..<secondStart + secondLength {
      var damaged = original
      damaged[position] ^= 0xFF
      try writeFile(segment, damaged)

      let salvaged = try LogStore(path: path, options: .init(readOnly: true))
      #expect(try salvaged.value(forKey: Array("k0".utf8), in: "t") == Array("value 0".utf8))
      #expect(try salvaged.value(forKey: Array("k1".utf8), in: "t") == nil, "byte \(position)")
      #expect(try salvaged.value(forKey: Array("k2".utf8), in: "t") == Array("value 2".utf8))
      #expect(try salvaged.statistics().damagedRecords == 1)
      try salvaged.close()

      let error = #expect(throws: LogStoreError.self) {
        try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
      }
      #expect(error?.code == .corrupted)
      #expect(error?.message.contains("000001.log") == true)
      #expect(error?.message.contains("offset \(secondStart)") == true)
    }
  }

  @Test("a torn batch is all or nothing")
  func tornBatch() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let store = try LogStore(path: path)
    try store.createTable("t")
    try store.close()
    let segment = try #require(try segmentFiles(in: path).last)
    let before = try fileBytes(segment).count
    let writer = try LogStore(path: path)
    var batch = WriteBatch()
    for index in 0..<5 {
      batch.put(Array("v\(index)".utf8), forKey: Array("b\(index)".utf8), in: "t")
    }
    batch.createTable("u")
    try writer.write(batch)
    try writer.close()
    let original = try fileBytes(segment)
    for cut in before..<original.count {
      try writeFile(segment, Array(original[..<cut]))
      let reopened = try LogStore(path: path, options: .init(readOnly: true))
      #expect(try reopened.count(in: "t") == 0, "cut at \(cut)")
      #expect(try reopened.tableNames() == ["t"])
      try reopened.close()
    }
    try writeFile(segment, original)
    let whole = try LogStore(path: path, options: .init(readOnly: true))
    #expect(try whole.count(in: "t") == 5)
    #expect(try whole.tableNames() == ["t", "u"])
  }

  @Test("zeros after the last record are the clean end, not damage")
  func zeroTail() throws {
    let directory = TemporaryDirectory()
    let (path, segment, _) = try storeWithRecords(directory, count: 3)
    try writeFile(segment, try fileBytes(segment) + [UInt8](repeating: 0, count: 10_000))
    let store = try LogStore(path: path, options: .init(corruption: .fail))
    #expect(try store.count(in: "t") == 3)
    try store.close()
  }

  @Test("a last segment whose creation was cut short is removed; elsewhere it is damage")
  func incompleteSegment() throws {
    let directory = TemporaryDirectory()
    let (path, _, _) = try storeWithRecords(directory, count: 3)
    let stray = path + "/" + StoreFileName.segment(99)
    try writeFile(stray, [UInt8](repeating: 0, count: 20))
    let store = try LogStore(path: path, options: .init(corruption: .fail))
    #expect(try store.count(in: "t") == 3)
    try store.close()
    #expect(!FileManager.default.fileExists(atPath: stray))
  }

  @Test(
    "a segment of a newer format version is refused, whatever the policy; a damaged version byte is damage"
  )
  func newerVersion() throws {
    let directory = TemporaryDirectory()
    let (path, segment, _) = try storeWithRecords(directory, count: 2)
    var bytes = try fileBytes(segment)
    bytes[8] = 9
    // A newer version's header checks (its checksum covers the version).
    let checksum = CRC32C.mask(CRC32C.checksum(Array(bytes[0..<44])))
    withUnsafeBytes(of: checksum.littleEndian) { bytes.replaceSubrange(44..<48, with: $0) }
    try writeFile(segment, bytes)
    let error = #expect(throws: LogStoreError.self) { try LogStore(path: path) }
    #expect(error?.code == .corrupted)
    #expect(error?.message.contains("newer version") == true)
    // The same byte changed without a matching checksum is damage, which salvage gets past.
    bytes[44] ^= 0xFF
    try writeFile(segment, bytes)
    let salvaged = try LogStore(path: path, options: .init(readOnly: true))
    #expect(try salvaged.count(in: "t") == 2)
    #expect(try salvaged.statistics().damagedRecords == 1)
  }

  @Test("a damaged segment header: salvage still reads the records, fail refuses")
  func damagedHeader() throws {
    let directory = TemporaryDirectory()
    let (path, segment, _) = try storeWithRecords(directory, count: 3)
    var bytes = try fileBytes(segment)
    bytes[40] ^= 0x01  // a reserved byte: the header checksum fails, the salt survives
    try writeFile(segment, bytes)
    let error = #expect(throws: LogStoreError.self) {
      try LogStore(path: path, options: .init(corruption: .fail))
    }
    #expect(error?.code == .corrupted)
    let store = try LogStore(path: path)
    #expect(try store.count(in: "t") == 3)
    #expect(try store.statistics().damagedRecords == 1)
    try store.put(Array("x".utf8), forKey: Array("after".utf8), in: "t")
    try store.close()
    let reopened = try LogStore(path: path)
    #expect(try reopened.count(in: "t") == 4)
  }

  @Test("a read-only open changes nothing on disk, even a torn tail")
  func readOnlyChangesNothing() throws {
    let directory = TemporaryDirectory()
    let (path, segment, lastStart) = try storeWithRecords(directory, count: 3)
    let torn = Array(try fileBytes(segment)[..<(lastStart + 5)])
    try writeFile(segment, torn)
    let store = try LogStore(path: path, options: .init(readOnly: true))
    #expect(try store.count(in: "t") == 2)
    #expect(throws: LogStoreError.self) { try store.put([1], forKey: [1], in: "t") }
    try store.close()
    #expect(try fileBytes(segment) == torn)
  }
}
