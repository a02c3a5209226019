/// The keys of one table that have an expiry, with when: what lets the table's count, and a
/// listing of its keys, leave out the expired ones without reading their records.
///
/// Keys without an expiry cost nothing here; each key with one costs a dictionary entry, a
/// place in a queue ordered by expiry, and a copy of its bytes in each. An expired key stays
/// in the table (its record is still in the log) until it is written again, deleted, or
/// compaction drops its record; this counts how many of the table's keys, and how many bytes
/// of their records, have expired.
///
/// Kept by a ``TableIndex``, under the store's index lock; readers holding that lock only for
/// reading may still move it forward (``advance(to:)``), so it has a lock of its own too.
final class ExpiringKeys {
  private struct Expiry {
    var time: Int64
    var length: UInt32
    var isExpired: Bool
  }
  private let lock = ConditionLock()
  private var keys: [[UInt8]: Expiry] = [:]
  /// Keys by expiry, earliest first: a binary heap. It may hold stale pairs (a key removed
  /// since, or given another expiry), which are skipped when they come up.
  private var queue: [(time: Int64, key: [UInt8])] = []
  private var expired = 0
  /// In 64 bits: where `Int` is 32 bits, the lengths of many records pass `Int.max`.
  private var expiredLength: Int64 = 0
  /// The latest time the keys were brought up to.
  private var horizon: Int64 = .min

  init() {}

  init(copying other: ExpiringKeys) {
    other.lock.withLock {
      keys = other.keys
      queue = other.queue
      expired = other.expired
      expiredLength = other.expiredLength
      horizon = other.horizon
    }
  }

  var isEmpty: Bool { lock.withLock { keys.isEmpty } }

  /// Gives `key`, whose record is `length` bytes, an expiry.
  func set(_ key: UnsafeRawBufferPointer, expiry time: Int64, length: UInt32) {
    lock.withLock {
      let bytes = Array(key)
      let isExpired = time <= horizon
      if let old = keys.updateValue(
        Expiry(time: time, length: length, isExpired: isExpired), forKey: bytes)
      {
        uncount(old)
      }
      if isExpired {
        expired += 1
        expiredLength += Int64(length)
      } else {
        push((time, bytes))
      }
      dropStaleIfMany()
    }
  }

  /// Forgets `key` (deleted, or written again without an expiry).
  func remove(_ key: UnsafeRawBufferPointer) {
    lock.withLock {
      guard !keys.isEmpty, let old = keys.removeValue(forKey: Array(key)) else { return }
      uncount(old)
    }
  }

  /// Forgets every key that starts with `prefix`.
  func removeAll(withPrefix prefix: UnsafeRawBufferPointer) {
    lock.withLock {
      for (key, expiry) in keys where key.starts(with: prefix) {
        keys[key] = nil
        uncount(expiry)
      }
    }
  }

  /// Marks expired every key whose expiry is at or before `now`; returns how many keys have
  /// expired, and the bytes of their records (at most `Int.max`).
  @discardableResult
  func advance(to now: Int64) -> (count: Int, bytes: Int) {
    lock.withLock {
      if now > horizon {
        horizon = now
        while let first = queue.first, first.time <= now {
          popFirst()
          guard var entry = keys[first.key], entry.time == first.time, !entry.isExpired else {
            continue
          }
          entry.isExpired = true
          keys[first.key] = entry
          expired += 1
          expiredLength += Int64(entry.length)
        }
      }
      return (expired, Int(clamping: expiredLength))
    }
  }

  /// Whether `key` had expired when the keys were last brought up to date
  /// (``advance(to:)``).
  func isExpired(_ key: UnsafeRawBufferPointer) -> Bool {
    lock.withLock { keys.isEmpty ? false : keys[Array(key)]?.isExpired ?? false }
  }

  /// The expiry `key` has, if it has one.
  func expiry(of key: UnsafeRawBufferPointer) -> Int64? {
    lock.withLock { keys[Array(key)]?.time }
  }

  /// Every key with its expiry, in no order.
  func forEachKey(_ body: (UnsafeRawBufferPointer, Int64) -> Void) {
    lock.withLock {
      for (key, entry) in keys { key.withUnsafeBytes { body($0, entry.time) } }
    }
  }

  private func uncount(_ entry: Expiry) {
    if entry.isExpired {
      expired -= 1
      expiredLength -= Int64(entry.length)
    }
  }

  // MARK: The queue

  private func push(_ element: (time: Int64, key: [UInt8])) {
    queue.append(element)
    var child = queue.count - 1
    while child > 0 {
      let parent = (child - 1) / 2
      guard queue[child].time < queue[parent].time else { break }
      queue.swapAt(child, parent)
      child = parent
    }
  }

  private func popFirst() {
    let last = queue.removeLast()
    guard !queue.isEmpty else { return }
    queue[0] = last
    siftDown(from: 0)
  }

  private func siftDown(from start: Int) {
    var parent = start
    var left = 2 * parent + 1
    while left < queue.count {
      var smallest = left
      if left + 1 < queue.count && queue[left + 1].time < queue[left].time { smallest = left + 1 }
      guard queue[smallest].time < queue[parent].time else { return }
      queue.swapAt(parent, smallest)
      parent = smallest
      left = 2 * parent + 1
    }
  }

  /// Rebuilds the queue from the keys when stale pairs outnumber the live ones, so that a key
  /// written again and again with a new expiry does not grow it without end.
  private func dropStaleIfMany() {
    guard queue.count > 2 * keys.count + 64 else { return }
    queue = keys.compactMap { key, entry in entry.isExpired ? nil : (entry.time, key) }
    var index = queue.count / 2
    while index > 0 {
      index -= 1
      siftDown(from: index)
    }
  }
}
