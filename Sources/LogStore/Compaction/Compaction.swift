/// Compaction: Bitcask's merge, made crash-safe.
///
/// 1. *Rotate* (under the write lock): seal the active segment and start a new one whose number
///    leaves room below it for the outputs. Every segment numbered below the outputs is an
///    input; writes go on into the new segment while compaction runs.
/// 2. *Copy* (no lock): read the inputs in order and copy each record the index still points
///    at (and each table's creation record) into outputs named `NNNNNN.log.tmp`. Tombstones,
///    overwritten values and table drops are left behind: every record they shadow is in
///    the inputs too, and all of them go away together.
/// 3. *Commit*: sync each output, rename it to its final name, sync the directory. Each output's
///    header says how many outputs there are, so the moment the last rename is durable, the
///    compaction has happened: recovery treats the inputs as gone from then on.
/// 4. *Swap* (under both locks, in short steps): point the index at the copies (only where
///    it still points at the originals, so writes made meanwhile win), then drop the inputs
///    from memory and delete their files.
/// A crash before step 3 completes leaves the inputs in charge and the outputs are removed at
/// open; a crash after it leaves the outputs in charge and the inputs are removed at open.
extension StoreEngine {
  /// Garbage must be at least this large before automatic compaction starts.
  static let automaticCompactionMinimumGarbage = 4 << 20
  /// Garbage fraction that starts automatic compaction under `CompactionPolicy.automatic`.
  /// (A quarter keeps disk use within 4/3 of the live data once compaction has caught up,
  /// leaving room under the 1.5× the store promises for hint files and block rounding.)
  static let automaticCompactionFraction = 0.25
  /// How many bytes are written between two checks of the automatic threshold.
  static let compactionCheckInterval = 1 << 20

  /// A record copied by compaction: where it was and where its copy is.
  private struct Move {
    var old: RecordLocation
    var new: RecordLocation
    var isCreation: Bool
  }

  /// Counts written bytes and asks the background thread to compact when the automatic
  /// threshold is passed. Call with `writeLock` held.
  func noteWritten(_ bytes: Int) {
    guard options.compaction != .manual else { return }
    bytesSinceCompactionCheck += bytes
    guard bytesSinceCompactionCheck >= Self.compactionCheckInterval else { return }
    bytesSinceCompactionCheck = 0
    if shouldCompactAutomatically() {
      compactionRequested = true
      writeLock.broadcast()
    }
  }

  private func shouldCompactAutomatically() -> Bool {
    let fraction: Double
    switch options.compaction {
    case .manual: return false
    case .automatic: fraction = Self.automaticCompactionFraction
    case .whenGarbageExceeds(let threshold): fraction = threshold
    }
    let disk = diskBytes
    let garbage = disk - keys.liveBytes
    return garbage >= Self.automaticCompactionMinimumGarbage
      && Double(garbage) > fraction * Double(disk)
  }

  /// The loop of the automatic compaction thread.
  func runAutomaticCompaction() {
    writeLock.lock()
    defer { writeLock.unlock() }
    while !closing {
      if compactionRequested && !compactionRunning {
        compactionRequested = false
        writeLock.unlock()
        // A failure (a full disk, say) leaves the store as it was; the next check retries.
        var succeeded = true
        do {
          try compact()
        } catch {
          succeeded = false
          writeLock.withLock { automaticCompactionError = error }
        }
        writeLock.lock()
        // Writes made meanwhile may have brought garbage back over the threshold.
        if succeeded && !closing && shouldCompactAutomatically() { compactionRequested = true }
        writeLock.broadcast()
      } else {
        writeLock.wait()
      }
    }
  }

  /// Waits until automatic compaction has nothing left to do: none running, none due.
  func waitForCompaction() throws(LogStoreError) {
    try writeLock.withLock { () throws(LogStoreError) in
      if closing { throw closedError() }
      guard options.compaction != .manual, !options.readOnly else { return }
      automaticCompactionError = nil
      while !closing {
        if compactionRequested || compactionRunning {
          writeLock.wait()
        } else if let error = automaticCompactionError {
          automaticCompactionError = nil
          throw error
        } else if shouldCompactAutomatically() {
          compactionRequested = true
          writeLock.broadcast()
        } else {
          return
        }
      }
    }
  }

  /// Compacts now: waits for a compaction already running, then runs one. `progress` is
  /// called now and then with the input bytes copied so far and the total.
  func compact(progress: ((_ done: Int, _ total: Int) -> Void)? = nil) throws(LogStoreError) {
    guard !options.readOnly else {
      throw LogStoreError(.readOnly, "the store at \(directory) was opened read-only")
    }
    guard let plan = try beginCompaction() else { return }
    var succeeded = false
    defer {
      if !succeeded {
        writeLock.withLock {
          compactionRunning = false
          writeLock.broadcast()
        }
      }
    }
    var outputs: [SegmentBuilder] = []
    let moves: [Move]
    do {
      moves = try copyLiveRecords(plan, into: &outputs, progress: progress)
      try commitOutputs(outputs)
    } catch {
      // The inputs are all still there, so removing the outputs (under either name) undoes
      // the compaction, even if its renames reached the disk.
      for output in outputs {
        output.handle.close()
        for path in [
          output.temporaryPath, output.finalPath, output.hintTemporaryPath, output.hintFinalPath,
        ] {
          try? fileSystem.removeFile(path)
        }
      }
      throw error
    }
    try swapIn(outputs: outputs, moves: moves, plan: plan)
    succeeded = true
  }

  /// What a compaction works on, fixed when it starts.
  private final class Plan {
    let inputs: [SegmentFile]
    let inputSizes: [UInt32: Int]
    let firstOutput: UInt32
    let outputLimit: UInt32
    /// Damaged regions met while copying: records the index pointed at may be among them.
    var damageSeen = 0

    init(
      inputs: [SegmentFile], inputSizes: [UInt32: Int], firstOutput: UInt32,
      outputLimit: UInt32
    ) {
      self.inputs = inputs
      self.inputSizes = inputSizes
      self.firstOutput = firstOutput
      self.outputLimit = outputLimit
    }
  }

  /// Step 1: seal the active segment and start the next one above the outputs' numbers.
  private func beginCompaction() throws(LogStoreError) -> Plan? {
    try flushActiveSegment()
    return try writeLock.withLock { () throws(LogStoreError) -> Plan? in
      while compactionRunning && !closing { writeLock.wait() }
      waitForLog()
      try checkWritable()
      let active = writer!
      let inputBytes = sealedSizes.values.reduce(0, +) + active.used
      let recordBytes = inputBytes - (sealedSizes.count + 1) * SegmentHeader.size
      guard recordBytes > 0 else { return nil }
      // Outputs are closed when the next record does not fit, so any two neighbours hold more
      // than one segment's worth: this many numbers are always enough.
      let outputLimit = UInt32(2 * (inputBytes / options.maxSegmentSize) + 2)
      try Self.checkFileNumbers(
        from: nextFileNumber, count: outputLimit + 1, directory: directory)
      let firstOutput = nextFileNumber
      let nextActive = firstOutput + outputLimit
      try active.seal()
      nextFileNumber = nextActive + 1
      let fresh = try Self.createSegment(
        directory: directory, number: nextActive, baseSequence: nextSequence,
        capacity: options.maxSegmentSize, fileSystem: fileSystem)
      // As in `rotate`: listed before it is written to; on failure the old segment stays.
      try publishManifest(liveSegmentNumbers() + [nextActive])
      sealedSizes[active.file.number] = active.allocated
      indexLock.withWriteLock { segments[nextActive] = fresh.file }
      writer = fresh
      compactionRunning = true
      let inputs = segments.values.filter { $0.number < firstOutput }.sorted {
        $0.number < $1.number
      }
      var sizes: [UInt32: Int] = [:]
      for input in inputs { sizes[input.number] = sealedSizes[input.number] ?? 0 }
      return Plan(
        inputs: inputs, inputSizes: sizes, firstOutput: firstOutput, outputLimit: outputLimit)
    }
  }

  /// Syncs what the active segment holds without keeping writers waiting, so that sealing it
  /// under the write lock has little left to sync.
  private func flushActiveSegment() throws(LogStoreError) {
    let target = writeLock.withLock { () -> (SegmentWriter, Range<Int>)? in
      while syncInFlight { writeLock.wait() }
      guard !closing, let active = writer else { return nil }
      syncInFlight = true
      return (active, active.unsynchronized)
    }
    guard let (active, range) = target else { return }
    var failure: LogStoreError?
    do {
      try active.synchronize(range, .durable)
    } catch {
      failure = error
    }
    writeLock.withLock {
      syncInFlight = false
      if failure == nil { active.markDurable(upTo: range.upperBound) }
      writeLock.broadcast()
    }
    if let failure { throw failure }
  }

  /// Step 2: copy what is live into temporary outputs.
  private func copyLiveRecords(
    _ plan: Plan, into outputs: inout [SegmentBuilder], progress: ((Int, Int) -> Void)?
  ) throws(LogStoreError) -> [Move] {
    let total = plan.inputSizes.values.reduce(0, +)
    var done = 0
    var moves: [Move] = []
    var current: SegmentBuilder?

    func copy(_ record: Record, from old: RecordLocation, isCreation: Bool) throws(LogStoreError) {
      if let output = current, !output.isEmpty,
        output.size + record.length > options.maxSegmentSize
      {
        current = nil
      }
      if current == nil {
        let index = UInt32(outputs.count)
        guard index < plan.outputLimit else {
          throw LogStoreError(.io, "compaction needed more output files than it reserved")
        }
        let output = try SegmentBuilder(
          directory: directory, number: plan.firstOutput + index,
          mark: .init(firstOutput: plan.firstOutput, outputIndex: index, outputCount: 0),
          baseSequence: record.sequence, fileSystem: fileSystem)
        outputs.append(output)
        current = output
      }
      let output = current!
      let (offset, length) = try output.append(record)
      moves.append(
        Move(
          old: old,
          new: RecordLocation(
            segment: output.number, offset: UInt32(offset), length: UInt32(length)),
          isCreation: isCreation))
    }

    // Records are judged live in chunks, under one read lock per chunk: taking the lock per
    // record would hand it back and forth with a busy writer thousands of times a second.
    var pending: [(record: Record, location: RecordLocation)] = []
    func judgeAndCopy() throws(LogStoreError) {
      let verdicts = indexLock.withReadLock { pending.map { liveness($0.record, at: $0.location) } }
      for (item, verdict) in zip(pending, verdicts) {
        if let isCreation = verdict {
          try copy(item.record, from: item.location, isCreation: isCreation)
        }
      }
      pending.removeAll(keepingCapacity: true)
    }
    for input in plan.inputs {
      progress?(done, total)
      let size = plan.inputSizes[input.number] ?? 0
      done += size
      var scanner = SegmentScanner(
        bytes: UnsafeRawBufferPointer(rebasing: input.mapping.bytes[0..<size]), salt: input.salt,
        baseSequence: input.header?.baseSequence ?? 0, isLast: false)
      while let event = scanner.next() {
        if stopRequested.isSet { throw closedError() }
        guard case .record(let record, let offset) = event else {
          plan.damageSeen += 1
          continue
        }
        if record.kind == .batch {
          let valueStart = offset + record.length - record.value.count
          try RecordCodec.forEachMember(of: record, salt: input.salt, verify: false) {
            member, memberOffset throws(LogStoreError) in
            let location = RecordLocation(
              segment: input.number, offset: UInt32(valueStart + memberOffset),
              length: UInt32(member.length))
            pending.append((member, location))
          }
        } else {
          let location = RecordLocation(
            segment: input.number, offset: UInt32(offset), length: UInt32(record.length))
          pending.append((record, location))
        }
        if pending.count >= 512 { try judgeAndCopy() }
      }
      try judgeAndCopy()
    }
    progress?(total, total)
    return moves
  }

  /// Whether compaction keeps `record`: a put the index points at, or the creation record
  /// of an existing table. Returns whether it is a creation, or nil to leave it behind. Call
  /// with `indexLock` held.
  private func liveness(_ record: Record, at location: RecordLocation) -> Bool? {
    switch record.kind {
    case .put:
      let table = keys.table(String(decoding: record.table, as: UTF8.self))
      return table?.find(record.key, hash: KeyHash.hash(record.key)) == location ? false : nil
    case .createTable:
      return keys.creations[String(decoding: record.table, as: UTF8.self)] == location ? true : nil
    default:
      return nil
    }
  }

  /// Step 3: make the outputs durable under their final names. Once this returns, the
  /// compaction has happened, whatever follows.
  private func commitOutputs(_ outputs: [SegmentBuilder]) throws(LogStoreError) {
    for output in outputs { try output.finish(outputCount: UInt32(outputs.count)) }
    // Hints first: a hint without its segment is ignored (and removed) at open.
    for output in outputs {
      try fileSystem.renameFile(output.hintTemporaryPath, to: output.hintFinalPath)
    }
    for output in outputs {
      try fileSystem.renameFile(output.temporaryPath, to: output.finalPath)
    }
    try fileSystem.synchronizeDirectory(directory)
  }

  /// Step 4: point the index at the copies and retire the inputs.
  private func swapIn(outputs: [SegmentBuilder], moves: [Move], plan: Plan) throws(LogStoreError) {
    var files: [SegmentFile] = []
    for output in outputs {
      let mapping = try output.handle.map(length: max(output.size, 1), writable: false)
      files.append(
        SegmentFile(
          number: output.number, path: output.finalPath, salt: output.salt,
          header: output.header, handle: output.handle, mapping: mapping))
    }
    let inputNumbers = Set(plan.inputs.map(\.number))
    // The manifest switches to the outputs now; the inputs are deleted only once it has. If
    // it cannot be replaced, the inputs stay on disk (readers may still be told of them) and
    // the next open removes them: the compaction has happened either way.
    var manifestFailure: LogStoreError?
    writeLock.withLock {
      indexLock.withWriteLock {
        for file in files { segments[file.number] = file }
      }
      retiredSegments = inputNumbers
      do throws(LogStoreError) {
        try publishManifest(liveSegmentNumbers())
      } catch {
        manifestFailure = error
      }
    }
    // Relocate in steps so that readers and writers wait only briefly at a time.
    let step = 4096
    var start = 0
    while start < moves.count {
      let end = min(start + step, moves.count)
      writeLock.withLock {
        indexLock.withWriteLock {
          for move in moves[start..<end] {
            guard let file = segments[move.new.segment],
              let record = try? file.record(at: Int(move.new.offset), verify: false)
            else { continue }
            let table = String(decoding: record.table, as: UTF8.self)
            if move.isCreation {
              keys.relocateCreation(of: table, from: move.old, to: move.new)
            } else {
              _ = keys.table(table)?.relocate(
                record.key, hash: KeyHash.hash(record.key), from: move.old, to: move.new)
            }
          }
        }
      }
      start = end
    }
    writeLock.withLock {
      indexLock.withWriteLock {
        // A key still pointing into an input is one whose record sat in damage met while
        // copying: its value is lost; count it and forget the key.
        var lost: [(String, [UInt8])] = []
        if plan.damageSeen > 0 {
          keys.forEachLocation { table, key, location in
            if inputNumbers.contains(location.segment) { lost.append((table, Array(key))) }
          }
        }
        for (table, key) in lost {
          key.withUnsafeBytes { bytes in
            _ = keys.table(table)?.remove(bytes, hash: KeyHash.hash(bytes))
          }
        }
        damagedRecords += lost.count
        for number in inputNumbers { segments[number] = nil }
      }
      retiredSegments = []
      for number in inputNumbers {
        sealedSizes[number] = nil
        hintSizes[number] = nil
      }
      for output in outputs {
        sealedSizes[output.number] = output.size
        hintSizes[output.number] = output.hintSize
      }
      compactionRunning = false
      writeLock.broadcast()
    }
    if let manifestFailure { throw manifestFailure }
    for number in inputNumbers.sorted() {
      try fileSystem.removeFile(directory + "/" + StoreFileName.segment(number))
      try fileSystem.removeFile(directory + "/" + StoreFileName.hint(number))
    }
    try fileSystem.synchronizeDirectory(directory)
  }
}
