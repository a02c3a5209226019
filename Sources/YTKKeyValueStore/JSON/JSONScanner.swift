/// An array or object whose closing bracket has not been read yet.
private struct OpenContainer {
  var isObject: Bool
  /// What the sink returned when the container began.
  var mark: Int
  /// The number of elements, or members, read so far.
  var count: Int
  /// The offset of its opening bracket, for error messages.
  var offset: Int
}

/// A reader of JSON's grammar over one input. Its position only moves forward; every access
/// to `input` is preceded by a check against `input.count`.
///
/// Arrays and objects are read with an explicit stack, not by recursion, so the nesting
/// limit is a policy rather than a guard against overflowing the thread's stack, and deep
/// documents are as safe in debug builds (whose frames are large) as in release builds.
///
/// Besides reading whole documents, the scanner re-reads single tokens that an earlier scan
/// found valid: ``StoredJSONDecoder`` decodes strings and numbers with it on demand.
struct JSONScanner {
  let input: UnsafeBufferPointer<UInt8>
  var position = 0
  /// Where a string with escapes is decoded as it is read, for a sink that decodes
  /// (``JSONScanSink/decodesStrings``): scratch space of the document's scan.
  var scratch: UnsafeMutableRawBufferPointer?
  /// The decoded UTF-8 of the last string with escapes: the first `decodedLength` bytes of
  /// `scratch`, or, when it did not fit there (`decodedLength` -1), `unescaped`.
  var decodedLength = 0
  /// Nil until needed, so that a scanner that never needs it has nothing to release.
  var unescaped: [UInt8]?

  // MARK: Documents

  /// Reads the document from `position` to the end of the input.
  mutating func scanDocument<Sink: JSONScanSink>(into sink: inout Sink) throws(JSONCodecError) {
    // One temporary allocation small enough to be on the thread's stack (1 KiB:
    // `withUnsafeTemporaryAllocation` uses the heap beyond that), in two halves: the
    // containers being read, which holds the nesting of most documents (deeper ones move to
    // the heap), and for a sink that decodes strings, where a string with escapes is decoded
    // as it is read when it fits.
    try withUnsafeTemporaryAllocation(
      byteCount: 1024, alignment: MemoryLayout<OpenContainer>.alignment
    ) { (memory) throws(JSONCodecError) in
      let half = memory.count / 2
      let containers = UnsafeMutableRawBufferPointer(rebasing: memory[..<half])
        .bindMemory(to: OpenContainer.self)
      var open = ScratchStack(scratch: containers)
      defer { open.release() }
      if Sink.decodesStrings { scratch = UnsafeMutableRawBufferPointer(rebasing: memory[half...]) }
      defer { scratch = nil }
      try scanDocument(into: &sink, open: &open)
    }
  }

  /// Reads the document with `open` as the stack of the containers being read.
  ///
  /// The loop alternates two steps: read the start of a value (a scalar whole, or the
  /// opening of a container, which is pushed onto `open`); then, holding a complete value,
  /// count it in the innermost open container and read the separator that follows, closing
  /// as many containers as end there.
  private mutating func scanDocument<Sink: JSONScanSink>(
    into sink: inout Sink, open: inout ScratchStack<OpenContainer>
  ) throws(JSONCodecError) {
    nextValue: while true {
      skipWhitespace()
      guard position < input.count else {
        throw error("unexpected end of input, expected a JSON value")
      }
      switch input[position] {
      case JSONByte.quote:
        let string = try scanString(decode: Sink.decodesStrings)
        withContent(of: string, decoded: Sink.decodesStrings) { sink.string(string, content: $0) }
      case JSONByte.openBracket, JSONByte.openBrace:
        let isObject = input[position] == JSONByte.openBrace
        guard open.count < JSONReader.maximumDepth else {
          throw error("arrays and objects nest deeper than \(JSONReader.maximumDepth) levels")
        }
        let container = OpenContainer(
          isObject: isObject, mark: sink.beginContainer(isObject: isObject), count: 0,
          offset: position)
        position += 1
        skipWhitespace()
        let closing = isObject ? JSONByte.closeBrace : JSONByte.closeBracket
        if position < input.count, input[position] == closing {
          position += 1
          sink.endContainer(isObject: isObject, mark: container.mark, count: 0)
        } else {
          open.append(container)
          if isObject {
            try scanMemberKey(into: &sink, inside: container)
          }
          continue nextValue
        }
      case JSONByte.lowercaseT:
        try expectLiteral("true")
        sink.literal(.true)
      case JSONByte.lowercaseF:
        try expectLiteral("false")
        sink.literal(.false)
      case JSONByte.lowercaseN:
        try expectLiteral("null")
        sink.literal(.null)
      case JSONByte.minus, JSONByte.zero...JSONByte.nine:
        sink.number(try scanNumber(), in: input)
      case let byte:
        throw error("expected a JSON value but found \(describe(byte))")
      }

      // A value is complete: it is the document, or it joins the innermost open container.
      while open.count > 0 {
        open[open.count - 1].count += 1
        let container = open[open.count - 1]
        skipWhitespace()
        guard position < input.count else {
          throw endOfInput(inside: container)
        }
        let byte = input[position]
        if byte == JSONByte.comma {
          position += 1
          skipWhitespace()
          if container.isObject {
            try scanMemberKey(into: &sink, inside: container)
          } else if position < input.count, input[position] == JSONByte.closeBracket {
            throw error("expected a JSON value after ',' but found ']' (no trailing commas)")
          }
          continue nextValue
        }
        guard byte == (container.isObject ? JSONByte.closeBrace : JSONByte.closeBracket) else {
          let (closing, after) =
            container.isObject ? ("}", "an object member") : ("]", "an array element")
          throw error("expected ',' or '\(closing)' after \(after) but found \(describe(byte))")
        }
        position += 1
        open.removeLast()
        sink.endContainer(
          isObject: container.isObject, mark: container.mark, count: container.count)
      }
      skipWhitespace()
      if position < input.count {
        throw error("unexpected \(describe(input[position])) after the JSON value")
      }
      break
    }
  }

  /// Reads an object member's key at `position` and the ':' after it, and reports the key.
  private mutating func scanMemberKey<Sink: JSONScanSink>(
    into sink: inout Sink, inside container: OpenContainer
  ) throws(JSONCodecError) {
    guard position < input.count else {
      throw endOfInput(inside: container)
    }
    guard input[position] == JSONByte.quote else {
      if input[position] == JSONByte.closeBrace {
        throw error("expected a string key after ',' but found '}' (no trailing commas)")
      }
      throw error("expected a string key in the object but found \(describe(input[position]))")
    }
    let key = try scanString(decode: Sink.decodesStrings)
    skipWhitespace()
    guard position < input.count, input[position] == JSONByte.colon else {
      throw error("expected ':' after object key")
    }
    position += 1
    withContent(of: key, decoded: Sink.decodesStrings) { sink.key(key, content: $0) }
  }

  mutating func expectLiteral(_ literal: StaticString) throws(JSONCodecError) {
    let length = literal.utf8CodeUnitCount
    let expected = UnsafeBufferPointer(start: literal.utf8Start, count: length)
    for index in 0..<length {
      guard position + index < input.count, input[position + index] == expected[index] else {
        throw error("invalid literal, expected '\(literal)'")
      }
    }
    position += length
  }

  private func endOfInput(inside container: OpenContainer) -> JSONCodecError {
    let kind = container.isObject ? "object" : "array"
    return error(
      "unexpected end of input", inside: "the \(kind) that starts at offset \(container.offset)")
  }

  // MARK: Strings

  /// Reads the string whose opening quote is at `position`, checking its escapes and its
  /// UTF-8. With `decode`, the UTF-8 of a string with escapes is decoded too, for
  /// ``withContent(of:decoded:_:)``.
  ///
  /// Most strings of stored objects (keys, short values) are ASCII with nothing escaped and
  /// end within sixteen bytes: one or two words settle those here, where this is inlined.
  /// The rest are read in full, by a call.
  @inline(__always)
  mutating func scanString(decode: Bool) throws(JSONCodecError) -> JSONScannedString {
    let start = position &+ 1
    let remaining = input.count &- start
    if input.count >= 8, remaining > 0 {
      var offset = 0
      var flags: UInt64
      if remaining >= 8 {
        flags = Self.bytesToLookAt(in: Self.word(at: start, of: input))
        if flags == 0, remaining >= 16 {
          offset = 8
          flags = Self.bytesToLookAt(in: Self.word(at: start &+ 8, of: input))
        }
      } else {
        // The input's last word, moved down to start at `start`: zeros come in above its
        // end, and read as control characters, so a string must end before them.
        let word = Self.word(at: input.count &- 8, of: input)
        flags = Self.bytesToLookAt(in: word &>> (UInt64(truncatingIfNeeded: 8 &- remaining) &* 8))
      }
      if flags != 0 {
        let end = start &+ offset &+ flags.trailingZeroBitCount &>> 3
        // The first byte to look at: the string ends there if it is the closing quote (and
        // not one of the zeros past the input's end).
        if end < input.count, input[end] == JSONByte.quote {
          position = end &+ 1
          return JSONScannedString(start: start, end: end, hasEscapes: false, hasNonASCII: false)
        }
      }
    }
    return try scanStringInFull(decode: decode)
  }

  /// ``scanString(decode:)`` for any string. A string with escapes is decoded as it is
  /// checked, into `scratch` when the scan has one and the string fits; else it is read
  /// again once its length is known, into `unescaped`.
  @inline(never)
  mutating func scanStringInFull(decode: Bool) throws(JSONCodecError) -> JSONScannedString {
    let quoteOffset = position
    let (string, written) = try scanStringText(into: decode ? scratch : nil)
    guard decode, string.hasEscapes else { return string }
    if let written {
      decodedLength = written
      return string
    }
    decodedLength = -1
    let end = position
    position = quoteOffset
    unescaped = [UInt8](unsafeUninitializedCapacity: string.end - string.start) { buffer, count in
      // Read once already; the buffer has room for all of it.
      count = try! scanStringText(into: UnsafeMutableRawBufferPointer(buffer)).written!
    }
    position = end
    return string
  }

  /// Reads the string whose opening quote is at `position`, and copies its text decoded
  /// into `target` on the way (a word at a time between the bytes that need a look); returns
  /// the string and the length of its decoded text, or nil for that when there is no target
  /// or the text did not fit in it.
  ///
  /// A word is stored whole only where the target has room for eight bytes, and decoded text
  /// is never longer than the text it comes from, so a target of the text's length always
  /// holds it.
  mutating func scanStringText(into target: UnsafeMutableRawBufferPointer?)
    throws(JSONCodecError) -> (JSONScannedString, written: Int?)
  {
    // The input and the position in locals while reading: the stores into `target` could
    // otherwise be taken to change them, to be read back from memory after each.
    let input = self.input
    let quoteOffset = position
    var at = position + 1
    var string = JSONScannedString(start: at, end: at, hasEscapes: false, hasNonASCII: false)
    // Where the decoded text goes; nil once it does not fit.
    var output = target?.baseAddress
    let room = target?.count ?? 0
    var written = 0
    // The first ill-formed UTF-8 sequence; reported only once the string is found to end,
    // so that a fault later in the string (a raw control character, an unterminated
    // string) is reported first, as it is found first by a reader that validates the
    // complete string.
    var firstInvalidUTF8: Int?
    while at < input.count {
      // Eight bytes at a time up to the first that needs a look.
      if input.count &- at >= 8 {
        let word = Self.word(at: at, of: input)
        let flags = Self.bytesToLookAt(in: word)
        let clean = flags == 0 ? 8 : flags.trailingZeroBitCount &>> 3
        if let target = output {
          if room &- written >= 8 {
            (target + written).storeBytes(of: word.littleEndian, as: UInt64.self)
          } else if room &- written >= clean {
            (target + written).copyMemory(from: input.baseAddress! + at, byteCount: clean)
          } else {
            output = nil
          }
          written &+= clean
        }
        at &+= clean
        if flags == 0 { continue }
      }
      let byte = input[at]
      if byte == JSONByte.quote {
        string.end = at
        position = at + 1
        if let firstInvalidUTF8 {
          throw error("invalid UTF-8 in string", at: firstInvalidUTF8)
        }
        return (string, output == nil ? nil : written)
      }
      if byte == JSONByte.backslash {
        string.hasEscapes = true
        // The short escapes (`\"`, `\n`, …), most of them, here; `\u` and faults by a call.
        if at + 1 < input.count, let decoded = Self.shortEscape(input[at + 1]) {
          if let target = output {
            if written < room {
              target.storeBytes(of: decoded, toByteOffset: written, as: UInt8.self)
              written &+= 1
            } else {
              output = nil
            }
          }
          at &+= 2
          continue
        }
        position = at
        let scalar = try scanEscape()
        at = position
        if let target = output {
          if let length = Self.storeUTF8(of: scalar, at: target + written, room: room &- written) {
            written &+= length
          } else {
            output = nil
          }
        }
        continue
      }
      if byte < 0x20 {
        throw error(
          "raw control character \(hexByte(byte)) in string (it must be escaped)", at: at)
      }
      var length = 1
      if byte >= 0x80 {
        string.hasNonASCII = true
        if let sequence = Self.wellFormedUTF8Length(in: input, at: at) {
          length = sequence
        } else if firstInvalidUTF8 == nil {
          firstInvalidUTF8 = at
        }
      }
      if let target = output {
        if room &- written >= length {
          (target + written).copyMemory(from: input.baseAddress! + at, byteCount: length)
          written &+= length
        } else {
          output = nil
        }
      }
      at &+= length
    }
    position = at
    throw error(
      "unexpected end of input", inside: "the string that starts at offset \(quoteOffset)")
  }

  /// The eight bytes of `input` from `offset` on, the first in the low byte.
  @inline(__always)
  static func word(at offset: Int, of input: UnsafeBufferPointer<UInt8>) -> UInt64 {
    UInt64(
      littleEndian: UnsafeRawPointer(input.baseAddress! + offset).loadUnaligned(as: UInt64.self))
  }

  /// The high bit set in each byte of `word` (eight bytes, the first in its low byte) that a
  /// string's scan must look at: a quote, a backslash, a control character or a byte of
  /// 0x80 or above. Bits may also be set above the first such byte (a borrow carries into
  /// the next byte), never below it, so the lowest set bit is exact.
  @inline(__always)
  static func bytesToLookAt(in word: UInt64) -> UInt64 {
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highBits: UInt64 = 0x8080_8080_8080_8080
    /// The high bit of each zero byte of `value` (and maybe of bytes above one).
    func zeroBytes(_ value: UInt64) -> UInt64 { (value &- ones) & ~value & highBits }
    let quotes = zeroBytes(word ^ (ones &* UInt64(JSONByte.quote)))
    let backslashes = zeroBytes(word ^ (ones &* UInt64(JSONByte.backslash)))
    let controls = (word &- ones &* 0x20) & ~word & highBits
    return quotes | backslashes | controls | (word & highBits)
  }

  /// Calls `body` with the UTF-8 of `string`: its raw text when it has no escapes or is not
  /// `decoded`, else its decoded text.
  func withContent(
    of string: JSONScannedString, decoded: Bool, _ body: (UnsafeBufferPointer<UInt8>) -> Void
  ) {
    if decoded, string.hasEscapes {
      if decodedLength >= 0, let scratch {
        body(
          UnsafeBufferPointer(
            start: scratch.baseAddress?.assumingMemoryBound(to: UInt8.self), count: decodedLength))
      } else {
        // Set by the scan of `string`, which decoded it and found no room in `scratch`.
        unescaped!.withUnsafeBufferPointer(body)
      }
    } else {
      body(UnsafeBufferPointer(rebasing: input[string.start..<string.end]))
    }
  }

  /// Checks the escape whose backslash is at `position`, moves past it and returns the
  /// scalar it stands for.
  mutating func scanEscape() throws(JSONCodecError) -> UInt32 {
    let escapeStart = position
    guard position + 1 < input.count else {
      throw error("unexpected end of input in an escape sequence", at: escapeStart)
    }
    let byte = input[position + 1]
    position += 2
    // The short escapes are read by the caller.
    guard byte == JSONByte.lowercaseU else {
      throw error("invalid escape sequence \\\(describeEscaped(byte)) in string", at: escapeStart)
    }
    let unit = try scanHexQuad(escapeStart: escapeStart)
    switch unit {
    case 0xD800...0xDBFF:
      guard position + 1 < input.count, input[position] == JSONByte.backslash,
        input[position + 1] == JSONByte.lowercaseU
      else {
        throw error("unpaired high surrogate in \\u escape", at: escapeStart)
      }
      let lowStart = position
      position += 2
      let low = try scanHexQuad(escapeStart: lowStart)
      guard (0xDC00...0xDFFF).contains(low) else {
        throw error(
          "high surrogate in \\u escape is not followed by a low surrogate", at: lowStart)
      }
      return 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
    case 0xDC00...0xDFFF:
      throw error("unpaired low surrogate in \\u escape", at: escapeStart)
    default:
      return unit
    }
  }

  /// The byte a two-byte escape (`\n`, `\"`, …) stands for, given the byte after its
  /// backslash; nil for `\u` and for anything that is not an escape.
  static func shortEscape(_ byte: UInt8) -> UInt8? {
    switch byte {
    case JSONByte.quote, JSONByte.backslash, JSONByte.slash: byte
    case JSONByte.lowercaseB: 0x08
    case JSONByte.lowercaseF: 0x0C
    case JSONByte.lowercaseN: 0x0A
    case JSONByte.lowercaseR: 0x0D
    case JSONByte.lowercaseT: 0x09
    default: nil
    }
  }

  /// Reads the four hex digits at `position` of a `\u` escape that starts at `escapeStart`.
  mutating func scanHexQuad(escapeStart: Int) throws(JSONCodecError) -> UInt32 {
    var value: UInt32 = 0
    for _ in 0..<4 {
      guard position < input.count, let digit = hexDigitValue(input[position]) else {
        throw error("a \\u escape needs four hex digits", at: escapeStart)
      }
      value = value << 4 | digit
      position += 1
    }
    return value
  }

  /// Stores the UTF-8 of `scalar` at `target` and returns its length; nil, storing nothing,
  /// when it is longer than `room`. Out of line: `\u` escapes are rare, and the string loop
  /// that calls it is hot.
  @inline(never)
  private static func storeUTF8(
    of scalar: UInt32, at target: UnsafeMutableRawPointer, room: Int
  ) -> Int? {
    // `scanEscape` gives only scalar values (it pairs surrogates, refuses lone ones).
    let utf8 = Unicode.Scalar(scalar)!.utf8
    guard utf8.count <= room else { return nil }
    for (offset, byte) in utf8.enumerated() {
      target.storeBytes(of: byte, toByteOffset: offset, as: UInt8.self)
    }
    return utf8.count
  }

  /// The length of the well-formed UTF-8 sequence that starts with the byte of 0x80 or above
  /// at `index` of `bytes`, following the table of well-formed byte sequences in Unicode 3.9;
  /// nil if it is ill-formed or cut short.
  /// (Checked here rather than by `String(validating:as:)`, which needs macOS 15 / iOS 18.)
  static func wellFormedUTF8Length(in bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Int? {
    let length: Int
    var secondRange: ClosedRange<UInt8> = 0x80...0xBF
    switch bytes[index] {
    case 0xC2...0xDF: length = 2
    case 0xE0:
      length = 3
      secondRange = 0xA0...0xBF
    case 0xE1...0xEC, 0xEE...0xEF: length = 3
    case 0xED:
      length = 3
      secondRange = 0x80...0x9F
    case 0xF0:
      length = 4
      secondRange = 0x90...0xBF
    case 0xF1...0xF3: length = 4
    case 0xF4:
      length = 4
      secondRange = 0x80...0x8F
    default: return nil
    }
    guard length <= bytes.count - index else { return nil }
    guard secondRange.contains(bytes[index + 1]) else { return nil }
    for offset in 2..<length where !(0x80...0xBF).contains(bytes[index + offset]) {
      return nil
    }
    return length
  }
}
