import YTKKeyValueStore

/// Fuzz target: the JSON codec.
///
/// Parsing any bytes must never trap. What parses must write back to canonical text that
/// parses to the same value (keys byte for byte) and writes to the same bytes again (the
/// stored form is stable).
/// The Codable encoder and decoder must agree with Foundation's on the same input
/// (``fuzzStoredJSONEncoder(_:)``, ``fuzzStoredJSONDecoder(_:)``), and the canonicalizer
/// (JSON text to the stored form without a `JSONValue`, as an import converts rows) with
/// parsing and writing: the same bytes, or the same error. `string(id:)`'s own reading of a
/// stored string must agree with the scanner's, and read back any string the writer wrote.
package func fuzzJSON(_ data: UnsafeRawBufferPointer) {
  fuzzStoredJSONEncoder(data)
  fuzzStoredJSONDecoder(data)
  fuzzCanonicalizer(data)
  fuzzWrappedString(data)
  guard let value = try? JSONReader.parse(data) else { return }
  guard let canonical = try? JSONWriter.bytes(value) else {
    preconditionFailure("a parsed value must be writable")
  }
  guard let reread = try? JSONReader.parse(canonical) else {
    preconditionFailure("canonical text must parse: \(String(decoding: canonical, as: UTF8.self))")
  }
  precondition(
    sameValue(reread, value) && sameKeyBytes(reread, value),
    "the value changed through canonical text")
  precondition((try? JSONWriter.bytes(reread)) == canonical, "canonical text is not stable")
}

private func fuzzCanonicalizer(_ data: UnsafeRawBufferPointer) {
  let direct = Result { () throws(JSONCodecError) in try JSONCanonicalizer.canonicalText(of: data) }
  let parsed = Result { () throws(JSONCodecError) in try JSONWriter.bytes(JSONReader.parse(data)) }
  switch (direct, parsed) {
  case (.success(let a), .success(let b)):
    precondition(
      a == b,
      "the canonicalizer wrote \(String(decoding: a, as: UTF8.self)), the writer \(String(decoding: b, as: UTF8.self))"
    )
  case (.failure(let a), .failure(let b)):
    precondition(
      a.message == b.message && a.offset == b.offset,
      "the canonicalizer failed with \(a), the reader with \(b)")
  default:
    preconditionFailure("the canonicalizer and the reader disagree: \(direct) against \(parsed)")
  }
}

private func fuzzWrappedString(_ data: UnsafeRawBufferPointer) {
  let quick = Result { () throws(JSONCodecError) in try JSONReader.wrappedString(data) }
  let scanned = Result { () throws(JSONCodecError) -> String? in
    let value = try JSONReader.parse(data)
    if case .string(let string) = value { return string }
    if case .array(let elements) = value, elements.count == 1,
      case .string(let string) = elements[0]
    {
      return string
    }
    return nil
  }
  switch (quick, scanned) {
  case (.success(let a), .success(let b)):
    precondition(
      a.map { Array($0.utf8) } == b.map { Array($0.utf8) },
      "the stored string reads as \(String(describing: a)), the scanner reads \(String(describing: b))"
    )
  case (.failure(let a), .failure(let b)):
    precondition(
      a.message == b.message && a.offset == b.offset,
      "the stored string's reading failed with \(a), the scanner with \(b)")
  default:
    preconditionFailure(
      "the stored string's reading and the scanner disagree: \(quick) against \(scanned)")
  }
  // The input's text as a string: written as the store writes strings, it reads back.
  let string = String(decoding: data, as: UTF8.self)
  let back = JSONWriter.withText(wrapping: string) { try? JSONReader.wrappedString($0) }
  precondition(
    back.map { Array($0.utf8) } == Array(string.utf8), "a written string read back changed")
}

/// Whether every object in `a` has keys of exactly the bytes of the keys of the object at the
/// same place in `b` (``sameValue(_:_:)`` compares keys as strings, by canonical equivalence).
private func sameKeyBytes(_ a: JSONValue, _ b: JSONValue) -> Bool {
  switch (a, b) {
  case (.array(let x), .array(let y)):
    return x.count == y.count && zip(x, y).allSatisfy { sameKeyBytes($0, $1) }
  case (.object(let x), .object(let y)):
    func keys(_ members: [String: JSONValue]) -> [[UInt8]] {
      members.keys.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
    }
    return keys(x) == keys(y)
      && x.allSatisfy { key, value in y[key].map { sameKeyBytes(value, $0) } ?? false }
  default: return true
  }
}

/// Equality that treats NaN-free doubles bit for bit, as the store must keep them.
private func sameValue(_ a: JSONValue, _ b: JSONValue) -> Bool {
  switch (a, b) {
  case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern
  case (.array(let x), .array(let y)):
    return x.count == y.count && zip(x, y).allSatisfy { sameValue($0, $1) }
  case (.object(let x), .object(let y)):
    return x.count == y.count
      && x.allSatisfy { key, value in y[key].map { sameValue(value, $0) } ?? false }
  default: return a == b
  }
}
