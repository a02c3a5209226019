import Foundation

/// A process a test starts and lets run beside it, its standard output and error collected as
/// they come (so a chatty child never blocks on a full pipe).
package final class ChildProcess {
  private let process = Process()
  private let output = Guarded(Data())
  private let error = Guarded(Data())
  private let drained = DispatchGroup()

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
    process.executableURL = executable
    process.arguments = arguments
    process.standardInput = FileHandle.nullDevice
    let outputPipe = Pipe()
    let errorPipe = Pipe()
    process.standardOutput = outputPipe
    process.standardError = errorPipe
    try process.run()
    for (pipe, collected) in [(outputPipe, output), (errorPipe, error)] {
      let handle = pipe.fileHandleForReading
      DispatchQueue.global().async(group: drained) {
        while case let data = handle.availableData, !data.isEmpty {
          collected.withLock { $0.append(data) }
        }
      }
    }
  }

  /// Whether the process has not ended yet.
  package var isRunning: Bool { process.isRunning }

  /// Sends the process `signal` (`SIGKILL`, …).
  package func send(_ signal: Int32) { kill(process.processIdentifier, signal) }

  /// What it has written on standard output so far.
  package var standardOutput: String {
    output.withLock { String(decoding: $0, as: UTF8.self) }
  }

  /// Waits for the process to end and for everything it wrote. One still running after
  /// `seconds` is killed, and the wait throws ``WaitTimedOut``.
  package func waitUntilExit(seconds: Double = 60) throws -> Ending {
    do {
      try waitUntil(
        "\(process.executableURL?.lastPathComponent ?? "a child") to end", seconds: seconds
      ) {
        !process.isRunning
      }
    } catch {
      send(SIGKILL)
      throw error
    }
    process.waitUntilExit()
    drained.wait()
    return Ending(
      reason: process.terminationReason, status: process.terminationStatus,
      standardOutput: output.withLock { String(decoding: $0, as: UTF8.self) },
      standardError: error.withLock { String(decoding: $0, as: UTF8.self) })
  }
}
