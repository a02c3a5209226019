#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Zeroed memory for the index's slot arrays and key arenas.
///
/// A large table is touched at random, one cache line per key: with 4 KiB pages every lookup
/// or insert into a table of tens of megabytes also misses the TLB, and filling it costs a
/// page fault per 4 KiB. On Linux, regions of 2 MiB and more are therefore mapped directly,
/// aligned to 2 MiB and marked for transparent huge pages (where the system allows them; it
/// is only advice), which cuts both. Fresh anonymous mappings are already zero, so nothing is
/// written to clear them. Smaller regions come from `calloc`.
enum IndexMemory {
  private static let hugePage = 2 << 20

  /// `byteCount` bytes of zeroes, aligned to at least 16 bytes. Traps if memory runs out, as
  /// every allocation in Swift does.
  ///
  /// `touchedWhole` says the caller will write all of it soon (a slot array, whose keys land
  /// at random): on Linux its pages are then all made present at once, which costs far less
  /// than a page fault for each on first write. (Elsewhere, and on kernels before 5.14, they
  /// come one fault at a time.)
  static func allocateZeroed(byteCount: Int, touchedWhole: Bool = false) -> UnsafeMutableRawPointer
  {
    #if os(Linux)
      if byteCount >= hugePage {
        return mapZeroed(byteCount, touchedWhole: touchedWhole, aligning: mapAligned)
      }
    #endif
    guard let memory = calloc(1, max(byteCount, 1)) else {
      fatalError("out of memory allocating \(byteCount) bytes for the index")
    }
    return memory
  }

  /// Frees what ``allocateZeroed(byteCount:touchedWhole:)`` returned for the same `byteCount`:
  /// on Linux, a region of 2 MiB or more is always a mapping
  /// (``mapZeroed(_:touchedWhole:aligning:)``).
  static func deallocate(_ memory: UnsafeMutableRawPointer, byteCount: Int) {
    #if os(Linux)
      if byteCount >= hugePage {
        munmap(memory, roundedUp(byteCount))
        return
      }
    #endif
    free(memory)
  }

  private static func roundedUp(_ byteCount: Int) -> Int {
    (byteCount + hugePage - 1) / hugePage * hugePage
  }

  #if os(Linux)
    /// `byteCount` (2 MiB or more) bytes of zeroes mapped as whole huge pages, at a huge-page
    /// boundary by `aligning` (``mapAligned(_:)``, a stand-in in tests); where that fails, a
    /// mapping of the same length anywhere, without the huge pages' gain. Never `calloc`:
    /// ``deallocate(_:byteCount:)`` unmaps every region of this size, and unmapping the C
    /// library's memory would leak it (glibc's blocks are not page-aligned, `munmap` refuses
    /// them) or, under an allocator whose large blocks are page-aligned, take pages from under
    /// it that it hands out again. If no mapping can be made, memory has run out, which traps.
    static func mapZeroed(
      _ byteCount: Int, touchedWhole: Bool, aligning: (Int) -> UnsafeMutableRawPointer?
    ) -> UnsafeMutableRawPointer {
      let length = roundedUp(byteCount)
      var region = aligning(byteCount)
      if region == nil {
        let mapped = mmap(
          nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        if let mapped, mapped != MAP_FAILED { region = mapped }
      }
      guard let region else {
        fatalError("out of memory mapping \(byteCount) bytes for the index")
      }
      // MADV_POPULATE_WRITE, Linux 5.14 and later; refused (and ignored) before.
      if touchedWhole { _ = madvise(region, length, 23) }
      return region
    }

    /// Maps `byteCount` rounded up to whole huge pages, at a huge-page boundary: maps one
    /// huge page more than needed and unmaps the unaligned ends.
    private static func mapAligned(_ byteCount: Int) -> UnsafeMutableRawPointer? {
      let length = roundedUp(byteCount)
      let mapped = mmap(
        nil, length + hugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
      guard let mapped, mapped != MAP_FAILED else { return nil }
      // Unsigned: on 32-bit Linux an address can be above Int.max.
      let address = UInt(bitPattern: mapped)
      let page = UInt(hugePage)
      let aligned = (address &+ page &- 1) & ~(page &- 1)
      let before = Int(aligned &- address)
      if before > 0 { munmap(mapped, before) }
      let after = hugePage - before
      if after > 0 {
        munmap(UnsafeMutableRawPointer(bitPattern: aligned &+ UInt(length)), after)
      }
      let region = UnsafeMutableRawPointer(bitPattern: aligned)!
      _ = madvise(region, length, MADV_HUGEPAGE)
      return region
    }
  #endif
}
