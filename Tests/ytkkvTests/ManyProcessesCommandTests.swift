import Foundation
import Testing
import YTKKeyValueStore

/// The commands beside an app that has the store open in `.manyProcesses` use: they open it
/// in that mode themselves, so reads follow the app's writes and writes take part like its.
@Suite("ytkkv beside processes in .manyProcesses use")
struct ManyProcessesCommandTests {
  static var options: StoreOptions { StoreOptions(compaction: .manual, sharing: .manyProcesses) }

  @Test("read commands see the app's latest writes; put, delete and compact take part beside it")
  func besideAnApp() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("store")
    let app = try KeyValueStore(path: path, options: Self.options)
    try app.createTable("t")
    try app.put(["n": 1], id: "a", into: "t")
    #expect(LogStore.sharingInUse(at: path) == .manyProcesses)

    var result = try Tool.run(["get", path, "t", "a"])
    #expect(result.status == 0, "\(result.standardError)")
    #expect(result.outputLines == [#"{"n":1}"#])
    // The app writes on, the tool sees it at once.
    try app.put(["n": 3], id: "a", into: "t")
    #expect(try Tool.run(["get", path, "t", "a"]).outputLines == [#"{"n":3}"#])

    result = try Tool.run(["put", path, "t", "b", #"{"n":2}"#])
    #expect(result.status == 0, "\(result.standardError)")
    #expect(try app.object(id: "b", from: "t") == ["n": 2])
    for round in 0..<20 { try app.put(["r": .int(Int64(round))], id: "c", into: "t") }
    result = try Tool.run(["compact", path])
    #expect(result.status == 0, "\(result.standardError)")
    #expect(try app.object(id: "c", from: "t") == ["r": 19])
    result = try Tool.run(["delete", path, "t", "a"])
    #expect(result.status == 0, "\(result.standardError)")
    #expect(try app.object(id: "a", from: "t") == nil)
    #expect(try Tool.run(["tables", path]).status == 0)
    try app.close()
    let verify = try Tool.run(["verify", path])
    #expect(verify.status == 0, "\(verify.standardOutput)")
  }

  @Test("--many-processes opens a store nobody has open in that mode; it opens in either after")
  func flag() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("store")
    var result = try Tool.run(["put", path, "t", "a", "1", "--create", "--many-processes"])
    #expect(result.status == 0, "\(result.standardError)")
    result = try Tool.run(["get", path, "t", "a", "--many-processes"])
    #expect(result.outputLines == ["1"])
    #expect(LogStore.sharingInUse(at: path) == nil)
    let app = try KeyValueStore(path: path)
    #expect(LogStore.sharingInUse(at: path) == .oneProcess)
    // The tool's writes stop at the .oneProcess writer, whether it asks for .manyProcesses or not.
    for arguments in [
      ["put", path, "t", "b", "2"], ["put", path, "t", "b", "2", "--many-processes"],
    ] {
      result = try Tool.run(arguments)
      #expect(result.status == 1)
      #expect(
        result.standardError.contains("locked") || result.standardError.contains(".oneProcess"))
    }
    #expect(try app.object(id: "a", from: "t") == 1)
    try app.close()
  }

  @Test(
    "a widget keeps its view while compact and recover run beside it, then follows the app"
  )
  func followerBesideCompactAndRecover() throws {
    let scratch = TemporaryDirectory("ytkkv-tests")
    let path = scratch.appending("store")
    var app = try KeyValueStore(path: path, options: Self.options)
    try app.createTable("t")
    for round in 0..<20 { try app.put(["r": .int(Int64(round))], id: "a", into: "t") }
    let widget = try KeyValueStore(
      path: path, options: StoreOptions(readOnly: true, sharing: .manyProcesses))
    #expect(try widget.object(id: "a", from: "t") == ["r": 19])
    try app.close()
    // Reads item `id` through the widget until it is `expected`, for up to a second: a
    // follower without a shared state looks for one at most every 50 ms.
    func widgetReads(_ expected: JSONValue, id: String) throws -> Bool {
      for _ in 0..<100 {
        if try widget.object(id: id, from: "t") == expected { return true }
        usleep(10_000)
      }
      return false
    }
    // Nobody is listed: the tool opens the store in .oneProcess use, beside the widget.
    var seen: JSONValue = ["r": 19]
    for command in ["compact", "recover"] {
      let result = try Tool.run([command, path])
      #expect(result.status == 0, "\(command): \(result.standardError)")
      #expect(try widget.object(id: "a", from: "t") == seen, "\(command)")
      app = try KeyValueStore(path: path, options: Self.options)
      try app.put(["after": .string(command)], id: "a", into: "t")
      seen = ["after": .string(command)]
      #expect(try widgetReads(seen, id: "a"), "\(command)")
      try app.put(["n": 1], id: command, into: "t")
      #expect(try widget.object(id: command, from: "t") == ["n": 1], "\(command)")
      try app.close()
    }
    try widget.close()
  }
}
