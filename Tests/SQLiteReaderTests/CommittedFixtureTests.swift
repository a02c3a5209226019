import SQLiteReader
import Testing

/// The committed fixture YTKKeyValueStore made (../shared/fixtures/ytk-sqlite.db, copied into
/// Fixtures/), read without Python: what its README and its `sqlite3 -json` export say.
@Suite("YTKKeyValueStore's own database")
struct CommittedFixtureTests {
  @Test("both tables, every id, value and createdTime, as sqlite3 -json exports them")
  func ytkDatabase() throws {
    let database = try openDatabase(try committedFixture("ytk-sqlite.db"), name: "ytk-sqlite.db")
    #expect(database.tables.map(\.name) == ["user_table", "cache_table"])
    #expect(database.schema.map(\.type) == ["table", "index", "table", "index"])
    #expect(database.header?.pageSize == 4096)
    #expect(database.header?.textEncoding == .utf8)
    let users = try #require(database.table(named: "user_table"))
    #expect(users.columns.map(\.name) == ["id", "json", "createdTime"])
    let rows = try database.rows(of: users)
    #expect(rows.map(\.rowid) == [1, 2, 3, 4, 5, 6])
    #expect(
      rows.map(\.values[0])
        == ["1", "2", "string_key", "number_key", "float_key", "emoji 😀"].map {
          SQLiteValue.text($0)
        })
    #expect(rows[0].values[1] == SQLiteValue.text(#"{"id":1,"name":"tangqiao","age":30}"#))
    #expect(
      rows[2].values[1] == SQLiteValue.text(#"["a plain string with \"quotes\" and \\ backslash"]"#)
    )
    #expect(
      rows.map(\.values[2])
        == [
          "1448000000.0", "1448000061.25", "1448000122.5", "1448000183.75", "1448000245.0",
          "1448000306.25",
        ].map { SQLiteValue.text($0) })
    let cache = try #require(database.table(named: "CACHE_TABLE"))
    let cursor = try database.cursor(over: cache)
    var ids: [String] = []
    while try cursor.next() {
      let id = try cursor.withUTF8Text(at: 0) { String(decoding: $0, as: UTF8.self) }
      ids.append(try #require(id))
      #expect(try cursor.withUTF8Text(at: 1) { $0.count } ?? 0 > 0)
    }
    #expect(ids == ["feed_1", "feed_2"])
    #expect(try cursor.next() == false)
  }
}
