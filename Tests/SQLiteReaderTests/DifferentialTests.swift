import Foundation
import LogStoreTesting
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

  @Test("small.db damaged byte by byte: where SQLite and the reader both read it, they agree")
  func damagedCopies() throws {
    let bytes = try committedFixture("small.db")
    // Every byte of the header and page 1's b-tree header, every third byte after them; at
    // sample depth, of those after them, the ones in a page's b-tree header or last, and
    // every sixth (every 18th byte).
    let edges = pageEdges(of: bytes, pageSize: HostileInputTests.pageSize)
    let positions =
      Array(0..<128)
      + TestDepth.cases(
        stride(from: 128, to: bytes.count, by: 3), every: 6, keeping: edges.contains)
    let directory = NSTemporaryDirectory() + "sqlite-reader-damage-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    try writeFile(directory + "/original.db", bytes)
    for position in positions {
      var damaged = bytes
      damaged[position] ^= 0xFF
      try writeFile(directory + "/\(position).db", damaged)
    }
    let original = try openDatabase(bytes).everyRow()
    try FixtureSet.runPython([FixtureSet.script, "--dump", directory])
    let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/answers.json"))
    let answers = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    var agreed = 0
    var onlySQLite: [Int] = []
    var onlyReader: [Int] = []
    for position in positions {
      let answer = try #require(answers["\(position).db"] as? [String: Any])
      var damaged = bytes
      damaged[position] ^= 0xFF
      let mine = Result { try openDatabase(damaged).everyRow() }
      if answer["same"] != nil {
        switch mine {
        case .success(let read):
          #expect(read == original, "byte \(position): SQLite reads it as undamaged")
          agreed += 1
        case .failure:
          onlySQLite.append(position)
        }
        continue
      }
      guard let tables = answer["tables"] as? [[String: Any]] else {
        if case .success = mine { onlyReader.append(position) }
        continue
      }
      guard case .success(let read) = mine else {
        onlySQLite.append(position)
        continue
      }
      for table in try tables.map(ExpectedTable.init) where table.refused == nil {
        let rows = read[table.name] ?? []
        let same =
          rows.count == table.rows.count
          && zip(rows, table.rows).allSatisfy { mine, theirs in
            mine.rowid == theirs.rowid && mine.values.count == theirs.values.count
              && zip(mine.values, theirs.values).allSatisfy(sameValue)
          }
        #expect(same, "byte \(position): table \(table.name) reads differently from SQLite")
      }
      agreed += 1
    }
    // The reader refuses damage SQLite reads past (rows out of order, a freelist that
    // disagrees with the header): that is the safe direction. Print the tally for the record.
    print(
      "damaged copies: \(agreed) read alike, \(onlySQLite.count) refused only by the reader, "
        + "\(onlyReader.count) read only by the reader")
    #expect(agreed > positions.count / 2)
  }
}
