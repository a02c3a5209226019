/// Turns JSON text into the stored form without building a ``JSONValue``: what a bulk copy
/// of JSON text (an import of an old database) needs, where parsing each value into
/// dictionaries and strings and writing it out again is most of the work.
///
/// The result is, byte for byte, `JSONWriter.bytes(JSONReader.parse(text))`, and the errors
/// are the reader's, since the text is read by the same scanner (into a ``JSONTape``). The
/// tape is then written out in the stored form: members sorted by their keys' bytes, strings
/// with the writer's escapes, integers as they are, other numbers as the doubles they denote.
///
/// One case is left to the parse-and-write path: an object with a key that has escapes or
/// non-ASCII bytes. A `[String: JSONValue]` merges keys that are equal as Swift strings
/// (canonically equivalent, such as U+212A KELVIN SIGN and `K`), and that, not bytes, is what
/// decides which members the stored form keeps. ASCII keys without escapes are equal as
/// strings exactly when their bytes are, and sort by the bytes of their text as written.
///
/// A canonicalizer keeps its working memory between calls, so one used for many values
/// allocates only when a value is larger than every one before it.
package struct JSONCanonicalizer {
  /// An array or object whose closing bracket has not been written yet.
  private struct Frame {
    var isObject: Bool
    /// Where `next` starts (nothing is written inside the container while it is there): the
    /// tape index of the array's first element, or where the object's run in `order` starts.
    var start: Int
    /// For an array, the tape index of the next element; for an object, the position in
    /// `order` of the next member's key.
    var next: Int
    /// Where `next` stops: the tape index after the array's last element, or the end of the
    /// object's run in `order`.
    var end: Int
  }

  private var frames: [Frame] = []
  /// The open objects' member keys as tape indices, in the order they are written (sorted by
  /// key bytes, repeated keys dropped but the last), innermost object last.
  private var order: [MemberKey] = []

  /// An object member's key, by its tape index.
  private typealias MemberKey = OrderedKey<Int>

  package init() {}

  /// The stored form of the JSON text in `bytes`, as an array (one canonicalizer for one
  /// text: for tests and fuzzing).
  package static func canonicalText(of bytes: UnsafeRawBufferPointer) throws(JSONCodecError)
    -> [UInt8]
  {
    var canonicalizer = JSONCanonicalizer()
    var output = JSONOutput(capacity: bytes.count + 16)
    defer { output.release() }
    try canonicalizer.append(canonicalTextOf: bytes, to: &output)
    return output.bytes()
  }

  /// Appends to `output` the stored form of the JSON text in `bytes`.
  ///
  /// - Throws: the reader's error when `bytes` is not JSON; `output` then holds what it held
  ///   before.
  mutating func append(
    canonicalTextOf bytes: UnsafeRawBufferPointer, to output: inout JSONOutput
  ) throws(JSONCodecError) {
    let start = output.count
    let written = try JSONTape.withTape(of: bytes) { tape in
      write(tape: UnsafeBufferPointer(tape), input: JSONReader.uint8s(bytes), into: &output)
    }
    if !written {
      output.removeLast(output.count - start)
      try JSONWriter.append(JSONReader.parse(bytes), into: &output)
    }
  }

  /// Writes the document of `tape` (the text `input`); false, with part of it written, when
  /// an object has a key that is not plain ASCII (see the type's description).
  private mutating func write(
    tape: UnsafeBufferPointer<JSONTapeEntry>, input: UnsafeBufferPointer<UInt8>,
    into output: inout JSONOutput
  ) -> Bool {
    frames.removeAll(keepingCapacity: true)
    order.removeAll(keepingCapacity: true)
    // Re-reads strings with escapes and numbers that are not plain integers, all of which
    // the scan has found valid.
    var scanner = JSONScanner(input: input)
    var index = 0
    nextValue: while true {
      let entry = tape[index]
      switch entry.kind {
      case .null: output.appendLiteral("null")
      case .true: output.appendLiteral("true")
      case .false: output.appendLiteral("false")
      case .number:
        Self.writeNumber(entry, input: input, scanner: &scanner, into: &output)
      case .string:
        Self.writeString(entry, input: input, scanner: &scanner, into: &output)
      case .array:
        output.append(JSONByte.openBracket)
        if entry.first == 0 {
          output.append(JSONByte.closeBracket)
        } else {
          frames.append(
            Frame(isObject: false, start: index + 1, next: index + 1, end: entry.second))
        }
      case .object:
        output.append(JSONByte.openBrace)
        if entry.first == 0 {
          output.append(JSONByte.closeBrace)
        } else {
          let base = order.count
          guard orderMembers(of: index, in: tape, input: input) else { return false }
          frames.append(
            Frame(isObject: true, start: base, next: base, end: order.count))
        }
      }

      // A value is written: go on with the next one of the innermost open container.
      while let top = frames.last {
        let last = frames.count - 1
        guard top.next < top.end else {
          if top.isObject {
            output.append(JSONByte.closeBrace)
            order.removeLast(order.count - top.start)
          } else {
            output.append(JSONByte.closeBracket)
          }
          frames.removeLast()
          continue
        }
        if top.next != top.start { output.append(JSONByte.comma) }
        if top.isObject {
          let key = order[top.next].payload
          frames[last].next = top.next + 1
          // A plain ASCII key: its text is its stored form.
          output.append(
            contentsOf: UnsafeBufferPointer(
              rebasing: input[(tape[key].first - 1)...tape[key].second]))
          output.append(JSONByte.colon)
          index = key + 1
        } else {
          index = top.next
          frames[last].next = tape[index].isContainer ? tape[index].second : index + 1
        }
        continue nextValue
      }
      break
    }
    return true
  }

  /// Appends the keys of the object at `objectIndex` to `order`, sorted by their bytes, each
  /// repeated key once (its last occurrence, whose value the parse keeps). False when a key
  /// is not plain ASCII.
  private mutating func orderMembers(
    of objectIndex: Int, in tape: UnsafeBufferPointer<JSONTapeEntry>,
    input: UnsafeBufferPointer<UInt8>
  ) -> Bool {
    let base = order.count
    let notPlain = JSONTapeEntry.Flags.hasEscapes | JSONTapeEntry.Flags.hasNonASCII
    func text(_ key: Int) -> UnsafeRawBufferPointer {
      UnsafeRawBufferPointer(
        UnsafeBufferPointer(rebasing: input[tape[key].first..<tape[key].second]))
    }
    var key = objectIndex + 1
    for _ in 0..<tape[objectIndex].first {
      guard tape[key].flags & notPlain == 0 else { return false }
      order.append(MemberKey(prefix: KeyOrder.prefix(of: text(key)), position: key, payload: key))
      let value = key + 1
      key = tape[value].isContainer ? tape[value].second : value + 1
    }
    let kept = order.withUnsafeMutableBufferPointer { all in
      KeyOrder.sortKeepingLast(UnsafeMutableBufferPointer(rebasing: all[base...])) { a, b in
        bytesOrder(text(a), text(b))
      }
    }
    order.removeLast(order.count - base - kept)
    return true
  }

  /// A string value: its text as it is when it has no escapes (the scan has checked its
  /// UTF-8, and without escapes it holds nothing the writer escapes), else decoded and
  /// escaped again as the writer does.
  private static func writeString(
    _ entry: JSONTapeEntry, input: UnsafeBufferPointer<UInt8>, scanner: inout JSONScanner,
    into output: inout JSONOutput
  ) {
    guard entry.flags & JSONTapeEntry.Flags.hasEscapes != 0 else {
      output.append(
        contentsOf: UnsafeBufferPointer(rebasing: input[(entry.first - 1)...entry.second]))
      return
    }
    scanner.position = entry.first - 1
    // The scan read this string already, so reading it again cannot fail.
    let string = try! scanner.scanString(decode: true)
    output.append(JSONByte.quote)
    scanner.withContent(of: string, decoded: true) { output.appendEscaped($0) }
    output.append(JSONByte.quote)
  }

  /// A number: an integer of at most 18 digits as it is (JSON has no leading zeros, so that
  /// is how the writer writes it), except `-0`, which reads as a double; anything else as
  /// the parse reads it.
  private static func writeNumber(
    _ entry: JSONTapeEntry, input: UnsafeBufferPointer<UInt8>, scanner: inout JSONScanner,
    into output: inout JSONOutput
  ) {
    let text = UnsafeBufferPointer(rebasing: input[entry.first..<entry.second])
    let isNegative = text[0] == JSONByte.minus
    if entry.flags & JSONTapeEntry.Flags.isInteger != 0,
      text.count - (isNegative ? 1 : 0) <= 18,
      !(isNegative && text.count == 2 && text[1] == JSONByte.zero)
    {
      output.append(contentsOf: text)
      return
    }
    scanner.position = entry.first
    // The scan read this number already (and found it finite), so neither step can fail.
    let number = try! scanner.scanNumber()
    if let integer = number.int64Value {
      output.appendInteger(integer)
    } else {
      try! output.appendDouble(number.doubleValue(in: input))
    }
  }
}
