/// Reading a hint file's header from the file.
extension HintFile {
  /// The length of segment `fileNumber` (with `salt`) that the hint file open as `handle`
  /// covers, read from its header alone; nil unless the header can be read, checks and names
  /// that segment. The entries are not read.
  static func coveredLength(
    readingHeaderOf handle: any FileHandle, fileNumber: UInt32, salt: UInt32
  ) -> Int? {
    guard let header = try? handle.readBytes(count: headerSize), header.count == headerSize
    else { return nil }
    return header.withUnsafeBytes {
      coveredLength(ofHeader: $0, fileNumber: fileNumber, salt: salt)
    }
  }
}
