import Foundation
import YTKKeyValueStore

/// The store behind a ``YTKKeyValueStore``, and what its calls leave behind: the last error,
/// logged as the original logged its errors. Calls take turns (the original ran each one on
/// its database queue). Instances of one store share the process's one open of it
/// (``OpenStores``).
final class Connection: @unchecked Sendable {
  // `@unchecked Sendable`: every stored property but `key` (a constant) is read and written
  // with `lock` held.
  private let lock = NSLock()
  private var store: KeyValueStore?
  private var lastErrorValue: KeyValueStoreError?
  private var logsErrorsValue = true
  /// The key of the store in ``OpenStores``; nil when there is none open.
  private let key: OpenStores.Identity?

  /// The store at the path `place` finds, shared with the other instances of this process
  /// that have it open; one that cannot be opened leaves the connection closed, with the reason
  /// as its last error (the original's initializers could not fail either).
  init(at place: () throws(KeyValueStoreError) -> String) {
    var failure: KeyValueStoreError?
    do {
      let path = OpenStores.absolute(try place())
      let (opened, key) = try OpenStores.shared.acquire(path) { () throws(KeyValueStoreError) in
        try KeyValueStore(path: path)
      }
      store = opened
      self.key = key
    } catch {
      key = nil
      failure = error
    }
    if let failure { lock.withLock { note(failure) } }
  }

  /// An instance that goes away without `close()` lets go of the store as the original's
  /// database queue did.
  deinit {
    if store != nil, let key { try? OpenStores.shared.release(key) }
  }

  /// The store, while it is open.
  var keyValueStore: KeyValueStore? { lock.withLock { store } }

  var lastError: KeyValueStoreError? { lock.withLock { lastErrorValue } }

  var logsErrors: Bool {
    get { lock.withLock { logsErrorsValue } }
    set { lock.withLock { logsErrorsValue = newValue } }
  }

  /// Runs `body` on the open store and returns what it returns; an error, or a store closed or
  /// never opened, is noted and logged, and `fallback` returned instead. With `table`, the
  /// name is first checked by the original's rule (not empty, no space), which the store's own
  /// names (any UTF-8 without NUL) do not have.
  func run<T>(
    table: String? = nil, _ fallback: T, _ body: (KeyValueStore) throws(KeyValueStoreError) -> T
  ) -> T {
    lock.lock()
    defer { lock.unlock() }
    if let table, table.isEmpty || table.contains(" ") {
      note(
        KeyValueStoreError(
          .invalidTableName,
          "table name \"\(table)\" format error: YTKKeyValueStore's names are not empty and have "
            + "no space"))
      return fallback
    }
    guard let store else {
      note(KeyValueStoreError(.closed, "the store is closed, or could not be opened"))
      return fallback
    }
    do {
      return try body(store)
    } catch {
      note(error)
      return fallback
    }
  }

  /// Closes the store (once no other instance of this process has it open); later calls do
  /// nothing but note that it is closed.
  func close() {
    lock.lock()
    defer { lock.unlock() }
    guard store != nil, let key else { return }
    store = nil
    do {
      try OpenStores.shared.release(key)
    } catch {
      note(error)
    }
  }

  /// Keeps `error` as the last one and logs it, unless logging is off. Call with `lock` held.
  private func note(_ error: KeyValueStoreError) {
    lastErrorValue = error
    guard logsErrorsValue else { return }
    let line = "YTKKeyValueStore: ERROR, \(error.message)"
    #if canImport(ObjectiveC)
      NSLog("%@", line)
    #else
      FileHandle.standardError.write(Data((line + "\n").utf8))
    #endif
  }
}
