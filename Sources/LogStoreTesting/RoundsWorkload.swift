import Foundation
import LogStore

/// A workload in which any state that is not the result of a prefix of its operations shows:
/// rounds of writes over ids in a fixed order.
///
/// The ids, `g0000-00`, `g0000-01`, …, come in groups of ten and sort (byte for byte) in the
/// order the workload writes them. Round r (1, 2, …) walks the groups in order; for group g:
///
/// - (g + r) % 7 == 0: one `deletePrefix("gNNNN-")` removes the whole group;
/// - (g + r) % 7 == 3: one batch puts every id of the group;
/// - otherwise one operation per id: a delete when (id number + r) % 11 == 0, else a put.
///
/// So after any prefix of the operations there is a round r and a boundary k between two of
/// its operations such that the ids before k hold round r's state and the others round r - 1's.
/// ``check(_:)`` decides whether an observed state has that shape: an id two rounds behind a
/// later one, half a batch, half a prefix delete or a deleted id that is back all fail it.
///
/// A put's value is YTKKeyValueStore's stored form of a string, the bytes of
/// `["r<r>:<id>:<padding>"]`, 150 to 249 bytes long, so that `ytkkv` can read the same store
/// through its JSON layer.
package struct RoundsWorkload: Sendable {
  /// The one table, created before the first round.
  package static let table = "rounds"
  /// Ids per group: one prefix delete or one batch covers a group.
  package static let groupSize = 10
  /// Round r compacts explicitly after it when r is a multiple of this.
  package static let compactionEvery = 3

  /// The number of ids.
  package let idCount: Int
  /// Every id, in order: `ids[n]` is id number n.
  package let ids: [String]

  package init(ids idCount: Int = 2_000) {
    precondition((1...100_000).contains(idCount), "ids are numbered with four-digit groups")
    self.idCount = idCount
    ids = (0..<idCount).map { Self.id($0) }
  }

  package var groupCount: Int { (idCount + Self.groupSize - 1) / Self.groupSize }

  /// The id of number `number`: `g<group>-<member>`, zero-padded.
  package static func id(_ number: Int) -> String {
    groupPrefix(number / groupSize) + (number % groupSize).zeroPadded(width: 2)
  }

  /// What every id of group `group` starts with, and nothing else does: `g0123-`.
  package static func groupPrefix(_ group: Int) -> String {
    "g" + group.zeroPadded(width: 4) + "-"
  }

  /// The number of `id`, or nil when the workload has no such id.
  package func number(of id: String) -> Int? {
    let bytes = Array(id.utf8)
    guard bytes.count == 8, bytes[0] == UInt8(ascii: "g"), bytes[5] == UInt8(ascii: "-"),
      let group = Int(String(decoding: bytes[1..<5], as: UTF8.self)),
      let member = Int(String(decoding: bytes[6..<8], as: UTF8.self)),
      member < Self.groupSize, Self.id(group * Self.groupSize + member) == id
    else { return nil }
    let number = group * Self.groupSize + member
    return number < idCount ? number : nil
  }

  // MARK: What each round does

  /// How a round writes one group.
  package enum GroupWrite: Sendable, Equatable {
    /// One prefix delete removes the group.
    case deletePrefix
    /// One batch puts every id of the group.
    case batch
    /// One put or delete per id.
    case eachID
  }

  package func groupWrite(group: Int, round: Int) -> GroupWrite {
    switch (group + round) % 7 {
    case 0: .deletePrefix
    case 3: .batch
    default: .eachID
    }
  }

  /// Whether round `round`, writing ids one at a time, deletes id `number`.
  private func deletes(_ number: Int, round: Int) -> Bool { (number + round) % 11 == 0 }

  /// The value round `round` puts under id `number`: `["r<round>:<id>:<padding>"]`, its
  /// length between 150 and 249 bytes, varying with the id and the round.
  package func value(round: Int, id number: Int) -> String {
    var bytes = Array("[\"r\(round):\(ids[number]):".utf8)
    let length = 150 + (number * 37 + round * 53) % 100
    let letter = UInt8(ascii: "a") + UInt8((number + round) % 26)
    bytes += [UInt8](repeating: letter, count: max(1, length - bytes.count - 2))
    bytes += "\"]".utf8
    return String(decoding: bytes, as: UTF8.self)
  }

  /// The round whose put wrote `value`, read from its `["r<round>:` head; nil for any other
  /// text.
  package static func round(of value: String) -> Int? {
    let bytes = value.utf8
    guard bytes.starts(with: "[\"r".utf8) else { return nil }
    let digits = bytes.dropFirst(3).prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    guard !digits.isEmpty, digits.count < 10,
      bytes.dropFirst(3 + digits.count).first == UInt8(ascii: ":")
    else { return nil }
    return Int(String(decoding: digits, as: UTF8.self))
  }

  /// The value of id `number` once round `round` is over; nil when the id has none. Round 0
  /// is the start: no id has a value.
  package func expected(round: Int, id number: Int) -> String? {
    guard round > 0 else { return nil }
    switch groupWrite(group: number / Self.groupSize, round: round) {
    case .deletePrefix: return nil
    case .batch: return value(round: round, id: number)
    case .eachID: return deletes(number, round: round) ? nil : value(round: round, id: number)
    }
  }

  /// ``expected(round:id:)`` by id; nil also for an id the workload does not have.
  package func expected(round: Int, id: String) -> String? {
    number(of: id).flatMap { expected(round: round, id: $0) }
  }

  /// The operation that comes before every round.
  package var creation: StoreOperation { .createTable(Self.table) }

  /// The operations of round `round`, in order.
  package func operations(round: Int) -> [StoreOperation] {
    var operations: [StoreOperation] = []
    for group in 0..<groupCount {
      let members = group * Self.groupSize..<min((group + 1) * Self.groupSize, idCount)
      switch groupWrite(group: group, round: round) {
      case .deletePrefix:
        operations.append(.deletePrefix(table: Self.table, prefix: Self.groupPrefix(group)))
      case .batch:
        operations.append(
          .batch(
            members.map { number in
              .put(
                table: Self.table, key: Array(ids[number].utf8),
                value: Array(value(round: round, id: number).utf8), timestamp: nil)
            }))
      case .eachID:
        for number in members {
          operations.append(
            deletes(number, round: round)
              ? .delete(table: Self.table, key: ids[number])
              : .put(table: Self.table, key: ids[number], value: value(round: round, id: number)))
        }
      }
    }
    return operations
  }

  /// Whether `boundary` (0 through ``idCount``) falls between two operations of round
  /// `round`: the ids before it can hold that round's state while the others hold the
  /// previous round's.
  package func isBoundary(_ boundary: Int, round: Int) -> Bool {
    boundary == idCount || boundary % Self.groupSize == 0
      || groupWrite(group: boundary / Self.groupSize, round: round) == .eachID
  }

  // MARK: Checking what a reader saw

  /// Whether `observed` (the value of every id, in order; nil for none) is the state after
  /// some prefix of the workload's operations.
  ///
  /// Only two rounds can explain a state: the highest round of any value seen, or the next
  /// one when that round's first operations so far only deleted.
  package func check(_ observed: [String?]) -> RoundsVerdict {
    precondition(observed.count == idCount, "one observation for each id")
    let highest = observed.lazy.compactMap { $0.flatMap(Self.round(of:)) }.max() ?? 0
    var failures: [(round: Int, explanation: Explanation, bad: Int)] = []
    for round in highest == 0 ? [1] : [highest, highest + 1] {
      let explained = explanation(of: observed, round: round)
      guard let bad = explained.bad else {
        return RoundsVerdict(
          round: round, boundary: explained.boundary,
          finishedRounds: explained.boundary == idCount ? round : round - 1)
      }
      failures.append((round, explained, bad))
    }
    // Describe the round that explains the most ids.
    let (round, explained, bad) = failures.max { $0.bad < $1.bad }!
    let end = explained.end
    let mismatch =
      "not the state after any prefix of the operations (highest round seen \(highest)): "
      + "round \(round)'s state ends at \(ids[end]) (it holds \(Self.shown(observed[end])), "
      + "round \(round) leaves \(Self.shown(expected(round: round, id: end)))), so from "
      + "\(ids[explained.boundary]) on the ids should hold round \(round - 1)'s state, but "
      + "\(ids[bad]) holds \(Self.shown(observed[bad])), where round \(round - 1) leaves "
      + "\(Self.shown(expected(round: round - 1, id: bad))) and round \(round) "
      + Self.shown(expected(round: round, id: bad))
    return RoundsVerdict(
      round: highest, boundary: explained.boundary, finishedRounds: max(0, highest - 1),
      mismatch: mismatch)
  }

  /// ``check(_:)`` of the items a reader listed, by id; an id that is not the workload's fails.
  package func check(items: [String: String]) -> RoundsVerdict {
    var observed = [String?](repeating: nil, count: idCount)
    for (id, value) in items {
      guard let number = number(of: id) else {
        let highest = items.values.compactMap(Self.round(of:)).max() ?? 0
        return RoundsVerdict(
          round: highest, boundary: 0, finishedRounds: max(0, highest - 1),
          mismatch: "an id the workload never wrote: \(id) holds \(Self.shown(value))")
      }
      observed[number] = value
    }
    return check(observed)
  }

  /// How far round `round` explains an observed state.
  private struct Explanation {
    /// The first id that does not hold round `round`'s state (``idCount`` if none).
    var end: Int
    /// The last boundary between two operations of the round at or before `end`.
    var boundary: Int
    /// The first id from `boundary` on that does not hold the previous round's state; nil
    /// when there is none, and the state is the one after the operations before `boundary`.
    var bad: Int?
  }

  private func explanation(of observed: [String?], round: Int) -> Explanation {
    let end = observed.indices.first { observed[$0] != expected(round: round, id: $0) } ?? idCount
    var boundary = end
    while !isBoundary(boundary, round: round) { boundary -= 1 }
    let bad = (boundary..<idCount).first { observed[$0] != expected(round: round - 1, id: $0) }
    return Explanation(end: end, boundary: boundary, bad: bad)
  }

  /// A value as a mismatch shows it: `r<round>:<id>` and its length, not its padding; the
  /// start of any other text.
  private static func shown(_ value: String?) -> String {
    guard let value else { return "nothing" }
    let parts = value.dropFirst(2).split(separator: ":", maxSplits: 2)
    guard round(of: value) != nil, parts.count == 3 else {
      return "\"\(value.prefix(40))…\" (\(value.utf8.count) bytes)"
    }
    return "\(parts[0]):\(parts[1]) (\(value.utf8.count) bytes)"
  }
}

/// What ``RoundsWorkload/check(_:)`` found.
package struct RoundsVerdict: Sendable, Equatable, CustomStringConvertible {
  /// The round the state is in; for a mismatch, the highest round of any value seen.
  package var round: Int
  /// For a prefix: the ids before this one hold ``round``'s state, the others the previous
  /// round's.
  package var boundary: Int
  /// Rounds whose every operation is in the state.
  package var finishedRounds: Int
  /// Why the state is no prefix of the operations, for a person; nil when it is one.
  package var mismatch: String?

  package init(round: Int, boundary: Int, finishedRounds: Int, mismatch: String? = nil) {
    self.round = round
    self.boundary = boundary
    self.finishedRounds = finishedRounds
    self.mismatch = mismatch
  }

  package var isPrefix: Bool { mismatch == nil }

  package var description: String {
    mismatch ?? "round \(round) up to id number \(boundary) (\(finishedRounds) rounds finished)"
  }
}
