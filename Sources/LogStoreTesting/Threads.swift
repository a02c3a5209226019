import Foundation
import LogStore

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

/// A thread a test starts to run `body` beside its own, and can wait for until the thread is
/// asleep: blocked on a lock or a condition, because what it waits for has not happened yet.
/// So a test can make a thread arrive at a wait while another holds what it waits for (from a
/// ``SimulatedFileSystem/callHook``, say), and only then let that go: the wait is taken every
/// time, not only when the scheduler happens to interleave the threads so.
package final class WaitingThread: @unchecked Sendable {
  // `kernelID` is written once by the thread before `started` is signalled, and read after.
  private var kernelID: Int32 = 0
  private let started = DispatchSemaphore(value: 0)
  private let finished = DispatchSemaphore(value: 0)
  private let returned = OnceFlag()

  package init(_ body: @escaping @Sendable () -> Void) {
    let thread = Thread { [self] in
      #if os(Linux)
        // `/proc/thread-self` links to `PID/task/TID`.
        let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")
        kernelID = link.flatMap { Int32($0.split(separator: "/").last ?? "") } ?? 0
      #endif
      started.signal()
      body()
      returned.set()
      finished.signal()
    }
    thread.stackSize = 4 << 20
    thread.start()
    started.wait()
  }

  /// Returns once the thread sleeps in the kernel (Linux: its state in `/proc` is `S`); fails
  /// with ``WaitTimedOut`` if it does not within a minute. Elsewhere it waits a tenth of a second,
  /// which lets the thread reach its wait but does not prove it did.
  /// With `orReturn`, returns as well once `body` has returned: for a thread that either
  /// waits for what the test holds or, on code that does not wait for it, runs to its end.
  package func waitUntilAsleep(orReturn: Bool = false) throws {
    #if os(Linux)
      let path = "/proc/self/task/\(kernelID)/stat"
      try waitUntil("thread \(kernelID) to sleep") {
        if orReturn && returned.isSet { return true }
        guard let stat = try? String(contentsOfFile: path, encoding: .utf8),
          let end = stat.lastIndex(of: ")")
        else { return false }
        // The state follows the command name, which is in parentheses and may hold spaces.
        return stat[stat.index(after: end)...].trimmingCharacters(in: .whitespaces).first == "S"
      }
    #else
      Thread.sleep(forTimeInterval: 0.1)
    #endif
  }

  /// Waits until `body` has returned.
  package func join() { finished.wait() }
}
