/// Compaction: Bitcask's merge, made crash-safe.
///
/// 1. *Rotate* (under the write lock): seal the active segment and start a new one whose number
///    leaves room below it for the outputs. Every segment numbered below the outputs is an
///    input; writes go on into the new segment while compaction runs.
/// 2. *Copy* (no lock): list the records of the inputs the index points at (each key's value
///    and each table's creation record, ``KeyDirectory/liveRecords(below:)``), then read and
///    copy those, table by table in key order, numbered anew, into outputs named
///    `NNNNNN.log.tmp`. Tombstones, overwritten values and table drops are left behind: every
///    record they shadow is in the inputs too, and all of them go away together. So are puts
///    that have expired (by the store's ``ExpiryClock``, read once when the compaction starts),
///    and records shadowed by writes made since step 1, which the key directory judged by
///    holds: those writes outlive the inputs, and step 3 makes them durable first.
/// 3. *Commit*: sync the active segment (``synchronizeWritesJudgedBy()``), then sync each
///    output, rename it to its final name, sync the directory. Each output's
///    header says how many outputs there are, so the moment the last rename is durable, the
///    compaction has happened: recovery treats the inputs as gone from then on. A store large
///    enough for an index file (``Checkpointer/followsCompaction()``) then gets one of the
///    outputs, gathered while copying (``CompactedIndex``), written as a checkpoint writes one.
/// 4. *Swap* (under both locks, in short steps): point the index at the copies, then drop the
///    inputs from memory and delete their files (at once unless a backup runs, which may be
///    copying them: then the last backup to end deletes them,
///    ``SegmentHolds/mayRemoveInputs(_:)``). With the index file of step 3, the key directory
///    becomes that file and the writes made since the compaction began, read back from the log,
///    as a checkpoint's does (``Checkpointer/adopt(number:segments:sizes:)``); without one, each
///    key is pointed at its copy where it still points at the original, so writes made
///    meanwhile win.
/// A crash before step 3 completes leaves the inputs in charge and the outputs are removed at
/// open; a crash after it leaves the outputs in charge and the inputs are removed at open.
///
/// A `Compactor` runs one compaction at a time; ``CompactionScheduler`` decides when the
/// automatic ones run. Its state is guarded by the log's lock.
final class Compactor: @unchecked Sendable {
  private let log: ActiveLog
  private let groupCommit: GroupCommit
  private let checkpointer: Checkpointer
  private let repair: IndexRepair
  /// In `.manyProcesses` use: the steps under the log's lock are writes of the store, which
  /// take its file lock and catch up first.
  private let sharing: ProcessSharing?
  private var index: IndexView { log.index }
  private var options: LogStore.Options { log.options }
  private var directory: String { log.directory }
  private var fileSystem: any FileSystem { log.fileSystem }

  /// A compaction is between its first and its last step.
  private(set) var isRunning = false
  /// Set by `close()` so that a compaction in progress stops early; read without locks.
  let stopRequested = OnceFlag()

  init(
    log: ActiveLog, groupCommit: GroupCommit, checkpointer: Checkpointer, repair: IndexRepair,
    sharing: ProcessSharing?
  ) {
    self.log = log
    self.groupCommit = groupCommit
    self.checkpointer = checkpointer
    self.repair = repair
    self.sharing = sharing
  }

  /// A live record read from an input, waiting to be judged still live and copied.
  private struct Pending {
    var record: Record
    var item: LiveRecord
    /// Its input's place in ``Plan/inputs``.
    var input: Int
    var isLive = false
  }

  /// Asks a compaction in progress to stop at its next record; `close()` does this.
  func requestStop() { stopRequested.set() }

  /// Waits until no compaction runs. Call with the log's lock held.
  func waitUntilStopped() {
    while isRunning { log.lock.wait() }
  }

  /// Compacts now: waits for a compaction already running, then runs one. `progress` is
  /// called now and then with the input bytes copied so far and the total. Returns whether an
  /// index file should follow (``Checkpointer/followsCompaction()``): the outputs got no hint
  /// files and the compaction could not give the store the index file it gathered of them
  /// (``CompactedIndex``), or, in `.manyProcesses` use, the compaction gathered none; the
  /// caller writes it. `skipsIndexFile` is asked, with the log's lock
  /// held, before that file is written: the automatic compactor says yes when another compaction
  /// is due already, whose outputs would replace these at once (the keys are then relocated, and
  /// the caller decides, as after any compaction that gave the store no file).
  @discardableResult
  func compact(
    progress: ((_ done: Int, _ total: Int) -> Void)? = nil, skipsIndexFile: (() -> Bool)? = nil
  ) throws(LogStoreError) -> Bool {
    guard !options.readOnly else { throw LogStoreError.readOnly(directory) }
    // A compaction that meets a damaged index file gives up and runs again on a directory
    // rebuilt from the log. That one is in memory and cannot be damaged, so it runs at most
    // twice.
    var waited = 0
    while true {
      switch try compactOnce(progress: progress, skipsIndexFile: skipsIndexFile) {
      case .compacted(let writesIndex): return writesIndex
      case .nothingToDo: return false
      case .indexFileDamaged: continue
      case .otherProcessCompacting:
        guard waited < options.otherProcessPatience else {
          throw LogStoreError(
            .locked,
            "another process has been compacting \(directory) for over "
              + "\(options.otherProcessPatience) ms")
        }
        pauseThread(microseconds: 1000)
        waited += 1
      }
    }
  }

  private enum Attempt {
    case compacted(writesIndex: Bool)
    case nothingToDo
    /// The listing met damage in the index file: the compaction was undone and the directory
    /// rebuilt from the log.
    case indexFileDamaged
    /// Another process runs a compaction (`.manyProcesses`): one at a time in a store.
    case otherProcessCompacting
  }

  /// How a compaction's first step ended.
  private enum Start {
    case plan(Plan)
    case nothingToDo
    case otherProcessCompacting
  }

  private func compactOnce(progress: ((Int, Int) -> Void)?, skipsIndexFile: (() -> Bool)?)
    throws(LogStoreError) -> Attempt
  {
    let plan: Plan
    switch try begin() {
    case .plan(let begun): plan = begun
    case .nothingToDo: return .nothingToDo
    case .otherProcessCompacting: return .otherProcessCompacting
    }
    var succeeded = false
    defer {
      if !succeeded {
        log.lock.withLock {
          sharing?.shared.endCompaction()
          isRunning = false
          log.lock.broadcast()
        }
      }
    }
    var outputs: [SegmentBuilder] = []
    var copied: Copied?
    var indexFile: IndexFileBytes?
    // Its thread never outlives the compaction, whatever happens.
    defer { _ = indexFile?.bytes() }
    do {
      copied = try copyLiveRecords(plan, into: &outputs, progress: progress)
      if copied != nil {
        indexFile = startIndexFile(copied!.index.take(), of: outputs, plan: plan)
        try synchronizeWritesJudgedBy()
        try commitOutputs(outputs)
      }
    } catch {
      removeOutputs(outputs)
      throw error
    }
    guard let copied else {
      // Which records are live cannot be told from a damaged file: an entry that fails its
      // check may stand for a key deleted since, or hide one. Undo, and list again from a
      // directory rebuilt from the log.
      removeOutputs(outputs)
      log.lock.withLock { repair.rebuild() }
      return .indexFileDamaged
    }
    let skips = skipsIndexFile.map { skips in log.lock.withLock { skips() } } ?? false
    let written = skips ? nil : writeIndexFile(indexFile, of: outputs)
    let adopted = try swapIn(outputs: outputs, copied: copied, plan: plan, index: written)
    succeeded = true
    // A relocation that found the index file damaged left its key where it was: rebuild.
    log.lock.withLock { if index.keys.baseDamaged { repair.rebuild() } }
    return .compacted(writesIndex: plan.writesIndex && !adopted || plan.checkpointFollows)
  }

  /// The bytes of a compaction's index file, made on a thread of their own while the outputs
  /// are synced and renamed (``commitOutputs(_:)``): at a million records, making them took
  /// about as long as those syncs, which leave the processor idle.
  private final class IndexFileBytes: @unchecked Sendable {
    let segments: [IndexFileFormat.CoveredSegment]
    let number: UInt32
    private let nextSequence: UInt64
    // Taken, then `made` set, by the thread that makes the bytes (or by `init` when no thread
    // can be started); read only after it is joined, in `bytes()`.
    private var gathered: CompactedIndex?
    private var made: (bytes: [UInt8]?, liveBytes: Int) = (nil, 0)
    private var thread: BackgroundThread?

    init(
      _ gathered: CompactedIndex, segments: [IndexFileFormat.CoveredSegment],
      nextSequence: UInt64, number: UInt32
    ) {
      self.segments = segments
      self.number = number
      self.nextSequence = nextSequence
      self.gathered = gathered
      let thread = BackgroundThread { [self] in make() }
      if thread.tryStart() { self.thread = thread } else { make() }
    }

    private func make() {
      guard let gathered = gathered.take() else { return }
      let snapshot = gathered.snapshot(segments: segments, nextSequence: nextSequence)
      made = (
        snapshot.encoded(number: number, seed: UInt64.random(in: .min ... .max)),
        snapshot.tables.reduce(0) { $0 + $1.liveBytes }
      )
    }

    /// The file's bytes (nil if a table is too large for the format) and the live bytes its
    /// tables hold, once made: waits for the thread.
    func bytes() -> (bytes: [UInt8]?, liveBytes: Int) {
      thread?.join()
      thread = nil
      return made
    }
  }

  /// An index file of a compaction's outputs, written (``CompactedIndex``).
  private struct WrittenIndex {
    var number: UInt32
    var segments: [IndexFileFormat.CoveredSegment]
    var size: Int
    var liveBytes: Int
  }

  /// Starts making the bytes of the index file of `outputs` from what the copy gathered, if
  /// it did, while the outputs are committed. Nil when there will be none: no outputs, or
  /// damage met while copying (the swap then counts what was lost by the keys left pointing
  /// into the inputs).
  private func startIndexFile(
    _ gathered: CompactedIndex?, of outputs: [SegmentBuilder], plan: Plan
  ) -> IndexFileBytes? {
    guard let gathered, let number = plan.indexFile, !outputs.isEmpty, plan.damageSeen == 0 else {
      return nil
    }
    // Each output as it will be once finished: its records, then the sync mark that ends it.
    let segments = outputs.map {
      IndexFileFormat.CoveredSegment(
        number: $0.number, salt: $0.salt, coveredLength: $0.size + RecordLayout.syncMarkLength)
    }
    return IndexFileBytes(
      gathered, segments: segments, nextSequence: plan.nextSequence, number: number)
  }

  /// Writes the index file whose bytes `made` made, once the outputs are committed. Nil when
  /// there is none (``startIndexFile(_:of:plan:)``), a close is under way, or it fails to be
  /// written, which leaves the swap to relocate the keys and a checkpoint to follow. The file
  /// is only an optimization: the compaction has happened either way.
  private func writeIndexFile(_ made: IndexFileBytes?, of outputs: [SegmentBuilder])
    -> WrittenIndex?
  {
    guard let made, !stopRequested.isSet else { return nil }
    let (bytes, liveBytes) = made.bytes()
    // The outputs' lengths were foreseen before they were finished: a file that foresaw them
    // wrong would be refused at every open, so none is written.
    let foreseen = made.segments.map(\.coveredLength) == outputs.map(\.size)
    assert(foreseen, "an output finished at another length than its index file says")
    guard foreseen, let bytes, let size = try? checkpointer.write(bytes, number: made.number),
      size > 0
    else { return nil }
    return WrittenIndex(
      number: made.number, segments: made.segments, size: size, liveBytes: liveBytes)
  }

  /// Undoes a compaction before its swap. The inputs are all still there, so removing the
  /// outputs (under either name) undoes it, even if its renames reached the disk.
  private func removeOutputs(_ outputs: [SegmentBuilder]) {
    for output in outputs {
      output.handle.close()
      for path in [
        output.temporaryPath, output.finalPath, output.hintTemporaryPath, output.hintFinalPath,
      ] {
        try? fileSystem.removeFile(path)
      }
    }
  }

  /// What a compaction works on, fixed when it starts.
  private final class Plan {
    /// The sealed segments below the outputs, in order, with the bytes each holds.
    let inputs: [(file: SegmentFile, size: Int)]
    let firstOutput: UInt32
    let outputLimit: UInt32
    /// Damaged regions met while copying: records the index pointed at may be among them.
    var damageSeen = 0
    /// An index file is written after the compaction, so the outputs need no hint files.
    let writesIndex: Bool
    /// In `.manyProcesses` use, where the outputs get hint files for the other processes and
    /// no index file is gathered: a checkpoint writes one after the compaction, so that the
    /// next opens map it instead of reading every output's hint file.
    let checkpointFollows: Bool
    /// The number reserved for the index file of the outputs (``CompactedIndex``); nil when
    /// none is written. The first record after them is numbered ``nextSequence``.
    let indexFile: UInt32?
    /// The time expiries are judged by: a put that expired by then is not copied.
    let now: Int64
    /// The sequence number of the active segment's first record: every record of the inputs
    /// is numbered below it.
    let nextSequence: UInt64
    /// The keys whose records were left behind because they had expired, with where those
    /// records were: removed from the index when the outputs take over, unless written since.
    var expired: [(table: String, key: [UInt8], location: RecordLocation)] = []

    init(
      inputs: [(file: SegmentFile, size: Int)], firstOutput: UInt32, outputLimit: UInt32,
      indexFile: UInt32?, checkpointFollows: Bool, now: Int64, nextSequence: UInt64
    ) {
      self.now = now
      self.nextSequence = nextSequence
      self.inputs = inputs
      self.firstOutput = firstOutput
      self.outputLimit = outputLimit
      self.writesIndex = indexFile != nil
      self.checkpointFollows = checkpointFollows
      self.indexFile = indexFile
    }

    /// The sequence number of the first of `count` copies: the copies are numbered anew, in
    /// the order they are written (table by table, in key order), with the last `count` numbers
    /// before the active segment's. Each copy is a distinct record of the inputs, all numbered
    /// below the active segment and none below the first input, so the numbers are there; the
    /// outputs, like the inputs, follow what lies before them and precede what follows.
    func firstSequence(copying count: Int) -> UInt64 {
      // (Never below 1, should a damaged directory list more than that.)
      let next = max(nextSequence, 1)
      return next - min(UInt64(count), next - 1)
    }
  }

  /// Step 1: seal the active segment and start the next one above the outputs' numbers.
  private func begin() throws(LogStoreError) -> Start {
    // Most of the active segment is synced before the lock is taken, so that sealing it under
    // the lock has little left to sync. (Not in `.manyProcesses` use, where the sync would
    // have to hold the file lock anyway.)
    if sharing == nil { try log.flushOutsideLock() }
    return try log.lock.withLock { () throws(LogStoreError) -> Start in
      while (isRunning || checkpointer.isRunning) && !log.closing { log.lock.wait() }
      groupCommit.waitUntilIdle()
      try log.checkWritable()
      // The new active segment and the numbers reserved are published when this ends.
      try sharing?.beginWrite()
      defer { sharing?.endWrite() }
      // One compaction at a time in the store, whichever process runs it: recovery takes every
      // segment below the newest finished compaction's outputs for its inputs
      // (``CompactionGroups``), which holds only while compactions take turns.
      if let sharing, let running = sharing.shared.compaction {
        if sharing.shared.processExists(running.process) { return .otherProcessCompacting }
        try removeOutputs(ofDeadCompaction: running.outputs)
        sharing.shared.endCompaction()
      }
      // Compaction decides what is live by the index file's entries, which its list of live
      // records checks as it reads them (``KeyDirectory/liveRecords(below:)``): one found
      // damaged undoes the compaction, and it runs again on a directory rebuilt from the log.
      repair.settleCounts()
      // The tables of the index file not made yet are made now, so that the swap's relocations
      // find the tables they were listed from (a listing reads one made for it otherwise, and
      // each relocation then looks its key up in the file again).
      index.change { index.keys.makeAllTables() }
      let sizes = log.segmentSizes
      let inputBytes = sizes.values.reduce(0, +)
      let recordBytes = inputBytes - sizes.count * SegmentHeader.size
      guard recordBytes > 0 else { return .nothingToDo }
      // Outputs are closed when the next record does not fit, so any two neighbours hold more
      // than one segment's worth: this many numbers are always enough.
      let outputLimit = UInt32(2 * (inputBytes / options.maxSegmentSize) + 2)
      let firstOutput = try log.sealForCompaction(reserving: outputLimit)
      // In `.manyProcesses` use the outputs always get hint files: every other process reads
      // them to take the compaction in. The index file the next opens want is then written
      // after the compaction, by a checkpoint.
      let indexFollows = checkpointer.followsCompaction()
      let indexFile = sharing == nil && indexFollows ? try log.takeFileNumber() : nil
      sharing?.shared.beginCompaction(outputs: firstOutput..<firstOutput + outputLimit)
      isRunning = true
      // Every segment below the outputs is sealed now, its size known.
      let inputs = log.segmentSizes.compactMap { number, size in
        number < firstOutput ? index.segments[number].map { (file: $0, size: size) } : nil
      }
      return .plan(
        Plan(
          inputs: inputs.sorted { $0.file.number < $1.file.number }, firstOutput: firstOutput,
          outputLimit: outputLimit, indexFile: indexFile,
          checkpointFollows: sharing != nil && indexFollows, now: index.clock.now(),
          nextSequence: log.nextSequence))
    }
  }

  /// Removes what a compaction whose process died left under its outputs' numbers, unless
  /// its swap listed them (then they are the store's). Call with the log's lock and the file
  /// lock held, caught up.
  private func removeOutputs(ofDeadCompaction numbers: Range<UInt32>) throws(LogStoreError) {
    var removed = false
    for number in numbers where index.segments[number] == nil {
      for name in [
        StoreFileName.segment(number), StoreFileName.hint(number),
        StoreFileName.segment(number) + StoreFileName.temporarySuffix,
        StoreFileName.hint(number) + StoreFileName.temporarySuffix,
      ] {
        try fileSystem.removeFile(directory + "/" + name)
      }
      removed = true
    }
    if removed { try fileSystem.synchronizeDirectory(directory) }
  }

  /// What step 2 copied, and, when the store gets an index file of the outputs, its contents
  /// gathered on the way.
  private struct Copied {
    /// The tables as listed.
    var tables: [ListedTable]
    /// For each record copied, in the order copied, its listed table's place in `tables` when
    /// the key was listed from that table's index file (then the swap looks nothing up while
    /// the file is still the table's), or -1.
    var fromBase: [Int32]
    var index: CompactedIndex?
  }

  /// Step 2: copy what is live into temporary outputs. Returns nil, having stopped early, when
  /// its listing or a judgement finds the index file damaged.
  private func copyLiveRecords(
    _ plan: Plan, into outputs: inout [SegmentBuilder], progress: ((Int, Int) -> Void)?
  ) throws(LogStoreError) -> Copied? {
    let total = plan.inputs.map(\.size).reduce(0, +)
    // What is live is listed from the directory at once, table by table in key order; the
    // inputs are then read only where it points, so that overwritten records are not even read.
    guard let live = index.lock.withReadLock({ index.keys.liveRecords(below: plan.firstOutput) })
    else { return nil }
    // Each input's place in the plan by its number (-1: none).
    let first = plan.inputs.reduce(plan.firstOutput) { min($0, $1.file.number) }
    var places = [Int](repeating: -1, count: Int(plan.firstOutput - first))
    for (place, input) in plan.inputs.enumerated() {
      places[Int(input.file.number - first)] = place
    }
    var copying = LiveCopy(compactor: self, plan: plan, live: live, outputs: outputs)
    defer { outputs = copying.outputs }
    // The share of the input bytes that the records read so far stand for.
    let count = live.records.count
    func report(_ read: Int) { progress?(Int(Double(total) * Double(read) / Double(count)), total) }
    progress?(0, total)
    // The records are read in groups whose checksums are computed together
    // (``RecordCodec/intactRecords(_:)``): in key order they lie far apart, and one record's
    // check after another's waited for each one's cache misses in turn.
    let groupSize = 32
    var group: [(item: LiveRecord, input: Int)] = []
    var located: [RecordCodec.Located] = []
    group.reserveCapacity(groupSize)
    located.reserveCapacity(groupSize)
    var position = 0
    while position < count {
      if stopRequested.isSet { throw LogStoreError.closed(directory) }
      group.removeAll(keepingCapacity: true)
      located.removeAll(keepingCapacity: true)
      while position < count, group.count < groupSize {
        let item = live.records[position]
        position += 1
        let number = item.location.segment
        let place =
          number >= first && number < plan.firstOutput ? places[Int(number - first)] : -1
        let offset = Int(item.location.offset)
        // A segment the inputs do not list (the directory points at a record that is gone),
        // or past the end of one: damage.
        guard place >= 0, offset < plan.inputs[place].size else {
          plan.damageSeen += 1
          continue
        }
        let bytes = copying.inputs[place].bytes
        group.append((item, place))
        located.append(
          RecordCodec.Located(
            bytes: bytes, offset: offset, salt: copying.inputs[place].salt,
            member: SegmentFile.isMember(at: offset, in: bytes)))
      }
      let intact = located.withUnsafeBufferPointer { RecordCodec.intactRecords($0) }
      for (index, (item, place)) in group.enumerated() {
        let at = located[index]
        guard intact & (1 << UInt32(index)) != 0,
          let record = try? RecordCodec.decode(
            at.bytes, at: at.offset, salt: at.salt, member: at.member, verify: false),
          record.length == Int(item.location.length),
          holds(record, of: item, tables: live.tables)
        else {
          // Damaged, or not the record the directory says: its key is lost when the outputs
          // take over (``swapIn``).
          plan.damageSeen += 1
          continue
        }
        copying.pending.append(Pending(record: record, item: item, input: place))
      }
      if copying.pending.count >= 512 {
        guard try copying.judgeAndCopy() else { return nil }
        report(position)
      }
    }
    guard try copying.judgeAndCopy() else { return nil }
    progress?(total, total)
    return Copied(tables: live.tables, fromBase: copying.fromBase, index: copying.gathered)
  }

  /// Step 2 while it copies: the outputs, what the swap needs of each record copied, the index
  /// file's contents gathered on the way, and the records read and waiting to be judged. A
  /// value of its own, changed by its methods, so that each record's accesses to it are checked
  /// when compiled: as variables captured by nested functions, the runtime checked three
  /// accesses a record (about 6% of a compaction's instructions).
  private struct LiveCopy {
    let compactor: Compactor
    let plan: Plan
    let live: LiveRecords
    /// Each input's bytes and salt, by its place in the plan: read once, not per record, which
    /// would retain and release its mapping each time.
    let inputs: [(bytes: UnsafeRawBufferPointer, salt: UInt32)]
    var outputs: [SegmentBuilder]
    var current: SegmentBuilder?
    /// The sequence number of the next copy (``Plan/firstSequence``).
    var sequence: UInt64
    /// ``Copied/fromBase``.
    var fromBase: [Int32] = []
    var gathered: CompactedIndex?
    /// Records read and checked, waiting to be judged still live: in chunks, under one read
    /// lock per chunk, since taking the lock per record would hand it back and forth with a
    /// busy writer thousands of times a second.
    var pending: [Pending] = []

    init(compactor: Compactor, plan: Plan, live: LiveRecords, outputs: [SegmentBuilder]) {
      self.compactor = compactor
      self.plan = plan
      self.live = live
      self.outputs = outputs
      inputs = plan.inputs.map { ($0.file.mapping.bytes, $0.file.salt) }
      sequence = plan.firstSequence(copying: live.records.count)
      if plan.indexFile != nil { gathered = CompactedIndex(listing: live) }
      fromBase.reserveCapacity(live.records.count)
    }

    /// Judges the pending records and copies those still live; false when the index file was
    /// found damaged.
    mutating func judgeAndCopy() throws(LogStoreError) -> Bool {
      let (index, live) = (compactor.index, live)
      let intact = pending.withUnsafeMutableBufferPointer { pending in
        index.lock.withReadLock {
          index.keys.judge(
            count: pending.count, in: live,
            listed: { (pending[$0].item, pending[$0].record.key) },
            judged: { pending[$0].isLive = $1 })
        }
      }
      guard intact else { return false }
      for position in pending.indices where pending[position].isLive {
        let (record, item) = (pending[position].record, pending[position].item)
        if item.source != .creation, let expiry = record.expiry, expiry <= plan.now {
          plan.expired.append((live.tables[Int(item.table)].name, Array(record.key), item.location))
        } else {
          let (bytes, salt) = inputs[pending[position].input]
          try copy(record, listedAs: item, from: bytes, salt: salt)
        }
      }
      pending.removeAll(keepingCapacity: true)
      return true
    }

    /// Copies `record`, which is in `bytes` (the mapping of an input salted `salt`), numbered
    /// as the next copy.
    private mutating func copy(
      _ record: Record, listedAs item: LiveRecord, from bytes: UnsafeRawBufferPointer,
      salt: UInt32
    ) throws(LogStoreError) {
      let old = item.location
      if let output = current, !output.isEmpty,
        output.size + record.length > compactor.options.maxSegmentSize
      {
        current = nil
      }
      if current == nil {
        let index = UInt32(outputs.count)
        guard index < plan.outputLimit else {
          throw LogStoreError(.io, "compaction needed more output files than it reserved")
        }
        let output = try SegmentBuilder(
          directory: compactor.directory, number: plan.firstOutput + index,
          mark: .init(firstOutput: plan.firstOutput, outputIndex: index, outputCount: 0),
          baseSequence: sequence, fileSystem: compactor.fileSystem,
          writesHint: !plan.writesIndex)
        outputs.append(output)
        current = output
      }
      let encoded = UnsafeRawBufferPointer(
        rebasing: bytes[Int(old.offset)..<Int(old.offset) + record.length])
      let (offset, length) = try current!.append(
        record, encoded: encoded, inputSalt: salt, sequence: sequence)
      sequence += 1
      let new = RecordLocation(
        segment: current!.number, offset: UInt32(offset), length: UInt32(length))
      fromBase.append(item.source == .base ? Int32(item.table) : -1)
      gathered?.add(record, listedAs: item, copiedTo: new)
    }
  }

  /// Whether `record` is the one `item` stands for: its table's creation, or a put of its key
  /// (by the key's hash) in its table.
  private func holds(_ record: Record, of item: LiveRecord, tables: [ListedTable]) -> Bool {
    let isCreation = item.source == .creation
    guard record.kind == (isCreation ? .createTable : .put) else { return false }
    if !isCreation, KeyHash.hash(record.key) != item.keyHash { return false }
    return tables[Int(item.table)].name.withUTF8Bytes {
      TableName.names($0, recordBytes: record.table)
    }
  }

  /// Step 3, first: make durable every write the copy judged the inputs' records by. The
  /// judgments read the key directory, which holds the writes made since the compaction
  /// began, and left out of the outputs every record those writes overwrote, deleted or
  /// dropped: once the outputs are committed, those records are gone, and the writes must
  /// not be lost to a power loss that keeps the outputs. Under `.always` they are durable
  /// already (what the directory holds was synced before it was applied); under `.never` and
  /// `.interval` they may not be. Those that went to segments sealed since the compaction
  /// began are durable (sealing syncs); the active segment is synced to its end, which is past
  /// what it held when the copy ended.
  private func synchronizeWritesJudgedBy() throws(LogStoreError) {
    try checkpointer.synchronizeLog(proving: false)
  }

  /// Step 3: make the outputs durable under their final names. Once this returns, the
  /// compaction has happened, whatever follows.
  private func commitOutputs(_ outputs: [SegmentBuilder]) throws(LogStoreError) {
    for output in outputs { try output.finish(outputCount: UInt32(outputs.count)) }
    // Hints first: a hint without its segment is ignored (and removed) at open.
    for output in outputs where output.writesHint {
      try fileSystem.renameFile(output.hintTemporaryPath, to: output.hintFinalPath)
    }
    for output in outputs {
      try fileSystem.renameFile(output.temporaryPath, to: output.finalPath)
    }
    try fileSystem.synchronizeDirectory(directory)
  }

  /// Step 4: point the index at the copies and retire the inputs. Returns whether the key
  /// directory became `written`, the index file of the outputs.
  private func swapIn(
    outputs: [SegmentBuilder], copied: Copied, plan: Plan, index written: WrittenIndex?
  ) throws(LogStoreError) -> Bool {
    var files: [SegmentFile] = []
    for output in outputs {
      let mapping = try output.handle.map(length: max(output.size, 1), writable: false)
      files.append(
        SegmentFile(
          number: output.number, path: output.finalPath, salt: output.salt,
          header: output.header, handle: output.handle, mapping: mapping))
    }
    let inputNumbers = Set(plan.inputs.map(\.file.number))
    // The manifest switches to the outputs now; the inputs are deleted only once it has. If
    // it cannot be replaced, the inputs stay on disk (readers may still be told of them) and
    // the next open removes them: the compaction has happened either way.
    var manifestFailure: LogStoreError?
    var adopted = false
    try log.lock.withLock { () throws(LogStoreError) in
      // The directory becomes `written` and the log after it read back up to its end: first,
      // every record appended must be applied (``Checkpointer/publish(_:size:)`` says why).
      if written != nil { groupCommit.waitUntilIdle() }
      // Other processes learn of the outputs from the manifest and commit published here.
      do throws(LogStoreError) {
        try sharing?.beginWrite()
      } catch {
        isRunning = false
        log.lock.broadcast()
        throw error
      }
      defer { sharing?.endWrite() }
      index.change {
        for file in files { index.setSegment(file.number, file) }
      }
      do throws(LogStoreError) {
        try log.retire(inputNumbers)
      } catch {
        manifestFailure = error
      }
      // The outputs are live (in the index and the manifest): the directory can be their index
      // file and what was written after them. The outputs' sizes are recorded only below.
      if let written, manifestFailure == nil {
        var sizes = log.segmentSizes
        for output in outputs { sizes[output.number] = output.size }
        adopted = checkpointer.adopt(
          number: written.number, segments: written.segments, sizes: sizes)
      }
    }
    if let written, !adopted {
      try? fileSystem.removeFile(directory + "/" + StoreFileName.index(written.number))
    }
    // Relocate in steps so that readers and writers wait only briefly at a time. The copies
    // lie in the outputs in the order they were made, back to back after each header.
    let step = 4096
    var (output, offset, inOutput, copy) = (0, SegmentHeader.size, 0, 0)
    while !adopted, copy < copied.fromBase.count {
      log.lock.withLock {
        index.change {
          let keys = index.keys
          // In `.manyProcesses` use a catch-up may have read the view anew since (another
          // process started a segment while this one copied), leaving counts to settle and
          // tables of its index file to make.
          if !keys.isSettled { keys.settle() }
          keys.makeAllTables()
          for _ in 0..<step {
            while output < outputs.count, inOutput == outputs[output].recordCount {
              (output, offset, inOutput) = (output + 1, SegmentHeader.size, 0)
            }
            guard output < outputs.count, copy < copied.fromBase.count,
              let record = try? files[output].record(at: offset, verify: false)
            else {
              // The outputs were just written and synced; should one not read back, the keys
              // left pointing into the inputs are counted lost below, as damage met copying.
              if copy < copied.fromBase.count { plan.damageSeen += 1 }
              copy = copied.fromBase.count
              break
            }
            let new = RecordLocation(
              segment: files[output].number, offset: UInt32(offset), length: UInt32(record.length))
            let listed = Int(copied.fromBase[copy])
            offset += record.length
            inOutput += 1
            copy += 1
            if record.kind == .createTable {
              keys.relocateCreation(of: record.table, below: plan.firstOutput, to: new)
            } else {
              _ = keys.table(record.table)?.relocate(
                record.key, hash: KeyHash.hash(record.key), to: new, below: plan.firstOutput,
                listedFrom: listed >= 0 ? copied.tables[listed].base : nil)
            }
          }
        }
      }
    }
    var removesInputs = false
    var indexRemovalFailure: LogStoreError?
    log.lock.withLock {
      index.change {
        // A key still pointing into an input is one whose record sat in damage met while
        // copying: its value is lost; count it and forget the key.
        let keys = index.keys
        keys.makeAllTables()
        // Keys whose records had expired and were not copied are gone, unless written since.
        // (An index file of the outputs lacks them already.)
        for (table, key, location) in plan.expired where !adopted {
          key.withUnsafeBytes { bytes in
            guard let index = keys.table(table),
              index.find(bytes, hash: KeyHash.hash(bytes)) == location
            else { return }
            index.remove(bytes, hash: KeyHash.hash(bytes))
          }
        }
        var lost: [(String, [UInt8])] = []
        if plan.damageSeen > 0, !adopted {
          keys.forEachLocation { table, key, location in
            if inputNumbers.contains(location.segment) { lost.append((table, Array(key))) }
          }
        }
        for (table, key) in lost {
          key.withUnsafeBytes { bytes in
            _ = keys.table(table)?.remove(bytes, hash: KeyHash.hash(bytes))
          }
        }
        index.addDamagedRecords(lost.count)
        for number in inputNumbers { index.setSegment(number, nil) }
      }
      log.dropRetired(
        replacedBy: outputs.map { ($0.number, $0.size, $0.hintSize) })
      // A backup running now may be copying the inputs: their files stay until it ends.
      removesInputs = manifestFailure == nil && log.mayRemoveInputs(inputNumbers.sorted())
      // The index file described the inputs: no open can use it any more. It goes (or gives
      // way to the outputs' file) before `isRunning` clears: a checkpoint waiting for this
      // compaction to end then writes its file after this one is gone, and no later step of
      // this compaction removes that one.
      do throws(LogStoreError) {
        if let written, adopted, let last = written.segments.last {
          try repair.indexFile.take(
            written.number, segment: last.number, covered: last.coveredLength,
            size: written.size, liveBytes: written.liveBytes)
        } else if manifestFailure == nil {
          try repair.indexFile.remove()
        }
      } catch {
        indexRemovalFailure = error
      }
      sharing?.shared.endCompaction()
      isRunning = false
      log.lock.broadcast()
    }
    if let manifestFailure { throw manifestFailure }
    if removesInputs { try log.removeSegmentFiles(inputNumbers.sorted()) }
    if let indexRemovalFailure { throw indexRemovalFailure }
    try fileSystem.synchronizeDirectory(directory)
    return adopted
  }
}
