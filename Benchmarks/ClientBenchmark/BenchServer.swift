import AsyncHTTPClient
import Foundation
import InstantProtocol
import InstantServer
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

#if canImport(Glibc)
    import Glibc
#endif

/// A reference server on an ephemeral loopback port with a temporary data directory, and
/// the raw HTTP the baselines use.
struct BenchServer: Sendable {
    let base: String
    let http: HTTPClient
    let privateKey: String
    let data: URL

    static func start() async throws -> (BenchServer, Task<Void, any Error>) {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("instant-client-bench-\(getpid())")
        let pair = JWTKeys.developmentKeyPair()
        let configuration = ServerConfiguration(
            port: 0, dataDirectory: data, apiAuthToken: "bench",
            jwtKey: try JWTKeyConfiguration(publicKey: pair.publicKey, algorithm: .es256), maxPayloadSize: 64 << 20)
        let server = try await InstantServer(configuration: configuration)
        let (ports, sink) = AsyncStream.makeStream(of: Int.self)
        let app = server.application { port in sink.yield(port) }
        let serving = Task { try await app.runService(gracefulShutdownSignals: []) }
        var port = 0
        for await first in ports {
            port = first
            break
        }
        var clientConfiguration = HTTPClient.Configuration()
        clientConfiguration.connectionPool = .init(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 16)
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
        return (
            BenchServer(base: "http://127.0.0.1:\(port)", http: http, privateKey: pair.privateKey, data: data), serving
        )
    }

    func token(_ document: String, layer: String? = nil, user: String) async throws -> String {
        try await JWTKeys.token(
            InstantClaims(
                documentID: document, layer: layer, userID: user, permissions: Permissions.allNames,
                expiration: Date().addingTimeInterval(86_400)),
            privateKeyPEM: privateKey)
    }

    @discardableResult
    func call(_ method: HTTPMethod, _ path: String, token: String, body: Data? = nil) async throws -> Data {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Token token=\"\(token)\"")
        if let body { request.body = .bytes(ByteBuffer(data: body)) }
        let response = try await http.execute(request, timeout: .seconds(120))
        let bytes = try await response.body.collect(upTo: 256 << 20)
        guard response.status.code < 300 else { throw ProtocolError(.internal, "\(path): \(response.status)") }
        return Data(buffer: bytes)
    }

    func upload(_ document: String, _ pdf: Data) async throws {
        try await call(.POST, "/api/documents?document_id=\(PathEncoding.encode(document))", token: "bench", body: pdf)
    }

    func sync(_ document: String, token: String, _ request: SyncRequest) async throws -> SyncResponse {
        try SyncResponse(
            jsonData: try await call(
                .POST, "/i/v1/documents/\(PathEncoding.encode(document))/sync", token: token,
                body: Data(request.jsonBytes())))
    }

    func shutdown() async throws {
        try await http.shutdown()
        try? FileManager.default.removeItem(at: data)
    }
}

func note(_ text: String, id: String? = nil) -> JSONValue {
    var members: [String: JSONValue] = [
        "v": 2, "type": "pspdfkit/note", "pageIndex": 0, "bbox": [10, 20, 100, 50], "text": .string(text),
    ]
    if let id { members["id"] = .string(id) }
    return .object(members)
}

func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

func percentile(_ values: [Double], _ p: Int) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, sorted.count * p / 100)]
}

func median(_ values: [Double]) -> Double { percentile(values, 50) }

func temporaryDirectory(_ name: String) -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("instant-client-bench-\(name)-\(UUID())")
}

/// Writes back every dirty page of every file system (sync(2)), before a timed phase.
func flushDirtyPages() {
    #if canImport(Glibc)
        Glibc.sync()
    #elseif canImport(Darwin)
        Darwin.sync()
    #endif
}
