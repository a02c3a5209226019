/// The state that every process using a store with ``StoreSharing/manyProcesses`` shares: the
/// file `SHARED`, mapped by each of them, which says where the log ends as the last write left
/// it. A call reads one word of it to learn whether anything changed since it last looked.
///
/// It is never synced and never trusted across a restart of the system: after a power loss it
/// may hold anything, so it names the boot it belongs to, and a process that finds another
/// boot's (or a damaged header) rebuilds it from the log (docs/FORMAT.md, "The shared state").
///
/// ```
/// offset size field
///  0      8   magic          "YTKKVSHR"; "YTKKVOLD" once `recover` put its store aside
///  8      2   version        2
/// 10      2   lockKind       how writes exclude each other: 0, the lock file's `flock`;
///                            otherwise the kind of the mutex at 192 (``FileSystem/sharedMutexKind``)
/// 12     16   boot           the system boot it was made in (``FileSystem/bootSession()``)
/// 28      4   headerCRC      masked CRC-32C of the 28 bytes before it
/// 32      8   publications   one more at each publication: what a call compares first; a
///                            fresh state keeps it (``SharedLog/reset(boot:)``)
/// 40      8   dirty          a write in progress: the segment it writes to (high 32 bits) and
///                            how far into it it may write (low 32 bits); zero when none
/// 48      4   reserved       zero
/// 52      4   compactionRoom the numbers the running compaction reserved for its outputs
/// 56      4   compactionFirst the first of them
/// 60      4   compactor      the process ID of the open that runs a compaction now, or zero:
///                            one compaction at a time in the store, whichever process runs it
/// 64     64   commit slot 0  (``Commit``)
/// 128    64   commit slot 1
/// 192    64   mutex          the writes' lock where `lockKind` is not zero (``SharedMutex``)
/// 256  3840   opens          240 entries of 16 bytes: the opens that use the store now
/// ```
/// Each commit carries the number of its publication; the newest commit is the one of the two
/// slots that checks with the higher number. A commit is written over the older slot, whole,
/// with its checksum: a process killed while it publishes leaves the newer commit in charge,
/// and a reader that meets a slot being written finds its checksum wrong and takes the other.
/// Single aligned words (`publications`, `dirty`, `compactor`, an open's
/// entry) are written in one store each. All integers are little-endian.
package enum SharedState {
  package static let fileName = "SHARED"
  package static let size = 4096
  static let magic: [UInt8] = Array("YTKKVSHR".utf8)
  /// The magic of a state whose store ``LogStore/recover(path:)`` put aside, with a copy in
  /// its place (``SharedLog/retire()``): no process may use it, and a follower that maps it
  /// looks for the state of the store at its path again.
  static let retiredMagic: [UInt8] = Array("YTKKVOLD".utf8)
  static let version: UInt16 = 2
  static let lockKindOffset = 10
  static let headerLength = 28
  static let publicationsOffset = 32
  static let dirtyOffset = 40
  static let compactionRoomOffset = 52
  static let compactionFirstOffset = 56
  static let compactorOffset = 60
  static let slotOffset = 64
  static let mutexOffset = 192
  static let mutexLength = 64
  static let opensOffset = 256
  static let openLength = 16
  package static let openCapacity = (size - opensOffset) / openLength

  /// The log as a write left it, and what the next write needs to go on from there.
  package struct Commit: Equatable, Sendable {
    /// The manifest's generation: it changes when the set of segments does.
    package var generation: UInt64
    /// The sequence number of the next record.
    package var nextSequence: UInt64
    /// The segment writes append to.
    package var activeSegment: UInt32
    /// The active segment's mapping length: it never grows past it.
    package var capacity: UInt32
    /// End of the records (and sync marks) published in the active segment.
    package var committedEnd: UInt32
    /// The active segment's size on disk (space is reserved ahead of the writes).
    package var allocated: UInt32
    /// How much of the active segment is known to be on stable storage.
    package var durableEnd: UInt32
    /// End of the last record that is not a sync mark.
    package var dataEnd: UInt32
    /// The furthest end a sync mark in the active segment claims.
    package var markedEnd: UInt32
    /// The number the next new file takes.
    package var nextFileNumber: UInt32
    /// Which publication this is (``SharedLog/publications`` after it): the newer of the two
    /// slots is the one with the higher number.
    package var publication: UInt64 = 0
    /// How many writes created, cleared or dropped a table, counted on from the commit before
    /// (wrapping): a writer whose view is behind may write without catching up first only
    /// while this is the count of its view, since what it checks is only the tables.
    package var tableChanges: UInt32 = 0

    static let length = 60

    package init(
      generation: UInt64, nextSequence: UInt64, activeSegment: UInt32, capacity: UInt32,
      committedEnd: UInt32, allocated: UInt32, durableEnd: UInt32, dataEnd: UInt32,
      markedEnd: UInt32, nextFileNumber: UInt32
    ) {
      self.generation = generation
      self.nextSequence = nextSequence
      self.activeSegment = activeSegment
      self.capacity = capacity
      self.committedEnd = committedEnd
      self.allocated = allocated
      self.durableEnd = durableEnd
      self.dataEnd = dataEnd
      self.markedEnd = markedEnd
      self.nextFileNumber = nextFileNumber
    }

    /// Writes the slot (60 bytes and its checksum) at `base`.
    package func encode(into base: UnsafeMutableRawPointer) {
      storeLittleEndian(generation, base)
      storeLittleEndian(nextSequence, base + 8)
      storeLittleEndian(activeSegment, base + 16)
      storeLittleEndian(capacity, base + 20)
      storeLittleEndian(committedEnd, base + 24)
      storeLittleEndian(allocated, base + 28)
      storeLittleEndian(durableEnd, base + 32)
      storeLittleEndian(dataEnd, base + 36)
      storeLittleEndian(markedEnd, base + 40)
      storeLittleEndian(nextFileNumber, base + 44)
      storeLittleEndian(publication, base + 48)
      storeLittleEndian(tableChanges, base + 56)
      let checksum = CRC32C.checksum(UnsafeRawBufferPointer(start: base, count: Self.length))
      storeLittleEndian(CRC32C.mask(checksum), base + Self.length)
    }

    /// The slot at `base`, if its checksum holds and its fields agree with each other.
    package static func decode(_ base: UnsafeRawPointer) -> Commit? {
      // Copied first (to the stack): another process may be writing the slot meanwhile, and
      // the checksum must be of the bytes decoded.
      withUnsafeTemporaryAllocation(byteCount: length + 4, alignment: 8) { copy -> Commit? in
        copy.copyMemory(from: UnsafeRawBufferPointer(start: base, count: length + 4))
        let buffer = UnsafeRawBufferPointer(copy)
        let base = buffer.baseAddress!
        guard
          CRC32C.unmask(loadLittleEndian(UInt32.self, base + length))
            == CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buffer[0..<length]))
        else { return nil }
        let field = { (index: Int) in loadLittleEndian(UInt32.self, base + 16 + 4 * index) }
        var commit = Commit(
          generation: loadLittleEndian(UInt64.self, base),
          nextSequence: loadLittleEndian(UInt64.self, base + 8), activeSegment: field(0),
          capacity: field(1), committedEnd: field(2), allocated: field(3), durableEnd: field(4),
          dataEnd: field(5), markedEnd: field(6), nextFileNumber: field(7))
        commit.publication = loadLittleEndian(UInt64.self, base + 48)
        commit.tableChanges = loadLittleEndian(UInt32.self, base + 56)
        return commit.isConsistent ? commit : nil
      }
    }

    /// Offsets in order inside the segment, and numbers in reach: a slot that checks but says
    /// otherwise was not written by this library.
    var isConsistent: Bool {
      let header = UInt32(SegmentHeader.size)
      return activeSegment > 0 && activeSegment < nextFileNumber
        && nextFileNumber <= StoreFileName.maximumNumber &+ 1
        && header <= dataEnd && dataEnd <= committedEnd && markedEnd <= committedEnd
        && durableEnd <= committedEnd && committedEnd <= allocated && allocated <= capacity
        // Below 2^31, so that an offset is an `Int` even where `Int` is 32 bits wide.
        && capacity < 1 << 31
        && nextSequence > 0 && nextSequence < 1 << 62
    }
  }

  /// One open that uses the store: a process and a number it drew for the open.
  package struct Open: Equatable, Sendable {
    package var process: Int32
    package var token: UInt32

    var word: UInt64 { UInt64(UInt32(bitPattern: process)) << 32 | UInt64(token) }

    init?(word: UInt64) {
      guard word != 0 else { return nil }
      process = Int32(bitPattern: UInt32(truncatingIfNeeded: word >> 32))
      token = UInt32(truncatingIfNeeded: word)
    }

    package init(process: Int32, token: UInt32) {
      self.process = process
      self.token = token
    }
  }

  /// Writes a fresh header for `boot`, whose writes take the lock of `lockKind`, into the
  /// file's bytes at `base`; everything after the header is zeroed (the mutex, if any, is
  /// its own to make).
  static func initialize(_ base: UnsafeMutableRawPointer, boot: [UInt8], lockKind: UInt16) {
    precondition(boot.count == 16, "a boot session is 16 bytes")
    base.initializeMemory(as: UInt8.self, repeating: 0, count: size)
    base.copyMemory(from: magic, byteCount: 8)
    storeLittleEndian(version, base + 8)
    storeLittleEndian(lockKind, base + lockKindOffset)
    boot.withUnsafeBytes { (base + 12).copyMemory(from: $0.baseAddress!, byteCount: 16) }
    let checksum = CRC32C.checksum(UnsafeRawBufferPointer(start: base, count: headerLength))
    storeLittleEndian(CRC32C.mask(checksum), base + headerLength)
  }

  /// How the writes of the state at `base` exclude each other (see `lockKind` above).
  static func lockKind(_ base: UnsafeRawPointer) -> UInt16 {
    loadLittleEndian(UInt16.self, base + lockKindOffset)
  }

  /// Whether the bytes at `base` are a state that ``LogStore/recover(path:)`` retired.
  static func isRetired(_ base: UnsafeRawPointer) -> Bool {
    bytesEqual(UnsafeRawBufferPointer(start: base, count: 8), retiredMagic)
  }

  /// Whether the bytes at `base` (``size`` of them) hold a header of this version made in
  /// `boot`.
  static func headerIsValid(_ base: UnsafeRawPointer, boot: [UInt8]) -> Bool {
    let header = UnsafeRawBufferPointer(start: base, count: headerLength)
    return bytesEqual(UnsafeRawBufferPointer(rebasing: header[0..<8]), magic)
      && loadLittleEndian(UInt16.self, base + 8) == version
      && boot.withUnsafeBytes { bytesEqual(UnsafeRawBufferPointer(rebasing: header[12..<28]), $0) }
      && CRC32C.unmask(loadLittleEndian(UInt32.self, base + headerLength))
        == CRC32C.checksum(header)
  }
}
