/// Reads a table's rows one at a time, in rowid order, walking its b-tree.
///
/// The cursor reuses its buffers from row to row: reading a row allocates nothing until a
/// value is asked for, and ``withUTF8Text(at:_:)`` hands out text without making a `String`.
/// Values are valid until the next call to ``next()``.
///
/// ```swift
/// let cursor = try database.cursor(over: table)
/// while try cursor.next() {
///   let id = try cursor.value(at: 0)
///   let size = try cursor.withUTF8Text(at: 1) { $0.count }
/// }
/// ```
///
/// A damaged tree is refused, never followed forever: every page is visited at most once (a
/// page reached again is a cycle), the tree is at most 20 levels deep, rowids must increase,
/// and overflow chains end within the pages the database has.
public final class SQLiteRowCursor {
  /// SQLite's own bound on a b-tree's depth.
  static let maximumDepth = 20
  /// SQLite's largest value (`SQLITE_MAX_LENGTH` at most): a payload claiming more is damage.
  static let maximumPayload: UInt64 = 0x7FFF_FFFF

  /// An interior page on the way down, and the next of its children to visit.
  private struct Level {
    var page: UInt32
    var buffer: ByteBuffer
    var tree: BTreePage
    var nextChild: Int
  }

  // A cursor is used by one thread at a time and none of its accesses to its own state
  // overlap, so the runtime's check of each access (a cost per row) is left out.
  private let pager: Pager
  /// The table being read.
  public let table: SQLiteTable
  private let encoding: SQLiteTextEncoding
  @exclusivity(unchecked) private var visited: PageSet
  @exclusivity(unchecked) private var levels: [Level] = []
  /// Buffers of levels no longer in use, kept for the next descent.
  @exclusivity(unchecked) private var spareBuffers: [ByteBuffer] = []
  @exclusivity(unchecked) private var leaf: ByteBuffer
  @exclusivity(unchecked) private var leafPage: UInt32 = 0
  @exclusivity(unchecked) private var leafTree: BTreePage?
  @exclusivity(unchecked) private var nextCell = 0
  @exclusivity(unchecked) private var started = false
  @exclusivity(unchecked) private var finished = false

  private let overflow: ByteBuffer
  private let overflowPage: ByteBuffer
  private let scratch = ByteBuffer(capacity: 256)
  /// Where the current row's payload is: in `leaf` or, when it spilled, in `overflow`.
  @exclusivity(unchecked) private var payloadInLeaf = true
  @exclusivity(unchecked) private var payloadStart = 0
  @exclusivity(unchecked) private var payloadCount = 0
  @exclusivity(unchecked) private var record = RecordLayout()
  @exclusivity(unchecked) private var lastRowid: Int64?

  /// The current row's rowid.
  public private(set) var rowid: Int64 = 0

  /// The number of values in each row: the table's columns.
  public var columnCount: Int { table.columns.count }

  init(pager: Pager, table: SQLiteTable) throws {
    if let reason = table.unsupportedReason {
      throw SQLiteReaderError.unsupported(pager.name, "table \(table.name) is \(reason)")
    }
    self.pager = pager
    self.table = table
    encoding = pager.header?.textEncoding ?? .utf8
    visited = pager.pageSet()
    leaf = ByteBuffer(capacity: pager.pageSize)
    overflow = ByteBuffer(capacity: pager.pageSize)
    overflowPage = ByteBuffer(capacity: pager.pageSize)
  }

  private var name: String { pager.name }

  /// Moves to the next row; false when there are no more. Throws when the table's pages are
  /// damaged; the cursor is then finished.
  public func next() throws -> Bool {
    guard !finished else { return false }
    do {
      if !started {
        started = true
        try pager.checkTablePage(
          table.rootPage, from: nil, "the root of table \(table.name)", visited: &visited)
        try descend(to: table.rootPage)
      }
      while true {
        if let tree = leafTree, nextCell < tree.cellCount {
          try readCell(nextCell, of: tree)
          nextCell += 1
          return true
        }
        leafTree = nil
        guard let child = try nextChild() else {
          finished = true
          return false
        }
        try descend(to: child)
      }
    } catch {
      finished = true
      throw error
    }
  }

  /// The next child page to visit from the interior pages above, popping finished ones.
  private func nextChild() throws -> UInt32? {
    while var level = levels.last {
      let bytes = level.buffer.bytes
      let cell = level.nextChild
      let child: UInt32
      if cell < level.tree.cellCount {
        let offset = try level.tree.cellOffset(
          cell, in: bytes, number: level.page, usableSize: pager.usableSize, file: name)
        child = bytes.bigEndianUInt32(at: offset)
      } else if cell == level.tree.cellCount {
        child = level.tree.rightChild
      } else {
        spareBuffers.append(levels.removeLast().buffer)
        continue
      }
      level.nextChild += 1
      levels[levels.count - 1] = level
      try pager.checkTablePage(
        child, from: level.page,
        cell < level.tree.cellCount ? "cell \(cell)'s child" : "the right-most child",
        visited: &visited)
      return child
    }
    return nil
  }

  /// Reads page `page` (already checked and marked visited): a leaf becomes the current
  /// leaf; an interior page is pushed, to be walked by `nextChild`.
  private func descend(to page: UInt32) throws {
    let buffer = spareBuffers.popLast() ?? ByteBuffer(capacity: pager.pageSize)
    try pager.read(page, into: buffer)
    let tree = try BTreePage(buffer.bytes, number: page, usableSize: pager.usableSize, file: name)
    if tree.kind == .leafTable {
      spareBuffers.append(leaf)
      leaf = buffer
      leafPage = page
      leafTree = tree
      nextCell = 0
      return
    }
    guard levels.count < Self.maximumDepth else {
      throw SQLiteReaderError.corrupted(
        name, page: page, "the b-tree of table \(table.name) is deeper than 20 levels")
    }
    levels.append(Level(page: page, buffer: buffer, tree: tree, nextChild: 0))
  }

  /// Makes cell `index` of the current leaf the current row: its rowid, its payload (put
  /// together from its overflow pages if it spilled) and its record's layout.
  private func readCell(_ index: Int, of tree: BTreePage) throws {
    let page = leaf.bytes
    let usable = pager.usableSize
    let offset = try tree.cellOffset(
      index, in: page, number: leafPage, usableSize: usable, file: name)
    guard let (payloadSize, sizeLength) = page.varint(at: offset, end: usable),
      let (key, keyLength) = page.varint(at: offset + sizeLength, end: usable)
    else {
      throw SQLiteReaderError.corrupted(name, page: leafPage, "cell \(index) runs past the page")
    }
    let rowid = Int64(bitPattern: key)
    if let lastRowid, rowid <= lastRowid {
      throw SQLiteReaderError.corrupted(
        name, page: leafPage,
        "cell \(index) has rowid \(rowid), not above the previous row's \(lastRowid)")
    }
    let start = offset + sizeLength + keyLength
    let local = localPayloadSize(payloadSize: payloadSize, usableSize: usable)
    let spills = UInt64(local) < payloadSize
    guard start + local + (spills ? 4 : 0) <= usable else {
      throw SQLiteReaderError.corrupted(
        name, page: leafPage, "cell \(index)'s payload of \(payloadSize) bytes runs past the page")
    }
    if spills {
      try assembleOverflow(
        cell: index, local: UnsafeRawBufferPointer(rebasing: page[start..<start + local]),
        total: payloadSize, first: page.bigEndianUInt32(at: start + local))
      payloadInLeaf = false
      payloadStart = 0
      payloadCount = overflow.count
    } else {
      payloadInLeaf = true
      payloadStart = start
      payloadCount = local
    }
    if let problem = record.read(payload) {
      throw SQLiteReaderError.corrupted(name, page: leafPage, "cell \(index): \(problem)")
    }
    self.rowid = rowid
    lastRowid = rowid
  }

  /// Puts a spilled payload together in `overflow`: the bytes on the leaf, then each
  /// overflow page's (next page number (4), then content) until `total` bytes are there.
  private func assembleOverflow(
    cell: Int, local: UnsafeRawBufferPointer, total: UInt64, first: UInt32
  ) throws {
    let perPage = UInt64(pager.usableSize - 4)
    // Never allocate for more than the database's pages could hold.
    guard total <= Self.maximumPayload,
      total - UInt64(local.count) <= UInt64(pager.readablePages) * perPage
    else {
      throw SQLiteReaderError.corrupted(
        name, page: leafPage, "cell \(cell)'s payload of \(total) bytes is larger than the database"
      )
    }
    overflow.count = 0
    overflow.reserve(Int(total))
    overflow.append(local)
    var page = first
    var from = leafPage
    while UInt64(overflow.count) < total {
      try pager.checkTablePage(
        page, from: from,
        from == leafPage ? "cell \(cell)'s first overflow page" : "the next overflow page",
        visited: &visited)
      try pager.read(page, into: overflowPage)
      let bytes = overflowPage.bytes
      let take = Int(min(perPage, total - UInt64(overflow.count)))
      overflow.append(UnsafeRawBufferPointer(rebasing: bytes[4..<4 + take]))
      from = page
      page = bytes.bigEndianUInt32(at: 0)
      if page == 0, UInt64(overflow.count) < total {
        throw SQLiteReaderError.corrupted(
          name, page: from,
          "the overflow chain ends after \(overflow.count) of the payload's \(total) bytes")
      }
    }
  }

  /// The current row's payload: the record.
  private var payload: UnsafeRawBufferPointer {
    payloadInLeaf
      ? UnsafeRawBufferPointer(rebasing: leaf.bytes[payloadStart..<payloadStart + payloadCount])
      : overflow.bytes
  }

  /// Value `column` (0 to ``columnCount`` - 1) of the current row, as SQLite returns it.
  ///
  /// Throws when the row has no field for a column added later and the column's default is
  /// one the reader does not evaluate (an expression).
  public func value(at column: Int) throws -> SQLiteValue {
    precondition(column >= 0 && column < table.columns.count, "column \(column) is out of range")
    let definition = table.columns[column]
    if definition.isRowidAlias { return .integer(rowid) }
    guard column < record.count else {
      switch definition.defaultValue {
      case .value(let value): return value
      case .unsupported(let sql):
        throw SQLiteReaderError.unsupported(
          name,
          "table \(table.name): a row written before column \(definition.name) was added reads "
            + "its default \(sql), which this reader does not evaluate")
      }
    }
    let value = payload.recordValue(
      serialType: record.serialTypes[column], at: record.offsets[column], encoding: encoding,
      scratch: scratch)
    if definition.affinity == .real, case .integer(let integer) = value {
      return .real(Double(integer))
    }
    return value
  }

  /// Calls `body` with the UTF-8 bytes of value `column` of the current row if it is text,
  /// without making a `String` (UTF-16 text is converted into a reused buffer); returns nil
  /// without calling `body` if the value is not text. The bytes are valid only inside `body`,
  /// which must not move the cursor. UTF-8 text comes exactly as stored, ill-formed or not.
  public func withUTF8Text<Result>(
    at column: Int, _ body: (UnsafeRawBufferPointer) throws -> Result
  ) throws -> Result? {
    precondition(column >= 0 && column < table.columns.count, "column \(column) is out of range")
    guard column < record.count, !table.columns[column].isRowidAlias else {
      guard case .text(var text) = try value(at: column) else { return nil }
      return try text.withUTF8 { try body(UnsafeRawBufferPointer($0)) }
    }
    let serialType = record.serialTypes[column]
    guard serialType >= 13, serialType & 1 == 1 else { return nil }
    let start = record.offsets[column]
    let text = UnsafeRawBufferPointer(rebasing: payload[start..<start + record.bodySize(column)])
    switch encoding {
    case .utf8:
      return try body(text)
    case .utf16LittleEndian, .utf16BigEndian:
      scratch.count = 0
      appendUTF8(fromUTF16: text, bigEndian: encoding == .utf16BigEndian, to: scratch)
      return try body(scratch.bytes)
    }
  }

  /// Whether value `column` of the current row is text well-formed in the database's
  /// encoding: UTF-8 as Unicode defines it, or UTF-16 without an unpaired surrogate. Nil if
  /// the value is not text.
  ///
  /// SQLite stores text's bytes as it is given them, checked or not. ``value(at:)`` reads
  /// ill-formed sequences as U+FFFD, so two texts that differ only there read as the same
  /// `String` (and as the same UTF-8 from ``withUTF8Text(at:_:)`` in a UTF-16 database): a
  /// caller that must keep different values apart (keys) asks this first.
  public func isWellFormedText(at column: Int) throws -> Bool? {
    precondition(column >= 0 && column < table.columns.count, "column \(column) is out of range")
    guard column < record.count, !table.columns[column].isRowidAlias else {
      // A default is read from the table's statement, text already decoded.
      guard case .text = try value(at: column) else { return nil }
      return true
    }
    let serialType = record.serialTypes[column]
    guard serialType >= 13, serialType & 1 == 1 else { return nil }
    let start = record.offsets[column]
    return isWellFormed(
      UnsafeRawBufferPointer(rebasing: payload[start..<start + record.bodySize(column)]),
      encoding: encoding)
  }

  /// The current row, every value made.
  public func row() throws -> SQLiteRow {
    var values: [SQLiteValue] = []
    values.reserveCapacity(table.columns.count)
    for column in table.columns.indices { values.append(try value(at: column)) }
    return SQLiteRow(rowid: rowid, values: values)
  }
}
