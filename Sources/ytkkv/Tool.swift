#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// `ytkkv`: the command-line tool of YTKKeyValueStore for Swift.
enum Tool {
  /// Every subcommand, in the order `ytkkv help` lists them.
  static var commands: [any Command.Type] {
    [
      HelpCommand.self,
      DemoCommand.self,
      TablesCommand.self,
      GetCommand.self,
      PutCommand.self,
      DeleteCommand.self,
      DumpCommand.self,
      LoadCommand.self,
      ImportCommand.self,
      StatsCommand.self,
      VerifyCommand.self,
      CompactCommand.self,
      BackupCommand.self,
      RecoverCommand.self,
    ]
  }

  static func command(named name: String) -> (any Command.Type)? {
    commands.first { $0.name == name }
  }

  static var overview: String {
    var lines = [
      "ytkkv: inspect, verify and maintain YTKKeyValueStore stores.",
      "",
      "Usage: ytkkv <command> [arguments]",
      "",
      "Commands:",
    ]
    let entries = commands.map { command in (name: command.name, abstract: command.abstract) }
    let width = entries.map { $0.name.count }.max() ?? 0
    for entry in entries {
      let padding = String(repeating: " ", count: width - entry.name.count + 2)
      lines.append("  \(entry.name)\(padding)\(entry.abstract)")
    }
    lines += [
      "",
      "Run 'ytkkv <command> --help' for a command's arguments and options.",
      "Exit status: 0 success; 1 failure, damage found or not found; 64 usage error.",
    ]
    return lines.joined(separator: "\n")
  }

  /// Runs the tool on `arguments` (without the program name); returns the exit status.
  static func run(_ arguments: [String], output: Output) -> ExitStatus {
    guard let name = arguments.first else {
      output.error(overview)
      return .usage
    }
    if name == "--help" || name == "-h" {
      output.print(overview)
      return .success
    }
    guard let command = command(named: name) else {
      output.error("ytkkv: unknown command '\(name)'\n\n\(overview)")
      return .usage
    }
    let rest = Array(arguments.dropFirst())
    // `--` ends the options: after it, "--help" is an argument like any other.
    let options = rest.prefix { $0 != "--" }
    if options.contains("--help") || options.contains("-h") {
      output.print(command.help)
      return .success
    }
    return run(command, rest, output: output)
  }

  private static func run<C: Command>(_ command: C.Type, _ arguments: [String], output: Output)
    -> ExitStatus
  {
    let instance: C
    do {
      instance = try C(ParsedArguments(arguments, for: C.self))
    } catch {
      output.error("ytkkv \(C.name): \(error)\nUsage: \(C.usage)")
      return .usage
    }
    do {
      return try instance.run(output)
    } catch {
      output.error("ytkkv \(C.name): \(error)")
      return .failure
    }
  }
}
