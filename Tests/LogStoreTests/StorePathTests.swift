import Testing

@testable import LogStore

@Suite("Store paths")
struct StorePathTests {
  @Test("a path is trimmed of trailing slashes, but the root stays the root")
  func trimming() {
    #expect(StorePath.trimmingTrailingSlashes("dir/") == "dir")
    #expect(StorePath.trimmingTrailingSlashes("/a/dir///") == "/a/dir")
    #expect(StorePath.trimmingTrailingSlashes("dir") == "dir")
    #expect(StorePath.trimmingTrailingSlashes("///") == "/")
  }

  @Test("the parent of a bare name is the working directory, of a name in the root the root")
  func parent() {
    #expect(StorePath.parent(of: "store") == ".")
    #expect(StorePath.parent(of: "/store") == "/")
    #expect(StorePath.parent(of: "/a/b/store") == "/a/b")
    #expect(StorePath.parent(of: "a/store") == "a")
  }
}
