import LogStore

/// Fuzz target: any bytes, read as the body of a segment, as a hint file and as a manifest.
///
/// Decoding must never trap; whatever the scanner accepts must decode again at the same
/// offset with the same length; damaged regions and records must tile the bytes in order.
package func fuzzRecordDecoding(_ data: UnsafeRawBufferPointer) {
  guard data.count >= 4 else { return }
  let salt = data.load(as: UInt32.self)
  let body = UnsafeRawBufferPointer(rebasing: data[4...])
  // As a segment: a zeroed header followed by the bytes, scanned as a sealed segment and as
  // the last one, with sync marks and without.
  var segment = [UInt8](repeating: 0, count: SegmentHeader.size)
  segment += body
  segment.withUnsafeBytes { bytes in
    for extent in [SegmentScanner.Extent.sealed, .unsealed, .unsealedWithoutMarks] {
      var scanner = SegmentScanner(
        bytes: bytes, owner: nil, salt: salt, baseSequence: 0, extent: extent)
      var position = SegmentHeader.size
      var damageEnd = position
      // The scanner reads sync marks without handing them out.
      func skipMarks(upTo end: Int) {
        while position < end, let mark = try? RecordCodec.decode(bytes, at: position, salt: salt),
          mark.kind == .syncMark
        {
          position += mark.length
        }
      }
      while let event = scanner.next() {
        switch event {
        case .record(let record, let offset):
          skipMarks(upTo: offset)
          precondition(offset == position, "records must follow each other")
          guard let again = try? RecordCodec.decode(bytes, at: offset, salt: salt) else {
            preconditionFailure("an accepted record must decode again")
          }
          precondition(again.length == record.length && again.sequence == record.sequence)
          precondition(record.kind != .syncMark, "sync marks are not handed out")
          position += record.length
        case .damaged(let offset, let length, _):
          skipMarks(upTo: offset)
          // Of no length only where a sealed segment ends before its last sync mark.
          precondition(
            offset == position && (length > 0 || offset == scanner.end),
            "damage must start where records end")
          position += length
          damageEnd = position
        }
      }
      skipMarks(upTo: scanner.end)
      precondition(position == scanner.end && scanner.end <= bytes.count)
      if extent == .unsealed {
        // Damage only in what sync marks proved durable: past that, the log ends.
        precondition(damageEnd <= max(scanner.provenEnd, SegmentHeader.size))
      }
    }
  }
  // Every offset, as a record and as a batch member; the records found intact together (as
  // an ordered walk checks them) are exactly those that decode with their checksum checked.
  for first in stride(from: 0, to: min(body.count, 64), by: 16) {
    let located = (first..<min(first + 16, body.count)).flatMap { offset in
      [false, true].map {
        RecordCodec.Located(bytes: body, offset: offset, salt: salt, member: $0)
      }
    }
    let intact = located.withUnsafeBufferPointer { RecordCodec.intactRecords($0) }
    for (index, record) in located.enumerated() {
      let decodes =
        (try? RecordCodec.decode(body, at: record.offset, salt: salt, member: index % 2 == 1))
        != nil
      precondition(
        (intact & 1 << index != 0) == decodes, "a record found intact must decode, and only then")
    }
  }
  // As a hint file of a segment as long as the input.
  _ = try? HintFile.decode(body, fileNumber: 1, salt: salt, segmentLength: body.count)
  _ = try? SegmentHeader.decode(body)
  // As a manifest: whatever decodes must encode to the same bytes.
  if let manifest = try? Manifest.decode(body) {
    precondition(manifest.encoded().elementsEqual(body), "a manifest must encode as it decoded")
  }
  // As a commit slot of the shared state: whatever decodes must encode to the same 64 bytes.
  if body.count >= 64, let commit = SharedState.Commit.decode(body.baseAddress!) {
    var again = [UInt8](repeating: 0, count: 64)
    again.withUnsafeMutableBytes { commit.encode(into: $0.baseAddress!) }
    precondition(again.elementsEqual(body.prefix(64)), "a commit must encode as it decoded")
  }
}
