import AsyncHTTPClient
import Foundation
import InstantProtocol
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import TestSupport
import ServerTestSupport

/// A real `instant-server --dev` process on a data directory of the test's choice, for
/// tests that kill it at a failpoint and start it again.
struct ServerProcess: Sendable {
    let process: ChildProcess
    let base: String
    let apiToken: String
    let data: URL
    let http: HTTPClient

    /// Starts the server (with `INSTANT_FAILPOINT=failpoint` when given) and waits until it serves.
    static func start(data: URL, failpoint: String? = nil) async throws -> ServerProcess {
        var environment = ["PATH": "/usr/bin:/bin", "INSTANT_SERVER_DATA": data.path, "PORT": "0"]
        if let failpoint { environment["INSTANT_FAILPOINT"] = failpoint }
        let process = try ChildProcess(Executables.url("instant-server"), ["--dev"], environment: environment)
        let log = try await process.waitForError(containing: "serving")
        let output = try await process.waitForOutput(containing: "more tokens:")
        guard let port = log.firstMatch(of: /port=(\d+)/)?.1, let token = output.firstMatch(of: /API token:\s+(\S+)/)?.1
        else { throw ProtocolError(.internal, "no port or API token in the server's output: \(log)\n\(output)") }
        return ServerProcess(
            process: process, base: "http://127.0.0.1:\(port)", apiToken: String(token), data: data,
            http: HTTPClient(eventLoopGroupProvider: .singleton))
    }

    struct Reply {
        var status: UInt
        var body: Data
    }

    /// A request with `Authorization: Token token="<token>"` (the API token by default).
    func call(
        _ method: HTTPMethod, _ path: String, token: String? = nil, body: Data? = nil, accept: String? = nil
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Token token=\"\(token ?? apiToken)\"")
        if let accept { request.headers.add(name: "Accept", value: accept) }
        if let body { request.body = .bytes(ByteBuffer(data: body)) }
        let response = try await http.execute(request, timeout: .seconds(30))
        return Reply(status: response.status.code, body: Data(buffer: try await response.body.collect(upTo: 64 << 20)))
    }

    /// `/api` + `path`, with a JSON body.
    func api(_ method: HTTPMethod, _ path: String, json: String? = nil, accept: String? = nil) async throws -> Reply {
        try await call(method, "/api" + path, body: json.map { Data($0.utf8) }, accept: accept)
    }

    /// A client token for `document`, minted by `instant-server token` with the dev key.
    func token(document: String, permissions: String = "all") async throws -> String {
        let minting = try ChildProcess(
            Executables.url("instant-server"),
            [
                "token", "--document", document, "--permissions", permissions, "--private-key",
                data.appendingPathComponent("dev/private-key.pem").path,
            ], environment: ["PATH": "/usr/bin:/bin"])
        _ = try await minting.exit()
        return minting.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// SIGTERM, and waits for the exit.
    func stop() async {
        try? await http.shutdown()
        process.signal(SIGTERM)
        _ = try? await process.exit(within: .seconds(10))
    }
}
