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
            try await uploadManyRecords(h)
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
                h.proxy.loseNextResponse(to: "POST /i/v1/documents/doc/sync", times: 2)
                #expect(await failure(of: descriptor.sync()) != nil)
                #expect(h.proxy.responsesLost == 2)
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
            try await putAsAnotherWriter(h, "x", "the server's, later")

            // The layer file is damaged, and repaired: the change is salvaged.
            try damageAndRepair(h, salvaging: 1, clientID: clientID)

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

    /// A layer file that is not salvaged carries over the history its changes were made
    /// in: the replacement has no cursor and starts from a snapshot, which (of the same
    /// epoch) keeps the changes' bases. An edit made on the version before another
    /// writer's loses to it, as it would have without the repair, instead of overwriting it.
    @Test(.timeLimit(.minutes(5)))
    func aSalvagedChangeStillLosesToAWriterItNeverShowed() async throws {
        try await ClientHarness.with { h in
            try await uploadManyRecords(h)
            let token = try await h.jwt("doc", user: "ana")
            do {
                let client = try h.client()
                let descriptor = try await h.downloaded(client, "doc", user: "ana")
                try descriptor.editableDocument.update("r5", content: note("mine, on the first version", id: "r5"))
                withExtendedLifetime(client) {}
            }
            try await putAsAnotherWriter(h, "r5", "another writer's")
            try damageAndRepair(h, salvaging: 1)

            let client = try h.client()
            let log = await EventLog.recording(client)
            let descriptor = try client.documentDescriptor(forJWT: token)
            descriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
            try await descriptor.sync().result()
            let lost = await log.lostChanges
            #expect(lost.map(\.annotationID) == ["r5"] && lost.first?.reason == .conflict)
            #expect(lost.first?.winner?["text"] == .string("another writer's"))
            let onServer = try await h.serverAnnotations("doc")
            #expect(onServer.first { $0.id == "r5" }?.content["text"] == .string("another writer's"))
            let shown = try descriptor.editableDocument.annotation(withID: "r5")
            #expect(shown?.content["text"] == .string("another writer's"))
            #expect(descriptor.documentState == .clean)
        }
    }

    /// 400 records on the server: enough for the layer file to span many pages, so that
    /// damaging the last one (a record page) leaves the pending changes readable.
    private func uploadManyRecords(_ h: ClientHarness) async throws {
        try await h.server.upload("doc", samplePDF())
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
    }

    /// The backend API replaces the record `id` (a writer the client never hears from).
    private func putAsAnotherWriter(_ h: ClientHarness, _ id: String, _ text: String) async throws {
        let changed = AnnotationInput(content: note(text, id: id)).json
        let put = try await h.server.api(
            .PUT, "/documents/doc/annotations/\(id)", json: String(decoding: changed.jsonData(), as: UTF8.self))
        #expect(put.status < 300, "\(String(decoding: put.body, as: UTF8.self))")
    }

    /// Damages the only layer file's last page, repairs the store, and checks that the
    /// pending changes were salvaged (under `clientID`, when given).
    private func damageAndRepair(
        _ h: ClientHarness, salvaging count: Int, clientID: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let store = try InstantStore(root: h.root)
        defer { store.close() }
        let layers = try FileManager.default.contentsOfDirectory(atPath: h.root.appendingPathComponent("layers").path)
            .filter { $0.hasSuffix(".sqlite") }
        try #require(layers.count == 1, sourceLocation: sourceLocation)
        try damageLastPage(h.root.appendingPathComponent("layers/\(layers[0])").path)
        let report = try store.verify(VerifyOptions(repair: true))
        #expect(report.pendingChangesSalvaged == count, "\(report.problems)", sourceLocation: sourceLocation)
        let repaired = try store.openLayer(tenant: TenantURL(h.proxy.url.absoluteString), document: "doc", layer: "")
        defer { repaired.close() }
        if let clientID { #expect(try repaired.metadata().clientID == clientID, sourceLocation: sourceLocation) }
        #expect(try repaired.metadata().epoch == nil, "the replacement has no cursor", sourceLocation: sourceLocation)
    }

    private func damageLastPage(_ path: String) throws {
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        let size = try handle.seekToEnd()
        try handle.seek(toOffset: size - 4096)
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 4096))
        try handle.close()
    }
}
