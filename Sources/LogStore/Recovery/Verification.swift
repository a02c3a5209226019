/// One finding of ``LogStore/verify(path:)``: a file, where in it, and what is wrong.
public struct VerificationFinding: Sendable, Hashable, CustomStringConvertible {
  /// The file's name inside the store directory.
  public var file: String
  /// The byte offset in the file, when the finding has one.
  public var offset: Int?
  /// What is wrong, in a sentence.
  public var message: String

  /// The file, the offset when there is one, and the message.
  public var description: String {
    if let offset { return "\(file) at offset \(offset): \(message)" }
    return "\(file): \(message)"
  }
}

/// What ``LogStore/verify(path:)`` found.
public struct VerificationReport: Sendable {
  /// Damage: records, headers or hint files that fail their checks.
  public var problems: [VerificationFinding] = []
  /// Things that are not damage but that opening the store will tidy: a torn tail left by a
  /// crash, leftovers of an interrupted compaction, stray hint files.
  public var notes: [VerificationFinding] = []
  /// Segment files checked.
  public var segments = 0
  /// Records whose checksums were checked; a batch counts as its members, each one change
  /// (as `ytkkv stats` counts the records an open scanned).
  public var records = 0
  /// Hint files checked against their segments.
  public var hintFiles = 0
  /// Index files checked in full: every part against its checksum, every entry against the
  /// record it points at.
  public var indexFiles = 0
  /// Whether no problem was found.
  public var isClean: Bool { problems.isEmpty }
}

extension LogStore {
  /// Checks every record of every segment, every hint file and the manifest of the store at
  /// `path`, without opening it and without changing anything: it works while another process
  /// has the store open and writes to it. What that writer is doing (a record being written,
  /// a compaction's files coming and going) is never reported as damage.
  ///
  /// - Throws: ``LogStoreError/Code/storeNotFound`` when there is no store at `path`;
  ///   ``LogStoreError/Code/io`` when a file cannot be read.
  public static func verify(path: String) throws(LogStoreError) -> VerificationReport {
    try verify(path: path, fileSystem: SystemFileSystem())
  }

  /// ``verify(path:)`` on another file system (tests, fuzzing).
  package static func verify(path: String, fileSystem: any FileSystem) throws(LogStoreError)
    -> VerificationReport
  {
    try Verifier(directory: path, fileSystem: fileSystem).run()
  }
}

/// Walks a store's files the way recovery would, reporting instead of repairing.
struct Verifier {
  let directory: String
  let fileSystem: any FileSystem

  /// How many times verification starts again when a file it listed is gone (a writer beside
  /// it removed it).
  static let attempts = 20

  func run() throws(LogStoreError) -> VerificationReport {
    guard fileSystem.directoryExists(directory) else {
      throw fileSystem.missingStoreError(directory)
    }
    var attempt = 1
    while true {
      do {
        if let report = try verifyOnce(finalAttempt: attempt == Self.attempts) { return report }
      } catch  where error.isMissingFile && attempt < Self.attempts {
        // A file listed a moment ago is gone: the writer moved on. Look again.
      }
      attempt += 1
    }
  }

  /// One pass over the store's files; nil when the store changed under it in a way that makes
  /// its findings unreliable (then it is run again).
  private func verifyOnce(finalAttempt: Bool) throws(LogStoreError) -> VerificationReport? {
    var report = VerificationReport()
    let manifest = try checkManifest(into: &report)
    var segments: [UInt32] = []
    var hints: [UInt32] = []
    var indexes: [UInt32] = []
    var changes: [UInt32] = []
    for name in try fileSystem.contentsOfDirectory(directory) {
      switch StoreFileName.classify(name) {
      case .segment(let number): segments.append(number)
      case .hint(let number): hints.append(number)
      case .index(let number): indexes.append(number)
      case .changes(let number): changes.append(number)
      case .temporary where name == Manifest.temporaryName:
        report.notes.append(
          VerificationFinding(
            file: name, message: "unfinished replacement of the manifest; removed at the next open")
        )
      case .temporary:
        report.notes.append(
          VerificationFinding(
            file: name,
            message:
              "unfinished compaction output, index or changes file; removed by the next open that "
              + "takes the directory over"))
      case .other: break
      }
    }
    segments.sort()
    if let manifest {
      for number in manifest.segments where !segments.contains(number) {
        // The writer may have replaced the manifest and removed this file since both were
        // read: look again, unless this is the last try.
        if !finalAttempt { return nil }
        report.problems.append(
          VerificationFinding(
            file: Manifest.fileName,
            message: "lists \(StoreFileName.segment(number)), which is not in the store"))
      }
    }
    var salts: [UInt32: UInt32] = [:]
    var headers: [UInt32: SegmentHeader] = [:]
    var sizes: [UInt32: Int] = [:]
    for (position, number) in segments.enumerated() {
      let name = StoreFileName.segment(number)
      let isLast = position == segments.count - 1
      var bytes = try readFile(name)
      report.segments += 1
      var start = Self.start(of: bytes, number: number)
      if isLast, case .damagedHeader = start {
        // A writer may have been creating the segment while its start was read: it syncs the
        // header before anything after it, so records read after the header mean it was there
        // by then. Read again.
        bytes = try readFile(name)
        start = Self.start(of: bytes, number: number)
      }
      sizes[number] = bytes.count
      var header: SegmentHeader?
      let salt: UInt32
      switch start {
      case .intact(let intact):
        header = intact
        salt = intact.salt
      case .foreign(let foreign):
        // Not this segment's records: an open skips them.
        salts[number] = foreign.salt
        headers[number] = foreign
        report.problems.append(
          VerificationFinding(
            file: name, offset: 0,
            message: "the header names segment \(foreign.fileNumber), not \(number); its "
              + "records are not read"))
        continue
      case .newerVersion(let version):
        report.problems.append(
          VerificationFinding(
            file: name, offset: 8,
            message: "format version \(version) is newer than this tool reads"))
        continue
      case .cutShort where isLast:
        // An open leaves it out of the segments it reads.
        sizes[number] = nil
        report.notes.append(
          VerificationFinding(
            file: name, message: "creation cut short by a crash; removed at the next open"))
        continue
      case .cutShort:
        report.problems.append(
          VerificationFinding(file: name, offset: 0, message: "the segment header is missing"))
        continue
      case .damagedHeader(let reason, let storedSalt):
        let found = bytes.withUnsafeBytes { SegmentSalt.find(in: $0, storedSalt: storedSalt) }
        guard let found else {
          // Two findings, as an open counts two damaged regions: the header, and the records.
          report.problems.append(VerificationFinding(file: name, offset: 0, message: reason))
          report.problems.append(
            VerificationFinding(
              file: name, offset: SegmentHeader.size,
              message: "no record behind the unreadable header checks with a salt: its records "
                + "cannot be read"))
          continue
        }
        report.problems.append(
          VerificationFinding(
            file: name, offset: 0,
            message: "\(reason); its records are read with the salt they check with"))
        salt = found
      }
      if let header {
        salts[number] = salt
        headers[number] = header
      }
      let baseSequence = header?.baseSequence ?? 0
      let extent = SegmentScanner.Extent.of(header: header, isLast: isLast)
      // The index file an open would use vouches for the bytes it covers of the last segment,
      // which are read as that open reads the log (docs/FORMAT.md, "Index files", rule 5).
      let covered =
        isLast
        ? coveredByIndexFile(
          number, indexes: indexes, live: Self.live(segments, headers: headers, sizes: sizes))
        : nil
      var scan = Self.scan(
        bytes, file: name, salt: salt, baseSequence: baseSequence, extent: extent,
        covered: covered)
      // The last segment may be the one a writer is appending to: a record read while it
      // was being copied looks damaged if the next one was complete by the time it was read.
      // Damage there is read again (at once, then after growing pauses) until two reads agree.
      var wait = 0
      while isLast && !scan.problems.isEmpty && wait <= 160_000 {
        if wait > 0 { pauseThread(microseconds: wait) }
        wait = max(10_000, wait * 2)
        let again = Self.scan(
          try readFile(name), file: name, salt: salt, baseSequence: baseSequence, extent: extent,
          covered: covered)
        let settled = again.problems == scan.problems
        scan = again
        if settled { break }
      }
      report.records += scan.records
      report.problems += scan.problems
      report.notes += scan.notes
    }
    report.notes += Self.compactionFindings(
      CompactionGroups(segments.map { ($0, headers[$0]) }))
    for number in hints.sorted() {
      try checkHint(
        number, segmentSalt: salts[number],
        compactionOutput: headers[number]?.compaction != nil, into: &report)
    }
    let live = Self.live(segments, headers: headers, sizes: sizes)
    var positions: [UInt32: [IndexFileFormat.CoveredSegment]] = [:]
    for number in indexes.sorted() {
      positions[number] = try checkIndex(number, live: live, headers: headers, into: &report)
    }
    for number in changes.sorted() {
      try checkChanges(
        number, hasIndexFile: indexes.contains(number), indexPosition: positions[number],
        live: live, headers: headers, into: &report)
    }
    return report
  }

  /// A changes file's findings. One cut short or failing its checksums is a note: written
  /// without a sync, it may be what a crash left, and no open uses it. So is one over an index
  /// file the store no longer has, or of segments it no longer has as they were (stale). Any
  /// other fault is a problem (the open reads the log after the index file instead), since no
  /// crash leaves it: contents that do not decode although the checksums hold, a position past
  /// what its segments hold or before the index file's (`indexPosition`, when that file opens),
  /// a change that is not a tombstone and does not point at a good put of its table and key.
  private func checkChanges(
    _ number: UInt32, hasIndexFile: Bool, indexPosition: [IndexFileFormat.CoveredSegment]?,
    live: [LiveSegment], headers: [UInt32: SegmentHeader], into report: inout VerificationReport
  ) throws(LogStoreError) {
    let name = StoreFileName.changes(number)
    let stale = "not used, and removed at the next open"
    guard hasIndexFile else {
      report.notes.append(
        VerificationFinding(
          file: name, message: "is over an index file the store does not have; " + stale))
      return
    }
    let bytes: [UInt8]
    do {
      bytes = try readFile(name)
    } catch  where error.isMissingFile {
      // A writer beside this check may have removed it since it was listed.
      return
    }
    let problem: String? = try bytes.withBytes { bytes throws(LogStoreError) -> String? in
      let readInstead = "; the log after the index file is read instead"
      let contents: ChangesFile.Contents
      do throws(ChangesFile.Invalid) {
        contents = try ChangesFile.decode(bytes, indexFile: number)
      } catch {
        guard (try? ChangesFile.checkFrame(bytes)) == nil else { return error.reason + readInstead }
        // It is written without a sync (docs/FORMAT.md, "Changes files"): a crash may leave it
        // cut short or damaged, which its checksums show, and then it is not used. That is what
        // a crash leaves, as a torn tail is, not damage of the store.
        report.notes.append(
          VerificationFinding(
            file: name,
            message: "\(error.reason), as a crash may leave it (it is written without a sync); "
              + stale))
        return nil
      }
      do throws(PositionMismatch) {
        try IndexFileFormat.check(position: contents.segments, against: live)
      } catch {
        guard case .otherSegments = error else { return error.reason + readInstead }
        report.notes.append(
          VerificationFinding(
            file: name,
            message: "describes segments the store no longer has as they were; " + stale))
        return nil
      }
      do throws(ChangesFile.Invalid) {
        if let indexPosition {
          try ChangesFile.check(position: contents.segments, over: indexPosition)
        }
      } catch {
        return error.reason + readInstead
      }
      let files = try mapCovered(contents.segments)
      defer { for entry in files.values { entry.file.close() } }
      var wrong = 0
      for table in contents.tables {
        for change in table.changes {
          guard let location = change.location else { continue }
          if !Self.holdsPut(
            at: location, key: change.key, expiry: change.expiry, table: table.name, files: files,
            headers: headers)
          {
            wrong += 1
          }
        }
      }
      return wrong == 0 ? nil : "\(wrong) changes do not point at a good record of their key"
    }
    if let problem { report.problems.append(VerificationFinding(file: name, message: problem)) }
  }

  /// The segments of `position`, opened and mapped, with the bytes covered of each that it
  /// holds (all of them, as checked against its size when it was read, unless the file changed
  /// since: then what points past its end is not found). The caller closes the files.
  private func mapCovered(_ position: [IndexFileFormat.CoveredSegment]) throws(LogStoreError)
    -> [UInt32: CoveredFile]
  {
    var files: [UInt32: CoveredFile] = [:]
    for covered in position {
      let handle = try fileSystem.openFile(
        directory + "/" + StoreFileName.segment(covered.number), mode: .readOnly)
      let size = try handle.size()
      files[covered.number] = (
        handle, try handle.map(length: max(size, 1), writable: false),
        min(covered.coveredLength, size)
      )
    }
    return files
  }

  private typealias CoveredFile = (file: any FileHandle, mapping: any FileMapping, covered: Int)

  /// Whether `location`, within what `files` cover, holds a good put of `key` (with `expiry`)
  /// in the table named `table`: a record of a name equal to it as a `String` but not in its
  /// bytes is another table's.
  private static func holdsPut(
    at location: RecordLocation, key: UnsafeRawBufferPointer, expiry: Int64?,
    table: UnsafeRawBufferPointer,
    files: [UInt32: CoveredFile], headers: [UInt32: SegmentHeader]
  ) -> Bool {
    guard let segment = files[location.segment],
      Int(location.offset) + Int(location.length) <= segment.covered,
      Int(location.offset) + RecordLayout.kindOffset < segment.covered,
      let salt = headers[location.segment]?.salt,
      let record = try? RecordCodec.decode(
        UnsafeRawBufferPointer(rebasing: segment.mapping.bytes[0..<segment.covered]),
        at: Int(location.offset), salt: salt,
        member: segment.mapping.bytes[Int(location.offset) + RecordLayout.kindOffset]
          & RecordLayout.memberFlag != 0),
      record.kind == .put, record.length == Int(location.length),
      bytesEqual(record.key, key), record.expiry == expiry,
      TableName.names(table, recordBytes: record.table)
    else { return false }
    return true
  }

  /// An index file's findings: damage is a problem (the open reads the log instead); an index
  /// file of segments the store no longer has as they were is stale, a note. Returns its
  /// position, when it opens.
  private func checkIndex(
    _ number: UInt32, live: [LiveSegment], headers: [UInt32: SegmentHeader],
    into report: inout VerificationReport
  ) throws(LogStoreError) -> [IndexFileFormat.CoveredSegment]? {
    let name = StoreFileName.index(number)
    let mapped: MappedIndex
    do throws(MappedIndex.Rejection) {
      mapped = try MappedIndex.open(directory: directory, number: number, fileSystem: fileSystem)
    } catch {
      // A writer beside this check may have replaced the file since it was listed.
      if (try? fileSystem.contentsOfDirectory(directory).contains(name)) == false { return nil }
      report.problems.append(
        VerificationFinding(file: name, message: "\(error.reason); the log is read instead"))
      return nil
    }
    do throws(PositionMismatch) {
      try IndexFileFormat.check(position: mapped.segments, against: live)
    } catch {
      if case .otherSegments = error {
        report.notes.append(
          VerificationFinding(
            file: name,
            message: "describes segments the store no longer has as they were; not used, and "
              + "removed at the next open"))
      } else {
        report.problems.append(
          VerificationFinding(file: name, message: "\(error.reason); the log is read instead"))
      }
      return mapped.segments
    }
    report.indexFiles += 1
    // Every entry must point at a good record of its table and key, within what it covers.
    let files = try mapCovered(mapped.segments)
    defer { for entry in files.values { entry.file.close() } }
    for place in 0..<mapped.tableCount {
      let entry: MappedIndex.FileTable
      do {
        entry = try mapped.table(at: place)
      } catch {
        report.problems.append(
          VerificationFinding(
            file: name,
            message:
              "table \"\(mapped.name(ofTable: place))\": \(error.reason); the log is read instead"))
        continue
      }
      guard entry.table.verifyAll() else {
        report.problems.append(
          VerificationFinding(
            file: name,
            message: "a part of table \"\(entry.name)\" is damaged; the log is read instead"))
        continue
      }
      var wrong = 0
      let tableName = mapped.nameBytes(ofTable: place)
      entry.table.forEachEntry { item in
        if !Self.holdsPut(
          at: item.location, key: item.key, expiry: item.expiry, table: tableName, files: files,
          headers: headers)
        {
          wrong += 1
        }
        return true
      }
      if wrong > 0 {
        report.problems.append(
          VerificationFinding(
            file: name,
            message: "\(wrong) entries of table \"\(entry.name)\" do not point at a good record of "
              + "their key (with their expiry)"))
      }
    }
    return mapped.segments
  }

  /// What rule 2 of opening a store (``CompactionGroups``) will do with the segments left by
  /// compactions: a note for each segment it removes, and for each output it keeps although
  /// its compaction's outputs are not all there (the missing ones are reported elsewhere: a
  /// damaged header as a problem, a missing file by the manifest's check).
  private static func compactionFindings(_ groups: CompactionGroups) -> [VerificationFinding] {
    func notes(_ numbers: Set<UInt32>, _ message: String) -> [VerificationFinding] {
      numbers.sorted().map {
        VerificationFinding(file: StoreFileName.segment($0), message: message)
      }
    }
    return notes(
      groups.replacedInputs, "replaced by a finished compaction; removed at the next open")
      + notes(
        groups.unfinishedOutputs, "output of an unfinished compaction; removed at the next open")
      + notes(
        groups.keptIncompleteOutputs,
        "output of a compaction whose other outputs are missing or damaged; kept at the next "
          + "open, since its inputs are gone")
  }

  /// What scanning one segment's bytes found.
  private struct SegmentScan {
    var records = 0
    var problems: [VerificationFinding] = []
    var notes: [VerificationFinding] = []
  }

  /// What the start of a segment file's `bytes` says it is (``SegmentStart``).
  private static func start(of bytes: [UInt8], number: UInt32) -> SegmentStart {
    bytes.withUnsafeBytes { buffer in
      let header = Result { () throws(SegmentHeader.DecodingError) -> SegmentHeader in
        try SegmentHeader.decode(buffer)
      }
      return SegmentStart(header, number: number) { () -> Bool in
        bytes.count > SegmentHeader.size && bytes[SegmentHeader.size...].contains { $0 != 0 }
      }
    }
  }

  /// The bytes of the last segment, `number`, that the index file an open would use covers
  /// (``MappedIndex/chosen(among:live:directory:fileSystem:rejected:)``), and the sequence
  /// number after them; nil when that file's position ends in another segment, or there is none.
  private func coveredByIndexFile(_ number: UInt32, indexes: [UInt32], live: [LiveSegment])
    -> (length: Int, nextSequence: UInt64)?
  {
    guard
      let mapped = MappedIndex.chosen(
        among: indexes, live: live, directory: directory, fileSystem: fileSystem),
      let last = mapped.segments.last, last.number == number
    else { return nil }
    return (last.coveredLength, mapped.nextSequence)
  }

  /// The segments an open reads, in order, as it takes them (``Recovery``): every segment file
  /// read (`sizes`), less those rule 2 removes (``CompactionGroups``).
  private static func live(
    _ segments: [UInt32], headers: [UInt32: SegmentHeader], sizes: [UInt32: Int]
  ) -> [LiveSegment] {
    let obsolete = CompactionGroups(segments.map { ($0, headers[$0]) }).obsolete
    return segments.compactMap { number in
      guard !obsolete.contains(number), let size = sizes[number] else { return nil }
      return LiveSegment(number: number, header: headers[number], size: size)
    }
  }

  /// The findings of a segment's records. With `covered` (the last segment's bytes an index
  /// file covers, ``coveredByIndexFile(_:indexes:segments:headers:)``), those bytes are read to
  /// their end, as a sealed segment's are, and the rest after them from the file's next sequence
  /// number on, by `extent`.
  private static func scan(
    _ bytes: [UInt8], file name: String, salt: UInt32, baseSequence: UInt64,
    extent: SegmentScanner.Extent, covered: (length: Int, nextSequence: UInt64)? = nil
  ) -> SegmentScan {
    var result = SegmentScan()
    guard let covered, covered.length <= bytes.count else {
      scan(bytes, file: name, salt: salt, baseSequence: baseSequence, extent: extent, into: &result)
      return result
    }
    scan(
      bytes, file: name, salt: salt, baseSequence: baseSequence, extent: .sealedWithoutMarks,
      end: covered.length, into: &result)
    scan(
      bytes, file: name, salt: salt, baseSequence: covered.nextSequence, extent: extent,
      start: covered.length, into: &result)
    return result
  }

  /// Adds the findings of the records of `bytes` from `start` to `end` (the end of the bytes
  /// when nil) to `result`.
  private static func scan(
    _ bytes: [UInt8], file name: String, salt: UInt32, baseSequence: UInt64,
    extent: SegmentScanner.Extent, start: Int = SegmentHeader.size, end: Int? = nil,
    into result: inout SegmentScan
  ) {
    bytes.withUnsafeBytes { whole in
      let buffer = UnsafeRawBufferPointer(rebasing: whole[..<(end ?? whole.count)])
      var scanner = SegmentScanner(
        bytes: buffer, owner: nil, salt: salt, baseSequence: baseSequence, extent: extent,
        start: start)
      while let event = scanner.next() {
        switch event {
        case .record(let record, _):
          // A batch counts as its members (an open's report counts the same way).
          if record.kind == .batch {
            result.records +=
              (try? RecordCodec.validateMembers(of: record, salt: salt, verify: false)) ?? 1
          } else {
            result.records += 1
          }
        case .damaged(let offset, let length, let reason):
          result.problems.append(
            VerificationFinding(
              file: name, offset: offset, message: "\(reason) (\(length) bytes skipped)"))
        }
      }
      if scanner.foundTornTail {
        let records = scanner.recordsInTornTail
        // Good records in it followed bytes a power loss lost, past what was synced: keeping
        // them would keep later writes without earlier ones.
        let after =
          records == 0
          ? "" : ", holding \(records) records written after bytes a power loss lost"
        result.notes.append(
          VerificationFinding(
            file: name, offset: scanner.end,
            message: "torn tail of \(buffer.count - scanner.end) bytes left by a crash\(after); "
              + "cleared at the next open"))
      }
    }
  }

  /// The manifest's findings: damage is a problem (read-only opens then use the directory
  /// listing); a store without one (written by an earlier version) gets a note.
  private func checkManifest(into report: inout VerificationReport) throws(LogStoreError)
    -> Manifest?
  {
    let bytes: [UInt8]
    do {
      bytes = try readFile(Manifest.fileName)
    } catch  where error.isMissingFile {
      report.notes.append(
        VerificationFinding(
          file: Manifest.fileName,
          message: "missing; the next writer's open writes it (read-only opens beside a writer "
            + "need it)"))
      return nil
    }
    do throws(Manifest.Invalid) {
      return try bytes.withBytes { buffer throws(Manifest.Invalid) in try Manifest.decode(buffer) }
    } catch {
      report.problems.append(
        VerificationFinding(
          file: Manifest.fileName,
          message: "\(error.reason); read-only opens use the directory listing until the next "
            + "writer's open replaces it"))
      return nil
    }
  }

  /// The bytes of the file `name`, read rather than mapped: the store may be open elsewhere,
  /// and a writer that shortens a file under a mapping would make reading it crash.
  private func readFile(_ name: String) throws(LogStoreError) -> [UInt8] {
    let handle = try fileSystem.openFile(directory + "/" + name, mode: .readOnly)
    defer { handle.close() }
    return try handle.readBytes(count: try handle.size())
  }

  /// Checks a hint file and every entry of it against the record it points at. One cut short
  /// or failing its checksums is a note if a close may have written it (its segment is no
  /// compaction's output), and a problem otherwise, as every other fault is.
  private func checkHint(
    _ number: UInt32, segmentSalt: UInt32?, compactionOutput: Bool,
    into report: inout VerificationReport
  ) throws(LogStoreError) {
    let name = StoreFileName.hint(number)
    guard let salt = segmentSalt else {
      report.notes.append(
        VerificationFinding(file: name, message: "its segment is missing; removed at the next open")
      )
      return
    }
    report.hintFiles += 1
    // The hint first: every record it lists was in the segment before it was written, and a
    // record once written stays, so the segment read after it holds them all. Read the other
    // way round, a writer's close between the two reads replaces the hint with one that lists
    // records appended after the segment was read.
    let hint = try readFile(name)
    let segment = try readFile(StoreFileName.segment(number))
    hint.withUnsafeBytes { hintBytes in
      segment.withUnsafeBytes { segmentBytes in
        let contents: HintFile.Contents
        do throws(HintFile.Invalid) {
          contents = try HintFile.decode(
            hintBytes, fileNumber: number, salt: salt, segmentLength: segmentBytes.count)
        } catch {
          // A close writes the active segment's hint without a sync (docs/FORMAT.md, "Hint
          // files"): a crash may leave it cut short or zeroed, which its checksums show. A
          // compaction's output's hint is synced with it: damage there is damage.
          let crashLeftover = !compactionOutput && (try? HintFile.checkFrame(hintBytes)) == nil
          let finding = VerificationFinding(
            file: name, offset: nil,
            message: crashLeftover
              ? "\(error.reason), as a crash may leave a hint a close wrote (it is written "
                + "without a sync); the segment is scanned instead"
              : "\(error.reason); the segment is scanned instead")
          if crashLeftover { report.notes.append(finding) } else { report.problems.append(finding) }
          return
        }
        for entry in contents.entries {
          let isMember =
            entry.offset + RecordLayout.kindOffset < segmentBytes.count
            && segmentBytes[entry.offset + RecordLayout.kindOffset] & RecordLayout.memberFlag != 0
          guard
            let record = try? RecordCodec.decode(
              segmentBytes, at: entry.offset, salt: salt, member: isMember),
            record.kind == entry.kind, record.sequence == entry.sequence,
            record.length == entry.length, bytesEqual(record.table, entry.table),
            bytesEqual(record.key, entry.key)
          else {
            report.problems.append(
              VerificationFinding(
                file: name, offset: nil,
                message: "the entry for offset \(entry.offset) of \(StoreFileName.segment(number)) "
                  + "does not match a good record there"))
            continue
          }
        }
      }
    }
  }
}
