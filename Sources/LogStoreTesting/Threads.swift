import Foundation

/// Runs `body(index)` on `count` new OS threads at once and waits for all of them.
///
/// New threads rather than `DispatchQueue.concurrentPerform`, which runs no more bodies at
/// once than there are cores: a test whose threads wait for each other would run them one
/// after the other on a small machine.
package func runOnThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
  let group = DispatchGroup()
  for index in 0..<count {
    group.enter()
    let thread = Thread {
      body(index)
      group.leave()
    }
    thread.stackSize = 4 << 20
    thread.start()
  }
  group.wait()
}

/// A moment some seconds from now, on a clock that only goes forward (the system's uptime;
/// not `ContinuousClock`, which needs macOS 13 / iOS 16).
package struct Deadline: Sendable {
  private let uptime: TimeInterval

  package init(secondsFromNow seconds: Double) {
    uptime = ProcessInfo.processInfo.systemUptime + seconds
  }

  package var hasPassed: Bool { ProcessInfo.processInfo.systemUptime >= uptime }
}

/// Checks `condition` every millisecond until it holds; fails with ``WaitTimedOut`` naming
/// `what` once `seconds` have passed without it, so a test whose condition never comes fails
/// with a message instead of hanging. `condition` may do a step of work each time (a
/// compaction, a command run beside a writer) before it answers.
package func waitUntil(
  _ what: @autoclosure () -> String, seconds: Double = 60, _ condition: () throws -> Bool
) throws {
  let deadline = Deadline(secondsFromNow: seconds)
  while try !condition() {
    if deadline.hasPassed { throw WaitTimedOut(what: what(), seconds: seconds) }
    Thread.sleep(forTimeInterval: 0.001)
  }
}

/// A condition a test waited for did not come in time.
package struct WaitTimedOut: Error, CustomStringConvertible {
  /// What the test waited for.
  package var what: String
  package var seconds: Double

  package var description: String { "waited \(seconds) s for \(what), in vain" }
}
