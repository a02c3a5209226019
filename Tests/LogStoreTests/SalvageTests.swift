import Testing

@testable import LogStore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

@Suite("Recover, large values")
struct RecoverLargeValuesTests {
  @Test("recover copies values that together pass the 256 MiB batch limit")
  func largeValues() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    // 5 × 52 MiB: more than a batch may hold, in values a batch of 1,000 items would take.
    let value = [UInt8](repeating: 0x62, count: 52 << 20)
    do {
      let store = try LogStore(path: path, options: .init(compaction: .manual))
      try store.createTable("big")
      for index in 0..<5 { try store.put(value, forKey: [UInt8(index)], in: "big") }
      try store.close()
    }
    let report = try LogStore.recover(path: path)
    #expect(report.items == 5)
    let recovered = try LogStore(
      path: path, options: .init(readOnly: true, verifyChecksumsOnRead: false))
    for index in 0..<5 {
      let copy = try #require(try recovered.value(forKey: [UInt8(index)], in: "big"))
      // Compared as memory: `==` over 52 MiB is slow in a debug build.
      #expect(copy.count == value.count)
      #expect(
        copy.withUnsafeBytes { a in
          value.withUnsafeBytes { b in memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 }
        })
    }
    try recovered.close()
  }
}
