/// Appends records to the active segment through its writable mapping, large ones with the
/// file's `pwrite` (``writeThroughFile(at:count:_:)``).
///
/// Disk space is reserved ahead of the writes (`allocate`), so a full disk shows up as a
/// ``LogStoreError/Code/diskFull`` error from ``append(count:fileWriteMinimum:_:)``, never as
/// a `SIGBUS` from touching an unbacked page. The reservation starts small and doubles up to
/// 1 MiB at a time, so that a small store does not keep a large reserve: files are never cut
/// shorter (a reader may have them mapped), so what is reserved stays part of the file.
///
/// After each sync, the log appends a sync mark (``RecordKind/syncMark``) saying how far the
/// data was synced (``ActiveLog/noteSynchronized(_:_:_:)``); room for two marks is kept past
/// every record (``markReserve``), so that the marks that prove a record durable always fit.
/// Guarded by the store's write lock.
final class SegmentWriter {
  static let firstAllocation = 64 << 10
  static let allocationChunk = 1 << 20
  /// Room kept free after every record that is not a sync mark. Two marks: the one of a sync
  /// that was in flight while the record was written (and so does not cover it), and the one
  /// of the sync that covers it.
  static let markReserve = 2 * RecordLayout.syncMarkLength

  let file: SegmentFile
  /// The mapping's length: this segment never grows past it.
  let capacity: Int
  /// End of the last record written.
  @exclusivity(unchecked) private(set) var used: Int
  /// The file's size: bytes below it are backed by reserved disk blocks.
  @exclusivity(unchecked) private(set) var allocated: Int
  /// End of the data known to be on stable storage.
  @exclusivity(unchecked) private(set) var durable: Int
  /// End of the last record that is not a sync mark: what a mark written after a sync that
  /// covered it claims.
  @exclusivity(unchecked) private(set) var dataEnd: Int
  /// The furthest end a sync mark in the segment claims (0 when unknown, after a failed sync
  /// discarded marks): no mark is needed until the data goes past it.
  @exclusivity(unchecked) private(set) var markedEnd: Int
  /// What the open found in the segment: a failed sync never discards it (an earlier session
  /// acknowledged it). In `.manyProcesses` use, what other processes published, too.
  @exclusivity(unchecked) private(set) var foundEnd: Int
  /// Below this offset, the pages written have been handed back (`release`), so that the
  /// records of a long fill do not stay in the process's resident memory.
  @exclusivity(unchecked) private var released = 0
  /// How much is written between two releases, and how much of the newest data is kept.
  private static let releaseStep = 8 << 20
  private static let keptResident = 1 << 20

  /// - Parameters:
  ///   - used: where the next record goes.
  ///   - durable: how much is known on stable storage.
  ///   - dataEnd: the end of the last record that is not a sync mark.
  ///   - markedEnd: the furthest end a sync mark in the segment claims.
  init(
    file: SegmentFile, capacity: Int, used: Int, allocated: Int, durable: Int, dataEnd: Int,
    markedEnd: Int
  ) {
    self.file = file
    self.capacity = capacity
    self.used = used
    self.allocated = allocated
    self.durable = durable
    self.dataEnd = dataEnd
    self.markedEnd = markedEnd
    self.foundEnd = used
  }

  /// Takes the end another process published (`.manyProcesses`): the segment holds its
  /// records up to there, and what it says was allocated, synced and marked.
  func follow(_ commit: SharedState.Commit) {
    used = Int(commit.committedEnd)
    foundEnd = used
    allocated = max(allocated, Int(commit.allocated))
    durable = Int(commit.durableEnd)
    dataEnd = Int(commit.dataEnd)
    markedEnd = Int(commit.markedEnd)
    ordered = min(ordered, used)
  }

  /// Whether a record of `count` bytes fits, with room for the marks after it. Nothing fits
  /// once the segment is sealed.
  func fits(_ count: Int) -> Bool { !isSealed && count <= capacity - used - Self.markReserve }

  /// The segment was sealed (synced and marked) for a newer one: it takes no more records,
  /// even if creating the newer one failed (a file of it may be left, which must not come
  /// before records written after it).
  @exclusivity(unchecked) private(set) var isSealed = false

  /// Reserves room for and writes `count` bytes filled in by `body`; returns their offset.
  /// A record of at least `fileWriteMinimum` bytes is written with the file's `pwrite`
  /// (``writeThroughFile(at:count:_:)``), a shorter one through the mapping.
  func append(
    count: Int, fileWriteMinimum: Int, _ body: (UnsafeMutableRawBufferPointer) -> Void
  ) throws(LogStoreError) -> Int {
    precondition(fits(count), "record does not fit the segment")
    let offset = try write(count: count, throughFile: count >= fileWriteMinimum, body)
    dataEnd = used
    return offset
  }

  /// Appends a sync mark saying the data up to `point.dataEnd` is durable, if no mark says so
  /// already (or, `ending` the segment, unless one claiming it all ends it already); returns
  /// whether it did. The reserve after every record leaves room for it.
  func appendMark(after point: SyncPoint, sequence: UInt64, timestamp: Int64, ending: Bool = false)
    throws(LogStoreError) -> Bool
  {
    let needed = point.dataEnd > markedEnd || (ending && used == dataEnd)
    guard needed, RecordLayout.syncMarkLength <= capacity - used else { return false }
    let salt = file.salt
    _ = try write(count: RecordLayout.syncMarkLength, throughFile: false) { buffer in
      RecordCodec.encodeSyncMark(
        sequence: sequence, timestamp: timestamp, syncedEnd: point.dataEnd, salt: salt,
        into: buffer)
    }
    markedEnd = point.dataEnd
    return true
  }

  private func write(
    count: Int, throughFile: Bool, _ body: (UnsafeMutableRawBufferPointer) -> Void
  ) throws(LogStoreError) -> Int {
    if used + count > allocated {
      let step = min(max(allocated, Self.firstAllocation), Self.allocationChunk)
      let target = min(capacity, max(used + count, allocated + step))
      try file.handle.allocate(upTo: target)
      allocated = target
    }
    let offset = used
    if throughFile {
      writeThroughFile(at: offset, count: count, body)
    } else {
      file.mapping.write(at: offset, count: count, body)
    }
    used += count
    if used - released >= Self.releaseStep + Self.keptResident {
      let end = used - Self.keptResident
      file.mapping.release(offset: released, count: end - released)
      released = end
    }
    return offset
  }

  /// Encodes a record into a buffer of its own and writes it at `offset` with the file's
  /// `pwrite`, for a large record: storing into fresh pages of a shared file mapping costs a
  /// page fault per page (the page read into the cache, zeros of the reserved blocks, then
  /// marked dirty), 55% of the time of a 4 MiB put, where a write hands the kernel whole
  /// pages for the price of one more copy. The kernel's page cache is the mapping's (Linux,
  /// and Darwin's unified buffer cache), so readers in this process and others see the bytes
  /// as they would after a store through the mapping. Should the write fail, the record is
  /// stored through the mapping instead, which cannot fail (the blocks are reserved): the two
  /// paths leave the same bytes, and a device that failed the write fails the sync that must
  /// come before any record is acknowledged as durable.
  private func writeThroughFile(
    at offset: Int, count: Int, _ body: (UnsafeMutableRawBufferPointer) -> Void
  ) {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 16)
    defer { buffer.deallocate() }
    body(buffer)
    do {
      try file.handle.write(UnsafeRawBufferPointer(buffer), at: offset)
    } catch {
      file.mapping.write(at: offset, count: count) {
        $0.copyMemory(from: UnsafeRawBufferPointer(buffer))
      }
    }
  }

  /// What a sync taken now covers: the range written but not yet known durable, and the end of
  /// the data in it (which a mark written after the sync may claim).
  struct SyncPoint {
    var range: Range<Int>
    var dataEnd: Int
  }

  /// The range written but not yet known durable, for a sync outside the write lock.
  var unsynchronized: SyncPoint { SyncPoint(range: durable..<used, dataEnd: dataEnd) }

  /// The range written since the last durable or ordered sync, for the interval thread.
  var unordered: SyncPoint { SyncPoint(range: max(durable, ordered)..<used, dataEnd: dataEnd) }

  /// End of the data an ordered sync (``SyncStrength/ordered``) has covered: not durable on
  /// Darwin, where it is only a barrier, so it never counts as durable.
  @exclusivity(unchecked) private(set) var ordered = 0

  /// Makes `range` durable, or only ordered. If the sync fails, the range is written again
  /// before the error is thrown (``rewrite(_:)``), so that the next sync that succeeds has
  /// really put it on the disk when the log marks it so.
  func synchronize(_ range: Range<Int>, _ strength: SyncStrength) throws(LogStoreError) {
    guard !range.isEmpty else { return }
    do {
      try file.mapping.synchronize(offset: range.lowerBound, count: range.count, strength)
    } catch {
      rewrite(range)
      throw error
    }
  }

  /// Writes the bytes of `range` over themselves through the mapping, so that its pages are
  /// dirty again after a failed sync. Linux reports a failed write-back once and marks the
  /// pages clean: the next `msync` would write none of them, succeed, and let the log mark
  /// bytes durable that the disk never got (what a failed sync does on Darwin is not
  /// documented; writing again is right there too). The bytes come from the page cache, which
  /// still holds them unless the system dropped those pages meanwhile; then the disk's bytes
  /// come back and are written, and a later open finds those records damaged (each is
  /// checksummed), never taken for what was written. Copied through a buffer a chunk at a time:
  /// a copy of the mapping onto itself could be skipped as storing nothing new.
  private func rewrite(_ range: Range<Int>) {
    let chunk = 64 << 10
    let buffer = UnsafeMutableRawBufferPointer.allocate(
      byteCount: min(chunk, range.count), alignment: 16)
    defer { buffer.deallocate() }
    var offset = range.lowerBound
    while offset < range.upperBound {
      let count = min(chunk, range.upperBound - offset)
      let part = UnsafeMutableRawBufferPointer(rebasing: buffer[..<count])
      part.copyMemory(
        from: UnsafeRawBufferPointer(rebasing: file.mapping.bytes[offset..<offset + count]))
      file.mapping.write(at: offset, count: count) {
        $0.copyMemory(from: UnsafeRawBufferPointer(part))
      }
      offset += count
    }
  }

  /// Records that everything below `end` is durable.
  func markDurable(upTo end: Int) {
    durable = max(durable, min(end, used))
  }

  /// Records that everything below `end` is ordered.
  func markOrdered(upTo end: Int) {
    ordered = max(ordered, min(end, used))
  }

  /// Syncs everything written (no mark: ``ActiveLog/synchronizeActive(proving:)`` adds one).
  func synchronize() throws(LogStoreError) {
    let range = unsynchronized.range
    try synchronize(range, .durable)
    markDurable(upTo: range.upperBound)
  }

  /// The end of what ``discardUnsynchronized()`` keeps: the last durable point, the header, and
  /// what an earlier session wrote. Under `.always`, what lies past it while a sync runs outside
  /// the write lock is a group's records, applied only once that sync succeeds.
  var keptIfSyncFails: Int { max(durable, foundEnd, SegmentHeader.size) }

  /// Forgets everything written after the last durable point (never the header, nor what an
  /// earlier session wrote), zeroing it so that no record written there can come back after a
  /// crash, and tries at once to make the zeros durable: the failed sync may have put some of
  /// those bytes on the disk. (If that sync fails too, the device is failing and nothing can be
  /// promised about what it kept.) Marks among those bytes go too: the next sync marks anew.
  /// Returns the new end.
  @discardableResult
  func discardUnsynchronized() -> Int {
    let keep = keptIfSyncFails
    if used > keep {
      let count = used - keep
      file.mapping.write(at: keep, count: count) {
        $0.initializeMemory(as: UInt8.self, repeating: 0)
      }
      used = keep
      dataEnd = min(dataEnd, keep)
      markedEnd = 0
      ordered = min(ordered, keep)
      try? file.mapping.synchronize(offset: keep, count: count, .durable)
    }
    return used
  }

  /// Hands back the pages of the mapping once the segment is sealed (synced, with its last
  /// mark): it will not change again. The file keeps its length, zeros past the last record
  /// included: a reader beside the writer may have mapped all of it, and touching a mapped
  /// page past the end of a file kills a process with `SIGBUS`.
  func releaseSealed() {
    isSealed = true
    file.mapping.release(offset: released, count: used - released)
    released = used
  }
}
