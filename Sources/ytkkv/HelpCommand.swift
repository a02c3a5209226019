/// `ytkkv help [COMMAND]`: the list of commands, or one command's help.
struct HelpCommand: Command {
  static let name = "help"
  static let abstract = "Show the commands, or the help of one command."
  static let usage = "ytkkv help [COMMAND]"
  static let discussion = """
    Without COMMAND, lists every command. With it, prints that command's help, the same as
    'ytkkv COMMAND --help'.
    """

  let topic: String?

  init(_ arguments: ParsedArguments) throws(UsageError) {
    topic = try arguments.positional(0, 1).first
  }

  func run(_ output: Output) throws -> ExitStatus {
    guard let topic else {
      output.print(Tool.overview)
      return .success
    }
    guard let command = Tool.command(named: topic) else {
      output.error("ytkkv help: unknown command '\(topic)'")
      return .usage
    }
    output.print(command.help)
    return .success
  }
}
