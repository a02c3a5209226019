import Foundation
import LogStoreTesting
import Testing

@testable import YTKKeyValueStore

/// The per-store coding strategies against their oracle: Foundation's `JSONEncoder` and
/// `JSONDecoder` configured with the strategies of the same names. Encoding gives the bytes
/// of `JSONEncoder`'s output in the stored form, or throws where it throws; decoding gives
/// the same value as `JSONDecoder`, or an error of the same case at the same coding path.
@Suite("Coding strategies")
struct CodingStrategiesTests {

  // MARK: Dates

  @Test("every date strategy writes what JSONEncoder writes, across eras and fractions")
  func encodesDates() throws {
    for dates in allDateStrategies {
      let strategies = CodingStrategies(dates: dates)
      for date in sampleDates() {
        try expectSameEncoding(date, strategies)
        try expectSameEncoding(Dated(date: date, dates: [date, date], optional: date), strategies)
      }
      try expectSameEncoding(Dated(date: Date(), dates: [], optional: nil), strategies)
    }
    // A few by hand, so that a wrong oracle cannot hide a wrong form.
    let date = Date(timeIntervalSince1970: 1_709_164_800.75)  // 2024-02-29T00:00:00.75Z
    #expect(try text(date, CodingStrategies(dates: .iso8601)) == #""2024-02-29T00:00:00Z""#)
    #expect(try text(date, CodingStrategies(dates: .secondsSince1970)) == "1709164800.75")
    #expect(try text(date, CodingStrategies(dates: .millisecondsSince1970)) == "1709164800750")
    #expect(try text(date, CodingStrategies()) == "730857600.75")
    let julian = Date(timeIntervalSince1970: -12_219_292_801)  // the second before 1582-10-15
    #expect(try text(julian, CodingStrategies(dates: .iso8601)) == #""1582-10-04T23:59:59Z""#)
    let early = Date(timeIntervalSinceReferenceDate: -63_200_000_000)
    #expect(try text(early, CodingStrategies(dates: .iso8601)) == #""-0002-04-12T12:26:40Z""#)
  }

  @Test("a date that is not finite throws as a number, and is the calendar's end as text")
  func nonFiniteDates() throws {
    for time in [Double.nan, .infinity, -.infinity] {
      let date = Date(timeIntervalSinceReferenceDate: time)
      for dates in allDateStrategies {
        try expectSameEncoding(date, CodingStrategies(dates: dates))
        try expectSameEncoding(["d": date], CodingStrategies(dates: dates))
      }
      #expect(throws: EncodingError.self) { try StoredJSONEncoder.encode(date) }
    }
    #expect(
      try text(Date(timeIntervalSinceReferenceDate: .nan), CodingStrategies(dates: .iso8601))
        == #""-4712-01-01T12:00:00Z""#)
    // Finite, but a thousand times it is not.
    let far = Date(timeIntervalSinceReferenceDate: 1e306)
    try expectSameEncoding(far, CodingStrategies(dates: .millisecondsSince1970))
    #expect(throws: EncodingError.self) {
      try StoredJSONEncoder.encode(far, strategies: CodingStrategies(dates: .millisecondsSince1970))
    }
  }

  @Test("every date strategy reads back what JSONEncoder wrote, bit for bit")
  func decodesEncodedDates() throws {
    for dates in allDateStrategies {
      let strategies = CodingStrategies(dates: dates)
      let encoder = strategies.foundationEncoder
      for date in sampleDates() where date.timeIntervalSinceReferenceDate.isFinite {
        guard let encoded = try? encoder.encode(Dated(date: date, dates: [date], optional: nil))
        else { continue }
        expectSameDecoding(Dated.self, String(decoding: encoded, as: UTF8.self), strategies)
      }
    }
  }

  @Test(
    "ISO 8601 text is read as Swift 6.2's JSONDecoder reads it: what it accepts, refuses and rolls over"
  )
  func decodesISO8601Text() {
    let strategies = CodingStrategies(dates: .iso8601)
    for text in iso8601Texts {
      expectSameISO8601Decoding(text)
    }
    var generator = SeededGenerator(seed: 8601)
    for _ in 0..<TestDepth.choose(sample: 5_000, full: 20_000) {
      expectSameISO8601Decoding(randomISO8601Text(using: &generator))
    }
    // By hand: an offset east of UTC is subtracted; a fraction is kept.
    let date = try? StoredJSONDecoder.decode(
      Date.self, from: Array(#""2024-02-29T08:00:00.25+08:00""#.utf8), strategies: strategies)
    #expect(date == Date(timeIntervalSince1970: 1_709_164_800.25))
  }

  @Test(
    "the check for a Foundation that refuses fractions of a second (before Swift 6.2) holds where Foundation reads them"
  )
  func iso8601FractionsAsBefore62() {
    // Here JSONDecoder reads fractions; the comparison used where it does not (a macOS 15
    // runner) must agree with it on every text with one.
    var generator = SeededGenerator(seed: 62)
    var texts = iso8601Texts
    for _ in 0..<TestDepth.choose(sample: 2_000, full: 10_000) {
      texts.append(randomISO8601Text(using: &generator))
    }
    var withFraction = 0
    for text in texts where secondsFraction(in: text) != nil {
      expectSameISO8601Decoding(text, asIfFractionsWereRefused: true)
      withFraction += 1
    }
    #expect(withFraction > 100)
  }

  @Test("a date that does not read is the error JSONDecoder throws, where it throws it")
  func dateErrors() {
    let texts = [
      "null", "true", "\"x\"", "1", "[]", "{}", "1e-400", "\"2024-02-29\"",
      "\"2024-02-29T00:00:00Z\"", "12.5",
    ]
    for dates in allDateStrategies {
      let strategies = CodingStrategies(dates: dates)
      for text in texts {
        expectSameDecoding(Date.self, text, strategies)
        expectSameDecoding([Date].self, "[\(text)]", strategies)
        expectSameDecoding(Dated.self, #"{"date":\#(text),"dates":[],"optional":null}"#, strategies)
        expectSameDecoding(Nest<Dated>.self, #"{"inner":{"date":\#(text),"dates":[]}}"#, strategies)
        expectSameDecoding(
          Nest<Dated>.self, #"{"inner":{"date":0,"dates":[0,\#(text)]}}"#, strategies)
      }
    }
  }

  // MARK: Data

  @Test("Data as base64 or as an array of bytes, written and read as Foundation does")
  func data() throws {
    var generator = SeededGenerator(seed: 64)
    var samples = (0..<40).map { count in Data((0..<count).map { _ in generator.next() }) }
    samples.append(Data((0..<1_000).map { UInt8(truncatingIfNeeded: $0 * 7) }))
    for dataStrategy in [CodingStrategies.DataStrategy.base64, .deferredToData] {
      let strategies = CodingStrategies(data: dataStrategy)
      for data in samples {
        try expectSameEncoding(data, strategies)
        try expectSameEncoding(Blob(bytes: data, more: [data], optional: data), strategies)
        let encoded = try strategies.foundationEncoder.encode(Blob(bytes: data, more: [data]))
        expectSameDecoding(Blob.self, String(decoding: encoded, as: UTF8.self), strategies)
      }
      for text in [
        "null", "[]", "[0,255]", "[256]", "[-1]", "[1.5]", "[1.0]", "[\"1\"]", "[null]", "\"AQ==\"",
        "\"AQ\"", "\"\"", "1", "{}",
      ] {
        expectSameDecoding(Data.self, text, strategies)
        expectSameDecoding(Blob.self, #"{"bytes":\#(text),"more":[\#(text)]}"#, strategies)
      }
    }
    #expect(try text(Data([1, 2, 255]), CodingStrategies(data: .deferredToData)) == "[1,2,255]")
    #expect(try text(Data([1, 2, 255]), CodingStrategies()) == #""AQL/""#)
  }

  // MARK: Keys

  @Test("snake case keys are written as convertToSnakeCase writes them")
  func snakeCaseEncoding() throws {
    let strategies = CodingStrategies(keys: .snakeCase)
    for key in sampleKeys {
      try expectSameEncoding(Members(keys: [key]), strategies)
      try expectSameEncoding(Members(keys: [key, key + "X", "x" + key]), strategies)
    }
    var generator = SeededGenerator(seed: 5)
    for _ in 0..<TestDepth.choose(sample: 1_250, full: 5_000) {
      let keys = (0..<Int(generator.next() % 4)).map { _ in randomKey(using: &generator) }
      try expectSameEncoding(Members(keys: keys), strategies)
    }
    #expect(
      try text(Members(keys: ["myURLValue", "_leading", "trailing_", "a1B2"]), strategies)
        == #"{"_leading":1,"a1_b2":3,"my_url_value":0,"trailing_":2}"#)
  }

  @Test("snake case keys are read as convertFromSnakeCase reads them")
  func snakeCaseDecoding() {
    let strategies = CodingStrategies(keys: .snakeCase)
    for key in sampleKeys + sampleKeys.map(SnakeCaseKeys.snakeCased) {
      let json = #"{"\#(escaped(key))":1}"#
      expectSameDecoding(AllMembers.self, json, strategies)
      expectSameDecoding(Lookups.self, json, strategies)
    }
    var generator = SeededGenerator(seed: 6)
    for _ in 0..<TestDepth.choose(sample: 1_250, full: 5_000) {
      let keys = (0..<Int(generator.next() % 4)).map { _ in randomKey(using: &generator) }
      let json = "{" + keys.enumerated().map { #""\#(escaped($1))":\#($0)"# }.joined(separator: ",")
      expectSameDecoding(AllMembers.self, json + "}", strategies)
      expectSameDecoding(Lookups.self, json + "}", strategies)
    }
    // Two keys that convert to the same: the first in the text is found.
    #expect(
      (try? StoredJSONDecoder.decode(
        AllMembers.self, from: Array(#"{"a_b":1,"aB":2}"#.utf8), strategies: strategies))?.members
        == ["aB": 1])
  }

  @Test("key conversion covers every unicode scalar as Foundation classifies it")
  func snakeCaseScalars() throws {
    let encoder = CodingStrategies(keys: .snakeCase).foundationEncoder
    var mismatches: [String] = []
    // At sample depth: Latin-1, every scalar whose case differs from the one before it (where
    // a word boundary may start or end), and every 7th.
    func cases(_ value: Int) -> [Bool] {
      guard let scalar = Unicode.Scalar(value) else { return [] }
      return [scalar.properties.isUppercase, scalar.properties.isLowercase]
    }
    for value in 0...0xFFFF
    where TestDepth.runs(value, every: 7, isEdge: value <= 0xFF || cases(value) != cases(value - 1))
    {
      guard let scalar = Unicode.Scalar(value), mismatches.count < 10 else { continue }
      let key = "a" + String(scalar) + "b" + String(scalar) + "B"
      let foundation = try JSONCanonicalizer.canonicalText(
        bytes: encoder.encode(Members(keys: [key])))
      let ours = try StoredJSONEncoder.encode(
        Members(keys: [key]), strategies: CodingStrategies(keys: .snakeCase))
      if ours != foundation { mismatches.append(String(value, radix: 16)) }
    }
    #expect(mismatches.isEmpty, "scalars converted differently: \(mismatches)")
  }

  @Test("a [String: Value]'s keys are not converted, its values' keys are, as with Foundation")
  func dictionaryKeysStay() throws {
    let strategies = CodingStrategies(keys: .snakeCase)
    let inner = Members(keys: ["innerKey"])
    try expectSameEncoding(["someKey": 1, "other_key": 2], strategies)
    try expectSameEncoding(["someKey": inner], strategies)
    try expectSameEncoding(["someKey": ["deepKey": inner]], strategies)
    try expectSameEncoding(Optional(["someKey": 1]), strategies)
    try expectSameEncoding([["someKey": 1]], strategies)
    try expectSameEncoding(Nest(inner: ["someKey": [inner]]), strategies)
    try expectSameEncoding(Nest(inner: Optional(["someKey": 1])), strategies)
    try expectSameEncoding([1: inner], strategies)
    try expectSameEncoding(Outline.sample, strategies)
    #expect(try text(["someKey": inner], strategies) == #"{"someKey":{"inner_key":0}}"#)
    for text in [
      #"{"someKey":1,"some_key":2}"#, #"{"some_key":{"inner_key":3}}"#, #"{"a":1,"a":"x"}"#,
      #"{"a":"x","a":1}"#, "null", "[]", "1",
    ] {
      expectSameDecoding([String: Int].self, text, strategies)
      expectSameDecoding([String: AllMembers].self, text, strategies)
      expectSameDecoding(Nest<[String: Int]>.self, #"{"inner":\#(text)}"#, strategies)
      expectSameDecoding(Nest<[String: Int]?>.self, #"{"inner":\#(text)}"#, strategies)
      expectSameDecoding([[String: Int]].self, "[\(text)]", strategies)
    }
    let encoded = try strategies.foundationEncoder.encode(Outline.sample)
    expectSameDecoding(Outline.self, String(decoding: encoded, as: UTF8.self), strategies)
  }

  @Test("nested containers, super encoders and optionals convert their keys as Foundation does")
  func nestedContainers() throws {
    for strategies in everyCombination {
      try expectSameEncoding(Outline.sample, strategies)
      try expectSameEncoding([Outline.sample, Outline.sample], strategies)
      try expectSameEncoding(Containers(), strategies)
      let encoded = try strategies.foundationEncoder.encode(Outline.sample)
      expectSameDecoding(Outline.self, String(decoding: encoded, as: UTF8.self), strategies)
      let containers = try strategies.foundationEncoder.encode(Containers())
      expectSameDecoding(Containers.self, String(decoding: containers, as: UTF8.self), strategies)
    }
    // Acronyms do not come back by themselves, with Foundation or here.
    let snake = CodingStrategies(keys: .snakeCase)
    expectSameDecoding(Acronym.self, #"{"user_id":1}"#, snake)
    expectSameDecoding(Acronym.self, #"{"userID":1}"#, snake)
    expectSameDecoding(Acronym.self, #"{"userId":1}"#, snake)
    #expect(throws: DecodingError.self) {
      try StoredJSONDecoder.decode(
        Acronym.self, from: Array(#"{"user_id":1}"#.utf8), strategies: snake)
    }
  }

  // MARK: Defaults

  @Test("the defaults are Foundation's and the coder's default path")
  func defaults() throws {
    #expect(StoreOptions().coding == CodingStrategies())
    #expect(
      CodingStrategies()
        == CodingStrategies(dates: .deferredToDate, data: .base64, keys: .useDefaultKeys))
    try expectSameEncoding(Outline.sample, CodingStrategies())
    #expect(
      try StoredJSONEncoder.encode(Outline.sample)
        == StoredJSONEncoder.encode(Outline.sample, strategies: CodingStrategies()))
    let foundation = try JSONEncoder().encode(Outline.sample)
    #expect(
      try StoredJSONEncoder.encode(Outline.sample)
        == JSONCanonicalizer.canonicalText(bytes: foundation))
  }

  // MARK: The store

  @Test("a store with non-default strategies stores what JSONEncoder with them writes")
  func storeWithStrategies() throws {
    let directory = TemporaryDirectory()
    let strategies = CodingStrategies(dates: .iso8601, data: .deferredToData, keys: .snakeCase)
    var options = StoreOptions()
    options.coding = strategies
    var store = try KeyValueStore(path: directory.storePath, options: options)
    try store.createTable("outlines")
    try store.put(encodable: Outline.sample, id: "o1", into: "outlines")
    try store.put(encodables: ["o2": Outline.sample, "o3": Outline.other], into: "outlines")

    let expected = try JSONCanonicalizer.canonicalText(
      bytes: strategies.foundationEncoder.encode(Outline.sample))
    #expect(try storedText(store, "o1") == expected)
    #expect(try storedText(store, "o2") == expected)
    #expect(String(decoding: expected, as: UTF8.self).contains(#""created_at":"2024-02-29T"#))
    #expect(try store.decode(Outline.self, id: "o1", from: "outlines") == Outline.sample)
    #expect(
      try store.items(as: Outline.self, in: "outlines").map(\.value) == [
        Outline.sample, Outline.sample, Outline.other,
      ])
    // JSONDecoder with the same strategies reads what is stored.
    #expect(
      try strategies.foundationDecoder.decode(Outline.self, from: Data(storedText(store, "o3")))
        == Outline.other)

    // Reopened with the same strategies, it reads the same; with the defaults, the JSON is
    // still there, and decoding reads it as JSONDecoder() would.
    store = try reopen(store, options: options)
    #expect(try store.decode(Outline.self, id: "o1", from: "outlines") == Outline.sample)
    store = try reopen(store)
    #expect(try storedText(store, "o1") == expected)
    #expect(try store.object(id: "o1", from: "outlines")?["created_at"] != nil)
    expectError(.typeMismatch, mentioning: ["o1"]) {
      _ = try store.decode(Outline.self, id: "o1", from: "outlines")
    }
    try store.close()
  }

  @Test("the documented example stores what it says")
  func documentedExample() throws {
    struct Event: Codable { var startDate: Date }

    let directory = TemporaryDirectory()
    var options = StoreOptions()
    options.coding = CodingStrategies(dates: .iso8601, keys: .snakeCase)
    let store = try KeyValueStore(path: directory.storePath, options: options)
    try store.createTable("events")
    let event = Event(startDate: Date(timeIntervalSince1970: 1_714_555_800))
    try store.put(encodable: event, id: "e1", into: "events")
    let stored = try store.logStore.value(forKey: Array("e1".utf8), in: "events") ?? []
    #expect(String(decoding: stored, as: UTF8.self) == #"{"start_date":"2024-05-01T09:30:00Z"}"#)
    let again = try store.decode(Event.self, id: "e1", from: "events")
    #expect(again?.startDate == event.startDate)
    try store.close()
  }

  @Test("a store with the default options stores and reads exactly what it did before")
  func storeWithDefaults() throws {
    let directory = TemporaryDirectory()
    var store = try KeyValueStore(path: directory.storePath)
    try store.createTable("outlines")
    try store.put(encodable: Outline.sample, id: "o1", into: "outlines")
    let expected = try JSONCanonicalizer.canonicalText(bytes: JSONEncoder().encode(Outline.sample))
    #expect(try storedText(store, "o1") == expected)
    store = try reopen(store, options: StoreOptions())
    #expect(try store.decode(Outline.self, id: "o1", from: "outlines") == Outline.sample)
    #expect(
      try JSONDecoder().decode(Outline.self, from: Data(storedText(store, "o1")))
        == Outline.sample)
    try store.close()
  }
}

// MARK: - The oracle

private let allDateStrategies: [CodingStrategies.DateStrategy] = [
  .deferredToDate, .secondsSince1970, .millisecondsSince1970, .iso8601,
]

/// Every combination of the strategies.
private let everyCombination: [CodingStrategies] = allDateStrategies.flatMap { dates in
  [CodingStrategies.DataStrategy.base64, .deferredToData].flatMap { data in
    [CodingStrategies.KeyStrategy.useDefaultKeys, .snakeCase].map { keys in
      CodingStrategies(dates: dates, data: data, keys: keys)
    }
  }
}

extension CodingStrategies {
  /// A `JSONEncoder` with the strategies of the same names.
  fileprivate var foundationEncoder: JSONEncoder {
    let encoder = JSONEncoder()
    switch dates {
    case .deferredToDate: encoder.dateEncodingStrategy = .deferredToDate
    case .secondsSince1970: encoder.dateEncodingStrategy = .secondsSince1970
    case .millisecondsSince1970: encoder.dateEncodingStrategy = .millisecondsSince1970
    case .iso8601: encoder.dateEncodingStrategy = .iso8601
    }
    encoder.dataEncodingStrategy = data == .base64 ? .base64 : .deferredToData
    encoder.keyEncodingStrategy = keys == .snakeCase ? .convertToSnakeCase : .useDefaultKeys
    return encoder
  }

  /// A `JSONDecoder` with the strategies of the same names.
  fileprivate var foundationDecoder: JSONDecoder {
    let decoder = JSONDecoder()
    switch dates {
    case .deferredToDate: decoder.dateDecodingStrategy = .deferredToDate
    case .secondsSince1970: decoder.dateDecodingStrategy = .secondsSince1970
    case .millisecondsSince1970: decoder.dateDecodingStrategy = .millisecondsSince1970
    case .iso8601: decoder.dateDecodingStrategy = .iso8601
    }
    decoder.dataDecodingStrategy = data == .base64 ? .base64 : .deferredToData
    decoder.keyDecodingStrategy = keys == .snakeCase ? .convertFromSnakeCase : .useDefaultKeys
    return decoder
  }
}

extension JSONCanonicalizer {
  /// The stored form of JSON text in `bytes`.
  fileprivate static func canonicalText(bytes: Data) throws -> [UInt8] {
    try bytes.withUnsafeBytes { try canonicalText(of: $0) }
  }
}

private func text<T: Encodable>(_ value: T, _ strategies: CodingStrategies) throws -> String {
  String(decoding: try StoredJSONEncoder.encode(value, strategies: strategies), as: UTF8.self)
}

/// The stored bytes of `id` in the table "outlines".
private func storedText(_ store: KeyValueStore, _ id: String) throws -> [UInt8] {
  try store.logStore.value(forKey: Array(id.utf8), in: "outlines") ?? []
}

/// Expects the store's encoder with `strategies` to give `JSONEncoder`'s bytes (with the
/// same strategies) in the stored form, or both to throw.
private func expectSameEncoding<T: Encodable>(
  _ value: T, _ strategies: CodingStrategies, sourceLocation: SourceLocation = #_sourceLocation
) throws {
  let ours = Result { try StoredJSONEncoder.encode(value, strategies: strategies) }
  let theirs = Result {
    try JSONCanonicalizer.canonicalText(bytes: strategies.foundationEncoder.encode(value))
  }
  switch (ours, theirs) {
  case (.success(let ours), .success(let theirs)):
    #expect(
      String(decoding: ours, as: UTF8.self) == String(decoding: theirs, as: UTF8.self),
      "\(value) with \(strategies)", sourceLocation: sourceLocation)
  case (.failure(let error), .failure):
    #expect(error is EncodingError, "\(error)", sourceLocation: sourceLocation)
  case (.success(let ours), .failure(let error)):
    let ours = String(decoding: ours, as: UTF8.self)
    Issue.record(
      "\(value) with \(strategies): encoded \(ours) where JSONEncoder threw \(error)",
      sourceLocation: sourceLocation)
  case (.failure(let error), .success(let theirs)):
    let theirs = String(decoding: theirs, as: UTF8.self)
    Issue.record(
      "\(value) with \(strategies): threw \(error) where JSONEncoder gave \(theirs)",
      sourceLocation: sourceLocation)
  }
}

/// Expects the store's decoder with `strategies` and `JSONDecoder` with the same to agree on
/// `text` as a `T`: the same value (dates bit for bit), or errors of the same case at the
/// same coding path (but for a number that does not fit, which `JSONDecoder` reports at the
/// top).
private func expectSameDecoding<T: Decodable & Equatable>(
  _ type: T.Type, _ text: String, _ strategies: CodingStrategies,
  sourceLocation: SourceLocation = #_sourceLocation
) {
  let bytes = Array(text.utf8)
  let ours = Result { try StoredJSONDecoder.decode(T.self, from: bytes, strategies: strategies) }
  let theirs = Result { try strategies.foundationDecoder.decode(T.self, from: Data(bytes)) }
  switch (ours, theirs) {
  case (.success(let ours), .success(let theirs)):
    #expect(
      same(ours, theirs),
      "\(T.self) from \(text) with \(strategies): \(ours), JSONDecoder \(theirs)",
      sourceLocation: sourceLocation)
  case (.failure(let ours), .failure(let theirs)):
    // JSONDecoder reports a number that does not fit its type with an empty coding path;
    // the store's decoder names the number's path (as with the default strategies).
    let numberAtTop =
      errorCase(theirs) == "dataCorrupted at "
      && errorCase(ours).hasPrefix(
        "dataCorrupted at ")
    #expect(
      errorCase(ours) == errorCase(theirs) || numberAtTop,
      "\(T.self) from \(text) with \(strategies): \(ours), JSONDecoder \(theirs)",
      sourceLocation: sourceLocation)
  case (.success(let ours), .failure(let theirs)):
    Issue.record(
      "\(T.self) from \(text) with \(strategies): decoded \(ours), JSONDecoder threw \(theirs)",
      sourceLocation: sourceLocation)
  case (.failure(let ours), .success(let theirs)):
    Issue.record(
      "\(T.self) from \(text) with \(strategies): threw \(ours), JSONDecoder decoded \(theirs)",
      sourceLocation: sourceLocation)
  }
}

/// Whether this Foundation's `.iso8601` date strategy reads a fraction of a second. Swift
/// 6.2's Foundation does (swift-foundation since 6.2, and Apple's in the 26 releases); before
/// it, `Date.ISO8601FormatStyle()` refused a fraction unless asked for one, so JSONDecoder
/// refused `"2024-01-01T00:00:00.5Z"`. The store reads fractions, as 6.2 does, everywhere.
let foundationReadsISO8601Fractions: Bool = {
  let decoder = JSONDecoder()
  decoder.dateDecodingStrategy = .iso8601
  return (try? decoder.decode(Date.self, from: Data(#""2024-01-01T00:00:00.5Z""#.utf8))) != nil
}()

/// Decodes the ISO 8601 date `text` with the store's decoder and with JSONDecoder, and
/// expects the same date or the same error. Where this Foundation does not read fractions
/// (``foundationReadsISO8601Fractions``), a text with one is held to what 6.2 reads: the date
/// JSONDecoder reads without the fraction, plus the fraction (or the error it throws).
private func expectSameISO8601Decoding(
  _ text: String, asIfFractionsWereRefused: Bool = false,
  sourceLocation: SourceLocation = #_sourceLocation
) {
  let strategies = CodingStrategies(dates: .iso8601)
  guard asIfFractionsWereRefused || !foundationReadsISO8601Fractions,
    let fractionRange = secondsFraction(in: text)
  else {
    expectSameDecoding(Date.self, "\"\(text)\"", strategies, sourceLocation: sourceLocation)
    return
  }
  var whole = text
  whole.removeSubrange(fractionRange)
  let ours = try? StoredJSONDecoder.decode(
    Date.self, from: Array("\"\(text)\"".utf8), strategies: strategies)
  let theirs = try? strategies.foundationDecoder.decode(
    Date.self, from: Data("\"\(whole)\"".utf8))
  let fraction = Double("0" + text[fractionRange])!
  #expect(
    ours?.timeIntervalSinceReferenceDate
      == theirs.map { ($0.timeIntervalSinceReferenceDate + fraction) },
    "\(text): \(String(describing: ours)), JSONDecoder without the fraction \(String(describing: theirs))",
    sourceLocation: sourceLocation)
}

/// Where `.` and one to nine digits follow the seconds of an ISO 8601 text (after `T` and
/// two `:`), that range; nil for a text without such a fraction.
private func secondsFraction(in text: String) -> Range<String.Index>? {
  let characters = Array(text)
  guard let dot = characters.firstIndex(of: "."), dot > 0, characters[dot - 1].isNumber,
    let time = characters.firstIndex(of: "T"), time < dot,
    characters[time..<dot].filter({ $0 == ":" }).count == 2
  else { return nil }
  var end = dot + 1
  while end < characters.count, characters[end].isASCII, characters[end].isNumber { end += 1 }
  guard (1...9).contains(end - dot - 1) else { return nil }
  return text.index(text.startIndex, offsetBy: dot)..<text.index(text.startIndex, offsetBy: end)
}

/// Equality that tells dates apart bit for bit.
private func same<T: Equatable>(_ lhs: T, _ rhs: T) -> Bool {
  if let lhs = lhs as? Date, let rhs = rhs as? Date {
    return lhs.timeIntervalSinceReferenceDate.bitPattern
      == rhs.timeIntervalSinceReferenceDate.bitPattern
  }
  return lhs == rhs
}

/// A DecodingError's case and coding path (as string values).
private func errorCase(_ error: any Error) -> String {
  guard let error = error as? DecodingError else { return "not a DecodingError: \(error)" }
  func path(_ keys: [any CodingKey]) -> String {
    keys.map { $0.intValue.map { "Index \($0)" } ?? $0.stringValue }.joined(separator: "/")
  }
  switch error {
  case .typeMismatch(_, let context): return "typeMismatch at \(path(context.codingPath))"
  case .valueNotFound(_, let context): return "valueNotFound at \(path(context.codingPath))"
  case .keyNotFound(let key, let context):
    return "keyNotFound \(key.stringValue) at \(path(context.codingPath))"
  case .dataCorrupted(let context): return "dataCorrupted at \(path(context.codingPath))"
  @unknown default: return "unknown"
  }
}

/// `key` escaped for a JSON string.
private func escaped(_ key: String) -> String {
  String(decoding: try! JSONWriter.bytes(.string(key)).dropFirst().dropLast(), as: UTF8.self)
}

// MARK: - Samples

/// Dates in every era: around the reference date and 1970, leap days, the Julian-Gregorian
/// switch, years 0 and before, past 9999, beyond the calendar's range, fractions of a second
/// either side of zero; and random ones at every scale.
private func sampleDates() -> [Date] {
  var times: [Double] = [
    0, -0.0, 0.5, -0.5, 1e-7, -1e-7, 0.999_999_9, -0.999_999_9, 12.5, 59.999, 86_399.999,
    86_400, -86_400, -86_400.5, 1e9, -1e9, 1e13, -1e13, 1e15, -1e15, 1e17, -1e17, 1e20, -1e20,
    1e300, -1e300, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
    .leastNonzeroMagnitude, Date.distantPast.timeIntervalSinceReferenceDate,
    Date.distantFuture.timeIntervalSinceReferenceDate, -978_307_200, -978_307_200.001,
    -63_200_000_000, -211_845_067_200, -211_845_067_200.5, 15_927_175_497_599.5,
    15_927_175_497_600,
  ]
  // Leap days and their neighbours, and the Gregorian switch, in seconds since 1970.
  let since1970: [Double] = [
    951_782_400, 951_868_800, -2_203_977_600, -2_203_891_200, 1_709_164_800, 1_709_251_200,
    -11_670_912_000, -12_219_292_800, -12_219_292_801, -12_219_379_200, -14_831_769_600,
    -62_135_596_800, -62_135_596_801, -62_167_219_200, -62_198_755_200, -210_866_803_200,
    253_402_300_799, 253_402_300_800,
  ]
  times += since1970.flatMap { [$0 - 978_307_200, $0 - 978_307_200 + 0.999] }
  var generator = SeededGenerator(seed: 2001)
  for _ in 0..<600 {
    let scale = [1e3, 1e6, 1e9, 1e11, 1e13, 1e15, 1e17][Int(generator.next() % 7)]
    let unit = Double(generator.next() % 2_000_001) / 1_000_000 - 1
    times.append(unit * scale)
    times.append((unit * scale).rounded())
  }
  return times.map { Date(timeIntervalSinceReferenceDate: $0) }
}

/// Texts for the ISO 8601 date strategy: the form it writes, and every way the reader
/// accepts or refuses a field.
private let iso8601Texts = [
  "2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z", "2024-02-30T12:00:00Z", "2024-02-31T00:00:00Z",
  "2024-13-01T00:00:00Z", "2024-00-01T00:00:00Z", "2024-01-00T00:00:00Z", "2024-01-32T00:00:00Z",
  "0000-01-01T00:00:00Z", "0001-01-01T00:00:00Z", "1582-10-04T23:59:59Z", "1582-10-10T00:00:00Z",
  "1582-10-15T00:00:00Z", "1500-02-29T00:00:00Z", "1600-02-29T00:00:00Z", "1700-02-29T00:00:00Z",
  "9999-12-31T23:59:59Z", "10000-01-01T00:00:00Z", "506714-12-31T00:00:00Z",
  "506715-01-01T00:00:00Z", "9999999999-01-01T00:00:00Z", "99999999999-01-01T00:00:00Z",
  "-0001-01-01T00:00:00Z", "2024-1-1T1:2:3Z", "2024-01-01T24:00:00Z", "2024-01-01T99:99:99Z",
  "2024-01-01T2147483647:00:00Z", "2024-01-01T2147483648:00:00Z", "2024-01-01T00:2147483648:00Z",
  "2024-01-01T00:00:2147483647Z", "2024-01-01T00:00:00.5Z", "2024-01-01T00:00:00.123456789Z",
  "2024-01-01T00:00:00.1234567890Z", "2024-01-01T00:00:00.999999999Z", "2024-01-01T00:00:00.Z",
  "2024-01-01T00:00:00,5Z", "2024-01-01T00:00:00", "2024-01-01", "", " 2024-01-01T00:00:00Z",
  "2024-01-01t00:00:00Z", "2024-01-01 00:00:00Z", "2024-01-01T00:00:00z", "2024-01-01T00:00:00+24",
  "2024-01-01T00:00:00+18", "2024-01-01T00:00:00-18:00", "2024-01-01T00:00:00+18:00:01",
  "2024-01-01T00:00:00+00:00", "2024-01-01T00:00:00-00", "2024-01-01T00:00:00+5:30",
  "2024-01-01T00:00:00+05:3", "2024-01-01T00:00:00+0530", "2024-01-01T00:00:00+053045",
  "2024-01-01T00:00:00+05:30:45", "2024-01-01T00:00:00+05:30:", "2024-01-01T00:00:00+05:",
  "2024-01-01T00:00:00+", "2024-01-01T00:00:00GMT", "2024-01-01T00:00:00GMT+0530",
  "2024-01-01T00:00:00UTC-8", "2024-01-01T00:00:00gmt", "2024-01-01T00:00:00GmT-01",
  "2024-01-01T00:00:00UTCx", "2024-01-01T00:00:00GMTx", "2024-01-01T00:00:00GMX",
  "2024-01-01T00:00:00UT", "2024-01-01T00:00:00Zjunk", "2024-01-01T00:00:00ZZ",
  "2024-01-01T00:00:00+01junk", "2024-01-01T00:00:00.5+01:00", "2024-01-01T00:00:00Ž",
  "2024-01-01T00:00:00 Z", "2024-01-01T00:00:00+1", "2024-01-01T00:00:00-123",
  "2024-01-01T00:00:00+12345", "2024-01-01T00:00:00+99", "２０２４-01-01T00:00:00Z",
]

/// A text in the shape of an ISO 8601 date: each field usually well formed (of any value in
/// or out of range), sometimes of an odd length or with another separator, time zone or
/// ending, and now and then with a byte dropped or changed.
private func randomISO8601Text(using generator: inout SeededGenerator) -> String {
  func pick<T>(_ choices: [T]) -> T { choices[Int(generator.next() % UInt64(choices.count))] }
  /// `usual` most of the time, else one of `unusual`.
  func usually(_ usual: String, _ unusual: [String]) -> String {
    generator.next() % 8 == 0 ? pick(unusual) : usual
  }
  func digits(_ count: Int) -> String {
    String((0..<count).map { _ in Character(String(generator.next() % 10)) })
  }
  func number(_ range: ClosedRange<Int>, width: Int) -> String {
    let value = range.lowerBound + Int(generator.next() % UInt64(range.count))
    let text = String(value)
    return String(repeating: "0", count: max(0, width - text.count)) + text
  }
  let year = usually(
    pick([number(1500...2100, width: 4), number(0...9999, width: 4), number(0...506_714, width: 1)]
    ),
    [digits(1), digits(11), "-" + digits(4), number(506_700...506_720, width: 6)])
  let month = usually(number(1...12, width: 2), [number(0...13, width: 1), digits(3), ""])
  let day = usually(number(1...31, width: 2), [number(28...32, width: 1), digits(3), ""])
  let time = [number(0...23, width: 2), number(0...59, width: 2), number(0...59, width: 2)].map {
    usually($0, [number(24...99, width: 2), digits(1), digits(10), digits(11), ""])
  }
  let fraction = pick(["", "", "." + digits(Int(generator.next() % 13))])
  let zone = usually(
    pick([
      "Z", "z", "+" + number(0...18, width: 2) + ":" + pick(["00", "30", "45"]),
      "-" + number(0...18, width: 2) + pick(["", "00", "30", ":15:30"]), "GMT", "utc",
      "GMT+" + number(0...14, width: 1), "UTC-" + number(0...18, width: 2) + ":30",
    ]), ["", "+" + digits(Int(generator.next() % 7)), "+19", "Gmt-", "UTx", "Q", "+05:3x"])
  var text =
    year + usually("-", ["/", ""]) + month + usually("-", ["", " "]) + day
    + usually("T", ["t", " ", ""]) + time[0] + usually(":", ["", "."]) + time[1]
    + usually(":", ["", "-"]) + time[2] + fraction + zone + usually("", ["x", "Z", " "])
  if generator.next() % 8 == 0, !text.isEmpty {
    var bytes = Array(text.utf8)
    let index = Int(generator.next() % UInt64(bytes.count))
    if generator.next() % 2 == 0 {
      bytes.remove(at: index)
    } else {
      bytes[index] = pick(Array("0123456789-:T+Z.".utf8))
    }
    text = String(decoding: bytes, as: UTF8.self)
  }
  return text
}

/// Keys for the key strategies: acronyms, underscores at either end and inside, digits,
/// capitals alone, and text beyond ASCII (capitals, titlecase, combining marks, emoji).
private let sampleKeys = [
  "myURLValue", "_leading", "trailing_", "__both__", "already_snake", "ID", "a1B2", "", "_", "__",
  "a", "A", "aB", "AB", "ABc", "URLValue", "myURL", "oneTwoThree", "_oneTwoThree_",
  "simpleHTTPServer", "x_y_z", "X_Y", "snake__double", "camel_Case", "b2c_x", "a.b_c.d",
  "with space_key", "userID", "user_id", "user_ID", "HTMLParser_v2", "__private_member",
  "ünïcödeKey", "ÉcoleName", "straßeName", "ǅemoKey", "a_ǆemo", "ΣίσυφοςName", "σ_σ", "日本語Key",
  "日本_語", "key😀Emoji", "a_😀b", "e\u{301}Accent", "aB\u{301}c", "aBC\u{301}d", "a_e\u{301}b",
  "a_\u{301}b", "\u{301}Ab", "\r\nKey", "Key\r\nX", "a_b\r\nc", "İstanbul_city", "a_ß",
  "a_ﬁx", "x_1st", "x_.y", "K\u{212A}_k", "aB\u{600}c", "aBC\u{600}d", "A\u{600}bC",
  "x\u{600}ABc", "aB\u{1F1E6}\u{1F1E8}c", "a_\u{600}b",
]

/// A key of up to 8 characters from a small alphabet of the characters that matter.
private func randomKey(using generator: inout SeededGenerator) -> String {
  let alphabet: [String] = [
    "a", "b", "A", "B", "_", "_", "1", "É", "é", "ß", "ǅ", "\u{301}", ".", " ", "Σ", "日",
  ]
  return (0..<Int(generator.next() % 9)).map { _ in
    alphabet[Int(generator.next() % UInt64(alphabet.count))]
  }.joined()
}

// MARK: - Types to encode

private struct Dated: Codable, Equatable, CustomStringConvertible {
  var date: Date
  var dates: [Date]
  var optional: Date?

  static func == (lhs: Dated, rhs: Dated) -> Bool { lhs.description == rhs.description }

  var description: String {
    ([date] + dates + (optional.map { [$0] } ?? [])).map {
      String($0.timeIntervalSinceReferenceDate.bitPattern, radix: 16)
    }.joined(separator: ",")
  }
}

private struct Blob: Codable, Equatable {
  var bytes: Data
  var more: [Data]
  var optional: Data?
}

private struct Nest<Inner> {
  var inner: Inner
}

extension Nest: Encodable where Inner: Encodable {}
extension Nest: Decodable where Inner: Decodable {}
extension Nest: Equatable where Inner: Equatable {}

/// A model with the kinds of members an app stores: camel-case names with and without
/// acronyms, underscores, dates, data, a dictionary, optionals and nested models.
private struct Outline: Codable, Equatable {
  struct Section: Codable, Equatable {
    var sectionTitle: String
    var updatedAt: Date
    var rawBytes: Data
    var childSections: [Section]
  }

  enum CodingKeys: String, CodingKey {
    case outlineName, createdAt, _internalFlag, thumbnailData, wordCounts, sections
    case lastOpenedAt, archivedAt
    case trailingCount = "trailing_"
  }

  var outlineName: String
  var createdAt: Date
  var _internalFlag: Bool
  var trailingCount: Int
  var thumbnailData: Data
  var wordCounts: [String: Int]
  var sections: [Section]
  var lastOpenedAt: Date?
  var archivedAt: Date?

  static let sample = Outline(
    outlineName: "Plan", createdAt: Date(timeIntervalSince1970: 1_709_164_800),
    _internalFlag: true, trailingCount: 3, thumbnailData: Data([0, 1, 254, 255]),
    wordCounts: ["introPart": 120, "main_part": 900],
    sections: [
      Section(
        sectionTitle: "One", updatedAt: Date(timeIntervalSince1970: -12_219_292_801),
        rawBytes: Data(),
        childSections: [
          Section(
            sectionTitle: "One.A", updatedAt: Date(timeIntervalSince1970: 0),
            rawBytes: Data([7]), childSections: [])
        ])
    ], lastOpenedAt: Date(timeIntervalSince1970: 253_402_300_799), archivedAt: nil)

  static let other = Outline(
    outlineName: "Other", createdAt: Date(timeIntervalSince1970: 951_782_400),
    _internalFlag: false, trailingCount: -1, thumbnailData: Data(repeating: 9, count: 30),
    wordCounts: [:], sections: [], lastOpenedAt: nil, archivedAt: Date(timeIntervalSince1970: 1))
}

private struct Acronym: Codable, Equatable {
  var userID: Int
}

/// Writes through nested keyed and unkeyed containers and super encoders, and reads back
/// the same way.
private struct Containers: Codable, Equatable {
  enum Keys: String, CodingKey {
    case outerKey, nestedList, superValue, someDate
  }
  enum Inner: String, CodingKey {
    case innerKey, otherKey
  }

  init() {}

  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: Keys.self)
    var nested = container.nestedContainer(keyedBy: Inner.self, forKey: .outerKey)
    try nested.encode(1, forKey: .innerKey)
    var list = nested.nestedUnkeyedContainer(forKey: .otherKey)
    try list.encode(Date(timeIntervalSince1970: 86_400))
    var listed = list.nestedContainer(keyedBy: Inner.self)
    try listed.encode(Data([1, 2]), forKey: .innerKey)
    var again = container.nestedContainer(keyedBy: Inner.self, forKey: .outerKey)
    try again.encode(2, forKey: .otherKey)
    var superContainer = container.superEncoder(forKey: .superValue).container(keyedBy: Inner.self)
    try superContainer.encode("s", forKey: .innerKey)
    var plainSuper = container.superEncoder().container(keyedBy: Inner.self)
    try plainSuper.encode(3, forKey: .otherKey)
    try container.encode(Date(timeIntervalSince1970: 0.5), forKey: .someDate)
  }

  init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: Keys.self)
    let nested = try container.nestedContainer(keyedBy: Inner.self, forKey: .outerKey)
    _ = try nested.decode(Int.self, forKey: .otherKey)
    var list = try nested.nestedUnkeyedContainer(forKey: .otherKey)
    _ = try list.decode(Date.self)
    _ = try list.nestedContainer(keyedBy: Inner.self).decode(Data.self, forKey: .innerKey)
    _ = try container.superDecoder(forKey: .superValue).container(keyedBy: Inner.self)
      .decode(String.self, forKey: .innerKey)
    _ = try container.superDecoder().container(keyedBy: Inner.self).decode(
      Int.self, forKey: .otherKey)
    _ = try container.decode(Date.self, forKey: .someDate)
  }
}

/// A coding key with any string.
private struct AnyKey: CodingKey {
  var stringValue: String
  var intValue: Int? { nil }

  init(_ stringValue: String) {
    self.stringValue = stringValue
  }

  init?(stringValue: String) {
    self.stringValue = stringValue
  }

  init?(intValue: Int) {
    return nil
  }
}

/// Members named by `keys`, through a keyed container (so that a key strategy converts
/// them), each holding its position.
private struct Members: Encodable, CustomStringConvertible {
  var keys: [String]

  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: AnyKey.self)
    for (index, key) in keys.enumerated() {
      try container.encode(index, forKey: AnyKey(key))
    }
  }

  var description: String { "\(keys)" }
}

/// Every member a keyed container lists, by the key it lists.
private struct AllMembers: Decodable, Equatable {
  var members: [String: Int] = [:]

  init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: AnyKey.self)
    for key in container.allKeys {
      members[key.stringValue] = try container.decode(Int.self, forKey: key)
    }
  }
}

/// What a keyed container gives for each of the sample keys and their conversions.
private struct Lookups: Decodable, Equatable {
  var found: [String: Int] = [:]
  var contained: Set<String> = []

  static let names = Set(
    sampleKeys + sampleKeys.map(SnakeCaseKeys.snakeCased) + sampleKeys.map(SnakeCaseKeys.camelCased)
      + ["super", "aB", "a_b", "AB", "a", "ab"])

  init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: AnyKey.self)
    for name in Self.names {
      if container.contains(AnyKey(name)) { contained.insert(name) }
      found[name] = try container.decodeIfPresent(Int.self, forKey: AnyKey(name))
    }
    _ = try? container.superDecoder().singleValueContainer().decode(Int.self)
  }
}
