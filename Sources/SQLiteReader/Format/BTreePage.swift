/// The header of a b-tree page and its cell pointer array.
///
/// ```
/// page: [100-byte database header, page 1 only]
///       header: 0 kind (2, 5, 10, 13)   1 first freeblock (2)   3 number of cells (2)
///               5 start of cell content (2, 0 meaning 65536)   7 fragmented bytes (1)
///               8 right-most child page (4, interior pages only)
///       cell pointer array: 2 bytes per cell, offsets from the start of the page, in key order
///       ... free space ... cells ...
///       [reserved bytes]
/// table leaf cell:     payload size (varint), rowid (varint), payload, [first overflow page (4)]
/// table interior cell: left child page (4), rowid (varint): the largest rowid in that child
/// ```
/// The reader reads table b-trees only; index b-tree pages are recognised, never read.
struct BTreePage {
  enum Kind: UInt8 {
    case interiorIndex = 2
    case interiorTable = 5
    case leafIndex = 10
    case leafTable = 13
  }

  var kind: Kind
  var cellCount: Int
  /// The right-most child of an interior page; zero on a leaf.
  var rightChild: UInt32
  /// Where the cell pointer array begins.
  var cellPointers: Int
  /// Where cells may begin: after the cell pointer array.
  var cellsStart: Int

  /// Reads the header of page `number` (whose header starts at 100 on page 1), checking that
  /// it is a table b-tree page whose cell pointer array fits in `usableSize`.
  init(_ page: UnsafeRawBufferPointer, number: UInt32, usableSize: Int, file: String) throws {
    let start = number == 1 ? SQLiteHeader.size : 0
    guard let kind = Kind(rawValue: page[start]) else {
      throw SQLiteReaderError.corrupted(
        file, page: number, "page type \(page[start]) is not a b-tree page's (2, 5, 10 or 13)")
    }
    guard kind == .interiorTable || kind == .leafTable else {
      throw SQLiteReaderError.corrupted(
        file, page: number, "an index b-tree page where a table b-tree page belongs")
    }
    self.kind = kind
    cellCount = page.bigEndianUInt16(at: start + 3)
    let headerSize = kind == .interiorTable ? 12 : 8
    rightChild = kind == .interiorTable ? page.bigEndianUInt32(at: start + 8) : 0
    cellPointers = start + headerSize
    cellsStart = cellPointers + 2 * cellCount
    guard cellsStart <= usableSize else {
      throw SQLiteReaderError.corrupted(
        file, page: number, "\(cellCount) cells do not fit in the page")
    }
  }

  /// The offset of cell `index` (which must be below ``cellCount``), checked to leave room
  /// for the smallest cell before the end of the usable space.
  func cellOffset(
    _ index: Int, in page: UnsafeRawBufferPointer, number: UInt32, usableSize: Int, file: String
  ) throws -> Int {
    let offset = page.bigEndianUInt16(at: cellPointers + 2 * index)
    // A table cell has at least 4 bytes: a leaf's two varints and a byte of payload, or an
    // interior cell's child page number.
    guard offset >= cellsStart, offset <= usableSize - 4 else {
      throw SQLiteReaderError.corrupted(
        file, page: number, "cell \(index) points outside the page (offset \(offset))")
    }
    return offset
  }
}

/// How a table leaf cell's payload of `payloadSize` bytes is split: how many bytes stay on the
/// page (the rest go to overflow pages), for a page of `usableSize` usable bytes (U):
///
///     X = U - 35                    the most a cell keeps on the page
///     M = ((U - 12) * 32 / 255) - 23  the least a cell with overflow keeps
///     K = M + ((P - M) % (U - 4))
///     P <= X: all P bytes stay; else K bytes stay if K <= X, otherwise M.
func localPayloadSize(payloadSize: UInt64, usableSize: Int) -> Int {
  let most = usableSize - 35
  if payloadSize <= UInt64(most) { return Int(payloadSize) }
  let least = (usableSize - 12) * 32 / 255 - 23
  let spread = least + Int((payloadSize - UInt64(least)) % UInt64(usableSize - 4))
  return spread <= most ? spread : least
}
