// Literal syntax for JSONValue, so that values read like the JSON they stand for:
// `let v: JSONValue = ["name": "tangqiao", "age": 30, "tags": ["ios"], "spouse": nil]`.

extension JSONValue: ExpressibleByNilLiteral {
  /// Creates ``null`` from `nil`.
  public init(nilLiteral: ()) {
    self = .null
  }
}

extension JSONValue: ExpressibleByBooleanLiteral {
  /// Creates ``bool(_:)`` from `true` or `false`.
  public init(booleanLiteral value: Bool) {
    self = .bool(value)
  }
}

extension JSONValue: ExpressibleByIntegerLiteral {
  /// Creates ``int(_:)`` from an integer literal such as `42`.
  public init(integerLiteral value: Int64) {
    self = .int(value)
  }
}

extension JSONValue: ExpressibleByFloatLiteral {
  /// Creates ``double(_:)`` from a floating-point literal such as `2.5` or `2.0`.
  public init(floatLiteral value: Double) {
    self = .double(value)
  }
}

extension JSONValue: ExpressibleByStringLiteral {
  /// Creates ``string(_:)`` from a string literal.
  public init(stringLiteral value: String) {
    self = .string(value)
  }
}

extension JSONValue: ExpressibleByArrayLiteral {
  /// Creates ``array(_:)`` from an array literal such as `[1, "two", nil]`.
  public init(arrayLiteral elements: JSONValue...) {
    self = .array(elements)
  }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
  /// Creates ``object(_:)`` from a dictionary literal such as `["id": 1, "name": "kv"]`.
  ///
  /// If a key appears more than once the last value wins, as it does when JSON text with
  /// duplicate keys is read.
  public init(dictionaryLiteral elements: (String, JSONValue)...) {
    var object: [String: JSONValue] = [:]
    object.reserveCapacity(elements.count)
    for (key, value) in elements {
      object[key] = value
    }
    self = .object(object)
  }
}
