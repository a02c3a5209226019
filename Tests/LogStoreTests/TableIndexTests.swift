import Testing

@testable import LogStore

@Suite("Table index")
struct TableIndexTests {
  private func location(_ value: Int) -> RecordLocation {
    RecordLocation(
      segment: UInt32(value % 7), offset: UInt32(value), length: UInt32(40 + value % 100))
  }

  @Test(
    "random puts, removes and prefix removes agree with a dictionary, through growth and squeezes")
  func matchesModel() {
    var generator = SplitMix64(seed: 7)
    let index = TableIndex()
    var model: [[UInt8]: RecordLocation] = [:]
    func key(_ number: UInt64) -> [UInt8] { Array("k\(number % 5_000)".utf8) }
    for step in 0..<60_000 {
      let choice = generator.next() % 100
      if choice < 60 {
        let key = key(generator.next())
        let place = location(step)
        let previous = key.withUnsafeBytes {
          index.upsert($0, hash: KeyHash.hash($0), location: place)
        }
        #expect(previous == model[key])
        model[key] = place
      } else if choice < 95 {
        let key = key(generator.next())
        let removed = key.withUnsafeBytes { index.remove($0, hash: KeyHash.hash($0)) }
        #expect(removed == model.removeValue(forKey: key))
      } else {
        let prefix = Array("k\(generator.next() % 60)".utf8)
        let removed = prefix.withUnsafeBytes { index.removeAll(withPrefix: $0) }
        let matching = model.keys.filter { $0.starts(with: prefix) }
        #expect(removed == matching.count)
        for key in matching { model[key] = nil }
      }
    }
    #expect(index.count == model.count)
    #expect(index.liveBytes == model.values.reduce(0) { $0 + Int($1.length) })
    for (key, place) in model {
      #expect(key.withUnsafeBytes { index.find($0, hash: KeyHash.hash($0)) } == place)
    }
    var seen = 0
    index.forEachKey { key, place in
      seen += 1
      #expect(model[Array(key)] == place)
    }
    #expect(seen == model.count)
    // An empty prefix removes everything, and the index still works afterwards.
    #expect(
      index.removeAll(withPrefix: UnsafeRawBufferPointer(start: nil, count: 0)) == model.count)
    #expect(index.count == 0 && index.liveBytes == 0)
    let again = Array("again".utf8)
    again.withUnsafeBytes { _ = index.upsert($0, hash: KeyHash.hash($0), location: location(1)) }
    #expect(again.withUnsafeBytes { index.find($0, hash: KeyHash.hash($0)) } == location(1))
  }
}
