/// Walks the records of a segment's bytes in order, telling good records from damage and from
/// the end of the log.
///
/// Rules (docs/FORMAT.md, "Recovery", rules 5 and 6):
/// - A record is good when it decodes, its checksum matches, its sequence number is above
///   the previous good record's, and (for a batch) every member is good; a sync mark, also
///   when what it claims lies between the segment header and itself.
/// - What a bad record means depends on whether the bytes it lies in are known to be on stable
///   storage (``Extent``). In durable bytes it is damage: the scanner looks for the next good
///   record further on, and the bytes in between are one damaged region. Past what is known
///   durable, a power loss may have kept pages written later and lost earlier ones: the log
///   ends at the first bad record there (a torn tail), whatever good records follow.
/// - Zeros to the end of the bytes are the clean end (space reserved but never written), except
///   in bytes another process published (``Extent/published``), which are records to the end.
///
/// Sync marks are read, never handed out: they change nothing in the store.
package struct SegmentScanner {
  package enum Event {
    case record(Record, offset: Int)
    case damaged(offset: Int, length: Int, reason: String)
  }

  /// How much of a segment's bytes is known to be on stable storage.
  package enum Extent: Sendable, Equatable {
    /// All of it: a segment synced whole (every segment but the last, which was synced before
    /// the next one was created, and every compaction output), in a format version that marks
    /// its syncs (3). A bad record is damage; with no good record after it, the rest of the
    /// segment is one damaged region. It ends with a sync mark claiming all its records: one
    /// that ends otherwise was cut short, which is damage too, at its end.
    case sealed
    /// As ``sealed``, for a segment of a version before sync marks (1, 2), or whose header
    /// (with its version) cannot be read, or read only up to a point that is not its end.
    case sealedWithoutMarks
    /// The last segment, in a version that marks its syncs (3): its bytes are durable up to
    /// the furthest offset a sync mark in it claims (or the scan's `start`, which a hint file or
    /// the index file stood for, both written after a sync); the log ends at the first bad
    /// record past that.
    case unsealed
    /// The last segment of a version that recorded no syncs (1, 2): a bad record followed by
    /// a good one is damage, as in a sealed segment; with none after it, a torn tail.
    case unsealedWithoutMarks
    /// The active segment up to the end another process published (its commit's
    /// `committedEnd`, in `.manyProcesses` use): records to the end, as a sealed segment's are,
    /// zeros included, for the writer copied them before it published. But the processor may
    /// show this one the writer's stores in another order than they were made (ARM does, and no
    /// barrier comes between the records and the commit), so a bad record is looked at again
    /// (as beside a writer: `mayBeBeingWritten`) before it counts as damage.
    case published

    /// The extent of a segment with `header` (nil: unreadable) that is the last one or not.
    package static func of(header: SegmentHeader?, isLast: Bool) -> Extent {
      guard let header else { return isLast ? .unsealed : .sealedWithoutMarks }
      let marked = header.version >= SegmentHeader.syncMarksVersion
      switch (isLast && header.compaction == nil, marked) {
      case (true, true): return .unsealed
      case (true, false): return .unsealedWithoutMarks
      case (false, true): return .sealed
      case (false, false): return .sealedWithoutMarks
      }
    }

    /// The extent of a segment read up to an end the store already knows, rather than one a
    /// scan is to find: a running store's directory read anew from its log (a rebuild, an index
    /// file adopted, what another process published). Its open found where the log ended (an
    /// index file vouching for the bytes it covers, sync marks for the rest), and its writes
    /// went on from there: the last segment's bytes before that end are records, as a sealed
    /// segment's are. A bad one among them is damage, skipped and counted, never a torn tail
    /// that would drop the good records after it.
    package static func known(header: SegmentHeader?, isLast: Bool) -> Extent {
      switch of(header: header, isLast: isLast) {
      case .unsealed, .unsealedWithoutMarks: return .sealedWithoutMarks
      case let sealed: return sealed
      }
    }
  }

  let bytes: UnsafeRawBufferPointer
  /// What keeps `bytes` mapped (see `init`).
  let owner: AnyObject?
  let salt: UInt32
  let extent: Extent
  /// A writer may be appending to these bytes right now (see `init`).
  let mayBeBeingWritten: Bool
  /// How long a bad record followed by a good one is waited for (see `init`).
  let waitsForReorderedStores: Bool
  /// How the scanner waits between two looks at a bad record (see `init`).
  private let pause: @Sendable (_ microseconds: Int) -> Void
  private(set) var offset: Int
  /// The last sequence number the good records so far take (a batch, one per member).
  package private(set) var lastSequence: UInt64
  /// Where the good data ends: after the last good record or damaged region.
  package private(set) var end: Int
  /// Where the last good record that is not a sync mark ends (or the start).
  package private(set) var dataEnd: Int
  /// Whether scanning stopped at a torn tail: bytes that are not zero past `end`, in the last
  /// segment, which a writer clears (a write cut short, or what followed a page that a power
  /// loss lost).
  package private(set) var foundTornTail = false
  /// Good records past `end` that the torn tail holds (they followed what a power loss lost, so
  /// they are not part of the log), counted when the tail was looked through for sync marks.
  package private(set) var recordsInTornTail = 0
  /// How far the bytes are known durable (``Extent``): the furthest claim of a sync mark read so
  /// far, or `start`.
  package private(set) var provenEnd: Int
  /// Whether the last good record read is a sync mark (or, before any, whether a hint file or
  /// the index file stood for the bytes before `start`, those of a sealed segment's last mark
  /// included).
  private var endsWithMark: Bool
  /// Whether the bytes after the first bad record past `provenEnd` were looked through for sync
  /// marks: once is enough, since every later mark was then seen.
  private var lookedAhead = false
  /// Where the good records met by looking ahead start.
  private var recordsLookedAhead: [Int] = []
  private var finished = false

  /// Sequence numbers a record found by resynchronizing may jump ahead by; anything further
  /// is taken for random bytes that happened to pass the other checks.
  private static let resyncSequenceWindow: UInt64 = 1 << 40

  /// - Parameters:
  ///   - bytes: the segment's bytes, header included; scanning starts after the header.
  ///   - owner: what keeps `bytes` mapped: the segment file whose mapping they are. The scanner
  ///     holds it, so the records it returns, which are views of `bytes`, stay readable as long
  ///     as the scanner is kept (``ScanPipeline`` keeps it on another thread, and hands out
  ///     records while it does). Nil only for a buffer that the caller's own scope keeps.
  ///   - baseSequence: the segment's first sequence number; records must not be below it.
  ///   - extent: how much of the bytes is known durable, which decides what a bad record means.
  ///   - start: where to start, when a hint file or the index file has covered the bytes
  ///     before it (both written after those bytes were synced).
  ///   - mayBeBeingWritten: the bytes are a live mapping of the segment a writer may be
  ///     appending to right now. A record still being copied looks like a torn tail, which
  ///     is fine: the view ends before it. But while the scanner looks past it, the writer goes
  ///     on: by the time a sync mark or a good record is found that makes the record count as
  ///     damage, it may be complete. So such a record is looked at again before it is taken
  ///     for damage; damage stays bad.
  ///   - waitsForReorderedStores: on a processor that may show a thread's stores to another
  ///     out of order, the records of one group commit can become visible out of order too:
  ///     there the bad record is looked at again for up to about 30 ms, in growing steps (a
  ///     record is copied within microseconds). Defaults to ``storesMayBeSeenOutOfOrder``.
  ///   - pause: how to wait between two looks: a pause of the thread. A test passes one that
  ///     finishes the record, as a writer would meanwhile.
  package init(
    bytes: UnsafeRawBufferPointer, owner: AnyObject?, salt: UInt32, baseSequence: UInt64,
    extent: Extent, start: Int = SegmentHeader.size, mayBeBeingWritten: Bool = false,
    waitsForReorderedStores: Bool = SegmentScanner.storesMayBeSeenOutOfOrder,
    pause: @escaping @Sendable (_ microseconds: Int) -> Void = { pauseThread(microseconds: $0) }
  ) {
    self.pause = pause
    self.bytes = bytes
    self.owner = owner
    self.salt = salt
    self.extent = extent
    self.mayBeBeingWritten = mayBeBeingWritten
    self.waitsForReorderedStores = waitsForReorderedStores
    self.offset = min(start, bytes.count)
    self.end = offset
    self.dataEnd = offset
    self.provenEnd = offset
    self.endsWithMark = offset > SegmentHeader.size
    self.lastSequence = baseSequence == 0 ? 0 : baseSequence - 1
  }

  package mutating func next() -> Event? {
    while !finished && offset < bytes.count {
      switch check(at: offset) {
      case .success(let record, let sequences):
        lastSequence = record.sequence &+ UInt64(sequences) &- 1
        let at = offset
        offset += record.length
        end = offset
        endsWithMark = record.kind == .syncMark
        if record.kind == .syncMark {
          provenEnd = max(provenEnd, RecordCodec.syncedEnd(of: record))
          continue
        }
        dataEnd = offset
        return .record(record, offset: at)
      case .failure(let reason):
        if let event = badRecord(at: offset, reason: reason) { return event }
      }
    }
    return finished ? nil : atEnd()
  }

  /// The scan has reached the end of the records: nil, unless a sealed segment ends before
  /// the sync mark that ends it, which is reported once, at the end, as damage of no length.
  private mutating func atEnd() -> Event? {
    finished = true
    // A segment that holds nothing at all is left out: a writer whose creation of a segment
    // failed, and whose removal of it failed too, leaves one.
    guard extent == .sealed, end > SegmentHeader.size, dataEnd > provenEnd || !endsWithMark
    else { return nil }
    return .damaged(
      offset: end, length: 0,
      reason: "the segment ends before the sync mark that ends every sealed segment: cut short")
  }

  /// What the bad record at `position` means: a damaged region to report (scanning goes on
  /// after it), or the end (`finished` is set).
  private mutating func badRecord(at position: Int, reason: String) -> Event? {
    if extent == .published {
      // Published: a record, once this processor shows the writer's stores.
      if settles(at: position) { return nil }
    } else if isZero(from: position) {
      // Zeros to the end are space reserved ahead of the writes (every segment keeps its
      // reserve): the clean end, found without looking for a record in them byte by byte.
      return atEnd()
    }
    var limit = bytes.count - RecordLayout.headerSize
    switch extent {
    case .sealed, .sealedWithoutMarks, .unsealedWithoutMarks, .published:
      break
    case .unsealed:
      // Whether the bad record lies in durable bytes may depend on a mark further on.
      if !lookedAhead {
        lookedAhead = true
        lookAhead(from: position)
      }
      if position >= provenEnd { return endsLog(at: position) }
      // Damage in durable bytes, unless a writer beside this reader has finished the record
      // since it was read (and synced and marked it: see `init`). A record found past them
      // would be one that may have outlived those before it.
      if mayBeBeingWritten && settles(at: position) { return nil }
      limit = min(limit, provenEnd)
    }
    if let resume = resynchronize(after: position, upTo: limit) {
      if extent == .unsealedWithoutMarks && mayBeBeingWritten && settles(at: position) {
        return nil
      }
      offset = resume
      end = resume
      return .damaged(offset: position, length: resume - position, reason: reason)
    }
    switch extent {
    case .sealed, .sealedWithoutMarks, .published:
      finished = true
      end = bytes.count
      return .damaged(offset: position, length: bytes.count - position, reason: reason)
    case .unsealedWithoutMarks:
      return endsLog(at: position)
    case .unsealed:
      // Nothing good before the end of what is durable: that much is damaged, and the log
      // ends at it (the record there, if any, is not good either).
      offset = provenEnd
      end = provenEnd
      return .damaged(offset: position, length: provenEnd - position, reason: reason)
    }
  }

  /// Ends the scan at `position`: a torn tail unless every byte from there on is zero.
  private mutating func endsLog(at position: Int) -> Event? {
    finished = true
    end = position
    foundTornTail = !isZero(from: position)
    recordsInTornTail = recordsLookedAhead.reduce(0) { $0 + ($1 >= position ? 1 : 0) }
    return nil
  }

  /// Looks through the bytes from `position` on (which begin with a bad record) for sync marks,
  /// as a scan of a sealed segment would find them, raising `provenEnd` to the furthest claim;
  /// notes where the good records on the way start.
  private mutating func lookAhead(from position: Int) {
    var probe = SegmentScanner(
      bytes: bytes, owner: nil, salt: salt, baseSequence: 0, extent: .sealedWithoutMarks,
      start: position, waitsForReorderedStores: false)
    probe.lastSequence = lastSequence
    while let event = probe.next() {
      if case .record(_, let offset) = event { recordsLookedAhead.append(offset) }
    }
    provenEnd = max(provenEnd, probe.provenEnd)
  }

  private enum Check {
    /// A good record and how many sequence numbers it takes (a batch, one per member).
    case success(Record, sequences: Int)
    case failure(String)
  }

  private func check(at position: Int) -> Check {
    let record: Record
    do {
      record = try RecordCodec.decode(bytes, at: position, salt: salt)
    } catch {
      return .failure(error == .truncated ? "record runs past the end of the file" : error.reason)
    }
    guard Self.follows(record.sequence, kind: record.kind, after: lastSequence) else {
      return .failure("sequence number \(record.sequence) does not follow \(lastSequence)")
    }
    if record.kind == .syncMark {
      let claim = RecordCodec.syncedEnd(of: record)
      guard claim >= SegmentHeader.size, claim <= position else {
        return .failure("sync mark claims bytes up to \(claim), not before itself")
      }
    }
    guard record.kind == .batch else { return .success(record, sequences: 1) }
    do {
      let members = try RecordCodec.validateMembers(of: record, salt: salt)
      return .success(record, sequences: max(members, 1))
    } catch {
      return .failure(error.reason)
    }
  }

  /// Whether a record of `kind` with `sequence` may follow the good records so far, which end
  /// with `last`: a record takes the next numbers; a sync mark takes none of its own, and
  /// carries the number of the record before it (or a later one, if that record was lost to
  /// damage).
  @inline(__always)
  private static func follows(_ sequence: UInt64, kind: RecordKind, after last: UInt64) -> Bool {
    kind == .syncMark ? sequence >= last : sequence > last
  }

  /// Whether another thread may see a thread's stores to memory in another order than they
  /// were made: on ARM, yes; x86 keeps stores in order (TSO), so there, once a good record is
  /// seen after a bad one, the bad one is complete too if it ever will be.
  package static let storesMayBeSeenOutOfOrder: Bool = {
    #if arch(x86_64) || arch(i386)
      return false
    #else
      return true
    #endif
  }()

  /// Whether the record at `position` checks when looked at again (see `init`): at once, and
  /// where stores may be seen out of order also after pauses of 1, 2, 4, 8 and 16 ms. A record
  /// that never checks costs those 31 ms once, where it is counted as damage.
  private func settles(at position: Int) -> Bool {
    for wait in [0, 1000, 2000, 4000, 8000, 16_000] {
      if wait > 0 {
        guard waitsForReorderedStores else { return false }
        pause(wait)
      }
      if case .success = check(at: position) { return true }
    }
    return false
  }

  /// The offset of the next good record after `position` and at most `limit`, if any.
  private func resynchronize(after position: Int, upTo limit: Int) -> Int? {
    var candidate = position + 1
    while candidate <= limit {
      defer { candidate += 1 }
      // Cheap filters first: a top-level kind, a plausible header, a sequence number in
      // reach. Only then the checksum.
      guard
        RecordLayout.kind(ofRaw: bytes[candidate + RecordLayout.kindOffset], member: false)
          != nil,
        let header = try? RecordCodec.decodeHeader(
          bytes.baseAddress! + candidate, member: false),
        header.length <= bytes.count - candidate,
        Self.follows(header.sequence, kind: header.kind, after: lastSequence),
        header.sequence - lastSequence < Self.resyncSequenceWindow
      else { continue }
      if case .success = check(at: candidate) { return candidate }
    }
    return nil
  }

  private func isZero(from position: Int) -> Bool {
    guard position < bytes.count, let base = bytes.baseAddress else { return true }
    var index = position
    // Sixty-four bytes a test: the reserve read here (up to a megabyte) is most of the work of
    // opening a store closed cleanly.
    while bytes.count - index >= 64 {
      var union: UInt64 = 0
      for word in 0..<8 {
        union |= base.loadUnaligned(fromByteOffset: index + word * 8, as: UInt64.self)
      }
      if union != 0 { return false }
      index += 64
    }
    while index + 8 <= bytes.count {
      if base.loadUnaligned(fromByteOffset: index, as: UInt64.self) != 0 { return false }
      index += 8
    }
    while index < bytes.count {
      if bytes[index] != 0 { return false }
      index += 1
    }
    return true
  }
}
