import Foundation

/// Runs `body(index)` on `count` new OS threads at once and waits for all of them.
///
/// New threads rather than `DispatchQueue.concurrentPerform`, which runs no more bodies at
/// once than there are cores: a test whose threads wait for each other would run them one
/// after the other on a small machine.
package func runOnThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
  let group = DispatchGroup()
  for index in 0..<count {
    group.enter()
    let thread = Thread {
      body(index)
      group.leave()
    }
    thread.stackSize = 4 << 20
    thread.start()
  }
  group.wait()
}
