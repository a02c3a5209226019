/// Writes a ``JSONValue`` as the canonical compact JSON text that the store keeps on disk.
///
/// The text is the stored format, so these rules are fixed forever: the same value must give
/// the same bytes in every version, and the text must read back (with ``JSONReader``) as
/// the same value.
///
/// - The output is RFC 8259 JSON in UTF-8, with no whitespace anywhere.
/// - `null`, `true` and `false` are written as themselves.
/// - An object's members are sorted by the UTF-8 bytes of their keys (a plain byte-wise
///   comparison, shorter key first when one is a prefix of the other), so equal values give
///   equal bytes whatever order their members were inserted in.
/// - A string is written between `"` with exactly these escapes: `"` as `\"`, `\` as `\\`,
///   U+0008 as `\b`, U+000C as `\f`, U+000A as `\n`, U+000D as `\r`, U+0009 as `\t`, and
///   every other character below U+0020 as `\u00XX` with two lowercase hex digits. Everything
///   else, `/` and all non-ASCII characters included, is written as its raw UTF-8 bytes.
///   Keys are written the same way.
/// - An integer (``JSONValue/int(_:)``) is written in plain decimal: an optional `-`, then
///   digits without leading zeros. Every `Int64` is allowed, `Int64.min` included.
/// - A double (``JSONValue/double(_:)``) is written with the fewest significant digits that
///   read back as exactly the same double (of those, the closest to it), after a `-` if its
///   sign is negative (zero included), laid out as follows. Zero is `0.0`. A magnitude from
///   1e-4 through 2^53 is positional, with at least one digit on each side of the point:
///   `2.0`, `0.1`, `123.456`, `0.00012`, `9007199254740992.0`. Anything else is scientific:
///   the first digit, then `.` and the other digits if there are any, then `e`, the
///   exponent's sign (`+` or `-`) and at least two exponent digits: `1e+16`, `1.5e-10`,
///   `1e-05`, `5e-324`. This is exactly how Swift's `Double.description` reads today. The
///   text always contains `.` or `e`, so it reads back as a double, never as an integer.
///   NaN and the infinities have no JSON form and are an error.
/// - Arrays and objects nest at most ``JSONReader/maximumDepth`` levels deep, the most the
///   reader accepts; deeper values are an error, so nothing is written that cannot be read.
///
/// Errors thrown by the writer have `offset` 0.
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
  /// allocation.
  static func withText<R, E: Error>(
    of value: JSONValue, _ body: (UnsafeRawBufferPointer) throws(E) -> R
  ) throws(JSONWriteOrBodyError<E>) -> R {
    try JSONOutput.withScratch { (output: inout JSONOutput) throws(JSONWriteOrBodyError<E>) in
      do throws(JSONCodecError) {
        try append(value, into: &output)
      } catch {
        throw .write(error)
      }
      do throws(E) {
        return try output.withBytes(body)
      } catch {
        throw .body(error)
      }
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
      return
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

/// A failure of ``JSONWriter/withText(of:_:)``: the value could not be written, or the
/// caller's body threw.
enum JSONWriteOrBodyError<Body: Error>: Error {
  case write(JSONCodecError)
  case body(Body)
}

/// The shortest decimal that reads back as exactly a given double's magnitude: the digits of
/// `significand` (which has no trailing zeros) read as d.ddd × 10^exponent.
///
/// The digits come from Swift's `Double.description`, which prints the shortest digit string
/// that round-trips (and of those, the closest to the exact value), so they are fully
/// determined by the double. Only the digits are taken from it, not its layout: the writer
/// lays them out by its own fixed rules, so that a change in how Swift formats numbers could
/// not change stored bytes.
struct ShortestDecimal {
  var significand: UInt64 = 0
  var digitCount = 0
  /// The power of ten of the first digit.
  var exponent = 0

  init(_ value: Double) {
    // `description` of a finite double is JSON number syntax, read by the scanner: its
    // digits as one integer, exact (at most 17 are significant), and the power of ten they
    // are scaled by.
    var description = value.description
    guard
      let number = description.withUTF8({ utf8 -> JSONScannedNumber? in
        var scanner = JSONScanner(input: utf8)
        return try? scanner.scanNumber()
      }), number.significand != 0
    else { return }
    significand = number.significand
    var scale = number.exponent
    while significand % 10 == 0 {
      significand /= 10
      scale += 1
    }
    var remaining = significand
    repeat {
      digitCount += 1
      remaining /= 10
    } while remaining != 0
    exponent = scale + digitCount - 1
  }

  /// The ASCII digits of `significand`, most significant first.
  func digits() -> Digits {
    var divisor: UInt64 = 1
    for _ in 1..<max(digitCount, 1) { divisor *= 10 }
    return Digits(remaining: significand, divisor: divisor)
  }

  struct Digits: IteratorProtocol {
    var remaining: UInt64
    /// The place value of the next digit; 0 when all are out.
    var divisor: UInt64

    mutating func next() -> UInt8? {
      guard divisor != 0 else { return nil }
      let digit = remaining / divisor
      remaining %= divisor
      divisor /= 10
      return JSONByte.zero &+ UInt8(truncatingIfNeeded: digit)
    }
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
