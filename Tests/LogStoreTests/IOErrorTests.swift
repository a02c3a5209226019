import Testing

@testable import LogStore
@testable import LogStoreTesting

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

@Suite("I/O errors")
struct IOErrorTests {
  /// Runs the crash workload with `fault` injected, checking after every operation that the
  /// store holds exactly the operations that succeeded; then clears the fault and checks the
  /// store works, and reopens with the same data.
  private func run(
    with fault: SimulatedFileSystem.Fault, sync: SyncPolicy, compactionIndex: Bool
  ) throws -> Int {
    let fileSystem = SimulatedFileSystem()
    fileSystem.inject(fault)
    let options = CrashWorkload.options(
      fileSystem, sync: sync, corruption: .fail, compactionIndex: compactionIndex)
    var model = StoreModel()
    var failures = 0
    var store: LogStore? = try? LogStore(path: CrashWorkload.path, options: options)
    if store == nil { failures += 1 }
    for operation in CrashWorkload.operations {
      if store == nil {
        // Opening failed: try again, as an application would.
        store = try? LogStore(path: CrashWorkload.path, options: options)
        if store == nil { continue }
      }
      do {
        try operation.apply(to: store!)
        #expect(!model.refuses(operation), "\(operation) should have been refused")
        model.apply(operation)
      } catch {
        if model.refuses(operation) {
          // An earlier failure left out the table this operation needs.
          #expect(error.code == .tableNotFound)
        } else {
          failures += 1
          #expect(
            error.code == .io || error.code == .diskFull,
            "\(operation) failed with \(error.code): \(error.message)")
        }
      }
      // Whatever happened, the store holds exactly the operations that succeeded.
      let state = try StoreModel.reading(store!)
      #expect(state == model, "after \(operation) with \(fault)")
    }
    // A crash right now keeps exactly the operations that succeeded: a failed write leaves
    // nothing that could come back. A power loss keeps them all only when each was synced,
    // and only if the device works again: one that keeps failing may have stored part of a
    // write whose sync failed, and the zeros written over it cannot be made durable.
    var crashes: [SimulatedFileSystem.CrashMode] = [.process]
    if sync == .always && !fault.persistent { crashes += [.power(seed: 1), .power(seed: 2)] }
    for mode in crashes {
      let crashed = try LogStore(
        path: CrashWorkload.path,
        options: CrashWorkload.options(
          SimulatedFileSystem(files: fileSystem.image(mode)), sync: sync,
          compactionIndex: compactionIndex))
      #expect(try StoreModel.reading(crashed) == model, "crash (\(mode)) after \(fault)")
    }
    fileSystem.clearFaults()
    if store == nil { store = try LogStore(path: CrashWorkload.path, options: options) }
    // After the fault clears the store works: a write, a compaction, a clean close.
    try store!.createTable("probe")
    try store!.put(Array("p".utf8), forKey: Array("k".utf8), in: "probe")
    model.apply(.createTable("probe"))
    model.apply(.put(table: "probe", key: "k", value: "p"))
    try store!.compact()
    #expect(try StoreModel.reading(store!) == model)
    try? store!.close()
    let reopened = try LogStore(path: CrashWorkload.path, options: options)
    #expect(try StoreModel.reading(reopened) == model, "after reopening, with \(fault)")
    try reopened.close()
    // And a process crash now keeps it all too.
    let image = fileSystem.image(.process)
    let recovered = try LogStore(
      path: CrashWorkload.path,
      options: CrashWorkload.options(
        SimulatedFileSystem(files: image), sync: sync, compactionIndex: compactionIndex))
    #expect(try StoreModel.reading(recovered) == model)
    return failures
  }

  /// Fails every call of the crash workload but its writes through a mapping, with each of
  /// `EIO` and `ENOSPC`, once and for good. At sample depth each call fails one of the four
  /// ways, in turn among the calls of its kind (so every kind of call meets each way); a sync,
  /// after which a power loss must find exactly what succeeded, once and for good (with `EIO`
  /// and `ENOSPC` in turn); and the first call of each kind and the last call all four.
  private func failEveryCall(sync: SyncPolicy, compactionIndex: Bool) throws -> (
    faults: Int, failures: Int
  ) {
    let reference = SimulatedFileSystem()
    _ = CrashWorkload.run(on: reference, sync: sync, compactionIndex: compactionIndex)
    // Ordered so that two in turn are one failure once and one for good.
    let ways = [(EIO, false), (EIO, true), (ENOSPC, true), (ENOSPC, false)]
    let syncs = ["msync", "fdatasync", "fsync"]
    var seen: [String: Int] = [:]
    var faults = 0
    var failures = 0
    for (index, call) in reference.log.enumerated() where call.operation != "mapped write" {
      let earlier = seen[call.operation, default: 0]
      seen[call.operation] = earlier + 1
      let isEdge = earlier == 0 || index == reference.log.count - 1
      let turn = syncs.contains(call.operation) ? 2 : ways.count
      for (way, (errorNumber, persistent)) in ways.enumerated()
      where TestDepth.runs(earlier + way, every: turn, isEdge: isEdge) {
        failures += try run(
          with: .init(call: index + 1, errorNumber: errorNumber, persistent: persistent),
          sync: sync, compactionIndex: compactionIndex)
        faults += 1
      }
    }
    return (faults, failures)
  }

  /// With `compactionIndex`, each compaction writes an index file of its outputs
  /// (``CrashWorkload/options(_:sync:corruption:compactionIndex:)``), and its calls fail too.
  @Test(
    "failing any I/O call, once or for good, loses nothing and the store recovers (sync never)",
    arguments: [false, true])
  func everyCallNever(compactionIndex: Bool) throws {
    let (faults, failures) = try failEveryCall(sync: .never, compactionIndex: compactionIndex)
    #expect(failures > 0)
    print(
      "I/O faults injected, sync never, compaction's index file: \(compactionIndex), \(TestDepth.current): \(faults); operations that failed: \(failures)"
    )
  }

  @Test(
    "failing any I/O call, once or for good, loses nothing and the store recovers (sync always)",
    arguments: [false, true])
  func everyCallAlways(compactionIndex: Bool) throws {
    let (faults, failures) = try failEveryCall(sync: .always, compactionIndex: compactionIndex)
    #expect(failures > 0)
    print(
      "I/O faults injected, sync always, compaction's index file: \(compactionIndex), \(TestDepth.current): \(faults); operations that failed: \(failures)"
    )
  }
}
