/// CRC-32C (Castagnoli), the checksum of every record, segment header and hint file.
///
/// Reflected polynomial 0x82F63B78, initial value and final XOR 0xFFFFFFFF: the standard
/// check value for the ASCII bytes "123456789" is 0xE3069283. Computed in software with
/// slicing-by-16 tables (sixteen bytes per step), since the engine is pure Swift.
package enum CRC32C {
  /// The CRC-32C of `bytes`.
  package static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
    extend(0, bytes)
  }

  /// The CRC-32C of `bytes`.
  package static func checksum(_ bytes: [UInt8]) -> UInt32 {
    bytes.withUnsafeBytes { extend(0, $0) }
  }

  /// The CRC-32C of the concatenation of the bytes `crc` was computed over and `bytes`:
  /// `extend(checksum(a), b) == checksum(a + b)`.
  package static func extend(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
    guard let base = bytes.baseAddress else { return crc }
    return update(crc, base, bytes.count)
  }

  /// Masks a CRC before it is stored, so that the CRC of data containing stored CRCs (a batch
  /// of records, a file of records) is not degenerate; the rotation and constant are
  /// LevelDB's.
  package static func mask(_ crc: UInt32) -> UInt32 {
    ((crc >> 15) | (crc << 17)) &+ 0xa282_ead8
  }

  /// Undoes ``mask(_:)``.
  package static func unmask(_ masked: UInt32) -> UInt32 {
    let rotated = masked &- 0xa282_ead8
    return (rotated >> 17) | (rotated << 15)
  }

  /// The four bytes (as a little-endian `UInt32`) that, put before `bytes`, make `target` their
  /// CRC-32C: `checksum(prefix ++ bytes) == target`. There is exactly one: a record's checksum
  /// starts from its segment's salt, so this finds the salt from one record whose checksum is
  /// intact, when the segment header that held it is lost.
  ///
  /// A CRC is affine over GF(2) in its input: `f(p) = checksum(p ++ bytes)` is `A·p ⊕ f(0)`,
  /// where `A` depends only on the length of `bytes`: column j is bit j's contribution to the
  /// register after the four bytes, shifted through `bytes.count` zero bytes (by the shifts
  /// through 2^k zero bytes, ``zeroShifts``). `A` is invertible, and is solved for `p` by
  /// elimination: one pass over `bytes` (for `f(0)`) and a few thousand word operations.
  package static func prefix(givingChecksum target: UInt32, before bytes: UnsafeRawBufferPointer)
    -> UInt32
  {
    let zero = withUnsafeBytes(of: UInt32(0)) { extend(checksum($0), bytes) }
    var columns = [UInt32](repeating: 0, count: 32)
    for bit in 0..<32 {
      columns[bit] = withUnsafeBytes(of: (UInt32(1) << bit).littleEndian) { prefix in
        ~update(0xFFFF_FFFF, prefix.baseAddress!, 4)
      }
    }
    var remaining = UInt64(bytes.count)
    var power = 0
    while remaining > 0 {
      if remaining & 1 == 1 {
        for bit in 0..<32 { columns[bit] = apply(zeroShifts[power], to: columns[bit]) }
      }
      remaining >>= 1
      power += 1
    }
    return solve(columns, target ^ zero)
  }

  /// The register's shift through 2^k zero bytes, for k from 0 to 40 (lengths below 2^41), as
  /// matrices over GF(2) by columns (column j: the image of bit j). Computed once, by squaring
  /// the shift through one zero byte.
  private static let zeroShifts: [[UInt32]] = {
    let table = tables
    var power = (0..<32).map { bit -> UInt32 in
      let register = UInt32(1) << bit
      return table[Int(register & 0xff)] ^ (register >> 8)
    }
    var shifts: [[UInt32]] = []
    for _ in 0...40 {
      shifts.append(power)
      power = power.map { apply(power, to: $0) }
    }
    return shifts
  }()

  /// The matrix `columns` applied to `vector`.
  private static func apply(_ columns: [UInt32], to vector: UInt32) -> UInt32 {
    var result: UInt32 = 0
    var rest = vector
    var bit = 0
    while rest != 0 {
      if rest & 1 == 1 { result ^= columns[bit] }
      rest >>= 1
      bit += 1
    }
    return result
  }

  /// The `x` with `apply(columns, to: x) == vector`, by Gaussian elimination, for an
  /// invertible matrix (every one here is).
  private static func solve(_ columns: [UInt32], _ vector: UInt32) -> UInt32 {
    // Rows of a reduced basis, by leading bit: each a combination of columns (which columns,
    // as a mask) and what it comes to.
    var basis = [(value: UInt32, mask: UInt32)?](repeating: nil, count: 32)
    for (index, column) in columns.enumerated() {
      var value = column
      var mask = UInt32(1) << index
      while value != 0 {
        let lead = 31 - value.leadingZeroBitCount
        guard let row = basis[lead] else {
          basis[lead] = (value, mask)
          break
        }
        value ^= row.value
        mask ^= row.mask
      }
    }
    var rest = vector
    var solution: UInt32 = 0
    while rest != 0 {
      let lead = 31 - rest.leadingZeroBitCount
      // Every leading bit has its row: the matrix is invertible.
      let row = basis[lead]!
      rest ^= row.value
      solution ^= row.mask
    }
    return solution
  }

  static func update(_ crc: UInt32, _ start: UnsafeRawPointer, _ count: Int) -> UInt32 {
    let t = tables
    var c = ~crc
    var p = start
    var remaining = count
    while remaining >= 16 {
      // Sixteen bytes per step: the first four are folded with the CRC so far, and every
      // byte looks up its contribution across the rest of the step in its own table.
      let a = UInt32(littleEndian: p.loadUnaligned(as: UInt32.self)) ^ c
      let b = UInt32(littleEndian: (p + 4).loadUnaligned(as: UInt32.self))
      let d = UInt32(littleEndian: (p + 8).loadUnaligned(as: UInt32.self))
      let e = UInt32(littleEndian: (p + 12).loadUnaligned(as: UInt32.self))
      let first =
        t[15 &* 256 &+ Int(a & 0xff)] ^ t[14 &* 256 &+ Int((a >> 8) & 0xff)]
        ^ t[13 &* 256 &+ Int((a >> 16) & 0xff)] ^ t[12 &* 256 &+ Int(a >> 24)]
      let second =
        t[11 &* 256 &+ Int(b & 0xff)] ^ t[10 &* 256 &+ Int((b >> 8) & 0xff)]
        ^ t[9 &* 256 &+ Int((b >> 16) & 0xff)] ^ t[8 &* 256 &+ Int(b >> 24)]
      let third =
        t[7 &* 256 &+ Int(d & 0xff)] ^ t[6 &* 256 &+ Int((d >> 8) & 0xff)]
        ^ t[5 &* 256 &+ Int((d >> 16) & 0xff)] ^ t[4 &* 256 &+ Int(d >> 24)]
      let fourth =
        t[3 &* 256 &+ Int(e & 0xff)] ^ t[2 &* 256 &+ Int((e >> 8) & 0xff)]
        ^ t[1 &* 256 &+ Int((e >> 16) & 0xff)] ^ t[Int(e >> 24)]
      c = first ^ second ^ third ^ fourth
      p += 16
      remaining -= 16
    }
    while remaining >= 8 {
      let low = UInt32(littleEndian: p.loadUnaligned(as: UInt32.self)) ^ c
      let high = UInt32(littleEndian: (p + 4).loadUnaligned(as: UInt32.self))
      c =
        t[7 &* 256 &+ Int(low & 0xff)] ^ t[6 &* 256 &+ Int((low >> 8) & 0xff)]
        ^ t[5 &* 256 &+ Int((low >> 16) & 0xff)] ^ t[4 &* 256 &+ Int(low >> 24)]
        ^ t[3 &* 256 &+ Int(high & 0xff)] ^ t[2 &* 256 &+ Int((high >> 8) & 0xff)]
        ^ t[1 &* 256 &+ Int((high >> 16) & 0xff)] ^ t[Int(high >> 24)]
      p += 8
      remaining -= 8
    }
    while remaining > 0 {
      c = t[Int((c ^ UInt32(p.load(as: UInt8.self))) & 0xff)] ^ (c >> 8)
      p += 1
      remaining -= 1
    }
    return ~c
  }

  /// Sixteen 256-entry tables: table 0 is the byte-at-a-time table; entry `i` of table `k`
  /// is the CRC contribution of byte `i` followed by `k` zero bytes.
  // Written once, by the lazy initializer (which runs exactly once), and only read after.
  nonisolated(unsafe) static let tables: UnsafePointer<UInt32> = {
    let t = UnsafeMutablePointer<UInt32>.allocate(capacity: 16 * 256)
    for i in 0..<256 {
      var c = UInt32(i)
      for _ in 0..<8 { c = c & 1 == 1 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
      t[i] = c
    }
    for k in 1..<16 {
      for i in 0..<256 {
        let previous = t[(k - 1) * 256 + i]
        t[k * 256 + i] = (previous >> 8) ^ t[Int(previous & 0xff)]
      }
    }
    return UnsafePointer(t)
  }()
}
