#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

// How scalars are stored: as the number (or string) that `JSONEncoder`'s text for them reads
// back as, written the way JSONWriter writes it.

extension StoredJSONEncoder {
  /// Appends a finite `Double` as `JSONEncoder` and the reader make it: `JSONEncoder`
  /// prints `description` without a trailing ".0", and the reader reads integer syntax as
  /// an integer. `description` is positional, with ".0", exactly for whole values of
  /// magnitude up to 2^53, so those (except -0.0, whose "-0" reads as a double) become
  /// integers; any other description reads back as the same double.
  static func appendFiniteDouble(_ double: Double, into output: inout JSONOutput) {
    if double.magnitude <= 0x1p53, double.rounded(.towardZero) == double,
      !(double == 0 && double.sign == .minus)
    {
      output.appendInteger(Int64(double))
    } else {
      appendDouble(double, into: &output)
    }
  }

  /// Appends a finite double as JSONWriter writes it.
  static func appendDouble(_ double: Double, into output: inout JSONOutput) {
    // Cannot throw: the number is finite.
    try? JSONWriter.appendDouble(double, lenient: false, into: &output)
  }

  /// Appends a finite `Float`: its own `description` without ".0", read as a double.
  static func appendFiniteFloat(_ float: Float, into output: inout JSONOutput) {
    _ = appendNumberText(float.description, into: &output)
  }

  /// Appends a `UInt64`: an integer up to `Int64.max`, beyond it the nearest double (the
  /// reader's rule for integer syntax too large for `Int64`).
  static func appendUnsigned(_ integer: UInt64, into output: inout JSONOutput) {
    if let small = Int64(exactly: integer) {
      output.appendInteger(small)
    } else {
      try? JSONWriter.appendDouble(Double(integer), lenient: false, into: &output)
    }
  }

  /// Appends an `Int128` or `UInt128`: an integer within `Int64`, beyond it the double its
  /// decimal text reads as.
  static func appendInteger<Integer: FixedWidthInteger>(
    _ integer: Integer, into output: inout JSONOutput
  ) {
    if let small = Int64(exactly: integer) {
      output.appendInteger(small)
    } else {
      _ = appendNumberText(integer.description, into: &output)
    }
  }

  /// Appends the number that `text` (as `JSONEncoder` writes it, less a trailing ".0") reads
  /// as, written canonically; false, appending nothing, if it does not read as a number.
  static func appendNumberText(_ text: String, into output: inout JSONOutput) -> Bool {
    var text = text
    if text.hasSuffix(".0") { text.removeLast(2) }
    switch try? JSONReader.parse(Array(text.utf8)) {
    case .int(let integer)?:
      JSONWriter.appendInteger(integer, into: &output)
    case .double(let double)?:
      try? JSONWriter.appendDouble(double, lenient: false, into: &output)
    default:
      return false
    }
    return true
  }

  /// Appends `data` as `JSONEncoder`'s default `.base64` strategy does: a string of its
  /// base64 text, which needs no escapes.
  static func appendBase64(_ data: Data, into output: inout JSONOutput) {
    JSONWriter.appendString(data.base64EncodedString(), into: &output)
  }

  /// `value` as `U`, which the caller has checked is its type.
  static func cast<T, U>(_ value: T, to type: U.Type) -> U {
    unsafeBitCast(value, to: type)
  }

  static func nonFiniteMessage<Number: BinaryFloatingPoint>(_ number: Number) -> String {
    "Unable to encode \(Number.self).\(number) directly in JSON."
  }

  /// The arrays written in one go rather than element by element through an unkeyed
  /// container: those of the standard numeric types and of strings, exactly (not optionals
  /// or other collections). The text is the same either way.
  enum DirectArray {
    case string, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64
    case double, float, int128, uint128

    static func kind<T>(of type: T.Type) -> DirectArray? {
      // An array is one reference: most other types are told apart without comparisons.
      guard MemoryLayout<T>.size == MemoryLayout<[Int]>.size else { return nil }
      if type == [String].self { return .string }
      if type == [Int].self { return .int }
      if type == [Double].self { return .double }
      if type == [Int64].self { return .int64 }
      if type == [UInt8].self { return .uint8 }
      if type == [Float].self { return .float }
      if type == [Int8].self { return .int8 }
      if type == [Int16].self { return .int16 }
      if type == [Int32].self { return .int32 }
      if type == [UInt].self { return .uint }
      if type == [UInt16].self { return .uint16 }
      if type == [UInt32].self { return .uint32 }
      if type == [UInt64].self { return .uint64 }
      if #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) {
        if type == [Int128].self { return .int128 }
        if type == [UInt128].self { return .uint128 }
      }
      return nil
    }
  }
}

extension StoredJSONEncoder.Encoding {
  func nonFiniteMessage<Number: BinaryFloatingPoint>(_ number: Number) -> String {
    StoredJSONEncoder.nonFiniteMessage(number)
  }

  /// Encodes an array of numbers or strings (an `[Int]`, `[String]`, `[Double]`...) as an
  /// array container holding one run of elements: the same text as through an unkeyed
  /// container, written without a call per element.
  func encodeDirectArray<T>(
    _ value: T, kind: StoredJSONEncoder.DirectArray
  ) throws(StoredJSONEncoder.InvalidValue) -> Value {
    let container = newContainer(isObject: false, pathNode: -1)
    let start = arena.count
    let count = try appendElements(value, kind: kind)
    if count > 0 {
      addElement(
        Value(kind: .text, start: start, end: arena.count), in: container, elementCount: count)
    }
    return .container(container)
  }

  /// Appends the elements of the array `value`, with commas between them; returns how many.
  private func appendElements<T>(
    _ value: T, kind: StoredJSONEncoder.DirectArray
  ) throws(StoredJSONEncoder.InvalidValue) -> Int {
    typealias Encoder = StoredJSONEncoder
    switch kind {
    case .string:
      return appendElements(value, as: [String].self) { $1.appendString($0) }
    case .int:
      return appendElements(value, as: [Int].self) { $1.appendInteger(Int64($0)) }
    case .int8:
      return appendElements(value, as: [Int8].self) { $1.appendInteger(Int64($0)) }
    case .int16:
      return appendElements(value, as: [Int16].self) { $1.appendInteger(Int64($0)) }
    case .int32:
      return appendElements(value, as: [Int32].self) { $1.appendInteger(Int64($0)) }
    case .int64:
      return appendElements(value, as: [Int64].self) { $1.appendInteger($0) }
    case .uint:
      return appendElements(value, as: [UInt].self) {
        Encoder.appendUnsigned(UInt64($0), into: &$1)
      }
    case .uint8:
      return appendElements(value, as: [UInt8].self) { $1.appendInteger(Int64($0)) }
    case .uint16:
      return appendElements(value, as: [UInt16].self) { $1.appendInteger(Int64($0)) }
    case .uint32:
      return appendElements(value, as: [UInt32].self) { $1.appendInteger(Int64($0)) }
    case .uint64:
      return appendElements(value, as: [UInt64].self) { Encoder.appendUnsigned($0, into: &$1) }
    case .double:
      let array = Encoder.cast(value, to: [Double].self)
      if let bad = array.firstIndex(where: { !$0.isFinite }) {
        throw Encoder.InvalidValue(
          value: array[bad], message: nonFiniteMessage(array[bad]), index: bad)
      }
      return appendElements(array, as: [Double].self) {
        Encoder.appendFiniteDouble($0, into: &$1)
      }
    case .float:
      let array = Encoder.cast(value, to: [Float].self)
      if let bad = array.firstIndex(where: { !$0.isFinite }) {
        throw Encoder.InvalidValue(
          value: array[bad], message: nonFiniteMessage(array[bad]), index: bad)
      }
      return appendElements(array, as: [Float].self) { Encoder.appendFiniteFloat($0, into: &$1) }
    case .int128:
      guard #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
        return 0
      }
      return appendElements(value, as: [Int128].self) { Encoder.appendInteger($0, into: &$1) }
    case .uint128:
      guard #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
        return 0
      }
      return appendElements(value, as: [UInt128].self) { Encoder.appendInteger($0, into: &$1) }
    }
  }

  private func appendElements<T, Element>(
    _ value: T, as type: [Element].Type, _ append: (Element, inout JSONOutput) -> Void
  ) -> Int {
    let array = StoredJSONEncoder.cast(value, to: type)
    var isFirst = true
    for element in array {
      if !isFirst { arena.append(JSONByte.comma) }
      isFirst = false
      append(element, &arena)
    }
    return array.count
  }
}

extension StoredJSONEncoder.Encoding {
  typealias InvalidValue = StoredJSONEncoder.InvalidValue
  typealias DirectArray = StoredJSONEncoder.DirectArray

  /// Writes the types `JSONEncoder` encodes its own way rather than through their
  /// `encode(to:)` (and arrays of numbers and strings, which are quicker to write in one
  /// go), or returns nil for every other type. Dates and `Data` take the forms the
  /// strategies choose.
  func encodeSpecial<T: Encodable>(_ value: T) throws(InvalidValue) -> Value? {
    let start = arena.count
    if T.self == Date.self {
      try appendDate(StoredJSONEncoder.cast(value, to: Date.self))
    } else if T.self == URL.self {
      let url = StoredJSONEncoder.cast(value, to: URL.self)
      JSONWriter.appendString(url.absoluteString, into: &arena)
    } else if T.self == Data.self {
      let data = StoredJSONEncoder.cast(value, to: Data.self)
      guard strategies.data == .base64 else {
        // `.deferredToData`: what Data's own encode(to:) writes, an array of its bytes.
        return try encodeDirectArray(Array(data), kind: .uint8)
      }
      StoredJSONEncoder.appendBase64(data, into: &arena)
    } else if T.self == Decimal.self {
      let decimal = StoredJSONEncoder.cast(value, to: Decimal.self)
      let isNumber = StoredJSONEncoder.appendNumberText(decimal.description, into: &arena)
      guard isNumber else {
        throw InvalidValue(
          value: decimal, message: "Unable to encode Decimal \(decimal) in JSON.", index: nil)
      }
    } else if let kind = DirectArray.kind(of: T.self) {
      return try encodeDirectArray(value, kind: kind)
    } else {
      return nil
    }
    return Value(kind: .text, start: start, end: arena.count)
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
      JSONWriter.appendString(ISO8601DateText.text(of: date), into: &arena)
      return
    }
    guard number.isFinite else {
      throw InvalidValue(value: number, message: nonFiniteMessage(number), index: nil)
    }
    StoredJSONEncoder.appendFiniteDouble(number, into: &arena)
  }
}
