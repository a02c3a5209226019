extension ColumnDefault {
  /// The value SQLite gives a column's default in a row that has no field for it: the literal
  /// converted to the column's affinity. A number under TEXT affinity reads as written; under
  /// the others an integral number reads as an integer, except under REAL, where every number
  /// reads as a real. Conversions whose result depends on SQLite's own number formatting or
  /// parsing (a negative real under TEXT, a string that looks like a number under a numeric
  /// affinity) are left ``unsupported(_:)`` rather than guessed.
  init(_ expression: TableDefinition.DefaultExpression, affinity: SQLiteAffinity) {
    switch expression {
    case .none, .null:
      self = .value(.null)
    case .expression(let sql):
      self = .unsupported(sql)
    case .boolean(let value):
      self = Self.number(value ? 1 : 0, affinity: affinity)
    case .blob(let hex):
      guard let bytes = Self.bytes(hex: hex) else {
        self = .unsupported("x'\(hex)'")
        return
      }
      self = .value(.blob(bytes))
    case .string(let text):
      switch affinity {
      case .text, .blob:
        self = .value(.text(text))
      case .integer, .numeric, .real:
        // Text that cannot be a number stays text under every affinity.
        let digits = text.utf8.contains { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        self = digits ? .unsupported("'\(text)'") : .value(.text(text))
      }
    case .number(let literal, let negative):
      let written = (negative ? "-" : "") + literal
      if let integer = Self.integer(literal: literal, negative: negative) {
        if affinity == .text {
          self = .value(.text(negative ? String(integer) : literal))
        } else {
          self = Self.number(integer, affinity: affinity)
        }
        return
      }
      guard !literal.hasPrefix("0x"), !literal.hasPrefix("0X"), let magnitude = Double(literal),
        magnitude.isFinite
      else {
        self = .unsupported(written)
        return
      }
      let real = negative ? -magnitude : magnitude
      switch affinity {
      case .text:
        self = negative ? .unsupported(written) : .value(.text(literal))
      case .real:
        self = .value(.real(real))
      case .integer, .numeric, .blob:
        if real == real.rounded(), real > -9.223_372_036_854_775_8e18,
          real < 9.223_372_036_854_775_8e18
        {
          self = .value(.integer(Int64(real)))
        } else {
          self = .value(.real(real))
        }
      }
    }
  }

  private static func number(_ value: Int64, affinity: SQLiteAffinity) -> ColumnDefault {
    switch affinity {
    case .text: return .value(.text(String(value)))
    case .real: return .value(.real(Double(value)))
    case .integer, .numeric, .blob: return .value(.integer(value))
    }
  }

  /// A decimal or hexadecimal integer literal that fits in 64 bits (hexadecimal ones as
  /// two's complement, as SQLite reads them); nil for anything else.
  private static func integer(literal: String, negative: Bool) -> Int64? {
    let bytes = Array(literal.utf8)
    var value: UInt64 = 0
    if bytes.count > 2, bytes[0] == UInt8(ascii: "0"), bytes[1] | 0x20 == UInt8(ascii: "x") {
      guard bytes.count <= 18 else { return nil }
      for byte in bytes[2...] {
        guard let digit = hexDigit(byte) else { return nil }
        value = value << 4 | UInt64(digit)
      }
      let signed = Int64(bitPattern: value)
      return negative ? (signed == .min ? nil : -signed) : signed
    }
    guard !bytes.isEmpty else { return nil }
    for byte in bytes {
      guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
      let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
      let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
      guard !overflow1, !overflow2 else { return nil }
      value = sum
    }
    if negative {
      return value <= UInt64(Int64.max) ? -Int64(value) : nil
    }
    return value <= UInt64(Int64.max) ? Int64(value) : nil
  }

  private static func hexDigit(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
    default: return nil
    }
  }

  private static func bytes(hex: String) -> [UInt8]? {
    let digits = Array(hex.utf8)
    guard digits.count % 2 == 0 else { return nil }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(digits.count / 2)
    var index = 0
    while index < digits.count {
      guard let high = hexDigit(digits[index]), let low = hexDigit(digits[index + 1]) else {
        return nil
      }
      bytes.append(high << 4 | low)
      index += 2
    }
    return bytes
  }
}
