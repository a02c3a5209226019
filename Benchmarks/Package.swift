// swift-tools-version:6.1
// The benchmark: this store against SQLite (as YTKKeyValueStore used it), LevelDB, LMDB,
// RocksDB and the hardware's limits, side by side. A package of its own so that the product
// keeps zero dependencies; the peers come from Debian's -dev packages (setup.sh).
import PackageDescription

let package = Package(
  name: "Benchmarks",
  platforms: [.macOS(.v15)],
  dependencies: [.package(name: "YTKKeyValueStore", path: "..")],
  targets: [
    .systemLibrary(name: "CSQLite", path: "Sources/CSQLite"),
    .systemLibrary(name: "CLevelDB", path: "Sources/CLevelDB"),
    .systemLibrary(name: "CLMDB", path: "Sources/CLMDB"),
    .systemLibrary(name: "CRocksDB", path: "Sources/CRocksDB"),
    .executableTarget(
      name: "ytkkv-bench",
      dependencies: [
        "CSQLite", "CLevelDB", "CLMDB", "CRocksDB",
        .product(name: "LogStore", package: "YTKKeyValueStore"),
        .product(name: "YTKKeyValueStore", package: "YTKKeyValueStore"),
      ]),
  ],
  swiftLanguageModes: [.v6]
)
