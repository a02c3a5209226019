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

  /// A directory built by reading every record of `segments`, in order, each up to its size
  /// (the last read by the rule an open reads it by, ``SegmentScanner/Extent``): what an open without an index file
  /// builds, for a store whose index file was found damaged after it was opened.
  /// `damage(file, offset, reason)` hears of each damaged region, and throws to give up.
  static func rebuilt(
    from segments: [(file: SegmentFile, size: Int)],
    damage: (SegmentFile, Int, String) throws(LogStoreError) -> Void
  ) throws(LogStoreError) -> KeyDirectory {
    let keys = KeyDirectory()
    for (position, (file, size)) in segments.enumerated() {
      try keys.applyRecords(
        of: file, in: SegmentHeader.size..<size,
        extent: .of(header: file.header, isLast: position == segments.count - 1)
      ) { offset, reason throws(LogStoreError) in try damage(file, offset, reason) }
    }
    return keys
  }

  /// Applies the records of `file` in `range` (from the start of a record), in order.
  /// `damage(offset, reason)` hears of each damaged region, and throws to stop.
  func applyRecords(
    of file: SegmentFile, in range: Range<Int>, extent: SegmentScanner.Extent,
    damage: (Int, String) throws(LogStoreError) -> Void
  ) throws(LogStoreError) {
    var scanner = SegmentScanner(
      bytes: UnsafeRawBufferPointer(rebasing: file.mapping.bytes[0..<range.upperBound]),
      owner: file, salt: file.salt, baseSequence: file.header?.baseSequence ?? 0,
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
