import LogStore
import YTKKeyValueStore

/// `ytkkv verify PATH [--json]`: checks every record, hint, index and changes file.
struct VerifyCommand: Command {
  static let name = "verify"
  static let abstract = "Check every record, hint, index and changes file; report each problem."
  static let usage = "ytkkv verify PATH [--json]"
  static let discussion = """
    Reads every segment, hint, index and changes file without opening the store (so it works
    while another process has it open, and changes nothing), checks every record's checksum,
    every hint entry and every index entry and change against its record, and prints each
    problem with its file and offset. Ends with
    "OK" (exit status 0) or "N problems found" (exit status 1). Notes (a torn tail left by a
    crash, leftovers of an interrupted compaction, an index or changes file of segments the
    store no longer has) are printed but are not problems: the next open tidies them.

    Options:
      --json   print one JSON object instead: {"ok", "segments", "records", "hintFiles",
               "indexFiles", "problems": [{"file", "offset", "message"}], "notes": [...]}

    Example:
      $ ytkkv verify test.db
      000003.log at offset 4096: checksum mismatch (173 bytes skipped)
      1 problem found
    """
  static let flags: Set<String> = ["--json"]

  let path: String
  let json: Bool

  init(_ arguments: ParsedArguments) throws(UsageError) {
    path = try arguments.positional(1)[0]
    json = arguments.flags.contains("--json")
  }

  func run(_ output: Output) throws -> ExitStatus {
    guard StoreAccess.storeExists(path) else { throw StoreAccess.missing(path) }
    let report = try LogStore.verify(path: path)
    if json {
      func encode(_ findings: [VerificationFinding]) throws -> String {
        let values: [JSONValue] = findings.map { finding in
          [
            "file": .string(finding.file),
            "offset": finding.offset.map { .int(Int64($0)) } ?? .null,
            "message": .string(finding.message),
          ]
        }
        return String(decoding: try JSONWriter.bytes(.array(values)), as: UTF8.self)
      }
      output.print(
        "{\"ok\":\(report.isClean),\"segments\":\(report.segments),\"records\":\(report.records),"
          + "\"hintFiles\":\(report.hintFiles),\"indexFiles\":\(report.indexFiles),"
          + "\"problems\":\(try encode(report.problems)),"
          + "\"notes\":\(try encode(report.notes))}")
    } else {
      for problem in report.problems { output.print(problem.description) }
      for note in report.notes { output.print("note: \(note)") }
      if report.isClean {
        output.print(
          "OK (\(report.segments) segments, \(report.records) records, "
            + "\(report.hintFiles) hint files, \(report.indexFiles) index files)")
      } else {
        let count = report.problems.count
        output.print("\(count) problem\(count == 1 ? "" : "s") found")
      }
    }
    return report.isClean ? .success : .failure
  }
}
