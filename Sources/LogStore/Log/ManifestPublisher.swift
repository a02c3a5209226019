/// Keeps the manifest on disk listing the live segments: replaces it when the list changes
/// (``Manifest/publish(directory:fileSystem:)``, atomically), and remembers what it listed
/// last so that an unchanged list writes nothing.
///
/// Guarded by the log's lock.
struct ManifestPublisher {
  private let directory: String
  private let fileSystem: any FileSystem
  /// The segments the manifest on disk lists; nil when unknown (a publish failed midway).
  private var published: [UInt32]?
  /// The generation of the last manifest written or read.
  private(set) var generation: UInt64

  /// A publisher for the store whose manifest an open read (nil: none).
  init(directory: String, fileSystem: any FileSystem, read manifest: Manifest?) {
    self.directory = directory
    self.fileSystem = fileSystem
    published = manifest?.segments
    generation = manifest?.generation ?? 0
  }

  /// Replaces the manifest with one listing `numbers` (sorted), unless it lists them already;
  /// with `evenIfUnchanged`, in any case (another process may have written one since).
  mutating func publish(_ numbers: [UInt32], evenIfUnchanged: Bool = false)
    throws(LogStoreError)
  {
    guard published != numbers || evenIfUnchanged else { return }
    generation += 1
    published = nil
    try Manifest(segments: numbers, generation: generation).publish(
      directory: directory, fileSystem: fileSystem)
    published = numbers
  }
}
