/// The one error type of the `SQLiteReader` module.
///
/// An error names the file it is about (the ``SQLiteByteSource/name`` of the database, WAL or
/// journal source), the database page when there is one, and what is wrong there, so that its
/// description reads as a sentence: `"old.sqlite: page 7: cell 3 points outside the page"`.
///
/// Errors thrown by a ``SQLiteByteSource`` itself (a failed read of the caller's file) are
/// passed through unchanged, not wrapped in this type.
public struct SQLiteReaderError: Error, CustomStringConvertible, Sendable, Equatable {
  /// What kind of failure this is. Extensible: new codes may be added in later versions, so a
  /// `switch` over codes should have a `default` branch.
  public struct Code: Hashable, Sendable, CustomStringConvertible {
    /// A stable identifier, such as `"corrupted"`.
    public let name: String

    public init(_ name: String) { self.name = name }

    public var description: String { name }

    /// The file is not an SQLite database: shorter than the 100-byte header, without the
    /// `"SQLite format 3"` string, or with header fields no SQLite writes.
    public static let notADatabase = Code("notADatabase")
    /// The file is an SQLite database, but damaged: a page, cell, record, overflow chain,
    /// freelist, WAL or journal that breaks the file format's rules, or a truncated file.
    public static let corrupted = Code("corrupted")
    /// A valid SQLite database that uses something this reader does not read: a `WITHOUT
    /// ROWID` or virtual table, a `VIRTUAL` generated column, a column default it cannot
    /// evaluate, a journal of a multi-database transaction, a newer WAL format.
    public static let unsupported = Code("unsupported")
  }

  /// What kind of failure this is.
  public var code: Code
  /// The name of the file the error is about, as its ``SQLiteByteSource`` gives it.
  public var file: String
  /// The database page the error is about, when there is one.
  public var page: UInt32?
  /// What is wrong, without the file and page (``description`` adds them).
  public var message: String

  public init(_ code: Code, file: String, page: UInt32? = nil, _ message: String) {
    self.code = code
    self.file = file
    self.page = page
    self.message = message
  }

  /// `"<file>: page <n>: <message>"`, or `"<file>: <message>"` without a page.
  public var description: String {
    if let page { return "\(file): page \(page): \(message)" }
    return "\(file): \(message)"
  }

  static func corrupted(_ file: String, page: UInt32? = nil, _ message: String) -> Self {
    SQLiteReaderError(.corrupted, file: file, page: page, message)
  }

  static func unsupported(_ file: String, page: UInt32? = nil, _ message: String) -> Self {
    SQLiteReaderError(.unsupported, file: file, page: page, message)
  }

  static func notADatabase(_ file: String, _ message: String) -> Self {
    SQLiteReaderError(.notADatabase, file: file, message)
  }
}
