import Foundation
import InstantProtocol
import InstantStore
import ServerTestSupport
import Testing

/// Two spellings of an id that Swift calls equal (canonically equivalent Unicode) are two
/// documents, users or annotations for the server: in its tokens, its writes, its bulk
/// routes and its start.
@Suite struct SpellingTests {
    static let composed = "caf\u{E9}"
    static let decomposed = "cafe\u{301}"

    @Test func aTokenForOneSpellingIsRefusedForTheOther() async throws {
        try await TestServer.with { server in
            try await server.upload(Self.composed, samplePDF(2_000))
            try await server.upload(Self.decomposed, samplePDF(2_001))
            let token = try await server.token(document: Self.composed)
            #expect(try await server.client(.GET, Self.composed, "snapshot", token: token).status == 200)
            let refused = try await server.client(.GET, Self.decomposed, "snapshot", token: token)
            #expect(refused.status == 403 && refused.errorCode == "wrongDocument")
        }
    }

    /// A user spelled otherwise is another user: their write after a client's base is a
    /// conflict for that client, even with the same client id.
    @Test func aUserSpelledOtherwiseIsAnotherWriter() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            let first = try await server.token(document: "d", user: Self.composed)
            let second = try await server.token(document: "d", user: Self.decomposed)
            let created = try await server.sync(
                "d", token: first,
                SyncRequest(
                    clientId: "same-0123456789abcdef", baseRevision: 0,
                    changes: [ClientChange(changeId: 1, kind: .create, id: "r", content: annotation("one"))]))
            #expect(created.results.map(\.accepted) == [true])
            let late = try await server.sync(
                "d", token: second,
                SyncRequest(
                    clientId: "same-0123456789abcdef", epoch: created.epoch, baseRevision: 0,
                    changes: [ClientChange(changeId: 1, kind: .update, id: "r", content: annotation("two"))]))
            #expect(late.results.map(\.accepted) == [false])
            #expect(late.results.first?.reason == .conflict)
        }
    }

    @Test func bulkWritesTellSpellingsApart() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            let both = [Self.composed, Self.decomposed].map { #"{"id":"\#($0)","content":\#(note($0))}"# }
            let created = try await server.api(
                .POST, "/documents/d/annotations", json: #"{"annotations":[\#(both.joined(separator: ","))]}"#)
            #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
            let instantJSON = [Self.composed, Self.decomposed].map { #"\#(note($0).dropLast()),"id":"\#($0)"}"# }
            let imported = try await server.api(
                .POST, "/documents/d/layers/l/apply_instant_json",
                json:
                    #"{"format":"https://pspdfkit.com/instant-json/v1","annotations":[\#(instantJSON.joined(separator: ","))]}"#
            )
            #expect(imported.status == 200, "\(String(decoding: imported.body, as: UTF8.self))")
            let snapshot = try await server.client(
                .GET, "d", "snapshot", token: try await server.token(document: "d", layer: "l")
            ).json(LayerSnapshot.self)
            #expect(
                Set(snapshot.records.map { Array($0.id.utf8) })
                    == Set([Self.composed, Self.decomposed].map { Array($0.utf8) }))
            let users = [Self.composed, Self.decomposed].enumerated().map {
                #"{"id":"u\#($0.offset)","content":\#(note("u")),"user_id":"\#($0.element)"}"#
            }
            let mixed = try await server.api(
                .POST, "/documents/d/annotations", json: #"{"annotations":[\#(users.joined(separator: ","))]}"#)
            #expect(mixed.status == 400 && mixed.errorCode == "invalidRequest")
        }
    }

    /// At its start, the server links each of its documents to its PDF again when the PDF
    /// store lost the link: also a document whose id is another spelling of a linked one.
    @Test func theServerRelinksEachSpellingsPDF() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("instant-server-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        let pdf = samplePDF()
        try await TestServer.with(dataDirectory: data) { server in
            for document in [Self.composed, Self.decomposed] {
                let uploaded = try await server.upload(document, pdf)
                #expect(uploaded.status == 201)
            }
        }
        // The decomposed spelling's link is lost (its PDF stays: the other document uses it).
        let pdfs = try InstantStore(root: data.appendingPathComponent("pdfs"), role: .origin)
        try pdfs.removeDocument(tenant: TenantURL("http://instant-server.local"), document: Self.decomposed)
        pdfs.close()
        try await TestServer.with(dataDirectory: data) { server in
            for document in [Self.composed, Self.decomposed] {
                let token = try await server.token(document: document)
                let download = try await server.client(.GET, document, "pdf", token: token)
                #expect(download.status == 200 && download.body == pdf)
            }
        }
    }
}
