import FuzzTargets

// The libFuzzer executable of every fuzz target; the environment variable FUZZ_TARGET names
// the one to run (record-decoding, store-open, json, differential, sqlite). See
// Fuzz/README.md.
#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The target chosen by FUZZ_TARGET, read once.
private let selectedTarget: FuzzTarget = {
  guard let name = getenv("FUZZ_TARGET").map({ String(cString: $0) }),
    let target = FuzzTarget(rawValue: name)
  else {
    let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
    fatalError("set FUZZ_TARGET to one of: \(names)")
  }
  return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ start: UnsafeRawPointer?, _ count: Int) -> Int32 {
  selectedTarget.run(UnsafeRawBufferPointer(start: start, count: count))
  return 0
}

#if !FUZZING
  // Without the fuzzer there is no libFuzzer main: replay the files given instead.
  @main enum Replay {
    static func main() { FuzzReplay.main() }
  }
#endif
