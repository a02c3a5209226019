import LogStore

/// One change committed to a table, as ``KeyValueStore/changes(in:)`` delivers it.
public enum KeyValueChange: Sendable, Hashable {
  /// A value was put under `id` (one per id of a batch put, in the order of the ids' bytes).
  case put(id: String)
  /// `delete(id:)` or `delete(ids:)`: the ids as given, whether or not they existed.
  case deleted(ids: [String])
  /// `delete(prefix:)` with this prefix.
  case deletedPrefix(String)
  /// `clearTable`.
  case cleared
  /// `dropTable`; the stream ends after it.
  case dropped
}

extension KeyValueStore {
  /// The changes committed to `table` through this store from now on, one per call that
  /// changes it, in commit order: the order in which they apply, also between threads.
  ///
  /// ```swift
  /// let changes = store.changes(in: "users")
  /// Task {
  ///   for await change in changes {
  ///     if case .put(let id) = change { await model.reload(id) }
  ///   }
  /// }
  /// ```
  ///
  /// Writers do not wait for consumers: changes are buffered, up to
  /// ``changeBufferLimit`` per stream. A consumer that falls further behind than that gets
  /// the buffered changes and then the end of the stream (its `for await` loop ends), never
  /// a stream with a change missing in the middle; read the table again and ask for a new
  /// stream. The stream also ends after `.dropped`, and when the store closes. Ending the
  /// consuming task, or dropping the stream, unsubscribes it.
  ///
  /// A table that does not exist yet is no error: its changes arrive once it is created.
  ///
  /// In ``StoreSharing/oneProcess`` use, the changes are those made through this
  /// `KeyValueStore` (and its ``logStore``). In ``StoreSharing/manyProcesses`` use, they are
  /// also those other processes commit, in the one commit order of all processes, delivered
  /// without a call of this process: from the first `changes(in:)` until the store closes, a
  /// thread of this store waits for them (on Apple platforms a `notify(3)` notification that
  /// each write posts; on Linux it looks at the store's shared state every 5 ms). When changes
  /// of another process cannot be read in order (a compaction there took them out of the log
  /// before this process looked), every stream ends after the changes before them, as when a
  /// consumer falls behind: read the tables again and ask for new streams.
  public func changes(in table: String) -> AsyncStream<KeyValueChange> {
    changeStreams.installOnce {
      logStore.observeCommits { [changeStreams] change in changeStreams.publish(change) }
    }
    // In `.manyProcesses` use the view follows the others (and its own writes made before
    // there was a stream) at the next call or catch-up, which publishes what it applies: the
    // stream starts once everything committed so far was published, else it would be handed
    // changes from before it was asked for.
    return logStore.afterChangesSoFar { changeStreams.makeStream(for: table) }
  }

  /// How many changes a stream of ``changes(in:)`` holds for a consumer that has not read
  /// them yet; one more ends the stream.
  public static let changeBufferLimit = 10_000
}

/// The streams of ``KeyValueStore/changes(in:)``, by table: by the bytes of its name, as the
/// store tells tables apart (``TableName``), so that a stream of one table hears nothing of
/// another whose name is equal as a `String` but not in its bytes.
final class ChangeStreams: @unchecked Sendable {
  typealias Continuation = AsyncStream<KeyValueChange>.Continuation

  // Guarded by `lock`. `publish` takes it under the log's lock, so nothing may take the
  // log's lock while holding it.
  private let lock = ConditionLock()
  private var streams: [TableName: [Int: Continuation]] = [:]
  private var nextID = 0
  private var closed = false

  // Guarded by `installLock`, taken before the log's lock.
  private let installLock = ConditionLock()
  private var installed = false

  /// Runs `install` the first time only; later callers wait until it has run.
  func installOnce(_ install: () -> Void) {
    installLock.withLock {
      if !installed {
        install()
        installed = true
      }
    }
  }

  func makeStream(for name: String) -> AsyncStream<KeyValueChange> {
    let table = TableName(name)
    var made: Continuation?
    let stream = AsyncStream(
      KeyValueChange.self, bufferingPolicy: .bufferingOldest(KeyValueStore.changeBufferLimit)
    ) { made = $0 }
    let continuation = made!
    let id: Int? = lock.withLock {
      guard !closed else { return nil }
      nextID += 1
      streams[table, default: [:]][nextID] = continuation
      return nextID
    }
    guard let id else {
      continuation.finish()
      return stream
    }
    continuation.onTermination = { [weak self] _ in self?.remove([(table, id)]) }
    return stream
  }

  /// Delivers a committed change to the streams of the tables it changes. Called under the
  /// log's lock, so in commit order.
  func publish(_ change: CommittedChange) {
    let streams = lock.withLock { self.streams }
    guard !streams.isEmpty else { return }
    guard !change.missesChanges else {
      // No stream may go on with a change missing in the middle.
      endAll(closing: false)
      return
    }
    var ended: [(table: TableName, id: Int, continuation: Continuation)] = []
    // The streams this change ended (by a drop, or by a change their buffer had no room for)
    // get nothing more of it: after a drop the stream is over, and after a change left out a
    // later one would follow a gap, should the consumer have made room meanwhile.
    var endedIDs: Set<Int> = []
    func deliver(_ event: KeyValueChange, to table: TableName) {
      guard let subscribers = streams[table] else { return }
      for (id, continuation) in subscribers where !endedIDs.contains(id) {
        let enqueued: Bool
        switch continuation.yield(event) {
        case .enqueued: enqueued = true
        case .dropped, .terminated: enqueued = false
        @unknown default: enqueued = false
        }
        if !enqueued || event == .dropped {
          ended.append((table, id, continuation))
          endedIDs.insert(id)
        }
      }
    }
    // Consecutive deletes of one table (a `delete(ids:)`) are one change.
    var deletes: (table: TableName, ids: [String])?
    func flushDeletes() {
      if let (table, ids) = deletes { deliver(.deleted(ids: ids), to: table) }
      deletes = nil
    }
    change.forEachOperation { kind, tableBytes, key in
      let table = TableName(tableBytes)
      if kind == .delete, deletes?.table == table {
        deletes!.ids.append(String(decoding: key, as: UTF8.self))
        return
      }
      flushDeletes()
      guard streams[table] != nil else { return }
      switch kind {
      case .put: deliver(.put(id: String(decoding: key, as: UTF8.self)), to: table)
      case .delete: deletes = (table, [String(decoding: key, as: UTF8.self)])
      case .deletePrefix: deliver(.deletedPrefix(String(decoding: key, as: UTF8.self)), to: table)
      case .clearTable: deliver(.cleared, to: table)
      case .dropTable: deliver(.dropped, to: table)
      case .createTable, .batch, .syncMark: break
      }
    }
    flushDeletes()
    guard !ended.isEmpty else { return }
    remove(ended.map { ($0.table, $0.id) })
    // Outside the lock: finishing runs the stream's termination handler, which takes it.
    for stream in ended { stream.continuation.finish() }
  }

  private func remove(_ ids: [(table: TableName, id: Int)]) {
    lock.withLock {
      for (table, id) in ids {
        streams[table]?[id] = nil
        if streams[table]?.isEmpty == true { streams[table] = nil }
      }
    }
  }

  /// Ends every stream, and those asked for later: the store is closing.
  func finishAll() { endAll(closing: true) }

  /// Ends every stream open now; `closing`, also those asked for later.
  private func endAll(closing: Bool) {
    let all = lock.withLock {
      if closing { closed = true }
      defer { streams = [:] }
      return streams.values.flatMap(\.values)
    }
    // Outside the lock: finishing runs the stream's termination handler, which takes it.
    for continuation in all { continuation.finish() }
  }
}
