import LogStore
import YTKKeyValueStore

/// How commands open stores: reads through a read-only open (so they work while another
/// process writes), writes through a normal open (which fails with "locked" if a
/// `.oneProcess` writer has the store), each in the sharing the store is in use with
/// (``sharing(for:manyProcesses:)``).
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

  /// The flag of every command that opens a store: open it in `.manyProcesses` use.
  static let manyProcessesFlag = "--many-processes"

  /// What the commands that open a store say of the flag, in their help.
  static let sharingHelp = """
    The store is opened the way the processes that have it open use it: in .manyProcesses
    use if apps have it open in that mode (reads then see their latest writes, and writes
    take part like theirs), otherwise in .oneProcess use. --many-processes opens it in
    .manyProcesses use even when nobody has it open, so that apps which open it in that mode
    meanwhile are not refused.
    """

  /// How to open `path`: `.manyProcesses` when asked or when the store is in that use now,
  /// else `.oneProcess`.
  static func sharing(for path: String, manyProcesses: Bool) -> StoreSharing {
    manyProcesses ? .manyProcesses : LogStore.sharingInUse(at: path) ?? .oneProcess
  }

  static func openForReading(_ path: String, manyProcesses: Bool = false) throws -> KeyValueStore {
    guard storeExists(path) else { throw missing(path) }
    return try KeyValueStore(
      path: path,
      options: StoreOptions(
        readOnly: true, sharing: sharing(for: path, manyProcesses: manyProcesses)))
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
  static func openForWriting(_ path: String, create: Bool = false, manyProcesses: Bool = false)
    throws -> KeyValueStore
  {
    guard create || storeExists(path) else { throw missing(path) }
    return try KeyValueStore(
      path: path,
      options: StoreOptions(
        compaction: .manual, sharing: sharing(for: path, manyProcesses: manyProcesses)))
  }
}
