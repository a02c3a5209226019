/// What opening a store rebuilt from its files.
struct RecoveredState {
  var keys = KeyDirectory()
  var segments: [UInt32: SegmentFile] = [:]
  /// Sizes of the sealed segments (every segment but the writer's).
  var sealedSizes: [UInt32: Int] = [:]
  var writer: SegmentWriter?
  var nextSequence: UInt64 = 1
  var nextFileNumber: UInt32 = 1
  var damagedRecords = 0
  /// Of those, segments whose header was missing, damaged or named another file.
  var damagedHeaders = 0
  /// Sizes of the hint files in use.
  var hintSizes: [UInt32: Int] = [:]
  /// Index files found beside the segments (a writer's open removes those it does not use).
  var indexNumbers: [UInt32] = []
  /// Changes files found beside them, by their index files' numbers (the same).
  var changesNumbers: [UInt32] = []
  /// The changes file the open used: where it ends (its last segment and the bytes covered
  /// there) and its size.
  var changes: (segment: UInt32, covered: Int, size: Int)?
  /// The index file the open found damaged while replaying the log after it, and read the
  /// whole log instead of, and its size: kept on disk until a new one replaces it
  /// (``IndexFileInUse/damaged``).
  var damagedIndexFile: (number: UInt32, size: Int)?
  /// How the index was rebuilt: records decoded from segments, entries read from hints.
  var report = OpenReport()
  /// The manifest on disk once the open is done (a writer may have replaced it).
  var manifest: Manifest?
  /// In `.manyProcesses` use, the commit the view was read up to: ``Recovery/commit``, or a
  /// newer one when the segments it named were replaced meanwhile (``Recovery/newestCommit``).
  var commit: SharedState.Commit?
}

/// How opening a store rebuilt its index, for tests and `ytkkv stats`.
package struct OpenReport: Sendable, Equatable {
  /// Records decoded (and checksummed) from segment files; a batch counts as its members,
  /// as ``VerificationReport/records`` counts it.
  package var scannedRecords = 0
  /// Entries read from hint files instead.
  package var hintEntries = 0
  /// Segments read through a hint file.
  package var hintedSegments = 0
  /// The index file the open used, if any: the log it covers was not read.
  package var indexFile: UInt32?
  /// Why index files beside the segments were not used, by file number.
  package var rejectedIndexFiles: [UInt32: String] = [:]
  /// Whether the open put the changes file over the index file under its directory: the log
  /// that file covers was not read either.
  package var usedChangesFile = false
  /// Why the changes file over the index file was not used, if there was one.
  package var rejectedChangesFile: String?
  /// Damaged regions and headers the open met (`.salvage` skipped them; `.fail` refuses any).
  package var damagedRecords = 0
}

/// Opening a store: finding its files, finishing or undoing an interrupted compaction, and
/// replaying every segment in order into a fresh ``KeyDirectory``.
///
/// The rules, also in docs/FORMAT.md:
/// 1. Files ending in `.tmp` are unfinished compaction output (or an index, changes or manifest
///    file): removed.
/// 2. Segments written by compaction name how many outputs the compaction wrote. If all of
///    a compaction's outputs are present, it finished: every segment numbered below its
///    first output is one of its inputs and is removed. If some are missing, it did not
///    finish: its outputs are removed and its inputs kept.
/// 3. The remaining segments are replayed in number order, each through its hint file when a
///    valid one exists, otherwise by scanning its records.
/// 4. Only the last segment can have a torn tail: past what its sync marks prove durable, the
///    log ends at the first bad record (``SegmentScanner/Extent``). A writer zeroes the tail
///    (never cuts it: a reader may have the file mapped) and syncs the zeros. Damage anywhere
///    else follows the corruption policy.
/// A writer works from the directory listing (it holds the lock) and publishes the manifest
/// of what it keeps before removing anything. A read-only open changes nothing on disk: it
/// takes its segments from the manifest (`openSnapshot`), since a writer may be changing the
/// directory meanwhile, and applies rules 3 and 4 to them.
struct Recovery {
  let directory: String
  let options: LogStore.Options
  /// In `.manyProcesses` use, the newest commit of the shared state: the log ends where it
  /// says, the segments are the manifest's up to its active one, and nothing on disk is
  /// changed (other processes use the files). A writer then takes its active segment as is.
  var commit: SharedState.Commit? = nil
  /// Reads the shared state's newest commit again, for a read-only open or a catch-up that
  /// reads without the write lock: when a segment `commit` names is gone, or the manifest no
  /// longer lists its active segment, another process rotated or compacted meanwhile, and
  /// the snapshot starts again from the newer commit (``RecoveredState/commit``) and manifest.
  var newestCommit: (() -> SharedState.Commit?)? = nil
  var fileSystem: any FileSystem { options.fileSystem }
  var writable: Bool { !options.readOnly }
  /// A writer that has the directory to itself (``takeOver(_:)``): it removes what it does
  /// not keep, zeroes a torn tail, seals a last segment it does not append to.
  private var changesFiles: Bool { writable && commit == nil }

  private struct Candidate {
    let number: UInt32
    let path: String
    let handle: any FileHandle
    var size: Int
    let header: Result<SegmentHeader, SegmentHeader.DecodingError>

    /// As an index or changes file's position is checked against it.
    var live: LiveSegment { LiveSegment(number: number, header: try? header.get(), size: size) }
  }

  /// What `candidate`'s first bytes say it is (``SegmentStart``).
  private func start(of candidate: Candidate) throws(LogStoreError) -> SegmentStart {
    try SegmentStart(candidate.header, number: candidate.number) { () throws(LogStoreError) in
      try !holdsNoRecords(candidate)
    }
  }

  func path(_ name: String) -> String { directory + "/" + name }

  /// Segments with at least this many bytes to scan are scanned on a second thread while
  /// their records are applied (``ScanPipeline``); below it, starting a thread costs more
  /// than it saves.
  static let pipelineThreshold = 1 << 20

  func run() throws(LogStoreError) -> RecoveredState {
    var state = RecoveredState()
    state.commit = commit
    let live = changesFiles ? try takeOver(&state) : try openSnapshot(&state)
    var maxSequence: UInt64 = 0
    var first = 0
    if options.indexFiles,
      let mapped = chooseIndex(state.indexNumbers, live: live, report: &state.report)
    {
      // The index file stands for the log up to its position: the segments it covers whole are
      // only opened, and the last one it covers is read from where it stops.
      state.keys = KeyDirectory(mapped: mapped)
      // What the log after the file changed is not looked up in the file now: the open would
      // wait for two cache misses per key. The first use that needs exact counts settles them.
      state.keys.settlesLater = true
      state.report.indexFile = mapped.number
      var position = mapped.segments
      maxSequence = mapped.nextSequence &- 1
      if let changes = putChanges(over: mapped, live: live, into: &state) {
        position = changes.segments
        maxSequence = changes.nextSequence &- 1
      }
      for candidate in live[0..<position.count - 1] {
        // `check` found each header intact.
        guard case .success(let header) = candidate.header else { preconditionFailure() }
        try open(candidate, header: header, into: &state)
      }
      first = position.count - 1
      try replay(
        live[first], isLast: first == live.count - 1, covered: position.last!.coveredLength,
        into: &state, maxSequence: &maxSequence)
      first += 1
    }
    for position in first..<live.count {
      try replay(
        live[position], isLast: position == live.count - 1, covered: nil, into: &state,
        maxSequence: &maxSequence)
    }
    state.keys.settlesLater = false
    if state.keys.baseDamaged {
      // Replaying the log after the index file found a part of the file damaged: read the
      // whole log instead, from the segments already open.
      state.report.rejectedIndexFiles[state.report.indexFile!] = "a part of it is damaged"
      state.damagedIndexFile = state.keys.mapped.map { ($0.number, $0.fileLength) }
      state.report.indexFile = nil
      state.report.usedChangesFile = false
      state.changes = nil
      let files = state.segments.sorted { $0.key < $1.key }.map { number, file in
        (file: file, size: state.sealedSizes[number] ?? state.writer!.used)
      }
      state.damagedRecords = state.damagedHeaders
      state.keys = try KeyDirectory.rebuilt(from: files, replacing: state.keys.mapped) {
        file, offset, reason throws(LogStoreError) in
        if options.corruption == .fail {
          throw LogStoreError(
            .corrupted, "damaged data in \(file.path) at offset \(offset): \(reason)")
        }
        state.damagedRecords += 1
      }
    }
    if changesFiles { try removeUnusedIndexFiles(of: state) }
    state.report.damagedRecords = state.damagedRecords
    state.nextSequence = maxSequence + 1
    if let writer = state.writer, let base = writer.file.header?.baseSequence {
      state.nextSequence = max(state.nextSequence, base)
    }
    if let commit = state.commit {
      state.nextSequence = commit.nextSequence
      state.nextFileNumber = commit.nextFileNumber
    }
    return state
  }

  /// The segments a writer takes over: every segment file, less what rules 1 and 2 remove,
  /// and less a last segment whose creation was cut short. Removes those files (a writer holds
  /// the lock: the directory is its own) after publishing a manifest that no longer lists
  /// them, so a reader never learns the name of a file about to go.
  private func takeOver(_ state: inout RecoveredState) throws(LogStoreError) -> [Candidate] {
    var segmentNumbers: [UInt32] = []
    var hintNumbers: Set<UInt32> = []
    var temporaries: [String] = []
    for name in try fileSystem.contentsOfDirectory(directory) {
      switch StoreFileName.classify(name) {
      case .segment(let number): segmentNumbers.append(number)
      case .hint(let number): hintNumbers.insert(number)
      case .index(let number): state.indexNumbers.append(number)
      case .changes(let number): state.changesNumbers.append(number)
      case .temporary: temporaries.append(name)
      case .other: break
      }
    }
    let highest = max(
      segmentNumbers.max() ?? 0, hintNumbers.max() ?? 0, state.indexNumbers.max() ?? 0)
    state.nextFileNumber = highest + 1  // below 2^31 + 1: names above are not ours

    var candidates: [Candidate] = []
    for number in segmentNumbers.sorted() {
      candidates.append(try openCandidate(number))
    }
    var removed = obsoleteSegments(candidates)
    candidates.removeAll { removed.contains($0.number) }
    if let last = candidates.last, try start(of: last) == .cutShort {
      removed.insert(last.number)
      candidates.removeLast()
    }
    for number in removed {
      hintNumbers.remove(number)
    }
    let strayHints = hintNumbers.filter { number in
      !candidates.contains { $0.number == number }
    }

    let previous = try Manifest.read(directory: directory, fileSystem: fileSystem)
    state.manifest = previous
    let live = candidates.map(\.number)
    if !removed.isEmpty && previous?.segments != live {
      let manifest = Manifest(segments: live, generation: (previous?.generation ?? 0) + 1)
      try manifest.publish(directory: directory, fileSystem: fileSystem)
      state.manifest = manifest
    }
    for number in removed.sorted() {
      try fileSystem.removeFile(path(StoreFileName.segment(number)))
      try fileSystem.removeFile(path(StoreFileName.hint(number)))
    }
    for number in strayHints {
      // A hint whose segment is gone (removed by a compaction that finished).
      try fileSystem.removeFile(path(StoreFileName.hint(number)))
    }
    for name in temporaries {
      try fileSystem.removeFile(path(name))
    }
    if !removed.isEmpty || !strayHints.isEmpty || !temporaries.isEmpty {
      try fileSystem.synchronizeDirectory(directory)
    }
    return candidates
  }

  /// How many times a read-only open starts again when a segment it was told of is gone (a
  /// writer removed it meanwhile). Each time it reads the manifest anew, and the manifest
  /// lists only files that exist, so one retry is enough unless the writer finishes another
  /// compaction in between.
  static let snapshotAttempts = 100

  /// The segments of the store as one consistent set, opened, for a read-only open beside a
  /// writer that may be rotating, compacting and deleting files meanwhile.
  ///
  /// The set comes from the manifest, and every file in it is opened before anything is read:
  /// once open, a file stays readable even if the writer deletes it. If one is already gone,
  /// the writer has published a newer manifest, and the open starts again from it. A store
  /// without a usable manifest (written by an earlier version, or damaged) is read from the
  /// directory listing; so is one whose manifest names a missing file and stays the same
  /// when read again (no writer replaced it: the file was lost).
  private func openSnapshot(_ state: inout RecoveredState) throws(LogStoreError) -> [Candidate] {
    var attempt = 1
    var previous: Manifest?
    var trustsManifest = true
    while true {
      var candidates: [Candidate] = []
      var manifest: Manifest?
      do throws(LogStoreError) {
        if trustsManifest {
          manifest = try Manifest.read(directory: directory, fileSystem: fileSystem)
        }
        var numbers: [UInt32]
        if let commit = state.commit {
          // Segments above the active one are a rotation's that its process did not finish:
          // they hold nothing committed.
          guard let manifest, manifest.segments.contains(commit.activeSegment) else {
            // Read after the commit, the manifest is as new as it, or newer: another process's
            // compaction replaced the commit's active segment meanwhile.
            if attempt < Self.snapshotAttempts, let newer = newestCommit?(),
              newer.publication != commit.publication
            {
              state.commit = newer
              attempt += 1
              continue
            }
            throw LogStoreError(
              .corrupted,
              "the manifest of \(directory) does not list segment \(commit.activeSegment), "
                + "which the shared state says is written to")
          }
          numbers = manifest.segments.filter { $0 <= commit.activeSegment }
        } else if let manifest {
          numbers = manifest.segments
        } else {
          numbers = try fileSystem.contentsOfDirectory(directory).compactMap { name in
            if case .segment(let number) = StoreFileName.classify(name) { return number }
            return nil
          }.sorted()
        }
        for number in numbers {
          candidates.append(try openCandidate(number))
        }
        if let commit = state.commit, var last = candidates.last {
          // The active segment holds what was published, no more.
          last.size = min(last.size, Int(commit.committedEnd))
          candidates[candidates.count - 1] = last
        }
      } catch  where error.isMissingFile && attempt < Self.snapshotAttempts {
        for candidate in candidates { candidate.handle.close() }
        if let manifest, manifest == previous { trustsManifest = false }
        previous = manifest
        if let newer = newestCommit?() { state.commit = newer }
        attempt += 1
        continue
      }
      state.manifest = manifest
      // Index files are found by listing: one that goes meanwhile is not used (any index file
      // is checked against the segments before it is).
      state.indexNumbers =
        (try? fileSystem.contentsOfDirectory(directory).compactMap { name in
          if case .index(let number) = StoreFileName.classify(name) { return number }
          return nil
        }) ?? []
      // Without a manifest the listing may hold what a writer's open would remove.
      let obsolete = obsoleteSegments(candidates)
      candidates.removeAll { obsolete.contains($0.number) }
      if var last = candidates.last {
        // A last segment whose header could not be read when it was opened may be one a writer
        // was creating (in a store the manifest does not describe yet). The writer syncs the
        // header before writing anything after it: if records are there now, so is the header,
        // and it is read again.
        if case .failure = last.header, try !holdsNoRecords(last) {
          last.handle.close()
          last = try openCandidate(last.number)
          candidates[candidates.count - 1] = last
        }
        if try start(of: last) == .cutShort { candidates.removeLast() }
      }
      return candidates
    }
  }

  private func openCandidate(_ number: UInt32) throws(LogStoreError) -> Candidate {
    let path = path(StoreFileName.segment(number))
    let handle = try fileSystem.openFile(path, mode: writable ? .readWrite : .readOnly)
    let size = try handle.size()
    var headerBytes = [UInt8](repeating: 0, count: SegmentHeader.size)
    let read = try headerBytes.withMutableBytes { buffer throws(LogStoreError) in
      try handle.read(into: buffer, at: 0)
    }
    let header = Result { () throws(SegmentHeader.DecodingError) -> SegmentHeader in
      try headerBytes.withBytes { bytes throws(SegmentHeader.DecodingError) in
        try SegmentHeader.decode(UnsafeRawBufferPointer(rebasing: bytes[0..<read]))
      }
    }
    return Candidate(number: number, path: path, handle: handle, size: size, header: header)
  }

  /// Segments that rule 2 removes (``CompactionGroups``).
  private func obsoleteSegments(_ candidates: [Candidate]) -> Set<UInt32> {
    CompactionGroups(candidates.map { ($0.number, try? $0.header.get()) }).obsolete
  }

  private func damage(
    header: Bool = false, _ candidate: Candidate, offset: Int, reason: String,
    into state: inout RecoveredState
  ) throws(LogStoreError) {
    if header { state.damagedHeaders += 1 }
    if options.corruption == .fail {
      throw LogStoreError(
        .corrupted, "damaged data in \(candidate.path) at offset \(offset): \(reason)")
    }
    state.damagedRecords += 1
  }

  // MARK: Index files

  /// The index file the open uses (``MappedIndex/chosen(among:live:directory:fileSystem:rejected:)``),
  /// with the reasons the others are not used in `report`.
  private func chooseIndex(_ numbers: [UInt32], live: [Candidate], report: inout OpenReport)
    -> MappedIndex?
  {
    MappedIndex.chosen(
      among: numbers, live: live.map(\.live), directory: directory, fileSystem: fileSystem
    ) { number, reason in report.rejectedIndexFiles[number] = reason }
  }

  /// Removes the index files the open did not use, and the changes files but the one it put
  /// over the index file it used: they are stale (or damaged), and the next checkpoint or
  /// close writes anew. An index file found damaged while replaying the log after it stays
  /// (``IndexFileInUse/damaged``).
  private func removeUnusedIndexFiles(of state: RecoveredState) throws(LogStoreError) {
    let used = state.report.indexFile
    let changesUsed = state.report.usedChangesFile ? used : nil
    let unused =
      state.indexNumbers.filter { $0 != used && $0 != state.damagedIndexFile?.number }
      .map(StoreFileName.index)
      + state.changesNumbers.filter { $0 != changesUsed }.map(StoreFileName.changes)
    for name in unused { try fileSystem.removeFile(path(name)) }
    if !unused.isEmpty { try fileSystem.synchronizeDirectory(directory) }
  }

  /// Puts the changes file over `mapped`, if there is a usable one, under the directory
  /// (`state.keys`, made of `mapped` with nothing applied yet), and returns the position it
  /// covers and the sequence number after it. One that cannot be used is reported, the
  /// directory made anew of the index file, and nil returned: the log after the index file is
  /// read instead (a writer's open then removes the file).
  private func putChanges(
    over mapped: MappedIndex, live: [Candidate], into state: inout RecoveredState
  ) -> (segments: [IndexFileFormat.CoveredSegment], nextSequence: UInt64)? {
    guard
      let handle = try? fileSystem.openFile(
        path(StoreFileName.changes(mapped.number)), mode: .readOnly)
    else { return nil }
    defer { handle.close() }
    // Each change is shorter than the record it points at or the index file's entry it
    // hides, and each table's part than its creation record or its part of the index file:
    // a longer file is not read. It is mapped, not read into memory of the process's own: no
    // writer changes a changes file in place (a new one is renamed over it), so the bytes stay
    // as they are while the mapping lives.
    let limit = mapped.fileLength + live.reduce(0) { $0 + $1.size }
    guard let size = try? handle.size(), size <= limit,
      let mapping = try? handle.map(length: max(size, 1), writable: false)
    else {
      state.report.rejectedChangesFile = "it cannot be read"
      return nil
    }
    do throws(ChangesFile.Invalid) {
      let position = try withExtendedLifetime(mapping) { () throws(ChangesFile.Invalid) in
        let bytes = UnsafeRawBufferPointer(rebasing: mapping.bytes[0..<size])
        let contents = try ChangesFile.decode(bytes, indexFile: mapped.number)
        do throws(PositionMismatch) {
          try IndexFileFormat.check(position: contents.segments, against: live.map(\.live))
        } catch {
          throw ChangesFile.Invalid(reason: error.reason)
        }
        try ChangesFile.check(position: contents.segments, over: mapped.segments)
        try state.keys.restore(contents)
        return (segments: contents.segments, nextSequence: contents.nextSequence)
      }
      state.report.usedChangesFile = true
      let last = position.segments.last!
      state.changes = (last.number, last.coveredLength, size)
      return position
    } catch {
      state.report.rejectedChangesFile = error.reason
      state.keys = KeyDirectory(mapped: mapped)
      state.keys.settlesLater = true
      return nil
    }
  }

  /// Opens a sealed segment the index file covers whole: nothing in it is read.
  private func open(_ candidate: Candidate, header: SegmentHeader, into state: inout RecoveredState)
    throws(LogStoreError)
  {
    let mapping = try candidate.handle.map(length: max(candidate.size, 1), writable: false)
    state.segments[candidate.number] = SegmentFile(
      number: candidate.number, path: candidate.path, salt: header.salt, header: header,
      handle: candidate.handle, mapping: mapping)
    state.sealedSizes[candidate.number] = candidate.size
    if let hint = try? fileSystem.openFile(
      path(StoreFileName.hint(candidate.number)), mode: .readOnly)
    {
      defer { hint.close() }
      if let size = try? hint.size() { state.hintSizes[candidate.number] = size }
    }
  }

  // MARK: Replaying segments

  /// Applies the records of `candidate` to the directory; with `covered`, only those from that
  /// offset on (an index file holds what comes before).
  private func replay(
    _ candidate: Candidate, isLast: Bool, covered: Int?, into state: inout RecoveredState,
    maxSequence: inout UInt64
  ) throws(LogStoreError) {
    let segmentStart = try start(of: candidate)
    var header: SegmentHeader?
    switch segmentStart {
    case .intact(let decoded):
      header = decoded
    case .foreign(let decoded):
      try damage(
        header: true,
        candidate, offset: 0,
        reason: "the header names segment \(decoded.fileNumber), not \(candidate.number)",
        into: &state)
      candidate.handle.close()
      return
    case .newerVersion(let version):
      throw LogStoreError(
        .corrupted,
        "\(candidate.path) is in format version \(version), written by a newer version of "
          + "this library; this one reads version \(SegmentHeader.currentVersion)")
    case .cutShort:
      // Only a segment before the last can get here (the last is left out): damage, with
      // nothing in it to read.
      try damage(
        header: true, candidate, offset: 0, reason: "the segment header is missing",
        into: &state)
      candidate.handle.close()
      return
    case .damagedHeader(let reason, _):
      try damage(header: true, candidate, offset: 0, reason: reason, into: &state)
    }

    // A writer appends only to a segment of the current version that compaction did not write;
    // any other last segment is sealed below, and a new one follows it.
    let becomesWriter =
      writable && isLast && header?.compaction == nil
      && header?.version == SegmentHeader.currentVersion
    // In `.manyProcesses` use the active segment is mapped as long as it may grow, so that
    // what other processes append to it can be read.
    let sharedCapacity = isLast ? state.commit.map { Int($0.capacity) } ?? 0 : 0
    let capacity =
      becomesWriter
      ? max(options.maxSegmentSize, candidate.size, sharedCapacity)
      : max(candidate.size, sharedCapacity)
    let mapping = try candidate.handle.map(length: max(capacity, 1), writable: becomesWriter)
    let salt: UInt32
    if let header {
      salt = header.salt
    } else if case .damagedHeader(_, let stored) = segmentStart,
      let found = SegmentSalt.find(
        in: UnsafeRawBufferPointer(rebasing: mapping.bytes[0..<candidate.size]),
        storedSalt: stored)
    {
      salt = found
    } else {
      // No record confirms a salt: the records behind the header cannot be checked.
      try damage(
        candidate, offset: SegmentHeader.size,
        reason: "no record behind the unreadable header checks with a salt: its records "
          + "cannot be read", into: &state)
      state.segments[candidate.number] = SegmentFile(
        number: candidate.number, path: candidate.path, salt: 0, header: nil,
        handle: candidate.handle, mapping: mapping)
      state.sealedSizes[candidate.number] = candidate.size
      if changesFiles && isLast { try candidate.handle.synchronize(.durable) }
      return
    }
    let file = SegmentFile(
      number: candidate.number, path: candidate.path, salt: salt, header: header,
      handle: candidate.handle, mapping: mapping)
    state.segments[candidate.number] = file

    var start = SegmentHeader.size
    var baseSequence = header?.baseSequence ?? 0
    if let covered {
      start = covered
      baseSequence = maxSequence + 1
    }
    // A hint (the active segment's is written at a clean close) stands for the records it
    // covers past what the index file covers; what follows it is scanned.
    var hinted = false
    if let header,
      let coveredLength = try replayHint(
        of: candidate, header: header, after: covered, into: &state, maxSequence: &maxSequence)
    {
      start = coveredLength
      baseSequence = maxSequence + 1
      hinted = true
    }
    // The log after an index file with no hint to count its keys makes room for as many as
    // the bytes from its first record on may hold, so that the tables over the file do not
    // grow step by step; not before a record is found, since most opens find none (the
    // segment's reserve of zeros alone would make room for thousands of keys).
    var roomToMake = !hinted
    func handle(_ event: SegmentScanner.Event, lastSequence: UInt64) throws(LogStoreError) {
      switch event {
      case .record(let record, let offset):
        if roomToMake {
          roomToMake = false
          state.keys.reserve(forLogAfterIndexFile: candidate.size - offset)
        }
        // A batch counts as its members, as `verify` counts it.
        state.report.scannedRecords += try state.keys.apply(record, at: offset, of: file)
        maxSequence = max(maxSequence, lastSequence)
      case .damaged(let offset, _, let reason):
        try damage(candidate, offset: offset, reason: reason, into: &state)
      }
    }
    // A reader's last segment is the one a writer may be appending to right now. Read up to a
    // commit, it holds records to the commit's end (cut there: ``openSnapshot(_:)``).
    var scanner = SegmentScanner(
      bytes: UnsafeRawBufferPointer(rebasing: mapping.bytes[0..<candidate.size]), owner: file,
      salt: salt, baseSequence: baseSequence,
      extent: isLast && state.commit != nil ? .published : .of(header: header, isLast: isLast),
      start: start, mayBeBeingWritten: isLast && !writable)
    let keys = state.keys
    try keys.replay(from: file) { () throws(LogStoreError) in
      if candidate.size - start >= Self.pipelineThreshold, let pipeline = ScanPipeline(scanner) {
        // A large segment: checksums are checked on a second thread meanwhile.
        defer { pipeline.finish() }
        while let chunk = pipeline.next() {
          try chunk.forEachEvent { event, lastSequence throws(LogStoreError) in
            try handle(event, lastSequence: lastSequence)
          }
        }
        scanner = pipeline.finish()
      } else {
        while let event = scanner.next() { try handle(event, lastSequence: scanner.lastSequence) }
      }
    }

    // A sync mark after records lost to damage carries a number above theirs.
    maxSequence = max(maxSequence, scanner.lastSequence)
    var size = candidate.size
    var zeroedTail = false
    // The records past what the marks prove were written by a session that ended without a
    // sync that covered them, or after one that failed (Linux marks the pages of a failed
    // write-back clean, and the session may have died before writing them again): an open
    // that will sync them, and mark them proven, writes them again first.
    let found = min(scanner.dataEnd, scanner.end)
    if changesFiles && isLast && found > scanner.provenEnd {
      try candidate.handle.writeAgain(scanner.provenEnd..<found)
    }
    if isLast && scanner.end < candidate.size {
      // Past the end of the log there is a torn tail or space reserved ahead of the writes:
      // neither is part of the store. A writer zeroes a torn tail, so that new records follow
      // the last good one and nothing of the old tail can be read after them, and syncs the
      // zeros before any new record can be: records that followed a lost page must never come
      // back behind new ones. It never cuts the file, since a reader may have it mapped
      // (docs/CONCURRENCY.md). A read-only open just does not count it.
      if changesFiles && scanner.foundTornTail {
        try candidate.handle.writeZeros(from: scanner.end, to: candidate.size)
        try candidate.handle.synchronize(.durable)
        zeroedTail = true
      }
      size = scanner.end
    }
    if becomesWriter, let commit = state.commit {
      // The shared state knows what this scan cannot: how much of the segment is allocated
      // and synced.
      state.writer = SegmentWriter(
        file: file, capacity: capacity, used: size, allocated: Int(commit.allocated),
        durable: Int(commit.durableEnd), dataEnd: Int(commit.dataEnd),
        markedEnd: Int(commit.markedEnd))
    } else if becomesWriter {
      // What the marks do not prove durable is synced by the first sync of this session (which
      // then marks it), unless the open synced it all already.
      let proven = min(scanner.provenEnd, size)
      let allProven = zeroedTail || scanner.provenEnd >= scanner.dataEnd
      state.writer = SegmentWriter(
        file: file, capacity: capacity, used: size, allocated: candidate.size,
        durable: allProven ? size : proven, dataEnd: scanner.dataEnd,
        markedEnd: zeroedTail ? 0 : proven)
    } else {
      state.sealedSizes[candidate.number] = size
      // A last segment no writer appends to is sealed from now on (a new one follows): durable
      // whole first.
      if changesFiles && isLast && !zeroedTail { try candidate.handle.synchronize(.durable) }
    }
  }

  /// Applies the hint file of `candidate` if it is valid and covers more than `indexCovered`
  /// (the bytes of the segment the index file covers, whose entries are skipped), having made
  /// room in the tables for its puts; returns how much of the segment it covered, or nil to
  /// scan the segment (from `indexCovered`) instead.
  private func replayHint(
    of candidate: Candidate, header: SegmentHeader, after indexCovered: Int?,
    into state: inout RecoveredState, maxSequence: inout UInt64
  ) throws(LogStoreError) -> Int? {
    let hintPath = path(StoreFileName.hint(candidate.number))
    guard let handle = try? fileSystem.openFile(hintPath, mode: .readOnly) else { return nil }
    defer { handle.close() }
    // A valid hint file is never longer than its segment (each entry is no longer than the
    // record it describes): a longer one is not read into memory.
    guard let size = try? handle.size(), size <= candidate.size else { return nil }
    // After an index or changes file, a hint that covers no more than it (as the active
    // segment's does when a clean close wrote a changes file too) is not read past its header.
    if let indexCovered {
      guard
        let covered = HintFile.coveredLength(
          readingHeaderOf: handle, fileNumber: candidate.number, salt: header.salt),
        covered > indexCovered
      else { return nil }
    }
    guard let bytes = try? handle.readBytes(count: size), bytes.count == size else { return nil }
    return bytes.withUnsafeBytes { buffer -> Int? in
      guard
        let contents = try? HintFile.decode(
          buffer, fileNumber: candidate.number, salt: header.salt, segmentLength: candidate.size),
        contents.coveredLength > indexCovered ?? 0
      else { return nil }
      if let room = Self.putsPerTable(contents.entries, from: indexCovered ?? 0) {
        state.keys.reserve(room)
      }
      let keys = state.keys
      // The puts kept back point into `buffer`, which outlives the replay.
      keys.replay(from: candidate.handle) {
        for entry in contents.entries where entry.offset >= indexCovered ?? 0 {
          keys.apply(LoggedChange(entry, inSegment: candidate.number))
          maxSequence = max(maxSequence, entry.sequence)
        }
      }
      state.hintSizes[candidate.number] = bytes.count
      state.report.hintEntries += contents.entries.count
      state.report.hintedSegments += 1
      return contents.coveredLength
    }
  }

  /// How many puts, and how many bytes of keys, `entries` (a hint file's) hold for each table:
  /// the room to make in the index before applying them. Nil when the puts' tables change too
  /// often for that room to pay (see `shortestRunsForRoom`).
  private static func putsPerTable(_ entries: [HintFile.Entry], from offset: Int)
    -> NameTable<KeyDirectory.Room>?
  {
    let counts = NameTable<KeyDirectory.Room>()
    // Entries of one table come in runs: count a run, then add it up under the table's name,
    // so that a name is looked up once a run rather than once an entry.
    var run: (name: UnsafeRawBufferPointer, count: Int, keyBytes: Int)?
    var (puts, runs) = (0, 0)
    func finishRun() {
      guard let run else { return }
      let total = counts.find(run.name) ?? (0, 0)
      counts.set(run.name, (total.count + run.count, total.keyBytes + run.keyBytes))
    }
    for entry in entries where entry.kind == .put && entry.offset >= offset {
      puts += 1
      if let current = run, bytesEqual(current.name, entry.table) {
        run!.count += 1
        run!.keyBytes += entry.key.count
      } else {
        finishRun()
        run = (entry.table, 1, entry.key.count)
        runs += 1
        if puts >= 256 && runs * shortestRunsForRoom > puts { return nil }
      }
    }
    finishRun()
    return counts
  }

  /// The average number of puts to one table in a row below which an open makes no room for
  /// a hint file's keys beforehand. Measured (`ytkkv-bench --workloads tables-reopen-log`, 100k
  /// keys, docs/PERFORMANCE.md): the room saved about 7 ns a key of one table, and looking a run's
  /// table up cost about 70 ns a run when 10,000 tables were written in turn, so that room
  /// pays from runs of about 10 puts on.
  private static let shortestRunsForRoom = 16

  /// Whether every byte of the segment after its header is zero.
  private func holdsNoRecords(_ candidate: Candidate) throws(LogStoreError) -> Bool {
    var buffer = [UInt8](repeating: 0, count: 64 << 10)
    var offset = SegmentHeader.size
    while offset < candidate.size {
      let read = try buffer.withMutableBytes { bytes throws(LogStoreError) in
        try candidate.handle.read(into: bytes, at: offset)
      }
      if read == 0 { break }
      if buffer[..<read].contains(where: { $0 != 0 }) { return false }
      offset += read
    }
    return true
  }
}
