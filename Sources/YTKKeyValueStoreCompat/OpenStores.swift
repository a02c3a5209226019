import Foundation
import YTKKeyValueStore

/// The stores that ``YTKKeyValueStore`` instances of this process have open, by path.
///
/// The original let an app make any number of instances on one database, each with its own
/// SQLite connection, and apps did (one per screen or per service). This store is opened once
/// per process (a second open of the same directory is refused as `.locked`), so instances of
/// one path share one open, which the last of them to close or go away closes.
final class OpenStores: @unchecked Sendable {
  // `@unchecked Sendable`: `stores` is read and written with `lock` held.
  static let shared = OpenStores()

  private let lock = NSLock()
  private var stores: [String: (store: KeyValueStore, users: Int)] = [:]

  /// The open store at `path` (absolute, standardized), opened with `open` if no instance has
  /// it open; one more user of it.
  func acquire(_ path: String, _ open: () throws(KeyValueStoreError) -> KeyValueStore)
    throws(KeyValueStoreError) -> KeyValueStore
  {
    lock.lock()
    defer { lock.unlock() }
    if let entry = stores[path] {
      stores[path] = (entry.store, entry.users + 1)
      return entry.store
    }
    let store = try open()
    stores[path] = (store, 1)
    return store
  }

  /// One user fewer of the store at `path`; the last closes it.
  func release(_ path: String) throws(KeyValueStoreError) {
    lock.lock()
    defer { lock.unlock() }
    guard let entry = stores[path] else { return }
    guard entry.users == 1 else {
      stores[path] = (entry.store, entry.users - 1)
      return
    }
    stores[path] = nil
    try entry.store.close()
  }

  /// `path` as the key of its store: absolute (from the current directory) and standardized
  /// (`.`, `..` and repeated or trailing slashes taken out).
  static func key(_ path: String) -> String {
    URL(fileURLWithPath: path).standardizedFileURL.path
  }
}
