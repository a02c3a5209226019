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
///   Other ``CodingStrategies`` give what `JSONEncoder` gives with the strategies of the
///   same names: dates as seconds or milliseconds since 1970 or ISO 8601 text, `Data` as an
///   array of bytes, keys of keyed containers in snake case (not a `[String: Value]`'s).
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
/// so the text cannot simply be streamed. Instead each member is written once, as it
/// arrives, into a byte arena as the text it will have in the output (`"key":value`), and
/// each container keeps a list of entries (spans of the arena, and the containers nested
/// in them) in flat arrays of plain integers. When the top-level value is done, one pass
/// copies the spans into the output, objects' members in key order.
package enum StoredJSONEncoder {
  /// Returns the canonical stored JSON text of `value`, written with `strategies` (by
  /// default `JSONEncoder`'s).
  ///
  /// - Throws: `EncodingError.invalidValue` for a value with no JSON form (a non-finite
  ///   number, a NaN `Decimal`, nesting too deep, a top-level value that encodes nothing, a
  ///   misuse of the containers); any error that `value`'s `encode(to:)` throws, unchanged.
  package static func encode<T: Encodable>(
    _ value: T, strategies: CodingStrategies = CodingStrategies()
  ) throws -> [UInt8] {
    let encoding = Encoding(strategies: strategies)
    let top = try encoding.encode(value, at: -1, isTopLevel: true)
    func invalid(_ message: String, at codingPath: [any CodingKey] = []) -> EncodingError {
      .invalidValue(value, EncodingError.Context(codingPath: codingPath, debugDescription: message))
    }
    if let misuse = encoding.misuse { throw invalid(misuse.message, at: misuse.codingPath) }
    if case .nothing = top { throw invalid("Top-level \(T.self) did not encode any values.") }
    guard let bytes = encoding.assemble(top) else {
      throw invalid("JSON arrays and objects cannot nest deeper than \(maximumDepth) levels")
    }
    return bytes
  }

  /// The deepest nesting `JSONEncoder` writes: it refuses an array or object at level 512,
  /// one level short of what the reader accepts.
  static let maximumDepth = JSONReader.maximumDepth - 1
}

extension StoredJSONEncoder {
  /// An encoded value.
  enum Value {
    /// Nothing was encoded.
    case nothing
    /// Complete JSON text (a scalar) in `arena[start..<end]`.
    case text(start: Int, end: Int)
    /// The array or object `containers[index]`.
    case container(Int)
  }

  /// A member of an object or an element of an array, linked to the next one of the same
  /// container.
  ///
  /// Its text, `arena[textStart..<textEnd]`, is copied to the output as it is: `"key":`
  /// then, unless the value is a container, the value's text; for an element, the value's
  /// text (for a run of scalars written together, such as an `[Int]`, all of them with the
  /// commas between). The container, if any, follows the text.
  struct Entry {
    /// The key's raw UTF-8, `arena[keyStart..<keyEnd]`, which orders the members (inside
    /// the quotes of the text when the key needs no escapes).
    var keyStart = 0
    var keyEnd = 0
    var textStart: Int
    /// Where the value's text starts: after `"key":`, or at `textStart` for an element.
    var valueStart: Int
    var textEnd: Int
    /// The array or object after the text, or -1.
    var container = -1
    /// For an array, how many elements the entry is (more than one for a run of scalars).
    var elementCount = 1
    /// The next entry of the same container, in the order they were added; -1 at the end.
    var next = -1
  }

  /// A keyed (object) or unkeyed (array) container.
  struct Container {
    var isObject: Bool
    /// Whether some key has a non-ASCII byte, so that keys must be compared as Swift
    /// strings (canonical equivalence) rather than as bytes.
    var hasNonASCIIKey = false
    /// The path node that gives the container's coding path.
    var pathNode: Int
    var first = -1
    var last = -1
    /// Entries added, duplicates included; for an array, its element count.
    var count = 0
  }

  /// Where one encoder's value goes, with the same three parts `JSONEncoder`'s encoders
  /// have: a keyed container, an unkeyed container or a single value. A finished value is
  /// the keyed container if there is one, else the unkeyed one, else the single value.
  struct Slot {
    var object = -1
    var array = -1
    var single = Value.nothing
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

  /// A value of a type encoded specially that has no JSON form; the caller, which knows
  /// where it was, makes the `EncodingError`.
  struct InvalidValue: Error {
    var value: any Sendable
    var message: String
    /// The element of an array that is invalid, if it is one.
    var index: Int?
  }

  /// The state of one `encode` call, shared by every encoder and container it hands out.
  ///
  /// The properties opt out of the runtime's exclusivity checks, which otherwise cost a
  /// call into the runtime on every append (a class's stored properties are checked
  /// dynamically). That is sound because no access overlaps another to the same property:
  /// no method here calls out to user code (`encode(to:)`, a key's `stringValue`) while it
  /// holds an `inout` access or a buffer pointer, and one encoding runs on one thread.
  final class Encoding {
    typealias Value = StoredJSONEncoder.Value
    typealias Entry = StoredJSONEncoder.Entry
    typealias Slot = StoredJSONEncoder.Slot
    typealias SlotReference = StoredJSONEncoder.SlotReference
    typealias InvalidValue = StoredJSONEncoder.InvalidValue

    /// The members' and elements' text, in the order it was encoded, and keys' raw bytes.
    @exclusivity(unchecked) var arena = JSONOutput(capacity: 256)
    @exclusivity(unchecked) var entries: [Entry] = []
    @exclusivity(unchecked) var containers: [Container] = []
    /// The values being encoded, outermost first; `value.encode(to:)` is running for each.
    @exclusivity(unchecked) var slots: [Slot] = []
    /// The slots of super encoders; `SlotReference(index: -1 - i)` names `detached[i]`.
    @exclusivity(unchecked) var detached: [Slot] = []
    /// The coding path steps of the values being encoded and of their containers.
    @exclusivity(unchecked) var path: [PathNode] = []
    var nextSerial = 0
    var misuse: Misuse?
    let strategies: CodingStrategies
    /// Whether keys are converted (`.snakeCase`); read for every member, so kept apart.
    let convertsKeys: Bool

    init(strategies: CodingStrategies) {
      self.strategies = strategies
      convertsKeys = strategies.keys == .snakeCase
      entries.reserveCapacity(16)
      containers.reserveCapacity(4)
    }

    deinit {
      arena.release()
    }

    // MARK: Values

    /// Encodes `value` at the path node `pathNode`, or with a `key` or an `index` (a nested
    /// member's or element's) at a new node for it below that one: the text of a type
    /// `JSONEncoder` treats specially, or whatever its `encode(to:)` writes into a fresh slot.
    /// Below the top a value that encodes nothing is `{}`, as `JSONEncoder` makes it; at the
    /// top (`isTopLevel`) that is an error, which the caller reports.
    func encode<T: Encodable>(
      _ value: T, at pathNode: Int, key: (any CodingKey)? = nil, index: Int = -1,
      isTopLevel: Bool = false
    ) throws -> Value {
      let isNested = key != nil || index >= 0
      do {
        if let special = try encodeSpecial(value) { return special }
      } catch {
        var path = codingPath(at: pathNode)
        if isNested { path.append(key ?? IndexKey(index)) }
        if let index = error.index { path.append(IndexKey(index)) }
        throw EncodingError.invalidValue(
          error.value, EncodingError.Context(codingPath: path, debugDescription: error.message))
      }
      let mark = path.count
      // One step at a time: usually there is one, and `removeLast(_:)` costs more than a
      // loop for a few.
      defer {
        while path.count > mark { path.removeLast() }
      }
      if isNested { path.append(PathNode(parent: pathNode, key: key, index: index)) }
      let encoded = try encodeInNewSlot(value, pathNode: isNested ? mark : pathNode)
      guard case .nothing = encoded, !isTopLevel else { return encoded }
      return .container(newContainer(isObject: true, pathNode: -1))
    }

    private func encodeInNewSlot<T: Encodable>(_ value: T, pathNode: Int) throws -> Value {
      // As with `JSONEncoder`, a key strategy leaves the keys of a `[String: Value]` alone
      // (its own encode(to:) would make them keys of a keyed container). The value is cast,
      // not its type, as `JSONEncoder` casts it: an optional dictionary counts too.
      if convertsKeys, let dictionary = value as? any StringKeyedDictionary {
        return try dictionary.encodeMembers(in: self, pathNode: pathNode)
      }
      let serial = nextSerial
      nextSerial &+= 1
      let index = slots.count
      slots.append(Slot(pathNode: pathNode, serial: serial))
      defer {
        while slots.count > index { slots.removeLast() }
      }
      let reference = SlotReference(index: index, serial: serial)
      try value.encode(to: ValueEncoder(encoding: self, slot: reference))
      return slots[index].value
    }

    /// The text `write` appends to the arena, as a value.
    func text(_ write: (inout JSONOutput) -> Void) -> Value {
      let start = arena.count
      write(&arena)
      return .text(start: start, end: arena.count)
    }

    // MARK: Containers

    func newContainer(isObject: Bool, pathNode: Int) -> Int {
      containers.append(Container(isObject: isObject, pathNode: pathNode))
      return containers.count - 1
    }

    /// Writes the text `"key":` of a member of the object `container` about to be written,
    /// after the key's raw bytes if escaping changes them (the raw bytes order the members).
    /// Returns the member's entry so far, for `addMember`.
    func beginMember(_ key: String, in container: Int) -> Entry {
      if let member = key.utf8.withContiguousStorageIfAvailable({
        beginMember(utf8: $0, in: container)
      }) {
        return member
      }
      var key = key
      return key.withUTF8 { beginMember(utf8: $0, in: container) }
    }

    private func beginMember(utf8: UnsafeBufferPointer<UInt8>, in container: Int) -> Entry {
      // One pass for both questions: is it ASCII, does it need escapes?
      var bits: UInt8 = 0
      var needsEscapes = false
      for byte in utf8 {
        bits |= byte
        if JSONWriter.mustEscape(byte) { needsEscapes = true }
      }
      if bits >= 0x80 { containers[container].hasNonASCIIKey = true }
      var member: Entry
      if !needsEscapes {
        // `"key":`, the raw key inside the quotes.
        let textStart = arena.count
        arena.reserve(utf8.count &+ 3)
        arena.append(JSONByte.quote)
        arena.append(contentsOf: utf8)
        member = Entry(
          keyStart: textStart &+ 1, keyEnd: arena.count, textStart: textStart, valueStart: 0,
          textEnd: 0)
      } else {
        // The raw key, then `"escaped":`.
        let keyStart = arena.count
        arena.append(contentsOf: utf8)
        let textStart = arena.count
        arena.append(JSONByte.quote)
        arena.appendEscaped(utf8)
        member = Entry(
          keyStart: keyStart, keyEnd: textStart, textStart: textStart, valueStart: 0, textEnd: 0)
      }
      arena.append(JSONByte.quote)
      arena.append(JSONByte.colon)
      member.valueStart = arena.count
      member.textEnd = arena.count
      return member
    }

    /// Adds to the object `container` the member `beginMember` began, with `value`, encoded
    /// since.
    func addMember(_ key: Entry, value: Value, in container: Int) {
      var member = key
      switch value {
      case .container(let index):
        member.container = index
      case .text(let start, let end) where start == member.valueStart:
        member.textEnd = end
      case .text(let start, let end):
        // Something else was written between the key and the value: copy both to the end.
        member.textStart = arena.count
        arena.appendCopy(from: key.textStart, to: key.valueStart)
        member.valueStart = arena.count
        arena.appendCopy(from: start, to: end)
        member.textEnd = arena.count
      case .nothing:
        break
      }
      link(member, after: containers[container].last, in: container)
    }

    /// Adds `value` as the last element of the array `container`, or as its last
    /// `elementCount` elements for a run of scalars.
    func addElement(_ value: Value, in container: Int, elementCount: Int = 1) {
      link(
        element(value, elementCount: elementCount), after: containers[container].last,
        in: container)
    }

    /// Inserts `value` as element `position` of the array `container`, as a super encoder
    /// for an unkeyed container does when it is released. `position` is a count the
    /// container once had, so it falls between entries, never inside a run.
    func insertElement(_ value: Value, at position: Int, in container: Int) {
      var previous = -1
      var next = containers[container].first
      var before = 0
      while next >= 0, before < position {
        before += entries[next].elementCount
        previous = next
        next = entries[next].next
      }
      var element = element(value)
      element.next = next
      link(element, after: previous, in: container)
    }

    private func element(_ value: Value, elementCount: Int = 1) -> Entry {
      var element = Entry(textStart: 0, valueStart: 0, textEnd: 0, elementCount: elementCount)
      switch value {
      case .container(let index):
        element.container = index
      case .text(let start, let end):
        (element.textStart, element.valueStart, element.textEnd) = (start, start, end)
      case .nothing:
        break
      }
      return element
    }

    /// Links `entry` into `container` after the entry `previous`, or first if that is -1.
    /// The entry's `next` must be the entry that follows it there (-1 at the end).
    private func link(_ entry: Entry, after previous: Int, in container: Int) {
      let index = entries.count
      entries.append(entry)
      if previous >= 0 {
        entries[previous].next = index
      } else {
        containers[container].first = index
      }
      if entry.next < 0 { containers[container].last = index }
      containers[container].count += entry.elementCount
    }

    /// The last member of `container` whose key equals `key` as a Swift string.
    func lastMember(of container: Int, key: String) -> Entry? {
      var found: Entry?
      var index = containers[container].first
      while index >= 0 {
        let entry = entries[index]
        let candidate = UnsafeBufferPointer(rebasing: arena.contents[entry.keyStart..<entry.keyEnd])
        if String(decoding: candidate, as: UTF8.self) == key { found = entry }
        index = entry.next
      }
      return found
    }
  }
}

/// The coding key of an array element, as `JSONEncoder` and `JSONDecoder` make it: "Index 3",
/// int value 3. The string is made only when asked for, which is rare: both coders make such
/// keys for every element, in case of an error.
struct IndexKey: CodingKey {
  var index: Int

  init(_ index: Int) { self.index = index }
  init?(stringValue: String) { nil }
  init?(intValue: Int) { self.index = intValue }

  var stringValue: String { "Index \(index)" }
  var intValue: Int? { index }
}

/// A coding key with a given string, for `superEncoder()`'s and `superDecoder()`'s "super".
struct StringKey: CodingKey {
  var stringValue: String

  init(stringValue: String) { self.stringValue = stringValue }
  init?(intValue: Int) { nil }

  var intValue: Int? { nil }

  static let `super` = StringKey(stringValue: "super")
}
