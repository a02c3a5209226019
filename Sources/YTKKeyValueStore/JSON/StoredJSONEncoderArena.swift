extension StoredJSONEncoder {
  /// The bytes an encoding writes, in a buffer it owns and writes through a pointer.
  ///
  /// An `[UInt8]` checks that it is uniquely referenced and has room on every append;
  /// members and scalars are appended a few bytes at a time, so here room is made once per
  /// write and the bytes are stored directly. The owner calls `deallocate()`.
  struct Arena {
    private(set) var base: UnsafeMutablePointer<UInt8>
    private(set) var count = 0
    private var capacity: Int
    /// Reused for the writes that JSONWriter's `[UInt8]` functions make (doubles, text
    /// with escapes), before they are copied in.
    private var scratch: [UInt8] = []

    init(capacity: Int) {
      self.capacity = capacity
      base = UnsafeMutablePointer.allocate(capacity: capacity)
    }

    func deallocate() {
      base.deallocate()
    }

    /// The bytes written so far; valid until the next write.
    var bytes: UnsafeBufferPointer<UInt8> {
      UnsafeBufferPointer(start: base, count: count)
    }

    /// Makes room for `extra` more bytes.
    @inline(__always)
    mutating func reserve(_ extra: Int) {
      if extra > capacity &- count { grow(extra) }
    }

    private mutating func grow(_ extra: Int) {
      let needed = count + extra
      var newCapacity = max(capacity * 2, 64)
      while newCapacity < needed { newCapacity *= 2 }
      let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
      newBase.initialize(from: base, count: count)
      base.deallocate()
      base = newBase
      capacity = newCapacity
    }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
      reserve(1)
      base[count] = byte
      count &+= 1
    }

    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
      guard let start = bytes.baseAddress, !bytes.isEmpty else { return }
      reserve(bytes.count)
      (base + count).initialize(from: start, count: bytes.count)
      count &+= bytes.count
    }

    /// Appends a copy of `self[start..<end]`.
    mutating func appendCopy(from start: Int, to end: Int) {
      let length = end - start
      guard length > 0 else { return }
      reserve(length)
      (base + count).initialize(from: base + start, count: length)
      count &+= length
    }

    mutating func appendLiteral(_ literal: StaticString) {
      append(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    /// Appends `value` in plain decimal, as `JSONWriter.appendInteger` does.
    mutating func appendInteger(_ value: Int64) {
      reserve(20)
      var position = count
      if value < 0 {
        base[position] = JSONByte.minus
        position &+= 1
      }
      var remaining = value.magnitude
      var digits = 1
      var power: UInt64 = 10
      while digits < 20, remaining >= power {
        digits &+= 1
        power = power &* 10
      }
      var index = position &+ digits
      count = index
      repeat {
        index &-= 1
        base[index] = JSONByte.zero &+ UInt8(truncatingIfNeeded: remaining % 10)
        remaining /= 10
      } while remaining != 0
    }

    /// Appends `string` quoted and escaped, as `JSONWriter.appendString` does: text that
    /// needs no escapes is copied in one go.
    mutating func appendString(_ string: String) {
      let done: Void? = string.utf8.withContiguousStorageIfAvailable { utf8 in
        appendQuoted(utf8)
      }
      if done == nil {
        var copy = string
        copy.withUTF8 { appendQuoted($0) }
      }
    }

    /// Appends `utf8` between quotes, escaped.
    mutating func appendQuoted(_ utf8: UnsafeBufferPointer<UInt8>) {
      if Arena.needsEscapes(utf8) {
        append(JSONByte.quote)
        appendEscaped(utf8)
        append(JSONByte.quote)
        return
      }
      reserve(utf8.count &+ 2)
      base[count] = JSONByte.quote
      if let start = utf8.baseAddress {
        (base + (count &+ 1)).initialize(from: start, count: utf8.count)
      }
      count &+= utf8.count &+ 2
      base[count &- 1] = JSONByte.quote
    }

    /// Appends `utf8` with JSONWriter's escapes.
    mutating func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>) {
      scratch.removeAll(keepingCapacity: true)
      JSONWriter.appendEscaped(utf8, into: &scratch)
      appendScratch()
    }

    /// Whether `utf8` has a byte JSONWriter escapes: a control character, `"` or `\`.
    static func needsEscapes(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
      for byte in utf8 where byte < 0x20 || byte == JSONByte.quote || byte == JSONByte.backslash {
        return true
      }
      return false
    }

    /// Lets `write` append to an empty `[UInt8]`, then copies what it wrote; for the
    /// JSONWriter functions that write into arrays. Returns what `write` returns.
    mutating func appendWritten<Result>(_ write: (inout [UInt8]) -> Result) -> Result {
      scratch.removeAll(keepingCapacity: true)
      let result = write(&scratch)
      appendScratch()
      return result
    }

    private mutating func appendScratch() {
      // Not `scratch.withUnsafeBufferPointer { append($0) }`: that would access `self`
      // inside an access to one of its properties.
      let written = scratch
      written.withUnsafeBufferPointer { append($0) }
    }
  }
}
