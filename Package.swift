// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "instant-linux",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "InstantStore", targets: ["InstantStore"])
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto", exact: "4.5.2"),
    ],
    targets: [
        // libzstd, found through pkg-config (Debian: libzstd-dev).
        .systemLibrary(
            name: "CZstd",
            pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"])]
        ),
        // The few platform calls Swift's Glibc module does not expose (sync_file_range).
        .target(name: "CPlatform"),
        // The content-addressed, reference-counted store. No networking.
        .target(
            name: "InstantStore",
            dependencies: [
                "CZstd",
                "CPlatform",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // A short tour of the store; the README's main-job command until instantctl exists.
        .executableTarget(
            name: "store-demo",
            dependencies: ["InstantStore"],
            path: "Examples/StoreDemo"
        ),
        // A release-built benchmark: ingest, deep verify, prune and listing against baselines.
        .executableTarget(
            name: "store-benchmark",
            dependencies: ["InstantStore", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Benchmarks/StoreBenchmark"
        ),
        // A child process the crash and concurrency tests drive and kill.
        .executableTarget(
            name: "instant-store-worker",
            dependencies: ["InstantStore"],
            path: "Tests/StoreWorker"
        ),
        .testTarget(
            name: "InstantStoreTests",
            dependencies: ["InstantStore", .product(name: "GRDB", package: "GRDB.swift")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
