extension JSONReader {
  /// The string in JSON text that is a string, or YTKKeyValueStore's one-element wrapper of
  /// one (`["s"]`, how it stored strings); nil for any other JSON value.
  ///
  /// The text is read by the same scanner as ``parse(_:)-(UnsafeRawBufferPointer)``, so it
  /// accepts and rejects exactly the same texts with the same errors, but only the string is
  /// made: no array and no `JSONValue`.
  package static func wrappedString(_ bytes: UnsafeRawBufferPointer) throws(JSONCodecError)
    -> String?
  {
    if let string = storedWrappedString(uint8s(bytes)) { return string }
    var sink = WrappedStringSink()
    try scan(bytes, into: &sink)
    return sink.isWrappedString ? sink.string : nil
  }

  /// The string of `["…"]` laid out as the writer lays it out (no spaces, no `\u` escapes),
  /// read in one pass into the string's own storage; nil for any other text, which the
  /// scanner then reads, and whose faults it reports.
  ///
  /// The pass copies a word at a time: it stores each eight bytes whole and then moves on
  /// past those that need no look (as ``JSONScanner/bytesToLookAt(inWordAt:of:)`` finds
  /// them), so a run between escapes costs no call to copy it. It accepts only what the
  /// scanner accepts, and makes the same string of it.
  private static func storedWrappedString(_ input: UnsafeBufferPointer<UInt8>) -> String? {
    let count = input.count
    guard count >= 4, input[0] == JSONByte.openBracket, input[1] == JSONByte.quote,
      input[count - 2] == JSONByte.quote, input[count - 1] == JSONByte.closeBracket
    else { return nil }
    // The closing quote; the content is 2..<end.
    let end = count - 2
    var isStored = false
    // The content is never longer unescaped, and what is written stays at least two bytes
    // behind what is read, so `count` bytes hold it and the last word's overhang.
    let string = String(unsafeUninitializedCapacity: count) { output in
      // Not empty (four bytes at least), so both have an address.
      let source = input.baseAddress!
      let target = output.baseAddress!
      var position = 2
      var written = 0
      while position < end {
        if count - position >= 8 {
          let word = UnsafeRawPointer(source + position).loadUnaligned(as: UInt64.self)
          UnsafeMutableRawPointer(target + written).storeBytes(of: word, as: UInt64.self)
          let flags = JSONScanner.bytesToLookAt(inWordAt: position, of: input)
          if flags == 0 {
            position += 8
            written += 8
            continue
          }
          let clean = flags.trailingZeroBitCount / 8
          position += clean
          written += clean
          if position == end { break }
        }
        let byte = source[position]
        if byte == JSONByte.backslash {
          guard position + 1 < end, let decoded = JSONScanner.shortEscape(source[position + 1])
          else {
            return 0
          }
          target[written] = decoded
          written += 1
          position += 2
        } else if byte >= 0x80 {
          guard let length = JSONScanner.wellFormedUTF8Length(in: input, at: position),
            position + length <= end
          else { return 0 }
          (target + written).initialize(from: source + position, count: length)
          written += length
          position += length
        } else if byte == JSONByte.quote || byte < 0x20 {
          return 0
        } else {
          target[written] = byte
          written += 1
          position += 1
        }
      }
      // Every step above stops at `end` (a word at the closing quote, an escape or a UTF-8
      // sequence only within the content), so the loop ends there.
      isStored = true
      return written
    }
    return isStored ? string : nil
  }
}

/// Keeps the one string of a document shaped `"s"` or `["s"]`, and notes any other shape.
private struct WrappedStringSink: JSONScanSink {
  static var decodesStrings: Bool { true }

  var string: String?
  /// Whether everything reported so far fits one of the two shapes.
  var fits = true
  var depth = 0

  var isWrappedString: Bool { fits && string != nil }

  mutating func string(_ string: JSONScannedString, content: UnsafeBufferPointer<UInt8>) {
    guard fits, self.string == nil else {
      fits = false
      return
    }
    self.string = String(decoding: content, as: UTF8.self)
  }

  mutating func key(_ string: JSONScannedString, content: UnsafeBufferPointer<UInt8>) {
    fits = false
  }

  mutating func number(_ number: JSONScannedNumber, in input: UnsafeBufferPointer<UInt8>) {
    fits = false
  }

  mutating func literal(_ literal: JSONLiteral) {
    fits = false
  }

  mutating func beginContainer(isObject: Bool) -> Int {
    depth += 1
    if isObject || depth > 1 { fits = false }
    return depth
  }

  mutating func endContainer(isObject: Bool, mark: Int, count: Int) {
    depth -= 1
    if count != 1 { fits = false }
  }
}
