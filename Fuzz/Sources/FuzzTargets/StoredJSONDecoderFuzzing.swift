import YTKKeyValueStore

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// Fuzz target: StoredJSONDecoder against Foundation's JSONDecoder, its oracle.
///
/// For bytes that JSONReader accepts, decoding as a `JSONValue` and as two small Codable
/// types must give the same value with both decoders, or throw with both. (Bytes the reader
/// rejects are the json target's.) So must decoding as ``KeyedJSON`` (objects through keyed
/// containers, dates where they read) with snake-case keys and ISO 8601 or second dates, and
/// the record with snake-case keys.
package func fuzzStoredJSONDecoder(_ data: UnsafeRawBufferPointer) {
  guard (try? JSONReader.parse(data)) != nil else { return }
  let bytes = Array(data)
  expectSameResult(JSONValue.self, bytes) { sameJSON($0, $1) }
  expectSameResult(FuzzedRecord.self, bytes) { $0 == $1 }
  expectSameResult([FuzzedRecord?].self, bytes) { $0 == $1 }
  let snakeCase = CodingStrategies(keys: .snakeCase)
  expectSameResult(FuzzedRecord.self, bytes, strategies: snakeCase) { $0 == $1 }
  for dates in [CodingStrategies.DateStrategy.iso8601, .secondsSince1970] {
    let strategies = CodingStrategies(dates: dates, keys: .snakeCase)
    expectSameResult(KeyedJSON.self, bytes, strategies: strategies) { sameJSON($0.value, $1.value) }
  }
}

/// Decodes `bytes` as a `T` with both decoders and `strategies`; traps unless both give
/// values that `same` accepts, or both throw.
private func expectSameResult<T: Decodable>(
  _ type: T.Type, _ bytes: [UInt8], strategies: CodingStrategies = CodingStrategies(),
  same: (T, T) -> Bool
) {
  let ours = try? StoredJSONDecoder.decode(T.self, from: bytes, strategies: strategies)
  let theirs = try? strategies.foundationDecoder.decode(T.self, from: Data(bytes))
  switch (ours, theirs) {
  case (nil, nil):
    return
  case (let ours?, let theirs?):
    precondition(
      same(ours, theirs),
      "\(T.self) from \(String(decoding: bytes, as: UTF8.self)): \(ours), JSONDecoder \(theirs)")
  default:
    preconditionFailure(
      "\(T.self) from \(String(decoding: bytes, as: UTF8.self)): "
        + "\(ours.map { "\($0)" } ?? "throws"), JSONDecoder \(theirs.map { "\($0)" } ?? "throws")")
  }
}

/// The same JSON value, doubles bit for bit (by their canonical text).
private func sameJSON(_ lhs: JSONValue, _ rhs: JSONValue) -> Bool {
  (try? JSONWriter.bytes(lhs)) == (try? JSONWriter.bytes(rhs))
}

/// A record of the kinds a stored value holds: numbers of several types, strings, Booleans,
/// optionals, an array and a nested record.
private struct FuzzedRecord: Codable, Equatable {
  var id: Int?
  var name: String?
  var score: Double?
  var ratio: Float?
  var small: Int8?
  var flag: Bool?
  var tags: [String]?
  var child: [FuzzedRecord]?

  static func == (lhs: FuzzedRecord, rhs: FuzzedRecord) -> Bool {
    lhs.id == rhs.id && lhs.name == rhs.name && lhs.score?.bitPattern == rhs.score?.bitPattern
      && lhs.ratio?.bitPattern == rhs.ratio?.bitPattern && lhs.small == rhs.small
      && lhs.flag == rhs.flag && lhs.tags == rhs.tags && lhs.child == rhs.child
  }
}
