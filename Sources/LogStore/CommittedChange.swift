/// A change just committed, shown to the store's commit observer
/// (``LogStore/observeCommits(_:)``): its operations in the order they apply.
///
/// It borrows the writer's memory and is valid only during the observer's call.
package struct CommittedChange {
  let mutation: Mutation

  /// Calls `body` with each operation of the change, in order: its kind, table and key (for a
  /// `.deletePrefix`, the prefix; empty for the table operations).
  package func forEachOperation(
    _ body: (RecordKind, _ table: UnsafeRawBufferPointer, _ key: UnsafeRawBufferPointer) -> Void
  ) {
    switch mutation {
    case .single(let kind, let table, let key, _, _, _):
      body(kind, table, key)
    case .batch(let batch):
      for operation in batch.operations {
        operation.withFields { table, key, _ in body(operation.kind, table, key) }
      }
    case .puts(let puts):
      puts.table.withUTF8Bytes { table in
        puts.forEachPut { key, _, _ in body(.put, table, key) }
      }
    }
  }
}

extension LogStore {
  /// Has `observer` called with every change committed from now on, in commit order (the
  /// order the changes apply, which is the log's), after the change is applied and before
  /// its writer returns. It runs under the log's lock: it must be quick, must not block and
  /// must not call the store. One observer at a time; a second call replaces the first.
  ///
  /// A store with no observer pays one nil check per commit.
  package func observeCommits(_ observer: @escaping @Sendable (CommittedChange) -> Void) {
    engine.log.lock.withLock { engine.log.commitObserver = observer }
  }
}
