/// Writes a new segment file from front to back through a buffer, under a temporary name,
/// with its hint file beside it: how compaction writes its outputs. The header is written
/// last, once the number of outputs is known, after a sync mark that ends the records (as every
/// sealed segment ends: a copy cut short at a record's end is told from a whole one), and both
/// files are synced before ``finish(outputCount:)`` returns.
final class SegmentBuilder {
  let number: UInt32
  let temporaryPath: String
  let finalPath: String
  let hintTemporaryPath: String
  let hintFinalPath: String
  let handle: any FileHandle
  private let fileSystem: any FileSystem
  /// Nil when the output gets no hint file (an index file will cover it).
  @exclusivity(unchecked) private var hint: HintFile.Builder?
  var writesHint: Bool { hint != nil }
  /// Bytes of the hint file, once written.
  private(set) var hintSize = 0
  private(set) var header: SegmentHeader
  // A builder is used by one compaction, on its thread: the runtime's exclusivity checks, four
  // for every record appended, are off for what `append` changes (and for `hint`, above).
  @exclusivity(unchecked) private var buffer: [UInt8] = []
  @exclusivity(unchecked) private var flushed: Int
  /// The sequence number of the last record appended.
  @exclusivity(unchecked) private var lastSequence: UInt64
  /// How many records were appended: they lie back to back after the header.
  @exclusivity(unchecked) private(set) var recordCount = 0
  /// The file's length so far, buffered bytes included.
  var size: Int { flushed + buffer.count }
  var isEmpty: Bool { size <= SegmentHeader.size }
  var salt: UInt32 { header.salt }

  private static let bufferLimit = 1 << 20

  init(
    directory: String, number: UInt32, mark: SegmentHeader.CompactionMark, baseSequence: UInt64,
    fileSystem: any FileSystem, writesHint: Bool = true
  ) throws(LogStoreError) {
    self.number = number
    hint = writesHint ? HintFile.Builder() : nil
    self.fileSystem = fileSystem
    finalPath = directory + "/" + StoreFileName.segment(number)
    temporaryPath = finalPath + StoreFileName.temporarySuffix
    hintFinalPath = directory + "/" + StoreFileName.hint(number)
    hintTemporaryPath = hintFinalPath + StoreFileName.temporarySuffix
    handle = try fileSystem.openFile(temporaryPath, mode: .createOrOpen)
    try handle.truncate(to: 0)
    header = SegmentHeader(
      fileNumber: number, salt: UInt32.random(in: .min ... .max), baseSequence: baseSequence,
      compaction: mark)
    // The header's place is reserved now and filled in by `finish`.
    flushed = SegmentHeader.size
    lastSequence = max(baseSequence, 1) - 1
    buffer.reserveCapacity(Self.bufferLimit + (64 << 10))
  }

  /// Appends a top-level copy of `record`, whose encoded bytes (checked) are `encoded`, from a
  /// segment salted `inputSalt`, numbered `sequence` (above the last one appended), and returns
  /// its offset and length in the new file. The bytes are copied as they are, but for the
  /// sequence number, a batch member's flag (the member becomes a record of its own) and the
  /// checksum, which this file's salt seeds: the stored one changed by what those change in it
  /// (``RecordCodec/changingRegister(salts:clearingMember:sequences:)``), not computed
  /// anew over the bytes.
  func append(
    _ record: Record, encoded: UnsafeRawBufferPointer, inputSalt: UInt32, sequence: UInt64
  ) throws(LogStoreError) -> (offset: Int, length: Int) {
    precondition(encoded.count == record.length, "a record's bytes of the wrong length")
    precondition(sequence > lastSequence, "a copy's sequence number falls")
    let offset = size
    let length = record.length
    let start = buffer.count
    buffer.append(contentsOf: encoded.assumingMemoryBound(to: UInt8.self))
    let member = encoded[RecordLayout.kindOffset] & RecordLayout.memberFlag != 0
    let change = shiftPastChanging(
      RecordCodec.changingRegister(
        salts: inputSalt ^ header.salt, clearingMember: member,
        sequences: record.sequence ^ sequence),
      length: length)
    buffer.withUnsafeMutableBytes { bytes in
      let copy = UnsafeMutableRawBufferPointer(rebasing: bytes[start..<start + length])
      copy[RecordLayout.kindOffset] &= ~RecordLayout.memberFlag
      storeLittleEndian(sequence, copy.baseAddress! + RecordLayout.sequenceOffset)
      let stored = CRC32C.unmask(loadLittleEndian(UInt32.self, copy.baseAddress!))
      storeLittleEndian(CRC32C.mask(stored ^ change), copy.baseAddress!)
    }
    var copy = record
    copy.length = length
    copy.sequence = sequence
    hint?.add(copy, offset: offset)
    lastSequence = sequence
    recordCount += 1
    if buffer.count >= Self.bufferLimit { try flush() }
    return (offset, length)
  }

  /// `register` shifted through the bytes of a record of `length` after its first
  /// ``RecordCodec/changingLength``: multiplied by the shift of 1 through them, whose
  /// ``CRC32C/products(of:)`` are computed once for each length below ``knownShiftLengths``
  /// (some hundreds of operations, as much as the checksum of a few hundred bytes), then kept.
  private func shiftPastChanging(_ register: UInt32, length: Int) -> UInt32 {
    let zeros = length - RecordCodec.changingLength
    guard length < Self.knownShiftLengths else {
      return CRC32C.multiply(register, CRC32C.shift(CRC32C.one, throughZeroBytes: zeros))
    }
    if knownProducts.isEmpty {
      knownProducts = [UInt32](repeating: 0, count: 16 * Self.knownShiftLengths)
    }
    let start = 16 * length
    // The product with 1 (entry 8) is the shift itself, never zero: x^k is not a multiple of
    // the polynomial.
    if knownProducts[start + 8] == 0 {
      let products = CRC32C.products(of: CRC32C.shift(CRC32C.one, throughZeroBytes: zeros))
      knownProducts.replaceSubrange(start..<start + 16, with: products)
    }
    return knownProducts.withUnsafeBufferPointer {
      CRC32C.multiply(register, products: UnsafeBufferPointer(rebasing: $0[start..<start + 16]))
    }
  }

  /// Records shorter than this have their shifts kept (``shiftPastChanging(_:length:)``).
  private static let knownShiftLengths = 2048
  /// Sixteen products a length (``CRC32C/products(of:)``), zero until computed.
  @exclusivity(unchecked) private var knownProducts: [UInt32] = []

  /// Writes the buffer (never empty here: it fills past its limit, or ends with a mark).
  private func flush() throws(LogStoreError) {
    try buffer.withBytes { bytes throws(LogStoreError) in
      try handle.write(bytes, at: flushed)
    }
    flushed += buffer.count
    buffer.removeAll(keepingCapacity: true)
  }

  /// Writes the remaining bytes and the sync mark after them, the final header and the hint
  /// file, and syncs both. The mark is synced with the records: a copy is durable whole before
  /// it is renamed into place, or not in the store at all.
  func finish(outputCount: UInt32) throws(LogStoreError) {
    let recordsEnd = size
    let start = buffer.count
    buffer.append(contentsOf: repeatElement(0, count: RecordLayout.syncMarkLength))
    let (salt, sequence) = (header.salt, lastSequence)
    buffer.withUnsafeMutableBytes { bytes in
      RecordCodec.encodeSyncMark(
        sequence: sequence, timestamp: Timestamp.now().microsecondsSince1970,
        syncedEnd: recordsEnd, salt: salt,
        into: UnsafeMutableRawBufferPointer(rebasing: bytes[start...]))
    }
    try flush()
    header.compaction?.outputCount = outputCount
    try header.encoded().withBytes { bytes throws(LogStoreError) in
      try handle.write(bytes, at: 0)
    }
    try handle.synchronize(.durable)
    guard let hint else { return }
    let hintBytes = hint.encoded(fileNumber: number, salt: header.salt, coveredLength: size)
    let hintHandle = try fileSystem.openFile(hintTemporaryPath, mode: .createOrOpen)
    defer { hintHandle.close() }
    try hintHandle.truncate(to: 0)
    try hintBytes.withBytes { bytes throws(LogStoreError) in try hintHandle.write(bytes, at: 0) }
    try hintHandle.synchronize(.durable)
    hintSize = hintBytes.count
  }
}
