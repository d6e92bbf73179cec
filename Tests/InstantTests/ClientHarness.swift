import Foundation
import Instant
import InstantProtocol
import InstantServer
import InstantStore
import ServerTestSupport
import Synchronization
import Testing

/// A store root of its own, a fault proxy in front of the test server, and clients on it.
struct ClientHarness: Sendable {
    let server: TestServer
    let proxy: FaultProxy
    let root: URL
    /// The clients ``downloadedDoc(layer:user:)`` made, kept for the whole test: a test
    /// that does not name its client still has live descriptors.
    private let kept = KeptClients()

    static func with<T: Sendable>(
        configure: (inout ServerConfiguration) -> Void = { _ in },
        _ body: @Sendable (ClientHarness) async throws -> T
    ) async throws -> T {
        try await TestServer.with(configure: configure) { server in
            guard let port = URLComponents(string: server.base)?.port else {
                throw InstantError(.invalidURL, "no port")
            }
            let proxy = try FaultProxy(upstreamPort: port)
            defer { proxy.close() }
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("instant-client-\(UUID())")
            defer { try? FileManager.default.removeItem(at: root) }
            return try await body(ClientHarness(server: server, proxy: proxy, root: root))
        }
    }

    /// A client of the server through the proxy, over this harness's store (or `root`),
    /// retrying fast.
    func client(root: URL? = nil) throws -> InstantClient {
        let client = try InstantClient(serverURL: proxy.url, storeRoot: root ?? self.root)
        client.retryPolicy = RetryPolicy(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(400))
        return client
    }

    func jwt(_ document: String, layer: String? = nil, user: String = "ana", expiresIn: TimeInterval = 3600)
        async throws -> String
    {
        try await server.token(document: document, layer: layer, user: user, expiresIn: expiresIn)
    }

    /// Uploads a PDF and returns a downloaded descriptor of `layer` for `user`, with
    /// automatic syncing off.
    func downloaded(
        _ client: InstantClient, _ document: String, layer: String? = nil, user: String = "ana"
    ) async throws -> InstantDocumentDescriptor {
        let token = try await jwt(document, layer: layer, user: user)
        let descriptor = try client.documentDescriptor(forJWT: token)
        descriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
        try await descriptor.download(usingJWT: token).result()
        return descriptor
    }

    /// The usual opening: `samplePDF()` uploaded as "doc", a new client recording its
    /// events, and a downloaded descriptor of `layer` for `user`, with automatic syncing off.
    ///
    /// ```swift
    /// let (_, log, descriptor) = try await h.downloadedDoc()
    /// ```
    func downloadedDoc(layer: String? = nil, user: String = "ana") async throws -> (
        client: InstantClient, log: EventLog, descriptor: InstantDocumentDescriptor
    ) {
        try await server.upload("doc", samplePDF())
        let client = try client()
        kept.clients.withLock { $0.append(client) }
        let log = await EventLog.recording(client)
        return (client, log, try await downloaded(client, "doc", layer: layer, user: user))
    }

    /// "doc" downloaded by one client, then another client recording its events and its
    /// descriptor of the layer from the store, as after a restart: without a JWT.
    func restartedDoc() async throws -> (client: InstantClient, log: EventLog, descriptor: InstantDocumentDescriptor) {
        try await server.upload("doc", samplePDF())
        let first = try client()
        kept.clients.withLock { $0.append(first) }
        _ = try await downloaded(first, "doc")
        let client = try client()
        kept.clients.withLock { $0.append(client) }
        let log = await EventLog.recording(client)
        return (client, log, try #require(client.localDocumentDescriptors()["doc"]?.first))
    }

    /// The PDF stored for `document`: it must read back as `pdf`, and the store must
    /// verify clean (deep).
    @discardableResult
    func expectStoredPDF(_ document: String, _ pdf: Data, sourceLocation: SourceLocation = #_sourceLocation) throws
        -> StoredPDF
    {
        let store = try InstantStore(root: root)
        defer { store.close() }
        let stored = try #require(
            try store.pdf(tenant: TenantURL(proxy.url.absoluteString), document: document),
            sourceLocation: sourceLocation)
        var read = Data()
        try store.readPDF(stored.sha256) { read.append(contentsOf: $0) }
        #expect(read == pdf, sourceLocation: sourceLocation)
        #expect(try store.verify(VerifyOptions(deep: true)).isClean, sourceLocation: sourceLocation)
        return stored
    }

    /// Another writer's annotations (`ids`, notes of their own text), created on the
    /// server's default layer of `document` through the backend API.
    func createOnServer(_ ids: [String], in document: String = "doc") async throws {
        let inputs = ids.map { AnnotationInput(id: $0, content: note("server \($0)")).json }
        let body = JSONValue.object(["annotations": .array(inputs)])
        let reply = try await server.api(
            .POST, "/documents/\(PathEncoding.encode(document))/annotations",
            json: String(decoding: body.jsonData(), as: UTF8.self))
        #expect(reply.status < 300)
    }

    /// The server's annotations of a layer, through the backend API.
    func serverAnnotations(_ document: String, layer: String = "") async throws -> [AnnotationRecord] {
        let path =
            layer.isEmpty
            ? "/documents/\(PathEncoding.encode(document))/annotations"
            : "/documents/\(PathEncoding.encode(document))/layers/\(PathEncoding.encode(layer))/annotations"
        return try await server.api(.GET, path).json(AnnotationList.self).data.annotations
    }
}

/// Clients a harness keeps alive until its test ends.
private final class KeptClients: Sendable {
    let clients = Mutex<[InstantClient]>([])
}

/// Collects a client's events for a test to wait on and inspect.
actor EventLog {
    private(set) var events: [InstantEvent] = []
    private var task: Task<Void, Never>?

    static func recording(_ client: InstantClient) async -> EventLog {
        let log = EventLog()
        await log.start(client.events())
        return log
    }

    private func start(_ stream: AsyncStream<InstantEvent>) {
        task = Task { for await event in stream { self.append(event) } }
    }

    private func append(_ event: InstantEvent) { events.append(event) }

    /// Waits (up to `seconds`) until `predicate` holds for the events so far.
    func wait(
        _ what: String, seconds: Double = 20, until predicate: ([InstantEvent]) -> Bool
    ) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !predicate(events) {
            if Date() > deadline { throw InstantError(.unknown, "timed out waiting for \(what); saw \(names)") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    var names: [String] { events.map(Self.name) }

    /// Waits (up to `seconds`) until `count` events are named `name` (or start with it,
    /// as `didFailSync` names every failure).
    func wait(for name: String, count: Int = 1, seconds: Double = 20) async throws {
        try await wait(name, seconds: seconds) { events in
            events.lazy.map(Self.name).filter { $0.hasPrefix(name) }.count >= count
        }
    }

    /// The `didLoseChange` events' changes, in order.
    var lostChanges: [InstantLostChange] {
        events.compactMap { event in
            if case .didLoseChange(_, let change) = event { change } else { nil }
        }
    }

    /// The `didReceiveChanges` events' changes, in order.
    var receivedChanges: [InstantServerChange] {
        events.flatMap { event -> [InstantServerChange] in
            guard case .didReceiveChanges(_, let changes) = event else { return [] }
            return changes
        }
    }

    func clear() { events.removeAll() }

    static func name(_ event: InstantEvent) -> String {
        switch event {
        case .didFinishDownload: "didFinishDownload"
        case .didFailDownload(_, let error): "didFailDownload(\(error.code.name))"
        case .didFailAuthentication: "didFailAuthentication"
        case .didFinishReauthentication: "didFinishReauthentication"
        case .didFailReauthentication(_, let error): "didFailReauthentication(\(error.code.name))"
        case .didBeginSync: "didBeginSync"
        case .didChangeSyncState(_, let state): "state(\(state.rawValue))"
        case .didFailSync(_, let error): "didFailSync(\(error.code.name))"
        case .didFinishSync: "didFinishSync"
        case .didLoseChange(_, let change): "didLoseChange(\(change.annotationID), \(change.reason.rawValue))"
        case .didReceiveChanges(_, let changes):
            "didReceiveChanges(\(changes.map { "\($0.kind.rawValue) \($0.annotationID)" }.joined(separator: ", ")))"
        }
    }
}

func note(_ text: String, id: String? = nil) -> JSONValue {
    var members: [String: JSONValue] = [
        "v": .integer(2), "type": .string("pspdfkit/note"), "pageIndex": .integer(0),
        "bbox": .array([.integer(1), .integer(2), .integer(30), .integer(40)]), "text": .string(text),
        "customData": .object(["kept": .bool(true)]),
    ]
    if let id { members["id"] = .string(id) }
    return .object(members)
}

/// What an operation failed with, or nil when it succeeded.
func failure(of operation: InstantOperation) async -> InstantError? {
    do {
        try await operation.result()
        return nil
    } catch {
        return error
    }
}

extension TestServer {
    /// Deletes the layer `name` of `document` and creates it again: a new epoch, and its
    /// records gone.
    func createLayerAgain(
        _ name: String, of document: String = "doc", sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        #expect(
            try await api(.DELETE, "/documents/\(document)/layers/\(name)").status < 300, sourceLocation: sourceLocation
        )
        #expect(
            try await api(.POST, "/documents/\(document)/layers", json: #"{"name": "\#(name)"}"#).status < 300,
            sourceLocation: sourceLocation)
    }
}
