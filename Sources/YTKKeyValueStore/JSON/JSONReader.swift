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
///
/// The grammar is read in one place, ``JSONScanner``, which reports what it reads to a
/// ``JSONScanSink``: `parse` builds a ``JSONValue`` from the reports, and
/// ``StoredJSONDecoder`` records them as a ``JSONTape`` of offsets to decode from. Both
/// therefore accept and reject exactly the same texts, with the same messages.
package enum JSONReader {
  /// The deepest nesting of arrays and objects that is read (and written): `[[1]]` is 2.
  static let maximumDepth = 512

  /// Reads the JSON value in `bytes`.
  package static func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONCodecError) -> JSONValue {
    try ScratchStack<JSONValue>.withScratch { (values) throws(JSONCodecError) in
      try ScratchStack<String>.withScratch { (keys) throws(JSONCodecError) in
        var builder = JSONValueBuilder(pending: values, keys: keys)
        // The builder's stacks are those given, moved on the heap if they grew: they release
        // that.
        defer { (values, keys) = (builder.pending, builder.keys) }
        var scanner = JSONScanner(input: uint8s(bytes))
        try scanner.scanDocument(into: &builder)
        // Moved out, not copied.
        let result = builder.result
        builder.result = .null
        return result
      }
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

  /// `bytes` as the `UInt8`s the reader reads. The input is only ever read as bytes, so
  /// viewing it as UInt8 is sound whatever type the memory was written as.
  static func uint8s(_ bytes: UnsafeRawBufferPointer) -> UnsafeBufferPointer<UInt8> {
    UnsafeBufferPointer(
      start: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), count: bytes.count)
  }
}

// MARK: - What the scanner reports

/// The receiver of what ``JSONScanner`` reads, one call per value, key and container, in
/// document order. Whatever the sink is sent has passed every check of the grammar; the
/// document as a whole is valid only once the scan returns without throwing.
protocol JSONScanSink {
  /// Whether ``string(_:content:)`` and ``key(_:content:)`` are given the decoded
  /// UTF-8 of a string with escapes. When false, escapes are only checked and `content` is
  /// the raw text between the quotes.
  static var decodesStrings: Bool { get }

  /// A string value. `content` is valid only during the call.
  mutating func string(_ string: JSONScannedString, content: UnsafeBufferPointer<UInt8>)
  /// An object member's key, in the innermost open object. Its value is reported next.
  mutating func key(_ string: JSONScannedString, content: UnsafeBufferPointer<UInt8>)
  /// A number; its text is in `input`.
  mutating func number(_ number: JSONScannedNumber, in input: UnsafeBufferPointer<UInt8>)
  /// `true`, `false` or `null`, by its tape kind.
  mutating func literal(_ literal: JSONTapeEntry.Kind)
  /// The opening bracket of an array or object. The returned mark is handed back with the
  /// container's members and at its end.
  mutating func beginContainer(isObject: Bool) -> Int
  /// The closing bracket of the container that `mark` names; `count` is its number of
  /// elements, or of members for an object.
  mutating func endContainer(isObject: Bool, mark: Int, count: Int)
}

/// A string as the scanner found it: where its text lies in the input, and what is in it.
struct JSONScannedString {
  /// The offset of the first byte after the opening quote.
  var start: Int
  /// The offset of the closing quote.
  var end: Int
  /// Whether the text contains a backslash escape.
  var hasEscapes: Bool
  /// Whether the text contains a raw byte of 0x80 or above (escapes aside).
  var hasNonASCII: Bool
}

/// A number as the scanner found it: its text, and what the quick conversions need.
struct JSONScannedNumber {
  /// The offsets of the number's first byte (`-` or a digit) and of the byte after it.
  var start: Int
  var end: Int
  /// Whether the text has neither a fraction nor an exponent.
  var isInteger: Bool
  var isNegative: Bool
  /// The number of digits before the decimal point.
  var integerDigitCount: Int
  /// The digits before and after the decimal point read as one integer, exact when there
  /// are at most 19 of them (`digitCount`), wrapped past UInt64 otherwise.
  var significand: UInt64
  var digitCount: Int
  /// The power of ten `significand` is scaled by: the exponent as written minus the number
  /// of fraction digits, both bounded far beyond any double's range.
  var exponent: Int
  /// The value, when the scanner had to parse the text in full to see that it is finite.
  var parsedDouble: Double?

  /// The value as an `Int64`, when the text is an integer in `Int64`'s range, other than
  /// `-0` (only a double keeps its sign).
  var int64Value: Int64? {
    // Nineteen digits always fit in UInt64, so `significand` is exact.
    guard isInteger, digitCount <= 19 else { return nil }
    if isNegative {
      guard significand != 0, significand <= UInt64(Int64.max) + 1 else { return nil }
      return Int64(bitPattern: 0 &- significand)
    }
    guard significand <= UInt64(Int64.max) else { return nil }
    return Int64(significand)
  }

  /// The double the text denotes, when it can be computed exactly the quick way; nil to use
  /// the general parser.
  ///
  /// This is Clinger's fast path: when the decimal significand is at most 2^53 and the
  /// decimal exponent at most 22 in magnitude, both are exact doubles, so one IEEE multiply
  /// or divide gives the correctly rounded result.
  var exactDouble: Double? {
    guard digitCount <= 19, significand <= 1 << 53, exponent >= -22, exponent <= 22 else {
      return nil
    }
    let magnitude =
      exponent < 0
      ? Double(significand) / exactPowersOfTen[-exponent]
      : Double(significand) * exactPowersOfTen[exponent]
    return isNegative ? -magnitude : magnitude
  }

  /// The correctly rounded double the text in `input` denotes (finite: the scanner rejects
  /// numbers too large for a double).
  func doubleValue(in input: UnsafeBufferPointer<UInt8>) -> Double {
    if let exactDouble { return exactDouble }
    if let parsedDouble { return parsedDouble }
    // Swift's general parser, correctly rounded, accepts JSON number syntax.
    return Double(text(in: input)) ?? 0
  }

  /// The text in `input` as a String, for messages and the general parsers.
  func text(in input: UnsafeBufferPointer<UInt8>) -> String {
    String(decoding: UnsafeBufferPointer(rebasing: input[start..<end]), as: UTF8.self)
  }
}

/// 10^0 through 10^22: the powers of ten that a Double holds exactly.
private let exactPowersOfTen: [Double] = [
  1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
  1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
]

// MARK: - Building a JSONValue

/// The sink of ``JSONReader/parse(_:)-(UnsafeRawBufferPointer)``: builds the ``JSONValue``
/// the scanner reports.
struct JSONValueBuilder: JSONScanSink {
  static var decodesStrings: Bool { true }

  /// The document, once the scan is complete.
  var result: JSONValue = .null
  /// The values of the containers being read, innermost last: an array's elements, or an
  /// object's members' values. A container collects here and moves out once it is complete,
  /// so that its storage is allocated once, at its final size, and one buffer serves every
  /// container in the document.
  var pending: ScratchStack<JSONValue>
  /// The keys of the objects being read, innermost last, beside their values in `pending`:
  /// the last `count` of them are the keys of the innermost object's `count` members.
  var keys: ScratchStack<String>
  /// The number of containers open.
  var depth = 0

  /// Adds a complete value to the innermost open container, or makes it the document.
  mutating func add(_ value: JSONValue) {
    if depth == 0 {
      result = value
    } else {
      pending.append(value)
    }
  }

  mutating func string(_ string: JSONScannedString, content: UnsafeBufferPointer<UInt8>) {
    add(.string(String(decoding: content, as: UTF8.self)))
  }

  mutating func key(_ string: JSONScannedString, content: UnsafeBufferPointer<UInt8>) {
    keys.append(String(decoding: content, as: UTF8.self))
  }

  mutating func number(_ number: JSONScannedNumber, in input: UnsafeBufferPointer<UInt8>) {
    if let integer = number.int64Value {
      add(.int(integer))
    } else {
      add(.double(number.doubleValue(in: input)))
    }
  }

  mutating func literal(_ literal: JSONTapeEntry.Kind) {
    add(literal == .null ? .null : .bool(literal == .true))
  }

  mutating func beginContainer(isObject: Bool) -> Int {
    depth += 1
    return pending.count
  }

  mutating func endContainer(isObject: Bool, mark: Int, count: Int) {
    let value: JSONValue
    if isObject {
      // A repeated key keeps its last value.
      let firstKey = keys.count - count
      var object = [String: JSONValue](minimumCapacity: count)
      for member in 0..<count {
        object[keys.moveOut(at: firstKey + member)] = pending.moveOut(at: mark + member)
      }
      keys.forgetElements(from: firstKey)
      value = .object(object)
    } else {
      // `reserveCapacity` then `append`: unlike `init(unsafeUninitializedCapacity:)`, these
      // are specialized for `JSONValue` here, not run generically in the standard library.
      var array: [JSONValue] = []
      array.reserveCapacity(count)
      for index in mark..<mark + count {
        array.append(pending.moveOut(at: index))
      }
      value = .array(array)
    }
    // Every value there has moved out.
    pending.forgetElements(from: mark)
    depth -= 1
    add(value)
  }
}
