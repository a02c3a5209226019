/// Walks the records of a segment's bytes in order, telling good records from damage and a
/// torn tail.
///
/// Rules (docs/FORMAT.md, "Recovery"):
/// - A record is good when it decodes, its checksum matches, its sequence number is above
///   the previous good record's, and (for a batch) every member is good.
/// - At a bad record the scanner looks for the next good record further on. If there is one,
///   the bytes in between are one damaged region and scanning goes on from there.
/// - If there is none, the rest of the segment is: the clean end, when every byte left is
///   zero (space reserved but never written); a torn tail, in the last segment, where a crash
///   cut a write short; otherwise one damaged region.
package struct SegmentScanner {
  package enum Event {
    case record(Record, offset: Int)
    case damaged(offset: Int, length: Int, reason: String)
  }

  let bytes: UnsafeRawBufferPointer
  /// What keeps `bytes` mapped (see `init`).
  let owner: AnyObject?
  let salt: UInt32
  let isLast: Bool
  /// A writer may be appending to these bytes right now (see `init`).
  let mayBeBeingWritten: Bool
  /// How long a bad record followed by a good one is waited for (see `init`).
  let waitsForReorderedStores: Bool
  private(set) var offset: Int
  /// The last sequence number the good records so far take (a batch, one per member).
  package private(set) var lastSequence: UInt64
  /// Where the good data ends: after the last good record or damaged region.
  package private(set) var end: Int
  /// Whether scanning stopped at a torn tail (`end` is where to cut).
  package private(set) var foundTornTail = false
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
  ///   - isLast: whether this is the last segment, the only one that may have a torn tail.
  ///   - start: where to start, when a hint file has covered the bytes before it.
  ///   - mayBeBeingWritten: the bytes are a live mapping of the segment a writer may be
  ///     appending to right now. A record still being copied looks like a torn tail, which
  ///     is fine: the view ends before it. But while the scanner looks past it for a good
  ///     record, the writer goes on: by the time one is found, the record that looked bad
  ///     may be complete. So a bad record followed by a good one is looked at again before it
  ///     is taken for damage; damage stays bad.
  ///   - waitsForReorderedStores: on a processor that may show a thread's stores to another
  ///     out of order, the records of one group commit can become visible out of order too:
  ///     there the bad record is looked at again for up to about 30 ms, in growing steps (a
  ///     record is copied within microseconds). Defaults to ``storesMayBeSeenOutOfOrder``.
  package init(
    bytes: UnsafeRawBufferPointer, owner: AnyObject?, salt: UInt32, baseSequence: UInt64,
    isLast: Bool, start: Int = SegmentHeader.size, mayBeBeingWritten: Bool = false,
    waitsForReorderedStores: Bool = SegmentScanner.storesMayBeSeenOutOfOrder
  ) {
    self.bytes = bytes
    self.owner = owner
    self.salt = salt
    self.isLast = isLast
    self.mayBeBeingWritten = mayBeBeingWritten
    self.waitsForReorderedStores = waitsForReorderedStores
    self.offset = min(start, bytes.count)
    self.end = offset
    self.lastSequence = baseSequence == 0 ? 0 : baseSequence - 1
  }

  package mutating func next() -> Event? {
    guard !finished, offset < bytes.count else {
      finished = true
      return nil
    }
    switch check(at: offset) {
    case .success(let record, let sequences):
      let event = Event.record(record, offset: offset)
      lastSequence = record.sequence &+ UInt64(sequences) &- 1
      offset += record.length
      end = offset
      return event
    case .failure(let reason):
      let damageStart = offset
      // Zeros to the end are space reserved ahead of the writes (every segment keeps its
      // reserve): the clean end, found without looking for a record in them byte by byte.
      if isZero(from: damageStart) {
        finished = true
        return nil
      }
      if let resume = resynchronize(after: damageStart) {
        if mayBeBeingWritten && settles(at: damageStart) { return next() }
        offset = resume
        end = resume
        return .damaged(offset: damageStart, length: resume - damageStart, reason: reason)
      }
      finished = true
      if isLast {
        foundTornTail = true
        return nil
      }
      end = bytes.count
      return .damaged(
        offset: damageStart, length: bytes.count - damageStart, reason: reason)
    }
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
    guard record.sequence > lastSequence else {
      return .failure("sequence number \(record.sequence) does not follow \(lastSequence)")
    }
    guard record.kind == .batch else { return .success(record, sequences: 1) }
    do {
      let members = try RecordCodec.validateMembers(of: record, salt: salt)
      return .success(record, sequences: max(members, 1))
    } catch {
      return .failure(error.reason)
    }
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

  /// Whether the record at `position` checks when looked at again (see `init`).
  private func settles(at position: Int) -> Bool {
    if case .success = check(at: position) { return true }
    guard waitsForReorderedStores else { return false }
    var wait = 1000
    while wait <= 16_000 {
      pauseThread(microseconds: wait)
      if case .success = check(at: position) { return true }
      wait *= 2
    }
    return false
  }

  /// The offset of the next good record after `position`, if any.
  private func resynchronize(after position: Int) -> Int? {
    var candidate = position + 1
    let limit = bytes.count - RecordLayout.headerSize
    while candidate <= limit {
      defer { candidate += 1 }
      // Cheap filters first: a top-level kind, a plausible header, a sequence number in
      // reach. Only then the checksum.
      let kind = bytes[candidate + RecordLayout.kindOffset]
      guard kind >= 1 && kind <= RecordKind.batch.rawValue else { continue }
      guard
        let header = try? RecordCodec.decodeHeader(
          bytes.baseAddress! + candidate, member: false),
        header.length <= bytes.count - candidate,
        header.sequence > lastSequence,
        header.sequence - lastSequence < Self.resyncSequenceWindow
      else { continue }
      if case .success = check(at: candidate) { return candidate }
    }
    return nil
  }

  private func isZero(from position: Int) -> Bool {
    guard position < bytes.count, let base = bytes.baseAddress else { return true }
    var index = position
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
