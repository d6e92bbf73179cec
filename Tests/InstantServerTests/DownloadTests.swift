import Foundation
import InstantProtocol
import InstantStore
import Testing
import ServerTestSupport

@Suite struct DownloadTests {
    /// The server's PDFs are originals: an operator's prune, GC or removal on its data
    /// directory is refused, and the upload is there.
    @Test func theServersPDFsSurviveAnOperatorsPrune() async throws {
        try await TestServer.with { server in
            let pdf = samplePDF()
            #expect(try await server.upload("kept", pdf).status == 201)
            let store = try InstantStore(root: server.dataDirectory.appendingPathComponent("pdfs"))
            #expect(store.role == .origin)
            #expect { _ = try store.prune(PruneOptions(maxSize: 0)) } throws: {
                ($0 as? StoreError)?.code == "origin_store"
            }
            #expect { _ = try store.removeUnreferenced() } throws: { ($0 as? StoreError)?.code == "origin_store" }
            #expect(try store.verify(VerifyOptions(repair: true)).isClean)
            let token = try await server.token(document: "kept")
            let download = try await server.client(.GET, "kept", "pdf", token: token)
            #expect(download.status == 200 && download.body == pdf)
        }
    }

    /// A server whose PDF store lost its catalog links its documents to their PDFs again
    /// when it starts (the rebuild knows PDFs, not documents without layers); an empty
    /// upload is a client's mistake (400), not the server's.
    @Test func theServerRelinksItsPDFsAfterACatalogRebuild() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("instant-server-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        let pdf = samplePDF()
        try await TestServer.with(dataDirectory: data) { server in
            #expect(try await server.upload("kept", pdf).status == 201)
            let empty = try await server.upload("empty", Data())
            #expect(empty.status == 400, "\(empty.status) \(empty.errorCode ?? "")")
        }
        let catalog = data.appendingPathComponent("pdfs/catalog.sqlite").path
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: catalog + suffix) }
        try await TestServer.with(dataDirectory: data) { server in
            let token = try await server.token(document: "kept")
            let download = try await server.client(.GET, "kept", "pdf", token: token)
            #expect(download.status == 200 && download.body == pdf)
        }
    }

    @Test func uploadThenDownloadWithETagRangeAndZstd() async throws {
        try await TestServer.with { server in
            let pdf = samplePDF()
            let created = try await server.upload("doc/../1", pdf)
            #expect(created.status == 201)
            let again = try await server.upload("doc/../1", pdf)
            #expect(again.status == 409 && again.errorCode == "alreadyExists")
            let token = try await server.token(document: "doc/../1")

            let full = try await server.client(.GET, "doc/../1", "pdf", token: token)
            #expect(full.status == 200 && full.body == pdf)
            let etag = try #require(full.header("ETag"))
            #expect(etag == "\"\(BlobHash.of(pdf).hex)\"")
            // A valid token for a document the server does not hold: 404; a token for
            // another document: 403.
            let absent = try await server.client(
                .GET, "nope", "pdf", token: try await server.token(document: "nope"))
            #expect(absent.status == 404 && absent.errorCode == "notFound")
            let forged = try await server.client(.GET, "nope", "pdf", token: token)
            #expect(forged.status == 403 && forged.errorCode == "wrongDocument")

            let cached = try await server.client(
                .GET, "doc/../1", "pdf", token: token, headers: [("If-None-Match", etag)])
            #expect(cached.status == 304 && cached.body.isEmpty)

            let range = try await server.client(
                .GET, "doc/../1", "pdf", token: token, headers: [("Range", "bytes=100-199")])
            #expect(range.status == 206 && range.body == pdf[100..<200])
            #expect(range.header("Content-Range") == "bytes 100-199/\(pdf.count)")
            let tail = try await server.client(.GET, "doc/../1", "pdf", token: token, headers: [("Range", "bytes=-10")])
            #expect(tail.body == pdf.suffix(10))
            let outside = try await server.client(
                .GET, "doc/../1", "pdf", token: token, headers: [("Range", "bytes=\(pdf.count)-")])
            #expect(outside.status == 416 && outside.errorCode == "rangeNotSatisfiable")

            let zstd = try await server.client(
                .GET, "doc/../1", "pdf", token: token, headers: [("Accept-Encoding", "zstd")])
            #expect(zstd.status == 200 && zstd.header("Content-Encoding") == "zstd")
            #expect(zstd.body.prefix(4) == Data([0x28, 0xB5, 0x2F, 0xFD]) && zstd.body.count < pdf.count)

            // The same bytes under another id are stored once.
            #expect(try await server.upload("copy", pdf).status == 201)
            let list = try await server.api(.GET, "/documents")
            #expect(list.status == 200)
            let documents = try list.json([String: [DocumentSummary]].self)["data"] ?? []
            #expect(Set(documents.map(\.document_id)) == ["doc/../1", "copy"])
            #expect(Set(documents.map(\.sourcePdfSha256)).count == 1)
        }
    }

    @Test func multipartUploadWithDocumentID() async throws {
        try await TestServer.with { server in
            let pdf = samplePDF(5_000)
            let boundary = "----instant-test"
            var body = Data()
            body.append(
                Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"document_id\"\r\n\r\nmp-1\r\n".utf8))
            body.append(
                Data(
                    "--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.pdf\"\r\nContent-Type: application/pdf\r\n\r\n"
                        .utf8))
            body.append(pdf)
            body.append(Data("\r\n--\(boundary)--\r\n".utf8))
            let reply = try await server.request(
                .POST, "/api/documents",
                headers: [
                    ("Authorization", "Token token=\"\(TestServer.apiToken)\""),
                    ("Content-Type", "multipart/form-data; boundary=\(boundary)"),
                ], body: body)
            #expect(reply.status == 201)
            let info = try await server.api(.GET, "/documents/mp-1")
            #expect(info.status == 200)
            let document = try #require(try info.json([String: DocumentSummary].self)["data"])
            #expect(document.size == pdf.count && document.title == "a.pdf" && document.layers == [""])
        }
    }
}

struct DocumentSummary: Decodable {
    var document_id: String
    var sourcePdfSha256: String
    var size: Int
    var title: String?
    var layers: [String]?
}
