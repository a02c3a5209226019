import Testing

@testable import LogStore

@Suite("Background threads")
struct BackgroundThreadTests {
  @Test("a background thread runs its body once; joining again, or one never started, returns")
  func join() {
    let ran = OnceFlag()
    let thread = BackgroundThread { #expect(ran.set(), "the body ran twice") }
    thread.start()
    thread.join()
    #expect(ran.isSet)
    thread.join()
    BackgroundThread {}.join()
  }
}
