/// The numbers a store's new files get: segments, and index files, from one counter that only
/// grows, so that a number is never reused, not even that of a file whose creation failed.
/// (In `.manyProcesses` use the counter is the shared state's: the numbers a write that died
/// took without publishing are taken again, once the next writer has removed their files and
/// the manifest no longer lists them; no commit ever named them.)
///
/// Guarded by the log's lock.
struct FileNumbers {
  /// The number the next file gets.
  private(set) var next: UInt32
  private let directory: String

  init(next: UInt32, directory: String) {
    self.next = next
    self.directory = directory
  }

  /// Takes `count` numbers in a row and returns the first.
  mutating func take(_ count: UInt32 = 1) throws(LogStoreError) -> UInt32 {
    try check(count)
    defer { next += count }
    return next
  }

  /// Throws unless `count` numbers from the next one are below the highest a store uses
  /// (2^31: a store would need billions of segments to get there; only a file named so by
  /// hand or by damage brings it close).
  func check(_ count: UInt32) throws(LogStoreError) {
    guard next < StoreFileName.maximumNumber, count <= StoreFileName.maximumNumber - next
    else {
      throw LogStoreError(
        .corrupted,
        "the file numbers of \(directory) are used up (the next would be \(next)): "
          + "a file there has a number no store reaches; `ytkkv recover` rebuilds the store")
    }
  }
}
