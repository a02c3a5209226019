import Foundation
import Testing

@testable import LogStore

/// `.manyProcesses` against a model: three writing opens and a follower of one store (each its
/// own open, as separate processes are), driven from one thread by a seeded generator through
/// puts, deletes, batches, table changes, rotations, compactions, checkpoints and reopens in any
/// order. Every read of every open must be the model's, and so must a new open's at the end.
@Suite("Many processes against a model")
struct ManyProcessesModelTests {
  @Test(
    "random steps of three writers and a follower: every read of every open is the model's",
    arguments: [UInt64(1), 2, 3, 4])
  func randomSteps(seed: UInt64) throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let options = ManyProcessesTests.options(maxSegmentSize: 4 << 10)
    var writers = try (0..<3).map { _ in try LogStore(path: path, options: options) }
    let follower = try LogStore(path: path, options: ManyProcessesTests.options(readOnly: true))
    try writers[0].createTable("t")
    var model: [String: [String: String]] = ["t": [:]]
    var generator = SplitMix64(seed: seed)
    func pick(_ count: Int) -> Int { Int(generator.next() % UInt64(count)) }
    let steps = TestDepth.choose(sample: 1_500, full: 6_000)
    for step in 0..<steps {
      let writer = writers[pick(writers.count)]
      let key = "k\(pick(40))"
      let context = "seed \(seed), step \(step)"
      switch pick(100) {
      case 0..<45:
        let value = String(repeating: "v\(step)", count: 1 + pick(12))
        try writer.put(value.bytes, forKey: key.bytes, in: "t")
        model["t"]![key] = value
      case 45..<58:
        try writer.delete(key: key.bytes, in: "t")
        model["t"]![key] = nil
      case 58..<66:
        var batch = WriteBatch()
        for member in 0..<(1 + pick(5)) {
          let key = "k\(pick(40))"
          if pick(4) == 0 {
            batch.delete(key: key.bytes, in: "t")
            model["t"]![key] = nil
          } else {
            let value = "b\(step).\(member)"
            batch.put(value.bytes, forKey: key.bytes, in: "t")
            model["t"]![key] = value
          }
        }
        try writer.write(batch)
      case 66..<69:
        if model["u"] == nil {
          try writer.createTable("u")
          model["u"] = [:]
        } else if pick(2) == 0 {
          try writer.dropTable("u")
          model["u"] = nil
        } else {
          try writer.clearTable("u")
          model["u"] = [:]
        }
      case 69..<74:
        guard model["u"] != nil else { continue }
        try writer.put("u\(step)".bytes, forKey: key.bytes, in: "u")
        model["u"]![key] = "u\(step)"
      case 74..<76:
        try writer.compact()
      case 76..<78:
        try writer.checkpoint()
      case 78..<79:
        let index = pick(writers.count)
        try writers[index].close()
        writers[index] = try LogStore(path: path, options: options)
      case 79..<90:
        let reader = pick(4) == 0 ? follower : writer
        let read = try reader.value(forKey: key.bytes, in: "t").map {
          String(decoding: $0, as: UTF8.self)
        }
        #expect(read == model["t"]![key], "\(context): \(key)")
      default:
        let reader = pick(4) == 0 ? follower : writer
        let read = try reader.snapshot()
        #expect(read == model, "\(context): snapshot")
        if read != model { return }
      }
    }
    for store in writers + [follower] {
      #expect(try store.snapshot() == model, "seed \(seed): at the end")
      try store.close()
    }
    let reopened = try LogStore(path: path, options: .init(readOnly: true, corruption: .fail))
    #expect(try reopened.snapshot() == model, "seed \(seed): reopened")
    try reopened.close()
    #expect(try LogStore.verify(path: path).isClean)
  }
}
