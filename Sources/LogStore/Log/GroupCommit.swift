/// The group commit of `SyncPolicy.always`: writers queue their changes, the first in line
/// writes every queued change, syncs once for all of them outside the lock, applies them in
/// order and wakes the others.
///
/// Guarded by the log's lock, which every step of a commit holds (but the sync).
final class GroupCommit: @unchecked Sendable {
  private let log: ActiveLog
  private var index: IndexView { log.index }

  /// Changes waiting; the first one leads.
  private var queue: [Ticket] = []
  /// The threads of the last two groups, and how long the last sync took: a new leader waits a
  /// little for those writers to queue again (see `gatherGroup`).
  private var recentCommitters: [Set<UInt>] = [[], []]
  private var lastSyncNanoseconds: Int64 = 0

  init(log: ActiveLog) { self.log = log }

  /// No change is queued: every change appended is applied. Call with the log's lock held.
  var isIdle: Bool { queue.isEmpty }

  /// One writer's change in the queue.
  private final class Ticket {
    let mutation: Mutation
    let thread = currentThreadID()
    /// Signalled when the change is done, or when its writer is to lead.
    let wakeup = Wakeup()
    var appended: Appended?
    var error: LogStoreError?
    var done = false

    init(_ mutation: Mutation) { self.mutation = mutation }
  }

  /// Commits `mutation` durably; returns the bytes written if this writer led a group (the
  /// others' changes included), zero if another writer led. Call with the log's lock held.
  func commit(_ mutation: Mutation) throws(LogStoreError) -> Int {
    let lock = log.lock
    let ticket = Ticket(mutation)
    queue.append(ticket)
    // A leader gathering its group waits for arrivals.
    if queue.count > 1 { queue[0].wakeup.signal() }
    while !ticket.done && queue.first !== ticket { lock.wait(for: ticket.wakeup) }
    if ticket.done {
      if let error = ticket.error { throw error }
      return 0
    }
    let group = gatherGroup()
    var tables: [String: Bool] = [:]
    for member in group {
      do {
        try log.checkWritable()
        try index.checkTables(member.mutation, pending: &tables)
        member.appended = try log.append(member.mutation)
      } catch {
        member.error = error
      }
    }
    // One sync outside the lock at a time (compaction may be flushing the segment).
    while log.syncInFlight { lock.wait() }
    let active = log.writer!
    let point = active.unsynchronized
    let syncStart = monotonicNanoseconds()
    let syncError = log.synchronizeOutsideLock(active, point.range, .durable)
    lastSyncNanoseconds = monotonicNanoseconds() - syncStart
    if let syncError {
      // What did not reach the disk must not come back after a crash either: zero it, and
      // fail every change written there. Changes in segments sealed meanwhile are durable.
      active.discardUnsynchronized()
      for member in group {
        guard member.error == nil, let appended = member.appended,
          appended.file === active.file, appended.offset + appended.length > active.used
        else { continue }
        member.error = syncError
        member.appended = nil
        log.reuseSequenceNumbers(from: appended.firstSequence)
      }
    } else {
      log.noteSynchronized(active, point, .durable)
    }
    var written = 0
    index.change {
      for member in group where member.error == nil {
        if let appended = member.appended {
          index.apply(appended)
          written += appended.length
        }
      }
    }
    if let observer = log.commitObserver {
      for member in group where member.error == nil && member.appended != nil {
        observer(CommittedChange(mutation: member.mutation))
      }
    }
    for member in group {
      member.done = true
      member.wakeup.signal()
    }
    queue.removeFirst(group.count)
    // The next writer in line leads; threads waiting for the log to be idle look again.
    queue.first?.wakeup.signal()
    lock.broadcast()
    if let error = ticket.error { throw error }
    return written
  }

  /// The leader's group: every queued change, after waiting briefly for the writers of the last
  /// two groups to queue again.
  ///
  /// Without the wait, writers fall into lockstep: while one group syncs, the writers of the
  /// other wait in the queue, so groups alternate between them and each sync carries half the
  /// writers. Waiting up to half a sync for writers that were just released lets one sync carry
  /// them all; a lone writer never waits (it is the only recent committer).
  private func gatherGroup() -> [Ticket] {
    let expected = recentCommitters[0].union(recentCommitters[1]).count
    if queue.count < expected && lastSyncNanoseconds > 0 {
      let deadline = monotonicNanoseconds() + min(lastSyncNanoseconds / 2, 2_000_000)
      while queue.count < expected {
        let left = deadline - monotonicNanoseconds()
        if left <= 0 { break }
        log.lock.wait(for: queue[0].wakeup, nanoseconds: left)
      }
    }
    let group = queue
    recentCommitters = [recentCommitters[1], Set(group.map(\.thread))]
    return group
  }

  /// Waits until no group is being committed and no sync runs outside the lock. Call with the
  /// log's lock held.
  func waitUntilIdle() {
    while log.syncInFlight || !queue.isEmpty { log.lock.wait() }
  }
}
