#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// Encodes an `Encodable` value straight to the stored JSON text, without Foundation's
/// `JSONEncoder`, without `Data` and without building a ``JSONValue`` on the way.
///
/// The contract is the path `put(encodable:)` took before this encoder existed:
/// `JSONEncoder` with its default strategies, then ``JSONReader``, then ``JSONWriter``. For
/// every value the bytes are the same as
/// `JSONWriter.bytes(JSONReader.parse(JSONEncoder().encode(value)))`, and `encode` throws
/// exactly when that path throws. That fixes a few things that are not obvious:
///
/// - Numbers are what `JSONEncoder`'s text reads back as. A `Double` prints as its
///   `description` with a trailing `.0` removed, so a whole double of magnitude up to 2^53
///   is stored as an integer (`1.0` as `1`) while `-0.0`, fractions and larger or smaller
///   magnitudes stay doubles. A `Float` goes through its own `description` (`Float(0.1)` is
///   stored as the double `0.1`). An integer beyond `Int64`, such as a large `UInt64`, is
///   stored as the nearest double. NaN and the infinities are an error.
/// - `Date` encodes as itself (seconds since 2001 as a `Double`), `Data` as a base64
///   string, `URL` as its `absoluteString`, `Decimal` as the number its `description` reads.
/// - A key written twice in one keyed container keeps its first spelling and its last
///   value; keys that are equal as Swift strings (canonically equivalent) are one key.
/// - A value that encodes nothing is `{}` inside a container, and an error at the top.
/// - Arrays and objects nest at most 511 deep: `JSONEncoder` refuses the 512th level, one
///   short of the reader's limit.
///
/// Where `JSONEncoder` stops the process on a misuse of the Codable containers (encoding
/// twice through one single-value container, asking for a keyed container where an
/// unkeyed one exists), this encoder throws an `EncodingError` instead.
///
/// How it works: `Encodable` may write into a container after writing into its parent
/// (containers are values the caller can keep), and object members must come out sorted,
/// so the text cannot simply be streamed. Instead every scalar is formatted once into a
/// byte arena as it arrives, and each container keeps a list of entries (key bytes and a
/// value: a span of the arena or another container) in flat arrays of plain integers. When
/// the top-level value is done, one pass copies the spans into the output in key order.
package enum StoredJSONEncoder {
  /// Returns the canonical stored JSON text of `value`.
  ///
  /// - Throws: `EncodingError.invalidValue` for a value with no JSON form (a non-finite
  ///   number, a NaN `Decimal`, nesting too deep, a top-level value that encodes nothing, a
  ///   misuse of the containers); any error that `value`'s `encode(to:)` throws, unchanged.
  package static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
    let encoding = Encoding()
    let top = try encoding.encodeTopLevel(value)
    if let misuse = encoding.misuse {
      throw EncodingError.invalidValue(
        value,
        EncodingError.Context(codingPath: misuse.codingPath, debugDescription: misuse.message))
    }
    guard top.kind != .none else {
      throw EncodingError.invalidValue(
        value,
        EncodingError.Context(
          codingPath: [], debugDescription: "Top-level \(T.self) did not encode any values."))
    }
    do {
      return try encoding.assemble(top)
    } catch {
      throw EncodingError.invalidValue(
        value, EncodingError.Context(codingPath: [], debugDescription: error.message))
    }
  }
}

extension StoredJSONEncoder {
  /// An encoded value: nothing yet, a span of finished text in the arena, or a container.
  struct Value {
    enum Kind: UInt8 {
      /// Nothing was encoded.
      case none
      /// Complete JSON text in `arena[start..<end]`: a scalar, or in an array a run of
      /// elements with the commas between them.
      case text
      /// The array or object `containers[start]`.
      case container
    }

    var kind: Kind
    var start: Int
    var end: Int

    static let none = Value(kind: .none, start: 0, end: 0)

    static func container(_ index: Int) -> Value {
      Value(kind: .container, start: index, end: 0)
    }
  }

  /// A member of an object (its key's raw UTF-8 in `arena[keyStart..<keyEnd]`) or an
  /// element of an array (no key), linked to the next one of the same container.
  struct Entry {
    var keyStart: Int
    var keyEnd: Int
    var value: Value
    /// For an array, how many elements `value` is: more than one for a run of scalars
    /// written together (an `[Int]`, say).
    var elementCount = 1
    /// The next entry of the same container, in the order they were added; -1 at the end.
    var next: Int = -1
  }

  /// A keyed (object) or unkeyed (array) container.
  struct Container {
    var isObject: Bool
    /// The path node that gives the container's coding path.
    var pathNode: Int
    var first = -1
    var last = -1
    /// Entries added, duplicates included: for an array its element count.
    var count = 0
    /// Whether some key has a non-ASCII byte, so that keys must be compared as Swift
    /// strings (canonical equivalence) rather than as bytes.
    var hasNonASCIIKey = false
  }

  /// Where one encoder's value goes, with the same three parts `JSONEncoder`'s encoders
  /// have: a keyed container, an unkeyed container or a single value. A finished value is
  /// the keyed container if there is one, else the unkeyed one, else the single value.
  struct Slot {
    var object = -1
    var array = -1
    var single = Value.none
    var pathNode: Int
    /// Tells a slot from a later one at the same stack position, so that an encoder kept
    /// past its value's end is caught rather than writing into another value.
    var serial: Int

    var value: Value {
      if object >= 0 { return .container(object) }
      if array >= 0 { return .container(array) }
      return single
    }
  }

  /// One step of a coding path: a key, or an array index (kept as an integer, made into a
  /// key only when a path is asked for), below the step `parent` (-1 for the top level).
  struct PathNode {
    var parent: Int
    var key: (any CodingKey)?
    var index: Int
  }

  /// Names a slot: an entry of the stack of values being encoded, or (negative index) one
  /// of the slots of super encoders, which live until the encoder is released.
  struct SlotReference {
    var index: Int
    var serial: Int
  }

  /// The first misuse of the containers, reported when the encoding ends.
  struct Misuse {
    var message: String
    var codingPath: [any CodingKey]
  }

  /// The state of one `encode` call, shared by every encoder and container it hands out.
  final class Encoding {
    /// Formatted scalars and raw keys, in the order they were encoded.
    var arena: [UInt8] = []
    var entries: [Entry] = []
    var containers: [Container] = []
    /// The values being encoded, outermost first; `value.encode(to:)` is running for each.
    var slots: [Slot] = []
    /// The slots of super encoders; `SlotReference(index: -1 - i)` names `detached[i]`.
    var detached: [Slot] = []
    /// The coding path steps of the values being encoded and of their containers.
    var path: [PathNode] = []
    var nextSerial = 0
    var misuse: Misuse?

    init() {
      arena.reserveCapacity(256)
      entries.reserveCapacity(16)
      containers.reserveCapacity(4)
      slots.reserveCapacity(4)
    }

    // MARK: Values

    /// Encodes the top-level value into a fresh slot and returns what it encoded.
    func encodeTopLevel<T: Encodable>(_ value: T) throws -> Value {
      if let special = try encodeSpecial(value, parent: -1, key: IndexKey?.none) {
        return special
      }
      return try encodeInNewSlot(value, pathNode: -1)
    }

    /// Encodes a value nested in a container (`key` below `parent`): the text of a type
    /// `JSONEncoder` treats specially, or whatever its `encode(to:)` writes, `{}` if nothing.
    func encodeNested<T: Encodable, Key: CodingKey>(
      _ value: T, parent: Int, key: Key
    ) throws -> Value {
      if let special = try encodeSpecial(value, parent: parent, key: key) {
        return special
      }
      let mark = path.count
      defer { path.removeLast(path.count - mark) }
      path.append(PathNode(parent: parent, key: key, index: -1))
      return try nonEmpty(encodeInNewSlot(value, pathNode: mark))
    }

    /// Encodes a value nested in an unkeyed container at `index`.
    func encodeElement<T: Encodable>(_ value: T, parent: Int, index: Int) throws -> Value {
      if let special = try encodeSpecial(value, parent: parent, key: IndexKey(index)) {
        return special
      }
      let mark = path.count
      defer { path.removeLast(path.count - mark) }
      path.append(PathNode(parent: parent, key: nil, index: index))
      return try nonEmpty(encodeInNewSlot(value, pathNode: mark))
    }

    /// Encodes a value through a single-value container: at the same coding path.
    func encodeSingle<T: Encodable>(_ value: T, pathNode: Int) throws -> Value {
      if let special = try encodeSpecial(value, parent: pathNode, key: IndexKey?.none) {
        return special
      }
      let mark = path.count
      defer { path.removeLast(path.count - mark) }
      return try nonEmpty(encodeInNewSlot(value, pathNode: pathNode))
    }

    private func encodeInNewSlot<T: Encodable>(_ value: T, pathNode: Int) throws -> Value {
      let serial = nextSerial
      nextSerial &+= 1
      let index = slots.count
      slots.append(Slot(pathNode: pathNode, serial: serial))
      defer { slots.removeLast(slots.count - index) }
      try value.encode(
        to: ValueEncoder(encoding: self, slot: SlotReference(index: index, serial: serial)))
      return slots[index].value
    }

    /// `JSONEncoder` puts `{}` wherever a nested value encodes nothing.
    private func nonEmpty(_ value: Value) -> Value {
      value.kind == .none ? .container(newContainer(isObject: true, pathNode: -1)) : value
    }

    /// The text of the types `JSONEncoder` encodes its own way rather than through their
    /// `encode(to:)`, or nil for every other type. (This is where per-store date and data
    /// strategies would choose their form.)
    func encodeSpecial<T: Encodable, Key: CodingKey>(
      _ value: T, parent: Int, key: Key?
    ) throws -> Value? {
      let start = arena.count
      if T.self == Date.self {
        // `.deferredToDate`: what Date's own encode(to:) writes.
        let seconds = (value as! Date).timeIntervalSinceReferenceDate
        try appendNumber(seconds, parent: parent, key: key)
      } else if T.self == URL.self {
        JSONWriter.appendString((value as! URL).absoluteString, into: &arena)
      } else if T.self == Data.self {
        appendBase64((value as! Data), into: &arena)
      } else if T.self == Decimal.self {
        try appendDecimal(value as! Decimal, parent: parent, key: key)
      } else if let kind = DirectArray.kind(of: T.self) {
        return try encodeDirectArray(value, kind: kind, parent: parent, key: key)
      } else {
        return nil
      }
      return Value(kind: .text, start: start, end: arena.count)
    }

    // MARK: Containers

    func newContainer(isObject: Bool, pathNode: Int) -> Int {
      containers.append(Container(isObject: isObject, pathNode: pathNode))
      return containers.count - 1
    }

    /// Adds `value` under `key` to the object `container`.
    func addMember(_ container: Int, key: String, value: Value) {
      let keyStart = arena.count
      var key = key
      let isASCII = key.withUTF8 { utf8 in
        arena.append(contentsOf: utf8)
        var bits: UInt8 = 0
        for byte in utf8 { bits |= byte }
        return bits < 0x80
      }
      if !isASCII { containers[container].hasNonASCIIKey = true }
      link(Entry(keyStart: keyStart, keyEnd: arena.count, value: value), to: container)
    }

    /// Adds `value` as the last element of the array `container`, or as its last
    /// `elementCount` elements for a run of scalars.
    func addElement(_ container: Int, value: Value, elementCount: Int = 1) {
      link(Entry(keyStart: 0, keyEnd: 0, value: value, elementCount: elementCount), to: container)
    }

    private func link(_ entry: Entry, to container: Int) {
      let index = entries.count
      entries.append(entry)
      let last = containers[container].last
      if last >= 0 {
        entries[last].next = index
      } else {
        containers[container].first = index
      }
      containers[container].last = index
      containers[container].count += entry.elementCount
    }

    /// Inserts `value` as element `position` of the array `container`, as a super encoder
    /// for an unkeyed container does when it is released. `position` is a count the
    /// container once had, so it falls between entries, never inside a run.
    func insertElement(_ container: Int, at position: Int, value: Value) {
      var entry = Entry(keyStart: 0, keyEnd: 0, value: value)
      let index = entries.count
      var previous = -1
      var next = containers[container].first
      var before = 0
      while next >= 0, before < position {
        before += entries[next].elementCount
        previous = next
        next = entries[next].next
      }
      entry.next = next
      entries.append(entry)
      if previous >= 0 {
        entries[previous].next = index
      } else {
        containers[container].first = index
      }
      if next < 0 { containers[container].last = index }
      containers[container].count += 1
    }

    /// The value of the last member of `container` whose key equals `key` as a Swift string.
    func lastMember(of container: Int, key: String) -> Value? {
      var found: Value?
      var keyCopy = key
      keyCopy.withUTF8 { utf8 in
        let keyIsASCII = utf8.allSatisfy { $0 < 0x80 }
        arena.withUnsafeBufferPointer { arena in
          var index = containers[container].first
          while index >= 0 {
            let entry = entries[index]
            let candidate = UnsafeBufferPointer(rebasing: arena[entry.keyStart..<entry.keyEnd])
            if candidate.elementsEqual(utf8) {
              found = entry.value
            } else if !keyIsASCII || !candidate.allSatisfy({ $0 < 0x80 }),
              String(decoding: candidate, as: UTF8.self) == key
            {
              found = entry.value
            }
            index = entry.next
          }
        }
      }
      return found
    }

    // MARK: Slots

    func slot(_ reference: SlotReference) -> Slot? {
      if reference.index < 0 { return detached[-1 - reference.index] }
      guard reference.index < slots.count, slots[reference.index].serial == reference.serial
      else { return nil }
      return slots[reference.index]
    }

    func setSlot(_ reference: SlotReference, _ slot: Slot) {
      if reference.index < 0 {
        detached[-1 - reference.index] = slot
      } else {
        slots[reference.index] = slot
      }
    }

    /// The keyed container of the encoder whose value goes to `reference`, made on the first
    /// request; `JSONEncoder` rules for what may already be there.
    func keyedContainer(in reference: SlotReference) -> Int {
      guard var slot = slot(reference) else {
        return misused("an Encoder was used after the value it encodes was finished", at: -1)
      }
      if slot.object >= 0 { return slot.object }
      if slot.array < 0, slot.single.kind == .none {
        slot.object = newContainer(isObject: true, pathNode: slot.pathNode)
      } else if slot.array < 0, isObject(slot.single) {
        // A value encoded as an object through the single-value container: go on with it.
        slot.object = slot.single.start
        slot.single = .none
        containers[slot.object].pathNode = slot.pathNode
      } else {
        return misused(
          "a keyed container was requested where a value was already encoded",
          at: slot.pathNode)
      }
      setSlot(reference, slot)
      return slot.object
    }

    /// The unkeyed container of the encoder whose value goes to `reference`.
    func unkeyedContainer(in reference: SlotReference) -> Int {
      guard var slot = slot(reference) else {
        return misused("an Encoder was used after the value it encodes was finished", at: -1)
      }
      if slot.array >= 0 { return slot.array }
      if slot.object < 0, slot.single.kind == .none {
        slot.array = newContainer(isObject: false, pathNode: slot.pathNode)
      } else if slot.object < 0, isArray(slot.single) {
        slot.array = slot.single.start
        slot.single = .none
        containers[slot.array].pathNode = slot.pathNode
      } else {
        return misused(
          "an unkeyed container was requested where a value was already encoded",
          at: slot.pathNode)
      }
      setSlot(reference, slot)
      return slot.array
    }

    /// Records what a single-value container encoded.
    func setSingle(_ value: Value, in reference: SlotReference) {
      guard var slot = slot(reference) else {
        _ = misused("an Encoder was used after the value it encodes was finished", at: -1)
        return
      }
      guard slot.single.kind == .none else {
        _ = misused(
          "a single-value container was asked to encode a second value", at: slot.pathNode)
        return
      }
      slot.single = value
      setSlot(reference, slot)
    }

    func pathNode(of reference: SlotReference) -> Int {
      slot(reference)?.pathNode ?? -1
    }

    func isObject(_ value: Value) -> Bool {
      value.kind == .container && containers[value.start].isObject
    }

    func isArray(_ value: Value) -> Bool {
      value.kind == .container && !containers[value.start].isObject
    }

    /// Notes a misuse (the first one is thrown when the encoding ends) and returns a
    /// container that nothing refers to, for the caller to write into harmlessly.
    func misused(_ message: String, at pathNode: Int, isObject: Bool = true) -> Int {
      if misuse == nil {
        misuse = Misuse(message: message, codingPath: codingPath(at: pathNode))
      }
      return newContainer(isObject: isObject, pathNode: pathNode)
    }

    // MARK: Coding paths

    /// The coding path that ends at `node`.
    func codingPath(at node: Int) -> [any CodingKey] {
      var keys: [any CodingKey] = []
      var node = node
      // A container kept past its value's end may name a node that is gone; stop there.
      while node >= 0, node < path.count {
        let step = path[node]
        keys.append(step.key ?? IndexKey(step.index))
        node = step.parent
      }
      return keys.reversed()
    }

    func codingPath(at node: Int, appending key: (some CodingKey)?) -> [any CodingKey] {
      var keys = codingPath(at: node)
      if let key { keys.append(key) }
      return keys
    }

    /// Adds a path step for a nested container or super encoder; it lasts as long as the
    /// value being encoded.
    func pushPath(parent: Int, key: some CodingKey) -> Int {
      path.append(PathNode(parent: parent, key: key, index: -1))
      return path.count - 1
    }
  }
}

/// The coding key of an array element, as `JSONEncoder` makes it: "Index 3", int value 3.
struct IndexKey: CodingKey {
  var index: Int

  init(_ index: Int) {
    self.index = index
  }

  init?(stringValue: String) {
    return nil
  }

  init?(intValue: Int) {
    self.index = intValue
  }

  var stringValue: String { "Index \(index)" }
  var intValue: Int? { index }
}

/// A coding key with a given string, for `superEncoder()`'s "super".
struct StringKey: CodingKey {
  var stringValue: String

  init(stringValue: String) {
    self.stringValue = stringValue
  }

  init?(intValue: Int) {
    return nil
  }

  var intValue: Int? { nil }

  static let `super` = StringKey(stringValue: "super")
}
