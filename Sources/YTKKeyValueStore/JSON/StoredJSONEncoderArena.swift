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

    /// Appends `value` in plain decimal, with JSONWriter's digits.
    mutating func appendInteger(_ value: Int64) {
      reserve(21)
      if value < 0 {
        base[count] = JSONByte.minus
        count &+= 1
      }
      let magnitude = value.magnitude
      let digitCount = JSONWriter.decimalDigitCount(of: magnitude)
      JSONWriter.writeDecimalDigits(of: magnitude, count: digitCount, to: base + count)
      count &+= digitCount
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
      if JSONWriter.firstByteToEscape(in: utf8, from: 0) < utf8.count {
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
      appendWritten { JSONWriter.appendEscaped(utf8, into: &$0) }
    }

    /// Appends what `write` writes with JSONWriter's own functions (doubles, numbers as
    /// text, text with escapes), written first into the writer's output on the stack.
    mutating func appendWritten<Result>(_ write: (inout JSONOutput) -> Result) -> Result {
      JSONOutput.withScratch { (output: inout JSONOutput) -> Result in
        let result = write(&output)
        output.withBytes { written in
          append(
            UnsafeBufferPointer(
              start: written.baseAddress?.assumingMemoryBound(to: UInt8.self),
              count: written.count))
        }
        return result
      }
    }
  }
}
