import LogStore
import Observation
import YTKKeyValueStore

/// One value of a store, for SwiftUI views and `@Observable` models: ``value`` reads what the
/// store holds under an id, writes through to the store when set, and changes when the store
/// changes it, from any thread (and, in ``StoreSharing/manyProcesses`` use, from any process).
/// Made by ``KeyValueStore/observe(_:id:in:)``.
///
/// ```swift
/// @Observable final class SettingsModel {
///   let theme: StoredValue<Theme>
///   init(store: KeyValueStore) { theme = store.observe(Theme.self, id: "theme", in: "settings") }
/// }
/// // In a view: Text(model.theme.value?.name ?? "default"); model.theme.value = .dark
/// ```
///
/// One change of the stored value is one observed change of ``value``: writing the value it
/// already holds, or a change of another id, is none. A change made elsewhere arrives shortly
/// after it commits, on the thread of the store's change stream (``KeyValueStore/changes(in:)``,
/// whose limits it shares: after a gap it reads the value again); one made by setting
/// ``value`` is there when the setter returns. A write or read that fails leaves ``value`` as it
/// was (nil where the stored JSON does not decode as `Value`) and sets ``lastError``. The value
/// stops following the store once the store is closed.
///
/// An item with an expiry (``KeyValueStore/put(encodable:id:into:expiresAfter:)``) reads as nil
/// from the moment it expires, as every read of the store does; its expiry is one observed
/// change, shortly after that moment (the store reports no change when an item expires).
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
public final class StoredValue<Value: Codable & Sendable>: Observable, @unchecked Sendable {
  // `@unchecked Sendable`: `current`, `error`, `decided`, `decidedBytes`, `decidedChange`,
  // `taken`, `expiry` and `expiryTimer` are read and written with `lock` held; `readLock`
  // orders the reads of the store (a later read is never applied before an earlier one),
  // `nextRead` with it; `follower` is set once, in `init`.

  /// The store the value follows.
  public let store: KeyValueStore
  /// The id the value is stored under.
  public let id: String
  /// The table of the id.
  public let table: String

  private let registrar = ObservationRegistrar()
  private let lock = ConditionLock()
  private let readLock = ConditionLock()
  private var current: Value?
  private var error: KeyValueStoreError?
  private var nextRead: UInt64 = 0
  /// The latest read decided on (``refresh()``): whether it changes the value or not, no
  /// earlier one is taken after it.
  private var decided: UInt64 = 0
  /// The bytes `current` holds once the latest read that changes it is taken.
  private var decidedBytes: [UInt8]?
  /// The latest read that changes the value: the one to take, of those decided.
  private var decidedChange: UInt64 = 0
  /// The read `current` was taken from (of those that change the value).
  private var taken: UInt64 = 0
  /// When `current` expires (µs since 1970, by the store's expiry clock); nil: never, or no
  /// value. The getter reads nil once it has passed, also while observers are being told
  /// (before the nil is taken).
  private var expiry: Int64?
  /// The task that reads the value again once the latest read's expiry has passed, so that
  /// the expiry is observed (the change stream does not report it), with the expiry it waits
  /// for.
  private var expiryTimer: (expiry: Int64, task: Task<Void, Never>)?
  private var follower: Task<Void, Never>?

  init(store: KeyValueStore, id: String, table: String) {
    self.store = store
    self.id = id
    self.table = table
    // Subscribed before the first read: no change after it is missed.
    let changes = store.changes(in: table)
    refresh()
    // The task follows the store's changes of the table until the store closes or this value
    // goes away: it holds the value weakly, and strongly only while it handles a change
    // (waiting for the next one keeps nothing alive). Each change that can touch the id reads
    // the value again. A stream that ends (the table dropped, or the stream fell behind) is
    // replaced by a new one, after which the value is read again.
    follower = Task.detached { [weak self] in
      var stream = changes
      while !Task.isCancelled {
        for await change in stream {
          guard let value = self else { return }
          if value.touches(change), !value.refresh() { return }
        }
        guard !Task.isCancelled, let value = self else { return }
        stream = value.store.changes(in: value.table)
        guard value.refresh() else { return }
      }
    }
  }

  deinit {
    follower?.cancel()
    expiryTimer?.task.cancel()
  }

  /// The stored value, nil when there is none. Setting it puts it (nil: deletes the id).
  public var value: Value? {
    get {
      registrar.access(self, keyPath: \.value)
      let (held, expires) = lock.withLock { () -> (Value?, Int64?) in (current, expiry) }
      // Nil from the moment it expires, as the store reads it; observers hear of it when the
      // timer has read it again.
      if let expires, expires <= store.logStore.expiryNow() { return nil }
      return held
    }
    set {
      do {
        if let newValue {
          try store.put(encodable: newValue, id: id, into: table)
        } else {
          try store.delete(id: id, from: table)
        }
      } catch {
        note(error)
        return
      }
      refresh()
    }
  }

  /// The error of the last write or read of this value that failed, if any.
  public var lastError: KeyValueStoreError? {
    registrar.access(self, keyPath: \.lastError)
    return lock.withLock { error }
  }

  private func touches(_ change: KeyValueChange) -> Bool {
    switch change {
    case .put(let changed): changed == id
    case .deleted(let ids): ids.contains(id)
    case .deletedPrefix(let prefix): id.utf8.starts(with: prefix.utf8)
    case .cleared, .dropped: true
    }
  }

  /// Reads the stored value and takes it, as one observed change, if its bytes differ from
  /// those last taken. Returns false once the store is closed.
  @discardableResult
  private func refresh() -> Bool {
    let (read, result) = readLock.withLock { () -> (UInt64, Result<Stored, KeyValueStoreError>) in
      nextRead += 1
      return (nextRead, Result { () throws(KeyValueStoreError) in try readStored() })
    }
    let stored: Stored
    switch result {
    case .success(let found):
      stored = found
    case .failure(let failure) where failure.code == .tableNotFound:
      // No table (not created yet, or dropped): no value.
      stored = Stored(bytes: nil, expires: nil, value: nil, failure: nil)
    case .failure(let failure):
      note(failure)
      return failure.code != .closed
    }
    if let failure = stored.failure { note(failure) }
    // Whether this read changes the value is decided at once, against the bytes the reads
    // decided before it leave (taken or about to be): another read of the same bytes, such as
    // the change stream's of a value this thread has just set, is then no second change, and a
    // read decided after this one is never undone by it. Observers are told outside the lock
    // (they may read the value), so the value is taken after the decision.
    let changes = lock.withLock { () -> Bool in
      guard read > decided else { return false }
      decided = read
      // The timer follows the latest read's expiry, changed or not (the same bytes put again
      // may have another lifetime).
      if expiryTimer?.expiry != stored.expires {
        expiryTimer?.task.cancel()
        expiryTimer = stored.expires.map { ($0, readAgain(after: $0)) }
      }
      guard stored.bytes != decidedBytes else {
        // The value held is these bytes (unless a change is still to be taken): their expiry
        // is now this read's.
        if taken == decidedChange { expiry = stored.expires }
        return false
      }
      decidedBytes = stored.bytes
      decidedChange = read
      return true
    }
    guard changes else { return true }
    registrar.withMutation(of: self, keyPath: \.value) {
      lock.withLock {
        // A later read that changes the value was decided meanwhile: it takes its own.
        guard decidedChange == read else { return }
        current = stored.value
        expiry = stored.expires
        taken = read
      }
    }
    return true
  }

  /// A task that reads the value again once the store's expiry clock has passed `expiry`
  /// (µs since 1970): then a value that expired reads as nil, and observers hear of it. Waits
  /// a day at most: a value that has not expired when it reads it gets a new task.
  private func readAgain(after expiry: Int64) -> Task<Void, Never> {
    let wait = min(max(expiry - store.logStore.expiryNow(), 0), 86_400_000_000)
    return Task.detached { [weak self] in
      // A millisecond more, so that the clock has passed it when the value is read.
      try? await Task.sleep(nanoseconds: UInt64(wait) * 1000 + 1_000_000)
      guard !Task.isCancelled, let value = self else { return }
      value.lock.withLock {
        if value.expiryTimer?.expiry == expiry { value.expiryTimer = nil }
      }
      value.refresh()
    }
  }

  /// What a read of the store found: the stored bytes, when they expire, and what they decode
  /// to (nil, with the reason, when they do not decode as `Value`).
  private struct Stored {
    var bytes: [UInt8]?
    var expires: Int64?
    var value: Value?
    var failure: KeyValueStoreError?
  }

  private func readStored() throws(KeyValueStoreError) -> Stored {
    guard let (bytes, expires) = try store.storedItem(id: id, from: table) else {
      return Stored(bytes: nil, expires: nil, value: nil, failure: nil)
    }
    do {
      let value = try store.decodeStored(Value.self, bytes, id: id, table: table)
      return Stored(bytes: bytes, expires: expires, value: value, failure: nil)
    } catch {
      return Stored(bytes: bytes, expires: expires, value: nil, failure: error)
    }
  }

  private func note(_ failure: KeyValueStoreError) {
    registrar.withMutation(of: self, keyPath: \.lastError) {
      lock.withLock { error = failure }
    }
  }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
extension KeyValueStore {
  /// The value under `id` in `table` as a ``StoredValue``: observed by SwiftUI and
  /// `withObservationTracking`, written through when set, following the store's changes.
  /// The table need not exist yet: until it does, and after it is dropped, the value is nil.
  public func observe<Value: Codable & Sendable>(
    _ type: Value.Type, id: String, in table: String
  ) -> StoredValue<Value> {
    StoredValue(store: self, id: id, table: table)
  }
}
