import Foundation
import Testing

/// The commands that only read open the store read-only, so they work while another process
/// writes it (docs/CLI.md): run beside a writer, each must succeed, show a state the writer's
/// operations passed through, and `verify` must never take the writer's work in progress for
/// damage.
@Suite("ytkkv read commands beside a writer", .serialized)
struct ReadCommandsBesideWriterTests {
  /// How long the writer runs: `YTKKV_STRESS_SECONDS` if set, else 6.
  static let seconds =
    ProcessInfo.processInfo.environment["YTKKV_STRESS_SECONDS"].flatMap { Int($0) } ?? 6

  static let commands = ["tables", "get", "dump", "stats", "verify"]

  /// The id and stored value of one line of `ytkkv dump`'s output for the rounds table; nil
  /// for a line of any other shape.
  static func dumpedItem(_ line: Substring) -> (id: String, value: String)? {
    let head = #"{"table":"rounds","id":""#
    guard line.hasPrefix(head), line.hasSuffix("}") else { return nil }
    let rest = line.dropFirst(head.count).dropLast()
    guard let idEnd = rest.range(of: #"","value":"#),
      let time = rest.range(of: #","createdTime":"#, options: .backwards),
      idEnd.upperBound <= time.lowerBound,
      Microseconds.fromSeconds(String(rest[time.upperBound...])) != nil
    else { return nil }
    return (String(rest[..<idEnd.lowerBound]), String(rest[idEnd.upperBound..<time.lowerBound]))
  }

  /// What is wrong with one run of `command` while the writer works; nil when nothing is.
  static func problem(
    _ command: String, _ result: ToolResult, id: String, workload: RoundsWorkload
  ) -> String? {
    guard result.reason == .exit else { return "killed by signal \(result.status)" }
    let lines = result.outputLines
    switch command {
    case "tables":
      let count = lines.first.flatMap { $0.hasPrefix("rounds\t") ? Int($0.dropFirst(7)) : nil }
      guard result.status == 0, lines.count == 1, let count, count <= workload.idCount else {
        return "exit status \(result.status), printed \(lines)"
      }
    case "get":
      if result.status == 1 {
        // The id may be deleted at that moment.
        guard result.errorLines == ["ytkkv get: no item with id \"\(id)\" in table \"rounds\""]
        else { return "exit status 1" }
        return nil
      }
      guard result.status == 0, lines.count == 1,
        let round = RoundsWorkload.round(of: lines[0]),
        workload.expected(round: round, id: id) == lines[0]
      else {
        return "exit status \(result.status), printed \(result.standardOutput.prefix(300))"
      }
    case "dump":
      guard result.status == 0 else { return "exit status \(result.status)" }
      var items: [String: String] = [:]
      for line in lines where line != #"{"table":"rounds"}"# {
        guard let item = dumpedItem(line[...]) else {
          return "a line of an unexpected shape: \(line.prefix(300))"
        }
        items[item.id] = item.value
      }
      let verdict = workload.check(items: items)
      guard verdict.isPrefix else { return "printed \(items.count) items: \(verdict)" }
    case "stats":
      guard result.status == 0, lines.first?.hasPrefix("items:") == true else {
        return "exit status \(result.status), printed \(lines.prefix(3))"
      }
    default:
      guard result.status == 0, lines.last?.hasPrefix("OK (") == true else {
        return "exit status \(result.status), printed \(lines.suffix(5))"
      }
    }
    guard result.standardError.isEmpty else { return "wrote on standard error" }
    return nil
  }

  @Test(
    "tables, get, dump, stats and verify run beside a writer succeed, show prefixes of its operations and find no damage"
  )
  func readCommandsBesideWriter() throws {
    let executable = try #require(builtExecutable(named: "ytkkv-rounds"))
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("rounds.db")
    let workload = RoundsWorkload()
    let writer = try ChildProcess(executable, ["write", path, "--seconds", String(Self.seconds)])
    var runs: [String: Int] = [:]
    var failures: [String: Int] = [:]
    var problems: [String: [String]] = [:]
    var step = 0
    do {
      // The commands refuse a path with no store: start once the first round is written.
      try waitUntil("the writer's first round") {
        !writer.isRunning || writer.standardOutput.contains("\n")
      }
      try waitUntil(
        "the writer to stop after \(Self.seconds) s", seconds: Double(Self.seconds) + 60
      ) {
        guard writer.isRunning else { return true }
        let command = Self.commands[step % Self.commands.count]
        // Ids spread over the store, far apart from one get to the next.
        let id = workload.ids[(step * 389) % workload.idCount]
        let arguments = command == "get" ? [command, path, "rounds", id] : [command, path]
        let result = try Tool.run(arguments)
        runs[command, default: 0] += 1
        if let problem = Self.problem(command, result, id: id, workload: workload) {
          failures[command, default: 0] += 1
          if problems[command, default: []].count < 3 {
            let said = result.standardError.isEmpty ? "" : " (\(result.standardError.prefix(300)))"
            problems[command, default: []].append(
              "ytkkv \(arguments.joined(separator: " ")): \(problem)\(said)")
          }
        }
        step += 1
        return false
      }
    } catch {
      writer.send(SIGKILL)
      throw error
    }
    let ending = try writer.waitUntilExit()
    #expect(ending.succeeded, "writer: \(ending.summary)\n\(ending.standardError.prefix(2_000))")
    for command in Self.commands {
      // At least once each, even on a machine busy with other tests.
      #expect(runs[command, default: 0] >= 1, "ytkkv \(command) never ran")
      #expect(
        failures[command, default: 0] == 0,
        "\(problems[command, default: []].joined(separator: "\n"))")
    }
    let written = ending.standardOutput.split(separator: "\n").last ?? ""
    print(
      "ytkkv read commands beside a writer for \(Self.seconds) s (\(written)): "
        + Self.commands.map { command in
          "\(command) \(runs[command, default: 0]) runs, \(failures[command, default: 0]) failed"
        }.joined(separator: "; "))
  }
}
