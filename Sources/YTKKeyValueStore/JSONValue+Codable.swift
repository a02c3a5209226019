// Codable for JSONValue, through single-value containers, so that a JSONValue can stand for
// "any JSON" inside a Codable type and be encoded by any encoder.

extension JSONValue: Codable {
  /// Decodes whichever JSON value the decoder holds.
  ///
  /// The kinds are tried in the order null, Boolean, `Int64`, `Double`, string, array,
  /// object. With `JSONDecoder` that turns `1` into ``int(_:)`` and `1.5` into
  /// ``double(_:)``; a decoder cannot show the original text, so a number it can read as an
  /// `Int64` (such as `1.0` with `JSONDecoder`) becomes ``int(_:)``, except negative zero,
  /// which stays the double `-0.0`.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.singleValueContainer()
    if container.decodeNil() {
      self = .null
    } else if let bool = try? container.decode(Bool.self) {
      self = .bool(bool)
    } else if let int = try? container.decode(Int64.self) {
      // JSONEncoder writes -0.0 as `-0`, which also decodes as the integer 0; keep the sign.
      if int == 0, let double = try? container.decode(Double.self), double.sign == .minus {
        self = .double(double)
      } else {
        self = .int(int)
      }
    } else if let double = try? container.decode(Double.self) {
      self = .double(double)
    } else if let string = try? container.decode(String.self) {
      self = .string(string)
    } else if let array = try? container.decode([JSONValue].self) {
      self = .array(array)
    } else if let object = try? container.decode([String: JSONValue].self) {
      self = .object(object)
    } else {
      throw DecodingError.dataCorruptedError(
        in: container,
        debugDescription:
          "The value is not null, a Boolean, a number, a string, an array or an object."
      )
    }
  }

  /// Encodes the value as the matching primitive, array or keyed container.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    switch self {
    case .null: try container.encodeNil()
    case .bool(let bool): try container.encode(bool)
    case .int(let int): try container.encode(int)
    case .double(let double): try container.encode(double)
    case .string(let string): try container.encode(string)
    case .array(let array): try container.encode(array)
    case .object(let object): try container.encode(object)
    }
  }
}
