import Foundation
import Hummingbird
import InstantProtocol
import InstantStore
import NIOCore
import NIOFoundationCompat

/// The backend REST API in Document Engine's shape, under `/api`, authenticated with
/// `Authorization: Token token="<API_AUTH_TOKEN>"`: documents and layers here, uploads in
/// ``DocumentUpload``, annotations in ``AnnotationRoutes``. Bodies are read by the same
/// strict JSON reader as the client API's.
struct BackendRoutes {
    let server: InstantServer

    func register(on group: RouterGroup<ServerContext>) {
        let api = group.add(middleware: APITokenMiddleware(token: server.configuration.apiAuthToken))
        api.post("documents", use: DocumentUpload(server: server).upload)
        api.get("documents", use: listDocuments)
        api.get("documents/:document", use: documentInfo)
        api.delete("documents/:document", use: deleteDocument)
        api.get("documents/:document/properties", use: properties)
        api.get("documents/:document/layers", use: listLayers)
        api.post("documents/:document/layers", use: server.bodies.counting(createLayer))
        api.delete("documents/:document/layers/:layer", use: deleteLayer)
        AnnotationRoutes(server: server).register(on: api)
    }

    // MARK: Documents

    @Sendable func listDocuments(_ request: Request, context: ServerContext) async throws -> Response {
        JSONResponse.make(["data": try await server.database.documents()])
    }

    @Sendable func documentInfo(_ request: Request, context: ServerContext) async throws -> Response {
        JSONResponse.make(["data": try await document(request, context)])
    }

    /// `GET /api/documents/{id}/properties`: the document's size, hash, title and layers.
    @Sendable func properties(_ request: Request, context: ServerContext) async throws -> Response {
        let info = try await document(request, context)
        return JSONResponse.make(["data": DocumentProperties(info)])
    }

    /// `DELETE /api/documents/{id}`: the document, its layers and records go, its
    /// listeners learn it at once, and its PDF leaves the store unless another document
    /// uses it. A document the database no longer knows but whose PDF the store still
    /// holds (a deletion cut short) is released the same way.
    @Sendable func deleteDocument(_ request: Request, context: ServerContext) async throws -> Response {
        let identifier = try request.identifier("document", context: context)
        // An upload's own name (its PDF while it streams in) is no document: never released here.
        try DocumentUpload.checkName(identifier)
        try await server.uploads.reserve(identifier)
        let outcome = await Result { () async throws -> Response in
            var found = true
            do {
                _ = try await server.database.deleteDocument(identifier)
                await server.listeners.post(.documentRemoved, document: identifier)
                try Failpoint.check("delete.afterRow")
            } catch let error as ProtocolError where error.code == .notFound {
                found = false
            }
            let released = try await server.releaseStoredDocument(identifier)
            guard found || released else { throw ProtocolError(.notFound, "no document with this document_id") }
            return Response(status: .noContent)
        }
        await server.uploads.release(identifier)
        return try outcome.get()
    }

    private func document(_ request: Request, _ context: ServerContext) async throws -> DocumentInfo {
        let identifier = try request.identifier("document", context: context)
        guard let info = try await server.database.document(identifier) else {
            throw ProtocolError(.notFound, "no document with this document_id")
        }
        return info
    }

    // MARK: Layers

    @Sendable func listLayers(_ request: Request, context: ServerContext) async throws -> Response {
        JSONResponse.make(["data": try await document(request, context).layers ?? []])
    }

    /// `POST /api/documents/{id}/layers` `{"name": "review", "source_layer_name"?: ""}`: a
    /// copy of the source layer (default: the default layer).
    @Sendable func createLayer(_ request: Request, context: ServerContext) async throws -> Response {
        let identifier = try request.identifier("document", context: context)
        let body = try await request.decodeJSON(LayerCreation.self, limit: server.configuration.maxPayloadSize)
        try checkIdentifier(body.name, "layer name")
        guard !body.name.isEmpty else { throw ProtocolError(.alreadyExists, "the default layer \"\" always exists") }
        let source = body.sourceLayerName ?? ""
        let layer = try await server.writes.run(document: identifier, layer: body.name) {
            try await server.database.createLayer(document: identifier, name: body.name, source: source)
        }
        await server.changed(document: identifier, layer, created: true)
        return JSONResponse.make(["data": ["name": body.name]], status: .created)
    }

    @Sendable func deleteLayer(_ request: Request, context: ServerContext) async throws -> Response {
        let identifier = try request.identifier("document", context: context)
        let layer = try request.identifier("layer", context: context)
        try await server.writes.run(document: identifier, layer: layer) {
            try await server.database.deleteLayer(document: identifier, name: layer)
        }
        await server.listeners.post(.removed(layer: layer), document: identifier)
        return Response(status: .noContent)
    }
}

/// `GET /api/documents/{id}/properties`.
struct DocumentProperties: Encodable {
    var documentId: String
    var sourcePdfSha256: String
    var byteSize: Int64
    var title: String?
    var createdAt: Date
    var layers: [String]

    init(_ info: DocumentInfo) {
        documentId = info.documentId
        sourcePdfSha256 = info.sha256
        byteSize = info.size
        title = info.title
        createdAt = info.createdAt
        layers = info.layers ?? []
    }

    enum CodingKeys: String, CodingKey {
        case documentId = "document_id"
        case sourcePdfSha256, byteSize, title
        case createdAt = "created_at"
        case layers
    }
}

/// Identifiers are opaque, but bounded: at most 1 KiB of UTF-8.
func checkIdentifier(_ identifier: String, _ what: String) throws(ProtocolError) {
    guard identifier.utf8.count <= 1024 else {
        throw ProtocolError(.invalidRequest, "the \(what) is longer than 1,024 bytes")
    }
}

/// Refuses `/api` requests without the backend's token.
struct APITokenMiddleware: RouterMiddleware {
    typealias Context = ServerContext
    let token: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let given = try TokenVerifier.token(fromAuthorization: request.headers[.authorization])
        guard given.utf8.count == token.utf8.count,
            zip(given.utf8, token.utf8).reduce(0, { $0 | ($1.0 ^ $1.1) }) == 0
        else { throw ProtocolError(.invalidToken, "the API token is wrong") }
        return try await next(request, context)
    }
}

/// A request body that refuses to go past `limit` bytes (a PDF upload streamed into the store).
struct LimitedBody: AsyncSequence, Sendable {
    typealias Element = Data
    let body: RequestBody
    let limit: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        var inner: RequestBody.AsyncIterator
        let limit: Int
        var total = 0

        mutating func next() async throws -> Data? {
            guard let buffer = try await inner.next() else { return nil }
            total += buffer.readableBytes
            if total > limit { throw ProtocolError(.payloadLimitExceeded, "the upload is larger than \(limit) bytes") }
            return Data(buffer: buffer)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(inner: body.makeAsyncIterator(), limit: limit) }
}

extension Array where Element: Sendable {
    /// The elements as an async sequence.
    var async: AsyncStream<Element> {
        AsyncStream { continuation in
            for element in self { continuation.yield(element) }
            continuation.finish()
        }
    }
}
