import AsyncHTTPClient
import Foundation
import InstantProtocol
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import TestSupport
import Testing

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
        #expect(status == 200 && answer == ListenResponse(revision: 0, changed: false))
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
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Authorization", value: "Token token=\"\(apiToken)\"")
        if let body { request.body = .bytes(ByteBuffer(data: body)) }
        let response = try await http.execute(request, timeout: .seconds(30))
        _ = try await response.body.collect(upTo: 1 << 20)
        return response.status.code
    }
}
