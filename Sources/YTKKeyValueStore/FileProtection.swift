import LogStore

#if canImport(Darwin)
  import Foundation
#endif

/// The Apple data-protection class of a store's files: when the system can decrypt them.
/// Set with ``StoreOptions/fileProtection``; ignored on macOS and off Apple platforms.
public enum FileProtection: Sendable, Equatable {
  /// Always readable.
  case none
  /// Readable only while the device is unlocked (and for about ten seconds after it locks).
  /// A store kept open across a lock is not readable then: close it when protected data
  /// becomes unavailable (docs/PLATFORMS.md).
  case complete
  /// Files already open stay usable while the device is locked, and new files can be
  /// created; files not open cannot be opened until it is unlocked.
  case completeUnlessOpen
  /// Readable from the first unlock after the device starts until it shuts down. The
  /// default, and the system's default for app data: a store stays usable in the background.
  case completeUntilFirstUserAuthentication
}

extension FileProtection {
  /// Gives the store's directory this class, creating the directory if needed (through
  /// `fileSystem`, durably: `FileSystem.createDirectoryDurably(_:)`), and every file already
  /// in it; files created later in the directory inherit it from there. Only where the system
  /// has data protection; a no-op elsewhere.
  ///
  /// The class is the store's directory's alone. The directories above it that this creates
  /// (in a fresh container, `Application Support` and the bundle's own) get none of ours: they
  /// are the app's, and the files it makes there later inherit their class. A class that
  /// cannot be set is an error, not a store left less protected than asked.
  func apply(toStoreAt path: String, fileSystem: any FileSystem) throws(KeyValueStoreError) {
    #if (os(iOS) && !targetEnvironment(macCatalyst)) || os(tvOS) || os(watchOS) || os(visionOS)
      // Made as the engine makes it, each new directory synced into its parent: made here
      // first, the engine finds it and would not sync anything for it, and a power loss could
      // take the new store with it.
      try bridge { () throws(LogStoreError) in try fileSystem.createDirectoryDurably(path) }
      let manager = FileManager.default
      let attributes: [FileAttributeKey: Any] = [.protectionKey: type]
      do {
        try manager.setAttributes(attributes, ofItemAtPath: path)
        for name in try manager.contentsOfDirectory(atPath: path) {
          try manager.setAttributes(attributes, ofItemAtPath: path + "/" + name)
        }
      } catch {
        throw Self.storeError(error, path: path)
      }
    #endif
  }

  #if (os(iOS) && !targetEnvironment(macCatalyst)) || os(tvOS) || os(watchOS) || os(visionOS)
    private var type: FileProtectionType {
      switch self {
      case .none: .none
      case .complete: .complete
      case .completeUnlessOpen: .completeUnlessOpen
      case .completeUntilFirstUserAuthentication: .completeUntilFirstUserAuthentication
      }
    }

    /// A file manager's failure as the store reports it: refusals as `.permissionDenied`.
    private static func storeError(_ error: any Error, path: String) -> KeyValueStoreError {
      let message = "cannot set the data protection of \(path): \(error.localizedDescription)"
      if let cocoa = error as? CocoaError,
        cocoa.code == .fileReadNoPermission || cocoa.code == .fileWriteNoPermission
      {
        return KeyValueStoreError(.permissionDenied, message)
      }
      return KeyValueStoreError(.io, message)
    }
  #endif
}
