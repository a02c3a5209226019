/// The manifest: which segments make up the store right now, as one file that the writer
/// replaces atomically (written under a temporary name, synced, renamed over the old one, the
/// directory synced). Read-only opens read it to learn the set of live segments as one
/// consistent thing; a directory listing taken while a compaction renames and deletes files
/// can show a mix of before and after.
///
/// ```
/// offset size field
///  0      8   magic        "YTKKVMAN"
///  8      2   version      1
/// 10      2   reserved     zero
/// 12      4   count        number of segments listed
/// 16      8   generation   one more than the manifest it replaced
/// 24   4×count segments    segment numbers, strictly ascending; the last is the active one
///  …      4   checksum     masked CRC-32C of every byte before it
/// ```
/// All integers are little-endian.
///
/// Invariants the writer keeps (docs/FORMAT.md, "The manifest"):
/// - Every segment listed exists until a newer manifest that omits it is on disk: files are
///   deleted only after the manifest that drops them is durable.
/// - Every listed segment but the last is sealed: it will never change again. The last one is
///   the active segment; it only grows.
/// - A segment is listed before the first record written to it is acknowledged.
package struct Manifest: Equatable, Sendable {
  package static let fileName = "MANIFEST"
  static let temporaryName = "MANIFEST.tmp"
  static let magic: [UInt8] = Array("YTKKVMAN".utf8)
  static let version: UInt16 = 1
  static let headerSize = 24

  /// The live segments, ascending; the last is the active segment.
  package var segments: [UInt32]
  /// Counts the manifests written to this store: each one replaces the one before.
  package var generation: UInt64

  package init(segments: [UInt32], generation: UInt64) {
    self.segments = segments
    self.generation = generation
  }

  package func encoded() -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: Self.headerSize + 4 * segments.count + 4)
    bytes.withUnsafeMutableBytes { buffer in
      let base = buffer.baseAddress!
      base.copyMemory(from: Self.magic, byteCount: 8)
      storeLittleEndian(Self.version, base + 8)
      storeLittleEndian(UInt32(segments.count), base + 12)
      storeLittleEndian(generation, base + 16)
      for (index, number) in segments.enumerated() {
        storeLittleEndian(number, base + Self.headerSize + 4 * index)
      }
      let end = buffer.count - 4
      let checksum = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buffer[0..<end]))
      storeLittleEndian(CRC32C.mask(checksum), base + end)
    }
    return bytes
  }

  /// Why bytes are not a manifest this version can use.
  package struct Invalid: Error, Equatable {
    package var reason: String
  }

  /// Decodes and checks a manifest; never traps, whatever the bytes.
  package static func decode(_ bytes: UnsafeRawBufferPointer) throws(Invalid) -> Manifest {
    guard bytes.count >= headerSize + 4, let base = bytes.baseAddress else {
      throw Invalid(reason: "shorter than its header")
    }
    guard bytesEqual(UnsafeRawBufferPointer(rebasing: bytes[0..<8]), magic) else {
      throw Invalid(reason: "bad magic")
    }
    let end = bytes.count - 4
    guard
      CRC32C.unmask(loadLittleEndian(UInt32.self, base + end))
        == CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<end]))
    else { throw Invalid(reason: "checksum mismatch") }
    let version = loadLittleEndian(UInt16.self, base + 8)
    guard version == Self.version else {
      throw Invalid(reason: "format version \(version), newer than this library reads")
    }
    // `Int(exactly:)`: where `Int` is 32 bits wide, a count above `Int32.max` must not trap.
    guard let count = Int(exactly: loadLittleEndian(UInt32.self, base + 12)),
      count == (end - headerSize) / 4, (end - headerSize) % 4 == 0
    else {
      throw Invalid(reason: "the segment count does not match the file's length")
    }
    var segments: [UInt32] = []
    segments.reserveCapacity(count)
    for index in 0..<count {
      let number = loadLittleEndian(UInt32.self, base + headerSize + 4 * index)
      guard number > (segments.last ?? 0) else {
        throw Invalid(reason: "segment numbers are not strictly ascending")
      }
      segments.append(number)
    }
    return Manifest(
      segments: segments, generation: loadLittleEndian(UInt64.self, base + 16))
  }
}
