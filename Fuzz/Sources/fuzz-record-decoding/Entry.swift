// The libFuzzer entry point of the record-decoding target; see Fuzz/README.md.
import FuzzTargets

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ start: UnsafeRawPointer?, _ count: Int) -> Int32 {
  fuzzRecordDecoding(UnsafeRawBufferPointer(start: start, count: count))
  return 0
}

#if !FUZZING
  // Without the fuzzer there is no libFuzzer main: replay the files given instead.
  @main enum Replay {
    static func main() { FuzzReplay.main(fuzzRecordDecoding) }
  }
#endif
