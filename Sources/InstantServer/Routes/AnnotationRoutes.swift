import Foundation
import Hummingbird
import InstantProtocol
import InstantStore
import NIOCore

/// The backend's annotation routes, for the default layer under `/api/documents/{id}/`
/// and for a named layer under `/api/documents/{id}/layers/{layer}/`. A named layer that
/// does not exist reads as the default layer, and its first write creates it.
struct AnnotationRoutes {
    let server: InstantServer

    func register(on api: RouterGroup<ServerContext>) {
        for prefix in ["documents/:document", "documents/:document/layers/:layer"] {
            api.get("\(prefix)/annotations", use: list)
            api.post("\(prefix)/annotations", use: server.bodies.counting(create))
            api.get("\(prefix)/annotations/:annotation", use: get)
            api.put("\(prefix)/annotations/:annotation", use: server.bodies.counting(update))
            api.delete("\(prefix)/annotations/:annotation", use: delete)
            api.get("\(prefix)/document.json", use: exportInstantJSON)
            api.post("\(prefix)/apply_instant_json", use: server.bodies.counting(applyInstantJSON))
        }
    }

    private func target(_ request: Request, _ context: ServerContext) throws -> (document: String, layer: String) {
        let document = try request.identifier("document", context: context)
        let layer = context.parameters.get("layer") == nil ? "" : try request.identifier("layer", context: context)
        return (document, layer)
    }

    /// `GET …/annotations`: `{"data": {"annotations": [Record], "truncated": false}}`, at
    /// most `MAX_ANNOTATIONS_LISTED` records and 16 MiB of content; with
    /// `Accept: application/x-ndjson`, every record, one JSON object per line, streamed a
    /// page at a time.
    @Sendable func list(_ request: Request, context: ServerContext) async throws -> Response {
        let (document, layer) = try target(request, context)
        if request.headers[.accept]?.contains("application/x-ndjson") == true {
            return try await stream(document, layer, as: .ndjson)
        }
        let (records, truncated) = try await server.database.records(
            document: document, layer: layer, limit: server.configuration.maxAnnotationsListed, bytes: 16 << 20)
        return JSONResponse.make(
            JSONValue.object([
                "data": .object(["annotations": .array(records.map(\.json)), "truncated": .bool(truncated)])
            ]))
    }

    /// How a streamed listing is written.
    enum StreamFormat: Sendable {
        /// One Record per line.
        case ndjson
        /// An Instant JSON document, its annotations carrying their `id`.
        case instantJSON
    }

    /// Streams every live record of the layer, a page at a time, so memory stays bounded
    /// whatever the layer's size. If the layer is deleted or created again while it
    /// streams, the body ends without its proper end (NDJSON first gets an `{"error": …}`
    /// line), so no reader takes a partial listing for a whole one.
    private func stream(_ document: String, _ layer: String, as format: StreamFormat) async throws -> Response {
        let (database, limits) = (server.database, server.configuration.pageLimits)
        // The first page is read before answering, so a missing document is a 404.
        let first = try await database.snapshot(
            document: document, layer: layer, epoch: nil, after: nil, limits: limits)
        let body = ResponseBody { writer in
            var page = first
            var written = 0
            if format == .instantJSON {
                try await writer.write(ByteBuffer(string: #"{"annotations":["#))
            }
            while true {
                var buffer = ByteBuffer()
                for record in page.records {
                    switch format {
                    case .ndjson:
                        buffer.writeBytes(record.jsonBytes())
                        buffer.writeInteger(UInt8(ascii: "\n"))
                    case .instantJSON:
                        if written > 0 { buffer.writeInteger(UInt8(ascii: ",")) }
                        buffer.writeBytes(Self.instantJSONAnnotation(record).jsonBytes())
                    }
                    written += 1
                }
                try await writer.write(buffer)
                guard let next = page.next else { break }
                do {
                    page = try await database.snapshot(
                        document: document, layer: layer, epoch: page.epoch, after: try PageCursor(text: next),
                        limits: limits)
                } catch let error as ProtocolError {
                    if format == .ndjson { try await writer.write(ByteBuffer(bytes: ErrorBody(error).jsonLine)) }
                    throw error
                }
            }
            if format == .instantJSON {
                try await writer.write(ByteBuffer(string: #"],"format":"\#(InstantJSON.format)"}"#))
            }
            try await writer.finish(nil)
        }
        let type = format == .ndjson ? "application/x-ndjson" : "application/json; charset=utf-8"
        return Response(status: .ok, headers: [.contentType: type], body: body)
    }

    /// A record as an Instant JSON annotation: its content with its `id`.
    static func instantJSONAnnotation(_ record: AnnotationRecord) -> JSONValue {
        guard case .object(var members) = record.content else { return record.content }
        members["id"] = .string(record.id)
        return .object(members)
    }

    @Sendable func get(_ request: Request, context: ServerContext) async throws -> Response {
        let (document, layer) = try target(request, context)
        let id = try request.identifier("annotation", context: context)
        guard let record = try await server.database.record(document: document, layer: layer, id: id) else {
            throw ProtocolError(.notFound, "no annotation with this id on the layer")
        }
        return JSONResponse.make(JSONValue.object(["data": record.json]))
    }

    /// `POST …/annotations`: one `{"content", "id"?, "user_id"?}` answers
    /// `201 {"data": {"annotation_id": "…"}}`; `{"annotations": [...]}` creates them all or
    /// none and answers `201 {"data": {"annotation_ids": [...]}}`.
    @Sendable func create(_ request: Request, context: ServerContext) async throws -> Response {
        let (document, layer) = try target(request, context)
        let body = try await request.decodeJSON(JSONValue.self, limit: server.configuration.maxPayloadSize)
        let bulk = body["annotations"] != nil
        let inputs = bulk ? try AnnotationInput.list(json: body) : [try AnnotationInput(json: body)]
        try checkBatch(inputs.count)
        var changes: [ClientChange] = []
        // By bytes: two spellings Swift calls equal are two annotations.
        var seen = Set<ExactString>()
        for (index, input) in inputs.enumerated() {
            // Without "id" beside the content, the content's own (as apply_instant_json takes it).
            let id = input.id ?? input.content["id"]?.string ?? UUID().uuidString.lowercased()
            try checkIdentifier(id, "annotation id")
            guard seen.insert(ExactString(id)).inserted else {
                throw ProtocolError(.invalidRequest, "annotations[\(index)]: the id \"\(id)\" appears twice")
            }
            do {
                try InstantJSON.validateAnnotation(input.content, id: id)
            } catch {
                throw ProtocolError(
                    .invalidAnnotation, bulk ? "annotations[\(index)]: \(error.message)" : error.message)
            }
            changes.append(ClientChange(changeId: Int64(index), kind: .create, id: id, content: input.content))
        }
        // One user for a bulk write: each record keeps its own user_id.
        for (index, input) in inputs.enumerated() where !input.userID.hasSameBytes(as: inputs.first?.userID) {
            throw ProtocolError(
                .invalidRequest, "annotations[\(index)]: every annotation of one request must have the same user_id")
        }
        try await write(changes, document, layer, user: inputs.first?.userID, atomic: true)
        let data: JSONValue =
            bulk
            ? .object(["annotation_ids": .array(changes.map { .string($0.id) })])
            : .object(["annotation_id": .string(changes[0].id)])
        return JSONResponse.make(JSONValue.object(["data": data]), status: .created)
    }

    /// `PUT …/annotations/{aid}` `{"content", "user_id"?}`: the record as it is now.
    @Sendable func update(_ request: Request, context: ServerContext) async throws -> Response {
        let (document, layer) = try target(request, context)
        let id = try request.identifier("annotation", context: context)
        let input = try await request.decodeJSON(AnnotationInput.self, limit: server.configuration.maxPayloadSize)
        try InstantJSON.validateAnnotation(input.content, id: id)
        try await write(
            [ClientChange(changeId: 0, kind: .update, id: id, content: input.content)], document, layer,
            user: input.userID, atomic: true)
        guard let record = try await server.database.record(document: document, layer: layer, id: id) else {
            throw ProtocolError(.notFound, "no annotation with this id on the layer")
        }
        return JSONResponse.make(JSONValue.object(["data": record.json]))
    }

    @Sendable func delete(_ request: Request, context: ServerContext) async throws -> Response {
        let (document, layer) = try target(request, context)
        let id = try request.identifier("annotation", context: context)
        try await write([ClientChange(changeId: 0, kind: .delete, id: id)], document, layer, user: nil, atomic: true)
        return Response(status: .noContent)
    }

    /// One write transaction holds at most `MAX_CHANGES_PER_SYNC` annotations, as a sync.
    private func checkBatch(_ count: Int) throws(ProtocolError) {
        let cap = server.configuration.maxChangesPerSync
        guard count <= cap else {
            throw ProtocolError(
                .payloadLimitExceeded,
                "one request writes at most \(cap) annotations (this one has \(count)); send them in parts")
        }
    }

    /// Applies backend changes on the layer's write queue and wakes its listeners.
    private func write(
        _ changes: [ClientChange], _ document: String, _ layer: String, user: String?, atomic: Bool,
        createReplaces: Bool = false
    ) async throws {
        let database = server.database
        let applied = try await server.writes.run(document: document, layer: layer) {
            try await database.applyBackend(
                changes, document: document, layer: layer, userID: user, createReplaces: createReplaces, atomic: atomic)
        }
        await server.changed(document: document, applied.layer, created: applied.created)
    }

    // MARK: Instant JSON documents

    /// `GET …/document.json`: the layer as an Instant JSON document, streamed.
    @Sendable func exportInstantJSON(_ request: Request, context: ServerContext) async throws -> Response {
        let (document, layer) = try target(request, context)
        return try await stream(document, layer, as: .instantJSON)
    }

    /// `POST …/apply_instant_json`: an Instant JSON document (as the JSON body, or as the
    /// `instant.json` or `file` part of a multipart body) whose annotations are created or
    /// replaced by `id` (one without gets a new id). All or nothing.
    @Sendable func applyInstantJSON(_ request: Request, context: ServerContext) async throws -> Response {
        let (document, layer) = try target(request, context)
        let limit = server.configuration.maxPayloadSize
        let body: JSONValue
        if let boundary = try MultipartParser.formBoundary(contentType: request.headers[.contentType] ?? "") {
            let form = MultipartStream(body: request.body, boundary: boundary, limit: limit)
            var found: JSONValue?
            while found == nil, let part = try await form.nextPart() {
                guard ["instant.json", "file"].contains(part.name) else { continue }
                let text = try await form.partValue(part.name, maximum: limit)
                try BodyBudget.current?.count(text.utf8.count)
                found = try JSONValue.parse(Array(text.utf8))
            }
            guard let found else {
                throw ProtocolError(.invalidRequest, "the multipart body has no \"instant.json\" part")
            }
            body = found
        } else {
            body = try await request.decodeJSON(JSONValue.self, limit: limit)
        }
        guard case .object = body else { throw ProtocolError(.invalidRequest, "the body must be a JSON object") }
        guard case .array(let annotations) = body["annotations"] ?? .array([]) else {
            throw ProtocolError(.invalidRequest, "\"annotations\" must be an array")
        }
        if let format = body["format"], format.string != InstantJSON.format {
            throw ProtocolError(.invalidRequest, "\"format\" must be \(InstantJSON.format)")
        }
        try checkBatch(annotations.count)
        var changes: [ClientChange] = []
        var seen = Set<ExactString>()
        for (index, annotation) in annotations.enumerated() {
            do {
                try InstantJSON.validateAnnotation(annotation)
            } catch {
                throw ProtocolError(.invalidAnnotation, "annotations[\(index)]: \(error.message)")
            }
            if let id = annotation["id"], id.string == nil {
                throw ProtocolError(.invalidAnnotation, "annotations[\(index)]: \"id\" must be a string")
            }
            let id = annotation["id"]?.string ?? UUID().uuidString.lowercased()
            try checkIdentifier(id, "annotation id")
            guard seen.insert(ExactString(id)).inserted else {
                throw ProtocolError(.invalidRequest, "annotations[\(index)]: the id \"\(id)\" appears twice")
            }
            guard case .object(var members) = annotation else { continue }
            members["id"] = nil
            changes.append(ClientChange(changeId: Int64(index), kind: .create, id: id, content: .object(members)))
        }
        try await write(changes, document, layer, user: nil, atomic: true, createReplaces: true)
        let revision = try await server.database.view(document: document, layer: layer).revision
        return JSONResponse.make(
            JSONValue.object([
                "data": .object(["imported": .integer(Int64(changes.count)), "revision": .integer(revision)])
            ]))
    }
}
