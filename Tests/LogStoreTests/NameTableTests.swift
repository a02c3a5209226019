import Testing

@testable import LogStore
@testable import LogStoreTesting

@Suite("Values by names' bytes")
struct NameTableTests {
  @Test(
    "finds every table by its name's bytes through adds, replacements and removals, across rebuilds, against a dictionary"
  )
  func againstDictionary() {
    let totals = IndexTotals()
    let byName = NameTable<Unmanaged<TableIndex>>()
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
      let previous = Array(name.utf8).withUnsafeBytes {
        byName.set($0, table.map(Unmanaged.passUnretained))
      }
      #expect(previous?.takeUnretainedValue() === reference[name], "\(name)")
      reference[name] = table
      if step % 500 == 0 { check() }
    }
    check()
    for name in names {
      Array(name.utf8).withUnsafeBytes { _ = byName.set($0, nil) }
      reference[name] = nil
    }
    check()
    #expect(byName.count == 0)
  }

  @Test("counts added up by name, and listed whole, match a dictionary's")
  func countsAgainstDictionary() {
    let counts = NameTable<(count: Int, bytes: Int)>()
    var reference: [String: (count: Int, bytes: Int)] = [:]
    var generator = SeededGenerator(seed: 11)
    let names = (0..<3_000).map { "conversation-\($0)" } + ["", "é", "名前"]
    for _ in 0..<20_000 {
      let name = names[Int(generator.next() % UInt64(names.count))]
      let bytes = Int(generator.next() % 64)
      Array(name.utf8).withUnsafeBytes {
        let total = counts.find($0) ?? (0, 0)
        counts.set($0, (total.count + 1, total.bytes + bytes))
      }
      reference[name, default: (0, 0)].count += 1
      reference[name, default: (0, 0)].bytes += bytes
    }
    var listed: [String: (count: Int, bytes: Int)] = [:]
    counts.forEachName { name, total in
      #expect(listed[String(decoding: name, as: UTF8.self)] == nil, "a name listed twice")
      listed[String(decoding: name, as: UTF8.self)] = total
    }
    #expect(counts.count == reference.count)
    #expect(listed.count == reference.count)
    for (name, total) in reference {
      #expect(listed[name]?.count == total.count && listed[name]?.bytes == total.bytes, "\(name)")
    }
  }
}
