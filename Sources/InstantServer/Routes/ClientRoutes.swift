import Foundation
import Hummingbird
import InstantProtocol
import InstantStore
import ServiceLifecycle

/// The client API under `/i/v1`, authenticated with a JWT for one document (and one layer:
/// the token's `layer`, default ""). Every request may carry `Instant-Protocol-Version`.
struct ClientRoutes {
    let server: InstantServer

    func register(on group: RouterGroup<ServerContext>) {
        group.get("version", use: version)
        let client = group.add(middleware: VersionMiddleware())
        client.get("documents/:document/pdf", use: PDFDownload(server: server).respond)
        client.get("documents/:document/snapshot", use: snapshot)
        client.post("documents/:document/sync", use: server.bodies.counting(sync))
        client.get("documents/:document/changes", use: changes)
        client.get("documents/:document/listen", use: listen)
    }

    /// `GET /i/v1/version`: the protocol versions this server speaks. No token needed.
    @Sendable func version(_ request: Request, context: ServerContext) async throws -> Response {
        JSONResponse.make(["current": ProtocolVersion.current, "minimumSupported": ProtocolVersion.minimumSupported])
    }

    /// `GET …/snapshot[?epoch=E&after=NEXT]`: a page of the token's layer's live records.
    @Sendable func snapshot(_ request: Request, context: ServerContext) async throws -> Response {
        let identity = try await server.identity(request, context)
        try identity.require(.readDocument, for: "reading the document")
        let query = request.uri.queryParameters
        let after = try request.pageCursor()
        let snapshot = try await server.database.snapshot(
            document: identity.documentID, layer: identity.layer, epoch: query["epoch"].map(String.init),
            after: after, limits: server.configuration.pageLimits)
        return JSONResponse.make(snapshot)
    }

    /// `GET …/changes?epoch=E&since=N[&after=NEXT]`: a page of the records changed after
    /// revision N (the pages that follow a sync's, or a fetch without a sync).
    @Sendable func changes(_ request: Request, context: ServerContext) async throws -> Response {
        let identity = try await server.identity(request, context)
        try identity.require(.readDocument, for: "reading the document")
        let query = request.uri.queryParameters
        let since = try request.revision("since", need: "changes needs ?since=N, the revision the client has")
        let after = try request.pageCursor()
        let page = try await server.database.changes(
            document: identity.documentID, layer: identity.layer, epoch: query["epoch"].map(String.init),
            since: since, after: after, limits: server.configuration.pageLimits)
        return JSONResponse.make(page)
    }

    /// `POST …/sync`: the client's pending changes in, verdicts and the first page of
    /// changes out. The changes are applied in a write transaction; the page is read after
    /// it commits, in a read snapshot.
    @Sendable func sync(_ request: Request, context: ServerContext) async throws -> Response {
        let identity = try await server.identity(request, context)
        try identity.require(.readDocument, for: "syncing")
        let body = try await request.decodeJSON(SyncRequest.self, limit: server.configuration.maxPayloadSize)
        guard body.baseRevision >= 0 else { throw ProtocolError(.invalidRequest, "baseRevision must not be negative") }
        guard (16...128).contains(body.clientId.utf8.count) else {
            throw ProtocolError(
                .invalidRequest, "clientId must be 16 to 128 bytes, random and kept with the client's copy of the layer"
            )
        }
        let cap = server.configuration.maxChangesPerSync
        guard body.changes.count <= cap else {
            throw ProtocolError(
                .payloadLimitExceeded,
                "a sync carries at most \(cap) changes (this one has \(body.changes.count)): send the first \(cap), then the rest"
            )
        }
        var seen = Set<Int64>()
        for change in body.changes where !seen.insert(change.changeId).inserted {
            throw ProtocolError(.invalidRequest, "changeId \(change.changeId) appears twice in one sync")
        }
        for change in body.changes {
            try checkIdentifier(change.id, "annotation id")
            if let base = change.baseRevision, base < 0 {
                throw ProtocolError(
                    .invalidRequest, "changeId \(change.changeId) has baseRevision \(base), which must not be negative")
            }
        }
        var results: [ChangeResult] = []
        var written: LayerRef?
        if !body.changes.isEmpty {
            let document = identity.documentID
            let applied = try await server.writes.run(document: document, layer: identity.layer) {
                try await server.database.applyClientChanges(
                    document: document, layer: identity.layer, request: body, identity: identity)
            }
            await server.changed(document: document, applied.layer, created: applied.created)
            results = applied.results
            written = applied.layer
        }
        // The records this sync's fresh accepted changes wrote share its new revision, and
        // no other write has it: a client that asked for it gets them left out.
        let own = body.omitOwnChanges && results.contains { $0.accepted && !$0.replayed } ? written?.revision : nil
        var response = try await server.database.changes(
            document: identity.documentID, layer: identity.layer, epoch: written == nil ? body.epoch : nil,
            since: body.baseRevision, after: nil, limits: server.configuration.pageLimits, layerID: written?.id,
            omitting: own)
        response.results = results
        response.ownRevision = own
        return JSONResponse.make(response)
    }

    /// `GET …/listen?revision=N&epoch=E&timeout=S`: returns once the layer passes revision N,
    /// or after S seconds (default 30, at most the server's maximum) with `changed: false`
    /// and the layer's revision. A graceful shutdown ends waiting listeners at once, the
    /// same way; a closed connection releases its listener at once. A cursor the layer
    /// cannot have given gets `resetRequired`, also when the layer is deleted or created
    /// again while the listener waits.
    @Sendable func listen(_ request: Request, context: ServerContext) async throws -> Response {
        let identity = try await server.identity(request, context)
        try identity.require(.readDocument, for: "listening")
        // A listen carries no body. One that did would sit unread below the close watch
        // (which reads the connection to its end), and its handler could never return.
        // A length that is not exactly 0 is one, also past Int's range (which the HTTP
        // parser takes, up to 2^64 - 1).
        let hasLength = request.headers[.contentLength].map { UInt64($0) != 0 } ?? false
        if request.headers[.transferEncoding] != nil || hasLength {
            throw ProtocolError(.invalidRequest, "listen takes no request body")
        }
        let query = request.uri.queryParameters
        let after = try request.revision(
            "revision", need: "listen needs ?revision=N, the last revision the client has")
        let requested = query["timeout"].map { Double($0) } ?? 30
        guard let requested, requested >= 0, requested.isFinite else {
            throw ProtocolError(.invalidRequest, "timeout must be a number of seconds")
        }
        let timeout = min(requested, Double(server.configuration.maximumListenTimeout))
        let epoch = query["epoch"].map(String.init)
        // What the signature covers (header and claims), byte for byte: the same token in
        // another spelling (quotes, padding, the signature's unused bits) is the same.
        let token = try TokenVerifier.token(fromAuthorization: request.headers[.authorization])
        let signed = String(token[..<(token.lastIndex(of: ".") ?? token.endIndex)])
        let server = self.server
        // The wait runs in its own task, cancelled (and its listener released) as soon as
        // the client hangs up, or when this request is cancelled.
        let waiting = Task {
            try await withGracefulShutdownHandler {
                try await Self.waitForChange(
                    server: server, identity: identity, token: signed, epoch: epoch, after: after, timeout: timeout)
            } onGracefulShutdown: { [listeners = server.listeners] in
                // Not the server: a task holding it past shutdown would keep its data
                // directory locked for a server started next.
                Task { await listeners.close() }
            }
        }
        // Watching for the client's close reads the connection to its end: it is not reused
        // (and says so, so no client sends its next request down it).
        var response: Response
        do {
            let answer = try await request.body.consumeWithInboundCloseHandler { _ in
                try await withTaskCancellationHandler {
                    try await waiting.value
                } onCancel: {
                    waiting.cancel()
                }
            } onInboundClosed: {
                waiting.cancel()
            }
            response = JSONResponse.make(answer)
        } catch {
            // An error answer (the layer reset, the document gone) closes the connection too.
            response = ErrorMiddleware.response(ErrorMiddleware.protocolError(error))
        }
        response.headers[.connection] = "close"
        return response
    }

    /// Reads the layer, parks until something concerns it, and reads again, until it
    /// passed `after` or the time is up.
    private static func waitForChange(
        server: InstantServer, identity: ClientIdentity, token: String, epoch: String?, after: Int64,
        timeout: Double
    ) async throws -> ListenResponse {
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
        let interestBase = ListenerRegistry.Interest(
            document: identity.documentID, layer: identity.layer, unwritten: false, after: after, token: token)
        // Timed out, cancelled or shutting down: answer with the layer as it is.
        var ended = false
        while true {
            let generation = await server.listeners.generation(of: identity.documentID)
            let view = try await server.database.view(document: identity.documentID, layer: identity.layer)
            try view.check(epoch: epoch, revision: after)
            let remaining = deadline - ContinuousClock.now
            if ended || view.revision > after || remaining <= .zero || Task.isCancelled {
                return ListenResponse(epoch: view.epoch, revision: view.revision, changed: view.revision > after)
            }
            var interest = interestBase
            interest.unwritten = view.stored == nil
            switch try await server.listeners.wait(interest, generation: generation, timeout: remaining) {
            case .revision(let revision):
                // The write that woke it says where the layer is: no read needed (a layer
                // created again meanwhile is found by the sync this answer starts).
                return ListenResponse(epoch: view.epoch, revision: revision, changed: true)
            case .changed:
                continue
            case .ended:
                ended = true
            }
        }
    }
}

extension InstantServer {
    /// The verified token of a client request for the path's document.
    func identity(_ request: Request, _ context: ServerContext) async throws -> ClientIdentity {
        let document = try request.identifier("document", context: context)
        return try await verifier.verify(authorization: request.headers[.authorization], document: document)
    }
}

/// Checks `Instant-Protocol-Version` before anything else (`oldClient` / `oldServer`).
struct VersionMiddleware: RouterMiddleware {
    typealias Context = ServerContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        if let name = HTTPFields.Element.Name(ProtocolVersion.header), let text = request.headers[name] {
            guard let version = Int(text) else {
                throw ProtocolError(.invalidRequest, "\(ProtocolVersion.header) must be a whole number")
            }
            try ProtocolVersion.check(client: version)
        }
        return try await next(request, context)
    }
}

extension Request {
    /// The query value `name` as a revision (a whole number from 0); `invalidRequest`
    /// saying `need` when it is missing or anything else.
    func revision(_ name: String, need: String) throws(ProtocolError) -> Int64 {
        guard let revision = uri.queryParameters[Substring(name)].flatMap({ Int64($0) }), revision >= 0 else {
            throw ProtocolError(.invalidRequest, need)
        }
        return revision
    }

    /// The page cursor in `?after=`, if any (one the server did not give is `invalidRequest`).
    func pageCursor() throws(ProtocolError) -> PageCursor? {
        try uri.queryParameters["after"].map { text throws(ProtocolError) in try PageCursor(text: text) }
    }
}
