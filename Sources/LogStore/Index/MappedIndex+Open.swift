extension MappedIndex {
  /// Opens the index file `number` of `directory` and checks its header and directory.
  static func open(
    directory: String, number: UInt32, fileSystem: any FileSystem
  ) throws(Rejection) -> MappedIndex {
    let path = directory + "/" + StoreFileName.index(number)
    let handle: any FileHandle
    do {
      handle = try fileSystem.openFile(path, mode: .readOnly)
    } catch {
      throw Rejection(reason: "cannot be opened: \(error.message)")
    }
    // The descriptor is not needed once the file is mapped.
    defer { handle.close() }
    do {
      let size = try handle.size()
      guard size >= F.headerSize else { throw Rejection(reason: "shorter than its header") }
      let mapping = try handle.map(length: size, writable: false)
      return try MappedIndex(
        number: number, path: path,
        bytes: UnsafeRawBufferPointer(rebasing: mapping.bytes[0..<size]),
        owner: mapping)
    } catch let rejection as Rejection {
      throw rejection
    } catch {
      throw Rejection(reason: "cannot be read: \(error)")
    }
  }
}
