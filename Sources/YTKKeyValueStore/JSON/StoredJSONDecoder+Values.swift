#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

// How one value is read from its tape entry: scalars straight from the text, Foundation's
// types as JSONDecoder reads them with the document's strategies, anything else through its
// init(from:). The rules, and the errors, are JSONDecoder's; where they are surprising, the
// comment says so.

extension StoredJSONDecoder {
  /// Why a value is not a value of the type asked for. The container that asked turns it
  /// into the `DecodingError` JSONDecoder throws there, with the coding path.
  enum Failure: Error {
    /// The value is of another kind (`typeMismatch`); `expected` is the type the message
    /// names.
    case mismatch(expected: Any.Type)
    /// The value is `null` (`valueNotFound`).
    case null
    /// A number the type cannot hold exactly (`dataCorrupted`).
    case notRepresentable
    /// A string that does not make the value, such as a `URL` (`dataCorrupted`).
    case invalid(String)
    /// A string that does not make a date, by the ISO 8601 strategy (`dataCorrupted`, which
    /// `JSONDecoder` reports at the coding path of the container, without the value's key).
    case invalidDate(String)
  }
}

/// A type the decoder reads straight from a tape entry, without its `init(from:)`.
protocol TapeDecodable: Decodable {
  typealias Document = StoredJSONDecoder.Document
  typealias Failure = StoredJSONDecoder.Failure

  static func read(at index: Int, in document: Document) throws(Failure) -> Self
}

extension StoredJSONDecoder.Document {
  typealias Failure = StoredJSONDecoder.Failure

  // MARK: Any type

  /// Decodes a `T` from the value at `index`, whose coding path is `path` and then `key`.
  func decode<T: Decodable>(
    _ type: T.Type, at index: Int, path: StoredJSONDecoder.CodingPath, key: some CodingKey
  ) throws -> T {
    /// The value read directly as a `V`, if `T` is `V`.
    @inline(__always)
    func direct<V: TapeDecodable>(_: V.Type) throws -> T? {
      guard T.self == V.self else { return nil }
      return reinterpret(try read(V.self, at: index, path: path, key: key), as: T.self)
    }
    /// The value read directly as an array of `V`, if `T` is `[V]` and the value is one.
    /// (Otherwise Array's init(from:), below, throws JSONDecoder's error.)
    @inline(__always)
    func directArray<V: TapeDecodable>(of _: V.Type) -> T? {
      guard T.self == [V].self, let elements = elements(of: V.self, at: index) else { return nil }
      return reinterpret(elements, as: T.self)
    }
    // Foundation's types are read as JSONDecoder reads them with the strategies, not by
    // their init(from:) (which for Data would expect an array of bytes, as
    // `.deferredToData` does).
    if let value = try direct(Date.self) { return value }
    if let value = try direct(URL.self) { return value }
    if strategies.data == .base64, let value = try direct(Data.self) { return value }
    if let value = try direct(Decimal.self) { return value }
    // The commonest scalars are read directly too: the same as by their init(from:), which
    // asks a single-value container for the same thing, without the detour.
    if let value = try direct(String.self) { return value }
    if let value = try direct(Int.self) { return value }
    if let value = try direct(Double.self) { return value }
    if let value = try direct(Bool.self) { return value }
    // So are arrays of the commonest scalars: Array's init(from:) is generic code that looks
    // up type metadata at every step.
    if let value = directArray(of: Int.self) { return value }
    if let value = directArray(of: String.self) { return value }
    if let value = directArray(of: Double.self) { return value }
    let decoder = StoredJSONDecoder.ValueDecoder(
      document: self, value: index, path: self.path(path, appending: key))
    // As with `JSONDecoder`, a key strategy leaves the keys of a `[String: Value]` alone.
    if convertsKeys, let dictionary = T.self as? any StringKeyedDictionaryDecodable.Type {
      return try dictionary.decodeMembers(of: decoder) as! T
    }
    return try T(from: decoder)
  }

  /// Reads the `Value` at `index`, whose coding path is `path` and then `key`.
  @inline(__always)
  func read<Value: TapeDecodable>(
    _: Value.Type, at index: Int, path: StoredJSONDecoder.CodingPath, key: some CodingKey
  ) throws -> Value {
    do {
      return try Value.read(at: index, in: self)
    } catch {
      throw decodingError(error, decoding: Value.self, at: index, path: path, key: key)
    }
  }

  /// The array of `Element` at `index`, nil if it is not one.
  private func elements<Element: TapeDecodable>(of _: Element.Type, at index: Int) -> [Element]? {
    let array = tape[index]
    guard array.kind == .array else { return nil }
    var elements: [Element] = []
    elements.reserveCapacity(array.first)
    var element = index + 1
    for _ in 0..<array.first {
      guard let value = try? Element.read(at: element, in: self) else { return nil }
      elements.append(value)
      element = entry(after: element)
    }
    return elements
  }

  /// The `DecodingError` JSONDecoder throws for `failure`, with its messages.
  func decodingError(
    _ failure: Failure, decoding type: Any.Type, at index: Int,
    path: StoredJSONDecoder.CodingPath, key: some CodingKey
  ) -> DecodingError {
    let valuePath = self.path(path, appending: key)
    switch failure {
    case .mismatch(let expected):
      let found = kindDescription(at: index)
      return .typeMismatch(
        expected,
        errorContext(at: valuePath, "Expected to decode \(expected) but found \(found) instead."))
    case .null:
      return .valueNotFound(
        type,
        errorContext(at: valuePath, "Cannot get value of type \(type) -- found null value instead"))
    case .notRepresentable:
      let text = String(decoding: text(at: index), as: UTF8.self)
      return .dataCorrupted(
        errorContext(at: valuePath, "The number \(text) is not representable as \(type)."))
    case .invalid(let message):
      return .dataCorrupted(errorContext(at: valuePath, message))
    case .invalidDate(let message):
      return .dataCorrupted(errorContext(at: path, message))
    }
  }

  // MARK: Scalars

  /// The number at `index`, re-read from its text; `expected` names the type in a mismatch.
  func number(at index: Int, expected: Any.Type) throws(Failure) -> JSONScannedNumber {
    let entry = tape[index]
    guard entry.kind == .number else {
      throw entry.kind == .null ? .null : .mismatch(expected: expected)
    }
    var scanner = JSONScanner(input: input, position: entry.first)
    return try! scanner.scanNumber()  // It was read once already.
  }

  /// An integer of type `T`, as JSONDecoder reads one: integer text that fits; other number
  /// text (`1.0`, `1e2`) when its double is a whole number that fits. Past 2^53, where
  /// doubles are far apart, JSONDecoder reads such text as a `Decimal` and converts that,
  /// truncating any fraction (`9007199254740993.5` is 9007199254740993); so does this.
  func integer<T: FixedWidthInteger>(_: T.Type, at index: Int) throws(Failure) -> T {
    let entry = tape[index]
    if entry.kind == .number, entry.flags & JSONTapeEntry.Flags.isInteger != 0 {
      // Integer text of up to 19 digits, the usual case, straight from the text.
      var position = entry.first
      let isNegative = input[position] == JSONByte.minus
      if isNegative { position += 1 }
      if entry.second - position <= 19 {
        var magnitude: UInt64 = 0
        while position < entry.second {
          magnitude = magnitude &* 10 &+ UInt64(input[position] &- JSONByte.zero)
          position += 1
        }
        guard let value = integer(T.self, magnitude: magnitude, isNegative: isNegative) else {
          throw .notRepresentable
        }
        return value
      }
    }
    let number = try number(at: index, expected: T.self)
    if number.isInteger {
      // More than 19 digits (fewer are read above): Swift's parser, which refuses overflow.
      guard let value = T(number.text(in: input)) else { throw .notRepresentable }
      return value
    }
    let double = number.doubleValue(in: input)
    guard let value = T(exactly: double) else { throw .notRepresentable }
    if double.magnitude < 0x1p53 { return value }
    guard let value = Self.integer(T.self, fromDecimal: Decimal(string: number.text(in: input)))
    else { throw .notRepresentable }
    return value
  }

  /// `magnitude`, negated if `isNegative`, as a `T` if it fits (`-0` is 0).
  @inline(__always)
  func integer<T: FixedWidthInteger>(_: T.Type, magnitude: UInt64, isNegative: Bool) -> T? {
    if !isNegative { return T(exactly: magnitude) }
    if magnitude <= 1 << 63 { return T(exactly: Int64(bitPattern: 0 &- magnitude)) }
    return T.isSigned && T.bitWidth > 64 ? 0 - T(magnitude) : nil
  }

  /// JSONDecoder's conversion of a `Decimal` to an integer: the significand (which must fit
  /// in 64 bits), scaled by the exponent, a negative exponent truncating.
  static func integer<T: FixedWidthInteger>(_: T.Type, fromDecimal decimal: Decimal?) -> T? {
    guard let decimal, !decimal.isNaN else { return nil }
    let isNegative = decimal.sign == .minus
    if isNegative, !T.isSigned { return nil }
    guard var magnitude = UInt64(decimal.significand.description) else { return nil }
    let exponent = decimal.exponent
    if exponent < 0 {
      for _ in 0..<(0 - exponent) { magnitude /= 10 }
    } else {
      for _ in 0..<exponent {
        let (product, overflows) = magnitude.multipliedReportingOverflow(by: 10)
        guard !overflows else { return nil }
        magnitude = product
      }
    }
    guard let value = T(exactly: magnitude) else { return nil }
    return isNegative ? 0 - value : value
  }

  /// Whether a number that converted to zero is zero, as JSONDecoder tells: a nonzero digit
  /// before the exponent says no. JSONDecoder reads the text four bytes at a time from the
  /// front, and the last one to three bytes from the back, so an exponent digit among those
  /// is seen before the `e`: `0e5` and `-0.0e5` are "not zero" and fail to decode as floating
  /// point, while `-0e5` and `0.0e+5` decode as zero. Reading the same way gives the same
  /// answers.
  func isZero(_ number: JSONScannedNumber) -> Bool {
    /// Whether `byte` decides: false for a nonzero digit, true for the exponent's `e`.
    func verdict(_ byte: UInt8) -> Bool? {
      switch byte {
      case JSONByte.one...JSONByte.nine: return false
      case JSONByte.lowercaseE, JSONByte.uppercaseE: return true
      default: return nil
      }
    }
    let split = number.start + (number.end - number.start) / 4 * 4
    for index in number.start..<split {
      if let verdict = verdict(input[index]) { return verdict }
    }
    for index in (split..<number.end).reversed() {
      if let verdict = verdict(input[index]) { return verdict }
    }
    return true
  }
}

/// A `[String: Value]`, whose keys `JSONDecoder` reads as they are whatever the key strategy:
/// it decodes the dictionary itself rather than through the dictionary's `init(from:)`, which
/// would look the keys up in a keyed container.
protocol StringKeyedDictionaryDecodable {
  /// Decodes the object that `decoder` reads: every member's value, in document order (so
  /// that the first one that fails is reported), the first of a repeated key kept.
  static func decodeMembers(of decoder: StoredJSONDecoder.ValueDecoder) throws -> Self
}

extension Dictionary: StringKeyedDictionaryDecodable where Key == String, Value: Decodable {
  static func decodeMembers(of decoder: StoredJSONDecoder.ValueDecoder) throws -> [String: Value] {
    try decoder.expectContainer(.object)
    let document = decoder.document
    var members: [String: Value] = [:]
    members.reserveCapacity(document.tape[decoder.value].first)
    for member in document.keyIndices(of: decoder.value) {
      let name = document.decodedString(at: member)
      let value = try document.decode(
        Value.self, at: member + 1, path: decoder.path, key: StringKey(stringValue: name))
      if members[name] == nil { members[name] = value }
    }
    return members
  }
}

/// `value` as a `T` that the caller has found to be `Value`'s own type: a copy of the same
/// bits, without the runtime cast that `as! T` makes in generic code (the decoder's and the
/// encoder's).
@inline(__always)
func reinterpret<Value, T>(_ value: Value, as _: T.Type) -> T {
  withUnsafePointer(to: value) { UnsafeRawPointer($0).load(as: T.self) }
}

// MARK: - The types read from tape entries

extension Bool: TapeDecodable {
  static func read(at index: Int, in document: Document) throws(Failure) -> Bool {
    switch document.tape[index].kind {
    case .true: return true
    case .false: return false
    // JSONDecoder reports null as a type mismatch for Bool alone.
    default: throw .mismatch(expected: Bool.self)
    }
  }
}

extension String: TapeDecodable {
  static func read(at index: Int, in document: Document) throws(Failure) -> String {
    let kind = document.tape[index].kind
    guard kind == .string else { throw kind == .null ? .null : .mismatch(expected: String.self) }
    return document.decodedString(at: index)
  }
}

/// A double, the nearest to the text. JSONDecoder refuses a nonzero number that rounds to
/// zero (`1e-400`), as it refuses one too large (which the reader has refused already).
extension Double: TapeDecodable {
  static func read(at index: Int, in document: Document) throws(Failure) -> Double {
    let number = try document.number(at: index, expected: Double.self)
    let value = number.doubleValue(in: document.input)
    if value == 0, !document.isZero(number) { throw .notRepresentable }
    return value
  }
}

/// A float, the nearest to the text itself: rounding through a double first would round
/// twice and could land on the other neighbour. Zero and overflow as for a double.
extension Float: TapeDecodable {
  static func read(at index: Int, in document: Document) throws(Failure) -> Float {
    let number = try document.number(at: index, expected: Float.self)
    var value: Float
    // Clinger's fast path, for floats: a significand up to 2^24 and a power of ten up to
    // 10^10 are exact, so one multiply or divide rounds correctly (a `Float(String)` each
    // would be several times the cost of the rest of the read).
    if number.digitCount <= 19, number.significand <= 1 << 24, abs(number.exponent) <= 10 {
      let significand = Float(number.significand)
      let power = exactFloatPowersOfTen[abs(number.exponent)]
      value = number.exponent < 0 ? significand / power : significand * power
      if number.isNegative { value = -value }
    } else {
      guard let parsed = Float(number.text(in: document.input)), parsed.isFinite else {
        throw .notRepresentable
      }
      value = parsed
    }
    if value == 0, !document.isZero(number) { throw .notRepresentable }
    return value
  }
}

/// 10^0 through 10^10: the powers of ten that a Float holds exactly.
private let exactFloatPowersOfTen: [Float] = [
  1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
]

extension Decimal: TapeDecodable {
  static func read(at index: Int, in document: Document) throws(Failure) -> Decimal {
    let number = try document.number(at: index, expected: Decimal.self)
    guard let decimal = Decimal(string: number.text(in: document.input)) else {
      throw .notRepresentable
    }
    return decimal
  }
}

/// A date by the date strategy: by default `.deferredToDate`, the number of seconds since
/// 2001 (what `Date(from:)` reads).
extension Date: TapeDecodable {
  static func read(at index: Int, in document: Document) throws(Failure) -> Date {
    switch document.strategies.dates {
    case .deferredToDate:
      return Date(timeIntervalSinceReferenceDate: try Double.read(at: index, in: document))
    case .secondsSince1970:
      return Date(timeIntervalSince1970: try Double.read(at: index, in: document))
    case .millisecondsSince1970:
      return Date(timeIntervalSince1970: try Double.read(at: index, in: document) / 1000)
    case .iso8601:
      guard let date = ISO8601DateText.date(from: try String.read(at: index, in: document)) else {
        throw .invalidDate("Expected date string to be ISO8601-formatted.")
      }
      return date
    }
  }
}

extension URL: TapeDecodable {
  static func read(at index: Int, in document: Document) throws(Failure) -> URL {
    guard let url = URL(string: try String.read(at: index, in: document)) else {
      throw .invalid("Invalid URL string.")
    }
    return url
  }
}

/// `.base64`, as strict as `Data(base64Encoded:)`: padding required, no whitespace.
extension Data: TapeDecodable {
  static func read(at index: Int, in document: Document) throws(Failure) -> Data {
    guard let data = Data(base64Encoded: try String.read(at: index, in: document)) else {
      throw .invalid("Encountered Data is not valid Base64.")
    }
    return data
  }
}

extension TapeDecodable where Self: FixedWidthInteger {
  static func read(at index: Int, in document: Document) throws(Failure) -> Self {
    try document.integer(Self.self, at: index)
  }
}

extension Int: TapeDecodable {}
extension Int8: TapeDecodable {}
extension Int16: TapeDecodable {}
extension Int32: TapeDecodable {}
extension Int64: TapeDecodable {}
extension UInt: TapeDecodable {}
extension UInt8: TapeDecodable {}
extension UInt16: TapeDecodable {}
extension UInt32: TapeDecodable {}
extension UInt64: TapeDecodable {}
@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension Int128: TapeDecodable {}
@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension UInt128: TapeDecodable {}
