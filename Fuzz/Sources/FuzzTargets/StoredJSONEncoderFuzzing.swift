import YTKKeyValueStore

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// Fuzz target body: the Codable encoder against the path it replaces.
///
/// What parses as JSON is encoded through `JSONValue`'s Codable conformance twice: with
/// `StoredJSONEncoder`, and with `JSONEncoder` followed by the reader and the canonical
/// writer (what `put(encodable:)` did before). The two must give the same bytes, or both
/// fail. Then again as ``KeyedJSON`` (objects through keyed containers, numbers as dates)
/// with snake-case keys and ISO 8601 or millisecond dates, against `JSONEncoder` with the
/// same strategies.
package func fuzzStoredJSONEncoder(_ data: UnsafeRawBufferPointer) {
  guard let value = try? JSONReader.parse(data) else { return }
  expectSameEncoding(value, CodingStrategies())
  let keyed = KeyedJSON(value)
  expectSameEncoding(keyed, CodingStrategies(dates: .iso8601, keys: .snakeCase))
  expectSameEncoding(keyed, CodingStrategies(dates: .millisecondsSince1970, keys: .snakeCase))
}

/// Encodes `value` with both encoders and `strategies`; traps unless both give the same
/// stored bytes or both throw.
private func expectSameEncoding<T: Encodable>(_ value: T, _ strategies: CodingStrategies) {
  let ours = try? StoredJSONEncoder.encode(value, strategies: strategies)
  let expected = try? JSONWriter.bytes(
    JSONReader.parse(Array(strategies.foundationEncoder.encode(value))))
  precondition(
    ours == expected,
    """
    StoredJSONEncoder with \(strategies) gave \
    \(ours.map { String(decoding: $0, as: UTF8.self) } ?? "an error"), \
    JSONEncoder with the reader and writer \
    \(expected.map { String(decoding: $0, as: UTF8.self) } ?? "an error")
    """)
}

extension CodingStrategies {
  /// A `JSONEncoder` with the date and key strategies of the same names (the fuzz targets use
  /// no other data strategy than the default).
  var foundationEncoder: JSONEncoder {
    let encoder = JSONEncoder()
    switch dates {
    case .deferredToDate: encoder.dateEncodingStrategy = .deferredToDate
    case .secondsSince1970: encoder.dateEncodingStrategy = .secondsSince1970
    case .millisecondsSince1970: encoder.dateEncodingStrategy = .millisecondsSince1970
    case .iso8601: encoder.dateEncodingStrategy = .iso8601
    }
    encoder.keyEncodingStrategy = keys == .snakeCase ? .convertToSnakeCase : .useDefaultKeys
    return encoder
  }

  /// A `JSONDecoder` with the date and key strategies of the same names.
  var foundationDecoder: JSONDecoder {
    let decoder = JSONDecoder()
    switch dates {
    case .deferredToDate: decoder.dateDecodingStrategy = .deferredToDate
    case .secondsSince1970: decoder.dateDecodingStrategy = .secondsSince1970
    case .millisecondsSince1970: decoder.dateDecodingStrategy = .millisecondsSince1970
    case .iso8601: decoder.dateDecodingStrategy = .iso8601
    }
    decoder.keyDecodingStrategy = keys == .snakeCase ? .convertFromSnakeCase : .useDefaultKeys
    return decoder
  }
}

/// JSON written and read through keyed containers rather than `[String: JSONValue]`, so that
/// a key strategy converts its keys, and with its numbers as dates, so that a date strategy
/// writes them: an integer `n` is `n` seconds since 1970, a double `d` is `d` seconds since
/// 2001. Read back, a date (a number, or a string with `.iso8601`) is the double of its
/// seconds since 2001; anything else is read as a `JSONValue`.
struct KeyedJSON: Codable {
  var value: JSONValue

  init(_ value: JSONValue) {
    self.value = value
  }

  func encode(to encoder: any Encoder) throws {
    switch value {
    case .object(let members):
      var container = encoder.container(keyedBy: AnyKey.self)
      for (key, member) in members {
        try container.encode(KeyedJSON(member), forKey: AnyKey(stringValue: key))
      }
    case .array(let elements):
      var container = encoder.unkeyedContainer()
      for element in elements { try container.encode(KeyedJSON(element)) }
    case .int(let integer):
      var container = encoder.singleValueContainer()
      try container.encode(Date(timeIntervalSince1970: Double(integer)))
    case .double(let double):
      var container = encoder.singleValueContainer()
      try container.encode(Date(timeIntervalSinceReferenceDate: double))
    default:
      try value.encode(to: encoder)
    }
  }

  init(from decoder: any Decoder) throws {
    if let container = try? decoder.container(keyedBy: AnyKey.self) {
      var members: [String: JSONValue] = [:]
      for key in container.allKeys {
        members[key.stringValue] = try container.decode(KeyedJSON.self, forKey: key).value
      }
      value = .object(members)
    } else if var container = try? decoder.unkeyedContainer() {
      var elements: [JSONValue] = []
      while !container.isAtEnd { elements.append(try container.decode(KeyedJSON.self).value) }
      value = .array(elements)
    } else if let date = try? decoder.singleValueContainer().decode(Date.self) {
      value = .double(date.timeIntervalSinceReferenceDate)
    } else {
      value = try JSONValue(from: decoder)
    }
  }
}

/// A coding key with any string.
struct AnyKey: CodingKey {
  var stringValue: String
  var intValue: Int? { nil }

  init(stringValue: String) {
    self.stringValue = stringValue
  }

  init?(intValue: Int) {
    return nil
  }
}
