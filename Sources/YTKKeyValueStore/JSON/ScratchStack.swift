/// The JSON layer's one growable buffer: a stack of values in memory it manages itself. It
/// starts in scratch space the caller provides (on the thread's stack, from
/// `withUnsafeTemporaryAllocation`) or on the heap, and moves to a larger heap block when it
/// outgrows what it has. Pushing is a store, with no uniqueness check or reference counting
/// of the stack itself.
///
/// The reader keeps its open containers and pending values here, the tape its entries, the
/// writer its open containers and members; as ``JSONOutput`` (a stack of bytes) it holds the
/// text that the writer, the canonicalizer and the Codable encoder write.
///
/// The owner must call ``release()`` when done, also when it ends early (by a throw);
/// ``withScratch(_:)`` does that for the stacks it makes.
struct ScratchStack<Element> {
  /// Elements that fit the 1 KiB that `withUnsafeTemporaryAllocation` keeps on the stack.
  static var scratchCapacity: Int { Swift.max(1024 / MemoryLayout<Element>.stride, 1) }

  private var base: UnsafeMutablePointer<Element>
  private var capacity: Int
  private(set) var count = 0
  /// Whether `base` was allocated here (else it is the scratch space).
  private var ownsMemory = false

  init(scratch: UnsafeMutableBufferPointer<Element>) {
    base = scratch.baseAddress!
    capacity = scratch.count
  }

  /// A stack on the heap with room for `capacity` elements.
  init(capacity: Int) {
    self.capacity = Swift.max(capacity, 16)
    base = .allocate(capacity: self.capacity)
    ownsMemory = true
  }

  /// Calls `body` with a stack that starts in scratch space on the thread's stack, and
  /// releases it afterwards.
  static func withScratch<R, E: Error>(_ body: (inout ScratchStack) throws(E) -> R) throws(E) -> R {
    try withUnsafeTemporaryAllocation(of: Element.self, capacity: scratchCapacity) {
      (scratch) throws(E) in
      var stack = ScratchStack(scratch: scratch)
      defer { stack.release() }
      return try body(&stack)
    }
  }

  mutating func append(_ element: Element) {
    if count == capacity { grow(toHold: count + 1) }
    (base + count).initialize(to: element)
    count += 1
  }

  mutating func append(contentsOf elements: UnsafeBufferPointer<Element>) {
    reserve(elements.count)
    // An empty buffer may have no address.
    if let source = elements.baseAddress {
      (base + count).initialize(from: source, count: elements.count)
    }
    count += elements.count
  }

  /// Makes room for `extra` more elements at once.
  mutating func reserve(_ extra: Int) {
    if capacity - count < extra { grow(toHold: count + extra) }
  }

  /// Appends the elements `body` writes at the end, where there is room for `maximum`;
  /// `body` returns how many it wrote. For elements that need no deinitializing.
  mutating func appendWriting(
    atMost maximum: Int, _ body: (UnsafeMutablePointer<Element>) -> Int
  ) {
    reserve(maximum)
    let written = body(base + count)
    Self.check(written >= 0 && written <= maximum)
    count += written
  }

  subscript(index: Int) -> Element {
    get {
      Self.check(index >= 0 && index < count)
      return base[index]
    }
    nonmutating set {
      Self.check(index >= 0 && index < count)
      base[index] = newValue
    }
  }

  /// The elements, in place: valid until the stack next changes.
  var contents: UnsafeBufferPointer<Element> {
    UnsafeBufferPointer(start: base, count: count)
  }

  /// The elements from `start` on, in place, for the call only.
  func withElements<R, E: Error>(
    from start: Int, _ body: (UnsafeMutableBufferPointer<Element>) throws(E) -> R
  ) throws(E) -> R {
    Self.check(start >= 0 && start <= count)
    return try body(UnsafeMutableBufferPointer(start: base + start, count: count - start))
  }

  /// Moves the element at `index` out, leaving its place uninitialized: it must not be read
  /// or moved out again, and ``forgetElements(from:)`` must drop it before anything else
  /// removes elements (or a throw ends the owner's work).
  mutating func moveOut(at index: Int) -> Element {
    Self.check(index >= 0 && index < count)
    return (base + index).move()
  }

  /// Drops the elements from `start` on without deinitializing them: each must have been
  /// moved out (``moveOut(at:)``) or be a value that needs no deinitializing (no reference
  /// in it). Cheaper than ``removeLast(_:)``, which deinitializes each in turn.
  mutating func forgetElements(from start: Int) {
    Self.check(start >= 0 && start <= count)
    count = start
  }

  /// Moves the last element out; nil when there is none.
  mutating func popLast() -> Element? {
    guard count > 0 else { return nil }
    count -= 1
    return (base + count).move()
  }

  /// Removes the last `k` elements.
  mutating func removeLast(_ k: Int = 1) {
    Self.check(k >= 0 && k <= count)
    (base + count - k).deinitialize(count: k)
    count -= k
  }

  /// Removes every element and gives back memory allocated here.
  mutating func release() {
    removeLast(count)
    if ownsMemory {
      base.deallocate()
      ownsMemory = false
    }
  }

  /// Stops the program when an index or range is not within the elements.
  static func check(_ isWithin: Bool) {
    precondition(isWithin, "an index or range outside a scratch stack's elements")
  }

  /// Moves to a heap block with room for `needed` elements, at least doubling (without
  /// overflowing a 32-bit `Int`).
  private mutating func grow(toHold needed: Int) {
    let doubled = capacity > Int.max / 2 ? Int.max : capacity * 2
    let newCapacity = Swift.max(needed, doubled, 16)
    let newBase = UnsafeMutablePointer<Element>.allocate(capacity: newCapacity)
    newBase.moveInitialize(from: base, count: count)
    if ownsMemory { base.deallocate() }
    base = newBase
    capacity = newCapacity
    ownsMemory = true
  }
}
