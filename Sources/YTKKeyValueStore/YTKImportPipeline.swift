import LogStore
import SQLiteReader

/// Rows of one table converted into what the store writes, to be written as one batch: the
/// items, and the rows left out.
///
/// The producer leaves the JSON of a chunk's quickly read rows as it is in the file (`raw`)
/// when the writer is idle, so that the writer, not the producer, turns it into the stored
/// form (``finish(with:output:)``): the two threads then share the work whichever is
/// slower.
struct YTKImportChunk: Sendable {
  /// A row left out, and where it was: after how many of the chunk's items.
  struct Rejected: Sendable {
    var itemsBefore: Int
    var id: String
    var reason: String
  }

  var puts: PackedPuts
  /// Whether each item's value is still the file's JSON text rather than its stored form:
  /// one flag per item, or empty when every value is in its stored form.
  var raw: [Bool] = []
  var rejected: [Rejected] = []
  /// The rows of the file this chunk stands for (items and rejected rows).
  var rows = 0

  init(table: String) {
    puts = PackedPuts(table: table)
  }

  var byteCount: Int { puts.keys.count + puts.values.count }

  /// The puts to write, every value in the stored form, and the rows left out in the order
  /// of the file: a raw value that is not JSON, or too long once written, leaves its row out
  /// with the reason the row-by-row conversion (``YTKRow``) gives.
  func finish(with canonicalizer: inout JSONCanonicalizer, output: inout JSONOutput)
    -> (puts: PackedPuts, rejected: [Rejected])
  {
    guard raw.contains(true) else { return (puts, rejected) }
    var finished = PackedPuts(table: puts.table)
    finished.keys.reserveCapacity(puts.keys.count)
    finished.values.reserveCapacity(puts.values.count)
    finished.ends.reserveCapacity(puts.count)
    // Both kinds of rows left out, in the file's order, counted in the finished items.
    var merged: [Rejected] = []
    var next = 0
    var index = 0
    puts.forEachPut { key, value, timestamp in
      defer { index += 1 }
      while next < rejected.count, rejected[next].itemsBefore <= index {
        merged.append(
          Rejected(
            itemsBefore: finished.count, id: rejected[next].id, reason: rejected[next].reason))
        next += 1
      }
      guard raw[index] else {
        finished.append(key: key, value: value, timestamp: timestamp)
        return
      }
      output.removeLast(output.count)
      // Raw text is at most `YTKRowProducer.rawLimit`, and its stored form at most 4.5 times
      // as long (`9e15` is written `9007199254740992.0`): under the value limit.
      var reason: String?
      do throws(JSONCodecError) {
        try canonicalizer.append(canonicalTextOf: value, to: &output)
      } catch {
        reason = "the json column is not JSON: \(error.message)"
      }
      if let reason {
        merged.append(
          Rejected(
            itemsBefore: finished.count, id: String(decoding: key, as: UTF8.self), reason: reason))
      } else {
        output.withBytes { finished.append(key: key, value: $0, timestamp: timestamp) }
      }
    }
    for rejection in rejected[next...] {
      merged.append(
        Rejected(itemsBefore: finished.count, id: rejection.id, reason: rejection.reason))
    }
    return (finished, merged)
  }

}

/// Reads the rows of the chosen tables and converts them into chunks: the half of an import
/// that runs on a thread of its own while the caller's thread writes the chunks before it.
///
/// Each row is converted the quick way when it is the common case (an ASCII id, JSON text,
/// a created time as text, in a table whose name the store holds), straight from the file's
/// bytes into the chunk; any other row goes through ``YTKRow/read(_:_:using:)``, which makes
/// the same item or says why it is left out.
final class YTKRowProducer: @unchecked Sendable {
  // Used by one thread at a time: the producing thread, or the caller when there is none
  // (so the runtime's exclusivity checks, per access of a class's property, are not needed).
  private let database: SQLiteDatabase
  private let tables: [YTKTable]
  private var tableIndex = 0
  private var cursor: SQLiteRowCursor?
  @exclusivity(unchecked) private var canonicalizer = JSONCanonicalizer()
  /// The canonical text of the row being converted.
  @exclusivity(unchecked) private var output = JSONOutput(capacity: 4096)

  /// The longest JSON text left raw: 8 MiB, whose stored form is always under the store's
  /// value limit, so that the writer's conversion need not check it.
  static let rawLimit = 8 << 20

  init(database: SQLiteDatabase, tables: [YTKTable]) {
    self.database = database
    self.tables = tables
  }

  deinit {
    output.release()
  }

  /// The next chunk: up to ``BatchWriter/maxOperations`` rows, or about
  /// ``BatchWriter/maxBytes`` of ids and text, of one table. Nil when every row is read.
  ///
  /// With `raw`, the JSON of the rows read quickly is left as the file has it (see
  /// ``YTKImportChunk``).
  func nextChunk(raw: Bool = false) throws -> YTKImportChunk? {
    while tableIndex < tables.count {
      let table = tables[tableIndex]
      let cursor = try self.cursor ?? database.cursor(over: table.table)
      self.cursor = cursor
      var chunk = YTKImportChunk(table: table.name)
      while chunk.rows < BatchWriter.maxOperations, chunk.byteCount < BatchWriter.maxBytes,
        try cursor.next()
      {
        try convertRow(cursor, table, raw: raw, into: &chunk)
      }
      if chunk.rows < BatchWriter.maxOperations, chunk.byteCount < BatchWriter.maxBytes {
        // The table is done.
        self.cursor = nil
        tableIndex += 1
      }
      if chunk.rows > 0 { return chunk }
    }
    return nil
  }

  private func convertRow(
    _ cursor: SQLiteRowCursor, _ table: YTKTable, raw: Bool, into chunk: inout YTKImportChunk
  ) throws {
    chunk.rows += 1
    let keyStart = chunk.puts.keys.count
    if table.refusal == nil, try convertQuickly(cursor, table, raw: raw, into: &chunk.puts) {
      if raw { chunk.raw.append(true) }
      return
    }
    chunk.puts.keys.removeLast(chunk.puts.keys.count - keyStart)
    switch try YTKRow.read(cursor, table, using: &canonicalizer) {
    case .item(let id, let value, let createdTime):
      chunk.puts.append(key: id.utf8, value: value, timestamp: createdTime)
      if raw { chunk.raw.append(false) }
    case .rejected(let id, let reason):
      chunk.rejected.append(.init(itemsBefore: chunk.puts.count, id: id, reason: reason))
    }
  }

  /// Converts the common row (an ASCII id, JSON text, a created time as plain decimal text)
  /// into `puts`, with its JSON text as it is when `raw`; false, having appended at most its
  /// id, for any other row.
  private func convertQuickly(
    _ cursor: SQLiteRowCursor, _ table: YTKTable, raw: Bool, into puts: inout PackedPuts
  ) throws -> Bool {
    // One column at a time: a UTF-16 file's text is handed out from one buffer.
    let idIsASCII = try cursor.withUTF8Text(at: table.id) { id -> Bool in
      guard id.count <= KeyValueStore.maxIDLength, id.allSatisfy({ $0 < 0x80 }) else {
        return false
      }
      puts.keys += id
      return true
    }
    guard idIsASCII == true else { return false }
    output.removeLast(output.count)
    let isJSON = try cursor.withUTF8Text(at: table.json) { text -> Bool in
      if raw, text.count <= Self.rawLimit {
        output.append(contentsOf: text.bindMemory(to: UInt8.self))
        return true
      }
      do {
        try canonicalizer.append(canonicalTextOf: text, to: &output)
        return true
      } catch {
        return false
      }
    }
    // (Raw text over the limit goes the row-by-row way, which says why it is left out.)
    guard isJSON == true, output.count <= LogStore.maxValueLength else { return false }
    // UTF-16 text reached the canonicalizer converted, an unpaired surrogate as U+FFFD: such
    // a row goes the row-by-row way, which leaves it out. (It refuses ill-formed UTF-8.)
    if table.encoding != .utf8, try cursor.isWellFormedText(at: table.json) != true {
      return false
    }
    guard let time = try cursor.withUTF8Text(at: table.createdTime, YTKTime.timestamp(utf8:)),
      let createdTime = time
    else { return false }
    output.withBytes { puts.values += $0 }
    puts.ends.append(
      PackedPuts.End(key: puts.keys.count, value: puts.values.count, timestamp: createdTime))
    return true
  }
}

/// The chunks the producing thread has converted and the writing thread has not yet taken,
/// at most about ``byteLimit`` of them, so that a large file is never held in memory.
final class YTKChunkQueue: @unchecked Sendable {
  /// What the queue may hold before the producer waits: enough for the producer to keep
  /// converting while the writer checks the whole file first (the first pass, about a fifth
  /// of the conversion's time), for files of up to about a million rows like the benchmark's.
  static let byteLimit = 32 << 20

  // Guarded by `lock`.
  private let lock = ConditionLock()
  private var chunks: [YTKImportChunk] = []
  private var head = 0
  private var bytes = 0
  private var finished = false
  private var failure: (any Error)?
  private var cancelled = false

  /// Whether the writer is about to run out of chunks (it has at most one waiting): the
  /// producer then leaves the conversion of its next chunk to the writer, which would
  /// otherwise wait for it. With more waiting, the writer is the slower, and the producer
  /// converts.
  var isRunningLow: Bool { lock.withLock { chunks.count - head <= 1 } }

  /// Adds a chunk, waiting while the queue is full; false when the writer has given up.
  func put(_ chunk: YTKImportChunk) -> Bool {
    lock.withLock {
      while !cancelled, bytes > 0, bytes + chunk.byteCount > Self.byteLimit { lock.wait() }
      guard !cancelled else { return false }
      chunks.append(chunk)
      bytes += chunk.byteCount
      lock.broadcast()
      return true
    }
  }

  /// Marks the end of the chunks, or the producer's failure.
  func finish(failure: (any Error)?) {
    lock.withLock {
      finished = true
      self.failure = failure
      lock.broadcast()
    }
  }

  /// The next chunk, waiting for one; nil after the last.
  ///
  /// - Throws: the producer's failure, once the chunks before it are taken.
  func take() throws -> YTKImportChunk? {
    lock.lock()
    defer { lock.unlock() }
    while head == chunks.count, !finished { lock.wait() }
    guard head < chunks.count else {
      if let failure { throw failure }
      return nil
    }
    let chunk = chunks[head]
    chunks[head] = YTKImportChunk(table: "")
    head += 1
    if head == chunks.count {
      chunks.removeAll(keepingCapacity: true)
      head = 0
    }
    bytes -= chunk.byteCount
    lock.broadcast()
    return chunk
  }

  /// Tells the producer to stop.
  func cancel() {
    lock.withLock {
      cancelled = true
      lock.broadcast()
    }
  }
}
