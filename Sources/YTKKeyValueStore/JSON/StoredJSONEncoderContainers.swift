// The encoders and the three containers the encoder hands to `encode(to:)`. They are small
// (an existential holds the structs without allocating) and name a slot or a container of
// the shared `Encoding`; all state lives there.
//
// In each container one generic method is the protocol's `encode` for Bool, String and every
// number type. Int128 and UInt128 are spelled out: the standard library has default
// implementations for them, which would be chosen over the generic method. The generic
// methods are always inlined: the protocol witness made from one calls it unspecialized.

extension StoredJSONEncoder {
  /// An encoder whose value goes to `slot`.
  protocol SlotEncoder: Encoder {
    var encoding: Encoding { get }
    var slot: SlotReference { get }
  }

  /// The `Encoder` for one value.
  struct ValueEncoder: SlotEncoder {
    let encoding: Encoding
    let slot: SlotReference
  }

  /// The `Encoder` `superEncoder()` returns. Like `JSONEncoder`'s, it has a value of its own
  /// and hands it to its container when it is released: the member is set then (so it
  /// overrides one set before), the element inserted at the index the container had when
  /// the super encoder was made.
  final class SuperEncoder: SlotEncoder {
    let encoding: Encoding
    let slot: SlotReference
    let container: Int
    /// The member's key, or nil for an element of an array.
    let key: String?
    let index: Int

    init(encoding: Encoding, pathNode: Int, container: Int, key: String?, index: Int = 0) {
      self.encoding = encoding
      self.slot = encoding.newDetachedSlot(pathNode: pathNode)
      self.container = container
      self.key = key
      self.index = index
    }

    deinit {
      var value = encoding.detached[-1 - slot.index].value
      if case .nothing = value {
        value = .container(encoding.newContainer(isObject: true, pathNode: -1))
      }
      if let key {
        encoding.addMember(encoding.beginMember(key, in: container), value: value, in: container)
      } else {
        encoding.insertElement(value, at: index, in: container)
      }
    }
  }

  struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoding: Encoding
    let container: Int

    var codingPath: [any CodingKey] {
      encoding.codingPath(at: pathNode)
    }

    private var pathNode: Int { encoding.containers[container].pathNode }

    /// The member name of `key`: its string value, converted by the key strategy.
    private func name(_ key: Key) -> String {
      encoding.convertsKeys ? encoding.convertedName(key) : key.stringValue
    }

    /// Writes `key`, then lets `write` append the value's text after it.
    private func add(_ key: Key, _ write: (inout JSONOutput) -> Void) {
      let member = encoding.beginMember(name(key), in: container)
      encoding.addMember(member, value: encoding.text(write), in: container)
    }

    /// Writes `key`, then `value`'s text after it.
    @inline(__always)
    private func add<T: StoredJSONScalar>(_ value: T, _ key: Key) throws {
      try value.checkStorable(at: codingPath + [key])
      add(key) { value.appendStored(to: &$0) }
    }

    /// As `add(_:_:)` if `value` is not nil.
    @inline(__always)
    private func add<T: StoredJSONScalar>(_ value: T?, _ key: Key) throws {
      if let value { try add(value, key) }
    }

    mutating func encodeNil(forKey key: Key) throws { add(key) { $0.appendLiteral("null") } }
    @inline(__always)
    mutating func encode<T: StoredJSONScalar>(_ value: T, forKey key: Key) throws {
      try add(value, key)
    }
    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    mutating func encode(_ value: Int128, forKey key: Key) throws { try add(value, key) }
    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    mutating func encode(_ value: UInt128, forKey key: Key) throws { try add(value, key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
      let member = encoding.beginMember(name(key), in: container)
      let encoded = try encoding.encode(value, at: pathNode, key: key)
      encoding.addMember(member, value: encoded, in: container)
    }

    // The optional forms of the commonest members, so that they skip the generic default
    // implementations.
    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { try add(value, key) }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { try add(value, key) }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws { try add(value, key) }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { try add(value, key) }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { try add(value, key) }
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
      if let value { try encode(value, forKey: key) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
      keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
      let nested = encoding.nestedContainer(
        isObject: true, in: container, key: key, name: name(key))
      return KeyedEncodingContainer(
        KeyedContainer<NestedKey>(encoding: encoding, container: nested))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
      UnkeyedContainer(
        encoding: encoding,
        container: encoding.nestedContainer(
          isObject: false, in: container, key: key, name: name(key)))
    }

    mutating func superEncoder() -> any Encoder {
      SuperEncoder(
        encoding: encoding, pathNode: encoding.pushPath(parent: pathNode, key: StringKey.super),
        container: container, key: StringKey.super.stringValue)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
      SuperEncoder(
        encoding: encoding, pathNode: encoding.pushPath(parent: pathNode, key: key),
        container: container, key: name(key))
    }
  }

  struct UnkeyedContainer: UnkeyedEncodingContainer {
    let encoding: Encoding
    let container: Int

    var codingPath: [any CodingKey] {
      encoding.codingPath(at: pathNode)
    }

    var count: Int { encoding.containers[container].count }

    private var pathNode: Int { encoding.containers[container].pathNode }

    /// Lets `write` append an element's text, and adds it.
    private func add(_ write: (inout JSONOutput) -> Void) {
      encoding.addElement(encoding.text(write), in: container)
    }

    /// Adds `value` as the next element.
    @inline(__always)
    private func add<T: StoredJSONScalar>(_ value: T) throws {
      try value.checkStorable(at: codingPath + [IndexKey(count)])
      add { value.appendStored(to: &$0) }
    }

    mutating func encodeNil() throws { add { $0.appendLiteral("null") } }
    @inline(__always)
    mutating func encode<T: StoredJSONScalar>(_ value: T) throws { try add(value) }
    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    mutating func encode(_ value: Int128) throws { try add(value) }
    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    mutating func encode(_ value: UInt128) throws { try add(value) }
    mutating func encode<T: Encodable>(_ value: T) throws {
      let encoded = try encoding.encode(value, at: pathNode, index: count)
      encoding.addElement(encoded, in: container)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
      keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<NestedKey> {
      KeyedEncodingContainer(
        KeyedContainer<NestedKey>(encoding: encoding, container: addNested(isObject: true)))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
      UnkeyedContainer(encoding: encoding, container: addNested(isObject: false))
    }

    /// Adds a new object or array as the next element.
    private func addNested(isObject: Bool) -> Int {
      let node = encoding.pushPath(parent: pathNode, key: IndexKey(count))
      let nested = encoding.newContainer(isObject: isObject, pathNode: node)
      encoding.addElement(.container(nested), in: container)
      return nested
    }

    mutating func superEncoder() -> any Encoder {
      SuperEncoder(
        encoding: encoding, pathNode: encoding.pushPath(parent: pathNode, key: IndexKey(count)),
        container: container, key: nil, index: count)
    }
  }

  struct SingleValueContainer: SingleValueEncodingContainer {
    let encoding: Encoding
    let slot: SlotReference

    var codingPath: [any CodingKey] {
      encoding.codingPath(at: encoding.pathNode(of: slot))
    }

    /// Lets `write` append the value's text, and records it.
    private func set(_ write: (inout JSONOutput) -> Void) {
      encoding.setSingle(encoding.text(write), in: slot)
    }

    /// Records `value`.
    @inline(__always)
    private func set<T: StoredJSONScalar>(_ value: T) throws {
      try value.checkStorable(at: codingPath)
      set { value.appendStored(to: &$0) }
    }

    mutating func encodeNil() throws { set { $0.appendLiteral("null") } }
    @inline(__always)
    mutating func encode<T: StoredJSONScalar>(_ value: T) throws { try set(value) }
    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    mutating func encode(_ value: Int128) throws { try set(value) }
    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    mutating func encode(_ value: UInt128) throws { try set(value) }
    mutating func encode<T: Encodable>(_ value: T) throws {
      encoding.setSingle(try encoding.encode(value, at: encoding.pathNode(of: slot)), in: slot)
    }
  }
}

// Always inlined, so that the encoders' witnesses read `encoding` and `slot` directly rather
// than through the protocol.
extension StoredJSONEncoder.SlotEncoder {
  @inline(__always)
  var codingPath: [any CodingKey] {
    encoding.codingPath(at: encoding.pathNode(of: slot))
  }

  var userInfo: [CodingUserInfoKey: Any] { [:] }

  @inline(__always)
  func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
    KeyedEncodingContainer(
      StoredJSONEncoder.KeyedContainer<Key>(
        encoding: encoding, container: encoding.container(isObject: true, in: slot)))
  }

  @inline(__always)
  func unkeyedContainer() -> any UnkeyedEncodingContainer {
    StoredJSONEncoder.UnkeyedContainer(
      encoding: encoding, container: encoding.container(isObject: false, in: slot))
  }

  @inline(__always)
  func singleValueContainer() -> any SingleValueEncodingContainer {
    StoredJSONEncoder.SingleValueContainer(encoding: encoding, slot: slot)
  }
}

extension StoredJSONEncoder.Encoding {
  // MARK: Nested containers

  /// The container `nestedContainer(keyedBy:forKey:)` or `nestedUnkeyedContainer(forKey:)`
  /// returns: as with `JSONEncoder`, the one already under `key` if it is of the same kind
  /// (made by an earlier call, or the value of an earlier `encode`), else a new one.
  func nestedContainer(
    isObject: Bool, in container: Int, key: some CodingKey, name: String
  ) -> Int {
    let parent = containers[container].pathNode
    let node = pushPath(parent: parent, key: key)
    if containers[container].count > 0, let existing = lastMember(of: container, key: name) {
      let nested = existing.container
      guard nested >= 0, containers[nested].isObject == isObject else {
        let kind = isObject ? "keyed" : "unkeyed"
        return misused(
          "a nested \(kind) container was requested for key \"\(name)\", "
            + "which holds another kind of value",
          at: node, isObject: isObject)
      }
      containers[nested].pathNode = node
      return nested
    }
    let nested = newContainer(isObject: isObject, pathNode: node)
    addMember(beginMember(name, in: container), value: .container(nested), in: container)
    return nested
  }

  /// The name of `key` in snake case. (Not inlined: it stays out of the default path's way.)
  @inline(never)
  func convertedName(_ key: some CodingKey) -> String {
    SnakeCaseKeys.snakeCased(key.stringValue)
  }
}

/// A `[String: Value]`, whose keys `JSONEncoder` writes as they are whatever the key
/// strategy: it encodes the dictionary itself rather than through the dictionary's
/// `encode(to:)`, which would hand the keys to a keyed container.
protocol StringKeyedDictionary {
  /// Encodes the members as an object whose coding path is the path node `pathNode`.
  func encodeMembers(in encoding: StoredJSONEncoder.Encoding, pathNode: Int) throws
    -> StoredJSONEncoder.Value
}

extension Dictionary: StringKeyedDictionary where Key == String, Value: Encodable {
  func encodeMembers(in encoding: StoredJSONEncoder.Encoding, pathNode: Int) throws
    -> StoredJSONEncoder.Value
  {
    let object = encoding.newContainer(isObject: true, pathNode: pathNode)
    for (key, value) in self {
      let member = encoding.beginMember(key, in: object)
      let encoded = try encoding.encode(value, at: pathNode, key: StringKey(stringValue: key))
      encoding.addMember(member, value: encoded, in: object)
    }
    return .container(object)
  }
}
