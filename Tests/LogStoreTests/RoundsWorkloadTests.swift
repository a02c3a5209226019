import Testing

@testable import LogStoreTesting

/// The checker of the readers-beside-a-writer tests: it must accept every state a prefix of
/// the operations leaves, and nothing else.
@Suite("Rounds workload")
struct RoundsWorkloadTests {
  /// Six groups and a short seventh: every kind of group write meets every position in seven
  /// rounds.
  static let workload = RoundsWorkload(ids: 67)

  /// What the model of the store holds for every id, in order.
  static func observed(_ model: StoreModel, _ workload: RoundsWorkload = workload) -> [String?] {
    workload.ids.map { model.tables[ModelBytes(RoundsWorkload.table)]?[ModelBytes($0)]?.text }
  }

  /// The state after the operations of round `round` before id `boundary`, the others being
  /// at the round before; built from ``RoundsWorkload/expected(round:id:)``.
  static func state(round: Int, boundary: Int) -> [String?] {
    (0..<workload.idCount).map {
      workload.expected(round: $0 < boundary ? round : round - 1, id: $0)
    }
  }

  @Test("ids sort in the order the rounds write them, and values are 150 to 249 bytes of JSON")
  func idsAndValues() {
    let workload = RoundsWorkload()
    #expect(workload.ids.count == 2_000)
    #expect(workload.ids.first == "g0000-00")
    #expect(workload.ids.last == "g0199-09")
    #expect(workload.ids == workload.ids.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
    for number in [0, 1, 57, 1_999] {
      #expect(workload.number(of: workload.ids[number]) == number)
    }
    for stranger in ["g0200-00", "g0001-10", "g001-01", "g0001-1", "x0001-01", ""] {
      #expect(workload.number(of: stranger) == nil, "\(stranger)")
    }
    var lengths: Set<Int> = []
    for round in 1...30 {
      for number in stride(from: 0, to: 2_000, by: 7) {
        let value = workload.value(round: round, id: number)
        lengths.insert(value.utf8.count)
        #expect(value.hasPrefix("[\"r\(round):\(workload.ids[number]):"))
        #expect(value.hasSuffix("\"]"))
        #expect(RoundsWorkload.round(of: value) == round)
      }
    }
    #expect(lengths.min()! >= 150 && lengths.max()! <= 249)
    #expect(lengths.count > 50, "the lengths vary")
  }

  @Test("every prefix of the operations, applied to a model, is accepted as the state it is")
  func everyPrefixIsAccepted() {
    // With one group, a round that deletes it leaves the empty start again: the round of such
    // a state is ambiguous, so only the main workload's rounds are checked as well.
    for workload in [Self.workload, RoundsWorkload(ids: 10), RoundsWorkload(ids: 3)] {
      let oneGroup = workload.groupCount == 1
      var model = StoreModel()
      model.apply(workload.creation)
      #expect(workload.check(Self.observed(model, workload)).isPrefix)
      var states = 0
      for round in 1...9 {
        var reached = 0
        for operation in workload.operations(round: round) {
          model.apply(operation)
          states += 1
          let observed = Self.observed(model, workload)
          let verdict = workload.check(observed)
          #expect(verdict.isPrefix, "round \(round), after \(operation): \(verdict)")
          // The round and boundary the verdict names leave exactly what was observed.
          let named = workload.ids.indices.map {
            workload.expected(
              round: $0 < verdict.boundary ? verdict.round : verdict.round - 1, id: $0)
          }
          #expect(named == observed, "round \(round), after \(operation): \(verdict)")
          // The boundary moves forward through the round. (A state at a round's end is also
          // the next one's start, and a delete may change nothing.)
          #expect(
            oneGroup || verdict.round == round && verdict.boundary >= reached
              || verdict.round == round + 1 && verdict.boundary == 0
              || verdict.round == round - 1 && verdict.boundary == workload.idCount,
            "round \(round), after \(operation): \(verdict)")
          if verdict.round == round { reached = verdict.boundary }
        }
        let finished = Self.observed(model, workload)
        #expect(finished == workload.ids.indices.map { workload.expected(round: round, id: $0) })
        #expect(oneGroup || workload.check(finished).finishedRounds == round)
      }
      #expect(states > 9)
    }
  }

  @Test("a state with no values is the start, before the first round")
  func emptyStateIsTheStart() {
    let verdict = Self.workload.check(Array(repeating: nil, count: Self.workload.idCount))
    #expect(verdict == RoundsVerdict(round: 1, boundary: 0, finishedRounds: 0))
  }

  @Test("a round that has only deleted so far is recognized from the round before's values")
  func roundThatOnlyDeletedSoFar() throws {
    // Round 7 starts with a prefix delete of group 0: no value of round 7 shows yet.
    let workload = Self.workload
    #expect(workload.groupWrite(group: 0, round: 7) == .deletePrefix)
    var model = StoreModel()
    model.apply(workload.creation)
    for round in 1...6 {
      for operation in workload.operations(round: round) { model.apply(operation) }
    }
    model.apply(workload.operations(round: 7)[0])
    let verdict = workload.check(Self.observed(model))
    #expect(verdict == RoundsVerdict(round: 7, boundary: 10, finishedRounds: 6))
  }

  @Test("an id of a later group at round r while an earlier one holds round r - 2 is rejected")
  func twoRoundsApart() throws {
    let workload = Self.workload
    let round = 5
    var state = Self.state(round: round, boundary: 50)
    // An id that rounds 3 and 5 both put, so that only the round differs.
    let stale = try #require(
      (0..<50).first {
        workload.expected(round: round, id: $0) != nil
          && workload.expected(round: round - 2, id: $0) != nil
      })
    state[stale] = workload.expected(round: round - 2, id: stale)
    let verdict = workload.check(state)
    #expect(!verdict.isPrefix)
    #expect(verdict.round == round)
    let mismatch = try #require(verdict.mismatch)
    #expect(mismatch.contains(workload.ids[stale]), "\(mismatch)")
    #expect(mismatch.contains("r\(round - 2):\(workload.ids[stale])"), "\(mismatch)")
  }

  @Test("half of a batch is rejected")
  func halfABatch() throws {
    let workload = Self.workload
    var rounds = 0
    for round in 2...9 {
      // Only whole groups: the seventh is short.
      guard
        let group = (0..<6).first(where: { workload.groupWrite(group: $0, round: round) == .batch })
      else { continue }
      rounds += 1
      let start = group * RoundsWorkload.groupSize
      #expect(workload.check(Self.state(round: round, boundary: start)).isPrefix)
      #expect(workload.check(Self.state(round: round, boundary: start + 10)).isPrefix)
      for applied in 1..<10 {
        let verdict = workload.check(Self.state(round: round, boundary: start + applied))
        #expect(!verdict.isPrefix, "round \(round), \(applied) of the batch's puts")
      }
    }
    #expect(rounds >= 6)
  }

  @Test("half of a prefix delete is rejected")
  func halfAPrefixDelete() throws {
    let workload = Self.workload
    var checked = 0
    for round in 2...9 {
      guard
        let group = (0..<6).first(where: {
          workload.groupWrite(group: $0, round: round) == .deletePrefix
        })
      else { continue }
      let start = group * RoundsWorkload.groupSize
      #expect(workload.check(Self.state(round: round, boundary: start)).isPrefix)
      #expect(workload.check(Self.state(round: round, boundary: start + 10)).isPrefix)
      for removed in 1..<10 {
        var state = Self.state(round: round, boundary: start)
        // Some ids of the group gone, others still holding the previous round's values.
        let previous = (start..<start + 10).filter { state[$0] != nil }
        guard previous.count >= 2 else { continue }
        for number in previous.prefix(min(removed, previous.count - 1)) { state[number] = nil }
        let verdict = workload.check(state)
        #expect(!verdict.isPrefix, "round \(round), \(removed) removed")
        checked += 1
      }
    }
    #expect(checked >= 30)
  }

  @Test("an id deleted by the round that is back with its old value is rejected")
  func deletedIDReappears() throws {
    let workload = Self.workload
    for round in 2...8 {
      var state = Self.state(round: round, boundary: workload.idCount)
      // Ids this round deleted (one at a time or with their group) that had a value before.
      let deleted = (0..<workload.idCount).filter {
        workload.expected(round: round, id: $0) == nil
          && workload.expected(round: round - 1, id: $0) != nil
      }
      let back = try #require(deleted.first { $0 < workload.idCount - 10 })
      state[back] = workload.expected(round: round - 1, id: back)
      #expect(!workload.check(state).isPrefix, "round \(round), \(workload.ids[back])")
    }
  }

  @Test("ids that are not the workload's, and values under the wrong id, are rejected")
  func strangersAreRejected() {
    let workload = Self.workload
    var items: [String: String] = [:]
    for (number, value) in Self.state(round: 3, boundary: 40).enumerated() {
      if let value { items[workload.ids[number]] = value }
    }
    #expect(workload.check(items: items).isPrefix)
    var stranger = items
    stranger["g0099-00"] = workload.value(round: 3, id: 0)
    #expect(!workload.check(items: stranger).isPrefix)
    var swapped = items
    let putIDs = items.keys.sorted()
    swapped[putIDs[0]] = items[putIDs[1]]
    swapped[putIDs[1]] = items[putIDs[0]]
    #expect(!workload.check(items: swapped).isPrefix)
    var garbled = items
    garbled[putIDs[2]] = "[\"not a round\"]"
    #expect(!workload.check(items: garbled).isPrefix)
  }

  @Test("a mismatch names the first id that breaks the state and what each round expects")
  func mismatchDescription() throws {
    let workload = Self.workload
    var state = Self.state(round: 4, boundary: 30)
    // A put of round 4 far past the boundary: the ids from the boundary on are at round 3.
    let early = try #require((45..<60).first { workload.expected(round: 4, id: $0) != nil })
    state[early] = workload.expected(round: 4, id: early)
    // The first id from the boundary on where rounds 3 and 4 leave different states.
    let end = try #require(
      (30..<early).first {
        workload.expected(round: 4, id: $0) != workload.expected(round: 3, id: $0)
      })
    let verdict = workload.check(state)
    let mismatch = try #require(verdict.mismatch)
    #expect(mismatch.contains("round 4's state ends at \(workload.ids[end])"), "\(mismatch)")
    #expect(mismatch.contains("but \(workload.ids[early]) holds r4:\(workload.ids[early])"))
    #expect(mismatch.contains("where round 3 leaves"), "\(mismatch)")
  }
}
