/// `ytkkv compact PATH`: reclaims space now.
struct CompactCommand: Command {
  static let name = "compact"
  static let abstract = "Compact a store now and show its size before and after."
  static let usage = "ytkkv compact PATH"
  static let discussion = """
    Rewrites the live records into new segment files (with hint files) and deletes the old
    ones, reclaiming the space of overwritten and deleted values. Safe against a crash at
    any moment. Shows progress on standard error when that is a terminal. Needs the store
    not to be open in another process.

    Example:
      $ ytkkv compact test.db
      before: 12.3 MiB on disk, 4.1 MiB live, 3 segments
      after:  4.1 MiB on disk, 4.1 MiB live, 2 segments

    \(StoreAccess.sharingHelp)
    """
  static let flags: Set<String> = [StoreAccess.manyProcessesFlag]

  let path: String

  let manyProcesses: Bool

  init(_ arguments: ParsedArguments) throws(UsageError) {
    manyProcesses = arguments.flags.contains(StoreAccess.manyProcessesFlag)
    path = try arguments.positional(1)[0]
  }

  func run(_ output: Output) throws -> ExitStatus {
    let store = try StoreAccess.openForWriting(path, manyProcesses: manyProcesses)
    func line(_ label: String) throws -> String {
      let statistics = try store.statistics()
      return label + Formatting.bytes(statistics.diskBytes) + " on disk, "
        + Formatting.bytes(statistics.liveBytes) + " live, \(statistics.segments) segments"
    }
    output.print(try line("before: "))
    if output.errorIsTerminal {
      try store.logStore.compact { done, total in
        let percent = total == 0 ? 100 : Int(Double(done) * 100 / Double(total))
        output.progress("compacting: \(percent)%")
      }
      output.progress(nil)
    } else {
      try store.compact()
    }
    output.print(try line("after:  "))
    try store.close()
    return .success
  }
}
