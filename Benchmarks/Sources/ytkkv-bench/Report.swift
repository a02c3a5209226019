import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The results of one workload: every measurement of every engine.
struct WorkloadResult {
  let workload: Workload
  let title: String
  var measurements: [EngineKind: [Double]] = [:]

  func median(_ engine: EngineKind) -> Double? {
    measurements[engine].map(\.median)
  }

  /// This store's engine in the workload: the first one.
  var ours: EngineKind { workload.engines[0] }

  /// How many times better ours is than `peer` (above 1: ours is better).
  func advantage(over peer: EngineKind) -> Double? { ratio(of: ours, to: peer) }

  /// How many times better `engine` is than `peer` (above 1: `engine` is better).
  func ratio(of engine: EngineKind, to peer: EngineKind) -> Double? {
    guard let mine = median(engine), let theirs = median(peer), mine > 0, theirs > 0 else {
      return nil
    }
    return workload.unit.higherIsBetter ? mine / theirs : theirs / mine
  }
}

extension WorkloadResult {
  /// How many times better ours is than `peer`, as the median of the rounds' own ratios: each
  /// round runs every engine once, one after another, so a round's ratio compares runs made
  /// under the same conditions, and the median of those ratios is steadier on a shared,
  /// noisy machine than the ratio of the two medians (runs made minutes apart).
  func pairedAdvantage(over peer: EngineKind) -> Double? {
    guard let mine = measurements[ours], let theirs = measurements[peer],
      mine.count == theirs.count, !mine.isEmpty, mine.allSatisfy({ $0 > 0 }),
      theirs.allSatisfy({ $0 > 0 })
    else { return nil }
    let ratios = zip(mine, theirs).map { workload.unit.higherIsBetter ? $0 / $1 : $1 / $0 }
    return ratios.median
  }
}

/// One of the issue's targets, checked against a run.
struct Target {
  let description: String
  let measured: String
  let met: Bool
}

func format(_ value: Double, _ unit: Unit) -> String {
  switch unit {
  case .operationsPerSecond:
    if value >= 1_000_000 { return String(format: "%.2fM", value / 1_000_000) }
    if value >= 10_000 { return String(format: "%.0fk", value / 1000) }
    if value >= 1000 { return String(format: "%.1fk", value / 1000) }
    return String(format: "%.0f", value)
  case .milliseconds:
    return value >= 100 ? String(format: "%.0f ms", value) : String(format: "%.2f ms", value)
  case .microsecondsPerItem: return String(format: "%.3f µs", value)
  case .bytesPerKey: return String(format: "%.1f B", value)
  case .diskRatio: return String(format: "%.2f×", value)
  }
}

/// The markdown report: machine, command, a table per workload, the targets.
func markdownReport(
  _ results: [WorkloadResult], targets: [Target], configuration: Configuration, command: String
)
  -> String
{
  var lines: [String] = []
  lines.append("## Machine")
  lines.append("")
  lines += machineDescription().map { "- " + $0 }
  lines.append("")
  lines.append(
    "Command: `\(command)`; each number is the median of \(configuration.repetitions) runs, engines interleaved."
  )
  lines.append("")
  for result in results {
    lines.append("### \(result.title)")
    lines.append("")
    lines.append(
      "| engine | \(result.workload.unit.rawValue) (median) | runs | \(result.ours) is … better |")
    lines.append("|---|---|---|---|")
    for engine in result.workload.engines {
      guard let values = result.measurements[engine] else { continue }
      let median = format(values.median, result.workload.unit)
      let runs = values.map { format($0, result.workload.unit) }.joined(separator: ", ")
      let ratio =
        engine == result.ours
        ? "—" : result.advantage(over: engine).map { String(format: "%.2f×", $0) } ?? "n/a"
      lines.append("| \(engine.name) | \(median) | \(runs) | \(ratio) |")
    }
    if let note = result.workload.note {
      lines.append("")
      lines.append(note)
    }
    // The extra measurements some workloads take of this store, each run and their median.
    func appendSeries(_ label: String, _ values: [Double], format: String) {
      guard !values.isEmpty else { return }
      lines.append("")
      lines.append(
        label + ": " + values.map { String(format: format, $0) }.joined(separator: ", ")
          + " (median " + String(format: format, values.median) + ").")
    }
    switch result.workload.name {
    case "compact", "compact-large":
      let name = result.workload.name
      appendSeries(
        "This store's compaction, MB written per second", compactionWriteRates[name] ?? [],
        format: "%.0f")
      appendSeries(
        "Sequential write + fsync, MB per second", sequentialWriteRates[name] ?? [],
        format: "%.0f")
    case "compaction":
      appendSeries(
        "Longest stall of a concurrent put during compaction", compactionStalls, format: "%.2f ms")
    case "put-sync-4":
      appendSeries(
        "This store, 4 writers over 1 writer run just before", groupCommitRatios, format: "%.2f×")
    case "disk":
      appendSeries(
        "This store's disk bytes over its own live bytes", diskOverLiveBytes, format: "%.2f×")
    case "import":
      appendSeries(
        "Import time over sqlite3 -json time, per round", importOverSQLite3(result),
        format: "%.2f×")
    default: break
    }
    if result.workload.name == "memory", !memoryResident.isEmpty {
      lines.append("")
      lines.append(
        "Resident memory growth (VmRSS, mapped file pages included) per key: "
          + result.workload.engines.compactMap { engine in
            memoryResident[engine.name].map {
              "\(engine.name) " + String(format: "%.1f B", $0.median)
            }
          }.joined(separator: ", ") + ".")
    }
    lines.append("")
  }
  if !targets.isEmpty {
    lines.append("### Targets")
    lines.append("")
    lines.append("| target | measured | met |")
    lines.append("|---|---|---|")
    for target in targets {
      lines.append(
        "| \(target.description) | \(target.measured) | \(target.met ? "yes" : "**no**") |")
    }
    lines.append("")
  }
  return lines.joined(separator: "\n")
}

func jsonReport(
  _ results: [WorkloadResult], targets: [Target], configuration: Configuration, command: String
)
  throws -> String
{
  var workloads: [[String: Any]] = []
  for result in results {
    var engines: [String: Any] = [:]
    for (engine, values) in result.measurements {
      var entry: [String: Any] = ["median": values.median, "runs": values]
      if engine != result.ours, let advantage = result.advantage(over: engine) {
        entry["oursBetterBy"] = advantage
      }
      engines[engine.name] = entry
    }
    workloads.append([
      "name": result.workload.name, "title": result.title, "unit": result.workload.unit.rawValue,
      "ours": result.ours.name, "engines": engines,
    ])
  }
  let report: [String: Any] = [
    "command": command, "machine": machineDescription(), "repetitions": configuration.repetitions,
    "workloads": workloads,
    "compactionStallsMilliseconds": compactionStalls,
    "residentBytesPerKey": memoryResident.mapValues(\.median),
    "diskOverOwnLiveBytes": diskOverLiveBytes,
    "groupCommitRatios": groupCommitRatios,
    "importOverSQLite3": results.first { $0.workload.name == "import" }.map(importOverSQLite3)
      ?? [],
    "targets": targets.map { ["target": $0.description, "measured": $0.measured, "met": $0.met] },
  ]
  let data = try JSONSerialization.data(
    withJSONObject: report, options: [.prettyPrinted, .sortedKeys])
  return String(decoding: data, as: UTF8.self)
}

/// CPU, cores, memory, kernel, the file system of the scratch directories.
func machineDescription() -> [String] {
  var lines: [String] = []
  if let cpu = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
    let model = cpu.split(separator: "\n").first(where: { $0.hasPrefix("model name") })
  {
    lines.append(
      "CPU: "
        + (model.split(separator: ":").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "?"))
  }
  lines.append("cores: \(ProcessInfo.processInfo.activeProcessorCount)")
  lines.append(
    String(
      format: "memory: %.1f GiB", Double(ProcessInfo.processInfo.physicalMemory) / 1_073_741_824))
  var name = utsname()
  uname(&name)
  let release = withUnsafeBytes(of: &name.release) {
    String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
  }
  lines.append("kernel: Linux \(release)")
  let directory = ProcessInfo.processInfo.environment["BENCH_DIR"] ?? NSTemporaryDirectory()
  lines.append("scratch directory: \(directory) (\(fileSystemType(directory)))")
  return lines
}

private func fileSystemType(_ path: String) -> String {
  guard let mounts = try? String(contentsOfFile: "/proc/mounts", encoding: .utf8) else {
    return "?"
  }
  var best = ("", "?")
  for line in mounts.split(separator: "\n") {
    let fields = line.split(separator: " ")
    guard fields.count > 2 else { continue }
    let point = String(fields[1])
    if path.hasPrefix(point) && point.count > best.0.count { best = (point, String(fields[2])) }
  }
  return best.1
}

/// The issue's targets, for whichever workloads ran.
func evaluateTargets(_ results: [WorkloadResult]) -> [Target] {
  func result(_ name: String) -> WorkloadResult? { results.first { $0.workload.name == name } }
  func ratio(_ value: Double?) -> String { value.map { String(format: "%.2f×", $0) } ?? "n/a" }
  /// Not targets of their own: a row of reads again with both stores checking every record read,
  /// and with neither (this store checks every read, LevelDB by default none).
  func likeForLike(_ name: String, _ result: WorkloadResult) -> [Target] {
    let checked = result.advantage(over: .levelDBChecked)
    let unchecked = result.ratio(of: .logStoreUnchecked, to: .levelDB)
    return [
      Target(
        description: "\(name), every read checked: ≥ 1× LevelDB checking its reads",
        measured: ratio(checked), met: (checked ?? 0) >= 1),
      Target(
        description: "\(name), no read checked: ≥ 1× LevelDB's default",
        measured: ratio(unchecked), met: (unchecked ?? 0) >= 1),
    ]
  }
  var targets: [Target] = []
  if let fill = result("fill") {
    let leveldb = fill.advantage(over: .levelDB)
    targets.append(
      Target(
        description: "fill, no sync: ≥ 2× LevelDB", measured: ratio(leveldb),
        met: (leveldb ?? 0) >= 2))
    let hardware = fill.advantage(over: .hardware)
    targets.append(
      Target(
        description: "fill, no sync: ≥ 0.6× one write(2) per record", measured: ratio(hardware),
        met: (hardware ?? 0) >= 0.6))
  }
  if let get = result("get") {
    let lmdb = get.advantage(over: .lmdb)
    targets.append(
      Target(description: "random get: ≥ 1× LMDB", measured: ratio(lmdb), met: (lmdb ?? 0) >= 1))
  }
  if let borrowed = result("get-borrowed") {
    let lmdb = borrowed.advantage(over: .lmdb)
    targets.append(
      Target(
        description: "random get, borrowed: ≥ 1× LMDB with one read transaction",
        measured: ratio(lmdb), met: (lmdb ?? 0) >= 1))
  }
  if let sync = result("put-sync") {
    let hardware = sync.advantage(over: .hardware)
    targets.append(
      Target(
        description: "put with fsync: ≥ 0.8× write+fdatasync", measured: ratio(hardware),
        met: (hardware ?? 0) >= 0.8))
    if result("put-sync-4") != nil, !groupCommitRatios.isEmpty {
      let paired = groupCommitRatios.median
      targets.append(
        Target(
          description: "put with fsync: 4 writers ≥ 2.5× one writer (paired runs)",
          measured: ratio(paired), met: paired >= 2.5))
    }
  }
  if let reopen = result("reopen") {
    let leveldb = reopen.advantage(over: .levelDB)
    targets.append(
      Target(
        description: "reopen of 1M keys: no slower than LevelDB", measured: ratio(leveldb),
        met: (leveldb ?? 0) >= 1))
  }
  if let reopen = result("reopen-fresh") {
    let leveldb = reopen.advantage(over: .levelDB)
    targets.append(
      Target(
        description: "reopen of 1M keys in a fresh process: no slower than LevelDB",
        measured: ratio(leveldb), met: (leveldb ?? 0) >= 1))
  }
  if let delete = result("delete-prefix") {
    let sqlite = delete.advantage(over: .sqliteWAL)
    targets.append(
      Target(
        description: "delete 10% by prefix: ≥ 20× faster than SQLite (WAL)",
        measured: ratio(sqlite), met: (sqlite ?? 0) >= 20))
  }
  if let memory = result("memory"), let bytes = memory.median(.logStore) {
    targets.append(
      Target(
        description: "memory: ≤ 80 bytes per key plus the key's 13 bytes",
        measured: String(format: "%.1f B", bytes),
        met: bytes <= 93))
  }
  if result("disk") != nil, !diskOverLiveBytes.isEmpty {
    let ratio = diskOverLiveBytes.median
    targets.append(
      Target(
        description: "disk after 10 overwrites: ≤ 1.5× live bytes (statistics().liveBytes)",
        measured: String(format: "%.2f×", ratio), met: ratio <= 1.5))
  }
  if let api = result("ytk-api") {
    let sqlite = api.advantage(over: .sqliteWAL)
    targets.append(
      Target(
        description: "YTK API put/get of a dictionary: ≥ 10× SQLite-WAL", measured: ratio(sqlite),
        met: (sqlite ?? 0) >= 10))
  }
  if let importing = result("import") {
    let ours = importing.median(.ytkImport)
    let theirs = importing.median(.sqlite3JSON)
    let over = ours.flatMap { ours in theirs.map { ours / $0 } }
    targets.append(
      Target(
        description: "import of a YTK table: ≤ 1× the time of sqlite3 -json (import / sqlite3)",
        measured: over.map { String(format: "%.2f×", $0) } ?? "n/a (no sqlite3)",
        met: (over ?? .infinity) <= 1))
  }
  for name in ["compact", "compact-large"] {
    guard let compaction = result(name) else { continue }
    let leveldb = compaction.advantage(over: .levelDB)
    targets.append(
      Target(
        description: "\(name): ≥ 1× LevelDB's CompactRange", measured: ratio(leveldb),
        met: (leveldb ?? 0) >= 1))
    let ours = compactionWriteRates[name] ?? []
    let limit = sequentialWriteRates[name] ?? []
    if !ours.isEmpty, !limit.isEmpty {
      let share = ours.median / limit.median
      targets.append(
        Target(
          description: "\(name): ≥ 0.25× sequential write + fsync (MB/s)",
          measured: String(format: "%.2f×", share), met: share >= 0.25))
    }
  }
  if let scan = result("scan-compacted") {
    let leveldb = scan.advantage(over: .levelDB)
    targets.append(
      Target(
        description: "ordered scan after shuffled inserts and a compaction: ≥ 1× LevelDB",
        measured: ratio(leveldb), met: (leveldb ?? 0) >= 1))
    targets += likeForLike("scan-compacted", scan)
  }
  for size in ["1m", "4m"] {
    for row in ["large-put", "large-get", "large-compact"] {
      guard let large = result("\(row)-\(size)") else { continue }
      let best = [large.advantage(over: .levelDB), large.advantage(over: .rocksDB)]
        .compactMap { $0 }.min()
      targets.append(
        Target(
          description: "\(row)-\(size): ≥ 1× the faster of LevelDB and RocksDB",
          measured: ratio(best), met: (best ?? 0) >= 1))
    }
    if let get = result("large-get-\(size)") { targets += likeForLike("large-get-\(size)", get) }
  }
  return targets + jsonTargets(results)
}
