import Foundation
import Hummingbird
import InstantProtocol
import InstantStore

/// `POST /api/documents`: a raw PDF body (`?document_id=&title=`), or `multipart/form-data`
/// with a `file` part and optional `document_id` and `title` fields, in any order. Either
/// way the PDF streams into the blob store (hashed and compressed as it arrives), so
/// memory stays bounded whatever its size; `201` answers once it is durable.
struct DocumentUpload {
    let server: InstantServer

    /// The longest `title` field.
    static let maximumTitleBytes = 4096

    @Sendable func upload(_ request: Request, context: ServerContext) async throws -> Response {
        let limit = server.configuration.maxUploadSize
        var identifier = request.uri.queryParameters["document_id"].map(String.init)
        var title = request.uri.queryParameters["title"].map(String.init)
        guard let boundary = MultipartParser.boundary(contentType: request.headers[.contentType] ?? "") else {
            let id = try await reserve(identifier)
            return try await finish {
                let stored = try await ingest(id, LimitedBody(body: request.body, limit: limit))
                return try await record(id, title: title, stored)
            } releasing: {
                [id]
            }
        }
        let form = MultipartStream(body: request.body, boundary: boundary, limit: limit)
        var stored: (name: String, pdf: StoredPDF)?
        var reserved: [String] = []
        return try await finish {
            while let part = try await form.nextPart() {
                switch part.name {
                case "file":
                    guard stored == nil else {
                        throw ProtocolError(.invalidRequest, "the multipart body has two \"file\" parts")
                    }
                    // With the id known, the PDF is stored under it; otherwise under an
                    // upload name until the id arrives (a field after the file).
                    let name: String
                    if identifier != nil {
                        name = try await reserve(identifier)
                        identifier = name
                    } else {
                        name = InstantServer.uploadPrefix + UUID().uuidString
                    }
                    reserved.append(name)
                    if title == nil { title = part.filename }
                    stored = (name, try await ingest(name, form.partBody()))
                case "document_id":
                    guard stored == nil || identifier == nil else {
                        throw ProtocolError(.invalidRequest, "the multipart body has two \"document_id\" fields")
                    }
                    identifier = try await form.partValue("document_id", maximum: 1024)
                case "title":
                    title = try await form.partValue("title", maximum: Self.maximumTitleBytes)
                default:
                    continue  // other fields are ignored (their bytes are skipped, not kept)
                }
            }
            guard let stored else { throw ProtocolError(.invalidRequest, "the multipart body has no \"file\" part") }
            guard stored.name.hasPrefix(InstantServer.uploadPrefix) else {
                return try await record(stored.name, title: title, stored.pdf)
            }
            // The id came after the file: point it at the stored PDF, then drop the upload name.
            let id = try await reserve(identifier)
            reserved.append(id)
            let (pdfs, tenant) = (server.pdfs, server.pdfTenant)
            try await server.blocking {
                try pdfs.attachPDF(stored.pdf.sha256, tenant: tenant, document: id)
                try pdfs.removeDocument(tenant: tenant, document: stored.name)
            }
            return try await record(id, title: title, stored.pdf)
        } releasing: {
            reserved
        }
    }

    /// Reserves `identifier` (or a generated one) for this upload: refused when the id is
    /// too long, taken, or being uploaded or deleted by another request.
    private func reserve(_ identifier: String?) async throws -> String {
        let identifier = identifier ?? UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try checkIdentifier(identifier, "document_id")
        try await server.uploads.reserve(identifier)
        do {
            if try await server.database.document(identifier) != nil {
                throw ProtocolError(.alreadyExists, "a document with this document_id exists")
            }
        } catch {
            await server.uploads.release(identifier)
            throw error
        }
        return identifier
    }

    /// Streams `chunks` into the store as the PDF of `name`.
    private func ingest<Chunks: AsyncSequence>(_ name: String, _ chunks: Chunks) async throws -> StoredPDF
    where Chunks.Element: ContiguousBytes {
        let stored = try await server.pdfs.ingestPDF(tenant: server.pdfTenant, document: name, chunks: chunks)
        guard stored.size > 0 else { throw ProtocolError(.invalidRequest, "the PDF is empty") }
        return stored
    }

    /// The document row, made once its PDF is durable: the `201` answer.
    private func record(_ identifier: String, title: String?, _ stored: StoredPDF) async throws -> Response {
        let info = try await server.database.insertDocument(
            identifier: identifier, sha256: stored.sha256.hex, size: stored.size, title: title)
        return JSONResponse.make(["data": info], status: .created)
    }

    /// Runs `body`, then releases the reserved identifiers whatever happened. A failed
    /// upload leaves no document behind: a PDF it stored under a name the database does
    /// not know is released (one a cleanup misses here is released at the next start,
    /// for an upload name, or reported then).
    private func finish(
        _ body: () async throws -> Response, releasing reserved: () -> [String]
    ) async throws -> Response {
        do {
            let response = try await body()
            for name in reserved() { await server.uploads.release(name) }
            return response
        } catch {
            let names = reserved()
            let (pdfs, tenant) = (server.pdfs, server.pdfTenant)
            for name in names {
                let unknown = (try? await server.database.document(name)) == .some(nil)
                guard name.hasPrefix(InstantServer.uploadPrefix) || unknown else { continue }
                _ = try? await server.blocking { () throws -> Bool in
                    do {
                        try pdfs.removeDocument(tenant: tenant, document: name)
                    } catch StoreError.noSuchDocument {}
                    return true
                }
            }
            for name in names { await server.uploads.release(name) }
            throw error
        }
    }
}
