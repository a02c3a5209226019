/// A record read from a buffer: its fields, pointing into that buffer.
///
/// A `Record` is only ever produced by ``RecordCodec/decode(_:at:salt:member:verify:)``, which
/// has checked its bounds and (unless told not to) its checksum.
///
/// It owns nothing: its fields are views of the buffer, valid while whatever owns that buffer
/// lives. A record used within the call that decoded it is safe by that call's scope (readers
/// hold the index lock, or a captured ``SegmentLookup``). Code that keeps records longer keeps
/// them beside their owner, explicitly: a ``SegmentScanner`` holds the segment file it reads
/// (and with it the records it returns, also across ``ScanPipeline``'s threads), and
/// ``KeyDirectory/replay(from:_:)`` holds the file its pending puts point into. A strong
/// reference in every record would make each read and each scanned record touch the
/// segment's reference count, from every reader thread at once.
package struct Record {
  package var kind: RecordKind
  package var sequence: UInt64
  package var timestamp: Int64
  package var table: UnsafeRawBufferPointer
  package var key: UnsafeRawBufferPointer
  package var value: UnsafeRawBufferPointer
  /// A put's expiry (microseconds since 1970), or a table creation's default lifetime
  /// (microseconds; 0: none); nil when the record has no expiry field
  /// (``RecordLayout/expiryFlag``). Not part of `value`.
  package var expiry: Int64?
  /// The record's encoded length in bytes.
  package var length: Int
}

/// Why bytes are not a record.
package enum RecordDecodingError: Error, Equatable {
  /// The buffer ends before the record does: a torn write, or a damaged length field.
  case truncated
  /// The bytes cannot be a record; the reason is for people.
  case damaged(String)

  /// Why, in words.
  package var reason: String {
    switch self {
    case .truncated: "the record runs past the end of its buffer"
    case .damaged(let reason): reason
    }
  }
}

/// Encodes and decodes records (the layout is in ``RecordLayout``). Pure functions of their
/// inputs: no I/O, no state, every read bounds-checked, so any bytes can be decoded safely.
package enum RecordCodec {
  /// Writes one record into `destination`, which must be exactly
  /// `RecordLayout.length(table:key:value:)` bytes long.
  /// `expiry`, when not nil, is written as the value's expiry field (a put or a table
  /// creation only).
  static func encode(
    kind: RecordKind, member: Bool = false, sequence: UInt64, timestamp: Int64,
    table: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer,
    expiry: Int64? = nil, salt: UInt32, into destination: UnsafeMutableRawBufferPointer
  ) {
    let length = RecordLayout.length(
      table: table.count, key: key.count, value: value.count, expiry: expiry)
    precondition(destination.count == length, "record buffer has the wrong size")
    precondition(expiry == nil || kind == .put || kind == .createTable)
    let base = destination.baseAddress!
    writeHeader(
      kind: kind, member: member, tableLength: table.count, keyLength: key.count,
      valueLength: value.count + (expiry == nil ? 0 : RecordLayout.expirySize),
      sequence: sequence, timestamp: timestamp, into: base)
    if expiry != nil {
      base.storeBytes(
        of: kind.rawValue | (member ? RecordLayout.memberFlag : 0) | RecordLayout.expiryFlag,
        toByteOffset: RecordLayout.kindOffset, as: UInt8.self)
    }
    var cursor = base + RecordLayout.headerSize
    cursor = append(table, at: cursor)
    cursor = append(key, at: cursor)
    if let expiry {
      storeLittleEndian(UInt64(bitPattern: expiry), cursor)
      cursor += RecordLayout.expirySize
    }
    _ = append(value, at: cursor)
    writeChecksum(destination, salt: salt)
  }

  /// Writes a batch record into `destination`, which must be exactly its encoded length: the
  /// batch's header, then its members, which `members` appends one by one (each takes the
  /// next sequence number from `sequence` on), then the checksum over all of it.
  static func encodeBatch(
    sequence: UInt64, timestamp: Int64, salt: UInt32,
    into destination: UnsafeMutableRawBufferPointer, members: (inout BatchMembers) -> Void
  ) {
    writeHeader(
      kind: .batch, member: false, tableLength: 0, keyLength: 0,
      valueLength: destination.count - RecordLayout.headerSize, sequence: sequence,
      timestamp: timestamp, into: destination.baseAddress!)
    var writer = BatchMembers(
      destination: destination, offset: RecordLayout.headerSize, sequence: sequence, salt: salt)
    members(&writer)
    precondition(writer.offset == destination.count, "a batch's length changed while encoding")
    writeChecksum(destination, salt: salt)
  }

  /// Where ``encodeBatch(sequence:timestamp:salt:into:members:)`` has its members written.
  struct BatchMembers {
    fileprivate let destination: UnsafeMutableRawBufferPointer
    fileprivate var offset: Int
    fileprivate var sequence: UInt64
    fileprivate let salt: UInt32

    /// Writes the next member after the ones before it.
    mutating func append(
      kind: RecordKind, timestamp: Int64, table: UnsafeRawBufferPointer,
      key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, expiry: Int64?
    ) {
      let length = RecordLayout.length(
        table: table.count, key: key.count, value: value.count, expiry: expiry)
      precondition(length <= destination.count - offset, "a batch's members outgrow it")
      RecordCodec.encode(
        kind: kind, member: true, sequence: sequence, timestamp: timestamp, table: table,
        key: key, value: value, expiry: expiry, salt: salt,
        into: UnsafeMutableRawBufferPointer(rebasing: destination[offset..<offset + length]))
      offset += length
      sequence += 1
    }
  }

  /// Writes a record's header fields (all but the checksum) at `base`.
  static func writeHeader(
    kind: RecordKind, member: Bool, tableLength: Int, keyLength: Int, valueLength: Int,
    sequence: UInt64, timestamp: Int64, into base: UnsafeMutableRawPointer
  ) {
    precondition(
      tableLength <= RecordLayout.maxTableLength && keyLength <= RecordLayout.maxKeyLength
        && valueLength <= UInt32.max)
    base.storeBytes(
      of: kind.rawValue | (member ? RecordLayout.memberFlag : 0),
      toByteOffset: RecordLayout.kindOffset, as: UInt8.self)
    base.storeBytes(
      of: UInt8(tableLength), toByteOffset: RecordLayout.tableLengthOffset, as: UInt8.self)
    storeLittleEndian(UInt16(keyLength), base + RecordLayout.keyLengthOffset)
    storeLittleEndian(UInt32(valueLength), base + RecordLayout.valueLengthOffset)
    storeLittleEndian(sequence, base + RecordLayout.sequenceOffset)
    storeLittleEndian(UInt64(bitPattern: timestamp), base + RecordLayout.timestampOffset)
  }

  /// Computes and stores the checksum of a complete record whose other bytes are written.
  static func writeChecksum(_ record: UnsafeMutableRawBufferPointer, salt: UInt32) {
    let checksum = Self.checksum(of: UnsafeRawBufferPointer(record), salt: salt)
    storeLittleEndian(CRC32C.mask(checksum), record.baseAddress!)
  }

  /// The bytes a checksum runs over that a copy may change: the salt (4), the record from its
  /// kind to the end of its sequence number.
  static let changingLength = RecordLayout.sequenceOffset + 8

  /// How the unmasked checksum of a record changes when it moves from a segment to another
  /// whose salts XOR to `salts`, takes a sequence number that XORs with its own to `sequences`,
  /// and, `clearingMember`, has its member flag cleared (a batch member copied as a record of
  /// its own), before that change is shifted through the rest of the record: the register of
  /// the change of the first ``changingLength`` bytes the checksum runs over. The checksum runs
  /// over the salt and the record's bytes, linearly, so the change itself is this register
  /// shifted through the record's other `length - changingLength` bytes
  /// (``CRC32C/shift(_:throughZeroBytes:)``, which ``SegmentBuilder`` computes as a product): it
  /// depends on the length and on these changes, not on the other bytes. A copy whose checksum
  /// is changed so keeps the check of the bytes it was written over: bytes that changed before
  /// the copy, or while it was made, fail the new checksum as they failed the old.
  static func changingRegister(salts: UInt32, clearingMember: Bool, sequences: UInt64) -> UInt32 {
    // Salt, kind, table, key and value lengths, sequence number: as the checksum reads them.
    var change: (UInt64, UInt64, UInt64) = (0, 0, 0)
    return withUnsafeMutableBytes(of: &change) { bytes in
      storeLittleEndian(salts, bytes.baseAddress!)
      if clearingMember { bytes[RecordLayout.kindOffset] = RecordLayout.memberFlag }
      storeLittleEndian(sequences, bytes.baseAddress! + RecordLayout.sequenceOffset)
      return CRC32C.register(of: UnsafeRawBufferPointer(rebasing: bytes[..<changingLength]))
    }
  }

  @inline(__always)
  private static func append(_ part: UnsafeRawBufferPointer, at cursor: UnsafeMutableRawPointer)
    -> UnsafeMutableRawPointer
  {
    if let source = part.baseAddress, part.count > 0 {
      cursor.copyMemory(from: source, byteCount: part.count)
    }
    return cursor + part.count
  }

  /// The unmasked checksum of an encoded record: over the salt, then the record after its
  /// checksum field.
  @inline(__always)
  static func checksum(of record: UnsafeRawBufferPointer, salt: UInt32) -> UInt32 {
    CRC32C.extend(seed(salt), UnsafeRawBufferPointer(rebasing: record[4...]))
  }

  /// The CRC-32C of a salt's bytes, where every record's checksum starts.
  @inline(__always)
  private static func seed(_ salt: UInt32) -> UInt32 {
    CRC32C.checksum(ofWord: salt)
  }

  /// A record to check (``intactRecords(_:)``): the one at `offset` in `bytes`, a segment's
  /// bytes salted `salt`, a batch's member or not.
  package struct Located {
    package var bytes: UnsafeRawBufferPointer
    package var offset: Int
    package var salt: UInt32
    package var member: Bool

    package init(bytes: UnsafeRawBufferPointer, offset: Int, salt: UInt32, member: Bool) {
      self.bytes = bytes
      self.offset = offset
      self.salt = salt
      self.member = member
    }
  }

  /// Bit `i` set for each of `records` (at most 32) whose checksum matches: exactly the
  /// check `decode(_:at:salt:member:verify:)` makes, which a record with its bit set can then
  /// skip. A record whose header is damaged, or that runs past its bytes, has no bit (its
  /// decoding says why).
  ///
  /// For a walk in key order, whose records mostly lie far apart: the checksums are computed
  /// four at a time (``CRC32C/extend(four:)``), so that their cache misses overlap, where one
  /// record's checksum after another's would wait for each in turn.
  package static func intactRecords(_ records: UnsafeBufferPointer<Located>) -> UInt32 {
    precondition(records.count <= 32, "at most 32 records are checked at once")
    return withUnsafeTemporaryAllocation(of: CRC32C.Chain.self, capacity: records.count) {
      chains in
      withUnsafeTemporaryAllocation(of: Int.self, capacity: records.count) { owners in
        var count = 0
        for (index, record) in records.enumerated() {
          let offset = record.offset
          guard offset >= 0, offset <= record.bytes.count,
            record.bytes.count - offset >= RecordLayout.headerSize,
            let base = record.bytes.baseAddress.map({ $0 + offset }),
            let header = try? decodeHeader(base, member: record.member),
            header.length <= record.bytes.count - offset
          else { continue }
          chains[count] = CRC32C.Chain(
            crc: seed(record.salt), next: base + 4, remaining: header.length - 4)
          owners[count] = index
          count += 1
        }
        var start = 0
        while count - start >= 4 {
          CRC32C.extend(four: chains.baseAddress! + start)
          start += 4
        }
        var intact: UInt32 = 0
        for index in 0..<count {
          if index >= start {
            let chain = chains[index]
            chains[index].crc = CRC32C.update(chain.crc, chain.next, chain.remaining)
          }
          let record = records[owners[index]]
          let stored = CRC32C.unmask(
            loadLittleEndian(UInt32.self, record.bytes.baseAddress! + record.offset))
          if stored == chains[index].crc { intact |= 1 << owners[index] }
        }
        return intact
      }
    }
  }

  /// Decodes the record that starts at `offset` in `buffer`.
  ///
  /// - Parameters:
  ///   - salt: the salt of the segment the bytes come from.
  ///   - member: whether a batch member is expected here (members and top-level records are
  ///     told apart by the kind's member flag).
  ///   - verify: whether to check the checksum; the structure is always checked.
  /// - Throws: ``RecordDecodingError/truncated`` when the buffer ends first, otherwise
  ///   ``RecordDecodingError/damaged(_:)``.
  package static func decode(
    _ buffer: UnsafeRawBufferPointer, at offset: Int, salt: UInt32, member: Bool = false,
    verify: Bool = true
  ) throws(RecordDecodingError) -> Record {
    guard offset >= 0, offset <= buffer.count,
      buffer.count - offset >= RecordLayout.headerSize, let start = buffer.baseAddress
    else { throw .truncated }
    let base = start + offset
    let header = try decodeHeader(base, member: member)
    guard header.length <= buffer.count - offset else { throw .truncated }
    let bytes = UnsafeRawBufferPointer(start: base, count: header.length)
    if verify {
      let stored = CRC32C.unmask(loadLittleEndian(UInt32.self, base))
      guard stored == checksum(of: bytes, salt: salt) else {
        throw .damaged("checksum mismatch")
      }
    }
    let tableStart = RecordLayout.headerSize
    let keyStart = tableStart + header.tableLength
    var valueStart = keyStart + header.keyLength
    var expiry: Int64?
    if header.hasExpiry {
      expiry = Int64(bitPattern: loadLittleEndian(UInt64.self, base + valueStart))
      valueStart += RecordLayout.expirySize
    }
    return Record(
      kind: header.kind, sequence: header.sequence, timestamp: header.timestamp,
      table: UnsafeRawBufferPointer(rebasing: bytes[tableStart..<keyStart]),
      key: UnsafeRawBufferPointer(rebasing: bytes[keyStart..<keyStart + header.keyLength]),
      value: UnsafeRawBufferPointer(rebasing: bytes[valueStart..<header.length]),
      expiry: expiry, length: header.length)
  }

  /// The fixed fields of a record header, checked for consistency but not checksummed.
  struct Header {
    var kind: RecordKind
    var tableLength: Int
    var keyLength: Int
    var valueLength: Int
    var sequence: UInt64
    var timestamp: Int64
    /// The value starts with an expiry field (``RecordLayout/expiryFlag``); `valueLength`
    /// counts it.
    var hasExpiry = false
    var length: Int { RecordLayout.headerSize + tableLength + keyLength + valueLength }
  }

  /// Reads and checks the header at `base`, which must have `RecordLayout.headerSize`
  /// readable bytes.
  @inline(__always)
  static func decodeHeader(_ base: UnsafeRawPointer, member: Bool) throws(RecordDecodingError)
    -> Header
  {
    let rawKind = base.load(fromByteOffset: RecordLayout.kindOffset, as: UInt8.self)
    guard let (kind, hasExpiry) = RecordLayout.kind(ofRaw: rawKind, member: member) else {
      throw .damaged("invalid record kind 0x\(String(rawKind, radix: 16))")
    }
    var header = Header(
      kind: kind,
      tableLength: Int(base.load(fromByteOffset: RecordLayout.tableLengthOffset, as: UInt8.self)),
      keyLength: Int(loadLittleEndian(UInt16.self, base + RecordLayout.keyLengthOffset)),
      // Clamped: a damaged length of 2^31 or more must fail the checks below, not trap
      // where Int is 32 bits.
      valueLength: Int(
        clamping: loadLittleEndian(UInt32.self, base + RecordLayout.valueLengthOffset)),
      sequence: loadLittleEndian(UInt64.self, base + RecordLayout.sequenceOffset),
      timestamp: Int64(
        bitPattern: loadLittleEndian(UInt64.self, base + RecordLayout.timestampOffset)))
    guard header.sequence < RecordLayout.sequenceLimit else {
      throw .damaged("sequence number out of range")
    }
    if hasExpiry {
      // The expiry field is part of the value's bytes: checked, then left out of the kind's
      // own rules below.
      guard header.valueLength >= RecordLayout.expirySize else {
        throw .damaged("malformed \(kind) header: no room for its expiry")
      }
      header.hasExpiry = true
      if kind == .createTable {
        guard header.tableLength > 0, header.keyLength == 0,
          header.valueLength == RecordLayout.expirySize
        else { throw .damaged("malformed createTable header") }
        return header
      }
    }
    switch kind {
    case .batch:
      guard header.tableLength == 0, header.keyLength == 0,
        header.valueLength <= RecordLayout.maxBatchLength
      else { throw .damaged("malformed batch header") }
    case .syncMark:
      guard header.tableLength == 0, header.keyLength == 0,
        header.valueLength == RecordLayout.syncMarkLength - RecordLayout.headerSize
      else { throw .damaged("malformed sync mark header") }
    case .put:
      guard header.tableLength > 0,
        header.valueLength - (hasExpiry ? RecordLayout.expirySize : 0)
          <= RecordLayout.maxValueLength
      else {
        throw .damaged("malformed put header")
      }
    case .delete, .deletePrefix:
      guard header.tableLength > 0, header.valueLength == 0 else {
        throw .damaged("malformed \(kind) header")
      }
    case .createTable, .clearTable, .dropTable:
      guard header.tableLength > 0, header.keyLength == 0, header.valueLength == 0 else {
        throw .damaged("malformed \(kind) header")
      }
    }
    return header
  }

  /// Writes a sync mark (``RecordKind/syncMark``) saying that the bytes before `syncedEnd`
  /// were on stable storage; `destination` is ``RecordLayout/syncMarkLength`` bytes.
  static func encodeSyncMark(
    sequence: UInt64, timestamp: Int64, syncedEnd: Int, salt: UInt32,
    into destination: UnsafeMutableRawBufferPointer
  ) {
    withUnsafeBytes(of: UInt64(syncedEnd).littleEndian) { value in
      encode(
        kind: .syncMark, sequence: sequence, timestamp: timestamp, table: .empty, key: .empty,
        value: value, salt: salt, into: destination)
    }
  }

  /// The offset a sync mark says was synced: everything before it in the segment. Clamped
  /// (where `Int` is 32 bits a damaged claim must not trap); the scanner checks it lies
  /// between the segment header and the mark itself.
  static func syncedEnd(of mark: Record) -> Int {
    Int(clamping: loadLittleEndian(UInt64.self, mark.value.baseAddress!))
  }

  /// Calls `body` with each member of a batch record, in order, after checking every member:
  /// either all members are valid and `body` sees them all, or it throws before calling
  /// `body` at all.
  ///
  /// - Throws: what `body` throws; or, when a member fails its checks, ``LogStoreError`` with
  ///   code `corrupted` and the reason ``validateMembers(of:salt:verify:)`` gives. The one
  ///   place the codec speaks the engine's error type: its callers' bodies throw that type.
  static func forEachMember(
    of batch: Record, salt: UInt32, verify: Bool = true,
    _ body: (Record, _ offsetInBatch: Int) throws(LogStoreError) -> Void
  ) throws(LogStoreError) {
    do {
      try validateMembers(of: batch, salt: salt, verify: verify)
    } catch {
      throw LogStoreError(.corrupted, error.reason)
    }
    var offset = 0
    while offset < batch.value.count {
      let member: Record
      do {
        member = try decode(batch.value, at: offset, salt: salt, member: true, verify: false)
      } catch {
        preconditionFailure("batch member changed after validation")
      }
      try body(member, offset)
      offset += member.length
    }
  }

  /// Checks that a batch's value is a sequence of valid members with consecutive sequence
  /// numbers starting at the batch's own; returns how many members there are.
  ///
  /// - Throws: ``RecordDecodingError/damaged(_:)`` naming the first bad member's offset in the
  ///   batch's value and what is wrong with it (a member cut short is damage here: the batch's
  ///   own length, which covers it, was read intact).
  @discardableResult
  static func validateMembers(of batch: Record, salt: UInt32, verify: Bool = true)
    throws(RecordDecodingError) -> Int
  {
    var offset = 0
    var expected = batch.sequence
    while offset < batch.value.count {
      let member: Record
      do {
        member = try decode(batch.value, at: offset, salt: salt, member: true, verify: verify)
      } catch {
        throw .damaged("batch member at \(offset): \(error.reason)")
      }
      guard member.sequence == expected else {
        throw .damaged("batch member at \(offset) is out of sequence")
      }
      expected &+= 1
      offset += member.length
    }
    return Int(expected &- batch.sequence)
  }
}

@inline(__always)
func loadLittleEndian<T: FixedWidthInteger>(_: T.Type, _ pointer: UnsafeRawPointer) -> T {
  T(littleEndian: pointer.loadUnaligned(as: T.self))
}

@inline(__always)
func storeLittleEndian<T: FixedWidthInteger>(_ value: T, _ pointer: UnsafeMutableRawPointer) {
  pointer.storeBytes(of: value.littleEndian, as: T.self)
}
