/// A JSON value: the type of everything a ``KeyValueStore`` stores and returns.
///
/// `JSONValue` mirrors the JSON data model, with one refinement: numbers are either
/// integers (``int(_:)``, every `Int64`) or floating point (``double(_:)``, every finite
/// `Double`). The stored text keeps the two apart (`2` is an integer, `2.0` a double), so a
/// value reads back as the same case it was written as, bit for bit.
///
/// Values are built most easily from literals:
///
/// ```swift
/// let user: JSONValue = [
///   "id": 1,
///   "name": "tangqiao",
///   "score": 97.5,
///   "tags": ["ios", "swift"],
///   "manager": nil,
/// ]
/// print(user["name"]?.stringValue ?? "")  // tangqiao
/// print(user["tags"]?[1] ?? "")  // "swift"
/// print(user)  // {"id":1,"manager":null,"name":"tangqiao","score":97.5,"tags":["ios","swift"]}
/// ```
///
/// Equality is structural and exact: `.int(1)` and `.double(1.0)` are different values,
/// because they are stored as different text. Object keys compare as Swift strings do (by
/// canonical equivalence), so two keys that differ only in Unicode normalization are one key.
///
/// A value's ``description`` is its canonical compact JSON text: object members sorted by
/// the UTF-8 bytes of their keys, no whitespace. That is also the text the store writes.
public enum JSONValue: Sendable, Hashable {
  /// JSON `null`.
  case null
  /// JSON `true` or `false`.
  case bool(Bool)
  /// A JSON number written without fraction or exponent that fits in 64 bits.
  case int(Int64)
  /// A JSON number with a fraction or exponent, or an integer too large for `Int64`.
  ///
  /// Only finite doubles can be stored; NaN and the infinities are rejected when written.
  case double(Double)
  /// A JSON string; any Unicode text, including control characters and the empty string.
  case string(String)
  /// A JSON array.
  case array([JSONValue])
  /// A JSON object. Keys are unique; member order carries no meaning.
  case object([String: JSONValue])
}

extension JSONValue: CustomStringConvertible {
  /// The canonical compact JSON text of the value, as the store writes it.
  ///
  /// Unlike the store, `description` never fails: a non-finite double, which JSON cannot
  /// represent, is shown as `nan`, `inf` or `-inf`.
  public var description: String {
    // In lenient mode nothing throws.
    String(decoding: (try? JSONWriter.bytes(self, lenient: true)) ?? [], as: UTF8.self)
  }
}

extension JSONValue {
  /// Reads JSON text (UTF-8), exactly as the store reads its values: RFC 8259 and nothing
  /// more, arrays and objects nested at most 512 deep, a repeated object key keeping its last
  /// value. Integer syntax that fits `Int64` reads as ``int(_:)``, other numbers as
  /// ``double(_:)``.
  ///
  /// ```swift
  /// let user = try JSONValue(parsing: #"{"name":"tangqiao","age":30}"#)
  /// print(user["age"]!)  // 30
  /// ```
  ///
  /// - Throws: `.invalidArgument`, naming what was expected and the byte offset where it was
  ///   not found.
  public init(parsing text: String) throws(KeyValueStoreError) {
    var text = text
    let result = text.withUTF8 { utf8 in
      Result { () throws(KeyValueStoreError) in try JSONValue(parsing: UnsafeRawBufferPointer(utf8))
      }
    }
    self = try result.get()
  }

  /// Reads JSON text from UTF-8 bytes; see ``init(parsing:)-(String)``.
  public init(parsing utf8: [UInt8]) throws(KeyValueStoreError) {
    let result = utf8.withUnsafeBytes { bytes in
      Result { () throws(KeyValueStoreError) in try JSONValue(parsing: bytes) }
    }
    self = try result.get()
  }

  /// Reads JSON text from UTF-8 bytes in memory the caller owns (a memory-mapped file, a C
  /// library's buffer); see ``init(parsing:)-(String)``. The bytes are not kept.
  public init(parsing utf8: UnsafeRawBufferPointer) throws(KeyValueStoreError) {
    do {
      self = try JSONReader.parse(utf8)
    } catch {
      throw KeyValueStoreError(.invalidArgument, "the text is not JSON: " + error.message)
    }
  }
}
