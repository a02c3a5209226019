extension KeyDirectory {
  /// Applies `record`, read from the log at `offset` of `file`, and returns how many changes
  /// it made (a batch makes one per member): the one way records reach the directory, from an
  /// open's scan, a rebuild, and a write just appended. A batch is taken apart here, member by
  /// member, in order.
  @discardableResult
  func apply(_ record: Record, at offset: Int, of file: SegmentFile) throws(LogStoreError) -> Int {
    guard record.kind == .batch else {
      apply(
        LoggedChange(
          record,
          at: RecordLocation(
            segment: file.number, offset: UInt32(offset), length: UInt32(record.length))))
      return 1
    }
    var count = 0
    try file.forEachMember(of: record, at: offset) { member, location in
      apply(LoggedChange(member, at: location))
      count += 1
    }
    return count
  }

  /// A directory built by reading every record of `segments`, in order, each up to its size:
  /// what an open without an index file builds, for a store whose index file `damaged` (the
  /// directory's base) was found damaged after, or while, it was opened. Each size is where the
  /// store knows that segment's log to end (``SegmentScanner/Extent/known(header:isLast:)``).
  ///
  /// The log after the file's position is read as the open read it, its records numbered from
  /// the file's next sequence number on: they were written after the file, by writers that
  /// opened over it. A scan of the part the file covered does not decide where they start:
  /// after damage it resumes at a record numbered above the last good one, so a damaged part
  /// holding a stray copy of a record numbered above theirs would hide them.
  /// `damage(file, offset, reason)` hears of each damaged region, and throws to give up.
  static func rebuilt(
    from segments: [(file: SegmentFile, size: Int)], replacing damaged: MappedIndex?,
    damage: (SegmentFile, Int, String) throws(LogStoreError) -> Void
  ) throws(LogStoreError) -> KeyDirectory {
    let keys = KeyDirectory()
    let position = damaged?.segments.last
    for (place, (file, size)) in segments.enumerated() {
      let report = { (offset: Int, reason: String) throws(LogStoreError) in
        try damage(file, offset, reason)
      }
      var start = SegmentHeader.size
      var baseSequence = file.header?.baseSequence ?? 0
      if let position, let damaged, file.number == position.number,
        position.coveredLength < size
      {
        // The part the file covered was synced before the file was written: its records to
        // the end, whether a sync mark ends them or not.
        try keys.applyRecords(
          of: file, in: start..<position.coveredLength, extent: .sealedWithoutMarks,
          baseSequence: baseSequence, damage: report)
        start = position.coveredLength
        baseSequence = damaged.nextSequence
      }
      try keys.applyRecords(
        of: file, in: start..<size,
        extent: .known(header: file.header, isLast: place == segments.count - 1),
        baseSequence: baseSequence, damage: report)
    }
    return keys
  }

  /// Applies the records of `file` in `range` (from the start of a record), in order, the first
  /// numbered `baseSequence` or above. `damage(offset, reason)` hears of each damaged region,
  /// and throws to stop.
  func applyRecords(
    of file: SegmentFile, in range: Range<Int>, extent: SegmentScanner.Extent,
    baseSequence: UInt64, damage: (Int, String) throws(LogStoreError) -> Void
  ) throws(LogStoreError) {
    var scanner = SegmentScanner(
      bytes: UnsafeRawBufferPointer(rebasing: file.mapping.bytes[0..<range.upperBound]),
      owner: file, salt: file.salt, baseSequence: baseSequence,
      extent: extent, start: range.lowerBound)
    try replay(from: file) { () throws(LogStoreError) in
      while let event = scanner.next() {
        switch event {
        case .record(let record, let offset):
          try apply(record, at: offset, of: file)
        case .damaged(let offset, _, let reason):
          try damage(offset, reason)
        }
      }
    }
  }
}
