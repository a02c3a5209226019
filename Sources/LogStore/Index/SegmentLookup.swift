/// The open segments of a store, found by number in constant time.
///
/// A value: a copy holds every segment it lists open, which is how iteration reads values
/// after releasing the index lock while a compaction deletes the files.
struct SegmentLookup {
  private var files: Numbered<SegmentFile>

  init(_ segments: [UInt32: SegmentFile] = [:]) { files = Numbered(segments) }

  @inline(__always)
  subscript(number: UInt32) -> SegmentFile? {
    get { files[number] }
    set { files[number] = newValue }
  }

  var byNumber: [UInt32: SegmentFile] { files.all }
  var count: Int { files.all.count }
  var numbers: Dictionary<UInt32, SegmentFile>.Keys { files.all.keys }

  /// The segments' mapped bytes and salts, by number, for a walk that reads many records:
  /// read through the files, each record would retain and release its segment, an atomic
  /// operation that waits for the loads before it, so that the cache misses of successive
  /// records (read in key order, they lie anywhere) could not overlap. Valid while this lookup,
  /// which keeps the segments open, is held; taken when the walk starts, the bytes hold every
  /// record written before (a mapping never moves in the system's file system; in the
  /// simulated one, the memory it moved from is kept while mapped).
  func mappedForWalk() -> Numbered<MappedSegment> {
    files.map { MappedSegment(bytes: $0.mapping.bytes, salt: $0.salt) }
  }
}

/// A segment's mapped bytes and salt (``SegmentLookup/mappedForWalk()``).
struct MappedSegment {
  let bytes: UnsafeRawBufferPointer
  let salt: UInt32

  /// The record at `offset`, which ``isMember(at:)`` said is a batch's member or not
  /// (``SegmentFile/record(at:verify:)`` finds that out itself).
  func record(at offset: Int, member: Bool, verify: Bool) throws(RecordDecodingError) -> Record {
    try RecordCodec.decode(bytes, at: offset, salt: salt, member: member, verify: verify)
  }

  /// Whether the record at `offset` says it is a batch's member (``SegmentFile/isMember(at:in:)``).
  func isMember(at offset: Int) -> Bool { SegmentFile.isMember(at: offset, in: bytes) }
}

/// Values by segment number, found in constant time.
///
/// Every read turns a record's segment number into its file, so the lookup must not grow with
/// the number of segments, nor cost a hash per read. A store's live numbers lie in a narrow
/// window (a compaction reserves a few numbers for its outputs, and later ones count up from
/// there), so they are kept in an array indexed from the lowest. A window far wider than the
/// segments (numbers given by hand or by damage) falls back to the dictionary.
struct Numbered<Value> {
  private(set) var all: [UInt32: Value] = [:]
  private var dense: [Value?] = []
  private var base: UInt32 = 0

  init(_ values: [UInt32: Value]) {
    all = values
    rebuild()
  }

  @inline(__always)
  subscript(number: UInt32) -> Value? {
    get {
      // Below `base`, the subtraction wraps to a large number, caught by the bound check.
      let slot = Int(truncatingIfNeeded: number &- base)
      if slot >= 0, slot < dense.count { return dense[slot] }
      return dense.isEmpty ? all[number] : nil
    }
    set {
      // A new dictionary, never a change to the one in place: readers walk copies of this
      // lookup after leaving the index lock, and storage that is only read once shared is
      // what the thread sanitizer can check. (Writing in place once the readers' copies are
      // gone would be safe, but the sanitizer does not see the reference counts that order it,
      // and reports a race; docs/TESTING.md. The copy is the same work as `rebuild()`'s new
      // array of the same values, once per change, and changes are rare.)
      var changed = all.filter { $0.key != number }
      changed[number] = newValue
      all = changed
      rebuild()
    }
  }

  /// The same numbers with each value transformed.
  func map<T>(_ transform: (Value) -> T) -> Numbered<T> { Numbered<T>(all.mapValues(transform)) }

  /// Changes are rare (a rotation, a compaction's swap), so each rebuilds the array.
  private mutating func rebuild() {
    dense = []
    guard let low = all.keys.min(), let high = all.keys.max() else { return }
    let width = Int(high - low) + 1
    // Beyond this, the dictionary costs less memory than the holes would.
    guard width <= 4 * all.count + 64 else { return }
    base = low
    dense = Array(repeating: nil, count: width)
    for (number, value) in all { dense[Int(number - low)] = value }
  }
}
