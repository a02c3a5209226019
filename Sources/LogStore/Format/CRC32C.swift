/// CRC-32C (Castagnoli), the checksum of every record, segment header and hint file.
///
/// Reflected polynomial 0x82F63B78, initial value and final XOR 0xFFFFFFFF: the standard
/// check value for the ASCII bytes "123456789" is 0xE3069283. Computed in software with
/// slicing-by-16 tables (sixteen bytes per step), since the engine is pure Swift; long inputs
/// as three interleaved chains of steps, whose CRCs are then combined (``update(_:_:_:)``).
package enum CRC32C {
  /// The CRC-32C of `bytes`.
  package static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
    extend(0, bytes)
  }

  /// The CRC-32C of `bytes`.
  package static func checksum(_ bytes: [UInt8]) -> UInt32 {
    bytes.withUnsafeBytes { extend(0, $0) }
  }

  /// The CRC-32C of the four bytes of `word`, little-endian: `checksum` of those bytes, as
  /// one step of four lookups in line (a record's checksum starts from its salt's, at every
  /// read).
  @inline(__always)
  package static func checksum(ofWord word: UInt32) -> UInt32 {
    ~lookups(tables, 3, ~word)
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
      columns[bit] = withUnsafeBytes(of: (UInt32(1) << bit).littleEndian) { register(of: $0) }
    }
    for bit in 0..<32 { columns[bit] = shift(columns[bit], throughZeroBytes: bytes.count) }
    return solve(columns, target ^ zero)
  }

  /// The register (a CRC before its final inversion) `register` after `count` zero bytes: by
  /// the shifts through 2^k zero bytes for each bit k set in `count` (``zeroShifts``), some
  /// hundreds of operations whatever the count.
  ///
  /// With it, the change of a CRC when some of its input's bytes change is found without the
  /// other bytes: the register is linear over GF(2) in its input, so the CRCs of two inputs of
  /// one length differ by the register of their XOR from zero, which is zero but for the bytes
  /// that changed. ``RecordCodec/changingRegister(salts:clearingMember:sequences:)`` uses it.
  package static func shift(_ register: UInt32, throughZeroBytes count: Int) -> UInt32 {
    var shifted = register
    var remaining = UInt64(count)
    var power = 0
    while remaining > 0 {
      if remaining & 1 == 1 { shifted = apply(zeroShifts[power], to: shifted) }
      remaining >>= 1
      power += 1
    }
    return shifted
  }

  /// The product of two registers read as polynomials over GF(2), modulo the CRC's
  /// polynomial: in this reflected form bit 31 is the constant term and bit 0 the term of
  /// degree 31. Shifting a register through `n` zero bytes multiplies it by `x^(8n)`, so
  /// `shift(r, throughZeroBytes: n) == multiply(r, shift(one, throughZeroBytes: n))`: with the
  /// second factor's ``products(of:)`` computed once for each `n`, a shift costs eight steps of
  /// a few operations instead of some hundreds (``SegmentBuilder`` keeps them by record length).
  package static func multiply(_ a: UInt32, _ b: UInt32) -> UInt32 {
    products(of: b).withUnsafeBufferPointer { multiply(a, products: $0) }
  }

  /// `a` times the register whose ``products(of:)`` are `products`, four bits of `a` a step
  /// (Horner's rule, from its terms of highest degree, bits 0 to 3, down): the product so far
  /// times x^4 (shifted by four, the four terms shifted out reduced by ``reductions``), plus
  /// the next four bits' product.
  @inline(__always)
  package static func multiply(_ a: UInt32, products: UnsafeBufferPointer<UInt32>) -> UInt32 {
    let reduce = reductions
    var product: UInt32 = 0
    var rest = a
    for _ in 0..<8 {
      product = (product >> 4) ^ reduce[Int(product & 15)] ^ products[Int(rest & 15)]
      rest >>= 4
    }
    return product
  }

  /// The products of `b` with the sixteen polynomials of degree below 4, by their registers'
  /// top four bits (bit 31 the constant term): what ``multiply(_:products:)`` adds, four bits
  /// of its other factor at a time.
  package static func products(of b: UInt32) -> [UInt32] {
    // b, b·x, b·x², b·x³.
    var multiples = [b]
    for _ in 1..<4 {
      let last = multiples[multiples.count - 1]
      multiples.append((last >> 1) ^ (polynomial & (0 &- (last & 1))))
    }
    return (0..<16).map { bits in
      (0..<4).reduce(UInt32(0)) { sum, power in
        bits & (8 >> power) != 0 ? sum ^ multiples[power] : sum
      }
    }
  }

  /// What a register's four terms of highest degree (bits 0 to 3) become, reduced, when it is
  /// multiplied by x^4: four steps of the bitwise CRC.
  // Written once, by the lazy initializer (which runs exactly once), and only read after.
  nonisolated(unsafe) private static let reductions: UnsafePointer<UInt32> = {
    let table = UnsafeMutablePointer<UInt32>.allocate(capacity: 16)
    for bits in 0..<16 {
      var register = UInt32(bits)
      for _ in 0..<4 { register = (register >> 1) ^ (polynomial & (0 &- (register & 1))) }
      table[bits] = register
    }
    return UnsafePointer(table)
  }()

  /// The register that stands for the polynomial 1 (``multiply(_:_:)``).
  package static let one: UInt32 = 0x8000_0000

  /// The polynomial, reflected.
  private static let polynomial: UInt32 = 0x82F6_3B78

  /// The register after `bytes` from a register of zero: the part of a CRC's register that
  /// `bytes` contribute (see ``shift(_:throughZeroBytes:)``).
  package static func register(of bytes: UnsafeRawBufferPointer) -> UInt32 {
    guard let base = bytes.baseAddress else { return 0 }
    return ~update(0xFFFF_FFFF, base, bytes.count)
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

  /// The CRC-32C of the bytes `crc` was computed over followed by the `count` bytes at
  /// `start`: what ``extend(_:_:)`` computes.
  ///
  /// A table step takes the register (the CRC before its final inversion) and sixteen bytes to
  /// the next register, so one pass over the input is a chain: each step waits for the step
  /// before. Only a step's first four bytes meet the register, though: the lookups of the other
  /// twelve do not wait for it, and a step's part of the chain is four lookups and their XORs.
  /// That chain, not the table loads, is the limit: the processor could make more lookups at
  /// once than one chain asks for.
  ///
  /// So long inputs are read as three chains at once. Each round takes three stretches of
  /// ``stretch`` bytes: the first continues from the register so far, the other two start
  /// from zero, and all three advance in one loop, independent of each other. A register is
  /// linear over GF(2) in the register it started from, so the register after the three
  /// stretches is the first one's, shifted through the zero bytes of the second and XORed with
  /// the second's, then the same through the third: `shift(shift(r1) ^ r2) ^ r3`, where the
  /// shift through `stretch` zero bytes is ``stretchShift``.
  static func update(_ crc: UInt32, _ start: UnsafeRawPointer, _ count: Int) -> UInt32 {
    let t = tables
    var c = ~crc
    var p = start
    var remaining = count
    let roundLength = 3 &* stretch
    if remaining >= roundLength {
      let shift = stretchShift
      repeat {
        var first = c
        var second: UInt32 = 0
        var third: UInt32 = 0
        var q = p
        let end = p + stretch
        repeat {
          first = step(first, q, t)
          second = step(second, q + stretch, t)
          third = step(third, q + 2 &* stretch, t)
          q += 16
        } while q < end
        c = shifted(shifted(first, shift) ^ second, shift) ^ third
        p += roundLength
        remaining &-= roundLength
      } while remaining >= roundLength
    }
    if remaining >= 16 {
      // One chain. The lookups of a step's last twelve bytes are made in the step before: in
      // one expression with the first word's, the compiler may order the sixteen XORs so that
      // all of them are on the chain (it did, and the loop ran at half this speed).
      var ahead = lastTwelve(p, t)
      while true {
        c = lookups(t, 15, word(p) ^ c) ^ ahead
        p += 16
        remaining &-= 16
        if remaining < 16 { break }
        ahead = lastTwelve(p, t)
      }
    }
    if remaining >= 8 {
      c = lookups(t, 3, word(p + 4)) ^ lookups(t, 7, word(p) ^ c)
      p += 8
      remaining &-= 8
    }
    if remaining >= 4 {
      c = lookups(t, 3, word(p) ^ c)
      p += 4
      remaining &-= 4
    }
    while remaining > 0 {
      c = t[Int((c ^ UInt32(p.load(as: UInt8.self))) & 0xff)] ^ (c >> 8)
      p += 1
      remaining &-= 1
    }
    return ~c
  }

  /// A CRC-32C being computed: the CRC of the bytes so far, and the bytes still to come.
  struct Chain {
    var crc: UInt32
    var next: UnsafeRawPointer
    var remaining: Int
  }

  /// Extends the four chains at `chains` over their bytes: step by step together while each
  /// has a step's bytes left, then each alone. The steps of one chain wait for each other and
  /// those of four do not, so the processor runs four at once; and when the inputs lie far
  /// apart in memory (records read in key order), the cache misses of four overlap where one
  /// input's would come one after another. (Four measured faster than all of a walk's batch
  /// in turn, whose registers are kept in memory between steps.)
  static func extend(four chains: UnsafeMutablePointer<Chain>) {
    let t = tables
    let (a, b, c, d) = (chains[0], chains[1], chains[2], chains[3])
    let together = min(a.remaining, b.remaining, c.remaining, d.remaining) & ~15
    var (ra, rb, rc, rd) = (~a.crc, ~b.crc, ~c.crc, ~d.crc)
    var done = 0
    while done < together {
      ra = step(ra, a.next + done, t)
      rb = step(rb, b.next + done, t)
      rc = step(rc, c.next + done, t)
      rd = step(rd, d.next + done, t)
      done &+= 16
    }
    func finish(_ index: Int, _ register: UInt32) {
      let chain = chains[index]
      chains[index] = Chain(
        crc: update(~register, chain.next + done, chain.remaining - done),
        next: chain.next + chain.remaining, remaining: 0)
    }
    finish(0, ra)
    finish(1, rb)
    finish(2, rc)
    finish(3, rd)
  }

  /// The length of each of a round's three stretches in ``update(_:_:_:)``, so that inputs of
  /// 768 bytes and more are read as three chains: a multiple of 16 (a step) and a power of two
  /// (its shift is one of ``zeroShifts``). Measured against one chain, three were 8% faster at
  /// 768 bytes and 15% from 4 KiB on. Stretches of 128 bytes gained a few percent from 384 to
  /// 767 bytes and lost more from 768 to 1024; of 512, gained at 1.5 to 2 KiB and lost at 4.
  private static let stretch = 1 << stretchPower
  private static let stretchPower = 8

  /// The shift of the register through ``stretch`` zero bytes, as four 256-entry tables:
  /// entry `b` of table `k` is the shift of byte `b` in the register's byte `k`. The shift is
  /// linear, so the shift of a register is the XOR of its four bytes' entries.
  // Written once, by the lazy initializer (which runs exactly once), and only read after.
  nonisolated(unsafe) private static let stretchShift: UnsafePointer<UInt32> = {
    let columns = zeroShifts[stretchPower]
    let s = UnsafeMutablePointer<UInt32>.allocate(capacity: 4 * 256)
    for k in 0..<4 {
      s[k * 256] = 0
      for b in 1..<256 {
        // Byte b's entry is byte (b without its lowest bit)'s plus that bit's column.
        s[k * 256 + b] = s[k * 256 + (b & (b - 1))] ^ columns[8 * k + b.trailingZeroBitCount]
      }
    }
    return UnsafePointer(s)
  }()

  /// `register` shifted through ``stretch`` zero bytes, by the tables `s` (``stretchShift``).
  @inline(__always)
  private static func shifted(_ register: UInt32, _ s: UnsafePointer<UInt32>) -> UInt32 {
    s[Int(register & 0xff)] ^ s[256 &+ Int((register >> 8) & 0xff)]
      ^ s[512 &+ Int((register >> 16) & 0xff)] ^ s[768 &+ Int(register >> 24)]
  }

  /// The register after the sixteen bytes at `p`, from `c`: the first four are folded with the
  /// register, and every byte looks up its contribution across the rest of the step in its
  /// own table. The last twelve bytes' lookups come first: they need not wait for `c`.
  @inline(__always)
  private static func step(_ c: UInt32, _ p: UnsafeRawPointer, _ t: UnsafePointer<UInt32>)
    -> UInt32
  {
    lastTwelve(p, t) ^ lookups(t, 15, word(p) ^ c)
  }

  /// The contribution of bytes 4 to 15 of the sixteen at `p` to the register after them.
  @inline(__always)
  private static func lastTwelve(_ p: UnsafeRawPointer, _ t: UnsafePointer<UInt32>) -> UInt32 {
    lookups(t, 11, word(p + 4)) ^ lookups(t, 7, word(p + 8)) ^ lookups(t, 3, word(p + 12))
  }

  /// The lookups of the four bytes of `w`, in tables `table` (its first byte) down to
  /// `table - 3` (its last).
  @inline(__always)
  private static func lookups(_ t: UnsafePointer<UInt32>, _ table: Int, _ w: UInt32) -> UInt32 {
    t[table &* 256 &+ Int(w & 0xff)] ^ t[(table &- 1) &* 256 &+ Int((w >> 8) & 0xff)]
      ^ t[(table &- 2) &* 256 &+ Int((w >> 16) & 0xff)]
      ^ t[(table &- 3) &* 256 &+ Int(w >> 24)]
  }

  /// The little-endian word at `p`.
  @inline(__always)
  private static func word(_ p: UnsafeRawPointer) -> UInt32 {
    UInt32(littleEndian: p.loadUnaligned(as: UInt32.self))
  }

  /// Sixteen 256-entry tables: table 0 is the byte-at-a-time table; entry `i` of table `k`
  /// is the CRC contribution of byte `i` followed by `k` zero bytes.
  // Written once, by the lazy initializer (which runs exactly once), and only read after.
  nonisolated(unsafe) static let tables: UnsafePointer<UInt32> = {
    let t = UnsafeMutablePointer<UInt32>.allocate(capacity: 16 * 256)
    for i in 0..<256 {
      var c = UInt32(i)
      for _ in 0..<8 { c = c & 1 == 1 ? (c >> 1) ^ polynomial : c >> 1 }
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
