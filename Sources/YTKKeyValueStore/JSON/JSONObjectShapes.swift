import LogStore

/// The keys of an object, in the order its text lists them, with a dictionary of exactly those
/// keys from which an object of this shape is made without hashing a key.
///
/// Most objects a store reads share their keys with many others (the stored form of one type,
/// its keys sorted). Building such an object the usual way makes a `String` of each key and
/// hashes it into a new dictionary; most of the cost of reading an object is there. An object
/// whose keys are a known shape's, in the same order and byte for byte, is instead the shape's
/// dictionary with its values mapped (`mapValues`, which keeps the keys where they are, so no
/// key is hashed, and which shares the shape's key strings, so none is made).
///
/// The result is the same dictionary as the usual way's: the same keys, made from the same
/// bytes, with the same values.
///
/// Its storage is immutable once made, and is read without a lock from any thread.
final class JSONObjectShape: @unchecked Sendable {
  /// Where one key lies in `keyBytes`, and its first eight bytes (the first in the low byte,
  /// zeros past its end), against which most keys are matched in one comparison.
  struct Key {
    var head: UInt64
    var start: Int
    var length: Int
  }

  /// The keys, in text order.
  private let keys: UnsafeMutableBufferPointer<Key>
  /// The keys' UTF-8, one after the other, then eight bytes of padding.
  private let keyBytes: UnsafeMutableBufferPointer<UInt8>
  /// The keys, each with its place in the text's order as an `.int` (the shape holds no value
  /// of any object).
  let template: [String: JSONValue]

  /// The shape of `keys` (in text order), or nil if they repeat a key as `Dictionary`
  /// compares them (two spellings of one canonically equivalent key, say).
  init?(keys names: [String]) {
    var template = [String: JSONValue](minimumCapacity: names.count)
    for (member, key) in names.enumerated() {
      template[key] = .int(Int64(member))
    }
    guard template.count == names.count else { return nil }
    self.template = template
    // Padding, so that a key's last word can be read whole (`sameBytes`).
    let byteCount = names.reduce(0) { $0 + $1.utf8.count } + 8
    keyBytes = .allocate(capacity: byteCount)
    keyBytes.initialize(repeating: 0)
    keys = .allocate(capacity: names.count)
    var start = 0
    for (member, name) in names.enumerated() {
      let length = keyBytes[start...].initialize(from: name.utf8).index - start
      // Eight bytes can be read at any key's start: the padding follows the last.
      let word = UInt64(
        littleEndian: UnsafeRawPointer(keyBytes.baseAddress! + start).loadUnaligned(
          as: UInt64.self))
      let head = word & ByteWords.firstBytes(length)
      (keys.baseAddress! + member).initialize(to: Key(head: head, start: start, length: length))
      start += length
    }
  }

  deinit {
    keys.deallocate()
    keyBytes.deallocate()
  }

  /// Whether `other` has the same keys in the same order, byte for byte.
  func hasSameKeys(as other: JSONObjectShape) -> Bool {
    keys.count == other.keys.count
      && zip(keys, other.keys).allSatisfy { $0.start == $1.start && $0.length == $1.length }
      && keyBytes.elementsEqual(other.keyBytes)
  }

  /// Whether `key(member)` for each member in order is exactly this shape's key: the range
  /// of its bytes in `input`, nil for a key not in the input as it is.
  @inline(__always)
  func matches(
    count: Int, in input: UnsafeBufferPointer<UInt8>, key: (Int) -> Range<Int>?
  ) -> Bool {
    guard count == keys.count, let text = input.baseAddress else { return false }
    for member in 0..<count {
      let known = keys[member]
      guard let range = key(member), range.count == known.length else { return false }
      // A key's first eight bytes, where eight can be read (every key but one at the very end
      // of the input), in one comparison.
      if range.lowerBound &+ 8 <= input.count {
        let word = UInt64(
          littleEndian: UnsafeRawPointer(text + range.lowerBound).loadUnaligned(as: UInt64.self))
        guard word & ByteWords.firstBytes(known.length) == known.head else { return false }
        if known.length > 8,
          !sameBytes(input, range.lowerBound + 8..<range.upperBound, from: known.start + 8)
        {
          return false
        }
      } else if !sameBytes(input, range, from: known.start) {
        return false
      }
    }
    return true
  }

  /// Whether `input[range]` holds the bytes of `keyBytes` from `start` on. Eight bytes at a
  /// time where eight can be read from both (`keyBytes` ends in eight bytes of padding), which
  /// is every key but those at the very end of the input.
  private func sameBytes(_ input: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, from start: Int)
    -> Bool
  {
    var offset = 0
    let length = range.count
    if let text = input.baseAddress, range.lowerBound + ((length + 7) & ~7) <= input.count {
      let known = keyBytes.baseAddress!
      while offset < length {
        let a = UnsafeRawPointer(text + range.lowerBound + offset).loadUnaligned(as: UInt64.self)
        let b = UnsafeRawPointer(known + start + offset).loadUnaligned(as: UInt64.self)
        // The bytes of the word that belong to the key: all eight, or the first few.
        let mask = ByteWords.firstBytes(length - offset)
        if (UInt64(littleEndian: a) ^ UInt64(littleEndian: b)) & mask != 0 { return false }
        offset += 8
      }
      return true
    }
    while offset < length {
      if input[range.lowerBound + offset] != keyBytes[start + offset] { return false }
      offset += 1
    }
    return true
  }

  /// The object of this shape whose value for the key in place `member` is `value(member)`.
  @inline(__always)
  func object(_ value: (Int) -> JSONValue) -> [String: JSONValue] {
    // Every value of `template` is an `.int` (`init`).
    template.mapValues { place in value(place.intValue!) }
  }
}

/// The object shapes the reader has learned, shared by every read in the process.
///
/// A read takes the list once (under a lock), at its first object with members; it offers a
/// shape when an object of ``minimumMembers`` to ``maximumMembers`` members matched none. The
/// list is short and bounded, so a process that reads objects of ever-new shapes pays for the
/// lookup and an occasional replacement, not for an ever-longer list.
final class JSONObjectShapes: @unchecked Sendable {
  static let shared = JSONObjectShapes()

  /// Shapes kept at most.
  static let capacity = 32
  /// Fewer members than this gain little from a shape: objects of that size are made as
  /// usual and teach nothing.
  static let minimumMembers = 3
  /// More members than this are not learned, so that a shape stays small.
  static let maximumMembers = 64

  private let lock = ConditionLock()
  /// The list and the count of offers since it filled, guarded by `lock`. Kept behind a
  /// pointer rather than in stored properties, whose every access would also be checked at
  /// run time for exclusivity, a cost paid once per read.
  private let state: UnsafeMutablePointer<(shapes: [JSONObjectShape], replacements: Int)>

  init() {
    state = .allocate(capacity: 1)
    state.initialize(to: ([], 0))
  }

  deinit {
    state.deinitialize(count: 1)
    state.deallocate()
  }

  /// The shapes known now.
  func current() -> [JSONObjectShape] {
    lock.lock()
    defer { lock.unlock() }
    return state.pointee.shapes
  }

  /// Whether a shape just met should be offered to ``learn(_:)``: always while the list has
  /// room; once it is full, one time in eight, so that a stream of new shapes cannot keep the
  /// known ones from being used, nor cost a shape's making at every object.
  func wantsShape() -> Bool {
    lock.lock()
    defer { lock.unlock() }
    if state.pointee.shapes.count < Self.capacity { return true }
    state.pointee.replacements &+= 1
    return state.pointee.replacements % 8 == 0
  }

  /// Adds `shape` unless one with the same keys is known, replacing the shapes in turn once
  /// the list is full.
  func learn(_ shape: JSONObjectShape) {
    lock.lock()
    defer { lock.unlock() }
    let known = state.pointee.shapes.contains { $0.hasSameKeys(as: shape) }
    if known { return }
    if state.pointee.shapes.count < Self.capacity {
      state.pointee.shapes.append(shape)
    } else {
      state.pointee.shapes[(state.pointee.replacements / 8) % Self.capacity] = shape
    }
  }

  /// Forgets every shape (for tests).
  func removeAll() {
    lock.lock()
    defer { lock.unlock() }
    state.pointee.shapes.removeAll()
  }
}
