import Foundation
import Hummingbird
import NIOCore
import NIOFoundationCompat
import InstantProtocol
import InstantStore

/// `GET /i/v1/documents/{id}/pdf`: the PDF, with `ETag` = its SHA-256, `If-None-Match` →
/// 304, one `Range` → 206, and `Accept-Encoding: zstd` → the stored zstd frame as it is.
/// Bytes are read from the store only as fast as the client takes them.
struct PDFDownload {
    let server: InstantServer

    @Sendable func respond(_ request: Request, context: ServerContext) async throws -> Response {
        let identity = try await server.identity(request, context)
        try identity.require(.download, for: "downloading the PDF")
        guard let info = try server.database.document(identity.documentID), let hash = BlobHash(hex: info.sha256),
            let stored = try server.pdfs.pdf(tenant: server.pdfTenant, document: identity.documentID)
        else { throw ProtocolError(.notFound, "no document with this document_id") }
        let etag = "\"\(info.sha256)\""
        var headers: HTTPFields = [
            .eTag: etag, .acceptRanges: "bytes", .contentType: "application/pdf", .vary: "Accept-Encoding",
        ]
        if let match = request.headers[.ifNoneMatch], Self.matches(match, etag: etag) {
            return Response(status: .notModified, headers: headers)
        }
        if let rangeHeader = request.headers[.range] {
            guard let range = Self.range(rangeHeader, size: stored.size) else {
                headers[.contentRange] = "bytes */\(stored.size)"
                let error = ProtocolError(
                    .rangeNotSatisfiable, "the range \(rangeHeader) is outside 0..<\(stored.size)")
                var response = ErrorMiddleware.response(error)
                response.headers[.contentRange] = "bytes */\(stored.size)"
                return response
            }
            headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(stored.size)"
            headers[.contentLength] = "\(range.count)"
            let chunks = try server.pdfs.pdfChunks(hash, range: range)
            return Response(status: .partialContent, headers: headers, body: Self.body(chunks, length: range.count))
        }
        if Self.acceptsZstd(request.headers[.acceptEncoding]) {
            headers[.contentEncoding] = "zstd"
            headers[.contentLength] = "\(stored.storedSize)"
            let chunks = try server.pdfs.pdfChunks(hash, storedFrame: true)
            return Response(status: .ok, headers: headers, body: Self.body(chunks, length: Int(stored.storedSize)))
        }
        headers[.contentLength] = "\(stored.size)"
        let chunks = try server.pdfs.pdfChunks(hash)
        return Response(status: .ok, headers: headers, body: Self.body(chunks, length: Int(stored.size)))
    }

    static func body(_ chunks: PDFChunks, length: Int) -> ResponseBody {
        ResponseBody(contentLength: length) { writer in
            for try await chunk in chunks { try await writer.write(ByteBuffer(bytes: chunk)) }
            try await writer.finish(nil)
        }
    }

    /// Whether an `If-None-Match` list names `etag` (or `*`); weak tags compare by value.
    static func matches(_ header: String, etag: String) -> Bool {
        header.split(separator: ",").contains { item in
            var tag = item.trimmingCharacters(in: .whitespaces)
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            return tag == "*" || tag == etag || "\"\(tag)\"" == etag
        }
    }

    /// One byte range of `bytes=a-b`, `bytes=a-` or `bytes=-n`, clipped to the size; nil when
    /// it cannot be satisfied or is not a single range.
    static func range(_ header: String, size: Int64) -> Range<Int64>? {
        guard header.hasPrefix("bytes="), size > 0 else { return nil }
        let spec = header.dropFirst("bytes=".count)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        if first.isEmpty {
            guard let suffix = Int64(last), suffix > 0 else { return nil }
            return max(0, size - suffix)..<size
        }
        guard let start = Int64(first), start >= 0, start < size else { return nil }
        if last.isEmpty { return start..<size }
        guard let end = Int64(last), end >= start else { return nil }
        return start..<min(end + 1, size)
    }

    /// Whether `Accept-Encoding` allows zstd (listed with a q above 0, or via `*`).
    static func acceptsZstd(_ header: String?) -> Bool {
        guard let header else { return false }
        for item in header.split(separator: ",") {
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let coding = parts.first, coding == "zstd" || coding == "*" else { continue }
            let quality = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            if quality > 0 { return true }
        }
        return false
    }
}
