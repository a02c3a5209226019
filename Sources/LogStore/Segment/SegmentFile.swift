/// An open segment file: its header, its descriptor, and a shared mapping of its bytes that
/// readers decode records from.
///
/// Immutable once made. The mapping stays valid while any reference to the segment exists,
/// even after the file is sealed or deleted, so a reader holding one can finish safely.
final class SegmentFile: Sendable {
  let number: UInt32
  let path: String
  /// The salt that seeds record checksums in this file.
  let salt: UInt32
  /// Nil when the header was damaged and the segment was salvaged with its stored salt.
  let header: SegmentHeader?
  let handle: any FileHandle
  let mapping: any FileMapping

  init(
    number: UInt32, path: String, salt: UInt32, header: SegmentHeader?,
    handle: any FileHandle, mapping: any FileMapping
  ) {
    self.number = number
    self.path = path
    self.salt = salt
    self.header = header
    self.handle = handle
    self.mapping = mapping
  }

  deinit { handle.close() }

  /// Decodes the record at `offset`; members of batches are accepted too, since the index
  /// points at them directly.
  func record(at offset: Int, verify: Bool) throws(RecordDecodingError) -> Record {
    try Self.record(at: offset, in: mapping.bytes, salt: salt, verify: verify)
  }

  /// The record at `offset` in a segment's `bytes`, salted `salt`; a batch's member too.
  @inline(__always)
  static func record(at offset: Int, in bytes: UnsafeRawBufferPointer, salt: UInt32, verify: Bool)
    throws(RecordDecodingError) -> Record
  {
    try RecordCodec.decode(
      bytes, at: offset, salt: salt, member: isMember(at: offset, in: bytes), verify: verify)
  }

  /// Whether the record at `offset` in `bytes` says it is a batch's member: the first thing
  /// decoding it reads (false past the end, where decoding fails anyway).
  @inline(__always)
  static func isMember(at offset: Int, in bytes: UnsafeRawBufferPointer) -> Bool {
    offset + RecordLayout.kindOffset < bytes.count
      && bytes[offset + RecordLayout.kindOffset] & RecordLayout.memberFlag != 0
  }

  /// Calls `body` with each member of `batch`, the batch record at `offset` in this file, and
  /// the member's own location: the index points at members, never at their batch.
  ///
  /// The members are not checksummed again: every caller has a batch that was checked when it
  /// was read (scanned at open or by compaction) or that it has just written.
  func forEachMember(
    of batch: Record, at offset: Int,
    _ body: (Record, RecordLocation) throws(LogStoreError) -> Void
  ) throws(LogStoreError) {
    let valueStart = offset + batch.length - batch.value.count
    try RecordCodec.forEachMember(of: batch, salt: salt, verify: false) {
      member, memberOffset throws(LogStoreError) in
      try body(
        member,
        RecordLocation(
          segment: number, offset: UInt32(valueStart + memberOffset),
          length: UInt32(member.length)))
    }
  }
}
