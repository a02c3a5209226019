import Testing

@testable import LogStore
@testable import LogStoreTesting

/// The writer of the reader-interleaving tests, and what a read-only open beside it may see.
///
/// A generated workload (puts and overwrites, deletes, batches, prefix deletes, table clears,
/// drops with re-creation) with a compaction every 40 operations, on segments of the minimum
/// size, so that one seals every few operations.
enum ReaderInterleaving {
  static let path = "/store"

  static let operations: [StoreOperation] = {
    var generator = WorkloadGenerator(seed: 2024, compactionEvery: 40)
    return (0..<240).map { _ in generator.next() }
  }()

  /// `states[k]` is the model after the first `k` operations.
  static let states: [StoreModel] = {
    var model = StoreModel()
    var states = [model]
    for operation in operations {
      model.apply(operation)
      states.append(model)
    }
    return states
  }()

  /// Manual compaction and no syncs, so that the workload alone decides when files change. A
  /// reader refuses damage instead of skipping it: beside a healthy writer it must meet none.
  static func options(_ fileSystem: SimulatedFileSystem, readOnly: Bool) -> LogStore.Options {
    var options = LogStore.Options(
      sync: .never, readOnly: readOnly, corruption: .fail, compaction: .manual,
      maxSegmentSize: 4 << 10)
    options.fileSystem = fileSystem
    return options
  }

  /// Something a check found wrong: `kind` groups alike problems in the summary.
  struct Problem: Error, Equatable {
    var kind: String
    var detail: String
  }

  /// Why `seen` is none of `states[allowed]`, or nil when it is one of them.
  static func mismatch(_ seen: StoreModel, allowed: ClosedRange<Int>) -> Problem? {
    guard !allowed.contains(where: { states[$0] == seen }) else { return nil }
    let nearest = allowed.min {
      differences(seen, states[$0]).count < differences(seen, states[$1]).count
    }!
    let differing = differences(seen, states[nearest])
    return Problem(
      kind: "a state that is no prefix of the writer's operations",
      detail:
        "the reader saw none of the states after \(allowed.lowerBound)...\(allowed.upperBound) "
        + "operations; against the nearest (after \(nearest)) \(differing.count) entries differ: "
        + differing.prefix(3).joined(separator: ", "))
  }

  /// The entries in which `seen` differs from `expected`, as `table/key: seen, expected`.
  static func differences(_ seen: StoreModel, _ expected: StoreModel) -> [String] {
    var result: [String] = []
    for table in Set(seen.tables.keys).union(expected.tables.keys).sorted() {
      guard let mine = seen.tables[table], let theirs = expected.tables[table] else {
        result.append("table \(table) \(seen.tables[table] == nil ? "missing" : "unexpected")")
        continue
      }
      for key in Set(mine.keys).union(theirs.keys).sorted() where mine[key] != theirs[key] {
        let got = mine[key].map { "\"\($0.text.prefix(10))\"" } ?? "nothing"
        let wanted = theirs[key].map { "\"\($0.text.prefix(10))\"" } ?? "nothing"
        result.append("\(table)/\(key): \(got), not \(wanted)")
      }
    }
    return result
  }

  static func openFailure(_ error: LogStoreError) -> Problem {
    Problem(kind: "the read-only open failed (\(error.code))", detail: error.message)
  }

  static func readFailure(_ error: LogStoreError) -> Problem {
    Problem(kind: "reading the open store failed (\(error.code))", detail: error.message)
  }

  /// A store opened read-only and read in full, and what it held.
  struct OpenedReader: Sendable {
    var store: LogStore
    var view: StoreModel
  }

  /// Opens the store read-only and reads all of it: the open store, or what went wrong (for
  /// instance, that it held none of `states[allowed]`; it is closed then).
  static func openReader(on fileSystem: SimulatedFileSystem, allowed: ClosedRange<Int>)
    -> Result<OpenedReader, Problem>
  {
    let reader: LogStore
    do {
      reader = try LogStore(path: path, options: options(fileSystem, readOnly: true))
    } catch {
      return .failure(openFailure(error))
    }
    do {
      let view = try StoreModel.reading(reader)
      if let mismatch = mismatch(view, allowed: allowed) {
        try? reader.close()
        return .failure(mismatch)
      }
      return .success(OpenedReader(store: reader, view: view))
    } catch {
      try? reader.close()
      return .failure(readFailure(error))
    }
  }

  /// Reads `reader` again (when what it held, `view`, is known) and closes it: what went
  /// wrong since it was opened, if anything. A read-only store holds what it held when it was
  /// opened, and no file may have been cut under its mappings since (`cutsBefore` is the
  /// number of ``SimulatedFileSystem/mappingViolations`` then; `cutter` says who made them).
  static func close(
    _ reader: LogStore, expecting view: StoreModel?, on fileSystem: SimulatedFileSystem,
    cutsBefore: Int, by cutter: String
  ) -> [Problem] {
    var problems: [Problem] = []
    if let view {
      do {
        let again = try StoreModel.reading(reader)
        if again != view {
          problems.append(
            Problem(
              kind: "a read-only store whose data changed while it was open",
              detail: differences(again, view).prefix(3).joined(separator: ", ")))
        }
      } catch {
        problems.append(readFailure(error))
      }
    }
    try? reader.close()
    for cut in fileSystem.mappingViolations.dropFirst(cutsBefore) {
      problems.append(
        Problem(kind: "a file cut under a read-only mapping by \(cutter)", detail: cut))
    }
    return problems
  }

  /// Counts of each kind of problem, then the first example of each: for failure messages.
  static func summary(_ problems: [Problem]) -> String {
    var kinds: [String] = []
    var counts: [String: Int] = [:]
    var examples: [String: String] = [:]
    for problem in problems {
      if counts[problem.kind] == nil { kinds.append(problem.kind) }
      counts[problem.kind, default: 0] += 1
      if examples[problem.kind] == nil { examples[problem.kind] = problem.detail }
    }
    return kinds.map { "\(counts[$0]!) × \($0); first: \(examples[$0]!)" }
      .joined(separator: "\n")
  }

  /// Every call the writer makes when it runs the whole workload alone, with the operation in
  /// progress: 0 while it opens, `k` during operation `k` (1-based), `count + 1` while it closes.
  static func writerCalls() throws -> [(operation: Int, call: SimulatedFileSystem.UpcomingCall)] {
    let fileSystem = SimulatedFileSystem()
    let recorder = WriterRecorder()
    fileSystem.callHook = { call in
      recorder.state.withLock { $0.calls.append(($0.operation, call)) }
    }
    let writer = try LogStore(path: path, options: options(fileSystem, readOnly: false))
    for (index, operation) in operations.enumerated() {
      recorder.state.withLock { $0.operation = index + 1 }
      try operation.apply(to: writer)
    }
    recorder.state.withLock { $0.operation = operations.count + 1 }
    try writer.close()
    return recorder.state.withLock { $0.calls }
  }
}

/// The operation in progress and the calls seen, for a writer running alone.
private final class WriterRecorder: Sendable {
  struct State {
    var operation = 0
    var calls: [(operation: Int, call: SimulatedFileSystem.UpcomingCall)] = []
  }
  let state = Guarded(State())
}

/// Test A's side of the hook: before each call of the writer, a whole read-only open of the
/// store, checked, which stays open while the writer makes that call and is checked again
/// before the next one (so that a file cut under its mappings shows). The reader's own calls
/// reach the hook too and are let through.
private final class WriterStepProbe: Sendable {
  struct State {
    /// The writer's operation in progress, numbered as in `ReaderInterleaving.writerCalls()`.
    var operation = 0
    var readerRunning = false
    var calls: [(operation: Int, call: SimulatedFileSystem.UpcomingCall)] = []
    var problems: [ReaderInterleaving.Problem] = []
    /// The last reader, open until the writer's next call: where it was opened, and the
    /// number of cuts under read-only mappings then.
    var held: (reader: ReaderInterleaving.OpenedReader, label: String, cutsBefore: Int)?
  }
  let state = Guarded(State())
  let fileSystem: SimulatedFileSystem

  init(fileSystem: SimulatedFileSystem) { self.fileSystem = fileSystem }

  func begin(operation: Int) { state.withLock { $0.operation = operation } }

  func writerWillCall(_ call: SimulatedFileSystem.UpcomingCall) {
    let operation = state.withLock { state -> Int? in
      guard !state.readerRunning else { return nil }
      state.readerRunning = true
      state.calls.append((state.operation, call))
      return state.operation
    }
    guard let operation else { return }
    closeHeldReader(cutter: "the writer's next call")
    let count = ReaderInterleaving.operations.count
    let during =
      operation == 0
      ? "the writer's open"
      : operation > count
        ? "the writer's close"
        : "operation \(operation) (\(ReaderInterleaving.operations[operation - 1]))"
    let label = "before \(call) during \(during)"
    let allowed = max(0, operation - 1)...min(operation, count)
    let cutsBefore = fileSystem.mappingViolations.count
    var problem: ReaderInterleaving.Problem?
    if operation == 0 && !fileSystem.directoryExists(ReaderInterleaving.path) {
      // Before the writer creates the directory there is no store to open.
      do {
        let reader = try LogStore(
          path: ReaderInterleaving.path,
          options: ReaderInterleaving.options(fileSystem, readOnly: true))
        try? reader.close()
        problem = .init(kind: "an open of a missing store", detail: "it succeeded")
      } catch {
        if error.code != .storeNotFound { problem = ReaderInterleaving.openFailure(error) }
      }
    } else {
      switch ReaderInterleaving.openReader(on: fileSystem, allowed: allowed) {
      case .success(let reader): state.withLock { $0.held = (reader, label, cutsBefore) }
      case .failure(let failure): problem = failure
      }
    }
    state.withLock { state in
      if var problem {
        problem.detail = "\(label): \(problem.detail)"
        state.problems.append(problem)
      }
      state.readerRunning = false
    }
  }

  /// Reads the last reader again, closes it and checks nothing was cut under its mappings.
  func closeHeldReader(cutter: String) {
    guard
      let held = state.withLock({ state in
        defer { state.held = nil }
        return state.held
      })
    else { return }
    var problems = ReaderInterleaving.close(
      held.reader.store, expecting: held.reader.view, on: fileSystem, cutsBefore: held.cutsBefore,
      by: cutter)
    for index in problems.indices {
      problems[index].detail = "opened \(held.label): \(problems[index].detail)"
    }
    state.withLock { $0.problems += problems }
  }
}

/// Test B's two threads, which take turns: the writer runs on a thread of its own and stops at
/// its pause point and again after its chunk of operations; the reader runs on the test's
/// thread and hands the turn over during its open. Only one of them runs at any moment, so the
/// hook knows whose call it sees from whose turn it is.
private final class TurnTaking: Sendable {
  enum Turn {
    case writer
    case reader
  }

  /// Whose turn it is, behind a pthread mutex and condition variable, whose ordering the thread
  /// sanitizer understands.
  private final class Baton: @unchecked Sendable {
    // `holder` is only touched with `lock` held.
    private let lock = ConditionLock()
    private var holder = Turn.writer

    var current: Turn { lock.withLock { holder } }

    func give(to next: Turn) {
      lock.withLock {
        holder = next
        lock.broadcast()
      }
    }

    func waitForTurn(_ mine: Turn) {
      lock.withLock {
        while holder != mine { lock.wait() }
      }
    }
  }

  struct State {
    /// The writer stops before its `pauseCall`-th call in operation `pauseOperation` (0-based);
    /// before the operation starts when `pauseCall` is 0.
    let pauseOperation: Int
    let pauseCall: Int
    /// The reader hands the turn over before the `resumeCall`-th call of its open.
    let resumeCall: Int
    var operation = -1
    /// The writer's calls in operation `pauseOperation`, all of them once it is done.
    var operationCalls: [SimulatedFileSystem.UpcomingCall] = []
    /// The writer has paused once: at its pause point, or after its chunk if it never got
    /// there (`pausedInOperation` says which).
    var paused = false
    var pausedInOperation = false
    /// The reader's open is running, has made `readerCalls` calls, and has handed the turn
    /// over to the writer.
    var readerOpening = false
    var readerCalls = 0
    var handedOver = false
    /// The calls before which the writer paused and the reader handed over, for messages.
    var writerPausedBefore: SimulatedFileSystem.UpcomingCall?
    var readerHandedOverBefore: SimulatedFileSystem.UpcomingCall?
    var writerProblems: [ReaderInterleaving.Problem] = []
  }

  let state: Guarded<State>
  private let baton = Baton()

  init(pauseOperation: Int, pauseCall: Int, resumeCall: Int) {
    state = Guarded(
      State(pauseOperation: pauseOperation, pauseCall: pauseCall, resumeCall: resumeCall))
  }

  /// On the writer's thread: gives the turn to the reader and waits for it to come back.
  func writerWaits() {
    baton.give(to: .reader)
    baton.waitForTurn(.writer)
  }

  /// On the writer's thread, last: gives the turn to the reader for good.
  func writerFinishes() { baton.give(to: .reader) }

  /// On the reader's thread: gives the turn to the writer and waits for it to come back.
  func readerWaits() {
    baton.give(to: .writer)
    baton.waitForTurn(.reader)
  }

  /// On the reader's thread, first: waits for the writer to reach its pause point.
  func readerStarts() { baton.waitForTurn(.reader) }

  /// The writer starts operation `index`; true when it is to pause before it.
  func begin(operation index: Int) -> Bool {
    state.withLock { state in
      state.operation = index
      guard index == state.pauseOperation, state.pauseCall == 0, !state.paused else {
        return false
      }
      state.paused = true
      state.pausedInOperation = true
      return true
    }
  }

  /// The writer is done with its chunk; true when it never paused (its pause call was past
  /// the operation's last call) and is to pause now instead.
  func pauseIfNotYet() -> Bool {
    state.withLock { state in
      defer { state.paused = true }
      return !state.paused
    }
  }

  func note(_ problem: ReaderInterleaving.Problem) {
    state.withLock { $0.writerProblems.append(problem) }
  }

  /// The reader's open is about to start (`true`) or has returned (`false`).
  func readerOpening(_ opening: Bool) {
    state.withLock { $0.readerOpening = opening }
  }

  func willCall(_ call: SimulatedFileSystem.UpcomingCall) {
    enum Action {
      case none
      case writerPauses
      case readerHandsOver
    }
    let turn = baton.current
    let action = state.withLock { state -> Action in
      switch turn {
      case .writer:
        guard state.operation == state.pauseOperation else { return .none }
        state.operationCalls.append(call)
        guard !state.paused, state.operationCalls.count == state.pauseCall else { return .none }
        state.paused = true
        state.pausedInOperation = true
        state.writerPausedBefore = call
        return .writerPauses
      case .reader:
        guard state.readerOpening, !state.handedOver else { return .none }
        state.readerCalls += 1
        guard state.readerCalls == state.resumeCall else { return .none }
        state.handedOver = true
        state.readerHandedOverBefore = call
        return .readerHandsOver
      }
    }
    switch action {
    case .none: break
    case .writerPauses: writerWaits()
    case .readerHandsOver: readerWaits()
    }
  }
}

@Suite("Read-only opens beside a writer")
struct ReaderInterleavingTests {
  typealias Problem = ReaderInterleaving.Problem

  @Test("the simulated file system runs the call hook before every call, numbered as in its log")
  func callHook() throws {
    let fileSystem = SimulatedFileSystem()
    let seen = Guarded<[SimulatedFileSystem.UpcomingCall]>([])
    fileSystem.callHook = { call in
      seen.withLock { $0.append(call) }
      // The hook may use the file system itself: it runs outside its lock.
      if call.operation == "unlink" { _ = try? fileSystem.contentsOfDirectory("/d") }
    }
    try fileSystem.createDirectory("/d")
    let handle = try fileSystem.openFile("/d/f", mode: .createOrOpen)
    try [UInt8](repeating: 1, count: 8).withUnsafeBytes { try handle.write($0, at: 0) }
    let mapping = try handle.map(length: 64, writable: true)
    mapping.write(at: 8, count: 4) { $0.initializeMemory(as: UInt8.self, repeating: 2) }
    handle.close()
    try fileSystem.removeFile("/d/f")
    fileSystem.callHook = nil

    let calls = seen.withLock { $0 }
    #expect(
      calls.map(\.operation) == [
        "mkdir", "open", "pwrite", "mmap", "mapped write", "close", "unlink", "opendir",
      ])
    #expect(calls.map(\.number) == [1, 2, 3, 4, 5, nil, 6, 7])
    #expect(calls.first { $0.operation == "mapped write" }?.count == 4)
    #expect(fileSystem.log.map(\.operation) == calls.filter { $0.number != nil }.map(\.operation))
  }

  @Test(
    "the simulated file system records a file cut under a read-only mapping, not a writable one")
  func cutsUnderMappings() throws {
    let fileSystem = SimulatedFileSystem(files: [
      "/d/read": [UInt8](repeating: 1, count: 100), "/d/write": [UInt8](repeating: 2, count: 100),
    ])
    let reader = try fileSystem.openFile("/d/read", mode: .readOnly)
    let readMapping = try reader.map(length: 100, writable: false)
    let cutter = try fileSystem.openFile("/d/read", mode: .readWrite)
    // Growing the file moves its simulated storage; the mapping follows.
    try cutter.allocate(upTo: 300)
    try cutter.truncate(to: 150)
    #expect(fileSystem.mappingViolations.isEmpty)
    #expect(readMapping.bytes[99] == 1)
    try cutter.truncate(to: 40)
    #expect(
      fileSystem.mappingViolations == [
        "call 6: ftruncate cut /d/read from 150 to 40 bytes under a read-only mapping of 100 bytes"
      ])

    let writer = try fileSystem.openFile("/d/write", mode: .readWrite)
    let writeMapping = try writer.map(length: 4096, writable: true)
    try writer.truncate(to: 10)
    #expect(fileSystem.mappingViolations.count == 1)
    withExtendedLifetime((readMapping, writeMapping)) {}
  }

  @Test("the workload seals segments often and compacts several times")
  func workloadCoverage() throws {
    let calls = try ReaderInterleaving.writerCalls()
    let operations = ReaderInterleaving.operations
    var model = StoreModel()
    for operation in operations {
      #expect(!model.refuses(operation), "\(operation) would be refused")
      model.apply(operation)
    }
    let coverage = Coverage(calls, operationCount: operations.count)
    #expect(coverage.seals >= 8, "\(coverage)")
    #expect(coverage.compactionsRenaming >= 3, "\(coverage)")
    #expect(coverage.compactionsUnlinking >= 3, "\(coverage)")
    print("reader interleavings, writer workload: \(coverage)")
  }

  /// What the writer's calls did, as far as a reader cares.
  struct Coverage: CustomStringConvertible {
    var calls: Int
    /// Segments started because a write did not fit (not by a compaction): each one sealed
    /// the segment before it.
    var seals: Int
    /// Compactions that renamed their outputs into place, and that deleted their inputs.
    var compactionsRenaming: Int
    var compactionsUnlinking: Int

    init(_ calls: [(operation: Int, call: SimulatedFileSystem.UpcomingCall)], operationCount: Int) {
      let operations = ReaderInterleaving.operations
      func isCompaction(_ operation: Int) -> Bool {
        (1...operationCount).contains(operation) && operations[operation - 1] == .compact
      }
      self.calls = calls.count
      seals =
        calls.filter {
          (1...operationCount).contains($0.operation) && !isCompaction($0.operation)
            && $0.call.operation == "open" && $0.call.path.hasSuffix(".log")
        }.count
      compactionsRenaming =
        Set(
          calls.filter { isCompaction($0.operation) && $0.call.operation == "rename" }.map(
            \.operation)
        ).count
      compactionsUnlinking =
        Set(
          calls.filter { isCompaction($0.operation) && $0.call.operation == "unlink" }.map(
            \.operation)
        ).count
    }

    var description: String {
      "\(calls) writer calls, \(seals) segments sealed by writes, \(compactionsRenaming) compactions "
        + "renaming outputs, \(compactionsUnlinking) deleting inputs"
    }
  }

  @Test("a read-only open at any call of the writer succeeds and sees a prefix of its operations")
  func readerAtEveryWriterCall() throws {
    let fileSystem = SimulatedFileSystem()
    let probe = WriterStepProbe(fileSystem: fileSystem)
    fileSystem.callHook = { probe.writerWillCall($0) }
    let operations = ReaderInterleaving.operations
    let states = ReaderInterleaving.states
    var writerProblems: [String] = []
    let writer = try LogStore(
      path: ReaderInterleaving.path,
      options: ReaderInterleaving.options(fileSystem, readOnly: false))
    for (index, operation) in operations.enumerated() {
      probe.begin(operation: index + 1)
      do {
        try operation.apply(to: writer)
      } catch {
        writerProblems.append("operation \(index + 1) (\(operation)) failed: \(error.message)")
      }
      // The readers change nothing the writer sees.
      let seen = try StoreModel.reading(writer)
      if seen != states[index + 1] {
        writerProblems.append("after operation \(index + 1) the writer holds \(seen)")
      }
    }
    probe.begin(operation: operations.count + 1)
    try writer.close()
    fileSystem.callHook = nil
    probe.closeHeldReader(cutter: "the writer's last call")

    // After the workload, a reader and the writer reopened both see all of it.
    switch ReaderInterleaving.openReader(
      on: fileSystem, allowed: operations.count...operations.count)
    {
    case .success(let reader): try reader.store.close()
    case .failure(let problem): Issue.record("after the workload: \(problem.detail)")
    }
    let reopened = try LogStore(
      path: ReaderInterleaving.path,
      options: ReaderInterleaving.options(fileSystem, readOnly: false))
    #expect(try StoreModel.reading(reopened) == states.last!)
    try reopened.close()

    let (calls, problems) = probe.state.withLock { ($0.calls, $0.problems) }
    let writerProblemCount = writerProblems.count
    #expect(writerProblemCount == 0, "\(writerProblems.joined(separator: "\n"))")
    let problemCount = problems.count
    #expect(
      problemCount == 0,
      "\(problemCount) of \(calls.count) read-only opens went wrong:\n\(ReaderInterleaving.summary(problems))"
    )
    let violations = fileSystem.mappingViolations
    let violationCount = violations.count
    #expect(
      violationCount == 0,
      "\(violationCount) cuts under a read-only mapping; first: \(violations.first ?? "")")
    let coverage = Coverage(calls, operationCount: operations.count)
    print(
      "reader opens checked: \(calls.count) at writer steps (\(coverage)); \(problems.count) went wrong"
    )
  }

  /// Where the writer of the test below starts, pauses and stops.
  struct Pause {
    /// The writer opens a copy of the files the first `start` operations left, and goes on
    /// from there: cheaper than replaying them all for every interleaving.
    var start: Int
    /// It pauses before call `call` (1-based) of operation `operation` (0-based), or before
    /// the operation when `call` is 0.
    var operation: Int
    var call: Int
    /// The number of operations done when its chunk ends.
    var chunkEnd: Int

    /// Where the writer paused, given the call it paused before, for messages.
    func describe(pausedBefore paused: SimulatedFileSystem.UpcomingCall?) -> String {
      let step =
        call == 0
        ? "before operation"
        : "at call \(call)" + (paused.map { " (\($0.operation) \($0.path))" } ?? "")
          + " of operation"
      return
        "the writer paused \(step) \(operation + 1) (\(ReaderInterleaving.operations[operation]))"
    }
  }

  /// What one interleaving of the test below found.
  struct Run {
    var problems: [Problem]
    /// Whether the reader's open made the call before which it was to hand over.
    var handedOver: Bool
    /// Whether the writer made the call before which it was to pause.
    var pausedInOperation: Bool
    /// The writer's calls in the operation it paused in.
    var operationCalls: [SimulatedFileSystem.UpcomingCall]
  }

  /// The tally of the test below.
  struct Tally {
    var inside = 0
    var before = 0
    var pauses = 0
    var problems: [Problem] = []
  }

  /// Operations the writer runs after opening its copy of the files and before its pause:
  /// enough to be a writer that has been writing (its active segment grown ahead of its data).
  static let lead = 3

  @Test(
    "a read-only open during which the writer seals, compacts and deletes files succeeds and sees a prefix of its operations"
  )
  func writerInsideReaderOpen() throws {
    let reference = try ReaderInterleaving.writerCalls()
    let operations = ReaderInterleaving.operations
    var images: [Int: [String: [UInt8]]] = [:]
    var tally = Tally()
    var compactions = 0
    for (index, operation) in operations.enumerated() where operation == .compact {
      compactions += 1
      let chunkEnd = min(index + 2, operations.count)
      // From before the last write that sealed a segment, through the compaction and the
      // operation after it.
      let sealing = reference.last {
        (1...index).contains($0.operation) && operations[$0.operation - 1] != .compact
          && $0.call.operation == "open" && $0.call.path.hasSuffix(".log")
      }
      if let sealing {
        let pause = Pause(
          start: max(0, sealing.operation - 1 - Self.lead), operation: sealing.operation - 1,
          call: 0, chunkEnd: chunkEnd)
        _ = try Self.readEverywhere(across: pause, images: &images, tally: &tally)
      }
      // From inside the first two compactions (the first compacts segments sealed by writes,
      // the second also the first one's outputs, with their hint files): the rest of it and
      // the operation after it. The writer pauses before its first call, and after each call
      // that changes what a reader finds; a pause after any other call would leave the reader
      // the same files as the pause before it, and the writer (which no read-only open can
      // influence) the same calls to make, so it would repeat an interleaving already checked.
      guard compactions <= 2 else { continue }
      func pause(before call: Int) -> Pause {
        Pause(start: max(0, index - Self.lead), operation: index, call: call, chunkEnd: chunkEnd)
      }
      // At sample depth, the first and the last of those pauses and every fourth between.
      let calls = try #require(
        try Self.readEverywhere(across: pause(before: 1), images: &images, tally: &tally))
      let changing = calls.indices.dropLast().filter { Self.changesWhatReadersSee(calls[$0]) }
      for (number, position) in changing.enumerated()
      where TestDepth.runs(number + 1, every: 4, isEdge: position == changing.last) {
        let reached = try Self.readEverywhere(
          across: pause(before: position + 2), images: &images, tally: &tally)
        #expect(
          reached != nil,
          "never reached: \(pause(before: position + 2).describe(pausedBefore: nil))")
      }
      #expect(changing.count + 1 >= 10, "the compaction of operation \(index + 1): \(calls)")
    }
    let problemCount = tally.problems.count
    #expect(
      problemCount == 0,
      "\(problemCount) problems in \(tally.inside + tally.before) read-only opens:\n\(ReaderInterleaving.summary(tally.problems))"
    )
    print(
      "reader opens checked, \(TestDepth.current): \(tally.inside) with the writer running "
        + "inside reader steps, \(tally.before) opened before it ran, at \(tally.pauses) writer "
        + "pause points; "
        + "\(problemCount) problems")
  }

  /// Runs the interleavings of `pause` with every call of the reader's open; returns the
  /// writer's calls in the operation it paused in, or nil if it never reached its pause point.
  @discardableResult
  private static func readEverywhere(
    across pause: Pause, images: inout [Int: [String: [UInt8]]], tally: inout Tally
  ) throws -> [SimulatedFileSystem.UpcomingCall]? {
    if images[pause.start] == nil {
      let fileSystem = SimulatedFileSystem()
      let writer = try LogStore(
        path: ReaderInterleaving.path,
        options: ReaderInterleaving.options(fileSystem, readOnly: false))
      for operation in ReaderInterleaving.operations.prefix(pause.start) {
        try operation.apply(to: writer)
      }
      try writer.close()
      images[pause.start] = fileSystem.files
    }
    let image = images[pause.start]!
    var resumeCall = 1
    var calls: [SimulatedFileSystem.UpcomingCall] = []
    while true {
      guard resumeCall <= 10_000 else {
        tally.problems.append(
          Problem(
            kind: "a read-only open that does not end",
            detail: "\(pause.describe(pausedBefore: nil)): over 10 000 calls"))
        break
      }
      let run = readAcross(pause, image: image, resumeCall: resumeCall)
      guard run.pausedInOperation else { return nil }
      calls = run.operationCalls
      tally.problems += run.problems
      guard run.handedOver else {
        // The open ended before its `resumeCall`-th call: every call of it has been tried.
        // This last run still checked an open made before the chunk and read after it.
        tally.before += 1
        break
      }
      tally.inside += 1
      resumeCall += 1
    }
    tally.pauses += 1
    return calls
  }

  /// Whether a call of the writer can change what a read-only open finds: the files' names,
  /// sizes or bytes. Writes to files named `*.tmp` (compaction's outputs before their rename)
  /// do not count: the engine ignores such files when it opens a store. Reads, syncs
  /// (the page cache is what a reader sees), `mmap`, `close` and `madvise` change nothing.
  static func changesWhatReadersSee(_ call: SimulatedFileSystem.UpcomingCall) -> Bool {
    switch call.operation {
    case "rename", "unlink", "mkdir", "flock": true
    case "open", "pwrite", "ftruncate", "posix_fallocate", "mapped write":
      !call.path.hasSuffix(StoreFileName.temporarySuffix)
    default: false
    }
  }

  /// One interleaving: on a thread of its own the writer opens a copy of `image` and runs the
  /// workload until its pause point; a read-only open starts, and before its `resumeCall`-th
  /// call the writer runs on to the end of its chunk. The reader's open must succeed and hold
  /// the state after some number of operations between the pause and the chunk's end; after
  /// the writer has closed the store too, it must hold the same; and no file may have been
  /// cut under its mappings.
  private static func readAcross(_ pause: Pause, image: [String: [UInt8]], resumeCall: Int)
    -> Run
  {
    let fileSystem = SimulatedFileSystem(files: image)
    let turns = TurnTaking(
      pauseOperation: pause.operation, pauseCall: pause.call, resumeCall: resumeCall)
    fileSystem.callHook = { turns.willCall($0) }
    let writer = BackgroundThread {
      runWriter(on: fileSystem, turns: turns, operations: pause.start..<pause.chunkEnd)
      turns.writerFinishes()
    }
    writer.start()
    turns.readerStarts()

    var problems: [Problem] = []
    turns.readerOpening(true)
    let opened = Result { () throws(LogStoreError) -> LogStore in
      try LogStore(
        path: ReaderInterleaving.path,
        options: ReaderInterleaving.options(fileSystem, readOnly: true))
    }
    turns.readerOpening(false)
    let handedOver = turns.state.withLock { $0.handedOver }
    if !handedOver {
      // The open ended first: the writer runs its chunk now, before the reader reads.
      turns.readerWaits()
    }
    var firstView: StoreModel?
    switch opened {
    case .failure(let error):
      problems.append(ReaderInterleaving.openFailure(error))
    case .success(let reader):
      do {
        let seen = try StoreModel.reading(reader)
        firstView = seen
        if let mismatch = ReaderInterleaving.mismatch(
          seen, allowed: pause.operation...pause.chunkEnd)
        {
          problems.append(mismatch)
        }
      } catch {
        problems.append(ReaderInterleaving.readFailure(error))
      }
    }
    let cuts = fileSystem.mappingViolations
    for cut in cuts {
      problems.append(
        Problem(
          kind: "a file cut under a read-only mapping by the writer's operations", detail: cut))
    }
    // The writer closes the store while the reader keeps it open.
    turns.readerWaits()
    writer.join()
    if case .success(let reader) = opened {
      problems += ReaderInterleaving.close(
        reader, expecting: firstView, on: fileSystem, cutsBefore: cuts.count,
        by: "the writer's close")
    }
    fileSystem.callHook = nil
    let state = turns.state.withLock { $0 }
    problems += state.writerProblems
    let pausePoint = pause.describe(pausedBefore: state.writerPausedBefore)
    let when =
      handedOver
      ? "at the reader's call \(resumeCall)"
        + (state.readerHandedOverBefore.map { " (\($0.operation) \($0.path))" } ?? "")
      : "after the reader's open"
    for index in problems.indices {
      problems[index].detail =
        "\(pausePoint); \(when) it ran to the end of operation \(pause.chunkEnd): "
        + problems[index].detail
    }
    return Run(
      problems: problems, handedOver: handedOver, pausedInOperation: state.pausedInOperation,
      operationCalls: state.operationCalls)
  }

  /// The writer's thread: opens the store and runs `operations` of the workload with the
  /// pauses `turns` asks for, a last pause after them, then closes it.
  private static func runWriter(
    on fileSystem: SimulatedFileSystem, turns: TurnTaking, operations range: Range<Int>
  ) {
    let operations = ReaderInterleaving.operations
    let opened = Result { () throws(LogStoreError) -> LogStore in
      try LogStore(
        path: ReaderInterleaving.path,
        options: ReaderInterleaving.options(fileSystem, readOnly: false))
    }
    if case .failure(let error) = opened {
      turns.note(Problem(kind: "the writer failed", detail: "its open: \(error.message)"))
    }
    for index in range {
      if turns.begin(operation: index) { turns.writerWaits() }
      guard case .success(let store) = opened else { continue }
      do {
        try operations[index].apply(to: store)
        guard index + 1 == range.upperBound else { continue }
        // The reader changes nothing the writer sees.
        let seen = try StoreModel.reading(store)
        if seen != ReaderInterleaving.states[index + 1] {
          turns.note(
            Problem(
              kind: "the writer failed",
              detail: "after operation \(index + 1) it holds the wrong state"))
        }
      } catch {
        turns.note(
          Problem(
            kind: "the writer failed",
            detail: "operation \(index + 1) (\(operations[index])): \(error.message)"))
      }
    }
    if turns.pauseIfNotYet() { turns.writerWaits() }
    // The chunk is done: the reader reads, then gives the turn back for the close.
    turns.writerWaits()
    if case .success(let store) = opened {
      do {
        try store.close()
      } catch {
        turns.note(Problem(kind: "the writer failed", detail: "its close: \(error.message)"))
      }
    }
  }
}
