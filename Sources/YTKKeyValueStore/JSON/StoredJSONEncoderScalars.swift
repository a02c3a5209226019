#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

// How scalars are stored: as the number (or string) that `JSONEncoder`'s text for them reads
// back as, written the way JSONWriter writes it.

/// A type the Codable containers take as such (`encode(_: Int8)`, …): the encoder writes
/// its values itself, the same way in every container and in arrays of them.
protocol StoredJSONScalar: Encodable, Sendable {
  /// Why the value has no JSON form (a NaN or infinite number), or nil.
  var unstorableMessage: String? { get }
  /// Appends the value's stored text; the value must be storable.
  func appendStored(to output: inout JSONOutput)
}

extension StoredJSONScalar {
  var unstorableMessage: String? { nil }

  /// Throws `JSONEncoder`'s error for a value with no JSON form, at `codingPath` (made only
  /// then).
  func checkStorable(at codingPath: @autoclosure () -> [any CodingKey]) throws {
    guard let message = unstorableMessage else { return }
    throw EncodingError.invalidValue(
      self, EncodingError.Context(codingPath: codingPath(), debugDescription: message))
  }
}

extension Bool: StoredJSONScalar {
  func appendStored(to output: inout JSONOutput) {
    output.appendLiteral(self ? "true" : "false")
  }
}

extension String: StoredJSONScalar {
  func appendStored(to output: inout JSONOutput) { output.appendString(self) }
}

extension StoredJSONScalar where Self: BinaryFloatingPoint {
  var unstorableMessage: String? {
    isFinite ? nil : "Unable to encode \(Self.self).\(self) directly in JSON."
  }
}

extension Double: StoredJSONScalar {
  /// As `JSONEncoder` and the reader make it: `JSONEncoder` prints `description` without a
  /// trailing ".0", and the reader reads integer syntax as an integer. `description` is
  /// positional, with ".0", exactly for whole values of magnitude up to 2^53, so those
  /// (except -0.0, whose "-0" reads as a double) become integers; any other description
  /// reads back as the same double.
  func appendStored(to output: inout JSONOutput) {
    if magnitude <= 0x1p53, rounded(.towardZero) == self, !(self == 0 && sign == .minus) {
      output.appendInteger(Int64(self))
    } else {
      // Cannot throw: the number is finite.
      try? output.appendDouble(self)
    }
  }
}

extension Float: StoredJSONScalar {
  /// Its own `description` without ".0", read as a double.
  func appendStored(to output: inout JSONOutput) {
    _ = StoredJSONEncoder.appendNumberText(description, into: &output)
  }
}

/// The integer types: an integer within `Int64`; beyond it (a large `UInt64`, `UInt`,
/// `Int128` or `UInt128`), the double its decimal text reads as, as the reader reads integer
/// syntax too large for `Int64`.
extension StoredJSONScalar where Self: FixedWidthInteger {
  func appendStored(to output: inout JSONOutput) {
    if let small = Int64(exactly: self) {
      output.appendInteger(small)
    } else {
      _ = StoredJSONEncoder.appendNumberText(description, into: &output)
    }
  }
}

extension Int: StoredJSONScalar {}
extension Int8: StoredJSONScalar {}
extension Int16: StoredJSONScalar {}
extension Int32: StoredJSONScalar {}
extension Int64: StoredJSONScalar {}
extension UInt: StoredJSONScalar {}
extension UInt8: StoredJSONScalar {}
extension UInt16: StoredJSONScalar {}
extension UInt32: StoredJSONScalar {}
extension UInt64: StoredJSONScalar {}
@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension Int128: StoredJSONScalar {}
@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension UInt128: StoredJSONScalar {}

extension StoredJSONEncoder {
  /// Appends the number that `text` (as `JSONEncoder` writes it, less a trailing ".0") reads
  /// as, written canonically; false, appending nothing, if it does not read as a number.
  static func appendNumberText(_ text: String, into output: inout JSONOutput) -> Bool {
    var text = text
    if text.hasSuffix(".0") { text.removeLast(2) }
    switch try? JSONReader.parse(Array(text.utf8)) {
    case .int(let integer)?:
      output.appendInteger(integer)
    case .double(let double)?:
      try? output.appendDouble(double)
    default:
      return false
    }
    return true
  }
}

extension StoredJSONEncoder.Encoding {
  /// Encodes an array of numbers or strings (an `[Int]`, `[String]`, `[Double]`...) as an
  /// array container holding one run of elements: the same text as through an unkeyed
  /// container, written without a call per element.
  func encodeScalars<Element: StoredJSONScalar>(
    _ elements: [Element]
  ) throws(InvalidValue) -> Value {
    let container = newContainer(isObject: false, pathNode: -1)
    let start = arena.count
    for index in elements.indices {
      if let message = elements[index].unstorableMessage {
        // What was written of the array is never referred to.
        throw InvalidValue(value: elements[index], message: message, index: index)
      }
      if index > 0 { arena.append(JSONByte.comma) }
      elements[index].appendStored(to: &arena)
    }
    if !elements.isEmpty {
      addElement(.text(start: start, end: arena.count), in: container, elementCount: elements.count)
    }
    return .container(container)
  }

  /// Writes the types `JSONEncoder` encodes its own way rather than through their
  /// `encode(to:)` (and the arrays of the commonest scalars, `[String]`, `[Int]` and
  /// `[Double]`, which the decoder also reads in one go: quicker to write in one go, and the
  /// same text), or returns nil for every other type. Dates and `Data` take the forms the
  /// strategies choose.
  func encodeSpecial<T: Encodable>(_ value: T) throws(InvalidValue) -> Value? {
    let start = arena.count
    if T.self == Date.self {
      try appendDate(reinterpret(value, as: Date.self))
    } else if T.self == URL.self {
      let url = reinterpret(value, as: URL.self)
      arena.appendString(url.absoluteString)
    } else if T.self == Data.self {
      let data = reinterpret(value, as: Data.self)
      guard strategies.data == .base64 else {
        // `.deferredToData`: what Data's own encode(to:) writes, an array of its bytes.
        return try encodeScalars(Array(data))
      }
      // `JSONEncoder`'s default `.base64`: a string of the base64 text.
      arena.appendString(data.base64EncodedString())
    } else if T.self == Decimal.self {
      let decimal = reinterpret(value, as: Decimal.self)
      let isNumber = StoredJSONEncoder.appendNumberText(decimal.description, into: &arena)
      guard isNumber else {
        throw InvalidValue(
          value: decimal, message: "Unable to encode Decimal \(decimal) in JSON.", index: nil)
      }
    } else if T.self == [String].self {
      return try encodeScalars(reinterpret(value, as: [String].self))
    } else if T.self == [Int].self {
      return try encodeScalars(reinterpret(value, as: [Int].self))
    } else if T.self == [Double].self {
      return try encodeScalars(reinterpret(value, as: [Double].self))
    } else {
      return nil
    }
    return .text(start: start, end: arena.count)
  }

  /// Appends `date` in the form of the date strategy.
  private func appendDate(_ date: Date) throws(InvalidValue) {
    let number: Double
    switch strategies.dates {
    case .deferredToDate:
      // What Date's own encode(to:) writes.
      number = date.timeIntervalSinceReferenceDate
    case .secondsSince1970:
      number = date.timeIntervalSince1970
    case .millisecondsSince1970:
      number = 1000 * date.timeIntervalSince1970
    case .iso8601:
      arena.appendString(ISO8601DateText.text(of: date))
      return
    }
    if let message = number.unstorableMessage {
      throw InvalidValue(value: number, message: message, index: nil)
    }
    number.appendStored(to: &arena)
  }
}
