/// Rule 2 of opening a store (docs/FORMAT.md, "Interrupted compaction"): which segments a
/// finished or an interrupted compaction leaves obsolete.
///
/// Recovery removes what this finds and verification reports it; both ask this type, so that
/// `ytkkv verify` says exactly what the next open will do.
///
/// The segments a compaction writes carry a ``SegmentHeader/CompactionMark``: the number of its
/// first output, the output's position and the number of outputs. The outputs of one
/// compaction form a group. A group is finished when every one of its outputs is present
/// (with a header that names its own file and agrees on the count).
struct CompactionGroups: Equatable {
  /// Segments numbered below the first output of the newest finished compaction: its inputs
  /// (and anything older still lying about). Removed.
  private(set) var replacedInputs: Set<UInt32> = []
  /// Outputs of compactions that did not finish: some outputs are missing while an input is
  /// still there. Removed; the inputs stay and keep the data. (Disjoint from
  /// ``replacedInputs``, like the other sets.)
  private(set) var unfinishedOutputs: Set<UInt32> = []
  /// Outputs of a compaction with outputs missing and no input left. It did finish (inputs are
  /// removed only once every output is in place), and an output has been lost or damaged
  /// since: what remains is the store's data. Kept.
  private(set) var keptIncompleteOutputs: Set<UInt32> = []

  /// What the rule removes.
  var obsolete: Set<UInt32> { replacedInputs.union(unfinishedOutputs) }

  /// Applies the rule to a store's segments.
  ///
  /// - Parameter segments: every segment in the store, with its header when one decoded (nil
  ///   for a missing or damaged header, which marks no group).
  init(_ segments: [(number: UInt32, header: SegmentHeader?)]) {
    var groups: [UInt32: (count: UInt32, seen: Set<UInt32>, members: [UInt32])] = [:]
    for (number, header) in segments {
      // A header naming another file is damage, not evidence about any compaction.
      guard let header, let mark = header.compaction, header.fileNumber == number else {
        continue
      }
      var group = groups[mark.firstOutput] ?? (mark.outputCount, [], [])
      // The first output seen sets the count; an output that disagrees with it does not count
      // towards finishing the group (it still belongs to it).
      if group.count == mark.outputCount { group.seen.insert(mark.outputIndex) }
      group.members.append(number)
      groups[mark.firstOutput] = group
    }
    let finished = groups.filter { $0.value.seen.count == $0.value.count }
    if let newestFinished = finished.keys.max() {
      for (number, _) in segments where number < newestFinished {
        replacedInputs.insert(number)
      }
    }
    for (firstOutput, group) in groups.sorted(by: { $0.key < $1.key })
    where finished[firstOutput] == nil {
      let inputsRemain = segments.contains { segment in
        segment.number < firstOutput && !obsolete.contains(segment.number)
      }
      let members = group.members.filter { !replacedInputs.contains($0) }
      if inputsRemain {
        unfinishedOutputs.formUnion(members)
      } else {
        keptIncompleteOutputs.formUnion(members)
      }
    }
  }
}
