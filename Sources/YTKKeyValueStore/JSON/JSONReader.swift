/// Reads JSON text into a ``JSONValue``, accepting exactly RFC 8259 and nothing more.
///
/// - The text is one JSON value of any kind, optionally surrounded by whitespace (space, tab,
///   line feed, carriage return). Anything else after the value is an error.
/// - Numbers follow the JSON grammar exactly: no `+`, no leading zeros, no `.5` or `1.`, no
///   hex, NaN or Infinity. Integer syntax that fits in `Int64` reads as
///   ``JSONValue/int(_:)``; integer syntax beyond `Int64`, and any number with a fraction or
///   exponent, reads as ``JSONValue/double(_:)``, correctly rounded. `-0` reads as the double
///   `-0.0`, since an `Int64` would lose its sign (JSONEncoder writes `-0.0` as `-0`). A number too large for a
///   `Double` is an error; one too small reads as zero.
/// - Strings may use every JSON escape, including `\uXXXX` and surrogate pairs. A lone or
///   misordered surrogate, a raw control character (below U+0020) and invalid UTF-8 are
///   errors.
/// - An object may repeat a key; the last value wins.
/// - Arrays and objects nest at most ``maximumDepth`` levels deep.
///
/// Every read is bounds-checked and nothing recurses, so no input can make the reader trap;
/// it throws a ``JSONCodecError`` naming what it expected and the byte offset where it was
/// not found.
package enum JSONReader {
  /// The deepest nesting of arrays and objects that is read (and written): `[[1]]` is 2.
  static let maximumDepth = 512

  /// Reads the JSON value in `bytes`.
  package static func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONCodecError) -> JSONValue {
    // The input is only ever read as bytes, so viewing it as UInt8 is sound whatever type
    // the memory was written as.
    let input = UnsafeBufferPointer(
      start: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), count: bytes.count)
    // At most `maximumDepth` containers are open at once, so their stack has a fixed size and
    // can live in a temporary allocation (on the thread's stack when there is room), which
    // saves a heap allocation per document.
    return try withUnsafeTemporaryAllocation(of: OpenContainer.self, capacity: maximumDepth) {
      (open) throws(JSONCodecError) -> JSONValue in
      var parser = Parser(input: input, open: open)
      return try parser.parseDocument()
    }
  }

  /// Reads the JSON value in `bytes`.
  package static func parse(_ bytes: [UInt8]) throws(JSONCodecError) -> JSONValue {
    // `withUnsafeBytes` does not pass a typed error through, so the result crosses as a Result.
    let result = bytes.withUnsafeBytes { raw in
      Result { () throws(JSONCodecError) -> JSONValue in try parse(raw) }
    }
    return try result.get()
  }
}

/// An array or object whose closing bracket has not been read yet.
private struct OpenContainer {
  var isObject: Bool
  /// Where its contents start in `Parser.pending`.
  var firstPending: Int
  /// The offset of its opening bracket, for error messages.
  var offset: Int
}

/// A reader over one input. Its position only moves forward; every access to `input` is
/// preceded by a check against `input.count`.
///
/// Arrays and objects are read with an explicit stack (`open`), not by recursion, so the
/// nesting limit is a policy rather than a guard against overflowing the thread's stack, and
/// deep documents are as safe in debug builds (whose frames are large) as in release builds.
private struct Parser {
  let input: UnsafeBufferPointer<UInt8>
  var position = 0
  /// The containers being read, outermost first, in `open[..<openCount]`. The buffer holds
  /// `JSONReader.maximumDepth` of them; the rest of it is uninitialized (`OpenContainer` is
  /// a trivial type, so nothing needs deinitializing).
  let open: UnsafeMutableBufferPointer<OpenContainer>
  var openCount = 0
  /// The contents of the containers being read, innermost last: an array's elements, or an
  /// object's members as key (a `.string`) then value. A container collects here and copies
  /// out once it is complete, so that its storage is allocated once, at its final size, and
  /// one buffer serves every container in the document.
  var pending: [JSONValue] = []
  /// Scratch space for the UTF-8 of a string that contains escapes.
  var unescaped: [UInt8] = []

  init(input: UnsafeBufferPointer<UInt8>, open: UnsafeMutableBufferPointer<OpenContainer>) {
    self.input = input
    self.open = open
  }

  // MARK: Values

  mutating func parseDocument() throws(JSONCodecError) -> JSONValue {
    let value = try parseValue()
    skipWhitespace()
    if position < input.count {
      throw error("unexpected \(describe(input[position])) after the JSON value")
    }
    return value
  }

  /// Reads one value, with everything nested in it, starting at `position` (whitespace
  /// first is skipped).
  ///
  /// The loop alternates two steps: read the start of a value (a scalar whole, or the
  /// opening of a container, which is pushed onto `open`); then, holding a complete value,
  /// add it to the innermost open container and read the separator that follows, closing
  /// as many containers as end there.
  mutating func parseValue() throws(JSONCodecError) -> JSONValue {
    var value: JSONValue
    nextValue: while true {
      skipWhitespace()
      guard position < input.count else {
        throw error("unexpected end of input, expected a JSON value")
      }
      switch input[position] {
      case JSONByte.quote:
        value = .string(try parseString())
      case JSONByte.openBracket:
        try openContainer(isObject: false)
        if position < input.count, input[position] == JSONByte.closeBracket {
          position += 1
          openCount -= 1
          value = .array([])
        } else {
          continue nextValue
        }
      case JSONByte.openBrace:
        try openContainer(isObject: true)
        if position < input.count, input[position] == JSONByte.closeBrace {
          position += 1
          openCount -= 1
          value = .object([:])
        } else {
          try parseMemberKey()
          continue nextValue
        }
      case JSONByte.lowercaseT:
        try expectLiteral("true")
        value = .bool(true)
      case JSONByte.lowercaseF:
        try expectLiteral("false")
        value = .bool(false)
      case JSONByte.lowercaseN:
        try expectLiteral("null")
        value = .null
      case JSONByte.minus, JSONByte.zero...JSONByte.nine:
        value = try parseNumber()
      case let byte:
        throw error("expected a JSON value but found \(describe(byte))")
      }

      // `value` is complete: it is the document, or it joins the innermost open container.
      while openCount > 0 {
        let container = open[openCount - 1]
        pending.append(value)
        skipWhitespace()
        guard position < input.count else {
          throw endOfInput(inside: container)
        }
        let byte = input[position]
        if byte == JSONByte.comma {
          position += 1
          skipWhitespace()
          if container.isObject {
            try parseMemberKey()
          } else if position < input.count, input[position] == JSONByte.closeBracket {
            throw error("expected a JSON value after ',' but found ']' (no trailing commas)")
          }
          continue nextValue
        }
        if container.isObject {
          guard byte == JSONByte.closeBrace else {
            throw error("expected ',' or '}' after an object member but found \(describe(byte))")
          }
          value = .object(makeObject(from: container.firstPending))
        } else {
          guard byte == JSONByte.closeBracket else {
            throw error("expected ',' or ']' after an array element but found \(describe(byte))")
          }
          value = .array(Array(pending[container.firstPending...]))
        }
        position += 1
        pending.removeSubrange(container.firstPending...)
        openCount -= 1
      }
      return value
    }
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

  // MARK: Arrays and objects

  /// Pushes the array or object whose bracket is at `position`, and moves past the bracket
  /// and any whitespace after it.
  mutating func openContainer(isObject: Bool) throws(JSONCodecError) {
    guard openCount < JSONReader.maximumDepth else {
      throw error("arrays and objects nest deeper than \(JSONReader.maximumDepth) levels")
    }
    if pending.capacity == 0 {
      // One allocation for a typical document, instead of growing step by step.
      pending.reserveCapacity(16)
    }
    open.initializeElement(
      at: openCount,
      to: OpenContainer(isObject: isObject, firstPending: pending.count, offset: position))
    openCount += 1
    position += 1
    skipWhitespace()
  }

  /// Reads an object member's key and the ':' after it, and adds the key to `pending`.
  mutating func parseMemberKey() throws(JSONCodecError) {
    guard position < input.count else {
      throw endOfInput(inside: open[openCount - 1])
    }
    guard input[position] == JSONByte.quote else {
      if input[position] == JSONByte.closeBrace {
        throw error("expected a string key after ',' but found '}' (no trailing commas)")
      }
      throw error("expected a string key in the object but found \(describe(input[position]))")
    }
    let key = try parseString()
    skipWhitespace()
    guard position < input.count, input[position] == JSONByte.colon else {
      throw error("expected ':' after object key")
    }
    position += 1
    pending.append(.string(key))
  }

  /// The object whose members are `pending[firstPending...]`, as key, value, key, value...
  /// A repeated key keeps its last value.
  func makeObject(from firstPending: Int) -> [String: JSONValue] {
    var object = [String: JSONValue](minimumCapacity: (pending.count - firstPending) / 2)
    for keyIndex in stride(from: firstPending, to: pending.count, by: 2) {
      if case .string(let key) = pending[keyIndex] {
        object[key] = pending[keyIndex + 1]
      }
    }
    return object
  }

  func endOfInput(inside container: OpenContainer) -> JSONCodecError {
    let kind = container.isObject ? "object" : "array"
    return error(
      "unexpected end of input", inside: "the \(kind) that starts at offset \(container.offset)")
  }

  // MARK: Strings

  /// Reads the string whose opening quote is at `position`.
  mutating func parseString() throws(JSONCodecError) -> String {
    let quoteOffset = position
    position += 1
    let contentStart = position
    var sawNonASCII = false
    while position < input.count {
      let byte = input[position]
      if byte == JSONByte.quote {
        let content = UnsafeBufferPointer(rebasing: input[contentStart..<position])
        position += 1
        guard let string = makeString(content, sawNonASCII: sawNonASCII) else {
          throw invalidUTF8Error(inStringFrom: contentStart)
        }
        return string
      }
      if byte == JSONByte.backslash {
        return try parseEscapedString(
          quoteOffset: quoteOffset, contentStart: contentStart, sawNonASCII: sawNonASCII)
      }
      if byte < 0x20 {
        throw error("raw control character \(hexByte(byte)) in string (it must be escaped)")
      }
      if byte >= 0x80 { sawNonASCII = true }
      position += 1
    }
    throw error(
      "unexpected end of input", inside: "the string that starts at offset \(quoteOffset)")
  }

  /// Continues reading a string at its first backslash, decoding escapes into `unescaped`.
  mutating func parseEscapedString(
    quoteOffset: Int, contentStart: Int, sawNonASCII: Bool
  ) throws(JSONCodecError) -> String {
    unescaped.removeAll(keepingCapacity: true)
    var sawNonASCII = sawNonASCII
    var runStart = contentStart
    while position < input.count {
      let byte = input[position]
      if byte == JSONByte.quote {
        unescaped.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<position]))
        position += 1
        let string = unescaped.withUnsafeBufferPointer { content in
          makeString(content, sawNonASCII: sawNonASCII)
        }
        guard let string else { throw invalidUTF8Error(inStringFrom: contentStart) }
        return string
      }
      if byte == JSONByte.backslash {
        unescaped.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<position]))
        try parseEscape()
        runStart = position
        continue
      }
      if byte < 0x20 {
        throw error("raw control character \(hexByte(byte)) in string (it must be escaped)")
      }
      if byte >= 0x80 { sawNonASCII = true }
      position += 1
    }
    throw error(
      "unexpected end of input", inside: "the string that starts at offset \(quoteOffset)")
  }

  /// Decodes the escape whose backslash is at `position` onto `unescaped` and moves past it.
  mutating func parseEscape() throws(JSONCodecError) {
    let escapeStart = position
    guard position + 1 < input.count else {
      throw error("unexpected end of input in an escape sequence", at: escapeStart)
    }
    let byte = input[position + 1]
    position += 2
    switch byte {
    case JSONByte.quote, JSONByte.backslash, JSONByte.slash: unescaped.append(byte)
    case JSONByte.lowercaseB: unescaped.append(0x08)
    case JSONByte.lowercaseF: unescaped.append(0x0C)
    case JSONByte.lowercaseN: unescaped.append(0x0A)
    case JSONByte.lowercaseR: unescaped.append(0x0D)
    case JSONByte.lowercaseT: unescaped.append(0x09)
    case JSONByte.lowercaseU:
      let unit = try parseHexQuad(escapeStart: escapeStart)
      switch unit {
      case 0xD800...0xDBFF:
        guard position + 1 < input.count, input[position] == JSONByte.backslash,
          input[position + 1] == JSONByte.lowercaseU
        else {
          throw error("unpaired high surrogate in \\u escape", at: escapeStart)
        }
        let lowStart = position
        position += 2
        let low = try parseHexQuad(escapeStart: lowStart)
        guard (0xDC00...0xDFFF).contains(low) else {
          throw error(
            "high surrogate in \\u escape is not followed by a low surrogate", at: lowStart)
        }
        appendUTF8(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
      case 0xDC00...0xDFFF:
        throw error("unpaired low surrogate in \\u escape", at: escapeStart)
      default:
        appendUTF8(unit)
      }
    default:
      throw error("invalid escape sequence \\\(describeEscaped(byte)) in string", at: escapeStart)
    }
  }

  /// Reads the four hex digits at `position` of a `\u` escape that starts at `escapeStart`.
  mutating func parseHexQuad(escapeStart: Int) throws(JSONCodecError) -> UInt32 {
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

  mutating func appendUTF8(_ scalar: UInt32) {
    switch scalar {
    case ..<0x80:
      unescaped.append(UInt8(truncatingIfNeeded: scalar))
    case ..<0x800:
      unescaped.append(UInt8(truncatingIfNeeded: 0xC0 | scalar >> 6))
      unescaped.append(UInt8(truncatingIfNeeded: 0x80 | scalar & 0x3F))
    case ..<0x10000:
      unescaped.append(UInt8(truncatingIfNeeded: 0xE0 | scalar >> 12))
      unescaped.append(UInt8(truncatingIfNeeded: 0x80 | scalar >> 6 & 0x3F))
      unescaped.append(UInt8(truncatingIfNeeded: 0x80 | scalar & 0x3F))
    default:
      unescaped.append(UInt8(truncatingIfNeeded: 0xF0 | scalar >> 18))
      unescaped.append(UInt8(truncatingIfNeeded: 0x80 | scalar >> 12 & 0x3F))
      unescaped.append(UInt8(truncatingIfNeeded: 0x80 | scalar >> 6 & 0x3F))
      unescaped.append(UInt8(truncatingIfNeeded: 0x80 | scalar & 0x3F))
    }
  }

  /// Makes a String of `content`, the decoded UTF-8 of a string, or nil if it is not valid
  /// UTF-8. Only raw input bytes can be invalid (escapes always decode to valid UTF-8), so
  /// `content` needs validating only if the input had non-ASCII bytes. (Validated here rather
  /// than with `String(validating:as:)`, which needs macOS 15 / iOS 18.)
  func makeString(_ content: UnsafeBufferPointer<UInt8>, sawNonASCII: Bool) -> String? {
    if sawNonASCII {
      var index = 0
      while index < content.count {
        guard let length = Self.wellFormedUTF8Length(in: content, at: index) else { return nil }
        index += length
      }
    }
    return String(decoding: content, as: UTF8.self)
  }

  /// The error for a string whose text, starting at `start`, is not valid UTF-8.
  func invalidUTF8Error(inStringFrom start: Int) -> JSONCodecError {
    error("invalid UTF-8 in string", at: firstInvalidUTF8(from: start) ?? start)
  }

  /// The offset of the first byte of the first ill-formed UTF-8 sequence in the string text
  /// from `start` to its closing quote.
  func firstInvalidUTF8(from start: Int) -> Int? {
    var index = start
    while index < input.count, input[index] != JSONByte.quote {
      if input[index] == JSONByte.backslash {
        index += 2
        continue
      }
      guard let length = Self.wellFormedUTF8Length(in: input, at: index) else { return index }
      index += length
    }
    return nil
  }

  /// The length of the well-formed UTF-8 sequence at `index` of `bytes`, following the table
  /// of well-formed byte sequences in Unicode 3.9; nil if it is ill-formed or cut short.
  @inline(__always)
  static func wellFormedUTF8Length(in bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Int? {
    let length: Int
    var secondRange: ClosedRange<UInt8> = 0x80...0xBF
    switch bytes[index] {
    case 0x00...0x7F: return 1
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

  // MARK: Numbers

  /// Reads the number that starts at `position` (with `-` or a digit).
  mutating func parseNumber() throws(JSONCodecError) -> JSONValue {
    let start = position
    let isNegative = input[position] == JSONByte.minus
    if isNegative { position += 1 }
    let integerStart = position
    guard position < input.count, isDigit(input[position]) else {
      throw error("expected a digit after '-'")
    }
    if input[position] == JSONByte.zero {
      position += 1
      if position < input.count, isDigit(input[position]) {
        throw error("leading zeros are not allowed in numbers", at: integerStart)
      }
    } else {
      skipDigits()
    }
    let integerEnd = position
    var isInteger = true
    if position < input.count, input[position] == JSONByte.dot {
      isInteger = false
      position += 1
      guard position < input.count, isDigit(input[position]) else {
        throw error("expected a digit after the decimal point")
      }
      skipDigits()
    }
    if position < input.count,
      input[position] == JSONByte.lowercaseE || input[position] == JSONByte.uppercaseE
    {
      isInteger = false
      position += 1
      if position < input.count,
        input[position] == JSONByte.plus || input[position] == JSONByte.minus
      {
        position += 1
      }
      guard position < input.count, isDigit(input[position]) else {
        throw error("expected a digit in the exponent")
      }
      skipDigits()
    }
    if isInteger,
      let integer = integerValue(digits: integerStart..<integerEnd, isNegative: isNegative)
    {
      return .int(integer)
    }
    if let double = exactDouble(start..<position) {
      return .double(double)
    }
    let text = String(
      decoding: UnsafeBufferPointer(rebasing: input[start..<position]), as: UTF8.self)
    // The text is in JSON number syntax, which Double's parser accepts and rounds correctly.
    guard let double = Double(text), double.isFinite else {
      throw error("the number \(text) is too large for a double", at: start)
    }
    return .double(double)
  }

  /// The double that the number text in `range` (already checked against the grammar)
  /// denotes, when it can be computed exactly the quick way; nil to use the general parser.
  ///
  /// This is Clinger's fast path: when the decimal significand is at most 2^53 and the
  /// decimal exponent at most 22 in magnitude, both are exact doubles, so one IEEE multiply
  /// or divide gives the correctly rounded result.
  func exactDouble(_ range: Range<Int>) -> Double? {
    var index = range.lowerBound
    let isNegative = input[index] == JSONByte.minus
    if isNegative { index += 1 }
    var significand: UInt64 = 0
    var digitCount = 0
    var exponent = 0
    while index < range.upperBound, isDigit(input[index]) {
      significand = significand &* 10 &+ UInt64(input[index] &- JSONByte.zero)
      digitCount += 1
      index += 1
    }
    if index < range.upperBound, input[index] == JSONByte.dot {
      index += 1
      while index < range.upperBound, isDigit(input[index]) {
        significand = significand &* 10 &+ UInt64(input[index] &- JSONByte.zero)
        digitCount += 1
        exponent -= 1
        index += 1
      }
    }
    if index < range.upperBound {
      // An exponent: `e` or `E`, an optional sign, digits.
      index += 1
      let isExponentNegative = input[index] == JSONByte.minus
      if isExponentNegative || input[index] == JSONByte.plus { index += 1 }
      var explicitExponent = 0
      while index < range.upperBound {
        // Saturate: anything this large is out of the fast path's range anyway.
        if explicitExponent < 100_000 {
          explicitExponent = explicitExponent * 10 + Int(input[index] &- JSONByte.zero)
        }
        index += 1
      }
      exponent += isExponentNegative ? -explicitExponent : explicitExponent
    }
    // Nineteen digits cannot overflow UInt64, so with that bound the significand is exact.
    guard digitCount <= 19, significand <= 1 << 53, exponent >= -22, exponent <= 22 else {
      return nil
    }
    let magnitude =
      exponent < 0
      ? Double(significand) / exactPowersOfTen[-exponent]
      : Double(significand) * exactPowersOfTen[exponent]
    return isNegative ? -magnitude : magnitude
  }

  /// The value of a run of decimal digits if it fits in Int64, or nil. Negative zero is nil
  /// too: only a double keeps its sign.
  func integerValue(digits: Range<Int>, isNegative: Bool) -> Int64? {
    // Nineteen digits always fit in UInt64, so the loop cannot overflow.
    guard digits.count <= 19 else { return nil }
    var magnitude: UInt64 = 0
    for index in digits {
      magnitude = magnitude &* 10 &+ UInt64(input[index] &- JSONByte.zero)
    }
    if isNegative {
      guard magnitude != 0, magnitude <= UInt64(Int64.max) + 1 else { return nil }
      return Int64(bitPattern: 0 &- magnitude)
    }
    guard magnitude <= UInt64(Int64.max) else { return nil }
    return Int64(magnitude)
  }

  mutating func skipDigits() {
    while position < input.count, isDigit(input[position]) {
      position += 1
    }
  }

  // MARK: Bytes

  mutating func skipWhitespace() {
    while position < input.count {
      switch input[position] {
      case JSONByte.space, JSONByte.lineFeed, JSONByte.carriageReturn, JSONByte.tab:
        position += 1
      default:
        return
      }
    }
  }

  func isDigit(_ byte: UInt8) -> Bool {
    byte &- JSONByte.zero < 10
  }

  func hexDigitValue(_ byte: UInt8) -> UInt32? {
    switch byte {
    case JSONByte.zero...JSONByte.nine: return UInt32(byte &- JSONByte.zero)
    case JSONByte.lowercaseA...JSONByte.lowercaseF: return UInt32(byte &- JSONByte.lowercaseA + 10)
    case JSONByte.uppercaseA...JSONByte.uppercaseF: return UInt32(byte &- JSONByte.uppercaseA + 10)
    default: return nil
    }
  }

  /// A byte as an error message shows it: `'x'` if printable ASCII, else its hex value.
  func describe(_ byte: UInt8) -> String {
    if byte > 0x20, byte < 0x7F {
      return "'\(Character(Unicode.Scalar(byte)))'"
    }
    return "byte \(hexByte(byte))"
  }

  /// The character after a backslash as an error message shows it.
  func describeEscaped(_ byte: UInt8) -> String {
    byte > 0x20 && byte < 0x7F ? String(Character(Unicode.Scalar(byte))) : "(\(hexByte(byte)))"
  }

  func hexByte(_ byte: UInt8) -> String {
    let digits = JSONByte.lowercaseHexDigits
    return "0x"
      + String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]], as: UTF8.self)
  }

  /// An error at `offset`, by default the current position, with the offset in its message:
  /// "<problem> at offset <offset>[, inside <container>]".
  func error(_ problem: String, at offset: Int? = nil, inside container: String? = nil)
    -> JSONCodecError
  {
    let offset = offset ?? position
    var message = "\(problem) at offset \(offset)"
    if let container {
      message += ", inside \(container)"
    }
    return JSONCodecError(message: message, offset: offset)
  }
}

/// 10^0 through 10^22: the powers of ten that a Double holds exactly.
private let exactPowersOfTen: [Double] = [
  1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
  1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
]
