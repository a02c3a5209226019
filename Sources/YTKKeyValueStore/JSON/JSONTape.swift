/// One entry of a ``JSONTape``: a value, or an object member's key.
///
/// Scalars record where their text lies; containers record their size and where they end,
/// so that a reader can step over a whole array or object in one move.
struct JSONTapeEntry {
  enum Kind: UInt8 {
    case null
    case `true`
    case `false`
    case number
    case string
    case array
    case object
  }

  var kind: Kind
  /// ``Flags`` bits: what the scan saw in a string or number, and what the decoder has
  /// learned about an object's keys.
  var flags: UInt8
  /// A string's text starts here (after the quote); a number's text too. For a container,
  /// the number of elements, or of members for an object.
  var first: Int
  /// A string's text ends here (at the closing quote); a number's text too. For a
  /// container, the index of the entry after its last descendant.
  var second: Int

  enum Flags {
    /// A string: it contains a backslash escape.
    static let hasEscapes: UInt8 = 1
    /// A string: it contains a raw byte of 0x80 or above.
    static let hasNonASCII: UInt8 = 2
    /// A number: it has neither a fraction nor an exponent.
    static let isInteger: UInt8 = 4
    /// An object: the decoder has looked at its keys and set or left `keysAreSimple`.
    static let keysChecked: UInt8 = 8
    /// An object: its keys are ASCII without escapes, each greater than the one before in
    /// byte order (as in the stored form), so no two are equal even as Swift strings, and a
    /// key is found by comparing bytes.
    static let keysAreSimple: UInt8 = 16
  }

  var isContainer: Bool { kind == .array || kind == .object }
}

/// A JSON document as a flat list of entries, one per value and per object key, in document
/// order, made by one scan of the text (see ``JSONTapeBuilder``). An array's entry is
/// followed by its elements; an object's by key, value, key, value...; a nested
/// container's elements come before the next sibling.
///
/// The tape keeps offsets into the text rather than values: strings and numbers are
/// converted only when a decoder asks for them, and to the type it asks for.
///
/// For example `{"a":[1,true],"b":"x"}` is: 0 object (2 members, the entry after it 7),
/// 1 key `a`, 2 array (2 elements, the entry after it 5), 3 number `1`, 4 `true`, 5 key `b`,
/// 6 string `x`.
enum JSONTape {
  /// Scans `bytes` into a tape and calls `body` with it.
  ///
  /// The tape ends with one entry more than the document has: a `null`, which stands for
  /// values that are not in the document (a missing member handed to `superDecoder(forKey:)`).
  /// A document has at most `bytes.count / 2 + 1` entries: a value or key takes a byte and is
  /// followed by a separator or a closing bracket.
  ///
  /// A small document's tape lives in a temporary allocation on the thread's stack; a large
  /// one grows on the heap as the scan goes.
  static func withTape<Result>(
    of bytes: UnsafeRawBufferPointer,
    _ body: (UnsafeMutableBufferPointer<JSONTapeEntry>) -> Result
  ) throws(JSONCodecError) -> Result {
    try ScratchStack<JSONTapeEntry>.withScratch { (entries) throws(JSONCodecError) in
      var builder = JSONTapeBuilder(entries: entries)
      // The builder's stack is `entries` moved on the heap, if it grew: it releases that.
      defer { entries = builder.entries }
      var scanner = JSONScanner(input: JSONReader.uint8s(bytes))
      try scanner.scanDocument(into: &builder)
      builder.literal(.null)
      return builder.entries.withElements(from: 0, body)
    }
  }
}

/// The sink that records a scan as a tape.
struct JSONTapeBuilder: JSONScanSink {
  static var decodesStrings: Bool { false }

  /// The entries so far (on the thread's stack, then on the heap if they outgrow it).
  var entries: ScratchStack<JSONTapeEntry>

  mutating func string(_ string: JSONScannedString, content: UnsafeBufferPointer<UInt8>) {
    entries.append(
      JSONTapeEntry(
        kind: .string,
        flags: (string.hasEscapes ? JSONTapeEntry.Flags.hasEscapes : 0)
          | (string.hasNonASCII ? JSONTapeEntry.Flags.hasNonASCII : 0),
        first: string.start, second: string.end))
  }

  mutating func key(_ string: JSONScannedString, content: UnsafeBufferPointer<UInt8>) {
    self.string(string, content: content)
  }

  mutating func number(_ number: JSONScannedNumber, in input: UnsafeBufferPointer<UInt8>) {
    entries.append(
      JSONTapeEntry(
        kind: .number, flags: number.isInteger ? JSONTapeEntry.Flags.isInteger : 0,
        first: number.start, second: number.end))
  }

  mutating func literal(_ literal: JSONTapeEntry.Kind) {
    entries.append(JSONTapeEntry(kind: literal, flags: 0, first: 0, second: 0))
  }

  mutating func beginContainer(isObject: Bool) -> Int {
    let mark = entries.count
    entries.append(JSONTapeEntry(kind: isObject ? .object : .array, flags: 0, first: 0, second: 0))
    return mark
  }

  mutating func endContainer(isObject: Bool, mark: Int, count: Int) {
    entries[mark].first = count
    entries[mark].second = entries.count
  }
}
