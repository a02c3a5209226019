import LogStore

/// `ytkkv stats PATH [--json]`: what a store holds and the space it takes.
struct StatsCommand: Command {
  static let name = "stats"
  static let abstract = "Show items, tables, live and disk bytes, segments, garbage, damage."
  static let usage = "ytkkv stats PATH [--json]"
  static let discussion = """
    Opens the store read-only (so it works while another process has it open) and prints:
    items, tables, live bytes (records that hold current values), disk bytes (segment, hint
    and index files), garbage (disk minus live, what compaction reclaims) and its share of
    the disk, segment files, damaged records skipped while opening, how the index was
    rebuilt (records scanned, hint entries read) and the index file it opened from, if any,
    with the index's memory (the file mapped, and heap).

    Options:
      --json   print one JSON object instead

    Example:
      $ ytkkv stats test.db
      items:           1
      tables:          1
      ...

    \(StoreAccess.sharingHelp)
    """
  static let flags: Set<String> = ["--json", StoreAccess.manyProcessesFlag]

  let path: String
  let json: Bool

  let manyProcesses: Bool

  init(_ arguments: ParsedArguments) throws(UsageError) {
    manyProcesses = arguments.flags.contains(StoreAccess.manyProcessesFlag)
    path = try arguments.positional(1)[0]
    json = arguments.flags.contains("--json")
  }

  func run(_ output: Output) throws -> ExitStatus {
    let store = try StoreAccess.openForReading(path, manyProcesses: manyProcesses)
    defer { try? store.close() }
    let statistics = try store.statistics()
    let report = store.logStore.openReport
    let garbageShare =
      statistics.diskBytes == 0 ? 0 : Double(statistics.garbageBytes) / Double(statistics.diskBytes)
    let percent = (garbageShare * 1000).rounded() / 10
    let changesFile = report.indexFile.flatMap {
      report.usedChangesFile ? StoreFileName.changes($0) : nil
    }
    if json {
      output.print(
        "{\"items\":\(statistics.liveItems),\"tables\":\(statistics.tables),"
          + "\"liveBytes\":\(statistics.liveBytes),\"diskBytes\":\(statistics.diskBytes),"
          + "\"garbageBytes\":\(statistics.garbageBytes),\"garbageFraction\":\(garbageShare),"
          + "\"segments\":\(statistics.segments),\"damagedRecords\":\(statistics.damagedRecords),"
          + "\"scannedRecords\":\(report.scannedRecords),\"hintEntries\":\(report.hintEntries),"
          + "\"indexFile\":\(report.indexFile.map { "\"\(StoreFileName.index($0))\"" } ?? "null"),"
          + "\"changesFile\":\(changesFile.map { "\"\($0)\"" } ?? "null"),"
          + "\"indexMappedBytes\":\(statistics.indexMappedBytes),"
          + "\"indexHeapBytes\":\(statistics.indexHeapBytes)}")
      return .success
    }
    let rows: [(String, String)] = [
      ("items", "\(statistics.liveItems)"),
      ("tables", "\(statistics.tables)"),
      ("live bytes", "\(statistics.liveBytes) (\(Formatting.bytes(statistics.liveBytes)))"),
      ("disk bytes", "\(statistics.diskBytes) (\(Formatting.bytes(statistics.diskBytes)))"),
      ("garbage", "\(statistics.garbageBytes) (\(percent)% of disk)"),
      ("segments", "\(statistics.segments)"),
      ("damaged records", "\(statistics.damagedRecords)"),
      (
        "opened from",
        "\(report.scannedRecords) records scanned, \(report.hintEntries) hint entries"
          + (report.indexFile.map { ", index file \(StoreFileName.index($0))" } ?? "")
          + (changesFile.map { ", changes file \($0)" } ?? "")
      ),
      (
        "index memory",
        "\(Formatting.bytes(statistics.indexMappedBytes)) mapped, "
          + "\(Formatting.bytes(statistics.indexHeapBytes)) heap"
      ),
    ]
    for (label, value) in rows {
      output.print(label + ":" + String(repeating: " ", count: 17 - label.count) + value)
    }
    return .success
  }
}
