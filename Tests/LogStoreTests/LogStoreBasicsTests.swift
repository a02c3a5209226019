import Testing

@testable import LogStore

@Suite("LogStore basics")
struct LogStoreBasicsTests {
  @Test("put, get, overwrite and delete, then reopen")
  func putGetDeleteReopen() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    do {
      let store = try LogStore(path: path)
      try store.createTable("t")
      try store.put("one".bytes, forKey: "a".bytes, in: "t")
      try store.put("two".bytes, forKey: "b".bytes, in: "t")
      try store.put("uno".bytes, forKey: "a".bytes, in: "t")
      try store.delete(key: "b".bytes, in: "t")
      #expect(try store.value(forKey: "a".bytes, in: "t") == "uno".bytes)
      #expect(try store.value(forKey: "b".bytes, in: "t") == nil)
      #expect(try store.count(in: "t") == 1)
      try store.close()
    }
    let reopened = try LogStore(path: path)
    #expect(try reopened.value(forKey: "a".bytes, in: "t") == "uno".bytes)
    #expect(try reopened.value(forKey: "b".bytes, in: "t") == nil)
    #expect(try reopened.tableNames() == ["t"])
    try reopened.close()
  }

  @Test(
    "entries and keys come sorted by their bytes: zero bytes, 0xFF, prefixes of each other, keys equal in their first 16 bytes, across segments"
  )
  func entriesSortedByBytes() throws {
    let directory = TemporaryDirectory()
    let store = try LogStore(
      path: directory.appending("store"), options: .init(maxSegmentSize: 4 << 10))
    try store.createTable("t")
    var keys: Set<[UInt8]> = [
      [0], [0, 0], [0, 1], [1], [0xFF], [0xFF, 0], [0xFF, 0xFF], [0x7F], [0x80],
      Array("a".utf8), Array("a\u{0}".utf8), Array("ab".utf8),
      Array("0123456789abcdef".utf8), Array("0123456789abcdef\u{0}".utf8),
      Array("0123456789abcdefA".utf8), Array("0123456789abcdeg".utf8),
      Array("0123456789abcde".utf8), Array("0123456789abcdefAB".utf8),
    ]
    var generator = SplitMix64(seed: 5)
    while keys.count < 600 {
      // Short random keys over a few byte values, so that prefixes and ties are common.
      let length = Int(generator.next() % 20) + 1
      keys.insert((0..<length).map { _ in [0, 1, 0x41, 0xFE, 0xFF][Int(generator.next() % 5)] })
    }
    for key in keys { try store.put(key, forKey: key, in: "t") }
    let expected = keys.sorted { $0.lexicographicallyPrecedes($1) }
    #expect(try store.statistics().segments > 1)
    #expect(try store.entries(in: "t").map(\.key) == expected)
    #expect(try store.entries(in: "t").allSatisfy { $0.key == $0.value })
    #expect(try store.keys(in: "t") == expected)
    try store.close()
  }

  @Test(
    "forEachEntry visits the entries of the moment it starts, in key order, and stops when asked; writes made meanwhile do not change them"
  )
  func forEachEntryVisitsASnapshot() throws {
    let directory = TemporaryDirectory()
    let store = try LogStore(path: directory.appending("store"))
    try store.createTable("t")
    for number in (0..<100).reversed() {
      try store.put("value \(number)".bytes, forKey: "key \(1_000 + number)".bytes, in: "t")
    }
    let expected = try store.entries(in: "t")
    #expect(expected.count == 100 && expected.first?.key == "key 1000".bytes)

    var visited: [LogStore.Entry] = []
    try store.forEachEntry(in: "t") { key, value, timestamp in
      visited.append(LogStore.Entry(key: Array(key), value: Array(value), timestamp: timestamp))
      // Changes made during the visit, by the visitor itself.
      try? store.put("changed".bytes, forKey: "key 1099".bytes, in: "t")
      try? store.delete(key: "key 1050".bytes, in: "t")
      try? store.put("new".bytes, forKey: "key 1000a".bytes, in: "t")
      return true
    }
    #expect(visited == expected)
    #expect(try store.value(forKey: "key 1099".bytes, in: "t") == "changed".bytes)
    #expect(try store.count(in: "t") == 100)

    var firstTen: [[UInt8]] = []
    try store.forEachEntry(in: "t") { key, _, _ in
      firstTen.append(Array(key))
      return firstTen.count < 10
    }
    #expect(firstTen == Array(try store.keys(in: "t").prefix(10)))

    #expect(throws: LogStoreError.self) {
      try store.forEachEntry(in: "missing") { _, _, _ in true }
    }
    try store.close()
  }

  @Test(
    "withValue lends the stored bytes of a value to its closure and returns its result; nil without calling it for a missing, deleted or expired key"
  )
  func borrowedValue() throws {
    let directory = TemporaryDirectory()
    let store = try LogStore(path: directory.appending("store"))
    try store.createTable("t")
    let large = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
    try store.put("small".bytes, forKey: "a".bytes, in: "t")
    try store.put(large, forKey: "b".bytes, in: "t")
    try store.put("gone".bytes, forKey: "c".bytes, in: "t")
    try store.delete(key: "c".bytes, in: "t")
    try store.put(
      "soon".bytes, forKey: "d".bytes, in: "t",
      expiresAt: Timestamp(microsecondsSince1970: store.expiryNow()))
    #expect(try store.withValue(forKey: "a".bytes, in: "t") { Array($0) } == "small".bytes)
    #expect(try store.withValue(forKey: "b".bytes, in: "t") { Array($0) } == large)
    #expect(try store.withValue(forKey: "b".bytes, in: "t") { $0.count } == large.count)
    var calls = 0
    for key in ["c", "d", "missing"] {
      #expect(try store.withValue(forKey: key.bytes, in: "t") { _ in calls += 1 } == nil, "\(key)")
    }
    #expect(calls == 0)
    let error = #expect(throws: LogStoreError.self) {
      try store.withValue(forKey: "a".bytes, in: "nowhere") { $0.count }
    }
    #expect(error?.code == .tableNotFound)
    try store.close()
  }

  @Test("an empty key is one key, whether or not the buffer naming it has an address")
  func emptyKey() throws {
    let directory = TemporaryDirectory()
    let store = try LogStore(path: directory.appending("store"))
    try store.createTable("t")
    try store.put("empty".bytes, forKey: [], in: "t")
    let withoutAddress = UnsafeRawBufferPointer(start: nil, count: 0)
    let found = try store.withValue(forKey: withoutAddress, in: "t") { value, _ in Array(value) }
    #expect(found == "empty".bytes)
    try store.delete(key: withoutAddress, in: "t")
    #expect(try store.value(forKey: [], in: "t") == nil)
    try store.close()
  }
}
