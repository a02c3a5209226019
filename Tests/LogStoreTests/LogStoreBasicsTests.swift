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
}
