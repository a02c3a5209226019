/// Writes a ``JSONValue`` as the canonical compact JSON text that the store keeps on disk:
/// the stored form, whose rules (docs/FORMAT.md, "Values: the stored JSON text") are fixed
/// forever: the same value gives the same bytes in every version, and the text reads back
/// (with ``JSONReader``) as the same value. Errors thrown by the writer have `offset` 0.
package enum JSONWriter {
  /// Returns the canonical compact JSON text of `value`; with `lenient`, the text of
  /// `JSONValue.description`, where non-finite doubles appear as `nan`, `inf` and `-inf` and
  /// nesting is not limited (and nothing throws).
  package static func bytes(_ value: JSONValue, lenient: Bool = false) throws(JSONCodecError)
    -> [UInt8]
  {
    try JSONOutput.withScratch { (output: inout JSONOutput) throws(JSONCodecError) in
      try append(value, lenient: lenient, into: &output)
      return output.bytes()
    }
  }

  /// Calls `body` with the canonical compact JSON text of `value`, borrowed for the call:
  /// for a caller that reads the text once (the store copies it into its log). Text that fits
  /// in 1 KiB is written on the thread's stack, so a typical value is written without a heap
  /// allocation. A value that cannot be written throws `writeError`'s error for it.
  static func withText<R, E: Error>(
    of value: JSONValue, writeError: (JSONCodecError) -> E,
    body: (UnsafeRawBufferPointer) throws(E) -> R
  ) throws(E) -> R {
    try JSONOutput.withScratch { (output: inout JSONOutput) throws(E) in
      do throws(JSONCodecError) {
        try append(value, into: &output)
      } catch {
        throw writeError(error)
      }
      return try output.withBytes(body)
    }
  }

  /// Calls `body` with the canonical text of `[string]`, how YTKKeyValueStore stored a
  /// string, written without building the array (on the stack when it fits).
  package static func withText<R, E: Error>(
    wrapping string: String, _ body: (UnsafeRawBufferPointer) throws(E) -> R
  ) throws(E) -> R {
    try JSONOutput.withScratch { (output: inout JSONOutput) throws(E) in
      output.append(JSONByte.openBracket)
      output.appendString(string)
      output.append(JSONByte.closeBracket)
      return try output.withBytes(body)
    }
  }

  /// Calls `body` with the canonical text of `[integer]`, how YTKKeyValueStore stored a
  /// number.
  static func withText<R, E: Error>(
    wrapping integer: Int64, _ body: (UnsafeRawBufferPointer) throws(E) -> R
  ) throws(E) -> R {
    try JSONOutput.withScratch { (output: inout JSONOutput) throws(E) in
      output.append(JSONByte.openBracket)
      output.appendInteger(integer)
      output.append(JSONByte.closeBracket)
      return try output.withBytes(body)
    }
  }

  /// An array or object whose closing bracket has not been written yet.
  private struct OpenContainer {
    /// The array's elements; empty for an object.
    var elements: [JSONValue] = []
    /// The object's members; empty for an array.
    var members: [String: JSONValue] = [:]
    var isObject: Bool
    /// The next element to write, or for an object the position in `order` of the next
    /// member to write.
    var next: Int
    /// Where `next` stops: the element count, or the end of the object's run in `order`.
    var end: Int
  }

  /// Appends the canonical compact JSON text of `value` to `output` (with `lenient`, the text
  /// of `JSONValue.description`).
  ///
  /// Written with an explicit stack of open containers, not by recursion, so that no value
  /// can exhaust the thread's stack (debug builds have large frames). The work in progress
  /// starts on the thread's stack (``ScratchStack``), so a typical value is written without
  /// allocating.
  static func append(
    _ value: JSONValue, lenient: Bool = false, into output: inout JSONOutput
  ) throws(JSONCodecError) {
    try ScratchStack<OpenContainer>.withScratch { (outer) throws(JSONCodecError) in
      try ScratchStack<MemberKey>.withScratch { (order) throws(JSONCodecError) in
        try append(value, lenient: lenient, into: &output, outer: &outer, order: &order)
      }
    }
  }

  /// An object member in the writer's order: where it is in its dictionary.
  typealias MemberKey = OrderedKey<[String: JSONValue].Index>

  /// Each pass of the outer loop writes the start of one value: a scalar whole, or the
  /// opening of a container and the start of its first element. The inner loop then moves
  /// to the next element of the innermost open container, closing those that are done.
  ///
  /// The innermost open container is `open`; the ones around it wait in `outer`. The open
  /// objects' members are in `order`, in key order, innermost object last: sorting indices
  /// with the keys' first bytes is much cheaper than sorting (key, value) pairs, whose every
  /// move costs reference counting, and most comparisons end at the first bytes.
  private static func append(
    _ value: JSONValue, lenient: Bool, into output: inout JSONOutput,
    outer: inout ScratchStack<OpenContainer>, order: inout ScratchStack<MemberKey>
  ) throws(JSONCodecError) {
    var open: OpenContainer?
    var current = value
    nextValue: while true {
      switch current {
      case .null:
        output.appendLiteral("null")
      case .bool(let bool):
        output.appendLiteral(bool ? "true" : "false")
      case .int(let int):
        output.appendInteger(int)
      case .double(let double):
        try output.appendDouble(double, lenient: lenient)
      case .string(let string):
        output.appendString(string)
      case .array(let elements):
        let depth = outer.count + (open == nil ? 1 : 2)
        try checkDepth(depth, lenient: lenient)
        output.append(JSONByte.openBracket)
        if let first = elements.first {
          if let open { outer.append(open) }
          open = OpenContainer(elements: elements, isObject: false, next: 1, end: elements.count)
          current = first
          continue nextValue
        }
        output.append(JSONByte.closeBracket)
      case .object(let members):
        let depth = outer.count + (open == nil ? 1 : 2)
        try checkDepth(depth, lenient: lenient)
        output.append(JSONByte.openBrace)
        if !members.isEmpty {
          let start = order.count
          order.reserve(members.count)
          var index = members.startIndex
          while index != members.endIndex {
            let prefix = members.keys[index].withUTF8Bytes { KeyOrder.prefix(of: $0) }
            order.append(MemberKey(prefix: prefix, position: 0, payload: index))
            members.formIndex(after: &index)
          }
          if members.count > 1 {
            // A dictionary's keys differ in their bytes: none is dropped.
            _ = order.withElements(from: start) { run in
              KeyOrder.sortKeepingLast(run) { a, b in
                members.keys[a].withUTF8Bytes { a in
                  members.keys[b].withUTF8Bytes { b in bytesOrder(a, b) }
                }
              }
            }
          }
          if let open { outer.append(open) }
          open = OpenContainer(
            members: members, isObject: true, next: start + 1, end: order.count)
          let first = members[order[start].payload]
          output.appendString(first.key)
          output.append(JSONByte.colon)
          current = first.value
          continue nextValue
        }
        output.append(JSONByte.closeBrace)
      }

      // `current` is written: go on with the next element of the innermost open container.
      // (The container is read in place through `open!`: a copy of it would retain its
      // elements at every step.)
      while open != nil {
        let next = open!.next
        if next < open!.end {
          open!.next = next + 1
          output.append(JSONByte.comma)
          if open!.isObject {
            let member = open!.members[order[next].payload]
            output.appendString(member.key)
            output.append(JSONByte.colon)
            current = member.value
          } else {
            current = open!.elements[next]
          }
          continue nextValue
        }
        if open!.isObject {
          output.append(JSONByte.closeBrace)
          order.removeLast(open!.members.count)
        } else {
          output.append(JSONByte.closeBracket)
        }
        open = outer.popLast()
      }
      break
    }
  }

  private static func checkDepth(_ depth: Int, lenient: Bool) throws(JSONCodecError) {
    guard depth > JSONReader.maximumDepth, !lenient else { return }
    throw JSONCodecError(
      message: "JSON arrays and objects cannot nest deeper than \(JSONReader.maximumDepth) levels",
      offset: 0)
  }

  /// The high bit of each byte of `word` (the first in its low byte) that must be escaped.
  ///
  /// Exact, unlike the shorter `(x - 0x01…01) & ~x & 0x80…80` test for a zero byte, whose
  /// borrow can flag a byte above a zero one: here a byte's seven low bits are added to
  /// 0x7F on their own, so nothing carries out of a byte, and its high bit is set in the sum
  /// or in the byte exactly when the byte is not zero.
  static func escapeMask(_ word: UInt64) -> UInt64 {
    let low: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
    let ones: UInt64 = 0x0101_0101_0101_0101
    /// The high bit of a byte of the result is clear exactly where that byte of `v` is zero.
    func nonZero(_ v: UInt64) -> UInt64 { ((v & low) &+ low) | v }
    let quotes = nonZero(word ^ (ones &* UInt64(JSONByte.quote)))
    let backslashes = nonZero(word ^ (ones &* UInt64(JSONByte.backslash)))
    // A byte below 0x20 is one whose top three bits are clear.
    let controls = nonZero(word & 0xE0E0_E0E0_E0E0_E0E0)
    return ~(quotes & backslashes & controls | low)
  }

  static func mustEscape(_ byte: UInt8) -> Bool {
    byte < 0x20 || byte == JSONByte.quote || byte == JSONByte.backslash
  }
}

/// The ASCII bytes of JSON syntax, named once for the reader and the writer.
enum JSONByte {
  static let tab = UInt8(ascii: "\t")
  static let lineFeed = UInt8(ascii: "\n")
  static let carriageReturn = UInt8(ascii: "\r")
  static let space = UInt8(ascii: " ")
  static let quote = UInt8(ascii: "\"")
  static let plus = UInt8(ascii: "+")
  static let comma = UInt8(ascii: ",")
  static let minus = UInt8(ascii: "-")
  static let dot = UInt8(ascii: ".")
  static let slash = UInt8(ascii: "/")
  static let zero = UInt8(ascii: "0")
  static let one = UInt8(ascii: "1")
  static let nine = UInt8(ascii: "9")
  static let colon = UInt8(ascii: ":")
  static let uppercaseA = UInt8(ascii: "A")
  static let uppercaseE = UInt8(ascii: "E")
  static let uppercaseF = UInt8(ascii: "F")
  static let openBracket = UInt8(ascii: "[")
  static let backslash = UInt8(ascii: "\\")
  static let closeBracket = UInt8(ascii: "]")
  static let lowercaseA = UInt8(ascii: "a")
  static let lowercaseB = UInt8(ascii: "b")
  static let lowercaseE = UInt8(ascii: "e")
  static let lowercaseF = UInt8(ascii: "f")
  static let lowercaseN = UInt8(ascii: "n")
  static let lowercaseR = UInt8(ascii: "r")
  static let lowercaseT = UInt8(ascii: "t")
  static let lowercaseU = UInt8(ascii: "u")
  static let openBrace = UInt8(ascii: "{")
  static let closeBrace = UInt8(ascii: "}")
  static let lowercaseHexDigits: [UInt8] = Array("0123456789abcdef".utf8)
}
