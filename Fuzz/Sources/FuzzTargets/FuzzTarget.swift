/// The fuzz targets, by the names used for their folders under `Fuzz/` and by `Fuzz/run.sh`.
package enum FuzzTarget: String, CaseIterable, Sendable {
  case recordDecoding = "record-decoding"
  case storeOpen = "store-open"
  case json
  case differential
  case sqlite

  /// Runs the target on one input.
  package func run(_ input: UnsafeRawBufferPointer) {
    switch self {
    case .recordDecoding: fuzzRecordDecoding(input)
    case .storeOpen: fuzzStoreOpen(input)
    case .json: fuzzJSON(input)
    case .differential: fuzzDifferential(input)
    case .sqlite: fuzzSQLite(input)
    }
  }
}
