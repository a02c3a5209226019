import LogStore

#if canImport(Darwin)
  import Foundation
#elseif canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

extension KeyValueStore {
  /// Opens (creating if missing) the store called `name` in the platform's place for an
  /// app's data, as YTKKeyValueStore's `initDBWithName:` did:
  /// - Apple platforms: `<Application Support>/<bundle identifier or process name>/<name>`;
  /// - tvOS: `<Caches>/<bundle identifier or process name>/<name>`, since tvOS keeps no app
  ///   data on the device for good: the system may delete the store whenever the app is not
  ///   running, so keep what must last elsewhere (iCloud, a server);
  /// - elsewhere: `$XDG_DATA_HOME/<process name>/<name>`, with `~/.local/share` when
  ///   `XDG_DATA_HOME` is unset, empty or not an absolute path.
  ///
  /// Missing directories are created. ``path`` tells where the store is.
  ///
  /// ```swift
  /// let store = try KeyValueStore(name: "cache.db")
  /// ```
  ///
  /// - Parameters:
  ///   - name: One path component: not empty, not `.` or `..`, without `/` or NUL.
  ///   - options: As for ``init(path:options:)``.
  /// - Throws: `.invalidArgument` for a name that is not one path component, and whatever
  ///   ``init(path:options:)`` throws.
  public convenience init(name: String, options: StoreOptions = StoreOptions())
    throws(KeyValueStoreError)
  {
    try self.init(path: Self.path(ofStoreNamed: name), options: options)
  }

  /// Where ``init(name:options:)`` opens the store called `name`.
  package static func path(ofStoreNamed name: String) throws(KeyValueStoreError) -> String {
    try defaultDirectory() + "/" + checkedName(name)
  }

  /// `name`, if it is one path component.
  static func checkedName(_ name: String) throws(KeyValueStoreError) -> String {
    guard !name.isEmpty, name != ".", name != "..", !name.utf8.contains(UInt8(ascii: "/")),
      !name.utf8.contains(0)
    else {
      let shown = name.unicodeScalars.map { $0 == "\u{0}" ? "\\0" : String($0) }.joined()
      throw KeyValueStoreError(
        .invalidArgument,
        "a store name must be one path component (not empty, not . or .., without / or NUL), "
          + "not \"\(shown)\"")
    }
    return name
  }

  /// The directory that holds the stores opened by name.
  static func defaultDirectory() throws(KeyValueStoreError) -> String {
    #if canImport(Darwin)
      #if os(tvOS)
        // tvOS gives an app no local storage that lasts beyond a small user-defaults domain:
        // Caches is the place it can write, and the system purges it when it needs room.
        let (place, name) = (FileManager.SearchPathDirectory.cachesDirectory, "Caches")
      #else
        let (place, name) = (
          FileManager.SearchPathDirectory.applicationSupportDirectory, "Application Support"
        )
      #endif
      guard let support = FileManager.default.urls(for: place, in: .userDomainMask).first else {
        throw KeyValueStoreError(.io, "the system reports no \(name) directory")
      }
      let owner = Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName
      return support.path + "/" + owner
    #else
      let environment = ProcessInfo.processInfo.environment
      return try dataDirectory(
        environment: environment, processName: ProcessInfo.processInfo.processName)
    #endif
  }

  /// `$XDG_DATA_HOME/<process name>`, or `$HOME/.local/share/<process name>` when
  /// `XDG_DATA_HOME` is unset, empty or relative (the XDG Base Directory rules).
  static func dataDirectory(environment: [String: String], processName: String)
    throws(KeyValueStoreError) -> String
  {
    if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
      return trimmed(data) + "/" + processName
    }
    guard let home = environment["HOME"], home.hasPrefix("/") else {
      throw KeyValueStoreError(
        .io, "neither XDG_DATA_HOME nor HOME is an absolute path: no place for a store by name")
    }
    return trimmed(home) + "/.local/share/" + processName
  }

  /// `path` ready for `"/" + name`: without trailing slashes, and empty for the root.
  private static func trimmed(_ path: String) -> String {
    let path = StorePath.trimmingTrailingSlashes(path)
    return path == "/" ? "" : path
  }
}
