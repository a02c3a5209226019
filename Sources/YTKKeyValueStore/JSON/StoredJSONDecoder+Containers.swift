// The Decoder and its containers: small values that name a tape entry and a coding path,
// and read through the one Document of the call.

extension StoredJSONDecoder {
  /// A coding path: an entry of the document's table of paths (``Document/paths``), or the
  /// top of the document.
  struct CodingPath {
    var entry: Int

    static var top: CodingPath { CodingPath(entry: -1) }
  }

  /// The key of a value decoded where it is, by a single-value container or at the top of
  /// the document: it adds nothing to the coding path. (A key type rather than an optional
  /// key, so that generic code passing keys along needs no `Optional<Key>` type at run time.)
  struct NoKey: CodingKey {
    var stringValue: String { "" }
    var intValue: Int? { nil }

    init() {}
    init?(stringValue: String) { nil }
    init?(intValue: Int) { nil }
  }

  // MARK: - Decoder

  /// The decoder of one value; it is also that value's single-value container.
  struct ValueDecoder: Decoder, SingleValueDecodingContainer {
    let document: Document
    /// The value's tape index.
    let value: Int
    let path: CodingPath

    var codingPath: [any CodingKey] { document.codingPath(path) }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
      try expectContainer(.object)
      return KeyedDecodingContainer(
        KeyedContainer<Key>(document: document, object: value, path: path))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
      try expectContainer(.array)
      return UnkeyedContainer(document: document, array: value, path: path)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    /// Throws the error `JSONDecoder` throws when asked for a container of `kind` (an object
    /// or an array) for a value that is not one.
    func expectContainer(_ kind: JSONTapeEntry.Kind) throws {
      let found = document.tape[value].kind
      guard found != kind else { return }
      let type: Any.Type = kind == .object ? [String: Any].self : [Any].self
      guard found != .null else {
        let container = kind == .object ? "keyed" : "unkeyed"
        throw DecodingError.valueNotFound(
          type,
          document.errorContext(
            at: path, "Cannot get \(container) decoding container -- found null value instead"))
      }
      throw document.decodingError(
        .mismatch(expected: type), decoding: type, at: value, path: path, key: NoKey())
    }

    // MARK: Single value

    func decodeNil() -> Bool { document.tape[value].kind == .null }

    @inline(__always)
    private func read<T: TapeDecodable>() throws -> T {
      try document.read(T.self, at: value, path: path, key: NoKey())
    }

    // Every scalar requirement but the 128-bit ones, which have defaults that a generic
    // witness does not replace.
    @inline(__always)
    func decode<T: TapeDecodable>(_ type: T.Type) throws -> T { try read() }
    @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
    func decode(_ type: Int128.Type) throws -> Int128 { try read() }
    @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
    func decode(_ type: UInt128.Type) throws -> UInt128 { try read() }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
      try document.decode(T.self, at: value, path: path, key: NoKey())
    }
  }

  // MARK: - Keyed container

  /// An object's members, found by key.
  struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let document: Document
    /// The object's tape index.
    let object: Int
    let path: CodingPath

    var codingPath: [any CodingKey] { document.codingPath(path) }

    /// The object's distinct keys that make a `Key`, in document order (a repeated key, or one
    /// equal to an earlier key as a Swift string, only the first time; with `.snakeCase`,
    /// converted): its member table's keys, in the order of their values.
    var allKeys: [Key] {
      document.memberTable(of: object).sorted { $0.value < $1.value }.compactMap {
        Key(stringValue: $0.key)
      }
    }

    func contains(_ key: Key) -> Bool { member(key) != nil }

    /// The tape index of the value of the member `key`, nil if there is none.
    @inline(__always)
    private func member(_ key: some CodingKey) -> Int? {
      document.member(named: key.stringValue, in: object)
    }

    /// The tape index of the value for `key`.
    @inline(__always)
    private func value(for key: Key) throws -> Int {
      guard let value = member(key) else {
        throw DecodingError.keyNotFound(
          key,
          document.errorContext(
            at: path, "No value associated with key \(key) (\"\(key.stringValue)\")."))
      }
      return value
    }

    /// The tape index of the value for `key`, nil when it is missing or `null`.
    @inline(__always)
    private func valueIfPresent(for key: Key) -> Int? {
      guard let value = member(key), document.tape[value].kind != .null else { return nil }
      return value
    }

    @inline(__always)
    private func read<T: TapeDecodable>(_ key: Key) throws -> T {
      try document.read(T.self, at: try value(for: key), path: path, key: key)
    }

    @inline(__always)
    private func readIfPresent<T: TapeDecodable>(_ key: Key) throws -> T? {
      guard let value = valueIfPresent(for: key) else { return nil }
      return try document.read(T.self, at: value, path: path, key: key)
    }

    func decodeNil(forKey key: Key) throws -> Bool {
      document.tape[try value(for: key)].kind == .null
    }

    // As the single value container's.
    @inline(__always)
    func decode<T: TapeDecodable>(_ type: T.Type, forKey key: Key) throws -> T { try read(key) }
    @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
    func decode(_ type: Int128.Type, forKey key: Key) throws -> Int128 { try read(key) }
    @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
    func decode(_ type: UInt128.Type, forKey key: Key) throws -> UInt128 { try read(key) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
      try document.decode(T.self, at: try value(for: key), path: path, key: key)
    }

    // The optional forms of the commonest scalars (as the encoder's), one lookup each; the
    // others take the protocol's default (`contains`, `decodeNil`, `decode`).
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
      try readIfPresent(key)
    }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
      try readIfPresent(key)
    }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
      try readIfPresent(key)
    }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
      try readIfPresent(key)
    }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? {
      try readIfPresent(key)
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
      guard let value = valueIfPresent(for: key) else { return nil }
      return try document.decode(T.self, at: value, path: path, key: key)
    }

    func nestedContainer<NestedKey: CodingKey>(
      keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
      try decoder(for: try value(for: key), key: key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
      try decoder(for: try value(for: key), key: key).unkeyedContainer()
    }

    // As JSONDecoder's, the super decoders decode the member, or `null` if there is none.
    func superDecoder() throws -> any Decoder {
      decoder(for: member(StringKey.super), key: StringKey.super)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder { decoder(for: member(key), key: key) }

    private func decoder(for value: Int?, key: some CodingKey) -> ValueDecoder {
      ValueDecoder(
        document: document, value: value ?? document.missingValue,
        path: document.path(path, appending: key))
    }
  }

  // MARK: - Unkeyed container

  /// An array's elements, in order.
  struct UnkeyedContainer: UnkeyedDecodingContainer {
    let document: Document
    let path: CodingPath
    let count: Int?
    private(set) var currentIndex = 0
    /// The tape index of the element at `currentIndex`, while not at the end.
    private var next: Int

    init(document: Document, array: Int, path: CodingPath) {
      self.document = document
      self.path = path
      count = document.tape[array].first
      next = array + 1
    }

    var codingPath: [any CodingKey] { document.codingPath(path) }

    var isAtEnd: Bool { currentIndex >= count! }

    /// The current element's key.
    private var currentKey: IndexKey { IndexKey(currentIndex) }

    /// The tape index of the current element; at the end, the error JSONDecoder throws
    /// there for a value of `type`.
    @inline(__always)
    private func element(for type: Any.Type) throws -> Int {
      guard !isAtEnd else {
        let elementPath = document.path(path, appending: currentKey)
        throw DecodingError.valueNotFound(
          type, document.errorContext(at: elementPath, "Unkeyed container is at end."))
      }
      return next
    }

    /// `value`, read from the current element, after moving to the next element. Past the
    /// end only `currentIndex` moves, as in JSONDecoder, whose `decodeIfPresent` at the end
    /// returns nil and counts on.
    @inline(__always)
    private mutating func advancing<T>(_ value: T) -> T {
      if currentIndex < count! { next = document.entry(after: next) }
      currentIndex += 1
      return value
    }

    /// Whether the current element is `null` or past the end, which `decodeIfPresent`
    /// reads as nil.
    private var isAbsent: Bool { isAtEnd || document.tape[next].kind == .null }

    @inline(__always)
    private mutating func read<T: TapeDecodable>() throws -> T {
      advancing(
        try document.read(T.self, at: try element(for: T.self), path: path, key: currentKey))
    }

    @inline(__always)
    private mutating func readIfPresent<T: TapeDecodable>() throws -> T? {
      try isAbsent ? advancing(nil) : read()
    }

    mutating func decodeNil() throws -> Bool {
      guard document.tape[try element(for: Never.self)].kind == .null else { return false }
      return advancing(true)
    }

    // As the single value container's.
    @inline(__always)
    mutating func decode<T: TapeDecodable>(_ type: T.Type) throws -> T { try read() }
    @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
    mutating func decode(_ type: Int128.Type) throws -> Int128 { try read() }
    @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
    mutating func decode(_ type: UInt128.Type) throws -> UInt128 { try read() }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
      advancing(
        try document.decode(T.self, at: try element(for: T.self), path: path, key: currentKey))
    }

    mutating func decodeIfPresent(_ type: Bool.Type) throws -> Bool? { try readIfPresent() }
    mutating func decodeIfPresent(_ type: String.Type) throws -> String? { try readIfPresent() }
    mutating func decodeIfPresent(_ type: Double.Type) throws -> Double? { try readIfPresent() }
    mutating func decodeIfPresent(_ type: Float.Type) throws -> Float? { try readIfPresent() }
    mutating func decodeIfPresent(_ type: Int.Type) throws -> Int? { try readIfPresent() }
    mutating func decodeIfPresent(_ type: Int8.Type) throws -> Int8? { try readIfPresent() }
    mutating func decodeIfPresent(_ type: Int16.Type) throws -> Int16? { try readIfPresent() }
    mutating func decodeIfPresent(_ type: Int32.Type) throws -> Int32? { try readIfPresent() }
    mutating func decodeIfPresent(_ type: Int64.Type) throws -> Int64? { try readIfPresent() }
    mutating func decodeIfPresent(_ type: UInt.Type) throws -> UInt? { try readIfPresent() }
    mutating func decodeIfPresent(_ type: UInt8.Type) throws -> UInt8? { try readIfPresent() }
    mutating func decodeIfPresent(_ type: UInt16.Type) throws -> UInt16? { try readIfPresent() }
    mutating func decodeIfPresent(_ type: UInt32.Type) throws -> UInt32? { try readIfPresent() }
    mutating func decodeIfPresent(_ type: UInt64.Type) throws -> UInt64? { try readIfPresent() }

    mutating func decodeIfPresent<T: Decodable>(_ type: T.Type) throws -> T? {
      try isAbsent ? advancing(nil) : decode(type)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
      keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
      advancing(try decoder(for: KeyedDecodingContainer<NestedKey>.self).container(keyedBy: type))
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
      advancing(try decoder(for: (any UnkeyedDecodingContainer).self).unkeyedContainer())
    }

    mutating func superDecoder() throws -> any Decoder {
      advancing(try decoder(for: (any Decoder).self))
    }

    /// A decoder of the current element, or the error at the end for a value of `type`.
    private func decoder(for type: Any.Type) throws -> ValueDecoder {
      ValueDecoder(
        document: document, value: try element(for: type),
        path: document.path(path, appending: currentKey))
    }
  }
}
