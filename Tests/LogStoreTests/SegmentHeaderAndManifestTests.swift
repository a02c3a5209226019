import Testing

@testable import LogStore

/// The two fixed-layout structures a store is opened from: bytes that fail a check are
/// refused with that check's reason (and never trap), including bytes whose checksum was made
/// right again after a field was changed, which only the later checks can catch.
@Suite("Segment headers and manifests")
struct SegmentHeaderAndManifestTests {
  private func decodeHeader(_ bytes: [UInt8]) -> Result<
    SegmentHeader, SegmentHeader.DecodingError
  > {
    bytes.withUnsafeBytes { buffer in
      Result { () throws(SegmentHeader.DecodingError) in try SegmentHeader.decode(buffer) }
    }
  }

  private func decodeManifest(_ bytes: [UInt8]) -> Result<Manifest, Manifest.Invalid> {
    bytes.withUnsafeBytes { buffer in
      Result { () throws(Manifest.Invalid) in try Manifest.decode(buffer) }
    }
  }

  @Test("a segment header is refused as incomplete, damaged or newer, each with its reason")
  func segmentHeaderRefusals() {
    let header = SegmentHeader(fileNumber: 7, salt: 99, baseSequence: 12)
    let good = header.encoded()
    #expect(decodeHeader(good) == .success(header))
    #expect(header.version == 3)
    // Segments written by versions 1 (before expiry fields) and 2 (before sync marks) are read.
    for version: UInt16 in [1, 2] {
      let older = SegmentHeader(version: version, fileNumber: 7, salt: 99, baseSequence: 12)
      #expect(decodeHeader(older.encoded()) == .success(older))
    }

    var changedByte = good
    changedByte[12] ^= 1
    var badMagic = good
    badMagic[0] = UInt8(ascii: "X")
    storeChecksum(&badMagic, at: 44, of: 0..<44)
    let cases: [(bytes: [UInt8], error: SegmentHeader.DecodingError)] = [
      (Array(good.prefix(47)), .incomplete),
      ([UInt8](repeating: 0, count: 48), .incomplete),
      (changedByte, .damaged("segment header checksum mismatch", storedSalt: 99)),
      (badMagic, .damaged("not a segment file (bad magic)", storedSalt: 99)),
      (
        SegmentHeader(version: 4, fileNumber: 7, salt: 99, baseSequence: 12).encoded(),
        .unsupportedVersion(4)
      ),
      (
        SegmentHeader(version: 0, fileNumber: 7, salt: 99, baseSequence: 12).encoded(),
        .damaged("unknown format version 0", storedSalt: 99)
      ),
      (
        SegmentHeader(fileNumber: 7, salt: 99, baseSequence: RecordLayout.sequenceLimit)
          .encoded(),
        .damaged("base sequence number out of range", storedSalt: 99)
      ),
    ]
    for (bytes, error) in cases {
      #expect(decodeHeader(bytes) == .failure(error))
    }
  }

  @Test("a manifest is refused when any check fails, each with its reason")
  func manifestRefusals() {
    let manifest = Manifest(segments: [1, 4, 9], generation: 5)
    let good = manifest.encoded()
    #expect(decodeManifest(good) == .success(manifest))
    #expect(
      decodeManifest(Manifest(segments: [], generation: 1).encoded()).map(\.segments)
        == .success([]))

    /// `good` with `bytes` at `offset`, its checksum made right again.
    func changed(at offset: Int, to bytes: [UInt8]) -> [UInt8] {
      var result = good
      result.replaceSubrange(offset..<offset + bytes.count, with: bytes)
      storeChecksum(&result, at: result.count - 4, of: 0..<result.count - 4)
      return result
    }
    var changedByte = good
    changedByte[20] ^= 1
    var longer = Array(good.dropLast(4)) + [0, 0, 0, 0, 0, 0]
    storeChecksum(&longer, at: longer.count - 4, of: 0..<longer.count - 4)
    let cases: [(bytes: [UInt8], reason: String)] = [
      (Array(good.prefix(27)), "shorter than its header"),
      (changed(at: 0, to: Array("YTKKVXXX".utf8)), "bad magic"),
      (changedByte, "checksum mismatch"),
      (changed(at: 8, to: [2, 0]), "format version 2, newer than this library reads"),
      (changed(at: 12, to: [4, 0, 0, 0]), "the segment count does not match the file's length"),
      (changed(at: 12, to: [2, 0, 0, 0]), "the segment count does not match the file's length"),
      (longer, "the segment count does not match the file's length"),
      (
        Manifest(segments: [4, 4], generation: 1).encoded(),
        "segment numbers are not strictly ascending"
      ),
      (
        Manifest(segments: [9, 1], generation: 1).encoded(),
        "segment numbers are not strictly ascending"
      ),
      (
        Manifest(segments: [0], generation: 1).encoded(),
        "segment numbers are not strictly ascending"
      ),
    ]
    for (bytes, reason) in cases {
      #expect(decodeManifest(bytes) == .failure(Manifest.Invalid(reason: reason)))
    }
  }
}
