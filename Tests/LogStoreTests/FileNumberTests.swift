import Foundation
import Testing

@testable import LogStore

/// File numbers stay below 2^31, so the next one never overflows `UInt32`: a file named with a
/// larger number is not the store's, and a store whose numbers are used up says so instead of
/// trapping or creating a file it would not read back.
@Suite("File numbers")
struct FileNumberTests {
  @Test("names of 2^31 and above are not segments or hints")
  func classify() {
    #expect(StoreFileName.classify("2147483647.log") == .segment(2_147_483_647))
    #expect(StoreFileName.classify("2147483648.log") == .other)
    #expect(StoreFileName.classify("4294967295.hint") == .other)
    #expect(StoreFileName.classify("4294967296.log") == .other)
  }

  @Test(
    "a file numbered 2^31 - 1: reads work; the writer's next segment is refused with .corrupted")
  func usedUp() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    do {
      let store = try LogStore(path: path, options: .init(compaction: .manual))
      try store.createTable("t")
      try store.put(Array("v".utf8), forKey: Array("k".utf8), in: "t")
      try store.close()
    }
    // A foreign file with an out-of-range name is ignored by both kinds of open.
    try Data([1, 2, 3]).write(to: URL(fileURLWithPath: path + "/3000000000.log"))
    let reader = try LogStore(path: path, options: .init(readOnly: true))
    #expect(try reader.value(forKey: Array("k".utf8), in: "t") == Array("v".utf8))
    try reader.close()
    let writer = try LogStore(path: path, options: .init(compaction: .manual))
    #expect(try writer.value(forKey: Array("k".utf8), in: "t") == Array("v".utf8))
    try writer.close()

    // The highest number a store uses (an empty file: a segment whose creation was cut
    // short, removed at open); the next segment would be 2^31.
    try Data().write(to: URL(fileURLWithPath: path + "/2147483647.hint"))
    let full = try LogStore(path: path, options: .init(compaction: .manual, maxSegmentSize: 4096))
    let value = [UInt8](repeating: 0x61, count: 1000)
    let error = #expect(throws: LogStoreError.self) {
      for index in 0..<200 { try full.put(value, forKey: Array("k\(index)".utf8), in: "t") }
    }
    #expect(error?.code == .corrupted)
    #expect(error?.message.contains("used up") == true)
    #expect(try full.value(forKey: Array("k".utf8), in: "t") == Array("v".utf8))
    try full.close()
  }
}
