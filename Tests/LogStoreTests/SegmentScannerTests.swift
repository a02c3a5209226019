import Foundation
import Testing

@testable import LogStore

/// The scanner of a segment a writer may be appending to (`mayBeBeingWritten`), as a
/// read-only open beside a writer uses it where stores may be seen out of order (ARM). On this
/// processor the open never waits (stores are seen in order), so the waiting is driven here.
@Suite("Segment scanner beside a writer")
struct SegmentScannerTests {
  static let salt: UInt32 = 0x5EED_1234

  /// A segment's bytes: a zeroed header and one put per value, sequences from 1, then (when
  /// `synced`) a sync mark claiming all of them; and where each put starts.
  static func segment(values: [String], synced: Bool = true) -> (bytes: [UInt8], offsets: [Int]) {
    var bytes = [UInt8](repeating: 0, count: SegmentHeader.size)
    var offsets: [Int] = []
    for (index, value) in values.enumerated() {
      offsets.append(bytes.count)
      bytes += record(.put, sequence: UInt64(index + 1), key: "k\(index)", value: value)
    }
    if synced { bytes += syncMark(sequence: UInt64(values.count + 1), claiming: bytes.count) }
    return (bytes, offsets)
  }

  /// One record of table "t" in this suite's salt.
  static func record(
    _ kind: RecordKind, sequence: UInt64, key: String = "", value: String = "",
    expiry: Int64? = nil
  ) -> [UInt8] {
    let table = Array("t".utf8)
    let key = Array(key.utf8)
    let value = Array(value.utf8)
    var record = [UInt8](
      repeating: 0,
      count: RecordLayout.length(table: 1, key: key.count, value: value.count, expiry: expiry))
    table.withUnsafeBytes { table in
      key.withUnsafeBytes { key in
        value.withUnsafeBytes { value in
          record.withUnsafeMutableBytes { destination in
            RecordCodec.encode(
              kind: kind, sequence: sequence, timestamp: 0, table: table, key: key,
              value: value, expiry: expiry, salt: salt, into: destination)
          }
        }
      }
    }
    return record
  }

  /// A sync mark saying the bytes before `claiming` were synced.
  static func syncMark(sequence: UInt64, claiming end: Int) -> [UInt8] {
    var mark = [UInt8](repeating: 0, count: RecordLayout.syncMarkLength)
    mark.withUnsafeMutableBytes { destination in
      RecordCodec.encodeSyncMark(
        sequence: sequence, timestamp: 0, syncedEnd: end, salt: salt, into: destination)
    }
    return mark
  }

  static func events(
    _ buffer: UnsafeRawBufferPointer, mayBeBeingWritten: Bool,
    pause: @escaping @Sendable (Int) -> Void = { pauseThread(microseconds: $0) }
  ) -> (records: Int, damaged: Int) {
    var scanner = SegmentScanner(
      bytes: buffer, owner: nil, salt: salt, baseSequence: 1, extent: .unsealed,
      mayBeBeingWritten: mayBeBeingWritten, waitsForReorderedStores: true, pause: pause)
    var result = (records: 0, damaged: 0)
    while let event = scanner.next() {
      switch event {
      case .record: result.records += 1
      case .damaged: result.damaged += 1
      }
    }
    return result
  }

  @Test(
    "a record still being copied while the one after it is already visible is waited for, not taken for damage"
  )
  func recordCompletesWhileWaited() async throws {
    let (bytes, offsets) = Self.segment(values: ["first", "second", "third"])
    // The second record is half copied: its last bytes are still zero, the third is whole.
    let seen = Self.whileFinishing(bytes, recordEndingAt: offsets[2]) {
      Self.events($0, mayBeBeingWritten: true, pause: $1)
    }
    #expect(seen.records == 3)
    #expect(seen.damaged == 0)
  }

  /// Runs `body` on a copy of `bytes` whose last four bytes before `end` are zero (a record
  /// still being copied), with a pause for the scanner that writes them at its first wait, as
  /// a writer finishing the record meanwhile would.
  static func whileFinishing<R>(
    _ bytes: [UInt8], recordEndingAt end: Int,
    _ body: (UnsafeRawBufferPointer, _ pause: @escaping @Sendable (Int) -> Void) -> R
  ) -> R {
    whileShowing(bytes, hidden: (end - 4)..<end, body)
  }

  /// Runs `body` on a copy of `bytes` whose `hidden` bytes are zero, with a pause for the
  /// scanner that writes them at its first wait: as a writer finishing them would, or as a
  /// processor that showed this thread another's stores out of order would show them later.
  static func whileShowing<R>(
    _ bytes: [UInt8], hidden: Range<Int>,
    _ body: (UnsafeRawBufferPointer, _ pause: @escaping @Sendable (Int) -> Void) -> R
  ) -> R {
    let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 8)
    defer { memory.deallocate() }
    bytes.withUnsafeBytes { memory.copyMemory(from: $0) }
    for offset in hidden { memory[offset] = 0 }
    let original = Array(bytes[hidden])
    let pause: @Sendable (Int) -> Void = { [address = UInt(bitPattern: memory.baseAddress!)] _ in
      let base = UnsafeMutableRawPointer(bitPattern: address)!
      for (index, byte) in original.enumerated() {
        base.storeBytes(of: byte, toByteOffset: hidden.lowerBound + index, as: UInt8.self)
      }
    }
    return body(UnsafeRawBufferPointer(memory), pause)
  }

  @Test(
    "damage that stays, in bytes a sync mark proves durable, is counted after the wait, and the records after it are kept"
  )
  func damageStays() throws {
    var (bytes, offsets) = Self.segment(values: ["first", "second", "third"])
    bytes[offsets[1] + RecordLayout.headerSize + 2] ^= 0x40
    let started = Date()
    let seen = bytes.withUnsafeBytes { Self.events($0, mayBeBeingWritten: true) }
    #expect(seen.records == 2)
    #expect(seen.damaged == 1)
    // About 30 ms of looking again, never unbounded.
    #expect(Date().timeIntervalSince(started) < 5)
  }

  @Test("a torn tail (nothing good after it) ends the view at once, as for any last segment")
  func tornTailNeedsNoWait() throws {
    let (bytes, offsets) = Self.segment(values: ["first", "second"])
    let torn = Array(bytes[..<(offsets[1] + 10)]) + [UInt8](repeating: 0, count: 200)
    let seen = torn.withUnsafeBytes { Self.events($0, mayBeBeingWritten: true) }
    #expect(seen.records == 1)
    #expect(seen.damaged == 0)
  }

  @Test(
    "a record whose sequence does not follow, and a batch whose members do not decode, are damage")
  func wellFormedButOutOfPlace() {
    let (bytes, offsets) = Self.segment(values: ["a", "b", "c", "d", "e"])
    // A copy of the first record (sequence 1) after the third, where 4 must come next.
    let replayed = Array(bytes[offsets[0]..<offsets[1]])
    let withReplay = Array(bytes[..<offsets[3]]) + replayed + Array(bytes[offsets[3]...])
    let replay = withReplay.withUnsafeBytes { Self.events($0, mayBeBeingWritten: false) }
    #expect(replay.records == 5)
    #expect(replay.damaged == 1)
    // A batch record whose checksum holds but whose value is no list of members.
    let value = [UInt8](repeating: 0xAB, count: 24)
    var batch = [UInt8](repeating: 0, count: RecordLayout.length(table: 0, key: 0, value: 24))
    value.withUnsafeBytes { value in
      batch.withUnsafeMutableBytes { destination in
        RecordCodec.encode(
          kind: .batch, sequence: 4, timestamp: 0,
          table: UnsafeRawBufferPointer(start: nil, count: 0),
          key: UnsafeRawBufferPointer(start: nil, count: 0), value: value, salt: Self.salt,
          into: destination)
      }
    }
    let withBatch = Array(bytes[..<offsets[3]]) + batch + Array(bytes[offsets[3]...])
    let members = withBatch.withUnsafeBytes { Self.events($0, mayBeBeingWritten: false) }
    #expect(members.records == 5)
    #expect(members.damaged == 1)
  }
}

/// What a bad record means, by how much of the segment is known durable
/// (`SegmentScanner.Extent`, docs/FORMAT.md "Recovery", rule 6), in each of the four cases.
@Suite("Segment scanner: damage and the end of the log")
struct SegmentExtentTests {
  typealias Segments = SegmentScannerTests

  /// The scan of `bytes` under `extent`: records' offsets, damaged regions, and where it ended.
  static func scan(_ bytes: [UInt8], _ extent: SegmentScanner.Extent)
    -> (records: [Int], damage: [Range<Int>], end: Int, torn: Bool, tailRecords: Int)
  {
    bytes.withUnsafeBytes { buffer in
      var scanner = SegmentScanner(
        bytes: buffer, owner: nil, salt: Segments.salt, baseSequence: 1, extent: extent)
      var records: [Int] = []
      var damage: [Range<Int>] = []
      while let event = scanner.next() {
        switch event {
        case .record(_, let offset): records.append(offset)
        case .damaged(let offset, let length, _): damage.append(offset..<offset + length)
        }
      }
      return (
        records, damage, scanner.end, scanner.foundTornTail, scanner.recordsInTornTail
      )
    }
  }

  /// Five puts, a mark claiming the first three (written while the fourth and fifth were
  /// appended during the sync), then two more puts.
  static func segment() -> (bytes: [UInt8], offsets: [Int]) {
    var (bytes, offsets) = Segments.segment(values: ["a", "b", "c", "d", "e"], synced: false)
    let claim = offsets[3]
    bytes += Segments.syncMark(sequence: 5, claiming: claim)
    for (index, value) in ["f", "g"].enumerated() {
      offsets.append(bytes.count)
      bytes += Segments.record(
        .put, sequence: UInt64(6 + index), key: "k\(5 + index)", value: value)
    }
    return (bytes, offsets + [bytes.count])
  }

  static func zeroed(_ bytes: [UInt8], _ range: Range<Int>) -> [UInt8] {
    var copy = bytes
    copy.replaceSubrange(range, with: repeatElement(0, count: range.count))
    return copy
  }

  @Test(
    "in a last segment, a record lost past what the marks prove ends the log; the good records after it are counted, not kept"
  )
  func lossPastTheMark() {
    let (bytes, offsets) = Self.segment()
    let lost = Self.zeroed(bytes, offsets[3]..<offsets[4])
    let scan = Self.scan(lost, .unsealed)
    #expect(scan.records == Array(offsets[0..<3]) && scan.damage.isEmpty)
    #expect(scan.end == offsets[3] && scan.torn && scan.tailRecords == 3)
  }

  @Test(
    "in a last segment, damage in what a mark proves is skipped and counted; if nothing good follows before the proven end, the log ends there"
  )
  func damageInProvenBytes() {
    let (bytes, offsets) = Self.segment()
    let damaged = Self.scan(Self.zeroed(bytes, offsets[1]..<offsets[2]), .unsealed)
    #expect(damaged.damage == [offsets[1]..<offsets[2]])
    #expect(damaged.records == [offsets[0]] + Array(offsets[2..<7]) && !damaged.torn)
    // The third record lost too, and the fourth, the first past the proven end: the damage
    // reaches the proven end, and the log ends at the fourth.
    let both = Self.scan(Self.zeroed(bytes, offsets[2]..<offsets[4]), .unsealed)
    #expect(both.damage == [offsets[2]..<offsets[3]] && both.records == Array(offsets[0..<2]))
    #expect(both.end == offsets[3] && both.torn)
  }

  @Test("a sync mark claiming more than precedes it is a bad record, past which nothing is proven")
  func impossibleClaim() {
    var (bytes, offsets) = Segments.segment(values: ["a", "b"], synced: false)
    let markAt = bytes.count
    bytes += Segments.syncMark(sequence: 2, claiming: markAt + 1)
    bytes += Segments.record(.put, sequence: 3, key: "k2", value: "c")
    let scan = Self.scan(bytes, .unsealed)
    #expect(scan.records == offsets && scan.end == markAt && scan.torn)
    #expect(scan.tailRecords == 1)
  }

  @Test(
    "without sync marks (format 1 and 2), damage followed by a good record is damage in a last segment too, and with none after it a torn tail"
  )
  func withoutMarks() {
    let (bytes, offsets) = Segments.segment(values: ["a", "b", "c", "d"], synced: false)
    let damaged = Self.zeroed(bytes, offsets[1]..<offsets[2])
    for extent in [SegmentScanner.Extent.unsealedWithoutMarks, .sealedWithoutMarks, .sealed] {
      let scan = Self.scan(damaged, extent)
      #expect(scan.damage.first == offsets[1]..<offsets[2], "\(extent)")
      #expect(scan.records == [offsets[0], offsets[2], offsets[3]], "\(extent)")
    }
    // No mark ends it: a sealed segment of version 3 was cut at a record's end.
    #expect(Self.scan(damaged, .sealed).damage.last == bytes.count..<bytes.count)
    #expect(Self.scan(damaged, .sealedWithoutMarks).damage.count == 1)
    let torn = Array(bytes[..<(offsets[3] + 5)])
    let tail = Self.scan(torn, .unsealedWithoutMarks)
    #expect(tail.records == Array(offsets[0..<3]) && tail.torn && tail.damage.isEmpty)
    let sealed = Self.scan(torn, .sealedWithoutMarks)
    #expect(sealed.damage == [offsets[3]..<torn.count] && !sealed.torn)
    // Beside a writer (a read-only open of a store of version 2): the damaged record is looked
    // at again before it counts, and stays damage.
    let beside = damaged.withUnsafeBytes { buffer in
      var scanner = SegmentScanner(
        bytes: buffer, owner: nil, salt: Segments.salt, baseSequence: 1,
        extent: .unsealedWithoutMarks, mayBeBeingWritten: true, waitsForReorderedStores: false)
      var damage = 0
      while let event = scanner.next() { if case .damaged = event { damage += 1 } }
      return damage
    }
    #expect(beside == 1)
    // And a record still being copied when it was first read, complete when looked at again.
    let seen = Segments.whileFinishing(bytes, recordEndingAt: offsets[2]) { buffer, pause in
      var scanner = SegmentScanner(
        bytes: buffer, owner: nil, salt: Segments.salt, baseSequence: 1,
        extent: .unsealedWithoutMarks, mayBeBeingWritten: true, waitsForReorderedStores: true,
        pause: pause)
      var seen = (records: 0, damage: 0)
      while let event = scanner.next() {
        if case .record = event { seen.records += 1 } else { seen.damage += 1 }
      }
      return seen
    }
    #expect(seen.records == 4 && seen.damage == 0)
  }

  @Test(
    "bytes another process published are records to their end: zeros there are damage, not the clean end, and the records after them count"
  )
  func publishedBytes() {
    let (bytes, offsets) = Segments.segment(values: ["a", "b", "c", "d"], synced: false)
    let lastLost = Self.zeroed(bytes, offsets[3]..<bytes.count)
    let atEnd = Self.scan(lastLost, .published)
    #expect(atEnd.records == Array(offsets[0..<3]))
    #expect(atEnd.damage == [offsets[3]..<bytes.count] && !atEnd.torn)
    // In a sealed segment, the same zeros are its clean end.
    #expect(Self.scan(lastLost, .sealedWithoutMarks).damage.isEmpty)
    let between = Self.scan(Self.zeroed(bytes, offsets[1]..<offsets[2]), .published)
    #expect(between.damage == [offsets[1]..<offsets[2]])
    #expect(between.records == [offsets[0], offsets[2], offsets[3]])
  }

  @Test(
    "a published record this processor does not show yet, whole or in part, is looked at again and kept once it checks; one that never does is damage after 31 ms of pauses"
  )
  func publishedShownLate() {
    let (bytes, offsets) = Segments.segment(values: ["a", "b", "c", "d"], synced: false)
    let ends = Array(offsets.dropFirst()) + [bytes.count]
    // Each record whole, and each one's last bytes, shown only at the scanner's first pause.
    let hidden = offsets.indices.flatMap { [offsets[$0]..<ends[$0], (ends[$0] - 4)..<ends[$0]] }
    for range in hidden {
      for waits in [true, false] {
        let seen = Segments.whileShowing(bytes, hidden: range) { buffer, pause in
          var scanner = SegmentScanner(
            bytes: buffer, owner: nil, salt: Segments.salt, baseSequence: 1, extent: .published,
            waitsForReorderedStores: waits, pause: pause)
          var seen = (records: [Int](), damage: 0)
          while let event = scanner.next() {
            if case .record(_, let offset) = event {
              seen.records.append(offset)
            } else {
              seen.damage += 1
            }
          }
          return seen
        }
        // Where stores may be seen out of order, the scanner pauses and then sees the record;
        // where they are not (x86), what is not shown at once never will be.
        if waits {
          #expect(seen.records == offsets && seen.damage == 0, "\(range)")
        } else {
          #expect(seen.records.count == 3 && seen.damage == 1, "\(range)")
        }
      }
    }
    // Never shown: counted after pauses of 1, 2, 4, 8 and 16 ms.
    let pauses = PauseLog()
    var damaged = bytes
    damaged[offsets[1] + RecordLayout.headerSize] ^= 0x20
    let seen = damaged.withUnsafeBytes { buffer in
      var scanner = SegmentScanner(
        bytes: buffer, owner: nil, salt: Segments.salt, baseSequence: 1, extent: .published,
        waitsForReorderedStores: true, pause: { pauses.append($0) })
      var seen = (records: 0, damage: 0)
      while let event = scanner.next() {
        if case .record = event { seen.records += 1 } else { seen.damage += 1 }
      }
      return seen
    }
    #expect(seen.records == 3 && seen.damage == 1)
    #expect(pauses.all == [1000, 2000, 4000, 8000, 16_000])
  }

  /// The pauses a scanner asked for, in microseconds.
  final class PauseLog: @unchecked Sendable {
    private let lock = NSLock()
    private var pauses: [Int] = []
    var all: [Int] { lock.withLock { pauses } }
    func append(_ microseconds: Int) { lock.withLock { pauses.append(microseconds) } }
  }

  @Test(
    "zeros to the end of a segment are its clean end, and one byte that is not zero anywhere among them, of any length of reserve, is a torn tail (or, in a sealed segment, damage)"
  )
  func reserveOfZeros() {
    // Records ending at different places relative to the words and 64-byte blocks the
    // reserve is read in, then reserves of lengths around those sizes.
    for values in [["a", "b", "c"], ["a", "bb", "cccc"], ["abcdefg"]] {
      let (records, offsets) = Segments.segment(values: values)
      let end = records.count
      for reserve in [1, 7, 8, 9, 63, 64, 65, 130, 200] {
        let bytes = records + [UInt8](repeating: 0, count: reserve)
        let clean = Self.scan(bytes, .unsealedWithoutMarks)
        #expect(clean.records == offsets && clean.end == end && !clean.torn && clean.damage.isEmpty)
        for offset in 0..<reserve {
          var damaged = bytes
          damaged[end + offset] = 0x01
          let torn = Self.scan(damaged, .unsealedWithoutMarks)
          #expect(
            torn.records == offsets && torn.end == end && torn.torn,
            "end \(end), reserve \(reserve), byte \(offset)")
          let sealed = Self.scan(damaged, .sealedWithoutMarks)
          #expect(
            sealed.records == offsets && sealed.damage == [end..<damaged.count],
            "end \(end), reserve \(reserve), byte \(offset)")
        }
      }
    }
  }
}
