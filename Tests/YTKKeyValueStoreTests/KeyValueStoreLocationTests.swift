import Foundation
import Testing

@testable import YTKKeyValueStore

/// `KeyValueStore(name:)`: a store in the platform's place for app data.
@Suite("A store by name", .serialized)
struct KeyValueStoreLocationTests {
  @Test("off Apple platforms the place is $XDG_DATA_HOME/<process>, else ~/.local/share/<process>")
  func dataDirectoryRules() throws {
    let process = "app"
    func place(_ environment: [String: String]) throws -> String {
      try KeyValueStore.dataDirectory(environment: environment, processName: process)
    }
    #expect(try place(["XDG_DATA_HOME": "/data", "HOME": "/home/u"]) == "/data/app")
    #expect(try place(["XDG_DATA_HOME": "/data//", "HOME": "/home/u"]) == "/data/app")
    #expect(try place(["XDG_DATA_HOME": "/", "HOME": "/home/u"]) == "/app")
    // Unset, empty or relative: the XDG rules say to ignore it.
    #expect(try place(["HOME": "/home/u"]) == "/home/u/.local/share/app")
    #expect(try place(["XDG_DATA_HOME": "", "HOME": "/home/u/"]) == "/home/u/.local/share/app")
    #expect(try place(["XDG_DATA_HOME": "rel", "HOME": "/home/u"]) == "/home/u/.local/share/app")
    expectError(.io, mentioning: ["XDG_DATA_HOME", "HOME"]) { _ = try place([:]) }
    expectError(.io, mentioning: ["HOME"]) { _ = try place(["HOME": "relative"]) }
  }

  @Test("a name is one path component")
  func names() throws {
    for bad in ["", ".", "..", "a/b", "/abs", "a\u{0}b"] {
      let error = expectError(.invalidArgument, mentioning: ["one path component"]) {
        _ = try KeyValueStore.checkedName(bad)
      }
      #expect(error?.message.utf8.contains(0) == false, "the message holds a raw NUL")
    }
    for good in ["test.db", "a b", "日本語", ".hidden", "..x"] {
      #expect(try KeyValueStore.checkedName(good) == good)
    }
  }

  #if !canImport(Darwin)
    @Test("a store opened by name lives under $XDG_DATA_HOME/<process name> and reopens by name")
    func openByName() throws {
      let directory = TemporaryDirectory()
      try withEnvironment("XDG_DATA_HOME", setTo: directory.path) {
        let expected =
          directory.path + "/" + ProcessInfo.processInfo.processName + "/by-name.db"
        do {
          let store = try KeyValueStore(name: "by-name.db")
          #expect(store.path == expected)
          try store.createTable("t")
          try store.put(["a": 1], id: "1", into: "t")
          try store.close()
        }
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: expected, isDirectory: &isDirectory))
        #expect(isDirectory.boolValue)
        var options = StoreOptions()
        options.readOnly = true
        let again = try KeyValueStore(name: "by-name.db", options: options)
        #expect(try again.object(id: "1", from: "t") == ["a": 1])
        try again.close()
        expectError(.invalidArgument) { _ = try KeyValueStore(name: "../escape") }
      }
    }

    @Test("file protection is ignored off Apple platforms: every class opens and writes")
    func protectionIgnoredHere() throws {
      #expect(StoreOptions().fileProtection == .completeUntilFirstUserAuthentication)
      let classes: [FileProtection] = [
        .none, .complete, .completeUnlessOpen, .completeUntilFirstUserAuthentication,
      ]
      for (index, protection) in classes.enumerated() {
        let directory = TemporaryDirectory()
        var options = StoreOptions()
        options.fileProtection = protection
        let store = try KeyValueStore(path: directory.appending("p\(index).db"), options: options)
        try store.createTable("t")
        try store.put(string: "x", id: "1", into: "t")
        #expect(try store.string(id: "1", from: "t") == "x")
        try store.close()
      }
    }
  #endif
}
