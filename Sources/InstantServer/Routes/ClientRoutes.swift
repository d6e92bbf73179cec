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
        client.post("documents/:document/sync", use: sync)
        client.get("documents/:document/listen", use: listen)
    }

    /// `GET /i/v1/version`: the protocol versions this server speaks. No token needed.
    @Sendable func version(_ request: Request, context: ServerContext) async throws -> Response {
        JSONResponse.make(["current": ProtocolVersion.current, "minimumSupported": ProtocolVersion.minimumSupported])
    }

    /// `GET …/snapshot`: every record of the token's layer and its revision.
    @Sendable func snapshot(_ request: Request, context: ServerContext) async throws -> Response {
        let identity = try await server.identity(request, context)
        try identity.require(.readDocument, for: "reading the document")
        let (_, snapshot) = try server.database.snapshot(
            document: identity.documentID, layer: identity.layer, create: true)
        return JSONResponse.make(snapshot)
    }

    /// `POST …/sync`: the client's pending changes in, verdicts and changes out.
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
        var seen = Set<Int64>()
        for change in body.changes where !seen.insert(change.changeId).inserted {
            throw ProtocolError(.invalidRequest, "changeId \(change.changeId) appears twice in one sync")
        }
        for change in body.changes { try checkIdentifier(change.id, "annotation id") }
        let (layer, response) = try server.database.sync(
            document: identity.documentID, layer: identity.layer, request: body, identity: identity)
        await server.changed(layer)
        return JSONResponse.make(response)
    }

    /// `GET …/listen?revision=N&epoch=E&timeout=S`: returns once the layer passes revision N,
    /// or after S seconds (default 30, at most the server's maximum) with `changed: false`
    /// and the layer's revision. A graceful shutdown ends waiting listeners at once, the
    /// same way. An epoch that is not the layer's, or N above its revision, gets
    /// `resetRequired`.
    @Sendable func listen(_ request: Request, context: ServerContext) async throws -> Response {
        let identity = try await server.identity(request, context)
        try identity.require(.readDocument, for: "listening")
        let query = request.uri.queryParameters
        guard let after = query["revision"].flatMap({ Int64($0) }), after >= 0 else {
            throw ProtocolError(.invalidRequest, "listen needs ?revision=N, the last revision the client has")
        }
        let requested = query["timeout"].map { Double($0) } ?? 30
        guard let requested, requested >= 0 else {
            throw ProtocolError(.invalidRequest, "timeout must be a number of seconds")
        }
        let timeout = min(requested, Double(server.configuration.maximumListenTimeout))
        let layer = try server.database.layerRef(document: identity.documentID, layer: identity.layer)
        // A cursor the layer cannot have given (a re-created layer, a future revision).
        try ServerDatabase.checkCursor(epoch: query["epoch"].map(String.init), revision: after, of: layer)
        if layer.revision > after {
            return JSONResponse.make(ListenResponse(epoch: layer.epoch, revision: layer.revision, changed: true))
        }
        let notifier = server.notifier
        let woken = await withGracefulShutdownHandler {
            await notifier.wait(layer: layer.id, after: after, timeout: .seconds(timeout))
        } onGracefulShutdown: {
            Task { await notifier.close() }
        }
        if let woken, woken != RevisionNotifier.deleted {
            return JSONResponse.make(ListenResponse(epoch: layer.epoch, revision: woken, changed: true))
        }
        // Read again without creating: a layer deleted while the listener waited (which
        // woke it) stays gone, and the listener learns to reset.
        let now: LayerRef
        do {
            now = try server.database.layerRef(document: identity.documentID, layer: identity.layer, create: false)
        } catch let error as ProtocolError where error.code == .notFound {
            throw ProtocolError(.resetRequired, "the layer was deleted while listening: take a snapshot")
        }
        try ServerDatabase.checkCursor(epoch: layer.epoch, revision: 0, of: now)
        return JSONResponse.make(
            ListenResponse(epoch: now.epoch, revision: now.revision, changed: now.revision > after))
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
