/// Decodes `Decodable` values straight from JSON text, giving what Foundation's
/// `JSONDecoder` (with its default strategies) gives for the same text, only faster.
///
/// ```swift
/// struct Profile: Codable { var id: Int; var name: String }
/// let text = Array(#"{"id":1,"name":"tangqiao"}"#.utf8)
/// let profile = try StoredJSONDecoder.decode(Profile.self, from: text)
/// ```
///
/// The text is read once by ``JSONReader``'s scanner, which checks it all (so a fault
/// anywhere is reported even where `T` would not look) and records a ``JSONTape``: where
/// each value's text lies and where each container ends. Decoding then walks the tape;
/// strings and numbers are converted only when asked for, straight from the text, to the
/// type asked for. One decoding state serves the whole call: the decoders and containers
/// handed to `init(from:)` are small values that point into it, and object keys are found by
/// comparing the key's UTF-8 with the text, without making strings.
///
/// What is read, and what is an error, follows `JSONDecoder`:
///
/// - Text the reader rejects throws `DecodingError.dataCorrupted` whose debug description is
///   the reader's message (with its byte offset) and whose underlying error is the
///   ``JSONCodecError``.
/// - Integers read from integer text that fits the type, and from other number text whose
///   double is a whole number that fits (`1.0`, `1e2`; and, as `JSONDecoder` does, beyond
///   2^53 by way of `Decimal`). Floating-point types read the nearest value of the text
///   itself (a `Float` is not rounded through a `Double`); a nonzero number that rounds to
///   zero is an error, as is one that is too large. A number that does not fit is
///   `dataCorrupted`, at the value's coding path.
/// - `Bool` reads only `true` and `false`; JSON `null` where a value is required is
///   `valueNotFound`, except for `Bool`, where it is `typeMismatch`, as in `JSONDecoder`.
/// - `Date` reads seconds since 2001 (`.deferredToDate`), `Data` base64 text, `URL` a string
///   that `URL(string:)` accepts, `Decimal` number text. Other ``CodingStrategies`` read
///   what `JSONDecoder` reads with the strategies of the same names (with `.snakeCase`, keys
///   match after conversion from snake case; a `[String: Value]`'s keys are not converted).
/// - An object that repeats a key decodes with the key's first value, and keys match as
///   Swift strings do (so `"\u212A"`, the Kelvin sign, is the key `K`).
package enum StoredJSONDecoder {
  /// Decodes a `T` from the JSON text in `bytes`, read with `strategies` (by default
  /// `JSONDecoder`'s).
  ///
  /// - Throws: `DecodingError`, or an error thrown by an `init(from:)`.
  package static func decode<T: Decodable>(
    _ type: T.Type, from bytes: UnsafeRawBufferPointer,
    strategies: CodingStrategies = CodingStrategies()
  ) throws -> T {
    let outcome: Result<T, any Error>
    do {
      outcome = try JSONTape.withTape(of: bytes) { tape in
        var document = Document(input: JSONReader.uint8s(bytes), tape: tape, strategies: strategies)
        // A decoder or container kept by an `init(from:)` outlives this call and the memory it
        // reads, so the document then keeps copies of the text and the tape.
        defer {
          if !isKnownUniquelyReferenced(&document) { document.keepMemory() }
        }
        return Result { try document.decode(T.self, at: 0, path: .top, key: NoKey()) }
      }
    } catch {
      throw DecodingError.dataCorrupted(
        DecodingError.Context(
          codingPath: [], debugDescription: error.message, underlyingError: error))
    }
    return try outcome.get()
  }

  /// Decodes a `T` from the JSON text in `bytes`, read with `strategies`.
  package static func decode<T: Decodable>(
    _ type: T.Type, from bytes: [UInt8], strategies: CodingStrategies = CodingStrategies()
  ) throws -> T {
    try bytes.withUnsafeBytes { try decode(type, from: $0, strategies: strategies) }
  }
}

// MARK: - The decoding state

extension StoredJSONDecoder {
  /// The text and its tape, and what decoding learns along the way; shared by every decoder
  /// and container of one call.
  final class Document {
    /// The JSON text: the caller's memory, or after `keepMemory()` a copy of it.
    private(set) var input: UnsafeBufferPointer<UInt8>
    /// The scan of `input`, with one more entry at the end: a `null` that stands for a member
    /// that is not there (``missingValue``).
    private(set) var tape: UnsafeMutableBufferPointer<JSONTapeEntry>
    /// Whether `input` and `tape` are copies this document deallocates.
    private var ownsMemory = false
    /// The object of the last member found, and the key after that member: objects are
    /// usually read in the order their keys come.
    var lastObject = -1
    var keyAfterLast = 0
    /// The first value of each distinct key of large objects and of those whose keys are not
    /// simple, made when one is first searched (or its keys listed); with `.snakeCase`, of
    /// every object, by converted keys.
    var memberTables: [Int: [String: Int]] = [:]
    /// The coding paths of the nested values decoded so far, as a tree: each entry is a key
    /// and the entry of the path it extends (-1: the top). A nested value's decoder names its
    /// path by an entry, so that paths cost no allocation of their own; a decoder kept past
    /// its value still names the right one, as entries are never removed.
    var paths: [(key: any CodingKey, parent: Int)] = []
    let strategies: CodingStrategies
    /// Whether keys are converted from snake case; read for every member, so kept apart.
    let convertsKeys: Bool

    /// `tape` is the scan of `input`, ending with the `null` of ``missingValue``.
    init(
      input: UnsafeBufferPointer<UInt8>, tape: UnsafeMutableBufferPointer<JSONTapeEntry>,
      strategies: CodingStrategies
    ) {
      self.input = input
      self.tape = tape
      self.strategies = strategies
      convertsKeys = strategies.keys == .snakeCase
    }

    deinit {
      if ownsMemory {
        input.deallocate()
        tape.deallocate()
      }
    }

    /// Copies the text and the tape, for decoders that outlive the call.
    func keepMemory() {
      guard !ownsMemory else { return }
      let inputCopy = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: input.count)
      _ = inputCopy.initialize(fromContentsOf: input)
      let tapeCopy = UnsafeMutableBufferPointer<JSONTapeEntry>.allocate(capacity: tape.count)
      _ = tapeCopy.initialize(fromContentsOf: tape)
      input = UnsafeBufferPointer(inputCopy)
      tape = tapeCopy
      ownsMemory = true
    }

    // MARK: Coding paths

    /// The path `path` with `key` added (nothing for ``NoKey``).
    @inline(__always)
    func path<Key: CodingKey>(_ path: CodingPath, appending key: Key) -> CodingPath {
      if Key.self == NoKey.self { return path }
      paths.append((key, path.entry))
      return CodingPath(entry: paths.count - 1)
    }

    /// The keys of `path`, outermost first.
    func codingPath(_ path: CodingPath) -> [any CodingKey] {
      var keys: [any CodingKey] = []
      var entry = path.entry
      while entry >= 0 {
        keys.append(paths[entry].key)
        entry = paths[entry].parent
      }
      keys.reverse()
      return keys
    }

    /// The context of an error at `path`, which `message` describes.
    func errorContext(at path: CodingPath, _ message: String) -> DecodingError.Context {
      DecodingError.Context(codingPath: codingPath(path), debugDescription: message)
    }

    // MARK: Walking the tape

    /// The index of a `null` entry that stands for a value that is not in the document.
    var missingValue: Int { tape.count - 1 }

    /// The index of the entry after the value at `index` and everything nested in it.
    @inline(__always)
    func entry(after index: Int) -> Int {
      let entry = tape[index]
      return entry.isContainer ? entry.second : index + 1
    }

    /// The tape indices of the keys of the object at `object`, in document order (the value
    /// of each is the entry after it).
    func keyIndices(of object: Int) -> UnfoldSequence<Int, Int> {
      let end = tape[object].second
      return sequence(state: object + 1) { key in
        guard key < end else { return nil }
        defer { key = self.entry(after: key + 1) }
        return key
      }
    }

    /// The value's kind as `JSONDecoder`'s messages name it.
    func kindDescription(at index: Int) -> String {
      switch tape[index].kind {
      case .null: return "null"
      case .true, .false: return "bool"
      case .number: return "number"
      case .string: return "a string"
      case .array: return "an array"
      case .object: return "a dictionary"
      }
    }

    /// The text of the string or number entry at `index` (a string's without its quotes).
    func text(at index: Int) -> UnsafeBufferPointer<UInt8> {
      UnsafeBufferPointer(rebasing: input[tape[index].first..<tape[index].second])
    }

    /// The same text, as the engine's byte comparisons (`bytesEqual`, `bytesPrecede`) take it.
    @inline(__always)
    func bytes(at index: Int) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(text(at: index)) }

    /// The string entry at `index` (a value or a key), decoded.
    func decodedString(at index: Int) -> String {
      let entry = tape[index]
      if entry.flags & JSONTapeEntry.Flags.hasEscapes == 0 {
        return String(decoding: text(at: index), as: UTF8.self)
      }
      var scanner = JSONScanner(input: input, position: entry.first - 1)
      return String(unsafeUninitializedCapacity: entry.second - entry.first) { buffer in
        // Read once already; the buffer has room for all of it.
        try! scanner.scanStringText(into: UnsafeMutableRawBufferPointer(buffer)).written!
      }
    }

    // MARK: Object members

    /// Objects with at most this many members, all simple, are searched key by key; others in
    /// a table of their keys.
    static let linearSearchLimit = 16

    /// The index of the value of the member named `name` in the object at `object`, or nil.
    ///
    /// Keys match as Swift strings do, and a repeated key's first value is found, as with
    /// `JSONDecoder` (whose containers are dictionaries made member by member, keeping the
    /// first). When the object's keys are simple (``JSONTapeEntry/Flags/keysAreSimple``, as
    /// in the stored form) and `name` is ASCII, comparing bytes gives the same answer.
    @inline(__always)
    func member(named name: String, in object: Int) -> Int? {
      if !convertsKeys, tape[object].first <= Self.linearSearchLimit, checkKeys(of: object) {
        var nameIsASCII = false
        let found = name.withUTF8Bytes { utf8 in
          nameIsASCII = utf8.allSatisfy { $0 < 0x80 }
          return nameIsASCII ? simpleMember(utf8, in: object) : nil
        }
        if nameIsASCII { return found }
      }
      return memberTable(of: object)[name]
    }

    /// Whether the keys of the object at `object` are simple; worked out on first use.
    func checkKeys(of object: Int) -> Bool {
      let flags = tape[object].flags
      if flags & JSONTapeEntry.Flags.keysChecked != 0 {
        return flags & JSONTapeEntry.Flags.keysAreSimple != 0
      }
      var simple = true
      var previous = -1
      let notSimple = JSONTapeEntry.Flags.hasEscapes | JSONTapeEntry.Flags.hasNonASCII
      for key in keyIndices(of: object) {
        if tape[key].flags & notSimple != 0
          || (previous >= 0 && !bytesPrecede(bytes(at: previous), bytes(at: key)))
        {
          simple = false
          break
        }
        previous = key
      }
      tape[object].flags |=
        JSONTapeEntry.Flags.keysChecked | (simple ? JSONTapeEntry.Flags.keysAreSimple : 0)
      return simple
    }

    /// Finds `name` (ASCII) among the simple keys of a small object, starting after the last
    /// member found, since members are usually read in order.
    func simpleMember(_ name: UnsafeRawBufferPointer, in object: Int) -> Int? {
      let count = tape[object].first
      let end = tape[object].second
      let first = object + 1
      var key = lastObject == object && keyAfterLast < end ? keyAfterLast : first
      // One pass over the keys at most, wrapping around from the end to the first key.
      for _ in 0..<count {
        if key == end { key = first }
        if bytesEqual(bytes(at: key), name) {
          lastObject = object
          keyAfterLast = entry(after: key + 1)
          return key + 1
        }
        key = entry(after: key + 1)
      }
      return nil
    }

    /// The first value of each distinct key (as Swift strings compare them) of the object at
    /// `object`, by its key converted from snake case with `.snakeCase`, as `JSONDecoder`
    /// finds members (where two keys are equal, or convert to the same, the first); made on
    /// first use. (Not inlined: it stays out of the default path's way.)
    @inline(never)
    func memberTable(of object: Int) -> [String: Int] {
      if let table = memberTables[object] { return table }
      var table: [String: Int] = [:]
      table.reserveCapacity(tape[object].first)
      for key in keyIndices(of: object) {
        var name = decodedString(at: key)
        if convertsKeys { name = SnakeCaseKeys.camelCased(name) }
        if table[name] == nil { table[name] = key + 1 }
      }
      memberTables[object] = table
      return table
    }

  }
}
