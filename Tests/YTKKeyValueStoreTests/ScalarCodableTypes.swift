// Codable types with a member of every scalar type the containers have typed calls for, as
// user types hold them: members of a synthesized keyed form, or the fields of a row written
// as an array. The encoder and decoder tests run them against Foundation's coders.

/// One member of every scalar type, through the synthesized conformance: the typed
/// `encode(_:forKey:)` and `decode(_:forKey:)` of each type.
struct Scalars: Codable, Equatable {
  var bool: Bool
  var string: String
  var double: Double
  var float: Float
  var int: Int
  var int8: Int8
  var int16: Int16
  var int32: Int32
  var int64: Int64
  var uint: UInt
  var uint8: UInt8
  var uint16: UInt16
  var uint32: UInt32
  var uint64: UInt64

  /// The members' names, in declaration order (the order of a row's fields).
  static let names = [
    "bool", "string", "double", "float", "int", "int8", "int16", "int32", "int64", "uint",
    "uint8", "uint16", "uint32", "uint64",
  ]

  /// A value of each type, with the widest magnitudes its type holds.
  static let extremes = Scalars(
    bool: true, string: "s", double: -1.5, float: 0.25, int: .min, int8: .min, int16: .min,
    int32: .min, int64: .min, uint: .max, uint8: .max, uint16: .max, uint32: .max,
    uint64: .max)

  /// Other values of each type: zero, false, the empty string.
  static let zeros = Scalars(
    bool: false, string: "", double: 0, float: 0, int: 0, int8: 0, int16: 0, int32: 0,
    int64: 0, uint: 0, uint8: 0, uint16: 0, uint32: 0, uint64: 0)

  /// The members' JSON texts, in the order of ``names``.
  static let texts = [
    "true", #""s""#, "-1.5", "0.25", "-9223372036854775808", "-128", "-32768", "-2147483648",
    "9223372036854775807", "18446744073709551615", "255", "65535", "4294967295",
    "18446744073709551615",
  ]

  /// Texts no member or only some members read: each put in the place of each member in
  /// turn tells every typed call's errors apart.
  static let wrongTexts = [
    "null", #""1""#, "1.5", "256", "-1", "1e2", "false", "[]", "{}", "65536", "-129",
    "4294967296", "1e-400", "3.5e38",
  ]

  /// Objects of ``texts`` with each member in turn replaced by each of ``wrongTexts`` or
  /// left out.
  static func objects() -> [String] {
    variants().map { fields in
      "{"
        + zip(names, fields).compactMap { name, text in text.map { "\"\(name)\":\($0)" } }
        .joined(separator: ",") + "}"
    }
  }

  /// Arrays of ``texts`` with each field in turn replaced by each of ``wrongTexts``, and
  /// every prefix of the row.
  static func arrays() -> [String] {
    let replaced = variants().filter { !$0.contains(nil) }.map { $0.map { $0! } }
    let prefixes = (0...texts.count).map { Array(texts.prefix($0)) }
    return (replaced + prefixes).map { "[" + $0.joined(separator: ",") + "]" }
  }

  private static func variants() -> [[String?]] {
    var variants: [[String?]] = [texts]
    for index in texts.indices {
      for wrong in wrongTexts + [nil] {
        var fields: [String?] = texts
        fields[index] = wrong
        variants.append(fields)
      }
    }
    return variants
  }
}

/// ``Scalars`` with every member optional: the typed `encodeIfPresent(_:forKey:)` and
/// `decodeIfPresent(_:forKey:)` of each type.
struct OptionalScalars: Codable, Equatable {
  var bool: Bool?
  var string: String?
  var double: Double?
  var float: Float?
  var int: Int?
  var int8: Int8?
  var int16: Int16?
  var int32: Int32?
  var int64: Int64?
  var uint: UInt?
  var uint8: UInt8?
  var uint16: UInt16?
  var uint32: UInt32?
  var uint64: UInt64?
}

/// ``Scalars`` written as an array of its fields, in declaration order: the typed
/// `encode(_:)` and `decode(_:)` of an unkeyed container for each type.
struct ScalarRow: Codable, Equatable {
  var scalars: Scalars

  init(_ scalars: Scalars) {
    self.scalars = scalars
  }

  init(from decoder: any Decoder) throws {
    var row = try decoder.unkeyedContainer()
    scalars = Scalars(
      bool: try row.decode(Bool.self), string: try row.decode(String.self),
      double: try row.decode(Double.self), float: try row.decode(Float.self),
      int: try row.decode(Int.self), int8: try row.decode(Int8.self),
      int16: try row.decode(Int16.self), int32: try row.decode(Int32.self),
      int64: try row.decode(Int64.self), uint: try row.decode(UInt.self),
      uint8: try row.decode(UInt8.self), uint16: try row.decode(UInt16.self),
      uint32: try row.decode(UInt32.self), uint64: try row.decode(UInt64.self))
  }

  func encode(to encoder: any Encoder) throws {
    var row = encoder.unkeyedContainer()
    try row.encode(scalars.bool)
    try row.encode(scalars.string)
    try row.encode(scalars.double)
    try row.encode(scalars.float)
    try row.encode(scalars.int)
    try row.encode(scalars.int8)
    try row.encode(scalars.int16)
    try row.encode(scalars.int32)
    try row.encode(scalars.int64)
    try row.encode(scalars.uint)
    try row.encode(scalars.uint8)
    try row.encode(scalars.uint16)
    try row.encode(scalars.uint32)
    try row.encode(scalars.uint64)
  }
}

/// A row whose fields may be null or missing at its end: the typed `decodeIfPresent(_:)`
/// of an unkeyed container for each type.
struct OptionalScalarRow: Decodable, Equatable {
  var scalars: OptionalScalars
  /// Where the container was after the last field.
  var endIndex: Int

  init(from decoder: any Decoder) throws {
    var row = try decoder.unkeyedContainer()
    scalars = OptionalScalars(
      bool: try row.decodeIfPresent(Bool.self), string: try row.decodeIfPresent(String.self),
      double: try row.decodeIfPresent(Double.self), float: try row.decodeIfPresent(Float.self),
      int: try row.decodeIfPresent(Int.self), int8: try row.decodeIfPresent(Int8.self),
      int16: try row.decodeIfPresent(Int16.self), int32: try row.decodeIfPresent(Int32.self),
      int64: try row.decodeIfPresent(Int64.self), uint: try row.decodeIfPresent(UInt.self),
      uint8: try row.decodeIfPresent(UInt8.self), uint16: try row.decodeIfPresent(UInt16.self),
      uint32: try row.decodeIfPresent(UInt32.self), uint64: try row.decodeIfPresent(UInt64.self))
    endIndex = row.currentIndex
  }
}

/// The 128-bit integers, as members (synthesized) and as a row's fields.
@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
struct WideIntegers: Codable, Equatable {
  var int128: Int128
  var uint128: UInt128
  var row: Row

  struct Row: Codable, Equatable {
    var int128: Int128
    var uint128: UInt128

    init(int128: Int128, uint128: UInt128) {
      self.int128 = int128
      self.uint128 = uint128
    }

    init(from decoder: any Decoder) throws {
      var row = try decoder.unkeyedContainer()
      int128 = try row.decode(Int128.self)
      uint128 = try row.decode(UInt128.self)
    }

    func encode(to encoder: any Encoder) throws {
      var row = encoder.unkeyedContainer()
      try row.encode(int128)
      try row.encode(uint128)
    }
  }
}
