import Foundation
import InstantProtocol
import Testing
import ServerTestSupport

@Suite struct HostileInputTests {
    /// A batch of malformed and hostile requests; each gets a clear error, and the server
    /// still answers correctly afterwards.
    @Test func malformedAndHostileRequestsAreRefusedAndTheServerCarriesOn() async throws {
        try await TestServer.with(maxPayloadSize: 64 << 10) { server in
            try await server.upload("d", samplePDF(2_000))
            let token = try await server.token(document: "d")
            func sync(_ body: Data) async throws -> TestServer.Reply {
                try await server.client(.POST, "d", "sync", token: token, body: body)
            }
            let huge = Data(repeating: UInt8(ascii: " "), count: 200 << 10)
            #expect(try await sync(huge).status == 413)
            #expect(try await sync(huge).errorCode == "payloadLimitExceeded")
            #expect(try await sync(Data("{not json".utf8)).errorCode == "invalidRequest")
            #expect(
                try await sync(Data(#"{"clientId":"h-0123456789abcdef","baseRevision":"x","changes":[]}"#.utf8)).status
                    == 400)
            #expect(try await sync(Data(#"{"changes":[]}"#.utf8)).errorCode == "invalidRequest")
            let deep = String(repeating: "[", count: 30_000)  // would overflow a naive recursive parser
            let tooDeep = try await sync(
                Data(#"{"clientId":"h-0123456789abcdef","baseRevision":0,"changes":[{"content":\#(deep)"#.utf8))
            #expect(tooDeep.errorCode == "invalidRequest")
            #expect(String(decoding: tooDeep.body, as: UTF8.self).contains("deeper than 512"))
            let twice = try await sync(
                Data(#"{"clientId":"h-0123456789abcdef","baseRevision":0,"baseRevision":9,"changes":[]}"#.utf8))
            #expect(String(decoding: twice.body, as: UTF8.self).contains("appears twice"))
            let missingBBox =
                #"{"clientId":"h-0123456789abcdef","baseRevision":0,"changes":[{"changeId":1,"kind":"create","id":"a","content":{"v":2,"type":"t","pageIndex":0}}]}"#
            let verdict = try await sync(Data(missingBBox.utf8)).json(SyncResponse.self)
            #expect(verdict.results.first?.reason == .invalidAnnotation)
            #expect(verdict.results.first?.message?.contains("bbox") == true)
            let longID = String(repeating: "é", count: 600)
            let tooLong =
                #"{"clientId":"h-0123456789abcdef","baseRevision":0,"changes":[{"changeId":1,"kind":"delete","id":"\#(longID)"}]}"#
            #expect(try await sync(Data(tooLong.utf8)).errorCode == "invalidRequest")

            // Hostile identifiers: handled as opaque strings, and they round-trip byte for
            // byte (the listing names them as sent; the PDF comes back under them).
            for identifier in ["../../etc/passwd", "a/b", "nul\u{0}byte", String(repeating: "x", count: 1024), ".."] {
                let pdf = samplePDF(1_000 + identifier.utf8.count)
                #expect(try await server.upload(identifier, pdf).status == 201, "\(identifier.prefix(20))")
                let reply = try await server.api(.GET, "/documents/\(PathEncoding.encode(identifier))")
                #expect(reply.status == 200)
                #expect(try reply.json(JSONValue.self)["data"]?["document_id"]?.string == identifier)
                let reader = try await server.token(document: identifier)
                let download = try await server.client(.GET, identifier, "pdf", token: reader)
                #expect(download.status == 200 && download.body == pdf, "\(identifier.prefix(20))")
            }
            #expect(try await server.upload(String(repeating: "x", count: 1025), samplePDF(1_000)).status == 400)
            #expect(try await server.request(.GET, "/nowhere").errorCode == "notFound")
            #expect(try await server.request(.GET, "/i/v1/documents").status == 404)
            let badEscape = try await server.api(.GET, "/documents/%FF%FE")  // not UTF-8
            #expect(
                [400, 404].contains(badEscape.status) && badEscape.errorCode != nil,
                "\(badEscape.status) \(String(decoding: badEscape.body, as: UTF8.self))")
            #expect(try await server.api(.POST, "/documents/d/annotations", json: "[]").errorCode == "invalidRequest")
            #expect(
                try await server.api(.POST, "/documents/d/annotations", json: #"{"content":{"v":2}}"#).errorCode
                    == "invalidAnnotation")
            // Over the upload limit (a PDF's header first: other bytes are refused sooner).
            let big = Data("%PDF-1.7\n".utf8) + Data(count: 9 << 20)
            #expect(try await server.api(.POST, "/documents?document_id=big", body: big).status == 413)
            #expect(try await server.api(.GET, "/documents/big").status == 404)

            // Still serving.
            let fine = try await server.sync(
                "d", token: token,
                SyncRequest(
                    clientId: "hostile-0123456789abcdef", baseRevision: 0,
                    changes: [ClientChange(changeId: 1, kind: .create, id: "ok", content: annotation("ok"))]))
            #expect(fine.results.first?.accepted == true)
            #expect(try await server.client(.GET, "d", "pdf", token: token).status == 200)
        }
    }
}
