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
final class JSONObjectShape: Sendable {
  /// The keys' UTF-8, one after the other.
  let keyBytes: [UInt8]
  /// Where each key ends in `keyBytes`.
  let keyEnds: [Int]
  /// The keys, each with its place in the text's order as an `.int` (the shape holds no value
  /// of any object).
  let template: [String: JSONValue]

  var count: Int { keyEnds.count }

  /// The shape of `keys` (in text order), or nil if they repeat a key as `Dictionary`
  /// compares them (two spellings of one canonically equivalent key, say).
  init?(keys: [String]) {
    var template = [String: JSONValue](minimumCapacity: keys.count)
    var keyBytes: [UInt8] = []
    var keyEnds: [Int] = []
    keyEnds.reserveCapacity(keys.count)
    for (member, key) in keys.enumerated() {
      template[key] = .int(Int64(member))
      keyBytes.append(contentsOf: key.utf8)
      keyEnds.append(keyBytes.count)
    }
    guard template.count == keys.count else { return nil }
    self.keyBytes = keyBytes
    self.keyEnds = keyEnds
    self.template = template
  }

  /// Whether `key(member)` for each member in order gives exactly this shape's key bytes.
  @inline(__always)
  func matches(count: Int, key: (Int) -> UnsafeBufferPointer<UInt8>?) -> Bool {
    guard count == keyEnds.count else { return false }
    return keyBytes.withUnsafeBufferPointer { all in
      var start = 0
      for member in 0..<count {
        let end = keyEnds[member]
        guard let bytes = key(member), bytes.count == end - start else { return false }
        // Keys are short: a loop beats a call.
        for offset in 0..<bytes.count where bytes[offset] != all[start + offset] {
          return false
        }
        start = end
      }
      return true
    }
  }

  /// The object of this shape whose value for the key in place `member` is `value(member)`.
  @inline(__always)
  func object(_ value: (Int) -> JSONValue) -> [String: JSONValue] {
    template.mapValues { place in
      guard case .int(let member) = place else { preconditionFailure("a shape's place") }
      return value(Int(member))
    }
  }
}

/// The object shapes the reader has learned, shared by every read in the process.
///
/// A read takes the list once (under a lock), at its first object with members; it adds a
/// shape when an object of at least ``minimumMembers`` members matched none. The list is
/// short and bounded, so a process that reads objects of ever-new shapes pays for the lookup
/// and an occasional replacement, not for an ever-longer list.
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
  // Guarded by `lock`.
  private var shapes: [JSONObjectShape] = []
  private var replacements = 0

  /// The shapes known now.
  func current() -> [JSONObjectShape] {
    lock.withLock { shapes }
  }

  /// Adds `shape` unless one with the same keys is known; once the list is full, it replaces
  /// the shapes in turn, but only one offer in eight, so that a stream of new shapes cannot
  /// keep the known ones from being used.
  func learn(_ shape: JSONObjectShape) {
    lock.withLock {
      if shapes.contains(where: { $0.keyEnds == shape.keyEnds && $0.keyBytes == shape.keyBytes }) {
        return
      }
      if shapes.count < Self.capacity {
        shapes.append(shape)
        return
      }
      replacements &+= 1
      if replacements % 8 == 0 { shapes[(replacements / 8) % Self.capacity] = shape }
    }
  }

  /// Forgets every shape (for tests).
  func removeAll() {
    lock.withLock { shapes.removeAll() }
  }
}
