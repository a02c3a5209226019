/// The segments kept for someone after the manifest dropped them: a compaction's inputs
/// between its swap's first step (out of the manifest) and its last (out of the index), and
/// the inputs of compactions that ended while a backup ran, whose files that backup may still
/// be copying.
///
/// Guarded by the log's lock.
struct SegmentHolds {
  /// Inputs of a compaction whose outputs have replaced them in the manifest, until they are
  /// dropped from the index.
  private(set) var retired: Set<UInt32> = []
  /// Backups between their start and end (``ActiveLog/beginBackup()``).
  private(set) var backupsRunning = 0
  /// Inputs of compactions that ended while a backup ran: removed when the last backup ends.
  private var heldForBackups: [UInt32] = []

  /// A compaction is between retiring its inputs and dropping them: its outputs are live, but
  /// their sizes are not recorded yet.
  var isSwappingSegments: Bool { !retired.isEmpty }

  /// Holds a compaction's inputs, now out of the manifest, until ``dropRetired()``.
  mutating func retire(_ numbers: Set<UInt32>) { retired = numbers }

  /// Lets go of the retired inputs, now gone from the index; returns them.
  mutating func dropRetired() -> Set<UInt32> {
    defer { retired = [] }
    return retired
  }

  /// Whether a compaction may remove the files of its inputs, `numbers`, now that they are out
  /// of the manifest and the index: not while a backup runs, which may be copying them; they
  /// are then held for the last backup to remove when it ends.
  mutating func mayRemoveInputs(_ numbers: [UInt32]) -> Bool {
    guard backupsRunning > 0 else { return true }
    heldForBackups += numbers
    return false
  }

  mutating func beginBackup() { backupsRunning += 1 }

  /// For the last backup running, as it ends: the files held for backups, which it removes
  /// (and no longer holds); nil when there are none or another backup still runs.
  mutating func takeFilesForLastBackup() -> [UInt32]? {
    guard backupsRunning == 1, !heldForBackups.isEmpty else { return nil }
    defer { heldForBackups = [] }
    return heldForBackups
  }

  mutating func endBackup() { backupsRunning -= 1 }
}
