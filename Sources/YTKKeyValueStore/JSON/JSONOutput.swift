/// Text being written: the stored form, by the writer, the canonicalizer and the Codable
/// encoder.
typealias JSONOutput = ScratchStack<UInt8>

extension ScratchStack where Element == UInt8 {
  /// The bytes written, as an array (one copy).
  func bytes() -> [UInt8] {
    withElements(from: 0) { Array($0) }
  }

  /// Calls `body` with the bytes written, borrowed for the call.
  func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
    try withElements(from: 0) { (bytes) throws(E) in try body(UnsafeRawBufferPointer(bytes)) }
  }

  /// Appends a copy of the bytes written at `start..<end`.
  mutating func appendCopy(from start: Int, to end: Int) {
    Self.check(start >= 0 && start <= end && end <= count)
    let length = end - start
    let distance = count - start
    appendWriting(atMost: length) { target in
      target.initialize(from: target - distance, count: length)
      return length
    }
  }

  /// Appends `literal`'s bytes.
  mutating func appendLiteral(_ literal: StaticString) {
    append(
      contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
  }

  /// Appends `value` in plain decimal: an optional `-`, then digits without leading zeros.
  mutating func appendInteger(_ value: Int64) {
    if value < 0 { append(JSONByte.minus) }
    // `magnitude` is a UInt64, so Int64.min needs no special case.
    let magnitude = value.magnitude
    var digitCount = 1
    var scale: UInt64 = 10
    while digitCount < 20, magnitude >= scale {
      digitCount += 1
      scale = scale &* 10
    }
    appendWriting(atMost: digitCount) { digits in
      // Two digits at a time from the table of "00" to "99", the last first.
      let pairs = Self.decimalPairs.utf8Start
      var remaining = magnitude
      var index = digitCount
      while index >= 2 {
        let pair = Int(truncatingIfNeeded: remaining % 100) &* 2
        remaining /= 100
        index &-= 2
        digits[index] = pairs[pair]
        digits[index &+ 1] = pairs[pair &+ 1]
      }
      if index == 1 {
        digits[0] = JSONByte.zero &+ UInt8(truncatingIfNeeded: remaining)
      }
      return digitCount
    }
  }

  /// "00", "01", ... "99", one after the other.
  private static var decimalPairs: StaticString {
    """
    00010203040506070809101112131415161718192021222324252627282930313233343536373839\
    40414243444546474849505152535455565758596061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899
    """
  }

  /// Appends `value` as ``JSONWriter`` writes a double; a non-finite one is an error, or
  /// with `lenient` its `description`.
  mutating func appendDouble(_ value: Double, lenient: Bool = false) throws(JSONCodecError) {
    guard value.isFinite else {
      if lenient {
        var description = value.description
        description.withUTF8 { append(contentsOf: $0) }
        return
      }
      throw JSONCodecError(message: "JSON cannot represent the number \(value)", offset: 0)
    }
    if value.sign == .minus { append(JSONByte.minus) }
    // The digits of Swift's `description`, the fewest that read back as exactly this double
    // (of those, the closest to it), read by the scanner as one integer (exact: at most 17
    // are significant) and the power of ten they are scaled by. Only the digits are taken
    // from it: the layout is the writer's own, so that a change in how Swift formats numbers
    // cannot change stored bytes.
    var description = value.magnitude.description
    let scanned = description.withUTF8 { utf8 -> JSONScannedNumber? in
      var scanner = JSONScanner(input: utf8)
      return try? scanner.scanNumber()
    }
    guard var significand = scanned?.significand, var scale = scanned?.exponent,
      significand != 0
    else {
      appendLiteral("0.0")
      return
    }
    while significand % 10 == 0 {
      significand /= 10
      scale += 1
    }
    let start = count
    appendInteger(Int64(significand))
    let digitCount = count - start
    // The power of ten of the first digit.
    let exponent = scale + digitCount - 1
    if value.magnitude >= 1e-4 && value.magnitude <= 0x1p53 {
      if exponent < 0 {
        // Positional, below one: `0.00123`.
        insert(1 - exponent, at: start) { gap in
          gap.initialize(repeating: JSONByte.zero, count: 1 - exponent)
          gap[1] = JSONByte.dot
        }
      } else if exponent + 1 < digitCount {
        // Positional, digits on both sides of the point: `123.456`.
        insert(1, at: start + exponent + 1) { $0[0] = JSONByte.dot }
      } else {
        // Positional, a whole number: `2.0`, `1200.0`.
        for _ in 0..<(exponent + 1 - digitCount) { append(JSONByte.zero) }
        append(JSONByte.dot)
        append(JSONByte.zero)
      }
    } else {
      // Scientific, the point after the first digit (if there are more) and the exponent
      // signed and at least two digits long: `1e+16`, `1.5e-10`.
      if digitCount > 1 { insert(1, at: start + 1) { $0[0] = JSONByte.dot } }
      append(JSONByte.lowercaseE)
      append(exponent < 0 ? JSONByte.minus : JSONByte.plus)
      if exponent.magnitude < 10 { append(JSONByte.zero) }
      appendInteger(Int64(exponent.magnitude))
    }
  }

  /// Makes room for `length` bytes at `position` of what is written, moving the bytes after
  /// it along, and lets `fill` write them.
  private mutating func insert(
    _ length: Int, at position: Int, _ fill: (UnsafeMutablePointer<UInt8>) -> Void
  ) {
    let moved = count - position
    appendWriting(atMost: length) { end in
      let gap = end - moved
      (gap + length).moveInitialize(from: gap, count: moved)
      fill(gap)
      return length
    }
  }

  /// Appends `string` between quotes, with the escapes the format requires.
  mutating func appendString(_ string: String) {
    string.withUTF8Bytes { utf8 in appendQuoted(utf8.assumingMemoryBound(to: UInt8.self)) }
  }

  /// Appends `utf8` between quotes, with the escapes the format requires. A string of one to
  /// seven bytes with nothing to escape (most keys, and many values) is read as one word
  /// (``ByteWords/loadShort(_:count:)``), checked and written whole, without a call.
  mutating func appendQuoted(_ utf8: UnsafeBufferPointer<UInt8>) {
    let length = utf8.count
    if length > 0, length < 8, let source = utf8.baseAddress {
      let word = ByteWords.loadShort(source, count: length)
      // The zero bytes above the string's would read as control characters: not looked at.
      if JSONWriter.escapeMask(word) & ByteWords.firstBytes(length) == 0 {
        // The quotes and the word, whatever the length.
        appendWriting(atMost: 10) { target in
          target[0] = JSONByte.quote
          Self.store(word, at: target + 1)
          target[length &+ 1] = JSONByte.quote
          return length &+ 2
        }
        return
      }
    }
    append(JSONByte.quote)
    appendEscaped(utf8)
    append(JSONByte.quote)
  }

  /// Appends `utf8` with the escapes the format requires (``JSONWriter/mustEscape(_:)``).
  ///
  /// A word at a time, without a call to copy a run: each eight bytes are found exactly which
  /// need escaping (``JSONWriter/escapeMask(_:)``), and the bytes between those are written
  /// by storing the rest of the word whole and moving on past what was meant. The text goes
  /// in chunks of 512 bytes, each given room for all its bytes escaped as six and for the
  /// eight bytes a store may reach past what is kept.
  mutating func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>) {
    // Not empty inside the loop, so it has an address.
    let source = utf8.baseAddress
    var chunkStart = 0
    while chunkStart < utf8.count {
      let chunkEnd = Swift.min(chunkStart + 512, utf8.count)
      appendWriting(atMost: (chunkEnd - chunkStart) * 6 + 8) { target in
        var end = 0
        var index = chunkStart
        while chunkEnd &- index >= 8 {
          let word = UInt64(
            littleEndian: UnsafeRawPointer(source! + index).loadUnaligned(as: UInt64.self))
          var mask = JSONWriter.escapeMask(word)
          // The word's bytes not yet in the output, from the bit `restStart` of `word` on.
          var rest = word
          var restStart = 0
          while mask != 0 {
            // The first bit of the next byte to escape (the mask holds each one's high bit).
            let start = mask.trailingZeroBitCount &- 7
            mask &= mask &- 1
            Self.store(rest, at: target + end)
            end &+= (start &- restStart) &>> 3
            let byte = UInt8(truncatingIfNeeded: word &>> UInt64(truncatingIfNeeded: start))
            if byte >= 0x20 {
              // A quote or a backslash is escaped as itself after a backslash: the backslash
              // goes in front, and the byte goes out with the rest of the word.
              target[end] = JSONByte.backslash
              end &+= 1
              rest = word &>> UInt64(truncatingIfNeeded: start)
              restStart = start
            } else {
              end &+= Self.writeEscape(of: byte, at: target + end)
              // Past the control character: nothing is left of the word after its last byte.
              restStart = start &+ 8
              rest = restStart < 64 ? word &>> UInt64(truncatingIfNeeded: restStart) : 0
            }
          }
          Self.store(rest, at: target + end)
          end &+= (64 &- restStart) &>> 3
          index &+= 8
        }
        while index < chunkEnd {
          let byte = source![index]
          if JSONWriter.mustEscape(byte) {
            end &+= Self.writeEscape(of: byte, at: target + end)
          } else {
            target[end] = byte
            end &+= 1
          }
          index &+= 1
        }
        return end
      }
      chunkStart = chunkEnd
    }
  }

  /// Stores the eight bytes of `word` (the first in its low byte) at `target`.
  private static func store(_ word: UInt64, at target: UnsafeMutablePointer<UInt8>) {
    UnsafeMutableRawPointer(target).storeBytes(of: word.littleEndian, as: UInt64.self)
  }

  /// Writes the escape of `byte`, one that must be escaped, at `target`, and returns its
  /// length: two bytes, or six for a control character with no short form.
  private static func writeEscape(of byte: UInt8, at target: UnsafeMutablePointer<UInt8>) -> Int {
    target[0] = JSONByte.backslash
    switch byte {
    // A quote or a backslash: itself after the backslash.
    case JSONByte.quote, JSONByte.backslash: target[1] = byte
    case 0x08: target[1] = JSONByte.lowercaseB
    case 0x0C: target[1] = JSONByte.lowercaseF
    case 0x0A: target[1] = JSONByte.lowercaseN
    case 0x0D: target[1] = JSONByte.lowercaseR
    case 0x09: target[1] = JSONByte.lowercaseT
    default:
      target[1] = JSONByte.lowercaseU
      target[2] = JSONByte.zero
      target[3] = JSONByte.zero
      target[4] = JSONByte.lowercaseHexDigits[Int(byte >> 4)]
      target[5] = JSONByte.lowercaseHexDigits[Int(byte & 0x0F)]
      return 6
    }
    return 2
  }
}
