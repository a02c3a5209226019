extension JSONReader {
  /// The string in JSON text that is a string, or YTKKeyValueStore's one-element wrapper of
  /// one (`["s"]`, how it stored strings); nil for any other JSON value.
  ///
  /// The text is read by the same scanner as ``parse(_:)-(UnsafeRawBufferPointer)``, so it
  /// accepts and rejects exactly the same texts with the same errors, but only the string is
  /// made: no array and no `JSONValue`.
  static func wrappedString(_ bytes: UnsafeRawBufferPointer) throws(JSONCodecError) -> String? {
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
