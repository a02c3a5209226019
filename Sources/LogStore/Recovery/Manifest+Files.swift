/// Reading and replacing a store's manifest file through the file-system seam.
extension Manifest {
  /// The manifest of the store in `directory`; nil when there is none or it cannot be used
  /// (then the directory listing stands in for it).
  static func read(directory: String, fileSystem: any FileSystem) throws(LogStoreError)
    -> Manifest?
  {
    let handle: any FileHandle
    do {
      handle = try fileSystem.openFile(directory + "/" + fileName, mode: .readOnly)
    } catch  where error.isMissingFile {
      return nil
    }
    defer { handle.close() }
    // A manifest holds four bytes a segment; a store has a few hundred segments at most. A
    // file far larger than that is not a manifest.
    let size = try handle.size()
    guard size <= 1 << 24 else { return nil }
    let bytes = try handle.readBytes(count: size)
    guard bytes.count == size else { return nil }
    return try? bytes.withBytes { buffer throws(Invalid) in try decode(buffer) }
  }

  /// Replaces the manifest of the store in `directory` with this one, durably: written under
  /// a temporary name, synced, renamed over the old one, and the directory synced. A reader
  /// sees the old manifest or this one, never a mix.
  func publish(directory: String, fileSystem: any FileSystem) throws(LogStoreError) {
    let temporary = directory + "/" + Self.temporaryName
    let handle = try fileSystem.openFile(temporary, mode: .createOrOpen)
    do {
      try handle.truncate(to: 0)
      try encoded().withBytes { bytes throws(LogStoreError) in try handle.write(bytes, at: 0) }
      try handle.synchronize(.durable)
      handle.close()
      try fileSystem.renameFile(temporary, to: directory + "/" + Self.fileName)
      try fileSystem.synchronizeDirectory(directory)
    } catch {
      handle.close()
      throw error
    }
  }
}
