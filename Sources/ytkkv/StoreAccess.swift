import LogStore
import YTKKeyValueStore

/// How commands open stores: reads through a read-only open (so they work while another
/// process writes), writes through a normal open (which fails with "locked" if another
/// process has the store).
enum StoreAccess {
  /// Whether `path` holds a store: a directory with a lock file or a segment.
  static func storeExists(_ path: String) -> Bool {
    let fileSystem = SystemFileSystem()
    guard fileSystem.directoryExists(path),
      let names = try? fileSystem.contentsOfDirectory(path)
    else { return false }
    return names.contains { $0 == "LOCK" || $0.hasSuffix(".log") }
  }

  static func missing(_ path: String) -> CommandFailure {
    CommandFailure("there is no store at \(path)")
  }

  static func openForReading(_ path: String) throws -> KeyValueStore {
    guard storeExists(path) else { throw missing(path) }
    return try KeyValueStore(path: path, options: StoreOptions(readOnly: true))
  }

  /// Removes the store at `path` if it holds nothing: its files, then its directory (a store
  /// a command created before failing). Best effort.
  static func removeEmptyStore(_ path: String) {
    let fileSystem = SystemFileSystem()
    guard let store = try? KeyValueStore(path: path, options: StoreOptions(readOnly: true)),
      (try? store.tableNames().isEmpty) == true
    else { return }
    try? store.close()
    for name in (try? fileSystem.contentsOfDirectory(path)) ?? [] {
      try? fileSystem.removeFile(path + "/" + name)
    }
    try? fileSystem.removeDirectory(path)
  }

  /// Opens for writing; with `create`, a missing store is created.
  static func openForWriting(_ path: String, create: Bool = false) throws -> KeyValueStore {
    guard create || storeExists(path) else { throw missing(path) }
    return try KeyValueStore(path: path, options: StoreOptions(compaction: .manual))
  }
}
