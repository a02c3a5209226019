// The harness of the 32-bit check (.ci/check-32bit): compiled into one module with the
// engine's own source files, in Embedded Swift for wasm32 (where `Int` is 32 bits, as on
// watchOS's arm64_32), and run with wasmkit. Each scenario checks expectations against a
// model of its own; a failed expectation prints `FAIL` and the run exits 1 at the end, a trap
// ends the run at once (the script names the scenario from its `start` line).

/// A scenario: a name, and a body that returns its one-line summary.
struct Scenario {
  var name: String
  var body: (inout Checker) -> String
}

let scenarios: [Scenario] = [
  Scenario(name: "platform", body: platformScenario),
  Scenario(name: "crc32c", body: crc32cScenario),
  Scenario(name: "record-codec", body: recordCodecScenario),
  Scenario(name: "record-headers", body: damagedHeaderScenario),
  Scenario(name: "batch-members", body: batchMemberScenario),
  Scenario(name: "write-batch", body: writeBatchScenario),
  Scenario(name: "packed-puts", body: packedPutsScenario),
  Scenario(name: "expiry", body: expiryScenario),
  Scenario(name: "segment-header", body: segmentHeaderScenario),
  Scenario(name: "manifest", body: manifestScenario),
  Scenario(name: "shared-state", body: sharedStateScenario),
  Scenario(name: "hint-file", body: hintFileScenario),
  Scenario(name: "segment-scanner", body: segmentScannerScenario),
  Scenario(name: "scanner-damage", body: scannerDamageScenario),
  Scenario(name: "sync-marks", body: syncMarkScenario),
  Scenario(name: "table-index", body: tableIndexScenario),
  Scenario(name: "table-index-hashes", body: syntheticHashScenario),
  Scenario(name: "key-directory", body: keyDirectoryScenario),
  Scenario(name: "index-file", body: indexFileScenario),
  Scenario(name: "changes-file", body: changesFileScenario),
  Scenario(name: "byte-words", body: byteWordsScenario),
]

@main
struct Check32 {
  static func main() {
    let seed = check32_seed()
    print(
      "check-32bit: wasm32, Int is \(Int.bitWidth) bits, pointers \(MemoryLayout<UnsafeRawPointer>.size * 8) "
        + "bits; seed \(seed) (KeyHash seed \(KeyHash.seed))")
    var failed: [String] = []
    var checks = 0
    for scenario in scenarios {
      print("start \(scenario.name)")
      var checker = Checker(scenario: scenario.name, seed: seed)
      let started = check32_nanoseconds()
      let summary = scenario.body(&checker)
      let milliseconds = (check32_nanoseconds() - started) / 1_000_000
      checks += checker.checks
      let status = checker.failures == 0 ? "ok  " : "FAIL"
      print(
        "\(status) \(pad(scenario.name, 19)) \(summary) [\(checker.checks) checks, \(milliseconds) ms]"
      )
      if checker.failures > 0 { failed.append(scenario.name) }
    }
    if failed.isEmpty {
      print(
        "check-32bit: all \(scenarios.count) scenarios passed, \(checks) checks, "
          + "\(check32_memory_used() >> 20) MiB of wasm memory")
      check32_exit(0)
    }
    var names = ""
    for name in failed { names += (names.isEmpty ? "" : ", ") + name }
    print("check-32bit: FAILED: \(names)")
    check32_exit(1)
  }
}

/// Counts expectations and reports the failed ones (the first few of each scenario).
struct Checker {
  let scenario: String
  var rng: SplitMix
  private(set) var checks = 0
  private(set) var failures = 0

  init(scenario: String, seed: UInt64) {
    self.scenario = scenario
    var nameHash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in scenario.utf8 { nameHash = (nameHash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    rng = SplitMix(seed: seed ^ nameHash)
  }

  mutating func expect(
    _ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID,
    line: UInt = #line
  ) {
    checks += 1
    if condition { return }
    failures += 1
    if failures <= 12 { print("FAIL [\(scenario)] \(file):\(line): \(message())") }
    if failures == 12 { print("FAIL [\(scenario)] (further failures not shown)") }
  }
}

/// SplitMix64: the harness's own random numbers, repeatable from the run's seed.
struct SplitMix {
  var state: UInt64
  init(seed: UInt64) { state = seed }

  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

  /// A number in 0..<bound.
  mutating func below(_ bound: Int) -> Int {
    Int(truncatingIfNeeded: next() % UInt64(bound))
  }

  mutating func next32() -> UInt32 { UInt32(truncatingIfNeeded: next() >> 32) }

  mutating func bytes(_ count: Int) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: count)
    var word: UInt64 = 0
    for index in 0..<count {
      if index % 8 == 0 { word = next() }
      out[index] = UInt8(truncatingIfNeeded: word >> (8 * UInt64(index % 8)))
    }
    return out
  }
}

// MARK: Helpers

func hex<T: FixedWidthInteger>(_ value: T) -> String { "0x" + String(value, radix: 16) }

func pad(_ text: String, _ width: Int) -> String {
  var text = text
  while text.utf8.count < width { text += " " }
  return text
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// A complete record, encoded by the engine's RecordCodec.
func encodeRecord(
  kind: RecordKind, member: Bool = false, sequence: UInt64, timestamp: Int64 = 1,
  table: [UInt8], key: [UInt8], value: [UInt8], salt: UInt32
) -> [UInt8] {
  var out = [UInt8](
    repeating: 0, count: RecordLayout.length(table: table.count, key: key.count, value: value.count)
  )
  table.withUnsafeBytes { t in
    key.withUnsafeBytes { k in
      value.withUnsafeBytes { v in
        out.withUnsafeMutableBytes { d in
          RecordCodec.encode(
            kind: kind, member: member, sequence: sequence, timestamp: timestamp, table: t,
            key: k, value: v, salt: salt, into: d)
        }
      }
    }
  }
  return out
}

/// A batch record around already encoded members (as Mutation.encode writes one).
func encodeBatch(sequence: UInt64, members: [UInt8], salt: UInt32) -> [UInt8] {
  var out = [UInt8](repeating: 0, count: RecordLayout.headerSize) + members
  out.withUnsafeMutableBytes { d in
    RecordCodec.writeHeader(
      kind: .batch, member: false, tableLength: 0, keyLength: 0, valueLength: members.count,
      sequence: sequence, timestamp: 2, into: d.baseAddress!)
    RecordCodec.writeChecksum(d, salt: salt)
  }
  return out
}

func store<T: FixedWidthInteger>(_ value: T, into bytes: inout [UInt8], at offset: Int) {
  bytes.withUnsafeMutableBytes { storeLittleEndian(value, $0.baseAddress! + offset) }
}

func load<T: FixedWidthInteger>(_: T.Type, from bytes: [UInt8], at offset: Int) -> T {
  bytes.withUnsafeBytes { loadLittleEndian(T.self, $0.baseAddress! + offset) }
}

/// Recomputes the checksum of the record at `offset` (after a deliberate change).
func rechecksumRecord(_ bytes: inout [UInt8], at offset: Int, length: Int, salt: UInt32) {
  bytes.withUnsafeMutableBytes { b in
    RecordCodec.writeChecksum(
      UnsafeMutableRawBufferPointer(rebasing: b[offset..<offset + length]), salt: salt)
  }
}

/// Bitwise CRC-32C, the reference the table-driven one is checked against.
func referenceCRC32C(_ bytes: [UInt8], from start: Int = 0, to end: Int? = nil) -> UInt32 {
  var c: UInt32 = 0xFFFF_FFFF
  for index in start..<(end ?? bytes.count) {
    c ^= UInt32(bytes[index])
    for _ in 0..<8 { c = c & 1 == 1 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
  }
  return ~c
}

func crc(_ bytes: [UInt8], _ range: Range<Int>) -> UInt32 {
  bytes.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[range])) }
}
