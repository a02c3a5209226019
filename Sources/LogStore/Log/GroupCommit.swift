/// The queue of writers under `SyncPolicy.always`: writers queue their changes, and the first
/// in line commits every queued change with one sync (``StoreEngine/commit(_:)`` does the
/// steps) while the others wait to be told how theirs went.
///
/// Guarded by the log's lock, which every step of a commit holds (but the sync).
final class GroupCommit: @unchecked Sendable {
  private let log: ActiveLog
  private var lock: ConditionLock { log.lock }

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
  final class Ticket {
    let mutation: Mutation
    fileprivate let thread = currentThreadID()
    /// Signalled when the change is done, or when its writer is to lead.
    fileprivate let wakeup = Wakeup()
    fileprivate var error: LogStoreError?
    fileprivate var done = false

    fileprivate init(_ mutation: Mutation) { self.mutation = mutation }
  }

  /// What a writer that queued is to do.
  enum Turn {
    /// Another writer committed the change: nil if it succeeded, or why it failed.
    case committed(LogStoreError?)
    /// This writer leads: it commits the group (its own change first) and then calls
    /// ``finish(_:errors:)``.
    case lead([Ticket])
  }

  /// Queues `mutation` and waits until it is committed or this writer is to lead. Call with
  /// the log's lock held.
  func join(_ mutation: Mutation) -> Turn {
    let ticket = Ticket(mutation)
    queue.append(ticket)
    // A leader gathering its group waits for arrivals.
    if queue.count > 1 { queue[0].wakeup.signal() }
    while !ticket.done && queue.first !== ticket { lock.wait(for: ticket.wakeup) }
    if ticket.done { return .committed(ticket.error) }
    return .lead(gatherGroup())
  }

  /// Notes how long the group's sync took (a leader waits up to half of it for its group).
  func noteSync(nanoseconds: Int64) { lastSyncNanoseconds = nanoseconds }

  /// Ends the group's commit: tells each writer how its change went (`errors`, in the group's
  /// order) and lets the next writer in line lead.
  func finish(_ group: [Ticket], errors: [LogStoreError?]) {
    for (member, error) in zip(group, errors) {
      member.error = error
      member.done = true
      member.wakeup.signal()
    }
    queue.removeFirst(group.count)
    // The next writer in line leads; threads waiting for the log to be idle look again.
    queue.first?.wakeup.signal()
    lock.broadcast()
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
        lock.wait(for: queue[0].wakeup, nanoseconds: left)
      }
    }
    let group = queue
    recentCommitters = [recentCommitters[1], Set(group.map(\.thread))]
    return group
  }

  /// Waits until no group is being committed and no sync runs outside the lock. Call with the
  /// log's lock held.
  func waitUntilIdle() {
    while log.syncInFlight || !queue.isEmpty { lock.wait() }
  }
}
