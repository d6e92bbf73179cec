import AsyncHTTPClient
import Foundation
import InstantProtocol
import InstantServer
import Logging
import NIOCore

/// The demo's sync server: an ``InstantServer`` in this process, on an ephemeral loopback
/// port, with a development key pair and a data directory of its own. The demo talks to it
/// as a backend would (uploads with the API token, JWTs signed with the private key) and
/// its `instantctl` processes as clients.
final class DemoServer: Sendable {
    let base: String
    let apiToken: String
    private let privateKey: String
    private let running: Task<Void, any Error>

    private init(base: String, apiToken: String, privateKey: String, running: Task<Void, any Error>) {
        self.base = base
        self.apiToken = apiToken
        self.privateKey = privateKey
        self.running = running
    }

    /// Starts the server on `data` and returns once it listens.
    static func start(data: URL) async throws -> DemoServer {
        let pair = JWTKeys.developmentKeyPair()
        let apiToken = (0..<4).map { _ in String(UInt64.random(in: .min ... .max), radix: 16) }.joined()
        let configuration = ServerConfiguration(
            port: 0, dataDirectory: data, apiAuthToken: apiToken,
            jwtKey: try JWTKeyConfiguration(publicKey: pair.publicKey, algorithm: .es256), maximumListenTimeout: 10)
        let server = try await InstantServer(configuration: configuration)
        let (ports, announce) = AsyncStream.makeStream(of: Int.self)
        let quiet = Logger(label: "instant-server") { _ in SwiftLogNoOpLogHandler() }
        let app = server.application(logger: quiet) { port in announce.yield(port) }
        let running = Task {
            defer { announce.finish() }
            // No signal handlers: the demo stops the server by cancelling this task.
            try await app.runService(gracefulShutdownSignals: [])
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            let reason: String
            do {
                try await running.value
                reason = "it stopped"
            } catch {
                reason = "\(error)"
            }
            throw CommandError(message: "the demo's server did not start: \(reason)", status: ExitStatus.problems)
        }
        return DemoServer(
            base: "http://127.0.0.1:\(port)", apiToken: apiToken, privateKey: pair.privateKey, running: running)
    }

    /// A client JWT for a user's layer of a document, valid for an hour.
    func token(document: String, layer: String? = nil, user: String) async throws -> String {
        try await JWTKeys.token(
            InstantClaims(
                documentID: document, layer: layer, userID: user, permissions: Permissions.allNames,
                expiration: Date().addingTimeInterval(3600)), privateKeyPEM: privateKey)
    }

    /// `POST /api/documents?document_id=…` with the PDF as the body, as a backend uploads.
    func upload(document: String, pdf: Data) async throws {
        var request = HTTPClientRequest(url: "\(base)/api/documents?document_id=\(PathEncoding.encode(document))")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Token token=\"\(apiToken)\"")
        request.headers.add(name: "Content-Type", value: "application/pdf")
        request.body = .bytes(ByteBuffer(data: pdf))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 1 << 20)
        guard response.status.code < 300 else {
            throw CommandError(
                message: "the demo's server refused the upload of \(document): \(response.status.code) "
                    + String(buffer: body),
                status: ExitStatus.problems)
        }
    }

    /// Stops serving (open connections are closed).
    func stop() async {
        running.cancel()
        _ = try? await running.value
    }
}
