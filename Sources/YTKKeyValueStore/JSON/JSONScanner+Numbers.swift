// The scanner's reading of numbers, its tests of single bytes, and its error messages.

extension JSONScanner {
  /// Reads the number that starts at `position` (with `-` or a digit).
  mutating func scanNumber() throws(JSONCodecError) -> JSONScannedNumber {
    let start = position
    let isNegative = input[position] == JSONByte.minus
    if isNegative { position += 1 }
    let integerStart = position
    guard position < input.count, isDigit(input[position]) else {
      throw error("expected a digit after '-'")
    }
    var significand: UInt64 = 0
    if input[position] == JSONByte.zero {
      position += 1
      if position < input.count, isDigit(input[position]) {
        throw error("leading zeros are not allowed in numbers", at: integerStart)
      }
    } else {
      scanDigits(into: &significand)
    }
    let integerDigitCount = position - integerStart
    var digitCount = integerDigitCount
    var exponent = 0
    var isInteger = true
    if position < input.count, input[position] == JSONByte.dot {
      isInteger = false
      position += 1
      guard position < input.count, isDigit(input[position]) else {
        throw error("expected a digit after the decimal point")
      }
      let fractionStart = position
      scanDigits(into: &significand)
      digitCount += position - fractionStart
      // Bounded so that adding the written exponent cannot overflow where Int is 32 bits;
      // the quick conversions need only -22...22.
      exponent = max(fractionStart - position, -1_000_000_000)
    }
    var writtenExponent = 0
    if position < input.count,
      input[position] == JSONByte.lowercaseE || input[position] == JSONByte.uppercaseE
    {
      isInteger = false
      position += 1
      var isExponentNegative = false
      if position < input.count,
        input[position] == JSONByte.plus || input[position] == JSONByte.minus
      {
        isExponentNegative = input[position] == JSONByte.minus
        position += 1
      }
      guard position < input.count, isDigit(input[position]) else {
        throw error("expected a digit in the exponent")
      }
      while position < input.count, isDigit(input[position]) {
        // Saturate: anything this large is beyond every double anyway.
        if writtenExponent < 100_000 {
          writtenExponent = writtenExponent * 10 + Int(input[position] &- JSONByte.zero)
        }
        position += 1
      }
      if isExponentNegative { writtenExponent = -writtenExponent }
      exponent += writtenExponent
    }
    var number = JSONScannedNumber(
      start: start, end: position, isInteger: isInteger, isNegative: isNegative,
      integerDigitCount: integerDigitCount, significand: significand, digitCount: digitCount,
      exponent: exponent)
    // Below 10^308 every number is a finite double; only near or past the limit does the
    // text need parsing in full to tell.
    if writtenExponent > 308 - integerDigitCount {
      guard let double = Double(number.text(in: input)), double.isFinite else {
        throw error("the number \(number.text(in: input)) is too large for a double", at: start)
      }
      number.parsedDouble = double
    }
    return number
  }

  /// Moves past a run of digits, accumulating them onto `significand` (which wraps past 19
  /// digits; the caller counts them).
  @inline(__always)
  mutating func scanDigits(into significand: inout UInt64) {
    while position < input.count {
      let digit = input[position] &- JSONByte.zero
      guard digit < 10 else { return }
      significand = significand &* 10 &+ UInt64(digit)
      position += 1
    }
  }

  // MARK: Bytes

  @inline(__always)
  mutating func skipWhitespace() {
    while position < input.count {
      switch input[position] {
      case JSONByte.space, JSONByte.lineFeed, JSONByte.carriageReturn, JSONByte.tab:
        position += 1
      default:
        return
      }
    }
  }

  func isDigit(_ byte: UInt8) -> Bool {
    byte &- JSONByte.zero < 10
  }

  func hexDigitValue(_ byte: UInt8) -> UInt32? {
    switch byte {
    case JSONByte.zero...JSONByte.nine: return UInt32(byte &- JSONByte.zero)
    case JSONByte.lowercaseA...JSONByte.lowercaseF: return UInt32(byte &- JSONByte.lowercaseA + 10)
    case JSONByte.uppercaseA...JSONByte.uppercaseF: return UInt32(byte &- JSONByte.uppercaseA + 10)
    default: return nil
    }
  }

  /// A byte as an error message shows it: `'x'` if printable ASCII, else its hex value.
  func describe(_ byte: UInt8) -> String {
    if byte > 0x20, byte < 0x7F {
      return "'\(Character(Unicode.Scalar(byte)))'"
    }
    return "byte \(hexByte(byte))"
  }

  /// The character after a backslash as an error message shows it.
  func describeEscaped(_ byte: UInt8) -> String {
    byte > 0x20 && byte < 0x7F ? String(Character(Unicode.Scalar(byte))) : "(\(hexByte(byte)))"
  }

  func hexByte(_ byte: UInt8) -> String {
    let digits = JSONByte.lowercaseHexDigits
    return "0x"
      + String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]], as: UTF8.self)
  }

  /// An error at `offset`, by default the current position, with the offset in its message:
  /// "<problem> at offset <offset>[, inside <container>]".
  func error(_ problem: String, at offset: Int? = nil, inside container: String? = nil)
    -> JSONCodecError
  {
    let offset = offset ?? position
    var message = "\(problem) at offset \(offset)"
    if let container {
      message += ", inside \(container)"
    }
    return JSONCodecError(message: message, offset: offset)
  }
}
