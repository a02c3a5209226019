// swift-tools-version:6.1
import PackageDescription

let package = Package(
  name: "YTKKeyValueStore",
  // The lowest systems the code needs (docs/PLATFORMS.md; kept by .ci/platform-lint).
  platforms: [.macOS(.v12), .iOS(.v15), .tvOS(.v15), .watchOS(.v8), .visionOS(.v1)],
  products: [
    .library(name: "LogStore", targets: ["LogStore"]),
    .library(name: "YTKKeyValueStore", targets: ["YTKKeyValueStore"]),
    .library(name: "YTKKeyValueStoreCompat", targets: ["YTKKeyValueStoreCompat"]),
    .library(name: "YTKKeyValueStoreObservation", targets: ["YTKKeyValueStoreObservation"]),
    .library(name: "SQLiteReader", targets: ["SQLiteReader"]),
    .executable(name: "ytkkv", targets: ["ytkkv"]),
  ],
  dependencies: [],
  targets: [
    // The engine: bytes in, bytes out. Standard library and the C library only.
    .target(name: "LogStore"),
    // The public YTKKeyValueStore API: tables of JSON values on top of LogStore.
    .target(name: "YTKKeyValueStore", dependencies: ["LogStore", "SQLiteReader"]),
    // YTKKeyValueStore's own classes and selectors (Objective-C on Apple platforms) on the
    // store: Foundation objects in and out.
    .target(name: "YTKKeyValueStoreCompat", dependencies: ["YTKKeyValueStore"]),
    // Observed values for SwiftUI and @Observable models (iOS 17, macOS 14 and later): apart
    // from YTKKeyValueStore so that only apps that import it link Observation.
    .target(name: "YTKKeyValueStoreObservation", dependencies: ["YTKKeyValueStore", "LogStore"]),
    // A read-only reader of SQLite database files (with their WAL or hot journal), for the
    // migration from YTKKeyValueStore's SQLite files. Standard library only: the caller
    // supplies the bytes.
    .target(name: "SQLiteReader", exclude: ["README.md"]),
    // Test support: an in-memory file system that simulates crashes and injects I/O errors.
    .target(name: "LogStoreTesting", dependencies: ["LogStore"]),
    // A writer process the kill tests start and kill (Tests/LogStoreTests/ProcessKillTests).
    .executableTarget(name: "ytkkv-kill-writer", dependencies: ["LogStore", "LogStoreTesting"]),
    // The writer and readers the readers-beside-a-writer tests start (ReadersBesideWriterTests).
    .executableTarget(name: "ytkkv-rounds", dependencies: ["LogStore", "LogStoreTesting"]),
    // The writers, followers and idle process the many-processes tests start, stop and kill
    // (ManyProcessesTests).
    .executableTarget(
      name: "ytkkv-sharing-worker", dependencies: ["LogStore", "LogStoreTesting"]),
    // Fuzzing (Fuzz/README.md): the targets' bodies, and one libFuzzer executable for all of
    // them (FUZZ_TARGET chooses). Built normally, the executable replays the files it is given.
    .target(
      name: "FuzzTargets",
      dependencies: ["LogStore", "LogStoreTesting", "SQLiteReader", "YTKKeyValueStore"],
      path: "Fuzz/Sources/FuzzTargets"),
    .executableTarget(
      name: "fuzz-ytkkv", dependencies: ["FuzzTargets"], path: "Fuzz/Sources/fuzz-ytkkv"),
    // The command-line tool.
    .executableTarget(name: "ytkkv", dependencies: ["YTKKeyValueStore", "LogStore"]),
    .testTarget(
      name: "LogStoreTests",
      dependencies: [
        "LogStore", "LogStoreTesting", "ytkkv-kill-writer", "ytkkv-rounds",
        "ytkkv-sharing-worker",
      ]),
    .testTarget(
      name: "YTKKeyValueStoreTests",
      dependencies: [
        "YTKKeyValueStore", "LogStore", "LogStoreTesting", "ytkkv", "ytkkv-sharing-worker",
      ],
      // Fixtures/format1.db: a store written by format version 1 (and its dump), opened by
      // every later version without loss.
      exclude: ["Fixtures"]),
    .testTarget(
      name: "YTKKeyValueStoreCompatTests",
      dependencies: ["YTKKeyValueStoreCompat", "YTKKeyValueStore", "LogStoreTesting"]),
    .testTarget(
      name: "YTKKeyValueStoreObservationTests",
      dependencies: ["YTKKeyValueStoreObservation", "YTKKeyValueStore", "LogStoreTesting", "ytkkv"]),
    .testTarget(name: "FuzzTargetsTests", dependencies: ["FuzzTargets"]),
    // The reader against SQLite's own answers on fixtures Fixtures/make_fixtures.py makes.
    .testTarget(
      name: "SQLiteReaderTests", dependencies: ["SQLiteReader", "LogStoreTesting"],
      exclude: ["Fixtures"]),
    // Runs the built `ytkkv` binary: one file per subcommand.
    .testTarget(
      name: "ytkkvTests",
      dependencies: ["ytkkv", "ytkkv-rounds", "YTKKeyValueStore", "LogStoreTesting"]),
  ],
  swiftLanguageModes: [.v6]
)
