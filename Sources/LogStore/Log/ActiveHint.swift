/// The hint file of the active segment, written at a clean close, so that the next open reads
/// its keys and locations (about 40 bytes a record) instead of scanning and checksumming
/// every record written since the last compaction or index file (docs/FORMAT.md, "Hint
/// files").
///
/// A hint covers the segment from its start up to `coveredLength`; the open scans what comes
/// after, so records appended by later sessions are read as before. It is only a shortcut:
/// it is not synced, and one that a crash left damaged or short fails its checksums and is
/// ignored (the segment is scanned instead), so writing it adds no sync to a close.
extension ActiveLog {
  /// Writes the active segment's hint if at least `options.activeHintMinimumBytes` of the
  /// segment's records are covered neither by the index file in use (`indexCovered`: the
  /// bytes of this segment its position covers) nor by the segment's hint already on disk.
  /// Returns whether it wrote one. Call with the lock held, at close, after the last sync.
  @discardableResult
  func writeActiveHint(indexCovered: Int) throws(LogStoreError) -> Bool {
    guard let writer, let header = writer.file.header, header.compaction == nil else {
      return false
    }
    let number = writer.file.number
    let used = writer.used
    // Sync marks after the records change nothing: the records end here.
    let records = writer.dataEnd
    let path = directory + "/" + StoreFileName.hint(number)
    // Too little past the index file's position: no need to look for the hint there.
    let minimum = options.activeHintMinimumBytes
    guard records - max(indexCovered, SegmentHeader.size) >= max(minimum, 1) else {
      return false
    }
    let covered = max(indexCovered, hintCoverage(at: path, of: writer.file), SegmentHeader.size)
    guard records > covered, records - covered >= minimum else { return false }
    guard let hint = Self.hint(of: writer.file, upTo: used) else { return false }
    let bytes = hint.encoded(fileNumber: number, salt: writer.file.salt, coveredLength: used)
    let temporary = path + ".tmp"
    let handle = try fileSystem.openFile(temporary, mode: .createOrOpen)
    do {
      defer { handle.close() }
      try handle.truncate(to: 0)
      try bytes.withBytes { bytes throws(LogStoreError) in try handle.write(bytes, at: 0) }
    } catch {
      try? fileSystem.removeFile(temporary)
      throw error
    }
    try fileSystem.renameFile(temporary, to: path)
    return true
  }

  /// The entries of every record of `file` before `end`, each checked against its checksum;
  /// nil if one fails (a region an open skipped as damage, say): the segment is then scanned
  /// at the next open, as before, instead of a hint pointing at a damaged record.
  static func hint(of file: SegmentFile, upTo end: Int) -> HintFile.Builder? {
    var builder = HintFile.Builder()
    // Scanned as a sealed segment would be (but for the sync mark that ends one, which an
    // active segment need not have yet): every record checked, damage reported.
    var scanner = SegmentScanner(
      bytes: UnsafeRawBufferPointer(rebasing: file.mapping.bytes[0..<end]), owner: file,
      salt: file.salt, baseSequence: file.header?.baseSequence ?? 0, extent: .sealedWithoutMarks)
    while let event = scanner.next() {
      guard case .record(let record, let offset) = event else { return nil }
      guard record.kind == .batch else {
        builder.add(record, offset: offset)
        continue
      }
      do {
        try file.forEachMember(of: record, at: offset) { member, location in
          builder.add(member, offset: Int(location.offset))
        }
      } catch {
        return nil
      }
    }
    return builder
  }

  /// How much of `file` the hint file at `path` covers, if it is that segment's and its
  /// header checks (0 otherwise): its entries are not read.
  private func hintCoverage(at path: String, of file: SegmentFile) -> Int {
    guard let handle = try? fileSystem.openFile(path, mode: .readOnly) else { return 0 }
    defer { handle.close() }
    return HintFile.coveredLength(
      readingHeaderOf: handle, fileNumber: file.number, salt: file.salt) ?? 0
  }
}
