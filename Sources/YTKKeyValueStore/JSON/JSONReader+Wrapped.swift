extension JSONReader {
  /// The string in JSON text that is a string, or YTKKeyValueStore's one-element wrapper of
  /// one (`["s"]`, how it stored strings); nil for any other JSON value.
  ///
  /// The text is read by the same scanner as ``parse(_:)-(UnsafeRawBufferPointer)``, so it
  /// accepts and rejects exactly the same texts with the same errors; for the stored form,
  /// only the string is made: no array and no `JSONValue`.
  package static func wrappedString(_ bytes: UnsafeRawBufferPointer) throws(JSONCodecError)
    -> String?
  {
    // The stored form, `["…"]`, is read by the scanner's string reader alone, decoded straight
    // into the string's storage; any other text, or a fault (for its message), by `parse`.
    let input = uint8s(bytes)
    if input.count >= 4, input[0] == JSONByte.openBracket, input[1] == JSONByte.quote,
      input[input.count - 1] == JSONByte.closeBracket
    {
      var isStored = false
      let string = String(unsafeUninitializedCapacity: input.count) { buffer in
        var scanner = JSONScanner(input: input, position: 1)
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
    // Read whole, as any text: the rare texts that are not the stored form.
    switch try parse(bytes) {
    case .string(let string): return string
    case .array(let elements):
      guard elements.count == 1, case .string(let string) = elements[0] else { return nil }
      return string
    default: return nil
    }
  }
}
