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
        // Both databases in one hop off the cooperative pool.
        let (database, pdfs, tenant, document) = (server.database, server.pdfs, server.pdfTenant, identity.documentID)
        let found = try await server.blocking { () throws -> (sha256: String, stored: StoredPDF)? in
            guard let sha256 = try database.pdfSHA256(ofDocument: document),
                let stored = try pdfs.pdf(tenant: tenant, document: document)
            else { return nil }
            return (sha256, stored)
        }
        guard let (sha256, stored) = found, let hash = BlobHash(hex: sha256) else {
            throw ProtocolError(.notFound, "no document with this document_id")
        }
        let etag = "\"\(sha256)\""
        var headers: HTTPFields = [
            .eTag: etag, .acceptRanges: "bytes", .contentType: "application/pdf", .vary: "Accept-Encoding",
        ]
        if let match = request.headers[.ifNoneMatch], HeaderParsing.matches(match, etag: etag) {
            return Response(status: .notModified, headers: headers)
        }
        if let rangeHeader = request.headers[.range] {
            switch ByteRange.parse(rangeHeader, size: stored.size) {
            case .ignored: break
            case .unsatisfiable:
                let error = ProtocolError(
                    .rangeNotSatisfiable, "no part of the range is inside the \(stored.size) bytes of the PDF")
                var response = ErrorMiddleware.response(error)
                response.headers[.contentRange] = "bytes */\(stored.size)"
                return response
            case .range(let range):
                return try partial(range, of: hash, stored, headers, context: context)
            }
        }
        if HeaderParsing.acceptsZstd(request.headers[.acceptEncoding]) {
            headers[.contentEncoding] = "zstd"
            headers[.contentLength] = "\(stored.storedSize)"
            let chunks = try server.pdfs.pdfChunks(hash, storedFrame: true)
            return Response(
                status: .ok, headers: headers, body: Self.body(chunks, length: Int(stored.storedSize), context: context)
            )
        }
        headers[.contentLength] = "\(stored.size)"
        let chunks = try server.pdfs.pdfChunks(hash)
        return Response(
            status: .ok, headers: headers, body: Self.body(chunks, length: Int(stored.size), context: context))
    }

    /// Each chunk is read from the store straight into the buffer that goes out.
    static func body(_ chunks: PDFChunks, length: Int, context: ServerContext) -> ResponseBody {
        let channel = context.channel
        return ResponseBody(contentLength: length) { writer in
            var iterator = chunks.makeAsyncIterator()
            // A range far into the PDF: what comes before it is decompressed off the
            // cooperative pool (one request must not hold a thread every other one needs),
            // and not for a peer that hung up.
            await iterator.skipToRange { !channel.isActive }
            while true {
                var buffer = ByteBufferAllocator().buffer(capacity: PDFChunks.chunkSize)
                let count = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: PDFChunks.chunkSize) {
                    (raw) throws(StoreError) in try iterator.next(into: raw) ?? 0
                }
                if count == 0 { break }
                try await writer.write(buffer)
            }
            try await writer.finish(nil)
        }
    }

    /// 206 with one range of the PDF's bytes.
    private func partial(
        _ range: Range<Int64>, of hash: BlobHash, _ stored: StoredPDF, _ headers: HTTPFields, context: ServerContext
    ) throws -> Response {
        var headers = headers
        headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(stored.size)"
        headers[.contentLength] = "\(range.count)"
        let chunks = try server.pdfs.pdfChunks(hash, range: range)
        return Response(
            status: .partialContent, headers: headers,
            body: Self.body(chunks, length: Int(range.count), context: context))
    }
}
