import Testing

@testable import LogStore

/// Packed puts (what a bulk copy such as an import writes) are a batch of puts into one table:
/// the same record as a `WriteBatch` of the same puts, checked the same way before anything
/// is written.
@Suite("Packed puts")
struct PackedPutsTests {
  @Test("packed puts encode to exactly the record of a WriteBatch of the same puts")
  func sameRecordAsWriteBatch() {
    var batch = WriteBatch()
    var puts = PackedPuts(table: "users")
    let stamp = Timestamp(microsecondsSince1970: 1_448_000_061_250_000)
    for index in 0..<50 {
      let key = Array("user_\(index)".utf8)
      let value = Array(String(repeating: "v", count: index * 7).utf8)
      let timestamp = index % 3 == 0 ? nil : stamp
      batch.put(value, forKey: key, in: "users", timestamp: timestamp)
      puts.append(key: key, value: value, timestamp: timestamp)
    }
    // An empty key and an empty value too.
    batch.put([], forKey: [], in: "users")
    puts.append(key: [], value: [], timestamp: nil)
    func encoded(_ mutation: Mutation) -> [UInt8] {
      var bytes = [UInt8](repeating: 0, count: mutation.encodedLength)
      bytes.withUnsafeMutableBytes { buffer in
        mutation.encode(
          into: buffer, sequence: 77, now: Timestamp(microsecondsSince1970: 5), salt: 0x1234_5678)
      }
      return bytes
    }
    withUnsafePointer(to: batch) { batch in
      withUnsafeMutablePointer(to: &puts) { puts in
        let fromBatch = Mutation.batch(batch)
        let fromPuts = Mutation.puts(puts)
        #expect(fromBatch.encodedLength == fromPuts.encodedLength)
        #expect(fromBatch.sequenceCount == fromPuts.sequenceCount)
        #expect(encoded(fromBatch) == encoded(fromPuts))
      }
    }
  }

  @Test("written puts read back, count, survive reopen and verify, under both sync policies")
  func writeAndReopen() throws {
    for sync in [SyncPolicy.never, .always] {
      let directory = TemporaryDirectory()
      let path = directory.appending("store")
      let stamp = Timestamp(microsecondsSince1970: 1_000_000)
      let before = Timestamp.now()
      do {
        let store = try LogStore(path: path, options: .init(sync: sync))
        try store.createTable("t")
        try store.put("old".bytes, forKey: "k3".bytes, in: "t")
        var puts = PackedPuts(table: "t")
        for index in 0..<1000 {
          puts.append(
            key: "k\(index)".bytes, value: "value \(index)".bytes,
            timestamp: index == 0 ? nil : stamp)
        }
        try store.write(puts)
        #expect(try store.count(in: "t") == 1000)
        #expect(try store.value(forKey: "k3".bytes, in: "t") == "value 3".bytes)
        let first = try #require(try store.entry(forKey: "k0".bytes, in: "t"))
        #expect(first.timestamp >= before)
        #expect(try store.entry(forKey: "k999".bytes, in: "t")?.timestamp == stamp)
        try store.close()
      }
      let reopened = try LogStore(path: path)
      let entries = try reopened.entries(in: "t")
      #expect(entries.count == 1000)
      #expect(
        entries.allSatisfy {
          $0.value == "value \(String(decoding: $0.key.dropFirst(), as: UTF8.self))".bytes
        })
      try reopened.close()
      let report = try LogStore.verify(path: path)
      #expect(report.problems.isEmpty)
    }
  }

  @Test("bad packed puts are refused before anything is written")
  func refusals() throws {
    let directory = TemporaryDirectory()
    let store = try LogStore(path: directory.appending("store"))
    try store.createTable("t")
    func refused(_ puts: PackedPuts, _ code: LogStoreError.Code) {
      #expect(throws: LogStoreError.self) { try store.write(puts) }
      do {
        try store.write(puts)
      } catch {
        #expect(error.code == code, "\(error)")
      }
      #expect((try? store.count(in: "t")) == 0)
    }
    var missing = PackedPuts(table: "nowhere")
    missing.append(key: "a".bytes, value: "1".bytes, timestamp: nil)
    refused(missing, .tableNotFound)

    var badName = PackedPuts(table: "")
    badName.append(key: "a".bytes, value: "1".bytes, timestamp: nil)
    refused(badName, .invalidTableName)

    var longKey = PackedPuts(table: "t")
    longKey.append(key: "a".bytes, value: "1".bytes, timestamp: nil)
    longKey.append(
      key: [UInt8](repeating: 0x61, count: RecordLayout.maxKeyLength + 1), value: [],
      timestamp: nil)
    refused(longKey, .invalidArgument)

    var backwards = PackedPuts(table: "t", keys: "ab".bytes, values: "12".bytes)
    backwards.ends = [
      .init(key: 2, value: 1, timestamp: nil), .init(key: 1, value: 2, timestamp: nil),
    ]
    refused(backwards, .invalidArgument)

    var short = PackedPuts(table: "t", keys: "abc".bytes, values: "12".bytes)
    short.ends = [.init(key: 2, value: 2, timestamp: nil)]
    refused(short, .invalidArgument)

    var tooLarge = PackedPuts(table: "t")
    for index in 0..<3 {
      tooLarge.append(
        key: [UInt8(index)], value: [UInt8](repeating: 0, count: RecordLayout.maxBatchLength / 2),
        timestamp: nil)
    }
    refused(tooLarge, .invalidArgument)

    // Nothing at all is not an error, and writes nothing.
    try store.write(PackedPuts(table: "nowhere"))
    try store.close()
  }
}
