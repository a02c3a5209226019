import Foundation
import LogStoreTesting
import Observation
import Testing
import YTKKeyValueStore
import YTKKeyValueStoreObservation

struct Theme: Codable, Sendable, Equatable {
  var name: String
  var size: Int
}

/// `StoredValue`: what an observer of `value` sees (`withObservationTracking`, as SwiftUI
/// observes), for changes made by setting it, by other threads and by another open.
@Suite("Observed values")
struct StoredValueTests {
  /// Counts the observed changes of `theme.value`: arms `withObservationTracking` once, and
  /// again each time `arm()` is called.
  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
  final class Observer: @unchecked Sendable {
    let theme: StoredValue<Theme>
    private let count = Guarded(0)

    init(_ theme: StoredValue<Theme>) { self.theme = theme }

    var changes: Int { count.withLock { $0 } }

    func arm() {
      withObservationTracking {
        _ = theme.value
      } onChange: { [count] in
        count.withLock { $0 += 1 }
      }
    }
  }

  /// Waits up to 5 s for `condition`, without holding a thread: the changes arrive on a task
  /// of the store's change stream, which needs the threads of the concurrency pool.
  static func eventually(_ condition: () -> Bool) async -> Bool {
    for _ in 0..<5_000 {
      if condition() { return true }
      await pause(milliseconds: 1)
    }
    return condition()
  }

  static func pause(milliseconds: UInt64) async {
    try? await Task.sleep(nanoseconds: milliseconds * 1_000_000)
  }

  /// A store with table `settings`, and its value `theme` observed.
  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
  static func setUp(_ directory: TemporaryDirectory, options: StoreOptions = StoreOptions())
    throws -> (KeyValueStore, Observer)
  {
    let store = try KeyValueStore(path: directory.appending("observed.db"), options: options)
    try store.createTable("settings")
    return (store, Observer(store.observe(Theme.self, id: "theme", in: "settings")))
  }

  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
  @Test(
    "setting the value writes it through and is one observed change; the same value again is none")
  func settingWritesThrough() async throws {
    let directory = TemporaryDirectory()
    let (store, observer) = try Self.setUp(directory)
    let theme = observer.theme
    #expect(theme.value == nil)
    observer.arm()
    theme.value = Theme(name: "dark", size: 2)
    #expect(observer.changes == 1)
    #expect(theme.value == Theme(name: "dark", size: 2))
    #expect(try store.decode(Theme.self, id: "theme", from: "settings") == theme.value)
    // Its own put, which the store's change stream delivers later too, is no second change;
    // nor is the same value put again.
    observer.arm()
    await Self.pause(milliseconds: 100)
    theme.value = Theme(name: "dark", size: 2)
    await Self.pause(milliseconds: 100)
    #expect(observer.changes == 1)
    theme.value = nil
    #expect(observer.changes == 2)
    #expect(try store.object(id: "theme", from: "settings") == nil)
    #expect(theme.lastError == nil)
    try store.close()
  }

  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
  @Test(
    "a change from another thread arrives as one observed change: a put, a delete, a prefix delete, a clear, a drop; a change of another id is none"
  )
  func changesFromElsewhere() async throws {
    let directory = TemporaryDirectory()
    let (store, observer) = try Self.setUp(directory)
    let theme = observer.theme
    /// Runs `change` on another thread, then waits until the value is `expected` and the
    /// observer has seen one change (`armed`: its tracking is armed already).
    func change(
      to expected: Theme?, armed: Bool = false, _ change: @escaping @Sendable () throws -> Void
    ) async {
      let before = observer.changes
      if !armed { observer.arm() }
      Thread {
        do { try change() } catch { Issue.record("\(error)") }
      }.start()
      #expect(
        await Self.eventually { theme.value == expected }, "value \(String(describing: expected))")
      #expect(await Self.eventually { observer.changes == before + 1 })
    }
    let light = Theme(name: "light", size: 1)
    await change(to: light) { try store.put(encodable: light, id: "theme", into: "settings") }
    // Another id: nothing observed (the tracking armed above is still armed).
    let before = observer.changes
    observer.arm()
    try store.put(encodable: Theme(name: "other", size: 0), id: "theme2", into: "settings")
    try store.delete(prefix: "x", from: "settings")
    await Self.pause(milliseconds: 100)
    #expect(observer.changes == before)
    #expect(theme.value == light)
    await change(to: nil, armed: true) { try store.delete(ids: ["a", "theme"], from: "settings") }
    await change(to: light) { try store.put(encodable: light, id: "theme", into: "settings") }
    await change(to: nil) { try store.delete(prefix: "the", from: "settings") }
    await change(to: light) { try store.put(encodable: light, id: "theme", into: "settings") }
    await change(to: nil) { try store.clearTable("settings") }
    await change(to: light) { try store.put(encodable: light, id: "theme", into: "settings") }
    await change(to: nil) { try store.dropTable("settings") }
    // The table made again: the value follows it still.
    await change(to: light) {
      try store.createTable("settings")
      try store.put(encodable: light, id: "theme", into: "settings")
    }
    #expect(theme.lastError == nil)
    try store.close()
  }

  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
  @Test(
    "a value set is one observed change also when the change stream's follower reads it before the setter has taken it"
  )
  func setterAndFollowerAtOnce() async throws {
    let directory = TemporaryDirectory()
    let (store, observer) = try Self.setUp(directory)
    defer { try? store.close() }
    let theme = observer.theme
    let dark = Theme(name: "dark", size: 2)
    let changes = Guarded(0)
    // The setter's change is observed between its read of the store and its taking the value
    // (an observer is told before the value changes): there, an observer that tracks the
    // value again waits for the follower, which reads the same new value meanwhile.
    withObservationTracking {
      _ = theme.value
    } onChange: {
      changes.withLock { $0 += 1 }
      withObservationTracking {
        _ = theme.value
      } onChange: {
        changes.withLock { $0 += 1 }
      }
      let deadline = Deadline(secondsFromNow: 2)
      while changes.withLock({ $0 }) < 2 && !deadline.hasPassed { usleep(1000) }
    }
    let setter = Thread { theme.value = dark }
    setter.start()
    #expect(await Self.eventually { theme.value == dark })
    await Self.pause(milliseconds: 100)
    #expect(changes.withLock { $0 } == 1)
    #expect(theme.value == dark)
  }

  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
  @Test(
    "a value that expires is nil from that moment, as the store reads it, and its expiry is one observed change, by a lifetime of its own or its table's"
  )
  func expiringValue() async throws {
    let directory = TemporaryDirectory()
    let (store, observer) = try Self.setUp(directory)
    defer { try? store.close() }
    let theme = observer.theme
    let dark = Theme(name: "dark", size: 2)
    // A lifetime of its own, as the clock goes: the expiry is observed. The value is read
    // when it is made, before the item expires (the change stream's follower might read it
    // later than that when the tests beside this one keep the concurrency pool busy).
    try store.put(encodable: dark, id: "other", into: "settings", expiresAfter: 2)
    let other = Observer(store.observe(Theme.self, id: "other", in: "settings"))
    #expect(other.theme.value == dark)
    other.arm()
    #expect(await Self.eventually { other.changes == 1 })
    #expect(other.theme.value == nil)
    // Set through the value into a table whose items expire by default.
    try store.createTable("settings", expiresAfter: 2)
    observer.arm()
    theme.value = dark
    #expect(theme.value == dark)
    #expect(observer.changes == 1)
    observer.arm()
    #expect(await Self.eventually { observer.changes == 2 })
    #expect(theme.value == nil)
    // By the store's expiry clock moved on: nil at once, as the store reads it.
    theme.value = Theme(name: "light", size: 1)
    try store.put(encodable: dark, id: "theme", into: "settings", expiresAfter: 600)
    #expect(await Self.eventually { theme.value == dark })
    store.logStore.expiryClock.skip(microseconds: 601_000_000)
    #expect(try store.decode(Theme.self, id: "theme", from: "settings") == nil)
    #expect(theme.value == nil)
    #expect(theme.lastError == nil)
  }

  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
  @Test("in .manyProcesses use, another open's change arrives without a call of this one")
  func changesFromAnotherOpen() async throws {
    let directory = TemporaryDirectory()
    var options = StoreOptions()
    options.sharing = .manyProcesses
    let (store, observer) = try Self.setUp(directory, options: options)
    let other = try KeyValueStore(path: directory.appending("observed.db"), options: options)
    observer.arm()
    try other.put(encodable: Theme(name: "shared", size: 3), id: "theme", into: "settings")
    #expect(await Self.eventually { observer.theme.value == Theme(name: "shared", size: 3) })
    #expect(observer.changes == 1)
    try other.close()
    try store.close()
  }

  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
  @Test("in .manyProcesses use, another process's change arrives: `ytkkv put` beside the app")
  func changesFromAnotherProcess() async throws {
    let tool = try #require(builtExecutable(named: "ytkkv"))
    let directory = TemporaryDirectory()
    var options = StoreOptions()
    options.sharing = .manyProcesses
    let (store, observer) = try Self.setUp(directory, options: options)
    observer.arm()
    // The tool opens the store as the processes that have it open use it.
    let put = try ChildProcess(
      tool,
      ["put", directory.appending("observed.db"), "settings", "theme", #"{"name":"cli","size":5}"#]
    ).waitUntilExit()
    #expect(put.succeeded, "ytkkv put: \(put.summary): \(put.standardError.prefix(300))")
    #expect(await Self.eventually { observer.theme.value == Theme(name: "cli", size: 5) })
    #expect(observer.changes == 1)
    try store.close()
  }

  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
  @Test(
    "a stored value that does not decode is nil with .typeMismatch; a failed write leaves the value and says why; a value let go of is freed, a closed store stops it"
  )
  func errors() async throws {
    let directory = TemporaryDirectory()
    let (store, observer) = try Self.setUp(directory)
    let theme = observer.theme
    try store.put(string: "not a theme", id: "theme", into: "settings")
    #expect(await Self.eventually { theme.lastError?.code == .typeMismatch })
    #expect(theme.value == nil)
    // A table not created yet: no value and no error until a write needs it.
    let missing = store.observe(Theme.self, id: "theme", in: "later")
    #expect(missing.value == nil)
    #expect(missing.lastError == nil)
    missing.value = Theme(name: "x", size: 1)
    #expect(missing.lastError?.code == .tableNotFound)
    #expect(missing.value == nil)
    try store.createTable("later")
    try store.put(encodable: Theme(name: "y", size: 2), id: "theme", into: "later")
    #expect(await Self.eventually { missing.value == Theme(name: "y", size: 2) })
    // A value that goes away stops following: nothing keeps it alive.
    weak var dropped: StoredValue<Theme>?
    do {
      let made = store.observe(Theme.self, id: "theme", in: "later")
      dropped = made
      // Its follower has started and waits for the next change once this one arrived.
      try store.put(encodable: Theme(name: "w", size: 4), id: "theme", into: "later")
      #expect(await Self.eventually { made.value == Theme(name: "w", size: 4) })
    }
    #expect(await Self.eventually { dropped == nil })
    try store.close()
    missing.value = Theme(name: "z", size: 3)
    #expect(missing.lastError?.code == .closed)
    #expect(missing.value == Theme(name: "w", size: 4))
  }
}
