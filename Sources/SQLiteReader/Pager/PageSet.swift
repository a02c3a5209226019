/// A set of page numbers from 1 to a limit, one bit each: the pages a walk has visited (so a
/// cycle is caught the first time a page comes round again) and the pages on the freelist.
/// Its size is bounded by the pages the files can hold, never by a number read from them.
struct PageSet {
  private var words: [UInt64]
  /// The largest page number the set can hold.
  let limit: UInt32

  init(limit: UInt32) {
    self.limit = limit
    words = Array(repeating: 0, count: Int(limit / 64) + 1)
  }

  func contains(_ page: UInt32) -> Bool {
    guard page <= limit else { return false }
    return words[Int(page / 64)] & (1 << UInt64(page % 64)) != 0
  }

  /// Adds `page`; false when it was there already. Pages above the limit are not kept.
  @discardableResult
  mutating func insert(_ page: UInt32) -> Bool {
    guard page <= limit else { return true }
    let bit: UInt64 = 1 << UInt64(page % 64)
    let index = Int(page / 64)
    if words[index] & bit != 0 { return false }
    words[index] |= bit
    return true
  }
}
