import Foundation
import Testing

@testable import YTKKeyValueStore

/// Objects made from a known shape (``JSONObjectShape``) must be exactly the objects made key
/// by key: the same keys, byte for byte, and the same values, whatever the text's keys look
/// like and however many threads read at once. The shapes are shared by the whole process,
/// so these tests assume nothing about which shapes are known beyond what they read
/// themselves.
@Suite("JSON object shapes", .serialized)
struct JSONObjectShapeTests {
  /// The object read from `text`, with its keys' bytes, read twice: the second read can use
  /// the shape the first one taught.
  private func readTwice(_ text: String) throws -> (JSONValue, JSONValue) {
    // Room for the shape this teaches (other suites' reads share the list).
    JSONObjectShapes.shared.removeAll()
    let first = try JSONReader.parse(Array(text.utf8))
    let second = try JSONReader.parse(Array(text.utf8))
    return (first, second)
  }

  /// The keys of an object's members, as bytes, sorted.
  private func keyBytes(_ value: JSONValue) -> [[UInt8]] {
    guard case .object(let members) = value else { return [] }
    return members.keys.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
  }

  /// What an object of `text` must be, built here member by member from Foundation's reading.
  private func expected(_ text: String) throws -> JSONValue {
    let object = try #require(
      try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    var members: [String: JSONValue] = [:]
    for (key, value) in object {
      switch value {
      case let string as String: members[key] = .string(string)
      case let number as NSNumber: members[key] = .int(number.int64Value)
      default: Issue.record("unexpected value \(value)")
      }
    }
    return .object(members)
  }

  @Test("an object of a known shape reads as the same dictionary, keys byte for byte")
  func knownShapeReadsTheSame() throws {
    let texts = [
      #"{"age":30,"bio":"hello world","city":"Beijing","id":12345,"name":"tangqiao"}"#,
      #"{"x":1,"y":2,"z":3}"#,
      #"{"z":3,"y":2,"x":1}"#,
      #"{"long key that is not short at all":1,"b":2,"c":"three","d":4}"#,
      #"{"é":1,"ü":2,"中文":3,"😀":4}"#,
      #"{"":0,"a":1,"aa":2,"aaa":3}"#,
    ]
    for text in texts {
      let (first, second) = try readTwice(text)
      #expect(first == second, "\(text)")
      #expect(keyBytes(first) == keyBytes(second), "\(text)")
      #expect(first == (try expected(text)), "\(text)")
      // The values are the text's, not the first read's: the same keys with other values.
      let other = text.replacingOccurrences(of: "1", with: "7")
      #expect(try JSONReader.parse(Array(other.utf8)) == (try expected(other)), "\(other)")
    }
  }

  @Test("keys that differ from a known shape's in any way are read key by key")
  func nearMissesReadKeyByKey() throws {
    // Teach the shapes first.
    _ = try readTwice(#"{"abc":1,"def":2,"ghi":3}"#)
    _ = try readTwice(#"{"a long key, longer than a word":1,"ninebytes":2,"z":3}"#)
    let nearMisses = [
      // One byte changed, one key longer, one shorter, keys in another order.
      #"{"abc":1,"dEf":2,"ghi":3}"#, #"{"abc":1,"defg":2,"ghi":3}"#,
      #"{"abc":1,"de":2,"ghi":3}"#, #"{"def":2,"abc":1,"ghi":3}"#,
      // A member more, a member fewer.
      #"{"abc":1,"def":2,"ghi":3,"jkl":4}"#, #"{"abc":1,"def":2}"#,
      // The same key spelled with an escape: the same string, read as such.
      #"{"abc":1,"d\u0065f":2,"ghi":3}"#,
      // Differences past the first word of a long key, in the last byte of a key, and in a
      // key at the very end of the text.
      #"{"a long key, longer than a wore":1,"ninebytes":2,"z":3}"#,
      #"{"a long key, longer than a word":1,"ninebyteS":2,"z":3}"#,
      #"{"a long key, longer than a word":1,"ninebytes":2,"y":3}"#,
      // A repeated key: the last value wins, as ever.
      #"{"abc":1,"abc":2,"ghi":3}"#,
    ]
    for text in nearMisses {
      let value = try JSONReader.parse(Array(text.utf8))
      #expect(value == (try expected(text)), "\(text)")
    }
  }

  @Test("canonically equivalent keys stay one key, in either spelling")
  func canonicallyEquivalentKeys() throws {
    // "é" precomposed and decomposed are one `String` key but different bytes: neither text
    // may be read through the other's shape, and one object with both has one member.
    let precomposed = "{\"\u{E9}\":1,\"b\":2,\"c\":3}"
    let decomposed = "{\"e\u{301}\":1,\"b\":2,\"c\":3}"
    for text in [precomposed, decomposed, precomposed, decomposed] {
      let value = try JSONReader.parse(Array(text.utf8))
      #expect(value == ["\u{E9}": 1, "b": 2, "c": 3])
      // The key keeps the text's own bytes.
      let keyUTF8 = keyBytes(value).first {
        $0.first != UInt8(ascii: "b") && $0.first != UInt8(ascii: "c")
      }
      #expect(keyUTF8 == Array(text.utf8.dropFirst(2).prefix(while: { $0 != UInt8(ascii: "\"") })))
    }
    let both = "{\"\u{E9}\":1,\"e\u{301}\":2,\"x\":3}"
    for _ in 0..<2 {
      let value = try JSONReader.parse(Array(both.utf8))
      #expect(value.objectValue?.count == 2)
      #expect(value["\u{E9}"] == 2)
    }
  }

  @Test("objects nested in arrays and objects are made from shapes at every level")
  func nestedShapes() throws {
    var text = #"{"items":["#
    for index in 0..<50 {
      if index > 0 { text += "," }
      text += #"{"id":\#(index),"kind":"k\#(index % 3)","tags":{"a":1,"b":2,"c":\#(index)}}"#
    }
    text += #"],"meta":{"count":50,"next":null,"page":1}}"#
    let value = try JSONReader.parse(Array(text.utf8))
    let items = try #require(value["items"]?.arrayValue)
    #expect(items.count == 50)
    for (index, item) in items.enumerated() {
      #expect(
        item == [
          "id": .int(Int64(index)), "kind": .string("k\(index % 3)"),
          "tags": ["a": 1, "b": 2, "c": .int(Int64(index))],
        ])
    }
    #expect(value["meta"] == ["count": 50, "next": nil, "page": 1])
    // The same document read from its canonical text, and back to the same text.
    let canonical = try JSONWriter.bytes(value)
    #expect(try JSONWriter.bytes(JSONReader.parse(canonical)) == canonical)
  }

  @Test("the shapes known stay few however many shapes are read")
  func shapesStayBounded() throws {
    for index in 0..<500 {
      let text = #"{"a\#(index)":1,"b\#(index)":2,"c\#(index)":3}"#
      #expect(try JSONReader.parse(Array(text.utf8)) == (try expected(text)))
    }
    #expect(JSONObjectShapes.shared.current().count <= JSONObjectShapes.capacity)
    // Once full, new shapes still come in, in turn: the last of these replaces one.
    for index in 0..<40 {
      let text = #"{"p\#(index)":1,"q":2,"r":3}"#
      #expect(try JSONReader.parse(Array(text.utf8)) == (try expected(text)))
    }
    #expect(JSONObjectShapes.shared.current().count == JSONObjectShapes.capacity)
    JSONObjectShapes.shared.removeAll()
  }

  @Test(
    "a list of shapes takes every shape while it has room, then one offer in eight, each set of keys once, replacing its shapes in turn"
  )
  func listOfShapes() throws {
    let shapes = JSONObjectShapes()
    for index in 0..<JSONObjectShapes.capacity {
      #expect(shapes.wantsShape())
      let keys = ["a\(index)", "b", "c"]
      shapes.learn(try #require(JSONObjectShape(keys: keys)))
      shapes.learn(try #require(JSONObjectShape(keys: keys)))
    }
    #expect(shapes.current().count == JSONObjectShapes.capacity)
    #expect((0..<16).filter { _ in shapes.wantsShape() }.count == 2)
    // After 16 offers, the third shape is the one replaced.
    let newcomer = try #require(JSONObjectShape(keys: ["x", "y", "z"]))
    shapes.learn(newcomer)
    let current = shapes.current()
    #expect(current.count == JSONObjectShapes.capacity)
    #expect(current[2].hasSameKeys(as: newcomer))
    #expect(current[1].hasSameKeys(as: try #require(JSONObjectShape(keys: ["a1", "b", "c"]))))
  }

  @Test("threads reading objects of many shapes at once all read them right")
  func concurrentReads() throws {
    let threads = 8
    let failures = LockedFailures()
    DispatchQueue.concurrentPerform(iterations: threads) { thread in
      for round in 0..<400 {
        // Shapes shared between threads, and shapes of each thread's own.
        let shape = round % 2 == 0 ? round % 40 : 1_000 * thread + round % 40
        let text = #"{"k\#(shape)a":\#(round),"k\#(shape)b":"\#(thread)","k\#(shape)c":[1,2]}"#
        let want: JSONValue = [
          "k\(shape)a": .int(Int64(round)), "k\(shape)b": .string("\(thread)"),
          "k\(shape)c": [1, 2],
        ]
        guard (try? JSONReader.parse(Array(text.utf8))) == want else {
          failures.add(text)
          return
        }
      }
    }
    #expect(failures.all.isEmpty, "\(failures.all.prefix(3))")
  }
}

/// Failures collected from several threads.
private final class LockedFailures: @unchecked Sendable {
  private let lock = NSLock()
  private var failures: [String] = []
  func add(_ failure: String) { lock.withLock { failures.append(failure) } }
  var all: [String] { lock.withLock { failures } }
}
