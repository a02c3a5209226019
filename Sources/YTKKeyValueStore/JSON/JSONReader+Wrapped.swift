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
    // The stored form, `["…"]`, is read by the scanner's string reader alone, decoded straight
    // into the string's storage; any other text, or a fault (for its message), by the scan.
    let input = uint8s(bytes)
    if input.count >= 4, input[0] == JSONByte.openBracket, input[1] == JSONByte.quote,
      input[input.count - 1] == JSONByte.closeBracket
    {
      var scanner = JSONScanner(input: input, position: 1)
      var isStored = false
      let string = String(unsafeUninitializedCapacity: input.count) { buffer in
        // Decoded text is never longer than the input.
        guard
          let (_, written) = try? scanner.scanStringText(
            into: UnsafeMutableRawBufferPointer(buffer)),
          let written, scanner.position == input.count - 1
        else { return 0 }
        isStored = true
        return written
      }
      if isStored { return string }
    }
    var sink = WrappedStringSink()
    try scan(bytes, into: &sink)
    return sink.isWrappedString ? sink.string : nil
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
