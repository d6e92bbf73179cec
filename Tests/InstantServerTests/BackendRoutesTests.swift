import Foundation
import InstantProtocol
import Testing
import ServerTestSupport

@testable import InstantServer

/// The backend API in Document Engine's shape: documents, properties, layers, the
/// annotation envelope and NDJSON, bulk writes, Instant JSON, streamed multipart.
@Suite struct BackendRoutesTests {
    @Test func deletingADocumentReleasesItsPDFAndWakesItsListeners() async throws {
        try await TestServer.with(listenTimeout: 30) { server in
            let shared = samplePDF(40_000, seed: 7)
            try await server.upload("d", shared)
            try await server.upload("e", shared)
            try await server.upload("f", samplePDF(40_000, seed: 8))
            #expect(storedPDFs(server.dataDirectory) == 2, "the shared PDF is stored once")
            let token = try await server.token(document: "d")
            async let listening = server.client(.GET, "d", "listen?revision=0&timeout=30", token: token)
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await server.api(.DELETE, "/documents/d").status == 204)
            let deleted = ContinuousClock.now
            let answer = try await listening
            #expect(answer.status == 404 && answer.errorCode == "notFound", "the listener learns the document is gone")
            #expect(ContinuousClock.now - deleted < .seconds(10))
            #expect(try await server.api(.GET, "/documents/d").status == 404)
            #expect(try await server.api(.DELETE, "/documents/d").status == 404)
            #expect(storedPDFs(server.dataDirectory) == 2, "e still uses the shared PDF")
            let download = try await server.client(.GET, "e", "pdf", token: try await server.token(document: "e"))
            #expect(download.status == 200 && download.body == shared)
            #expect(try await server.api(.DELETE, "/documents/f").status == 204)
            #expect(storedPDFs(server.dataDirectory) == 1, "f's PDF left the store")
            // Uploading a deleted id again starts a new document.
            #expect(try await server.upload("d", samplePDF(1_000, seed: 9)).status == 201)
        }
    }

    @Test func propertiesAndLayersLikeDocumentEngine() async throws {
        try await TestServer.with { server in
            let pdf = samplePDF(3_000)
            try await server.upload("d", pdf)
            let properties = try await server.api(.GET, "/documents/d/properties").json(JSONValue.self)["data"]
            #expect(properties?["byteSize"] == .integer(Int64(pdf.count)))
            #expect(properties?["document_id"]?.string == "d" && properties?["sourcePdfSha256"]?.string?.count == 64)
            #expect(try await server.api(.GET, "/documents/nope/properties").status == 404)
            _ = try await server.api(
                .POST, "/documents/d/layers/a/annotations", json: #"{"id":"x","content":\#(note("x"))}"#)
            let copied = try await server.api(
                .POST, "/documents/d/layers", json: #"{"name":"b","source_layer_name":"a"}"#)
            #expect(copied.status == 201)
            let records = try await server.api(.GET, "/documents/d/layers/b/annotations").json(AnnotationList.self)
            #expect(records.data.annotations.map(\.id) == ["x"], "a copy of layer a, not of the default layer")
            let missing = try await server.api(
                .POST, "/documents/d/layers", json: #"{"name":"c","source_layer_name":"zz"}"#)
            #expect(missing.status == 404)
        }
    }

    /// Content nested past what every format can carry is refused on every backend write:
    /// stored, it would make the layer's snapshot unreadable to every client.
    @Test func contentTooDeepForASnapshotIsRefusedOnEveryBackendWrite() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            let depth = InstantJSON.maximumAnnotationDepth + 1
            let deep =
                #"{"v":1,"type":"t","pageIndex":0,"bbox":[0,0,1,1],"x":"#
                + String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1) + "}"
            let one = try await server.api(.POST, "/documents/d/annotations", json: #"{"id":"a","content":\#(deep)}"#)
            #expect(one.status == 400 && one.errorCode == "invalidAnnotation", "\(one.status)")
            let bulk = try await server.api(
                .POST, "/documents/d/annotations", json: #"{"annotations":[{"id":"b","content":\#(deep)}]}"#)
            #expect(bulk.status == 400 && bulk.errorCode == "invalidAnnotation", "\(bulk.status)")
            _ = try await server.api(.POST, "/documents/d/annotations", json: #"{"id":"c","content":\#(note("c"))}"#)
            let replaced = try await server.api(.PUT, "/documents/d/annotations/c", json: #"{"content":\#(deep)}"#)
            #expect(replaced.status == 400 && replaced.errorCode == "invalidAnnotation", "\(replaced.status)")
            let token = try await server.token(document: "d")
            let snapshot = try await server.client(.GET, "d", "snapshot", token: token).json(LayerSnapshot.self)
            #expect(snapshot.records.map(\.id) == ["c"])

            // The deepest content allowed is read back from the deepest listing that carries it.
            let deepest =
                #"{"v":1,"type":"t","pageIndex":0,"bbox":[0,0,1,1],"x":"#
                + String(repeating: "[", count: depth - 2) + String(repeating: "]", count: depth - 2) + "}"
            let kept = try await server.api(
                .PUT, "/documents/d/annotations/c", json: #"{"content":\#(deepest)}"#)
            #expect(kept.status == 200, "\(kept.status)")
            let listed = try await server.api(.GET, "/documents/d/annotations")
            #expect(try JSONValue.parse(Array(listed.body))["data"]?["annotations"] != nil)
        }
    }

    @Test func theAnnotationListIsAnEnvelopeAndNDJSONStreamsEveryRecord() async throws {
        try await TestServer.with(configure: {
            $0.maxAnnotationsListed = 3
            $0.pageLimits.records = 2
        }) { server in
            try await server.upload("d", samplePDF(2_000))
            let bulk = (0..<5).map { #"{"id":"a\#($0)","content":\#(note(String($0))),"user_id":"svc"}"# }
            let created = try await server.api(
                .POST, "/documents/d/annotations", json: #"{"annotations":[\#(bulk.joined(separator: ","))]}"#)
            #expect(created.status == 201)
            #expect(
                try created.json(JSONValue.self)["data"]?["annotation_ids"]
                    == .array((0..<5).map { .string("a\($0)") }))
            let listed = try await server.api(.GET, "/documents/d/annotations").json(AnnotationList.self)
            #expect(listed.data.annotations.count == 3 && listed.data.truncated)
            #expect(listed.data.annotations.first?.createdBy == "svc")

            let streamed = try await server.request(
                .GET, "/api/documents/d/annotations",
                headers: [
                    ("Authorization", "Token token=\"\(TestServer.apiToken)\""), ("Accept", "application/x-ndjson"),
                ])
            #expect(streamed.header("Content-Type") == "application/x-ndjson")
            let lines = String(decoding: streamed.body, as: UTF8.self).split(separator: "\n")
            let records = try lines.map { try AnnotationRecord(jsonData: Array($0.utf8)) }
            #expect(records.map(\.id) == (0..<5).map { "a\($0)" }, "every record, once, across pages")
        }
    }

    @Test func aBulkCreateWritesAllOrNothing() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            let invalid = try await server.api(
                .POST, "/documents/d/annotations",
                json: #"{"annotations":[{"id":"a","content":\#(note("a"))},{"id":"b","content":{"v":2}}]}"#)
            #expect(invalid.status == 400 && invalid.errorCode == "invalidAnnotation")
            #expect(String(decoding: invalid.body, as: UTF8.self).contains("annotations[1]"))
            #expect(try await server.api(.GET, "/documents/d/annotations/a").status == 404)
            #expect(
                try await server.api(.POST, "/documents/d/annotations", json: #"{"id":"b","content":\#(note("b"))}"#)
                    .json(JSONValue.self)["data"]?["annotation_id"] == .string("b"))
            let single = try await server.api(
                .POST, "/documents/d/annotations", json: #"{"id":"b","content":\#(note("other"))}"#)
            #expect(single.status == 409 && single.errorCode == "alreadyExists", "a single create never overwrites")
            #expect(
                try await server.api(.GET, "/documents/d/annotations/b").json(JSONValue.self)["data"]?["content"]?[
                    "text"] == .string("b"))
            let clash = try await server.api(
                .POST, "/documents/d/annotations",
                json: #"{"annotations":[{"id":"a","content":\#(note("a"))},{"id":"b","content":\#(note("b"))}]}"#)
            #expect(clash.status == 409 && clash.errorCode == "alreadyExists")
            #expect(try await server.api(.GET, "/documents/d/annotations/a").status == 404, "nothing was written")
        }
    }

    @Test func backendBodiesAreReadStrictly() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            for body in [
                #"{"id":"a","id":"b","content":\#(note("a"))}"#, #"{"id":"a","content":\#(note("a")),}"#,
                #"{"id":"a","content":\#(note("a"))} trailing"#, #"{"id":7,"content":\#(note("a"))}"#,
            ] {
                let reply = try await server.api(.POST, "/documents/d/annotations", json: body)
                #expect(reply.status == 400 && reply.errorCode == "invalidRequest", "\(body)")
            }
            let layer = try await server.api(.POST, "/documents/d/layers", json: #"{"name":5}"#)
            #expect(layer.status == 400 && String(decoding: layer.body, as: UTF8.self).contains("name"))
            #expect(
                try await server.api(.GET, "/documents/d/annotations").json(AnnotationList.self).data.annotations
                    .isEmpty)
        }
    }

    @Test func multipartUploadsStreamWithTheirFieldsInAnyOrder() async throws {
        try await TestServer.with { server in
            let pdf = samplePDF(300_000, seed: 3)
            let fileFirst = form([
                ("file", "scan.pdf", pdf), ("title", nil, Data("Scan".utf8)),
                ("document_id", nil, Data("late-id".utf8)),
            ])
            let reply = try await upload(server, fileFirst)
            #expect(reply.status == 201, "\(String(decoding: reply.body, as: UTF8.self))")
            let info = try await server.api(.GET, "/documents/late-id").json([String: DocumentSummary].self)["data"]
            #expect(info?.size == pdf.count && info?.title == "Scan")
            let download = try await server.client(
                .GET, "late-id", "pdf", token: try await server.token(document: "late-id"))
            #expect(download.body == pdf)

            // Broken bodies store nothing and leave no document behind.
            var truncated = form([
                ("file", "a.pdf", samplePDF(50_000, seed: 4)), ("document_id", nil, Data("cut".utf8)),
            ])
            truncated.removeLast(10)
            let twoFiles = form([("file", "a.pdf", pdf), ("file", "b.pdf", pdf)])
            let noFile = form([("document_id", nil, Data("x".utf8))])
            for body in [truncated, twoFiles, noFile] {
                #expect(try await upload(server, body).status == 400)
            }
            // multipart/form-data without a usable boundary is refused, not stored as a PDF.
            for type in ["multipart/form-data", "multipart/form-data; boundary=\(String(repeating: "b", count: 71))"] {
                let reply = try await server.request(
                    .POST, "/api/documents?document_id=mp",
                    headers: [("Authorization", "Token token=\"\(TestServer.apiToken)\""), ("Content-Type", type)],
                    body: fileFirst)
                #expect(reply.status == 400, "\(type)")
            }
            // The upload names are the server's own: neither uploaded to nor deleted.
            #expect(try await server.upload("\u{0}upload/x", pdf).status == 400)
            #expect(try await server.api(.DELETE, "/documents/%00upload%2Fx").status == 400)
            // A title longer than 4,096 bytes is refused before the PDF is read; a file's
            // name taken as the title is cut to that, at a character.
            let longTitle = try await server.request(
                .POST, "/api/documents?document_id=long&title=" + String(repeating: "t", count: 4097),
                headers: [
                    ("Authorization", "Token token=\"\(TestServer.apiToken)\""), ("Content-Type", "application/pdf"),
                ],
                body: pdf)
            #expect(longTitle.status == 400 && longTitle.errorCode == "invalidRequest")
            #expect(
                DocumentUpload.cut(String(repeating: "é", count: 3000), toBytes: 4096)
                    == String(repeating: "é", count: 2048))
            #expect(DocumentUpload.cut("short", toBytes: 4096) == "short")
            // One character longer than the limit (a letter and 3,000 combining accents):
            // nothing of it fits (the upload then has no title).
            #expect(DocumentUpload.cut("e" + String(repeating: "\u{301}", count: 3000), toBytes: 4096).isEmpty)
            let documents = try await server.api(.GET, "/documents").json([String: [DocumentSummary]].self)["data"]
            #expect(documents?.map(\.document_id) == ["late-id"])
            #expect(storedPDFs(server.dataDirectory) == 1)
        }
    }

    /// Bytes without a PDF header in their first 1024 (another kind of file, short or
    /// long, raw or multipart) are refused with a message that says so, and nothing is
    /// stored; a header after some junk (which readers accept) is a PDF.
    @Test func anUploadThatIsNotAPDFIsRefusedAndStoresNothing() async throws {
        try await TestServer.with { server in
            let html = Data("<html><body>404 Not Found</body></html>".utf8)
            var long = Data(repeating: 0x50, count: 300_000)
            long.replaceSubrange(1020..<1025, with: Data("%PDF-".utf8))  // starts at byte 1020: ends past 1024
            for body in [html, long] {
                let raw = try await server.upload("wrong", body)
                #expect(raw.status == 400 && raw.errorCode == "invalidRequest")
                #expect(String(decoding: raw.body, as: UTF8.self).contains("not a PDF"))
                #expect(try await upload(server, form([("file", "wrong.pdf", body)])).status == 400)
            }
            #expect(try await server.api(.GET, "/documents/wrong").status == 404)
            #expect(storedPDFs(server.dataDirectory) == 0)
            var late = Data("junk before the header\n".utf8) + samplePDF(2_000)
            late.append(contentsOf: [0xFF, 0x00])
            #expect(try await server.upload("late", late).status == 201)
            #expect(storedPDFs(server.dataDirectory) == 1)
        }
    }

    @Test func applyInstantJSONTakesAMultipartPart() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            let document =
                #"{"format":"https://pspdfkit.com/instant-json/v1","annotations":[\#(note("n").dropLast()),"id":"n"}]}"#
            let reply = try await server.request(
                .POST, "/api/documents/d/layers/l/apply_instant_json",
                headers: [
                    ("Authorization", "Token token=\"\(TestServer.apiToken)\""),
                    ("Content-Type", "multipart/form-data; boundary=\(Self.boundary)"),
                ], body: form([("instant.json", "instant.json", Data(document.utf8))]))
            #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
            #expect(try await server.api(.GET, "/documents/d/layers/l/annotations/n").status == 200)
            #expect(try await server.api(.GET, "/documents/d/annotations/n").status == 404)
        }
    }

    static let boundary = "----instant-boundary-7d1"

    private func form(_ parts: [(name: String, filename: String?, body: Data)]) -> Data {
        var data = Data("preamble to ignore\r\n".utf8)
        for part in parts {
            var disposition = "form-data; name=\"\(part.name)\""
            if let filename = part.filename { disposition += "; filename=\"\(filename)\"" }
            data.append(Data("--\(Self.boundary)\r\nContent-Disposition: \(disposition)\r\n\r\n".utf8))
            data.append(part.body)
            data.append(Data("\r\n".utf8))
        }
        data.append(Data("--\(Self.boundary)--\r\n".utf8))
        return data
    }

    private func upload(_ server: TestServer, _ body: Data) async throws -> TestServer.Reply {
        try await server.request(
            .POST, "/api/documents",
            headers: [
                ("Authorization", "Token token=\"\(TestServer.apiToken)\""),
                ("Content-Type", "multipart/form-data; boundary=\(Self.boundary)"),
            ], body: body)
    }
}
