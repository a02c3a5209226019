/// Keeps the manifest on disk listing the live segments: replaces it when the list changes
/// (``Manifest/publish(directory:fileSystem:)``, atomically), and remembers what it listed
/// last so that an unchanged list writes nothing.
///
/// In `.manyProcesses` use other processes replace the manifest too, so what this process
/// listed or read last proves nothing: each publish reads the manifest on disk first (with the
/// store's write lock held, which every process that replaces it holds). A view read while a
/// rotation that later died had listed its new segment, say, believed that segment listed after
/// the next writer took it out again; a rotation of this process into the same number then
/// left the manifest without its new active segment.
///
/// Guarded by the log's lock.
struct ManifestPublisher {
  private let directory: String
  private let fileSystem: any FileSystem
  /// Other processes replace the manifest too (`.manyProcesses`).
  private let sharedWithOthers: Bool
  /// The segments the manifest on disk lists; nil when unknown (a publish failed midway).
  private var published: [UInt32]?
  /// The generation of the last manifest written or read.
  private(set) var generation: UInt64

  /// A publisher for the store whose manifest an open read (nil: none).
  init(
    directory: String, fileSystem: any FileSystem, read manifest: Manifest?,
    sharedWithOthers: Bool
  ) {
    self.directory = directory
    self.fileSystem = fileSystem
    self.sharedWithOthers = sharedWithOthers
    published = manifest?.segments
    generation = manifest?.generation ?? 0
  }

  /// Replaces the manifest with one listing `numbers` (sorted), unless it lists them already.
  mutating func publish(_ numbers: [UInt32]) throws(LogStoreError) {
    if sharedWithOthers {
      let onDisk = try Manifest.read(directory: directory, fileSystem: fileSystem)
      published = onDisk?.segments
      // Never a generation another manifest had: a process compares the generation of its
      // view with the newest commit's to know whether the segments changed.
      generation = max(generation, onDisk?.generation ?? 0)
    }
    guard published != numbers else { return }
    generation += 1
    published = nil
    try Manifest(segments: numbers, generation: generation).publish(
      directory: directory, fileSystem: fileSystem)
    published = numbers
  }
}
