/// The one error type of the `LogStore` module.
///
/// An error has a ``code`` a program can switch on and a ``message`` a person can read: it
/// names the table, key, file or system call involved. Errors that come from the operating
/// system also carry the `errno` value in ``systemError``.
public struct LogStoreError: Error, CustomStringConvertible, Sendable, Equatable {
  /// What kind of failure this is. Extensible: new codes may be added in later versions, so
  /// a `switch` over codes should have a `default` branch.
  public struct Code: Hashable, Sendable, CustomStringConvertible {
    /// A stable identifier, such as `"tableNotFound"`.
    public let name: String

    /// A code of this name; the codes below are the ones the store throws.
    public init(_ name: String) { self.name = name }

    /// The code's name.
    public var description: String { name }

    /// A table name is empty, longer than 255 bytes of UTF-8, or contains a NUL character.
    public static let invalidTableName = Code("invalidTableName")
    /// The table was never created, or has been dropped.
    public static let tableNotFound = Code("tableNotFound")
    /// A key, value or batch is over its size limit, or an argument is otherwise unusable.
    public static let invalidArgument = Code("invalidArgument")
    /// Another process has the store open for writing.
    public static let locked = Code("locked")
    /// The store was opened with `readOnly` and the call would write.
    public static let readOnly = Code("readOnly")
    /// The store has been closed.
    public static let closed = Code("closed")
    /// Stored data failed its checksum or is not in a format this version can read.
    public static let corrupted = Code("corrupted")
    /// A system call failed; the message names the operation and the file.
    public static let io = Code("io")
    /// The file system has no space (or quota) left for the write.
    public static let diskFull = Code("diskFull")
    /// There is no store at the path (only for read-only opens, which never create one).
    public static let storeNotFound = Code("storeNotFound")
    /// The system refused access to a file (`EACCES`, `EPERM`): its permissions, a sandbox,
    /// or on Apple platforms data protection while the device is locked. Not damage: the
    /// same call can succeed once access is back.
    public static let permissionDenied = Code("permissionDenied")
  }

  /// What kind of failure this is.
  public var code: Code
  /// A sentence a person understands, naming what failed and where.
  public var message: String
  /// The `errno` value of the failing system call, when there was one.
  public var systemError: Int32?

  /// An error of kind `code`, described by `message`, with the `errno` of the failing system call if
  /// there was one.
  public init(_ code: Code, _ message: String, systemError: Int32? = nil) {
    self.code = code
    self.message = message
    self.systemError = systemError
  }

  /// The message.
  public var description: String { message }
}

extension LogStoreError.Code {
  /// ``LogStoreError/tableNotMade(_:)``, internal to the store.
  static let tableNotMade = LogStoreError.Code("tableNotMade")
}

// The errors raised in more than one place, made in one, so that every caller says the same.
extension LogStoreError {
  /// A call that would write, on a store opened with `readOnly`.
  static func readOnly(_ directory: String) -> LogStoreError {
    LogStoreError(.readOnly, "the store at \(directory) was opened read-only")
  }

  /// A call on a closed store.
  static func closed(_ directory: String) -> LogStoreError {
    LogStoreError(.closed, "the store at \(directory) is closed")
  }

  /// A read met a table of the index file that is not made yet (``KeyDirectory``): never
  /// thrown to a caller of the store, which makes the table and reads again
  /// (``StoreEngine``).
  static func tableNotMade(_ table: String) -> LogStoreError {
    LogStoreError(.tableNotMade, "table \"\(table)\" is not read from the index file yet")
  }

  /// The index points into segment `number`, which the store no longer has open: the index
  /// and the files disagree, so this is reported as damage.
  static func segmentMissing(_ number: UInt32, in directory: String) -> LogStoreError {
    LogStoreError(.corrupted, "segment \(number) is missing from \(directory)")
  }
}
