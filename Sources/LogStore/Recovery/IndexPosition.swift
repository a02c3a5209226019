/// Which index file an open uses, and whether the changes file over it follows on: the one
/// rule that an open (``Recovery``) applies and that `verify` (``Verifier``) reports by
/// (docs/FORMAT.md, "Index files", rules 1 and 2, and "Changes files", rule 2).

/// A segment that an open reads, as an index or changes file's position is checked against it.
struct LiveSegment {
  let number: UInt32
  /// Its header, when its first bytes read as one.
  let header: SegmentHeader?
  let size: Int
}

/// Why a position does not describe the start of the live segments.
enum PositionMismatch: Error {
  /// It names other segments than the store reads, or one of them as it no longer is: the file
  /// is stale (a compaction replaced those segments, or the store lost one), not damaged.
  case otherSegments(String)
  /// It covers more bytes of a segment than the segment holds (bytes that the file vouches for
  /// are gone), or fewer than the segment's header.
  case coversMore(String)

  var reason: String {
    switch self {
    case .otherSegments(let reason), .coversMore(let reason): reason
    }
  }
}

extension IndexFileFormat {
  /// Checks that `position` (an index or changes file's) describes the start of `live`, the
  /// segments an open reads in order: each segment it names is the next live one, with an
  /// intact header of its number and salt, and holds at least the bytes covered of it.
  static func check(position: [CoveredSegment], against live: [LiveSegment])
    throws(PositionMismatch)
  {
    guard !position.isEmpty, position.count <= live.count else {
      throw .otherSegments("it covers other segments than the store has")
    }
    for (covered, segment) in zip(position, live) {
      guard covered.number == segment.number, let header = segment.header,
        header.fileNumber == segment.number, header.salt == covered.salt
      else {
        throw .otherSegments(
          "it covers segment \(covered.number), which the store no longer has as it was")
      }
      guard covered.coveredLength >= SegmentHeader.size, covered.coveredLength <= segment.size
      else {
        throw .coversMore(
          "it covers \(covered.coveredLength) bytes of segment \(covered.number), which holds "
            + "\(segment.size)")
      }
    }
  }
}

extension MappedIndex {
  /// The index file an open uses: the newest of `numbers` that opens and whose position
  /// describes the start of `live`. Each one passed over is given to `rejected` with the
  /// reason.
  static func chosen(
    among numbers: [UInt32], live: [LiveSegment], directory: String, fileSystem: any FileSystem,
    rejected: (UInt32, String) -> Void = { _, _ in }
  ) -> MappedIndex? {
    for number in numbers.sorted(by: >) {
      do throws(Rejection) {
        let mapped = try MappedIndex.open(
          directory: directory, number: number, fileSystem: fileSystem)
        do throws(PositionMismatch) {
          try IndexFileFormat.check(position: mapped.segments, against: live)
        } catch {
          throw Rejection(reason: error.reason)
        }
        return mapped
      } catch {
        rejected(number, error.reason)
      }
    }
    return nil
  }
}

extension ChangesFile {
  typealias Position = [IndexFileFormat.CoveredSegment]

  /// Checks that `position`, a changes file's, is at or after `base`, the position of the index
  /// file it is over: the same segments up to the last of `base`, and at least as much of that
  /// one.
  static func check(position: Position, over base: Position) throws(Invalid) {
    guard let last = base.last, position.count >= base.count,
      zip(base, position).allSatisfy({ $0.number == $1.number && $0.salt == $1.salt }),
      position[base.count - 1].coveredLength >= last.coveredLength
    else { throw Invalid(reason: "its position is before the index file's") }
  }
}
