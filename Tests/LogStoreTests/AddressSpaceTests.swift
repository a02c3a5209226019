#if os(Linux)
  import Foundation
  import Testing

  #if canImport(Glibc)
    import Glibc
  #elseif canImport(Musl)
    import Musl
  #elseif canImport(Darwin)
    import Darwin
  #endif

  @testable import LogStore

  /// Every segment of an open store stays mapped, so the address space a store takes grows
  /// with it; on iOS address space is limited (docs/PLATFORMS.md). These tests measure what a
  /// writer and a reader map, from the kernel's list of the process's mappings.
  @Suite("Address space", .serialized)
  struct AddressSpaceTests {
    /// /proc/self/maps, read to its end. The kernel hands it out a page or so per `read` and
    /// resumes each read at the address where the last one stopped, so mappings that do not
    /// change meanwhile (this test's store is idle while it is measured) are each listed once,
    /// whatever the other tests of this process map and unmap between reads.
    private func processMappings() throws -> String {
      let fd = open("/proc/self/maps", O_RDONLY)
      try #require(fd >= 0)
      defer { close(fd) }
      var contents: [UInt8] = []
      var buffer = [UInt8](repeating: 0, count: 1 << 16)
      while true {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
        try #require(count >= 0, "read of /proc/self/maps failed: errno \(errno)")
        if count == 0 { break }
        contents += buffer.prefix(count)
      }
      return String(decoding: contents, as: UTF8.self)
    }

    /// Bytes of this process's mappings of files in `directory`, from /proc/self/maps.
    private func mappedBytes(under directory: String) throws -> Int {
      let maps = try processMappings()
      var total = 0
      for line in maps.split(separator: "\n") where line.hasSuffix(".log") {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 6, fields[5].hasPrefix(directory + "/") else { continue }
        let bounds = fields[0].split(separator: "-").compactMap { Int($0, radix: 16) }
        total += bounds[1] - bounds[0]
      }
      return total
    }

    private func fileBytes(under directory: String, suffix: String) throws -> Int {
      try FileManager.default.contentsOfDirectory(atPath: directory)
        .filter { $0.hasSuffix(suffix) }
        .map { name in
          let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/" + name)
          return (attributes[.size] as? Int) ?? 0
        }
        .reduce(0, +)
    }

    private func pages(_ bytes: Int) -> Int {
      let page = 4096
      return (bytes + page - 1) / page * page
    }

    @Test("a writer maps its segments' sizes plus one segment of room; a reader, the sizes")
    func mappedAgainstStoreSize() throws {
      let directory = TemporaryDirectory()
      let path = directory.appending("store")
      let segment = 2 << 20
      let store = try LogStore(
        path: path, options: .init(compaction: .manual, maxSegmentSize: segment))
      try store.createTable("t")
      let value = [UInt8](repeating: 0x61, count: 1000)
      for index in 0..<20_000 {  // about 20 MB, ten segments
        try store.put(value, forKey: Array("key\(index % 10_000)".utf8), in: "t")
      }
      let statistics = try store.statistics()
      let segmentBytes = try fileBytes(under: path, suffix: ".log")
      let writerMapped = try mappedBytes(under: path)
      // The active segment is mapped at its full capacity, the others at their sizes.
      #expect(writerMapped <= pages(segmentBytes) + segment + 4096 * statistics.segments)
      #expect(writerMapped >= segmentBytes)

      let reader = try LogStore(path: path, options: .init(readOnly: true))
      let bothMapped = try mappedBytes(under: path)
      let readerMapped = bothMapped - writerMapped
      #expect(readerMapped <= pages(segmentBytes) + 4096 * statistics.segments)
      try reader.close()

      try store.compact()
      let compactedMapped = try mappedBytes(under: path)
      let compactedBytes = try fileBytes(under: path, suffix: ".log")
      #expect(compactedMapped <= pages(compactedBytes) + segment + 4096 * 16)
      print(
        "address space: \(statistics.liveBytes) live bytes, \(segmentBytes) segment bytes; "
          + "writer maps \(writerMapped), a reader \(readerMapped); "
          + "after compaction \(compactedBytes) segment bytes, writer maps \(compactedMapped)")
      try store.close()
      #expect(try mappedBytes(under: path) == 0, "close left mappings behind")
    }
  }
#endif
