import Crypto
import Foundation
import Hummingbird
import NIOCore
import NIOFoundationCompat
import InstantProtocol
import InstantStore

/// The backend REST API in Document Engine's shape, under `/api`, authenticated with
/// `Authorization: Token token="<API_AUTH_TOKEN>"`. The default layer's annotations are at
/// `/api/documents/{id}/annotations`, a named layer's at `/api/documents/{id}/layers/{layer}/annotations`.
struct BackendRoutes {
    let server: InstantServer

    func register(on group: RouterGroup<ServerContext>) {
        let api = group.add(middleware: APITokenMiddleware(token: server.configuration.apiAuthToken))
        api.post("documents", use: upload)
        api.get("documents", use: listDocuments)
        api.get("documents/:document", use: documentInfo)
        api.get("documents/:document/layers", use: listLayers)
        api.post("documents/:document/layers", use: createLayer)
        api.delete("documents/:document/layers/:layer", use: deleteLayer)
        for prefix in ["documents/:document", "documents/:document/layers/:layer"] {
            api.get("\(prefix)/annotations", use: listAnnotations)
            api.post("\(prefix)/annotations", use: createAnnotation)
            api.get("\(prefix)/annotations/:annotation", use: getAnnotation)
            api.put("\(prefix)/annotations/:annotation", use: updateAnnotation)
            api.delete("\(prefix)/annotations/:annotation", use: deleteAnnotation)
            api.get("\(prefix)/instant_json", use: exportLayer)
            api.post("\(prefix)/instant_json", use: importLayer)
        }
    }

    // MARK: Documents

    /// `POST /api/documents`: a raw PDF body (`?document_id=&title=`), or multipart with a
    /// `file` part and optional `document_id` and `title` fields.
    @Sendable func upload(_ request: Request, context: ServerContext) async throws -> Response {
        let limit = server.configuration.maxUploadSize
        var identifier = request.uri.queryParameters["document_id"].map(String.init)
        var title = request.uri.queryParameters["title"].map(String.init)
        let contentType = request.headers[.contentType] ?? ""
        if let boundary = MultipartForm.boundary(contentType: contentType) {
            let body: ByteBuffer
            do { body = try await request.body.collect(upTo: limit) } catch is NIOTooManyBytesError {
                throw ProtocolError(.payloadLimitExceeded, "the upload is larger than \(limit) bytes")
            }
            let form = try MultipartForm(body: Data(buffer: body), boundary: boundary)
            guard let file = form["file"] else {
                throw ProtocolError(.invalidRequest, "the multipart body has no \"file\" part")
            }
            if let part = form["document_id"] { identifier = String(decoding: part.body, as: UTF8.self) }
            if let part = form["title"] { title = String(decoding: part.body, as: UTF8.self) }
            return try await store(identifier: identifier, title: title ?? file.filename, chunks: [file.body].async)
        }
        let chunks = LimitedBody(body: request.body, limit: limit)
        return try await store(identifier: identifier, title: title, chunks: chunks)
    }

    private func store<Chunks: AsyncSequence & Sendable>(identifier: String?, title: String?, chunks: Chunks)
        async throws -> Response where Chunks.Element: ContiguousBytes
    {
        let identifier = identifier ?? UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try checkIdentifier(identifier, "document_id")
        try await server.uploads.reserve(identifier)
        do {
            if try await server.database.document(identifier) != nil {
                throw ProtocolError(.alreadyExists, "a document with this document_id exists")
            }
            let stored = try await server.pdfs.ingestPDF(tenant: server.pdfTenant, document: identifier, chunks: chunks)
            guard stored.size > 0 else { throw ProtocolError(.invalidRequest, "the PDF is empty") }
            let info = try await server.database.insertDocument(
                identifier: identifier, sha256: stored.sha256.hex, size: stored.size, title: title)
            await server.uploads.release(identifier)
            return JSONResponse.make(["data": info], status: .created)
        } catch {
            await server.uploads.release(identifier)
            throw error
        }
    }

    @Sendable func listDocuments(_ request: Request, context: ServerContext) async throws -> Response {
        JSONResponse.make(["data": try await server.database.documents()])
    }

    @Sendable func documentInfo(_ request: Request, context: ServerContext) async throws -> Response {
        let identifier = try request.identifier("document", context: context)
        guard let info = try await server.database.document(identifier) else {
            throw ProtocolError(.notFound, "no document with this document_id")
        }
        return JSONResponse.make(["data": info])
    }

    // MARK: Layers

    @Sendable func listLayers(_ request: Request, context: ServerContext) async throws -> Response {
        let identifier = try request.identifier("document", context: context)
        guard let info = try await server.database.document(identifier) else {
            throw ProtocolError(.notFound, "no document with this document_id")
        }
        return JSONResponse.make(["data": info.layers ?? []])
    }

    struct NewLayer: Decodable { var name: String }

    /// `POST /api/documents/{id}/layers` `{"name": "review"}`: a copy of the default layer.
    @Sendable func createLayer(_ request: Request, context: ServerContext) async throws -> Response {
        let identifier = try request.identifier("document", context: context)
        let body = try await request.decodeJSON(NewLayer.self, limit: server.configuration.maxPayloadSize)
        try checkIdentifier(body.name, "layer name")
        guard !body.name.isEmpty else { throw ProtocolError(.alreadyExists, "the default layer \"\" always exists") }
        let layer = try await server.writes.run(document: identifier, layer: body.name) {
            try await server.database.createLayer(document: identifier, name: body.name)
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

    // MARK: Annotations

    private func target(_ request: Request, _ context: ServerContext) throws -> (document: String, layer: String) {
        let document = try request.identifier("document", context: context)
        let layer = context.parameters.get("layer") == nil ? "" : try request.identifier("layer", context: context)
        return (document, layer)
    }

    @Sendable func listAnnotations(_ request: Request, context: ServerContext) async throws -> Response {
        let (document, layer) = try target(request, context)
        let records = try await server.database.records(document: document, layer: layer).records
        return JSONResponse.make(["data": records])
    }

    @Sendable func getAnnotation(_ request: Request, context: ServerContext) async throws -> Response {
        let (document, layer) = try target(request, context)
        let id = try request.identifier("annotation", context: context)
        guard let record = try await server.database.record(document: document, layer: layer, id: id) else {
            throw ProtocolError(.notFound, "no annotation with this id on the layer")
        }
        return JSONResponse.make(["data": record])
    }

    struct AnnotationBody: Decodable {
        var id: String?
        var content: JSONValue
        var user_id: String?
    }

    /// `POST …/annotations` `{"id"?: "…", "content": {Instant JSON}, "user_id"?: "…"}`.
    @Sendable func createAnnotation(_ request: Request, context: ServerContext) async throws -> Response {
        let (document, layer) = try target(request, context)
        let body = try await request.decodeJSON(AnnotationBody.self, limit: server.configuration.maxPayloadSize)
        let id = body.id ?? UUID().uuidString.lowercased()
        try checkIdentifier(id, "annotation id")
        try InstantJSON.validateAnnotation(body.content)
        try await write(
            [ClientChange(changeId: 0, kind: .create, id: id, content: body.content)], document, layer, body.user_id)
        return JSONResponse.make(
            ["data": AnnotationRecord(id: id, content: body.content, createdBy: body.user_id, updatedBy: body.user_id)],
            status: .created)
    }

    @Sendable func updateAnnotation(_ request: Request, context: ServerContext) async throws -> Response {
        let (document, layer) = try target(request, context)
        let id = try request.identifier("annotation", context: context)
        let body = try await request.decodeJSON(AnnotationBody.self, limit: server.configuration.maxPayloadSize)
        try InstantJSON.validateAnnotation(body.content)
        try await write(
            [ClientChange(changeId: 0, kind: .update, id: id, content: body.content)], document, layer, body.user_id)
        guard let record = try await server.database.record(document: document, layer: layer, id: id) else {
            throw ProtocolError(.notFound, "no annotation with this id on the layer")
        }
        return JSONResponse.make(["data": record])
    }

    @Sendable func deleteAnnotation(_ request: Request, context: ServerContext) async throws -> Response {
        let (document, layer) = try target(request, context)
        let id = try request.identifier("annotation", context: context)
        try await write([ClientChange(changeId: 0, kind: .delete, id: id)], document, layer, nil)
        return Response(status: .noContent)
    }

    /// Applies backend changes; a single refused change becomes the response's error.
    private func write(_ changes: [ClientChange], _ document: String, _ layer: String, _ user: String?) async throws {
        let applied = try await server.writes.run(document: document, layer: layer) {
            try await server.database.applyBackend(changes, document: document, layer: layer, userID: user)
        }
        await server.changed(document: document, applied.layer, created: applied.created)
        let results = applied.results
        if changes.count == 1, let result = results.first, !result.accepted {
            let code: ErrorCode =
                switch result.reason {
                case .alreadyExists: .alreadyExists
                case .notFound: .notFound
                case .invalidAnnotation: .invalidAnnotation
                default: .invalidRequest
                }
            throw ProtocolError(code, result.message ?? "the change was refused")
        }
    }

    // MARK: Instant JSON documents

    /// `GET …/instant_json`: the layer as an Instant JSON document.
    @Sendable func exportLayer(_ request: Request, context: ServerContext) async throws -> Response {
        let (document, layer) = try target(request, context)
        let records = try await server.database.records(document: document, layer: layer).records
        let annotations = records.map { record -> JSONValue in
            guard case .object(var members) = record.content else { return record.content }
            members["id"] = .string(record.id)
            return .object(members)
        }
        return JSONResponse.make(
            JSONValue.object(["format": .string(InstantJSON.format), "annotations": .array(annotations)]))
    }

    /// `POST …/instant_json`: creates or replaces every annotation of an Instant JSON document
    /// (by its `id`; annotations without one get a new id). Nothing is written unless all are valid.
    @Sendable func importLayer(_ request: Request, context: ServerContext) async throws -> Response {
        let (document, layer) = try target(request, context)
        let body = try await request.decodeJSON(JSONValue.self, limit: server.configuration.maxPayloadSize)
        guard case .array(let annotations) = body["annotations"] ?? .array([]) else {
            throw ProtocolError(.invalidRequest, "\"annotations\" must be an array")
        }
        if let format = body["format"]?.string, format != InstantJSON.format {
            throw ProtocolError(.invalidRequest, "\"format\" must be \(InstantJSON.format)")
        }
        var changes: [ClientChange] = []
        for (index, annotation) in annotations.enumerated() {
            do {
                try InstantJSON.validateAnnotation(annotation)
            } catch {
                throw ProtocolError(.invalidAnnotation, "annotations[\(index)]: \(error.message)")
            }
            let id = annotation["id"]?.string ?? UUID().uuidString.lowercased()
            try checkIdentifier(id, "annotation id")
            guard case .object(var members) = annotation else { continue }
            members["id"] = nil
            changes.append(
                ClientChange(
                    changeId: Int64(index), kind: .create, id: id, content: .object(members)))
        }
        let applied = try await server.writes.run(document: document, layer: layer) {
            try await server.database.applyBackend(
                changes, document: document, layer: layer, userID: nil, createReplaces: true)
        }
        await server.changed(document: document, applied.layer, created: applied.created)
        return JSONResponse.make([
            "data": ["imported": applied.results.filter(\.accepted).count, "revision": Int(applied.layer.revision)]
        ])
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
