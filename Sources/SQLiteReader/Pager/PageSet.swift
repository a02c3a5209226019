/// A set of page numbers from 1 to a limit: the pages a walk has visited (so a cycle is caught
/// the first time a page comes round again) and the pages on the freelist. Pages up to
/// `denseLimit` (those the database file holds) take a bit each; pages above it (those only a
/// WAL or journal holds, whose numbers can be anything up to the limit) an entry each. Its
/// size is bounded by the pages the files hold, never by a number read from them.
struct PageSet {
  private var words: [UInt64]
  private var sparse: Set<UInt32> = []
  /// The largest page number the set can hold.
  let limit: UInt32
  private let denseLimit: UInt32

  init(limit: UInt32, denseLimit: UInt32? = nil) {
    self.limit = limit
    self.denseLimit = min(limit, denseLimit ?? limit)
    words = Array(repeating: 0, count: Int(self.denseLimit / 64) + 1)
  }

  func contains(_ page: UInt32) -> Bool {
    guard page <= limit else { return false }
    guard page <= denseLimit else { return sparse.contains(page) }
    return words[Int(page / 64)] & (1 << UInt64(page % 64)) != 0
  }

  /// Adds `page`; false when it was there already. Pages above the limit are not kept.
  @discardableResult
  mutating func insert(_ page: UInt32) -> Bool {
    guard page <= limit else { return true }
    guard page <= denseLimit else { return sparse.insert(page).inserted }
    let bit: UInt64 = 1 << UInt64(page % 64)
    let index = Int(page / 64)
    if words[index] & bit != 0 { return false }
    words[index] |= bit
    return true
  }
}
