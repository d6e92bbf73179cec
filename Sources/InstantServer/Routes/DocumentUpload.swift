import Foundation
import Hummingbird
import InstantProtocol
import InstantStore

/// `POST /api/documents`: a raw PDF body (`?document_id=&title=`), or `multipart/form-data`
/// with a `file` part and optional `document_id` and `title` fields, in any order. Either
/// way the PDF streams into the blob store (hashed and compressed as it arrives), so
/// memory stays bounded whatever its size; `201` answers once it is durable.
///
/// The PDF is stored under an upload name first, so a kill at any step leaves nothing a
/// restart cannot settle: before the document row commits, the upload name is swept at
/// start; after, the start links the document to its PDF again by hash.
struct DocumentUpload {
    let server: InstantServer

    /// The longest `title` field.
    static let maximumTitleBytes = 4096

    @Sendable func upload(_ request: Request, context: ServerContext) async throws -> Response {
        let limit = server.configuration.maxUploadSize
        var identifier = request.uri.queryParameters["document_id"].map(String.init)
        var title = request.uri.queryParameters["title"].map(String.init)
        // Refused before a byte of the PDF is read, as the multipart fields are (a
        // document_id in the query is otherwise checked only once a multipart body is in).
        if let title, title.utf8.count > Self.maximumTitleBytes {
            throw ProtocolError(.invalidRequest, "the title is longer than \(Self.maximumTitleBytes) bytes")
        }
        if let identifier { try Self.checkName(identifier) }
        let upload = InstantServer.uploadPrefix + UUID().uuidString
        var reserved: String?
        let outcome = await Result { () async throws -> Response in
            let stored: StoredPDF
            switch try MultipartParser.formBoundary(contentType: request.headers[.contentType] ?? "") {
            case nil:
                reserved = try await reserve(identifier)
                identifier = reserved
                stored = try await ingest(upload, LimitedBody(body: request.body, limit: limit))
            case let boundary?:
                let form = MultipartStream(body: request.body, boundary: boundary, limit: limit)
                var file: StoredPDF?
                while let part = try await form.nextPart() {
                    switch part.name {
                    case "file":
                        guard file == nil else {
                            throw ProtocolError(.invalidRequest, "the multipart body has two \"file\" parts")
                        }
                        // A file's name as the title, cut to the longest title (at a character).
                        if title == nil {
                            title = part.filename.map { Self.cut($0, toBytes: Self.maximumTitleBytes) }
                            // (A first character longer than that leaves no title.)
                            if title?.isEmpty == true { title = nil }
                        }
                        file = try await ingest(upload, form.partBody())
                    case "document_id":
                        identifier = try await form.partValue("document_id", maximum: 1024)
                    case "title":
                        title = try await form.partValue("title", maximum: Self.maximumTitleBytes)
                    default:
                        continue  // other fields are ignored (their bytes are skipped, not kept)
                    }
                }
                guard let file else {
                    throw ProtocolError(.invalidRequest, "the multipart body has no \"file\" part")
                }
                reserved = try await reserve(identifier)
                identifier = reserved
                stored = file
            }
            guard let id = reserved else { throw ProtocolError(.internal, "an upload lost its document_id") }
            try Failpoint.check("upload.afterIngest")
            let info = try await server.database.insertDocument(
                identifier: id, sha256: stored.sha256.hex, size: stored.size, title: title)
            try Failpoint.check("upload.afterInsert")
            try await link(id, to: stored, from: upload)
            return JSONResponse.make(["data": info], status: .created)
        }
        // A failed cleanup leaves the upload name, swept at the next start.
        if case .failure = outcome { _ = try? await server.releaseStoredDocument(upload) }
        if let reserved { await server.uploads.release(reserved) }
        return try outcome.get()
    }

    /// Throws unless `identifier` may name a document: not too long or otherwise refused,
    /// and not one of the server's upload names.
    static func checkName(_ identifier: String) throws {
        try checkIdentifier(identifier, "document_id")
        guard !identifier.hasPrefix(InstantServer.uploadPrefix) else {
            throw ProtocolError(.invalidRequest, "a document_id must not start with NUL followed by \"upload/\"")
        }
    }

    /// `text`, or its longest start of at most `bytes` UTF-8 bytes that ends at a character.
    static func cut(_ text: String, toBytes bytes: Int) -> String {
        guard text.utf8.count > bytes else { return text }
        var end = text.startIndex
        var used = 0
        for character in text {
            let size = character.utf8.count
            if used + size > bytes { break }
            used += size
            end = text.index(after: end)
        }
        return String(text[..<end])
    }

    /// Reserves `identifier` (or a generated one) for this upload: refused when the id is
    /// too long or reserved, taken, or being uploaded or deleted by another request.
    private func reserve(_ identifier: String?) async throws -> String {
        let identifier = identifier ?? UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try Self.checkName(identifier)
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

    /// Streams `chunks` into the store as the PDF of the upload name `name`.
    private func ingest<Chunks: AsyncSequence>(_ name: String, _ chunks: Chunks) async throws -> StoredPDF
    where Chunks.Element: ContiguousBytes {
        let stored = try await server.pdfs.ingestPDF(
            tenant: server.pdfTenant, document: name, chunks: PDFSignatureCheck(chunks))
        guard stored.size > 0 else { throw ProtocolError(.invalidRequest, "the PDF is empty") }
        return stored
    }

    /// Points the store's document `id` at the PDF and drops the upload name. On failure
    /// the document row goes again, so no document answers without its PDF.
    private func link(_ id: String, to stored: StoredPDF, from upload: String) async throws {
        let (pdfs, tenant) = (server.pdfs, server.pdfTenant)
        do {
            try await server.blocking {
                guard try pdfs.attachPDF(stored.sha256, tenant: tenant, document: id) else {
                    throw ProtocolError(.internal, "the uploaded PDF vanished from the store")
                }
                try Failpoint.check("upload.afterAttach")
                try pdfs.removeDocument(tenant: tenant, document: upload)
            }
        } catch {
            _ = try? await server.database.deleteDocument(id)
            throw error
        }
    }
}
