import Testing

@testable import LogStore

/// Compaction's listing of what is live (``KeyDirectory/liveRecords(below:)``) and its
/// judgment of each listed record once copied (``KeyDirectory/judge(count:in:listed:judged:)``).
@Suite("Compaction's listing")
struct LiveRecordsTests {
  /// Records of table "t" applied to directories as the log's replay applies them, lying one
  /// after another in segment 1; and where each one's key is.
  private struct Log {
    var offset = SegmentHeader.size
    var keyBytes: [UInt8] = []
    var keys: [UInt32: Range<Int>] = [:]

    mutating func apply(
      _ kind: RecordKind, _ key: String = "", to directory: KeyDirectory, sequence: UInt64
    ) throws {
      let bytes = SegmentScannerTests.record(
        kind, sequence: sequence, key: key, value: kind == .put ? "v" : "")
      let location = RecordLocation(
        segment: 1, offset: UInt32(offset), length: UInt32(bytes.count))
      try bytes.withUnsafeBytes { buffer in
        let record = try RecordCodec.decode(buffer, at: 0, salt: SegmentScannerTests.salt)
        directory.apply(LoggedChange(record, at: location))
      }
      keys[location.offset] = keyBytes.count..<keyBytes.count + key.utf8.count
      keyBytes += Array(key.utf8)
      offset += bytes.count
    }

    /// A directory of table "t" with `keys` put in turn.
    static func directory(keys: [String]) throws -> (KeyDirectory, Log) {
      let directory = KeyDirectory()
      var log = Log()
      try log.apply(.createTable, to: directory, sequence: 1)
      for (index, key) in keys.enumerated() {
        try log.apply(.put, key, to: directory, sequence: UInt64(index + 2))
      }
      return (directory, log)
    }

    /// The verdict of `directory` on each record `live` lists, by the record's key ("" for the
    /// table's creation).
    func verdicts(on live: LiveRecords, by directory: KeyDirectory) -> [String: Bool] {
      var verdicts: [String: Bool] = [:]
      let records = live.records
      keyBytes.withUnsafeBytes { all in
        func key(_ position: Int) -> UnsafeRawBufferPointer {
          UnsafeRawBufferPointer(rebasing: all[keys[records[position].location.offset]!])
        }
        let whole = directory.judge(
          count: records.count, in: live, listed: { (records[$0], key($0)) },
          judged: { position, holds in
            verdicts[String(decoding: key(position), as: UTF8.self)] = holds
          })
        #expect(whole)
      }
      return verdicts
    }
  }

  @Test(
    "a listing is taken as still true only by the directory it was listed from, unchanged: another directory with as many changes applied (a rebuild, another process's rotation) judges each record by looking it up"
  )
  func listingOfItsOwnDirectory() throws {
    let (listed, log) = try Log.directory(keys: ["a", "b", "c"])
    // The same records but the last, in the same places: as many changes applied.
    let (other, _) = try Log.directory(keys: ["a", "b", "d"])
    #expect(listed.changesApplied == other.changesApplied)
    let live = try #require(listed.liveRecords(below: 2))
    #expect(live.records.count == 4)

    let all = ["": true, "a": true, "b": true, "c": true]
    #expect(log.verdicts(on: live, by: listed) == all)
    // "c" is not in the other directory: its record is not what that directory points at.
    #expect(log.verdicts(on: live, by: other) == ["": true, "a": true, "b": true, "c": false])

    // The listed directory changed since: each record is looked up.
    var changed = log
    try changed.apply(.put, "b", to: listed, sequence: 5)
    #expect(log.verdicts(on: live, by: listed) == ["": true, "a": true, "b": false, "c": true])
  }
}
