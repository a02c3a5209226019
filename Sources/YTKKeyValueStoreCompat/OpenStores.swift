import Foundation
import YTKKeyValueStore

/// The stores that ``YTKKeyValueStore`` instances of this process have open, by directory.
///
/// The original let an app make any number of instances on one database, each with its own
/// SQLite connection, and apps did (one per screen or per service). This store is opened once
/// per process (a second open of the same directory is refused as `.locked`), so instances of
/// one store share one open, which the last of them to close or go away closes.
///
/// A store is known by its directory's identity (device and file number), not by its path's
/// text: paths through a symbolic link, or differing in case on a case-insensitive volume, name
/// one directory and share its open; names that are equal as Swift strings but not in their
/// bytes (`é` precomposed and decomposed) are two directories on Linux and two stores here.
final class OpenStores: @unchecked Sendable {
  // `@unchecked Sendable`: `stores` is read and written with `lock` held.
  static let shared = OpenStores()

  /// A directory as the file system knows it, whatever path names it.
  struct Identity: Hashable {
    let device: UInt64
    let file: UInt64

    /// The identity of what is at `path`, symbolic links followed (the attributes are a
    /// link's own); nil if nothing is.
    init?(of path: String) {
      let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
      guard let attributes = try? FileManager.default.attributesOfItem(atPath: target),
        let device = (attributes[.systemNumber] as? NSNumber)?.uint64Value,
        let file = (attributes[.systemFileNumber] as? NSNumber)?.uint64Value
      else { return nil }
      self.device = device
      self.file = file
    }
  }

  private let lock = NSLock()
  private var stores: [Identity: (store: KeyValueStore, users: Int)] = [:]

  /// The open store at `path` (absolute, standardized), opened with `open` if no instance has
  /// its directory open, and the key to ``release(_:)`` it with; one more user of it.
  func acquire(_ path: String, _ open: () throws(KeyValueStoreError) -> KeyValueStore)
    throws(KeyValueStoreError) -> (store: KeyValueStore, key: Identity)
  {
    lock.lock()
    defer { lock.unlock() }
    if let key = Identity(of: path), let entry = stores[key] {
      stores[key] = (entry.store, entry.users + 1)
      return (entry.store, key)
    }
    let store = try open()
    // The open made the directory if it was missing.
    guard let key = Identity(of: store.path) else {
      try? store.close()
      throw KeyValueStoreError(.io, "cannot read what identifies the directory \(store.path)")
    }
    stores[key] = (store, 1)
    return (store, key)
  }

  /// One user fewer of the store `key` names; the last closes it.
  func release(_ key: Identity) throws(KeyValueStoreError) {
    lock.lock()
    defer { lock.unlock() }
    guard let entry = stores[key] else { return }
    guard entry.users == 1 else {
      stores[key] = (entry.store, entry.users - 1)
      return
    }
    stores[key] = nil
    try entry.store.close()
  }

  /// `path` made absolute (from the current directory) and standardized (`.`, `..` and
  /// repeated or trailing slashes taken out): where the store is opened.
  static func absolute(_ path: String) -> String {
    URL(fileURLWithPath: path).standardizedFileURL.path
  }
}
