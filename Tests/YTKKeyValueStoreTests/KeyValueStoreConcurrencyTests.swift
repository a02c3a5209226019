import Foundation
import Testing
import YTKKeyValueStore

/// One `KeyValueStore` shared by many OS threads: every thread sees its own writes at once,
/// never a torn or foreign value, and the final state is what every thread's model says,
/// also after reopening.
@Suite("KeyValueStore concurrency")
struct KeyValueStoreConcurrencyTests {
  private let directory = TemporaryDirectory("concurrency")
  private static let threadCount = 8
  private static let operationsPerThread = 3_000
  private static let idsPerThread = 150
  private static let table = "shared"

  /// What one thread expects of its own ids, and what it saw go wrong.
  struct ThreadOutcome: Sendable {
    var model: [String: JSONValue] = [:]
    var failures: [String] = []
  }

  private static func id(thread: Int, _ number: Int) -> String { "t\(thread)-\(number)" }

  /// The thread that wrote `value`: every value a worker writes encodes its thread index.
  private static func writer(of value: JSONValue) -> Int? {
    if let thread = value["thread"]?.intValue { return thread }
    switch value[0] {
    case .string(let string)?:
      return string.split(separator: "/").first.flatMap { Int($0.dropFirst()) }
    case .int(let number)?: return Int(number / 1_000_000)
    case .double(let number)?: return Int(number.rounded(.down))
    default: return nil
    }
  }

  /// A thread's deterministic workload on its own ids, with reads of its neighbours' ids.
  private static func work(thread: Int, store: KeyValueStore) -> ThreadOutcome {
    var outcome = ThreadOutcome()
    var generator = SplitMix64(seed: UInt64(thread) &* 7_919 &+ 1)
    func fail(_ message: String) { outcome.failures.append("thread \(thread): \(message)") }
    do {
      // Creating an existing table is harmless, even while others write to it.
      try store.createTable(table)
      for step in 0..<operationsPerThread {
        let id = Self.id(thread: thread, generator.next(below: idsPerThread))
        switch generator.next(below: 100) {
        case 0..<30:
          let value: JSONValue = [
            "thread": .int(Int64(thread)), "step": .int(Int64(step)),
            "text": .string(String(repeating: "\(thread)", count: step % 50)),
          ]
          try store.put(value, id: id, into: table)
          outcome.model[id] = value
        case 30..<40:
          let string = "t\(thread)/\(step)"
          try store.put(string: string, id: id, into: table)
          outcome.model[id] = [.string(string)]
        case 40..<48:
          let number = thread * 1_000_000 + step
          try store.put(number: number, id: id, into: table)
          outcome.model[id] = [.int(Int64(number))]
        case 48..<53:
          let number = Double(thread) + Double(step) / 10_000
          try store.put(number: number, id: id, into: table)
          outcome.model[id] = [.double(number)]
        case 53..<70:
          let read = try store.object(id: id, from: table)
          if read != outcome.model[id] {
            fail(
              "\(id) read \(String(describing: read)), expected \(String(describing: outcome.model[id]))"
            )
          }
        case 70..<80:
          try store.delete(id: id, from: table)
          outcome.model[id] = nil
        case 80..<85:
          let ids = (0..<4).map { _ in Self.id(thread: thread, generator.next(below: idsPerThread))
          }
          try store.delete(ids: ids, from: table)
          for id in ids { outcome.model[id] = nil }
        case 85..<98:
          let other = (thread + 1 + generator.next(below: threadCount - 1)) % threadCount
          let otherID = Self.id(thread: other, generator.next(below: idsPerThread))
          if let read = try store.item(id: otherID, from: table) {
            if writer(of: read.object) != other || read.id != otherID {
              fail("\(otherID) of thread \(other) holds \(read.object)")
            }
          }
        default:
          let count = try store.count(in: table)
          if count > threadCount * idsPerThread {
            fail(
              "the table counts \(count) items; there are only \(threadCount * idsPerThread) ids")
          }
        }
        if step % 500 == 499 {
          for item in try store.allItems(in: table) {
            let owner = writer(of: item.object)
            if owner == nil || !item.id.hasPrefix("t\(owner!)-") {
              fail("\(item.id) holds \(item.object), written by a thread that does not own it")
            }
          }
        }
      }
    } catch {
      fail("threw \(error)")
    }
    return outcome
  }

  /// Checks that the store holds exactly what the threads' models say.
  private static func expectMatches(
    _ store: KeyValueStore, _ outcomes: [Int: ThreadOutcome],
    sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let items = try store.allItems(in: table)
    var expectedCount = 0
    for thread in 0..<threadCount {
      let model = outcomes[thread]?.model ?? [:]
      expectedCount += model.count
      let mine = items.filter { $0.id.hasPrefix("t\(thread)-") }
      #expect(
        Dictionary(uniqueKeysWithValues: mine.map { ($0.id, $0.object) }) == model,
        "thread \(thread)", sourceLocation: sourceLocation)
    }
    #expect(items.count == expectedCount, sourceLocation: sourceLocation)
    #expect(try store.count(in: table) == expectedCount, sourceLocation: sourceLocation)
  }

  @Test("8 threads putting, reading and deleting on one store end where their models say")
  func threadsMatchTheirModels() throws {
    let store = try KeyValueStore(path: directory.storePath)
    try store.createTable(Self.table)
    let outcomes = Locked<[Int: ThreadOutcome]>([:])
    runOnThreads(Self.threadCount) { thread in
      let outcome = Self.work(thread: thread, store: store)
      outcomes.withLock { $0[thread] = outcome }
    }
    let results = outcomes.withLock { $0 }
    #expect(results.count == Self.threadCount)
    for thread in 0..<Self.threadCount {
      let failures = results[thread]?.failures ?? ["thread \(thread) reported nothing"]
      #expect(failures.isEmpty, "\(failures.prefix(10).joined(separator: "\n"))")
    }
    #expect(results.values.contains { !$0.model.isEmpty })

    try Self.expectMatches(store, results)
    let before = try StoreSnapshot(store)
    let reopened = try reopen(store)
    try Self.expectMatches(reopened, results)
    #expect(try StoreSnapshot(reopened) == before)
    #expect(try reopened.statistics().damagedRecords == 0)
    try reopened.close()
  }

  @Test("readers racing a writer see each value whole, old or new, never a mix")
  func readersSeeWholeValues() throws {
    let store = try KeyValueStore(path: directory.storePath)
    try store.createTable(Self.table)
    try store.put(["a": 0, "b": 0, "pad": ""], id: "x", into: Self.table)
    let outcomes = Locked<[Int: ThreadOutcome]>([:])
    let rounds = 2_000
    runOnThreads(4) { thread in
      var outcome = ThreadOutcome()
      do {
        if thread == 0 {
          for round in 1...rounds {
            let padding = String(repeating: "p", count: round % 300)
            try store.put(
              ["a": .int(Int64(round)), "b": .int(Int64(round)), "pad": .string(padding)], id: "x",
              into: Self.table)
          }
        } else {
          var last: Int64 = 0
          for _ in 0..<rounds {
            guard let value = try store.object(id: "x", from: Self.table),
              let a = value["a"]?.int64Value, let b = value["b"]?.int64Value,
              let pad = value["pad"]?.stringValue
            else {
              outcome.failures.append("reader \(thread): x is missing or malformed")
              break
            }
            if a != b || pad.count != Int(a) % 300 || a < last {
              outcome.failures.append("reader \(thread): saw \(value) after round \(last)")
            }
            last = a
          }
        }
      } catch {
        outcome.failures.append("thread \(thread) threw \(error)")
      }
      outcomes.withLock { $0[thread] = outcome }
    }
    let failures = outcomes.withLock { $0.values.flatMap(\.failures) }
    #expect(failures.isEmpty, "\(failures.prefix(10).joined(separator: "\n"))")
    #expect(try store.object(id: "x", from: Self.table)?["a"] == .int(Int64(rounds)))
    try store.close()
  }

  @Test("closing while threads write: every later call throws .closed, every earlier write is kept")
  func closeWhileWriting() throws {
    let store = try KeyValueStore(path: directory.storePath)
    try store.createTable(Self.table)
    let acknowledged = Locked<[Int: Int]>([:])
    let errors = Locked<[String]>([])
    let closeReturned = SharedCounter()
    let closer = 4
    runOnThreads(closer + 1) { thread in
      if thread == closer {
        // Close once every writer has written a while (and in any case, so that they stop).
        do {
          try waitUntil("every writer to write 100 times") {
            acknowledged.withLock { counts in
              (0..<closer).allSatisfy { counts[$0, default: 0] >= 100 }
            }
          }
        } catch {
          errors.withLock { $0.append("\(error)") }
        }
        do { try store.close() } catch { errors.withLock { $0.append("close threw \(error)") } }
        closeReturned.increment()
        return
      }
      var step = 0
      while true {
        do throws(KeyValueStoreError) {
          try store.put(number: step, id: Self.id(thread: thread, step), into: Self.table)
        } catch {
          if error.code != .closed { errors.withLock { $0.append("\(thread): \(error)") } }
          break
        }
        acknowledged.withLock { $0[thread] = step + 1 }
        step += 1
      }
      // A call racing close() may still be served; once close() has returned, none is.
      do {
        try waitUntil("close() to return") { closeReturned.value > 0 }
      } catch {
        errors.withLock { $0.append("\(thread): \(error)") }
        return
      }
      do throws(KeyValueStoreError) {
        _ = try store.object(id: Self.id(thread: thread, 0), from: Self.table)
        errors.withLock { $0.append("\(thread): a read after close succeeded") }
      } catch {
        if error.code != .closed { errors.withLock { $0.append("\(thread): \(error)") } }
      }
    }
    #expect(errors.value == [])
    try store.close()

    let reopened = try KeyValueStore(path: directory.storePath)
    let counts = acknowledged.value
    for thread in 0..<closer {
      let written = counts[thread] ?? 0
      #expect(written > 0)
      for step in 0..<written {
        let value = try reopened.integer(id: Self.id(thread: thread, step), from: Self.table)
        #expect(
          value == step,
          "thread \(thread) step \(step) was acknowledged but is \(String(describing: value))")
      }
    }
    try reopened.close()
  }
}
