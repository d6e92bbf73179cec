import AsyncHTTPClient
import Foundation
import Hummingbird
import HummingbirdTesting
import InstantProtocol
import InstantServer
import JWTKit
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// A real server on an ephemeral loopback port with a fresh data directory, and helpers
/// that talk real HTTP to it with async-http-client.
public struct TestServer: Sendable {
    public static let apiToken = "test-api-token"
    /// The longest a test's request may take. Generous: a request waits behind every write
    /// to its layer (50 syncs of one layer commit one after another, each with its fsync),
    /// and CI's disks can be slow; a request that takes this long is stuck.
    public static let requestDeadline: TimeAmount = .seconds(120)
    public let base: String
    public let privateKeyPEM: String
    public let http: HTTPClient
    /// The server's data directory (its PDFs are in `pdfs/`).
    public let dataDirectory: URL

    /// Starts a server, runs `body` against it, and stops it.
    /// `dataDirectory`, when given, is used (and left in place) instead of a fresh one.
    public static func with<T: Sendable>(
        maxPayloadSize: Int = 1 << 20, dataDirectory: URL? = nil, listenTimeout: Int = 5,
        configure: (inout ServerConfiguration) -> Void = { _ in },
        _ body: @Sendable (TestServer) async throws -> T
    ) async throws -> T {
        let data =
            dataDirectory
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("instant-server-\(UUID().uuidString)")
        defer { if dataDirectory == nil { try? FileManager.default.removeItem(at: data) } }
        let pair = JWTKeys.developmentKeyPair()
        var configuration = ServerConfiguration(
            port: 0, dataDirectory: data, apiAuthToken: apiToken,
            jwtKey: try JWTKeyConfiguration(publicKey: pair.publicKey, algorithm: .es256),
            maxUploadSize: 8 << 20, maxPayloadSize: maxPayloadSize, maximumListenTimeout: listenTimeout)
        configure(&configuration)
        let server = try await InstantServer(configuration: configuration)
        // A test that starts another server on the same directory (a restart) finds it free.
        defer { server.close() }
        let app = server.application()
        return try await app.test(.live) { testClient in
            guard let port = testClient.port else { throw ProtocolError(.internal, "no port") }
            // Room for every concurrent test request, and a patient wait for a connection:
            // the full suite runs many servers side by side on two cores.
            var clientConfiguration = HTTPClient.Configuration()
            clientConfiguration.timeout = .init(connect: .seconds(60))
            clientConfiguration.connectionPool = .init(
                idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 64)
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
            do {
                let result = try await body(
                    TestServer(
                        base: "http://127.0.0.1:\(port)", privateKeyPEM: pair.privateKey, http: client,
                        dataDirectory: data))
                try await client.shutdown()
                return result
            } catch {
                try? await client.shutdown()
                throw error
            }
        }
    }

    public struct Reply: Sendable {
        public var status: Int
        public var headers: [(String, String)]
        public var body: Data
        public func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
        public func json<T: Decodable>(_ type: T.Type) throws -> T { try JSONDecoder.iso.decode(T.self, from: body) }
        public var errorCode: String? { (try? json(ErrorBody.self))?.error.code.rawValue }
    }

    public func request(
        _ method: HTTPMethod, _ path: String, headers: [(String, String)] = [], body: Data? = nil
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(data: body)) }
        let response = try await http.execute(request, timeout: Self.requestDeadline)
        let bytes = try await response.body.collect(upTo: 64 << 20)
        return Reply(
            status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) },
            body: Data(buffer: bytes))
    }

    public func api(_ method: HTTPMethod, _ path: String, json: String? = nil, body: Data? = nil) async throws -> Reply
    {
        try await request(
            method, "/api" + path, headers: [("Authorization", "Token token=\"\(Self.apiToken)\"")],
            body: json.map { Data($0.utf8) } ?? body)
    }

    public func token(
        document: String, layer: String? = nil, user: String? = nil, permissions: [String]? = Permissions.allNames,
        expiresIn: TimeInterval = 3600
    ) async throws -> String {
        try await JWTKeys.token(
            InstantClaims(
                documentID: document, layer: layer, userID: user, permissions: permissions,
                expiration: Date().addingTimeInterval(expiresIn)), privateKeyPEM: privateKeyPEM)
    }

    public func client(
        _ method: HTTPMethod, _ document: String, _ endpoint: String, token: String, headers: [(String, String)] = [],
        body: Data? = nil
    ) async throws -> Reply {
        try await request(
            method, "/i/v1/documents/\(PathEncoding.encode(document))/\(endpoint)",
            headers: [("Authorization", "Token token=\"\(token)\"")] + headers, body: body)
    }

    public func sync(_ document: String, token: String, _ sync: SyncRequest) async throws -> SyncResponse {
        let reply = try await client(.POST, document, "sync", token: token, body: try JSONEncoder().encode(sync))
        guard reply.status == 200 else {
            throw ProtocolError(
                .internal, "sync answered \(reply.status): \(String(decoding: reply.body, as: UTF8.self))")
        }
        return try reply.json(SyncResponse.self)
    }

    /// Uploads a PDF as `document`.
    @discardableResult
    public func upload(_ document: String, _ pdf: Data) async throws -> Reply {
        try await api(.POST, "/documents?document_id=\(PathEncoding.encode(document))", body: pdf)
    }

}

extension JSONDecoder {
    public static let iso: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()
}

public func annotation(_ text: String, page: Int = 0, id: String? = nil) -> JSONValue {
    var members: [String: JSONValue] = [
        "v": .integer(2), "type": .string("pspdfkit/note"), "pageIndex": .integer(Int64(page)),
        "bbox": .array([.integer(1), .integer(2), .integer(30), .integer(40)]), "text": .string(text),
        "customData": .object(["kept": .bool(true)]),
    ]
    if let id { members["id"] = .string(id) }
    return .object(members)
}

public func samplePDF(_ size: Int = 300_000, seed: UInt64 = 1) -> Data {
    var data = Data("%PDF-1.7\n".utf8)
    var state = seed &+ 0x9E37_79B9_7F4A_7C15
    while data.count < size {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        data.append(contentsOf: "obj \(state % 1000) <</Type /Page>> endobj\n".utf8)
    }
    return data.prefix(size)
}

/// A PDF whose bytes do not compress (as most of a real PDF's do not: its streams are
/// compressed already), so its zstd frame is about as large as the PDF.
public func incompressiblePDF(_ size: Int, seed: UInt64 = 1) -> Data {
    var data = Data("%PDF-1.7\n".utf8)
    data.reserveCapacity(size + 8)
    var state = seed &+ 0x9E37_79B9_7F4A_7C15
    while data.count < size {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        withUnsafeBytes(of: state ^ (state >> 29)) { data.append(contentsOf: $0) }
    }
    return data.prefix(size)
}

/// `GET /api/…/annotations`.
public struct AnnotationList: Decodable {
    public struct Page: Decodable {
        public var annotations: [AnnotationRecord]
        public var truncated: Bool
    }
    public var data: Page
}

/// How many PDFs the server with data directory `data` holds in its store.
public func storedPDFs(_ data: URL) -> Int {
    let root = data.appendingPathComponent("pdfs/blobs/sha256")
    let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])
    var count = 0
    while let url = enumerator?.nextObject() as? URL {
        if (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true { count += 1 }
    }
    return count
}
