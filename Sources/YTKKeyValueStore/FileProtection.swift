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
  /// Every class.
  static let all: [FileProtection] = [
    .none, .complete, .completeUnlessOpen, .completeUntilFirstUserAuthentication,
  ]

  /// Gives the directory at `path` this class, then every file in it (listed through
  /// `fileSystem`); files created in the directory later inherit the class from it.
  ///
  /// A writer's open calls it once it holds the store (an open refused `.locked` changes no
  /// file), and a backup for its copy's directory while it is still empty. The class is the
  /// store's directory's alone: the directories above it are the app's, and the files it
  /// makes there inherit their class. A class that cannot be set is an error, not a store
  /// left less protected than asked.
  func apply(
    toDirectory path: String, fileSystem: any FileSystem, access: FileProtectionAccess
  ) throws(LogStoreError) {
    try access.setClass(self, path)
    for name in try fileSystem.contentsOfDirectory(path) {
      try access.setClass(self, path + "/" + name)
    }
  }
}

/// Reads and sets the data-protection class of a file or directory: the system's calls where
/// it has data protection (``system``), none elsewhere. Tests give their own, to check which
/// files get a class and when on a system without data protection.
package struct FileProtectionAccess: Sendable {
  /// The class of the file or directory at the path; nil when it has none of the four.
  package var classOf: @Sendable (_ path: String) throws(LogStoreError) -> FileProtection?
  /// Gives the file or directory at the path the class.
  package var setClass:
    @Sendable (_ protection: FileProtection, _ path: String) throws(LogStoreError) -> Void

  package init(
    classOf: @escaping @Sendable (String) throws(LogStoreError) -> FileProtection?,
    setClass: @escaping @Sendable (FileProtection, String) throws(LogStoreError) -> Void
  ) {
    self.classOf = classOf
    self.setClass = setClass
  }

  /// The system's: `FileManager`'s protection attribute on iOS, iPadOS, tvOS, watchOS and
  /// visionOS; nil on macOS (Mac Catalyst included) and off Apple platforms.
  package static var system: FileProtectionAccess? {
    #if (os(iOS) && !targetEnvironment(macCatalyst)) || os(tvOS) || os(watchOS) || os(visionOS)
      FileProtectionAccess(
        classOf: { path throws(LogStoreError) in
          let attributes: [FileAttributeKey: Any]
          do {
            attributes = try FileManager.default.attributesOfItem(atPath: path)
          } catch {
            throw FileProtectionAccess.storeError(error, reading: true, path: path)
          }
          guard let type = attributes[.protectionKey] as? FileProtectionType else { return nil }
          return FileProtection.all.first { FileProtectionAccess.systemType(of: $0) == type }
        },
        setClass: { protection, path throws(LogStoreError) in
          let type = FileProtectionAccess.systemType(of: protection)
          do {
            try FileManager.default.setAttributes([.protectionKey: type], ofItemAtPath: path)
          } catch {
            throw FileProtectionAccess.storeError(error, reading: false, path: path)
          }
        })
    #else
      nil
    #endif
  }

  #if (os(iOS) && !targetEnvironment(macCatalyst)) || os(tvOS) || os(watchOS) || os(visionOS)
    /// The system's type for each class: the one mapping, read both ways.
    private static func systemType(of protection: FileProtection) -> FileProtectionType {
      switch protection {
      case .none: .none
      case .complete: .complete
      case .completeUnlessOpen: .completeUnlessOpen
      case .completeUntilFirstUserAuthentication: .completeUntilFirstUserAuthentication
      }
    }

    /// A file manager's failure as the store reports it: refusals as `.permissionDenied`.
    private static func storeError(_ error: any Error, reading: Bool, path: String)
      -> LogStoreError
    {
      let message =
        "cannot \(reading ? "read" : "set") the data protection of \(path): "
        + error.localizedDescription
      if let cocoa = error as? CocoaError,
        cocoa.code == .fileReadNoPermission || cocoa.code == .fileWriteNoPermission
      {
        return LogStoreError(.permissionDenied, message)
      }
      return LogStoreError(.io, message)
    }
  #endif
}
