import AsyncHTTPClient
import Foundation
import InstantProtocol
import InstantServer
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import TestSupport

/// A real `instant-server --dev` process on a loopback port, on a data directory of the
/// test's choice: for tests that kill it at a failpoint and start it again, and for the
/// CLI's tests, which run both sides as built binaries.
public struct ServerProcess: Sendable {
    public let process: ChildProcess
    public let base: String
    public let apiToken: String
    public let data: URL
    let http: HTTPClient

    /// Starts the server (with `INSTANT_FAILPOINT=failpoint` when given) and waits until it serves.
    public static func start(data: URL, failpoint: String? = nil) async throws -> ServerProcess {
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

    /// A server on a fresh data directory for `body`, stopped and removed afterwards.
    public static func with<T>(_ body: (ServerProcess) async throws -> T) async throws -> T {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("instant-server-\(UUID())")
        defer { try? FileManager.default.removeItem(at: data) }
        let server = try await start(data: data)
        do {
            let result = try await body(server)
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }

    public struct Reply: Sendable {
        public var status: UInt
        public var body: Data
    }

    /// A request with `Authorization: Token token="<token>"` (the API token by default).
    public func call(
        _ method: HTTPMethod, _ path: String, token: String? = nil, body: Data? = nil, accept: String? = nil
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Token token=\"\(token ?? apiToken)\"")
        if let accept { request.headers.add(name: "Accept", value: accept) }
        if let body { request.body = .bytes(ByteBuffer(data: body)) }
        let response = try await http.execute(request, timeout: TestServer.requestDeadline)
        return Reply(status: response.status.code, body: Data(buffer: try await response.body.collect(upTo: 64 << 20)))
    }

    /// `/api` + `path`, with a JSON body.
    public func api(_ method: HTTPMethod, _ path: String, json: String? = nil, accept: String? = nil) async throws
        -> Reply
    {
        try await call(method, "/api" + path, body: json.map { Data($0.utf8) }, accept: accept)
    }

    /// Uploads a PDF as `document`.
    @discardableResult
    public func upload(_ document: String, _ pdf: Data) async throws -> Reply {
        let reply = try await call(.POST, "/api/documents?document_id=\(PathEncoding.encode(document))", body: pdf)
        guard reply.status < 300 else {
            throw ProtocolError(
                .internal, "the upload answered \(reply.status): \(String(decoding: reply.body, as: UTF8.self))")
        }
        return reply
    }

    /// A client token for `document`, minted by `instant-server token` with the dev key.
    public func token(document: String, permissions: String) async throws -> String {
        let minting = try ChildProcess(
            Executables.url("instant-server"),
            [
                "token", "--document", document, "--permissions", permissions, "--private-key",
                data.appendingPathComponent("dev/private-key.pem").path,
            ], environment: ["PATH": "/usr/bin:/bin"])
        _ = try await minting.exit()
        return minting.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A client token signed in the test with the server's dev key (faster than a process).
    public func token(
        document: String, layer: String? = nil, user: String? = nil, permissions: [String]? = Permissions.allNames,
        expiresIn: TimeInterval = 3600
    ) async throws -> String {
        let key = try String(contentsOf: data.appendingPathComponent("dev/private-key.pem"), encoding: .utf8)
        return try await JWTKeys.token(
            InstantClaims(
                documentID: document, layer: layer, userID: user, permissions: permissions,
                expiration: Date().addingTimeInterval(expiresIn)), privateKeyPEM: key)
    }

    /// SIGTERM, and waits for the exit.
    public func stop() async {
        try? await http.shutdown()
        process.signal(SIGTERM)
        _ = try? await process.exit(within: .seconds(10))
    }
}
