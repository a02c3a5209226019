import Foundation
import LogStore
import LogStoreTesting
import Testing

@testable import YTKKeyValueStore

/// Which files get a data-protection class, and when, checked here with a stand-in for the
/// system's calls (``FileProtectionAccess``): Linux has no data protection, and no Apple
/// device runs these tests. What the system does with a class is Apple's (docs/PLATFORMS.md).
@Suite("Data-protection classes: which files get one, and when")
struct FileProtectionTests {
  /// Records every class set, in order, with whether the path was an empty directory then;
  /// a path's class is the last one set on it (nil if none was). Throws `.permissionDenied`
  /// for every class set while `failing`.
  final class Recorder: @unchecked Sendable {
    struct Call: Equatable {
      let path: String
      let protection: FileProtection
      let wasEmptyDirectory: Bool
    }
    private let lock = NSLock()
    private var classes: [String: FileProtection] = [:]
    private var recorded: [Call] = []
    private var refusing = false

    var calls: [Call] { lock.withLock { recorded } }
    var failing: Bool {
      get { lock.withLock { refusing } }
      set { lock.withLock { refusing = newValue } }
    }
    func forgetCalls() { lock.withLock { recorded = [] } }

    var access: FileProtectionAccess {
      FileProtectionAccess(
        classOf: { path throws(LogStoreError) in self.lock.withLock { self.classes[path] } },
        setClass: { protection, path throws(LogStoreError) in
          let listing = try? FileManager.default.contentsOfDirectory(atPath: path)
          self.lock.lock()
          defer { self.lock.unlock() }
          if self.refusing {
            throw LogStoreError(.permissionDenied, "cannot set the data protection of \(path)")
          }
          self.classes[path] = protection
          self.recorded.append(
            Call(path: path, protection: protection, wasEmptyDirectory: listing == []))
        })
    }
  }

  static func options(_ recorder: Recorder, _ protection: FileProtection) -> StoreOptions {
    var options = StoreOptions(compaction: .manual, fileProtection: protection)
    options.protectionAccess = recorder.access
    return options
  }

  /// A directory with a closed store at `store`, opened without a class, with files of every
  /// kind (segments, the manifest, an index file) and the item `1` = `"x"` in table `t`.
  static func storeWithOneItem() throws -> TemporaryDirectory {
    let directory = TemporaryDirectory()
    let store = try KeyValueStore(path: directory.appending("store"))
    try store.createTable("t")
    try store.put(string: "x", id: "1", into: "t")
    try store.close()
    return directory
  }

  @Test("a writer's open gives the class to the store's directory, then to every file in it")
  func writerOpen() throws {
    let directory = try Self.storeWithOneItem()
    let path = directory.appending("store")
    let recorder = Recorder()
    let store = try KeyValueStore(path: path, options: Self.options(recorder, .complete))
    let files = try FileManager.default.contentsOfDirectory(atPath: path).map { path + "/" + $0 }
    let calls = recorder.calls
    #expect(calls.first?.path == path)
    #expect(Set(calls.map(\.path)) == Set([path] + files))
    #expect(calls.count == files.count + 1)
    #expect(calls.allSatisfy { $0.protection == .complete })
    #expect(try store.string(id: "1", from: "t") == "x")
    try store.close()
  }

  @Test(
    "an open refused .locked changes no file's class, nor does a read-only open; the next writer's open does"
  )
  func refusedOpen() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let writer = try KeyValueStore(path: path)
    try writer.createTable("t")
    let refused = Recorder()
    expectError(.locked) {
      _ = try KeyValueStore(path: path, options: Self.options(refused, .none))
    }
    #expect(refused.calls == [])
    let reader = Recorder()
    var readOnly = Self.options(reader, .none)
    readOnly.readOnly = true
    try KeyValueStore(path: path, options: readOnly).close()
    #expect(reader.calls == [])
    try writer.close()
    try KeyValueStore(path: path, options: Self.options(refused, .none)).close()
    #expect(refused.calls.first?.path == path)
  }

  @Test("a class that cannot be set fails the open, which leaves the store closed and intact")
  func classRefused() throws {
    let directory = try Self.storeWithOneItem()
    let path = directory.appending("store")
    let recorder = Recorder()
    recorder.failing = true
    expectError(.permissionDenied, mentioning: ["data protection", path]) {
      _ = try KeyValueStore(path: path, options: Self.options(recorder, .complete))
    }
    // The failed open released the store: the next one opens it.
    recorder.failing = false
    let store = try KeyValueStore(path: path, options: Self.options(recorder, .complete))
    #expect(try store.string(id: "1", from: "t") == "x")
    try store.close()
  }

  @Test(
    "a backup's copy gets the class of the store's directory, on its directory while still empty, whatever the options of a read-only open say"
  )
  func backupTakesTheStoresClass() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let recorder = Recorder()
    let store = try KeyValueStore(
      path: path, options: Self.options(recorder, .completeUnlessOpen))
    try store.createTable("t")
    for index in 0..<50 { try store.put(string: "v\(index)", id: "\(index)", into: "t") }
    for (copy, reading) in [("copy", false), ("copy-read-only", true)] {
      let destination = directory.appending(copy)
      var source = store
      if reading {
        // A read-only open with the default class in its options: the copy still gets the
        // class the store's directory has.
        var options = StoreOptions(readOnly: true)
        options.protectionAccess = recorder.access
        source = try KeyValueStore(path: path, options: options)
      }
      recorder.forgetCalls()
      try source.backup(to: destination)
      let calls = recorder.calls
      #expect(calls.count == 1, "\(copy)")
      let call = try #require(calls.first)
      #expect(call.path.hasPrefix(destination + ".backing-up-"), "\(copy): \(call.path)")
      #expect(call.wasEmptyDirectory, "\(copy)")
      #expect(call.protection == .completeUnlessOpen, "\(copy)")
      let opened = try KeyValueStore(path: destination, options: StoreOptions(readOnly: true))
      #expect(try opened.allItems(in: "t").count == 50, "\(copy)")
      try opened.close()
      if reading { try source.close() }
    }
    try store.close()
  }

  @Test("a backup of a store whose directory has no class leaves the copy's to the system")
  func backupWithoutClass() throws {
    let directory = try Self.storeWithOneItem()
    let path = directory.appending("store")
    // Opened read-only, so this open sets no class: the store's directory has none.
    let recorder = Recorder()
    var options = StoreOptions(readOnly: true)
    options.protectionAccess = recorder.access
    let reader = try KeyValueStore(path: path, options: options)
    try reader.backup(to: directory.appending("copy"))
    #expect(recorder.calls == [])
    let copy = try KeyValueStore(path: directory.appending("copy"))
    #expect(try copy.string(id: "1", from: "t") == "x")
    try copy.close()
    try reader.close()
  }

  @Test(
    "a backup whose copy's class cannot be set fails, and leaves nothing at or beside its place")
  func backupClassRefused() throws {
    let directory = TemporaryDirectory()
    let path = directory.appending("store")
    let recorder = Recorder()
    let store = try KeyValueStore(path: path, options: Self.options(recorder, .complete))
    try store.createTable("t")
    try store.put(string: "x", id: "1", into: "t")
    recorder.failing = true
    let destination = directory.appending("copy")
    expectError(.permissionDenied, mentioning: ["data protection", destination]) {
      try store.backup(to: destination)
    }
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["store"])
    // The store goes on, and the next backup succeeds.
    recorder.failing = false
    try store.put(string: "y", id: "2", into: "t")
    try store.backup(to: destination)
    let copy = try KeyValueStore(path: destination)
    #expect(try copy.allItems(in: "t").count == 2)
    try copy.close()
    try store.close()
  }
}
