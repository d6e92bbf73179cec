// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "instant-linux",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "InstantStore", targets: ["InstantStore"]),
        .library(name: "InstantProtocol", targets: ["InstantProtocol"]),
        .library(name: "InstantServer", targets: ["InstantServer"]),
        .library(name: "Instant", targets: ["Instant"]),
        .executable(name: "instantctl", targets: ["instantctl"]),
        .executable(name: "instant-server", targets: ["instant-server"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto", exact: "4.5.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1"),
        .package(url: "https://github.com/vapor/jwt-kit", exact: "5.8.0"),
        .package(url: "https://github.com/swift-server/async-http-client", exact: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio", exact: "2.101.3"),
        .package(url: "https://github.com/swift-server/swift-prometheus", exact: "2.4.1"),
    ],
    targets: [
        // libzstd, found through pkg-config (Debian: libzstd-dev).
        .systemLibrary(
            name: "CZstd",
            pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"])]
        ),
        // The few platform calls Swift's Glibc module does not expose: a file created already
        // locked, posix_spawn with closefrom, pipe2.
        .target(name: "CPlatform"),
        // Child processes without Foundation's Process (see SpawnedProcess), for the demo
        // and the tests.
        .target(name: "Spawn", dependencies: ["CPlatform"]),
        // The content-addressed, reference-counted store. No networking.
        .target(
            name: "InstantStore",
            dependencies: [
                "CZstd",
                "CPlatform",
                // Its strict JSON reader: content is checked as the sync will read it.
                "InstantProtocol",
                .product(name: "GRDB", package: "GRDB.swift"),
                // The SQLite C API, for decoding listing rows without intermediate copies.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The wire types and rules shared by client and server (docs/PROTOCOL.md). Foundation only.
        .target(name: "InstantProtocol"),
        // The client SDK: descriptors, download, documents, the sync cycle, events.
        .target(
            name: "Instant",
            dependencies: [
                "InstantStore", "InstantProtocol",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "instantctl",
            dependencies: [
                "Instant", "InstantStore", "InstantProtocol", "Spawn",
                // The demo runs a server in the process and uploads to it as a backend would.
                "InstantServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // The reference sync server: Document Engine-shaped REST API and the /i/v1 client API.
        .target(
            name: "InstantServer",
            dependencies: [
                "InstantProtocol",
                "InstantStore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "instant-server",
            dependencies: [
                "InstantServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Sync round trips, a 10k-change push, and listener latency against a live server.
        .executableTarget(
            name: "server-benchmark",
            dependencies: [
                "InstantServer", "InstantProtocol", "TestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Benchmarks/ServerBenchmark"
        ),
        // A short tour of the store; the README's main-job command until instantctl exists.
        .executableTarget(
            name: "store-demo",
            dependencies: ["InstantStore"],
            path: "Examples/StoreDemo"
        ),
        // The client's flow against a running server (instant-server serve --dev).
        .executableTarget(
            name: "client-tour",
            dependencies: [
                "Instant", "InstantProtocol",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Examples/ClientTour"
        ),
        // A release-built benchmark: ingest, deep verify, prune and listing against baselines.
        .executableTarget(
            name: "store-benchmark",
            dependencies: ["InstantStore", "BenchmarkSupport", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Benchmarks/StoreBenchmark"
        ),
        // The client against a live server: download vs curl, creates vs raw SQLite, sync, A→B latency.
        .executableTarget(
            name: "client-benchmark",
            dependencies: [
                "Instant", "InstantProtocol", "InstantServer", "BenchmarkSupport",
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Benchmarks/ClientBenchmark"
        ),
        .target(
            name: "BenchmarkSupport",
            dependencies: ["InstantStore", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Benchmarks/BenchmarkSupport"
        ),
        .executableTarget(
            name: "ctl-benchmark",
            dependencies: ["BenchmarkSupport", "InstantStore"],
            path: "Benchmarks/CtlBenchmark"
        ),
        // A child process the crash and concurrency tests drive and kill.
        .executableTarget(
            name: "instant-store-worker",
            dependencies: ["InstantStore"],
            path: "Tests/StoreWorker"
        ),
        // A client the client's crash and concurrency tests drive and kill.
        .executableTarget(
            name: "instant-client-worker",
            dependencies: ["Instant", "InstantProtocol"],
            path: "Tests/ClientWorker"
        ),
        .target(name: "TestSupport", dependencies: ["Spawn"], path: "Tests/TestSupport"),
        // A real server on a loopback port for the server's and the client's tests.
        .target(
            name: "ServerTestSupport",
            dependencies: [
                "InstantServer", "InstantProtocol", "TestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Tests/ServerTestSupport"
        ),
        .testTarget(name: "InstantProtocolTests", dependencies: ["InstantProtocol"]),
        .testTarget(
            name: "InstantTests",
            dependencies: [
                "Instant", "InstantProtocol", "InstantStore", "InstantServer", "ServerTestSupport", "TestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "InstantctlTests",
            dependencies: [
                "Instant", "InstantStore", "InstantProtocol", "Spawn", "TestSupport", "ServerTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "InstantStoreTests",
            dependencies: ["InstantStore", "TestSupport", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(
            name: "InstantServerTests",
            dependencies: [
                "InstantServer", "InstantProtocol", "InstantStore", "TestSupport", "ServerTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
