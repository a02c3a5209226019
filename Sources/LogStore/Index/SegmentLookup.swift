/// The open segments of a store, found by number in constant time.
///
/// Every read turns a record's segment number into its file, so the lookup must not grow with
/// the number of segments, nor cost a hash per read. A store's live numbers lie in a narrow
/// window (a compaction reserves a few numbers for its outputs, and later ones count up from
/// there), so they are kept in an array indexed from the lowest. A window far wider than the
/// segments (numbers given by hand or by damage) falls back to the dictionary.
///
/// A value: a copy holds every segment it lists open, which is how iteration reads values
/// after releasing the index lock while a compaction deletes the files.
struct SegmentLookup {
  private(set) var byNumber: [UInt32: SegmentFile] = [:]
  private var dense: [SegmentFile?] = []
  private var base: UInt32 = 0

  init(_ segments: [UInt32: SegmentFile] = [:]) {
    byNumber = segments
    rebuild()
  }

  @inline(__always)
  subscript(number: UInt32) -> SegmentFile? {
    get {
      // Below `base`, the subtraction wraps to a large number, caught by the bound check.
      let slot = Int(truncatingIfNeeded: number &- base)
      if slot >= 0, slot < dense.count { return dense[slot] }
      return dense.isEmpty ? byNumber[number] : nil
    }
    set {
      byNumber[number] = newValue
      rebuild()
    }
  }

  var count: Int { byNumber.count }
  var numbers: Dictionary<UInt32, SegmentFile>.Keys { byNumber.keys }

  /// Changes are rare (a rotation, a compaction's swap), so each rebuilds the array.
  private mutating func rebuild() {
    dense = []
    guard let low = byNumber.keys.min(), let high = byNumber.keys.max() else { return }
    let width = Int(high - low) + 1
    // Beyond this, the dictionary costs less memory than the holes would.
    guard width <= 4 * byNumber.count + 64 else { return }
    base = low
    dense = Array(repeating: nil, count: width)
    for (number, file) in byNumber { dense[Int(number - low)] = file }
  }
}
