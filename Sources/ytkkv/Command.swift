#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// One subcommand of `ytkkv`: its name, its help text, how it reads its arguments and what it
/// does. Each lives in a file of its own, `<Name>Command.swift`.
protocol Command {
  /// The word that selects it: `ytkkv <name> …`.
  static var name: String { get }
  /// One line for `ytkkv help`.
  static var abstract: String { get }
  /// The synopsis, such as `ytkkv get PATH TABLE ID`.
  static var usage: String { get }
  /// More help: arguments, options, exit codes, an example.
  static var discussion: String { get }
  /// The option names that take a value (`--prefix P`) and those that are flags (`--json`).
  static var valueOptions: Set<String> { get }
  static var flags: Set<String> { get }

  /// Reads the parsed arguments; throws ``UsageError`` for wrong ones.
  init(_ arguments: ParsedArguments) throws(UsageError)

  /// Does the work, writing to `output`; returns the exit status.
  func run(_ output: Output) throws -> ExitStatus
}

extension Command {
  static var valueOptions: Set<String> { [] }
  static var flags: Set<String> { [] }

  static var help: String {
    "\(abstract)\n\nUsage: \(usage)\n\n\(discussion)"
  }
}

/// The process's exit status: 0 success, 1 failure (or damage found, or not found),
/// 64 usage error (as in BSD's sysexits).
struct ExitStatus: Equatable {
  let code: Int32
  static let success = ExitStatus(code: 0)
  static let failure = ExitStatus(code: 1)
  static let usage = ExitStatus(code: 64)
}

/// Wrong arguments: printed with the command's usage line, exit status 64.
struct UsageError: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}

/// A failure to report as one line on standard error, exit status 1.
struct CommandFailure: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}

/// Arguments split into positional values, options with values and flags.
struct ParsedArguments {
  var positional: [String] = []
  var options: [String: String] = [:]
  /// Every value of each option, in order, for options that may be given more than once.
  var repeated: [String: [String]] = [:]
  var flags: Set<String> = []

  /// Parses `arguments` for `command`; `--` ends the options.
  init<C: Command>(_ arguments: [String], for command: C.Type) throws(UsageError) {
    var index = 0
    var optionsEnded = false
    while index < arguments.count {
      let argument = arguments[index]
      index += 1
      if optionsEnded || !argument.hasPrefix("--") || argument == "-" {
        positional.append(argument)
      } else if argument == "--" {
        optionsEnded = true
      } else if command.flags.contains(argument) {
        flags.insert(argument)
      } else if command.valueOptions.contains(argument) {
        guard index < arguments.count else {
          throw UsageError("\(argument) needs a value")
        }
        options[argument] = arguments[index]
        repeated[argument, default: []].append(arguments[index])
        index += 1
      } else {
        throw UsageError("unknown option \(argument)")
      }
    }
  }

  /// The positional arguments, checked to number between `minimum` and `maximum`.
  func positional(_ minimum: Int, _ maximum: Int? = nil) throws(UsageError) -> [String] {
    let maximum = maximum ?? minimum
    if positional.count < minimum {
      throw UsageError("missing arguments")
    }
    if positional.count > maximum {
      throw UsageError("unexpected argument \(positional[maximum])")
    }
    return positional
  }
}

/// Where a command writes: standard output and standard error, replaceable in tests.
final class Output {
  private(set) var standardOutput = ""
  private(set) var standardError = ""
  private let capture: Bool

  init(capture: Bool = false) { self.capture = capture }

  func print(_ line: String) {
    if capture {
      standardOutput += line + "\n"
    } else {
      writeAll(1, line + "\n")
    }
  }

  func error(_ line: String) {
    if capture {
      standardError += line + "\n"
    } else {
      writeAll(2, line + "\n")
    }
  }

  private func writeAll(_ descriptor: Int32, _ text: String) {
    var text = text
    text.withUTF8 { bytes in
      var done = 0
      while done < bytes.count {
        let count = write(descriptor, bytes.baseAddress! + done, bytes.count - done)
        if count < 0 && errno == EINTR { continue }
        if count <= 0 { return }
        done += count
      }
    }
  }

  /// Shows `text` on one rewritten line of standard error (a terminal); nil clears it.
  func progress(_ text: String?) {
    writeAll(2, "\r\u{1B}[K" + (text ?? ""))
  }

  /// Whether standard error is a terminal (progress is shown only then).
  var errorIsTerminal: Bool { !capture && isatty(2) == 1 }
}
