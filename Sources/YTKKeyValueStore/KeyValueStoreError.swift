import LogStore

/// The error every ``KeyValueStore`` call throws.
///
/// `code` is for programs (`catch let error where error.code == .tableNotFound`), `message`
/// for people: it names the table, id, file or system call involved.
///
/// ```swift
/// do {
///   _ = try store.object(id: "1", from: "no_such_table")
/// } catch {
///   print(error)  // there is no table named "no_such_table" in /path/to/test.db
/// }
/// ```
public struct KeyValueStoreError: Error, CustomStringConvertible, Sendable, Equatable {
  /// What kind of failure this is. New codes may be added; switch with a `default`.
  public struct Code: Hashable, Sendable, CustomStringConvertible {
    /// A stable identifier such as `"tableNotFound"`.
    public let name: String

    /// A code of this name; the codes below are the ones the store throws.
    public init(_ name: String) { self.name = name }

    /// The code of the same name as the engine's `code`: every failure of the engine keeps
    /// its code when the store reports it, new engine codes included.
    public init(_ code: LogStoreError.Code) { self.init(code.name) }

    /// The code's name.
    public var description: String { name }

    // The engine's codes, as the store reports them (the meanings the store's users see).

    /// A table name is empty, longer than 255 bytes of UTF-8, or contains NUL.
    public static let invalidTableName = Code(LogStoreError.Code.invalidTableName)
    /// The table was never created, or was dropped.
    public static let tableNotFound = Code(LogStoreError.Code.tableNotFound)
    /// An id or value is over its limit, or a value cannot be represented as JSON.
    public static let invalidArgument = Code(LogStoreError.Code.invalidArgument)
    /// Another process has the store open for writing.
    public static let locked = Code(LogStoreError.Code.locked)
    /// The store was opened read-only and the call would write.
    public static let readOnly = Code(LogStoreError.Code.readOnly)
    /// The store has been closed.
    public static let closed = Code(LogStoreError.Code.closed)
    /// Stored data is damaged, or in a format this version cannot read.
    public static let corrupted = Code(LogStoreError.Code.corrupted)
    /// A system call failed; the message names the operation and the path.
    public static let io = Code(LogStoreError.Code.io)
    /// The disk (or quota) is full.
    public static let diskFull = Code(LogStoreError.Code.diskFull)
    /// A read-only open found no store at the path.
    public static let storeNotFound = Code(LogStoreError.Code.storeNotFound)
    /// The system refused access to a file (`EACCES`, `EPERM`): permissions, a sandbox, or
    /// on Apple platforms protected data that is unavailable while the device is locked
    /// (``StoreOptions/fileProtection``). Retry once access is back; nothing is damaged.
    public static let permissionDenied = Code(LogStoreError.Code.permissionDenied)

    // The store's own.

    /// The id holds another kind of value than the one asked for.
    public static let typeMismatch = Code("typeMismatch")
  }

  /// What kind of failure this is.
  public var code: Code
  /// A sentence a person understands.
  public var message: String
  /// The `errno` of the failing system call, for `.io` and `.diskFull`.
  public var systemError: Int32?
  /// The engine's error, when the engine failed (``LogStore`` underneath): what it reported,
  /// as it reported it. Nil for a failure of the store's own, such as `.typeMismatch` or a
  /// value that does not encode as JSON.
  ///
  /// ```swift
  /// do {
  ///   try store.put(["n": 1], id: "1", into: "t")
  /// } catch {
  ///   if let cause = error.underlying { print("the engine failed: \(cause.code): \(cause)") }
  /// }
  /// ```
  public var underlying: LogStoreError?

  /// An error of kind `code`, described by `message`, with the `errno` of the failing system call if
  /// there was one.
  public init(_ code: Code, _ message: String, systemError: Int32? = nil) {
    self.code = code
    self.message = message
    self.systemError = systemError
  }

  /// The engine's failure `error`, reported by the store: its code, message and `errno`,
  /// with `error` itself as ``underlying``.
  public init(_ error: LogStoreError) {
    self.init(Code(error.code), error.message, systemError: error.systemError)
    underlying = error
  }

  /// The message.
  public var description: String { message }
}

/// Runs an engine call, turning its error into a ``KeyValueStoreError``.
@inline(__always)
func bridge<R>(_ body: () throws(LogStoreError) -> R) throws(KeyValueStoreError) -> R {
  do {
    return try body()
  } catch {
    throw KeyValueStoreError(error)
  }
}
