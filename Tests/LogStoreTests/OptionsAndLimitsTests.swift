import Testing

@testable import LogStore

/// What a store refuses before it writes anything, and the values at the edges of what it
/// takes.
@Suite("Options and limits")
struct OptionsAndLimitsTests {
  @Test("options out of range are refused at open, with what was given and what is allowed")
  func invalidOptions() throws {
    let directory = TemporaryDirectory()
    let cases: [(LogStore.Options, String)] = [
      (.init(sync: .interval(milliseconds: 0)), "the sync interval must be positive, not 0 ms"),
      (.init(sync: .interval(milliseconds: -5)), "the sync interval must be positive, not -5 ms"),
      (
        .init(compaction: .whenGarbageExceeds(fraction: 0)),
        "the compaction threshold must be between 0 and 1, not 0.0"
      ),
      (
        .init(compaction: .whenGarbageExceeds(fraction: 1)),
        "the compaction threshold must be between 0 and 1, not 1.0"
      ),
      (
        .init(compaction: .whenGarbageExceeds(fraction: .nan)),
        "the compaction threshold must be between 0 and 1, not nan"
      ),
      (
        .init(maxSegmentSize: 4095),
        "maxSegmentSize must be between 4 KiB and 2 GiB, not 4095 bytes"
      ),
    ]
    for (options, message) in cases {
      let error = #expect(throws: LogStoreError.self) {
        try LogStore(path: directory.appending("store"), options: options)
      }
      #expect(error?.code == .invalidArgument)
      #expect(error?.message == message)
    }
    #expect(
      try SystemFileSystem().contentsOfDirectory(directory.path).isEmpty,
      "a refused open created files")
  }

  @Test("a sync interval too long to count in nanoseconds is taken, and close still ends it")
  func longestSyncInterval() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let store = try LogStore(path: path, options: .init(sync: .interval(milliseconds: .max)))
    try store.createTable("t")
    try store.put("v".bytes, forKey: "k".bytes, in: "t")
    try store.close()
    let reopened = try LogStore(path: path)
    #expect(try reopened.value(forKey: "k".bytes, in: "t") == "v".bytes)
  }

  @Test("a batch over 256 MiB is refused before anything is written, whatever its members")
  func batchLimit() throws {
    let directory = TemporaryDirectory()
    let store = try LogStore(path: directory.appending("store"))
    try store.createTable("t")
    // Four values of the largest size (one array, shared) pass the limit by their headers.
    let largest = [UInt8](repeating: 1, count: RecordLayout.maxValueLength)
    var batch = WriteBatch()
    for index in 0..<5 { batch.put(largest, forKey: [UInt8(index)], in: "t") }
    let error = #expect(throws: LogStoreError.self) { try store.write(batch) }
    #expect(error?.code == .invalidArgument)
    let encoded = 4 * RecordLayout.length(table: 1, key: 1, value: RecordLayout.maxValueLength)
    #expect(
      error?.message
        == "the batch encodes to \(encoded) bytes; the limit is \(RecordLayout.maxBatchLength)")
    #expect(try store.count(in: "t") == 0)
    try store.close()
  }

  @Test("a batch at the limit that its table's default lifetime takes past it is refused")
  func batchLimitAfterDefaultLifetime() throws {
    let directory = TemporaryDirectory()
    let store = try LogStore(path: directory.appending("store"))
    try store.createTable("t", defaultLifetime: 60_000_000)
    // Four puts of a quarter of the limit each: exactly at it without expiry fields, past it
    // with the one each put gets from the table's lifetime.
    let value = RecordLayout.maxBatchLength / 4 - RecordLayout.length(table: 1, key: 1, value: 0)
    let bytes = [UInt8](repeating: 7, count: value)
    var puts = PackedPuts(table: "t")
    for index in 0..<4 { puts.append(key: [UInt8(index)], value: bytes, timestamp: nil) }
    #expect(
      try withUnsafeMutablePointer(to: &puts) { try Mutation.puts($0).checkedLength() }
        == RecordLayout.headerSize + RecordLayout.maxBatchLength)
    let error = #expect(throws: LogStoreError.self) { try store.write(puts) }
    #expect(error?.code == .invalidArgument)
    #expect(
      error?.message
        == "the batch encodes to \(RecordLayout.maxBatchLength + 32) bytes; the limit is "
        + "\(RecordLayout.maxBatchLength)")
    #expect(try store.count(in: "t") == 0)
    try store.close()
  }

  @Test("a batch applies every kind of operation in order, and reopens the same")
  func batchOfEveryKind() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let store = try LogStore(path: path)
    var batch = WriteBatch()
    batch.createTable("kept")
    batch.createTable("cleared")
    batch.createTable("dropped")
    for key in ["a1", "a2", "b1"] {
      batch.put(key.bytes, forKey: key.bytes, in: "kept")
      batch.put(key.bytes, forKey: key.bytes, in: "cleared")
    }
    batch.put("x".bytes, forKey: "x".bytes, in: "dropped")
    batch.deletePrefix("a".bytes, in: "kept")
    batch.delete(key: "b1".bytes, in: "kept")
    batch.put(
      "late".bytes, forKey: "a3".bytes, in: "kept", timestamp: Timestamp(microsecondsSince1970: 5))
    batch.clearTable("cleared")
    batch.put("after".bytes, forKey: "c".bytes, in: "cleared")
    batch.dropTable("dropped")
    batch.append(.createTable("appended"))
    #expect(batch.count == 17)
    try store.write(batch)
    let expected = ["kept": ["a3": "late"], "cleared": ["c": "after"], "appended": [:]]
    #expect(try store.snapshot() == expected)
    #expect(try store.entry(forKey: "a3".bytes, in: "kept")?.timestamp.microsecondsSince1970 == 5)
    try store.close()
    let reopened = try LogStore(path: path)
    #expect(try reopened.snapshot() == expected)
  }

  @Test("timestamps order by time and print as microseconds since 1970")
  func timestamps() {
    let early = Timestamp(microsecondsSince1970: -1)
    let late = Timestamp(microsecondsSince1970: 1_700_000_000_000_000)
    #expect(early < late)
    #expect(!(late < early))
    #expect(!(late < late))
    #expect([late, early].sorted() == [early, late])
    #expect(late.description == "1700000000000000µs since 1970")
    #expect(Timestamp.now() > late)
  }
}
