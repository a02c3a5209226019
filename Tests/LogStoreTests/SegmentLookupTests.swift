import LogStoreTesting
import Testing

@testable import LogStore

@Suite("Segment lookup")
struct SegmentLookupTests {
  /// A simulated file system with a directory for the segments.
  private func makeFileSystem() throws -> SimulatedFileSystem {
    let fileSystem = SimulatedFileSystem()
    try fileSystem.createDirectory("/store")
    return fileSystem
  }

  /// An open segment file numbered `number`, on a simulated file system.
  private func segment(_ number: UInt32, on fileSystem: SimulatedFileSystem) throws -> SegmentFile {
    let path = "/store/" + StoreFileName.segment(number)
    let handle = try fileSystem.openFile(path, mode: .createOrOpen)
    try handle.allocate(upTo: 64)
    return SegmentFile(
      number: number, path: path, salt: 0, header: nil, handle: handle,
      mapping: try handle.map(length: 64, writable: false))
  }

  /// Every number near the ones in `lookup` (and far from them) finds what a dictionary finds.
  private func expectAgrees(_ lookup: SegmentLookup, with model: [UInt32: SegmentFile]) {
    var probes: Set<UInt32> = [0, 1, UInt32.max, UInt32.max - 1, 1 << 31, (1 << 31) - 1]
    for number in model.keys {
      for delta in 0...3 {
        probes.insert(number &+ UInt32(delta))
        probes.insert(number &- UInt32(delta))
      }
    }
    for number in probes {
      #expect(lookup[number] === model[number], "segment \(number)")
    }
    #expect(lookup.count == model.count)
    #expect(Set(lookup.numbers) == Set(model.keys))
  }

  @Test("numbers in a narrow window, with gaps, and far apart are all found; others are not")
  func findsWhatADictionaryFinds() throws {
    let fileSystem = try makeFileSystem()
    var generator = SeededGenerator(seed: 12)
    // Narrow (the array), with holes, and spread wide (the dictionary), then changed one by
    // one, crossing from one kind to the other.
    for numbers: [UInt32] in [
      [1], [3, 4, 9], [7, 8, 9, 10, 200], [1, 1_000_000], [5, (1 << 31) - 1], [],
    ] {
      var model: [UInt32: SegmentFile] = [:]
      for number in numbers { model[number] = try segment(number, on: fileSystem) }
      var lookup = SegmentLookup(model)
      expectAgrees(lookup, with: model)
      for _ in 0..<40 {
        let number = UInt32.random(in: 1...300, using: &generator)
        if model[number] != nil, Bool.random(using: &generator) {
          model[number] = nil
          lookup[number] = nil
        } else {
          let file = try segment(number, on: fileSystem)
          model[number] = file
          lookup[number] = file
        }
        expectAgrees(lookup, with: model)
      }
    }
  }

  @Test("a copy keeps listing, and holding open, the segments of its moment")
  func copyKeepsItsSegments() throws {
    let fileSystem = try makeFileSystem()
    var lookup = SegmentLookup([2: try segment(2, on: fileSystem)])
    weak var dropped: SegmentFile?
    let captured: SegmentLookup
    do {
      let file = try segment(3, on: fileSystem)
      dropped = file
      lookup[3] = file
      captured = lookup
      lookup[3] = nil
    }
    #expect(lookup[3] == nil)
    #expect(captured[3] != nil)
    #expect(dropped != nil, "the copy holds the segment open")
    _ = consume captured
    #expect(dropped == nil, "once the copy is gone, so is the segment")
  }
}
