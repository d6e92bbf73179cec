import Foundation
import Instant
import InstantProtocol
import InstantServer
import NIOHTTP1
import ServerTestSupport
import Testing

/// A snapshot of more than one page: a page after the first may show a record as another
/// writer changed it after the first page was read. The record is known at that page's
/// revision, so a local edit of what it shows is made on that change, not against it.
@Suite(.timeLimit(.minutes(1))) struct SnapshotPageTests {
    static let secondPage = "GET /i/v1/documents/doc/snapshot?after="

    @Test func aRecordChangedBetweenADownloadsPagesIsEditedWithoutAConflict() async throws {
        try await ClientHarness.with(configure: { $0.pageLimits = PageLimits(records: 2) }) { h in
            try await h.server.upload("doc", samplePDF())
            try await h.createOnServer(["a", "b", "c", "d"])
            let client = try h.client()
            let log = await EventLog.recording(client)
            let token = try await h.jwt("doc")
            let descriptor = try client.documentDescriptor(forJWT: token)
            descriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
            // The second page (c, d) waits at the proxy while another writer changes d.
            h.proxy.holdNextRequest(to: Self.secondPage)
            let download = try descriptor.download(usingJWT: token)
            while h.proxy.requestsHeld == 0 { try await Task.sleep(for: .milliseconds(5)) }
            try await write(h, .PUT, "d", "the other writer's")
            h.proxy.releaseHeldRequest()
            try await download.result()
            #expect(try text(of: "d", in: descriptor) == "the other writer's")

            try descriptor.editableDocument.update("d", content: note("mine, on theirs"))
            try await descriptor.sync().result()
            let (lost, names) = (await log.lostChanges, await log.names)
            #expect(lost.isEmpty, "\(names)")
            #expect(try await h.serverAnnotations("doc").first { $0.id == "d" }?.content["text"] == "mine, on theirs")
            // Already shown by the download: not told again as a change received.
            #expect(await !log.receivedChanges.contains { $0.annotationID == "d" })
        }
    }

    /// The same for a reset's snapshot (the layer created again on the server), with the
    /// edit made before the round that confirms the snapshot has its answer.
    @Test func aRecordChangedBetweenAResetsPagesIsEditedWithoutAConflict() async throws {
        try await ClientHarness.with(configure: { $0.pageLimits = PageLimits(records: 2) }) { h in
            try await h.server.upload("doc", samplePDF())
            let client = try h.client()
            let log = await EventLog.recording(client)
            // (A named layer exists on the server once written or created.)
            #expect(try await h.server.api(.POST, "/documents/doc/layers", json: #"{"name": "notes"}"#).status < 300)
            let descriptor = try await h.downloaded(client, "doc", layer: "notes")
            try await h.server.createLayerAgain("notes")
            try await write(h, .POST, "a,b,c,d", "created", layer: "notes")

            h.proxy.holdNextRequest(to: Self.secondPage)
            let running = descriptor.sync()
            while h.proxy.requestsHeld == 0 { try await Task.sleep(for: .milliseconds(5)) }
            try await write(h, .PUT, "d", "the other writer's", layer: "notes")
            // The snapshot is applied; its confirming round waits at the proxy.
            h.proxy.holdNextRequest(to: "POST /i/v1/documents/doc/sync")
            h.proxy.releaseHeldRequest()
            while h.proxy.requestsHeld == 1 { try await Task.sleep(for: .milliseconds(5)) }
            #expect(try text(of: "d", in: descriptor) == "the other writer's")
            try descriptor.editableDocument.update("d", content: note("mine, on theirs"))
            h.proxy.releaseHeldRequest()
            try await running.result()
            if descriptor.documentState != .clean { try await descriptor.sync().result() }

            let (lost, names) = (await log.lostChanges, await log.names)
            #expect(lost.isEmpty, "\(names)")
            let onServer = try await h.serverAnnotations("doc", layer: "notes")
            #expect(onServer.first { $0.id == "d" }?.content["text"] == "mine, on theirs")
        }
    }

    /// Another writer's annotation notes through the backend API: created (`ids`, comma
    /// separated) or replaced (one id), on the default layer or `layer`.
    private func write(
        _ h: ClientHarness, _ method: HTTPMethod, _ ids: String, _ text: String, layer: String = ""
    ) async throws {
        let base = "/documents/doc" + (layer.isEmpty ? "" : "/layers/\(layer)") + "/annotations"
        let path = method == .PUT ? base + "/\(ids)" : base
        let inputs = ids.split(separator: ",").map { AnnotationInput(id: String($0), content: note(text)).json }
        let body = method == .PUT ? inputs[0] : JSONValue.object(["annotations": .array(inputs)])
        let reply = try await h.server.api(method, path, json: String(decoding: body.jsonData(), as: UTF8.self))
        #expect(reply.status < 300, "\(String(decoding: reply.body, as: UTF8.self))")
    }

    private func text(of id: String, in descriptor: InstantDocumentDescriptor) throws -> JSONValue? {
        try descriptor.editableDocument.annotation(withID: id)?.content["text"]
    }
}
