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
  /// The keys' UTF-8, one after the other, then eight bytes of padding.
  let keyBytes: [UInt8]
  /// Where each key ends in `keyBytes`.
  let keyEnds: [Int]
  /// The keys, each with its place in the text's order as an `.int` (the shape holds no value
  /// of any object).
  let template: [String: JSONValue]

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
    // Padding, so that a key's last word can be read whole (`sameBytes`).
    keyBytes.append(contentsOf: repeatElement(0, count: 8))
    self.keyBytes = keyBytes
    self.keyEnds = keyEnds
    self.template = template
  }

  /// Whether `key(member)` for each member in order is exactly this shape's key: the range
  /// of its bytes in `input`, nil for a key not in the input as it is.
  @inline(__always)
  func matches(
    count: Int, in input: UnsafeBufferPointer<UInt8>, key: (Int) -> Range<Int>?
  ) -> Bool {
    guard count == keyEnds.count else { return false }
    return keyBytes.withUnsafeBufferPointer { all in
      keyEnds.withUnsafeBufferPointer { ends in
        var start = 0
        for member in 0..<count {
          let end = ends[member]
          guard let range = key(member), range.count == end - start,
            Self.sameBytes(input, range, all, start)
          else { return false }
          start = end
        }
        return true
      }
    }
  }

  /// Whether `input[range]` holds the bytes of `keys` from `start` on. Eight bytes at a time
  /// where eight can be read from both (`keyBytes` ends in eight bytes of padding), which is
  /// every key but those at the very end of the input.
  @inline(__always)
  private static func sameBytes(
    _ input: UnsafeBufferPointer<UInt8>, _ range: Range<Int>,
    _ keys: UnsafeBufferPointer<UInt8>, _ start: Int
  ) -> Bool {
    var offset = 0
    let length = range.count
    if let text = input.baseAddress, let known = keys.baseAddress,
      range.lowerBound + ((length + 7) & ~7) <= input.count
    {
      while offset < length {
        let a = UnsafeRawPointer(text + range.lowerBound + offset).loadUnaligned(as: UInt64.self)
        let b = UnsafeRawPointer(known + start + offset).loadUnaligned(as: UInt64.self)
        let remaining = length - offset
        // The bytes of the word that belong to the key: all eight, or the first `remaining`.
        let mask = remaining >= 8 ? UInt64.max : (UInt64(1) << (8 * remaining)) &- 1
        if (UInt64(littleEndian: a) ^ UInt64(littleEndian: b)) & mask != 0 { return false }
        offset += 8
      }
      return true
    }
    while offset < length {
      if input[range.lowerBound + offset] != keys[start + offset] { return false }
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
    let known = state.pointee.shapes.contains {
      $0.keyEnds == shape.keyEnds && $0.keyBytes == shape.keyBytes
    }
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
