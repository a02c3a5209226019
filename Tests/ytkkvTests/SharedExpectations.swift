import Testing

// What every `ytkkv` subcommand promises alike: how it refuses bad arguments, a missing
// store, a missing table and a store that another program is writing. Each expectation
// takes whole command lines, as `Tool.run` does; the first word names the command, and with
// it the `ytkkv NAME: ` that starts the expected message. A failure is reported at the line
// of the test that called the expectation.

/// Expects each command line to be a usage error: exit 64, nothing on standard output, and
/// on standard error `ytkkv NAME: REASON` followed by the command's usage line.
func expectUsageErrors(
  _ cases: [(arguments: [String], reason: String)], usage: String,
  sourceLocation: SourceLocation = #_sourceLocation
) throws {
  for (arguments, reason) in cases {
    let result = try runRefused(arguments, status: 64, sourceLocation)
    #expect(
      result.errorLines == [message(arguments, reason), usage], "\(arguments)",
      sourceLocation: sourceLocation)
  }
}

/// Expects each command line to exit 1 saying there is no store at `path`, with nothing on
/// standard output.
func expectNoStore(
  _ commandLines: [String]..., at path: String,
  sourceLocation: SourceLocation = #_sourceLocation
) throws {
  for arguments in commandLines {
    let result = try runRefused(arguments, status: 1, sourceLocation)
    #expect(
      result.errorLines == [message(arguments, "there is no store at \(path)")], "\(arguments)",
      sourceLocation: sourceLocation)
  }
}

/// Expects each command line to exit 1 saying there is no store at `path`, with nothing on
/// standard output, and to leave nothing at `path`.
func expectMissingStore(
  _ commandLines: [String]..., at path: String,
  sourceLocation: SourceLocation = #_sourceLocation
) throws {
  for arguments in commandLines {
    try expectNoStore(arguments, at: path, sourceLocation: sourceLocation)
    #expect(!StoreFiles.exists(path), "\(arguments)", sourceLocation: sourceLocation)
  }
}

/// Expects each command line to exit 1 with nothing on standard output and a message that
/// there is no table named `table`.
func expectMissingTable(
  _ commandLines: [String]..., table: String,
  sourceLocation: SourceLocation = #_sourceLocation
) throws {
  for arguments in commandLines {
    let result = try runRefused(arguments, status: 1, sourceLocation)
    #expect(
      result.standardError.contains(#"no table named "\#(table)""#), "\(arguments)",
      sourceLocation: sourceLocation)
  }
}

/// Expects each command line, run while another program has the store open for writing (see
/// `withStoreOpenForWriting`), to exit 1 saying the store is locked, with nothing on standard
/// output. Only commands that write refuse; the ones that read go ahead.
func expectLockedStoreRefused(
  _ commandLines: [String]..., sourceLocation: SourceLocation = #_sourceLocation
) throws {
  for arguments in commandLines {
    let result = try runRefused(arguments, status: 1, sourceLocation)
    #expect(
      result.standardError.hasPrefix(message(arguments, "the store is locked by another process")),
      "\(arguments)", sourceLocation: sourceLocation)
  }
}

/// Runs `arguments` and expects the command to refuse them: exit `status`, nothing on
/// standard output. The caller checks what it said on standard error.
private func runRefused(
  _ arguments: [String], status: Int32, _ sourceLocation: SourceLocation
) throws -> ToolResult {
  let result = try Tool.run(arguments)
  #expect(result.status == status, "\(arguments)", sourceLocation: sourceLocation)
  #expect(result.standardOutput == "", "\(arguments)", sourceLocation: sourceLocation)
  return result
}

/// `ytkkv NAME: text`, as the command named by the first of `arguments` writes its errors.
private func message(_ arguments: [String], _ text: String) -> String {
  "ytkkv \(arguments.first ?? ""): \(text)"
}
