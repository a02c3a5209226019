import Testing

@testable import LogStore
@testable import LogStoreTesting

@Suite("Tables by name")
struct TablesByNameTests {
  @Test(
    "finds every table by its name's bytes through adds, replacements and removals, across rebuilds, against a dictionary"
  )
  func againstDictionary() {
    let totals = IndexTotals()
    let byName = TablesByName()
    var reference: [String: TableIndex] = [:]
    var generator = SeededGenerator(seed: 7)
    // Names that share prefixes, the empty name, and names of the longest length.
    var names =
      (0..<600).map { "table_\($0)" } + ["", "t", "ta", String(repeating: "z", count: 255)]
    names += (0..<40).map { String(repeating: "n", count: $0) }
    func check() {
      for name in names {
        let found = Array(name.utf8).withUnsafeBytes { byName.find($0) }
        #expect(found?.takeUnretainedValue() === reference[name], "\(name)")
      }
      #expect(byName.count == reference.count)
    }
    for step in 0..<6_000 {
      let name = names[Int(generator.next() % UInt64(names.count))]
      let table: TableIndex? = generator.next() % 3 == 0 ? nil : TableIndex(totals: totals)
      Array(name.utf8).withUnsafeBytes { byName.set($0, table) }
      reference[name] = table
      if step % 500 == 0 { check() }
    }
    check()
    byName.reserveCapacity(5_000, nameBytes: 0)
    check()
    for name in names {
      Array(name.utf8).withUnsafeBytes { byName.set($0, nil) }
      reference[name] = nil
    }
    check()
    #expect(byName.count == 0)
  }
}
