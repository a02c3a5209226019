import Foundation
import LogStore
import Testing
import YTKKeyValueStore

/// What a ``KeyValueStoreError`` carries: the engine's error underneath when the engine
/// failed, with the same code and message; nothing underneath when the store failed itself.
@Suite("KeyValueStore errors")
struct KeyValueStoreErrorTests {
  private let directory = TemporaryDirectory("errors")

  @Test("an engine failure surfaces with the engine's error underneath, same code and message")
  func engineFailure() throws {
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    let error = expectError(.tableNotFound, mentioning: ["no_such_table"]) {
      _ = try store.object(id: "1", from: "no_such_table")
    }
    let underlying = try #require(error?.underlying)
    #expect(underlying.code == .tableNotFound)
    #expect(underlying.message == error?.message)
    #expect(error?.systemError == nil)
  }

  @Test("a second open of a store is .locked, with the engine's error underneath")
  func lockedFailure() throws {
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    let error = expectError(.locked) { _ = try KeyValueStore(path: directory.storePath) }
    #expect(error?.underlying?.code == .locked)
    #expect(error?.underlying?.message == error?.message)
  }

  @Test("a failing system call surfaces with the engine's error and its errno underneath")
  func systemCallFailure() throws {
    let fileSystem = SimulatedFileSystem()
    fileSystem.inject(.init(call: 1, errorNumber: EIO, persistent: true))
    var options = StoreOptions()
    options.logStoreOptions.fileSystem = fileSystem
    let error = expectError(.io) { _ = try KeyValueStore(path: "/store", options: options) }
    let underlying = try #require(error?.underlying)
    #expect(underlying.code == .io)
    #expect(underlying.message == error?.message)
    #expect(underlying.systemError == EIO)
    #expect(error?.systemError == EIO)
  }

  @Test("a failure of the store's own has nothing underneath")
  func storeFailure() throws {
    let store = try KeyValueStore(path: directory.storePath)
    defer { try? store.close() }
    try store.createTable("t")
    try store.put(number: 2.5, id: "n", into: "t")
    let mismatch = expectError(.typeMismatch) { _ = try store.string(id: "n", from: "t") }
    #expect(mismatch != nil && mismatch?.underlying == nil)
    let tooLong = String(repeating: "x", count: KeyValueStore.maxIDLength + 1)
    let invalid = expectError(.invalidArgument) { try store.put(number: 1, id: tooLong, into: "t") }
    #expect(invalid != nil && invalid?.underlying == nil)
  }

  @Test("an engine code becomes the store's code of the same name, one not known yet included")
  func codeMapping() {
    let pairs: [(LogStoreError.Code, KeyValueStoreError.Code)] = [
      (.invalidTableName, .invalidTableName), (.tableNotFound, .tableNotFound),
      (.invalidArgument, .invalidArgument), (.locked, .locked), (.readOnly, .readOnly),
      (.closed, .closed), (.corrupted, .corrupted), (.io, .io), (.diskFull, .diskFull),
      (.storeNotFound, .storeNotFound), (.permissionDenied, .permissionDenied),
    ]
    for (engine, store) in pairs {
      #expect(KeyValueStoreError.Code(engine) == store)
      #expect(KeyValueStoreError(LogStoreError(engine, "m")).code == store)
    }
    let later = LogStoreError(LogStoreError.Code("somethingNew"), "a later engine's failure")
    let error = KeyValueStoreError(later)
    #expect(error.code.name == "somethingNew")
    #expect(error.message == "a later engine's failure")
    #expect(error.underlying == later)
  }
}
