import Foundation
import Instant
import InstantProtocol
import InstantStore
import ServerTestSupport
import Testing

/// A layer repaired by `verify --repair` while a sent change's answer was lost: the change
/// is salvaged with its number and the client id, sent again from a snapshot (the file has
/// no cursor), answered `replayed`, and the record taken from the server, not from the
/// change (another writer changed it since).
@Suite struct RepairedLayerSyncTests {
    /// (Its retries wait an hour: a sync stuck behind one fails the test in minutes.)
    @Test(.timeLimit(.minutes(5)))
    func aSalvagedChangeWhoseAnswerWasLostIsAppliedOnceAndTheServersRecordWins() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            // Enough records for the layer file to span many pages: the damage below hits
            // the last one, a record page, and leaves the pending change readable.
            for part in 0..<4 {
                let inputs = (0..<100).map { number in
                    AnnotationInput(
                        id: "r\(part * 100 + number)",
                        content: note(String(repeating: "x", count: 400), id: "r\(part * 100 + number)")
                    ).json
                }
                let body = JSONValue.object(["annotations": .array(inputs)])
                let reply = try await h.server.api(
                    .POST, "/documents/doc/annotations", json: String(decoding: body.jsonData(), as: UTF8.self))
                #expect(reply.status < 300, "\(String(decoding: reply.body, as: UTF8.self))")
            }
            let token = try await h.jwt("doc", user: "ana")
            let clientID: String?
            do {
                let client = try h.client()
                // No retry may send the change again before the damage below: it would be
                // answered and gone, with nothing left to salvage.
                client.retryPolicy = RetryPolicy(initialDelay: .seconds(3600), maximumDelay: .seconds(3600))
                let descriptor = try await h.downloaded(client, "doc", user: "ana")
                try descriptor.editableDocument.add(note("mine, first", id: "x"))
                // The server applies the change; its answer never arrives.
                h.proxy.loseNextResponse(to: "POST /i/v1/documents/doc/sync")
                #expect(await failure(of: descriptor.sync()) != nil)
                #expect(h.proxy.responsesLost == 1)
                let store = try InstantStore(root: h.root)
                let layer = try store.openLayer(
                    tenant: TenantURL(h.proxy.url.absoluteString), document: "doc", layer: "")
                clientID = try layer.metadata().clientID
                try #require(try layer.pendingChangeCount() == 1)
                layer.close()
                store.close()
                withExtendedLifetime(client) {}
            }
            // Another writer changes the record since.
            let changed = AnnotationInput(content: note("the server's, later", id: "x")).json
            let put = try await h.server.api(
                .PUT, "/documents/doc/annotations/x", json: String(decoding: changed.jsonData(), as: UTF8.self))
            #expect(put.status < 300, "\(String(decoding: put.body, as: UTF8.self))")

            // The layer file is damaged, and repaired: the change is salvaged.
            let store = try InstantStore(root: h.root)
            let tenant = try TenantURL(h.proxy.url.absoluteString)
            let layers = try FileManager.default.contentsOfDirectory(
                atPath: h.root.appendingPathComponent("layers").path
            )
            .filter { $0.hasSuffix(".sqlite") }
            try #require(layers.count == 1)
            try damageLastPage(h.root.appendingPathComponent("layers/\(layers[0])").path)
            let report = try store.verify(VerifyOptions(repair: true))
            #expect(report.pendingChangesSalvaged == 1, "\(report.problems)")
            let repaired = try store.openLayer(tenant: tenant, document: "doc", layer: "")
            #expect(try repaired.metadata().clientID == clientID)
            repaired.close()
            store.close()

            let client = try h.client()
            let log = await EventLog.recording(client)
            let descriptor = try client.documentDescriptor(forJWT: token)
            descriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
            try await descriptor.sync().result()
            // Applied once (no second create refused as existing), and the layer shows the
            // server's record, not the change it sent again.
            #expect(await log.lostChanges.isEmpty)
            #expect(descriptor.documentState == .clean)
            let shown = try descriptor.editableDocument.annotation(withID: "x")
            #expect(shown?.content["text"] == .string("the server's, later"))
            let onServer = try await h.serverAnnotations("doc")
            #expect(onServer.count == 401)
            #expect(onServer.first { $0.id == "x" }?.content["text"] == .string("the server's, later"))
        }
    }

    private func damageLastPage(_ path: String) throws {
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        let size = try handle.seekToEnd()
        try handle.seek(toOffset: size - 4096)
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 4096))
        try handle.close()
    }
}
