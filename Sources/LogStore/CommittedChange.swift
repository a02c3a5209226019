/// A change just committed, shown to the store's commit observer
/// (``LogStore/observeCommits(_:)``): its operations in the order they apply.
///
/// A change of this open comes from the writer's memory; in `.manyProcesses` use, one of
/// another process from the record this process read from the log. Either is valid only
/// during the observer's call.
package struct CommittedChange {
  private enum Source {
    case written(Mutation)
    case logged(Record, offset: Int, file: SegmentFile)
    case gap
  }

  private let source: Source

  init(mutation: Mutation) { source = .written(mutation) }

  /// A change another process committed, as read from the log: `record` at `offset` of `file`.
  init(logged record: Record, at offset: Int, of file: SegmentFile) {
    source = .logged(record, offset: offset, file: file)
  }

  /// Changes were committed (by another process) that this one could not read in order: a
  /// compaction there took them out of the log before this process looked, or they were
  /// damaged. The observer's later changes follow the gap.
  static var gap: CommittedChange { CommittedChange(source: .gap) }

  private init(source: Source) { self.source = source }

  /// Whether changes are missing here (``gap``): whoever follows the changes must read the
  /// store again.
  package var missesChanges: Bool {
    if case .gap = source { return true }
    return false
  }

  /// Calls `body` with each operation of the change, in order: its kind, table and key (for a
  /// `.deletePrefix`, the prefix; empty for the table operations).
  package func forEachOperation(
    _ body: (RecordKind, _ table: UnsafeRawBufferPointer, _ key: UnsafeRawBufferPointer) -> Void
  ) {
    switch source {
    case .written(.single(let kind, let table, let key, _, _, _)):
      body(kind, table, key)
    case .written(.batch(let batch)):
      for operation in batch.pointee.operations {
        operation.withFields { table, key, _ in body(operation.kind, table, key) }
      }
    case .written(.puts(let puts)):
      puts.pointee.table.withUTF8Bytes { table in
        puts.pointee.forEachPut { key, _, _ in body(.put, table, key) }
      }
    case .logged(let record, let offset, let file):
      guard record.kind == .batch else {
        body(record.kind, record.table, record.key)
        return
      }
      // Its members were checked when the record was applied.
      try? file.forEachMember(of: record, at: offset) { member, _ in
        body(member.kind, member.table, member.key)
      }
    case .gap:
      break
    }
  }
}

extension LogStore {
  /// Has `observer` called with every change committed from now on, in commit order (the
  /// order the changes apply, which is the log's), after the change is applied and before
  /// its writer returns. It runs under the log's lock: it must be quick, must not block and
  /// must not call the store. One observer at a time; a second call replaces the first.
  ///
  /// In `.manyProcesses` use it also hears of the changes other processes commit, in commit
  /// order, soon after they do (a thread of this open watches for them from the first call
  /// until the store closes), and of a ``CommittedChange/gap`` where some could not be read.
  ///
  /// A store with no observer pays one nil check per commit.
  package func observeCommits(_ observer: @escaping @Sendable (CommittedChange) -> Void) {
    engine.log.lock.withLock { engine.log.commitObserver = observer }
    engine.watchOtherProcesses()
  }

  /// Runs `body` with the log's lock held, once this open has caught up on every change
  /// committed before the call (in `.manyProcesses` use, those of other processes, and its
  /// own writes that left the catching up for later), so that the commit observer heard of
  /// them before `body` and hears of every later one after it: for a follower of the changes
  /// that starts now and wants none from before. `body` must be quick and must not call the
  /// store.
  ///
  /// Catching up may fail (the store closing, a damaged shared state): `body` runs anyway, and
  /// the next call reports the error.
  package func afterChangesSoFar<R>(_ body: () -> R) -> R {
    // Most of the catching up without the lock, as every call does (and a follower that has
    // not found the shared state yet looks for it); then what was published meanwhile.
    try? engine.sharing?.followOthers()
    return engine.log.lock.withLock {
      try? engine.sharing?.followOthersHoldingLock()
      return body()
    }
  }
}
