/// One of a run of keys to be put in the order of their bytes: an object's members (by the
/// writer, the canonicalizer and the Codable encoder) or a batch's ids (by
/// `KeyValueStore.put(objects:)` and its kin).
///
/// `prefix` is eight of the key's bytes as a big-endian number, zero-padded
/// (``KeyOrder/prefix(of:from:)``), which decides most comparisons alone; `position` is where
/// the key came in the run (the order members were written or read); `payload` is what the
/// caller needs to find the key and its value again.
struct OrderedKey<Payload> {
  var prefix: UInt64
  var position: Int
  var payload: Payload
}

/// The one rule for ordering keys and settling repeated ones.
enum KeyOrder {
  /// The eight bytes of `key` from `offset` on as a big-endian number, zero-padded: numbers
  /// compare as those bytes do, and equal numbers leave the order to the whole keys.
  static func prefix(of key: UnsafeRawBufferPointer, from offset: Int = 0) -> UInt64 {
    guard offset < key.count, let start = key.baseAddress else { return 0 }
    let length = key.count - offset
    // The bytes as a little-endian word (the first in its low byte), byte-swapped.
    let word =
      length >= 8
      ? UInt64(littleEndian: (start + offset).loadUnaligned(as: UInt64.self))
      : ByteWords.loadShort(start + offset, count: length)
    return word.byteSwapped
  }

  /// Sorts `run` by the bytes of its keys and keeps one key of each that repeats: the last
  /// to come (the greatest `position`), which is how a parse keeps an object's repeated key
  /// (its last value). Returns how many are kept, at the start of `run`.
  ///
  /// `compare` gives the order of two whole keys' bytes, negative, zero or positive (as
  /// `bytesOrder`), and is asked only when their prefixes are equal.
  static func sortKeepingLast<Payload>(
    _ run: UnsafeMutableBufferPointer<OrderedKey<Payload>>,
    compare: (Payload, Payload) -> Int
  ) -> Int {
    func order(_ a: OrderedKey<Payload>, _ b: OrderedKey<Payload>) -> Int {
      if a.prefix != b.prefix { return a.prefix < b.prefix ? -1 : 1 }
      return compare(a.payload, b.payload)
    }
    // Equal keys in the order they came, so that the last of them ends its run.
    func precedes(_ a: OrderedKey<Payload>, _ b: OrderedKey<Payload>) -> Bool {
      let byKey = order(a, b)
      return byKey != 0 ? byKey < 0 : a.position < b.position
    }
    guard run.count > 1 else { return run.count }
    var run = run
    if run.count <= 16 {
      // By insertion for the few members most objects have: it moves less than `sort`.
      for next in 1..<run.count {
        let key = run[next]
        var place = next
        while place > 0, precedes(key, run[place - 1]) {
          run[place] = run[place - 1]
          place -= 1
        }
        run[place] = key
      }
    } else {
      run.sort(by: precedes)
    }
    var kept = 0
    for index in 0..<run.count {
      if index + 1 < run.count, order(run[index], run[index + 1]) == 0 { continue }
      run[kept] = run[index]
      kept += 1
    }
    return kept
  }
}
