import Foundation
import SQLiteReader
import Testing

/// The reader against SQLite on every fixture: every table, every row, every value.
@Suite(
  "The reader reads what SQLite reads",
  .enabled(if: FixtureSet.canMake, "python3 with its sqlite3 module makes the fixtures"))
struct DifferentialTests {
  @Test("the script makes exactly the fixtures the tests know")
  func manifestListsEveryFixture() throws {
    let made = try FixtureSet.manifest().compactMap { $0["name"] as? String }
    #expect(made.sorted() == FixtureSet.names.sorted())
  }

  @Test("every table, rowid and value is SQLite's", arguments: FixtureSet.names)
  func fixture(_ name: String) throws {
    let fixture = try FixtureSet.fixture(name)
    let database = try fixture.open()
    #expect(database.tables.map(\.name) == fixture.expected.map(\.name))
    for expected in fixture.expected {
      guard let table = database.table(named: expected.name) else {
        Issue.record("\(name): table \(expected.name) is missing")
        continue
      }
      if let reason = expected.refused {
        #expect(!table.isReadable, "\(name): \(expected.name) is \(reason), to be refused")
        #expect(throws: SQLiteReaderError.self) { try database.cursor(over: table) }
        continue
      }
      #expect(table.columns.map(\.name) == expected.columns, "\(name): \(expected.name)")
      let rows = try database.rows(of: table)
      #expect(rows.count == expected.rows.count, "\(name): \(expected.name)")
      for (row, want) in zip(rows, expected.rows) {
        let same =
          row.rowid == want.rowid && row.values.count == want.values.count
          && zip(row.values, want.values).allSatisfy(sameValue)
        if !same {
          Issue.record("\(name): \(expected.name) rowid \(want.rowid): \(row) is not \(want)")
          break
        }
      }
    }
  }
}
