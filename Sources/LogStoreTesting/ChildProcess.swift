import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A process a test starts and lets run beside it, its standard output and error collected as
/// they come (so a chatty child never blocks on a full pipe).
///
/// Started with `posix_spawn` and waited for with `waitpid`, not with Foundation's `Process`:
/// under load, `Process` twice reported a child that had been killed as running for over a
/// minute (its end is seen through Dispatch, whose threads the tests keep busy), and it reads
/// the pipes on Dispatch's threads, which the concurrency runtime's tasks (a test's
/// `for await`) need.
package final class ChildProcess: @unchecked Sendable {
  private let process: pid_t
  private let name: String
  private let output = Guarded(Data())
  private let error = Guarded(Data())
  private let drained = DispatchGroup()
  /// The status `waitpid` gave once the process ended (it is reaped then).
  private let ended = Guarded<Int32?>(nil)

  /// How a child process ended and what it printed.
  package struct Ending: Sendable {
    /// Whether it exited or was killed by a signal.
    package var reason: Process.TerminationReason
    /// The exit status, or the number of the signal that ended it.
    package var status: Int32
    package var standardOutput: String
    package var standardError: String

    /// Whether it exited by itself with status 0.
    package var succeeded: Bool { reason == .exit && status == 0 }

    /// How it ended, for a test's failure message: "exit status 1" or "signal 7".
    package var summary: String {
      reason == .exit ? "exit status \(status)" : "signal \(status)"
    }
  }

  /// Starts `executable` with `arguments`, standard input empty.
  package init(_ executable: URL, _ arguments: [String]) throws {
    name = executable.lastPathComponent
    // Close-on-exec, so that children other tests start meanwhile do not hold the write ends
    // open (each end is made the child's own standard output or error by `dup2`).
    let (outputPipe, errorPipe, child) = try Self.spawning.withLock { _ in
      let outputPipe = try Self.makePipe()
      let errorPipe = try Self.makePipe()
      #if canImport(Darwin)
        var actions: posix_spawn_file_actions_t?
      #else
        var actions = posix_spawn_file_actions_t()
      #endif
      posix_spawn_file_actions_init(&actions)
      defer { posix_spawn_file_actions_destroy(&actions) }
      posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
      posix_spawn_file_actions_adddup2(&actions, outputPipe.write, 1)
      posix_spawn_file_actions_adddup2(&actions, errorPipe.write, 2)
      let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
      defer { for argument in argv { free(argument) } }
      let envp = Self.environment.map { strdup($0) } + [nil]
      defer { for variable in envp { free(variable) } }
      var child: pid_t = 0
      let result = posix_spawn(&child, executable.path, &actions, nil, argv, envp)
      _ = close(outputPipe.write)
      _ = close(errorPipe.write)
      guard result == 0 else {
        _ = close(outputPipe.read)
        _ = close(errorPipe.read)
        throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EIO)
      }
      return (outputPipe, errorPipe, child)
    }
    process = child
    for (descriptor, collected) in [(outputPipe.read, output), (errorPipe.read, error)] {
      drained.enter()
      let reader = Thread { [drained] in
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
          let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
          if count > 0 {
            collected.withLock { $0.append(contentsOf: buffer[0..<count]) }
          } else if count == 0 || errno != EINTR {
            break
          }
        }
        _ = close(descriptor)
        drained.leave()
      }
      reader.start()
    }
  }

  /// Held from making a child's pipes until it is spawned: a child spawned by another thread
  /// before they are close-on-exec would hold their write ends open for as long as it runs,
  /// and the readers would never see the end. (Foundation's `Process` closes every other
  /// descriptor in its children.)
  private static let spawning = Guarded(())

  /// This process's environment, and no crash backtracer in the child: the Swift runtime
  /// starts one in a child that traps, which inherits its pipes and, if the test kills the
  /// child meanwhile, waits on it for good, so the readers never see the end (the trap's
  /// message is on standard error either way).
  private static let environment: [String] =
    ProcessInfo.processInfo.environment.filter { $0.key != "SWIFT_BACKTRACE" }
    .map { "\($0.key)=\($0.value)" } + ["SWIFT_BACKTRACE=enable=no"]

  private static func makePipe() throws -> (read: Int32, write: Int32) {
    var ends: [Int32] = [0, 0]
    guard pipe(&ends) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    return (ends[0], ends[1])
  }

  /// The status of the ended process, reaping it; nil while it runs (`blocking`: waits).
  private func reap(blocking: Bool) -> Int32? {
    ended.withLock { state in
      if let status = state { return status }
      var status: Int32 = 0
      while true {
        let result = waitpid(process, &status, blocking ? 0 : WNOHANG)
        if result == process {
          state = status
          return status
        }
        if result == -1 && errno == EINTR { continue }
        return nil
      }
    }
  }

  /// Whether the process has not ended yet.
  package var isRunning: Bool { reap(blocking: false) == nil }

  /// Sends the process `signal` (`SIGKILL`, …), unless it has ended (its number may be
  /// another process's by then).
  package func send(_ signal: Int32) {
    ended.withLock { state in
      if state == nil { _ = kill(process, signal) }
    }
  }

  /// What it has written on standard output so far.
  package var standardOutput: String {
    output.withLock { String(decoding: $0, as: UTF8.self) }
  }

  /// Waits for the process to end and for everything it wrote. One still running after
  /// `seconds` is killed, and the wait throws ``WaitTimedOut``.
  package func waitUntilExit(seconds: Double = 60) throws -> Ending {
    do {
      try waitUntil("\(name) to end", seconds: seconds) { !isRunning }
    } catch {
      send(SIGKILL)
      _ = reap(blocking: true)
      drained.wait()
      throw error
    }
    let status = reap(blocking: true)!
    drained.wait()
    // The layout of a wait status (WIFEXITED, WEXITSTATUS, WTERMSIG), the same on Linux and
    // Darwin: the low 7 bits are the signal that ended it, 0 when it exited.
    let signal = status & 0x7f
    return Ending(
      reason: signal == 0 ? .exit : .uncaughtSignal,
      status: signal == 0 ? (status >> 8) & 0xff : signal,
      standardOutput: output.withLock { String(decoding: $0, as: UTF8.self) },
      standardError: error.withLock { String(decoding: $0, as: UTF8.self) })
  }
}
