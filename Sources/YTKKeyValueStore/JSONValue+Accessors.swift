// Typed views of a JSONValue. Every accessor answers nil when the value is of another kind,
// so they chain with optional chaining: `user["tags"]?[0]?.stringValue`.

extension JSONValue {
  /// The member named `key` if this is an object that has one; otherwise `nil`.
  ///
  /// ```swift
  /// let user: JSONValue = ["name": "tangqiao"]
  /// user["name"]  // .string("tangqiao")
  /// user["age"]  // nil
  /// ```
  public subscript(key: String) -> JSONValue? {
    guard case .object(let object) = self else { return nil }
    return object[key]
  }

  /// The element at `index` if this is an array and `index` is in range; otherwise `nil`.
  ///
  /// ```swift
  /// let tags: JSONValue = ["ios", "swift"]
  /// tags[1]  // .string("swift")
  /// tags[2]  // nil
  /// ```
  public subscript(index: Int) -> JSONValue? {
    guard case .array(let array) = self, array.indices.contains(index) else { return nil }
    return array[index]
  }

  /// Whether this is ``null``.
  public var isNull: Bool {
    if case .null = self { return true }
    return false
  }

  /// The string, if this is a ``string(_:)``.
  public var stringValue: String? {
    guard case .string(let string) = self else { return nil }
    return string
  }

  /// The Boolean, if this is a ``bool(_:)``.
  public var boolValue: Bool? {
    guard case .bool(let bool) = self else { return nil }
    return bool
  }

  /// The number as an `Int`, if it is one exactly.
  ///
  /// An ``int(_:)`` converts when it fits in `Int`; a ``double(_:)`` only when it is
  /// integral and within range (`2.0` gives `2`, `2.5` gives `nil`).
  public var intValue: Int? {
    switch self {
    case .int(let int): return Int(exactly: int)
    case .double(let double): return Int(exactly: double)
    default: return nil
    }
  }

  /// The number as an `Int64`, if it is one exactly.
  ///
  /// An ``int(_:)`` always converts; a ``double(_:)`` only when it is integral and within
  /// range.
  public var int64Value: Int64? {
    switch self {
    case .int(let int): return int
    case .double(let double): return Int64(exactly: double)
    default: return nil
    }
  }

  /// The number as a `Double`, if this is an ``int(_:)`` or a ``double(_:)``.
  ///
  /// An integer beyond 2^53 in magnitude is rounded to the nearest `Double`.
  public var doubleValue: Double? {
    switch self {
    case .int(let int): return Double(int)
    case .double(let double): return double
    default: return nil
    }
  }

  /// The elements, if this is an ``array(_:)``.
  public var arrayValue: [JSONValue]? {
    guard case .array(let array) = self else { return nil }
    return array
  }

  /// The members, if this is an ``object(_:)``.
  public var objectValue: [String: JSONValue]? {
    guard case .object(let object) = self else { return nil }
    return object
  }
}
