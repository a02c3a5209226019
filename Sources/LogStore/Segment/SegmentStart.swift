/// What the start of a segment file says it is: the one rule (docs/FORMAT.md, "Recovery",
/// rule 6) by which every open, `verify` and `recover` tell a segment whose creation a crash cut
/// short from a damaged one.
///
/// A writer syncs a new segment's header before it writes anything after it
/// (``ActiveLog/createSegment(directory:number:baseSequence:capacity:fileSystem:)``). So a file
/// with no readable header and nothing after it is a creation cut short, in which nothing was
/// ever acknowledged; but records behind an unreadable header were written after the header was
/// on disk: the header was damaged since, and the records are salvaged where they can be
/// checked (``SegmentSalt``).
enum SegmentStart: Equatable {
  /// An intact header that names this file.
  case intact(SegmentHeader)
  /// An intact header of a newer format version: refused, whatever the corruption policy.
  case newerVersion(UInt16)
  /// An intact header that names another file: damage. Its records are not this segment's.
  case foreign(SegmentHeader)
  /// No readable header, and nothing but zeros after where it ends.
  case cutShort
  /// No readable header, and records after it: damage. `storedSalt` is the salt as the
  /// header's bytes hold it, when they are there (not zero, not cut short).
  case damagedHeader(reason: String, storedSalt: UInt32?)

  /// Classifies segment `number` from its decoded header; `holdsRecords` tells whether any byte
  /// after the header is not zero, and is asked only when the header cannot be read.
  init<E: Error>(
    _ decoded: Result<SegmentHeader, SegmentHeader.DecodingError>, number: UInt32,
    holdsRecords: () throws(E) -> Bool
  ) throws(E) {
    switch decoded {
    case .success(let header) where header.fileNumber == number:
      self = .intact(header)
    case .success(let header):
      self = .foreign(header)
    case .failure(.unsupportedVersion(let version)):
      self = .newerVersion(version)
    case .failure(let failure):
      guard try holdsRecords() else {
        self = .cutShort
        return
      }
      switch failure {
      case .damaged(let reason, let salt): self = .damagedHeader(reason: reason, storedSalt: salt)
      default: self = .damagedHeader(reason: "the segment header is missing", storedSalt: nil)
      }
    }
  }
}

/// Finding the salt that seeds a segment's record checksums when its header, which holds the
/// salt, cannot be read.
///
/// A record's checksum starts from the salt, and a CRC-32C is affine in its input: from one
/// record whose bytes are intact, the one salt that makes its checksum match is solved
/// (``CRC32C/prefix(givingChecksum:before:)``). Any bytes that look like a record header give
/// some salt, so a salt is trusted only when something independent confirms it: the record
/// after it checks with it too, or (for a batch) its members do, or it is the salt the
/// damaged header still holds. A random salt passes such a check once in 2^32 tries.
enum SegmentSalt {
  /// How far past the header a record to solve from is looked for: a first page lost whole
  /// (4 KiB, or 16 KiB on Apple's processors) and more.
  static let searchLength = 64 << 10

  /// The salt the records of `bytes` (a whole segment file, whose header is unreadable) check
  /// with, or nil when no record within ``searchLength`` after the header is confirmed.
  static func find(in bytes: UnsafeRawBufferPointer, storedSalt: UInt32?) -> UInt32? {
    let last = min(bytes.count - RecordLayout.headerSize, SegmentHeader.size + searchLength)
    for candidate in stride(from: SegmentHeader.size, through: last, by: 1) {
      guard
        RecordLayout.kind(ofRaw: bytes[candidate + RecordLayout.kindOffset], member: false)
          != nil,
        let header = try? RecordCodec.decodeHeader(bytes.baseAddress! + candidate, member: false),
        header.length <= bytes.count - candidate
      else { continue }
      // The salt as stored, if this record checks with it, needs no solving.
      if let storedSalt, (try? RecordCodec.decode(bytes, at: candidate, salt: storedSalt)) != nil {
        return storedSalt
      }
      // Only a record that something can confirm is worth solving: a batch, or one followed by
      // a record header that holds together.
      let next = candidate + header.length
      guard
        header.kind == .batch
          || (bytes.count - next >= RecordLayout.headerSize
            && (try? RecordCodec.decodeHeader(bytes.baseAddress! + next, member: false)) != nil)
      else { continue }
      let record = UnsafeRawBufferPointer(rebasing: bytes[candidate..<next])
      let stored = CRC32C.unmask(loadLittleEndian(UInt32.self, record.baseAddress!))
      let salt = CRC32C.prefix(
        givingChecksum: stored, before: UnsafeRawBufferPointer(rebasing: record[4...]))
      if confirms(salt, recordAt: candidate, kind: header.kind, in: bytes) { return salt }
    }
    return nil
  }

  /// Whether something besides the record of `kind` at `offset` (whose checksum `salt` was
  /// solved from) says `salt` is the segment's: a batch's members check with it, or the record
  /// after it does (with a later sequence number).
  private static func confirms(
    _ salt: UInt32, recordAt offset: Int, kind: RecordKind, in bytes: UnsafeRawBufferPointer
  ) -> Bool {
    // Its structure held when it was picked (so this cannot throw), and its checksum holds by
    // the salt's making.
    let record = try! RecordCodec.decode(bytes, at: offset, salt: salt, verify: false)
    if kind == .batch {
      return record.value.count > 0
        && (try? RecordCodec.validateMembers(of: record, salt: salt)) != nil
    }
    guard let next = try? RecordCodec.decode(bytes, at: offset + record.length, salt: salt)
    else { return false }
    return next.sequence > record.sequence
  }
}
