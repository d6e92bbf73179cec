import AsyncHTTPClient
import Foundation
import InstantProtocol
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import TestSupport
import Testing
import ServerTestSupport

/// The `instant-server` binary itself: what it says without configuration, `--dev`, and a
/// graceful shutdown on SIGTERM that neither waits out long polls nor loses data.
@Suite struct ExecutableTests {
    let data = FileManager.default.temporaryDirectory.appendingPathComponent("instant-server-bin-\(UUID().uuidString)")

    /// A clean environment: nothing inherited can configure the server by accident.
    func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = ["PATH": "/usr/bin:/bin", "INSTANT_SERVER_DATA": data.path, "PORT": "0"]
        environment.merge(extra) { _, new in new }
        return environment
    }

    @Test func refusesToStartWithoutConfigurationAndSaysWhatIsMissing() async throws {
        defer { try? FileManager.default.removeItem(at: data) }
        let server = try ChildProcess(Executables.url("instant-server"), [], environment: environment())
        let ending = try await server.exit()
        #expect(ending == .init(status: 78, signalled: false))
        for expected in ["API_AUTH_TOKEN is not set", "JWT_PUBLIC_KEY is not set", "--dev"] {
            #expect(server.standardError.contains(expected), "\(server.standardError)")
        }

        let badAlgorithm = try ChildProcess(
            Executables.url("instant-server"), [],
            environment: environment([
                "API_AUTH_TOKEN": "t", "JWT_PUBLIC_KEY": "/nowhere.pem", "JWT_ALGORITHM": "HS256",
            ]))
        #expect(try await badAlgorithm.exit().status == 78)
        #expect(badAlgorithm.standardError.contains("JWT_ALGORITHM"), "\(badAlgorithm.standardError)")

        // A data directory that cannot be made is said in the system's words, with its code.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("instant-server-file-\(UUID())")
        try Data("x".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let underAFile = try ChildProcess(
            Executables.url("instant-server"), ["--dev"],
            environment: environment(["INSTANT_SERVER_DATA": file.appendingPathComponent("data").path]))
        #expect(try await underAFile.exit().status == 1)
        #expect(
            underAFile.standardError.contains("(data_directory_unusable)")
                && underAFile.standardError.contains("Not a directory"), "\(underAFile.standardError)")
        #expect(underAFile.standardOutput.isEmpty)

        let badLevel = try ChildProcess(
            Executables.url("instant-server"), ["--dev"], environment: environment(["LOG_LEVEL": "verbose"]))
        #expect(try await badLevel.exit().status == 78)
        #expect(
            badLevel.standardError.contains(#"LOG_LEVEL is "verbose", not one of trace, debug, info"#),
            "\(badLevel.standardError)")
    }

    /// One server per data directory: a second one refuses to start (exit 1), naming the
    /// first one's process, and changes nothing; once the first has stopped, a server
    /// starts on the directory again.
    @Test func aSecondServerOnTheSameDataDirectoryRefusesToStart() async throws {
        defer { try? FileManager.default.removeItem(at: data) }
        let first = try ChildProcess(Executables.url("instant-server"), ["--dev"], environment: environment())
        _ = try await started(first)
        let holder = try String(contentsOf: data.appendingPathComponent("server.lock"), encoding: .utf8)
        let second = try ChildProcess(Executables.url("instant-server"), ["--dev"], environment: environment())
        #expect(try await second.exit().status == 1)
        #expect(
            second.standardError.contains(
                "the data directory \(data.path) is in use by another instant-server (process \(holder.dropLast()))"),
            "\(second.standardError)")
        #expect(second.standardError.contains("cannot start (data_directory_in_use)"), "\(second.standardError)")
        // Stopped before --dev prints a token or touches a file.
        #expect(!second.standardError.contains("serving") && second.standardOutput.isEmpty, "\(second.standardOutput)")
        #expect(first.isRunning)
        first.signal(SIGTERM)
        #expect(try await first.exit().status == 0)
        // (An empty LOG_LEVEL is unset, as every setting's; "WARN" is warning.)
        let third = try ChildProcess(
            Executables.url("instant-server"), ["--dev"], environment: environment(["LOG_LEVEL": ""]))
        _ = try await started(third)
        third.signal(SIGTERM)
        #expect(try await third.exit().status == 0)
        let quiet = try ChildProcess(
            Executables.url("instant-server"), ["--dev"], environment: environment(["LOG_LEVEL": "WARN"]))
        _ = try await quiet.waitForOutput(containing: "more tokens:")
        try await Task.sleep(for: .milliseconds(300))
        #expect(quiet.isRunning, "\(quiet.standardError)")
        quiet.signal(SIGTERM)
        #expect(try await quiet.exit().status == 0)
        #expect(!quiet.standardError.contains("serving"), "info is below warning")
    }

    /// A server started on a file system with no room left says so (data_directory_full),
    /// not SQLite's "disk I/O error", which sends an operator looking for a failing disk.
    @Test(.enabled(if: TinyDisk.canMount, "needs root, to mount a tmpfs"))
    func aServerStartedOnAFullDiskSaysTheDiskIsFull() async throws {
        let disk = try TinyDisk(megabytes: 4)
        defer { disk.unmount() }
        var settings = environment()
        settings["INSTANT_SERVER_DATA"] = disk.path.appendingPathComponent("data").path
        let first = try ChildProcess(Executables.url("instant-server"), ["--dev"], environment: settings)
        _ = try await started(first)
        first.signal(SIGTERM)
        #expect(try await first.exit().status == 0)
        // A clean stop removes the databases' -shm files, or leaves them (GRDB closes a
        // pool's writer before its readers): gone, as after most stops, a start must make
        // them, which a full disk refuses. (-shm is rebuilt from -wal: nothing is lost.)
        for database in ["server.sqlite", "pdfs/catalog.sqlite"] {
            try? FileManager.default.removeItem(
                at: disk.path.appendingPathComponent("data").appendingPathComponent(database + "-shm"))
        }
        try disk.fill()
        let full = try ChildProcess(Executables.url("instant-server"), ["--dev"], environment: settings)
        defer { if full.isRunning { full.signal(SIGKILL) } }
        #expect(try await full.exit().status == 1)
        #expect(
            full.standardError.contains("cannot start (data_directory_full)")
                && full.standardError.contains("free space on it"), "\(full.standardError)")
    }

    @Test func devModeServesAndSIGTERMEndsLongPollsAndKeepsTheData() async throws {
        defer { try? FileManager.default.removeItem(at: data) }
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        defer { _ = http.shutdown() }

        let first = try ChildProcess(Executables.url("instant-server"), ["serve", "--dev"], environment: environment())
        let (base, apiToken, clientToken) = try await started(first)
        #expect(
            try await call(http, .POST, "\(base)/api/documents?document_id=example", apiToken, Data("%PDF-1.7".utf8))
                == 201)

        // `token` mints a read-only token for the same key: it may read, and its writes lose.
        let minting = try ChildProcess(
            Executables.url("instant-server"),
            [
                "token", "--document", "example", "--user", "alice", "--permissions", "read-document",
                "--expires-in", "10m", "--private-key", data.appendingPathComponent("dev/private-key.pem").path,
            ], environment: environment())
        #expect(try await minting.exit().status == 0)
        let readOnly = minting.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        // A permission name the server does not know (a typo) or no document is a usage
        // error, not a token that grants less than asked.
        for wrong in [
            ["--document", "example", "--permissions", "read-document,wirte"], ["--document", ""],
            ["--document", "example", "--permissions", " , "],
        ] {
            let refused = try ChildProcess(
                Executables.url("instant-server"),
                ["token"] + wrong + ["--private-key", data.appendingPathComponent("dev/private-key.pem").path],
                environment: environment())
            #expect(try await refused.exit().status == 64, "\(wrong)")
            #expect(refused.standardOutput.isEmpty)
            #expect(
                refused.standardError.contains(#""wirte" is not one of read-document, write, download, all"#)
                    || refused.standardError.contains("--document must not be empty")
                    || refused.standardError.contains("--permissions names none"), "\(refused.standardError)")
        }
        let write = SyncRequest(
            clientId: "reader-0123456789abcdef", baseRevision: 0,
            changes: [
                ClientChange(
                    changeId: 1, kind: .create, id: "a",
                    content: .object([
                        "v": .integer(2), "type": .string("pspdfkit/note"), "pageIndex": .integer(0),
                        "bbox": .array([.integer(0), .integer(0), .integer(1), .integer(1)]),
                    ]))
            ])
        let (written, reply) = try await client(
            http, .POST, "\(base)/i/v1/documents/example/sync", readOnly, Data(write.jsonBytes()))
        #expect(written == 200)
        #expect(try SyncResponse(jsonData: reply).results.first?.reason == .permissionDenied)

        // A listener parked for 30 s must not hold the shutdown.
        let listening = Task {
            let start = ContinuousClock.now
            var request = HTTPClientRequest(url: "\(base)/i/v1/documents/example/listen?revision=0&timeout=30")
            request.headers.add(name: "Authorization", value: "Token token=\"\(clientToken)\"")
            let response = try await http.execute(request, timeout: .seconds(60))
            let body = try await response.body.collect(upTo: 1 << 20)
            return (
                response.status.code, try ListenResponse(jsonData: body.readableBytesView), ContinuousClock.now - start
            )
        }
        try await Task.sleep(for: .milliseconds(500))
        first.signal(SIGTERM)
        let (status, answer, waited) = try await listening.value
        #expect(status == 200 && answer.revision == 0 && !answer.changed)
        #expect(waited < .seconds(10), "the listener waited \(waited)")
        #expect(try await first.exit(within: .seconds(10)) == .init(status: 0, signalled: false))

        // Started again: the same development credentials, and the document is still there.
        let second = try ChildProcess(Executables.url("instant-server"), ["--dev"], environment: environment())
        let (again, sameToken, _) = try await started(second)
        #expect(sameToken == apiToken)
        #expect(try await call(http, .GET, "\(again)/api/documents/example", apiToken) == 200)
        second.signal(SIGINT)
        #expect(try await second.exit(within: .seconds(10)).status == 0)
    }

    /// The base URL, API token and client token a `--dev` server printed.
    private func started(_ server: ChildProcess) async throws -> (String, String, String) {
        let log = try await server.waitForError(containing: "serving")
        let output = try await server.waitForOutput(containing: "more tokens:")
        let port = try #require(log.firstMatch(of: /port=(\d+)/)?.1)
        let apiToken = try #require(output.firstMatch(of: /API token:\s+(\S+)/)?.1)
        let clientToken = try #require(output.firstMatch(of: /\n\s+(eyJ\S+)/)?.1)
        return ("http://127.0.0.1:\(port)", String(apiToken), String(clientToken))
    }

    private func call(_ http: HTTPClient, _ method: HTTPMethod, _ url: String, _ apiToken: String, _ body: Data? = nil)
        async throws -> UInt
    {
        try await client(http, method, url, apiToken, body).status
    }

    private func client(_ http: HTTPClient, _ method: HTTPMethod, _ url: String, _ token: String, _ body: Data? = nil)
        async throws -> (status: UInt, body: ByteBufferView)
    {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Authorization", value: "Token token=\"\(token)\"")
        if let body { request.body = .bytes(ByteBuffer(data: body)) }
        let response = try await http.execute(request, timeout: .seconds(30))
        return (response.status.code, try await response.body.collect(upTo: 1 << 20).readableBytesView)
    }
}
