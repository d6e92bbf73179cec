import Foundation
import InstantProtocol
import InstantServer
@testable import InstantStore
import ServerTestSupport
import TestSupport
import Testing

@testable import Instant

/// A local change is judged against what the layer showed when it was made, not against
/// the cursor of the request that carries it: first come, first win (DESIGN §4). A change
/// made while a sync is in flight, or left for a later request, must lose to another
/// writer's change that the client applied meanwhile but never showed (its own pending
/// change shadowed it), although the cursor has moved past that change when it is sent.
@Suite(.serialized) struct ChangeBaseTests {
    /// Bob's edit is in the answer to A's sync; A edits the same record while that sync is in
    /// flight (the worker is held after the server applied its request, before the answer
    /// is applied). The edit was made on the version before Bob's: it loses, and the layer
    /// ends as the server has it.
    @Test func aChangeMadeWhileASyncIsInFlightLosesToTheWriterItNeverShowed() async throws {
        try await TestServer.with { server in
            let fixture = try await WorkerFixture(server: server)
            defer { fixture.removeRoot() }
            let bob = try await server.token(document: "doc", layer: "L", user: "bob")
            let created = try await server.sync(
                "doc", token: bob,
                SyncRequest(
                    clientId: "bobs-client-000001", baseRevision: 0,
                    changes: [ClientChange(changeId: 1, kind: .create, id: "shared", content: note("first"))]))
            try await fixture.expectOK("download")
            try await fixture.expectOK("add", "mine", "1")
            let bobs = try await server.sync(
                "doc", token: bob,
                SyncRequest(
                    clientId: "bobs-client-000001", epoch: created.epoch, baseRevision: created.revision,
                    changes: [ClientChange(changeId: 2, kind: .update, id: "shared", content: note("bob's"))]))
            #expect(bobs.results.map(\.accepted) == [true])

            let hold = fixture.root.path + "-hold"
            defer { try? FileManager.default.removeItem(atPath: hold + ".reached") }
            #expect(FileManager.default.createFile(atPath: hold, contents: nil))
            let child = try fixture.start("sync", failpoint: "sync.afterSend=wait:\(hold)")
            for _ in 0..<1500 where !FileManager.default.fileExists(atPath: hold + ".reached") {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(FileManager.default.fileExists(atPath: hold + ".reached"), "the sync never sent its request")
            do {
                let store = try InstantStore(root: fixture.root)
                defer { store.close() }
                let layer = try store.openLayer(tenant: TenantURL(server.base), document: "doc", layer: "L")
                defer { layer.close() }
                try layer.update(id: "shared", content: note("ana's, on the first version").jsonData())
            }
            try FileManager.default.removeItem(atPath: hold)
            let ending = try await child.exit(within: .seconds(60))
            #expect(ending.status == 0, "\(child.standardError)")
            #expect(child.standardOutput.contains("lost=1"), "\(child.standardOutput) \(child.standardError)")
            #expect(child.standardError.contains("lost shared: conflict"), "\(child.standardError)")

            let list = try await server.api(.GET, "/documents/doc/layers/L/annotations").json(AnnotationList.self)
            #expect(list.data.annotations.first { $0.id == "shared" }?.content["text"] == .string("bob's"))
            try fixture.expectLocal(holds: ["mine-0", "shared"])
            let store = try InstantStore(root: fixture.root)
            defer { store.close() }
            let layer = try store.openLayer(tenant: TenantURL(server.base), document: "doc", layer: "L")
            defer { layer.close() }
            #expect(try layer.annotation(id: "shared")?.content == note("bob's").jsonData())
        }
    }

    /// The server takes one change per request: A's edit of a record waits for a later
    /// request while the first one's answer brings Bob's edit of that record. Sent next,
    /// the edit loses (reported with Bob's version as the winner) instead of overwriting it.
    @Test func aChangeLeftForALaterRequestLosesToTheWriterItNeverShowed() async throws {
        try await ClientHarness.with(configure: { $0.maxChangesPerSync = 1 }) { h in
            let (_, logA, a) = try await h.downloadedDoc(user: "ana")
            try a.editableDocument.add(note("first", id: "shared"))
            try await a.sync().result()
            let clientB = try h.client(root: h.root.appendingPathComponent("b"))
            let b = try await h.downloaded(clientB, "doc", user: "bob")
            try b.editableDocument.update("shared", content: note("bob's"))
            try await b.sync().result()

            try a.editableDocument.add(note("new", id: "other"))
            try a.editableDocument.update("shared", content: note("ana's, on the first version"))
            try await a.sync().result()
            let lost = await logA.lostChanges
            #expect(lost.map(\.annotationID) == ["shared"])
            #expect(lost.first?.reason == .conflict)
            #expect(lost.first?.winner?["text"] == .string("bob's"))
            let onServer = try await h.serverAnnotations("doc")
            #expect(onServer.map(\.id).sorted() == ["other", "shared"])
            #expect(onServer.first { $0.id == "shared" }?.content["text"] == .string("bob's"))
            #expect(try a.editableDocument.annotation(withID: "shared")?.content["text"] == .string("bob's"))
            #expect(a.documentState == .clean)
        }
    }

    /// The layer is created again on the server, where another writer makes "a" anew after
    /// something else (revision 2 of the new history). The client's edit of its old "a" was
    /// made at revision 1 of the old history, which means nothing in the new one: after the
    /// reset it is made against the snapshot, and goes up (nothing pending is lost).
    @Test func aResetToAnotherHistoryMakesThePendingChangesAgainstTheSnapshot() async throws {
        try await ClientHarness.with { h in
            let (_, log, descriptor) = try await h.downloadedDoc(layer: "notes")
            try descriptor.editableDocument.add(note("first", id: "a"))
            try await descriptor.sync().result()
            try await h.server.createLayerAgain("notes")
            for id in ["z", "a"] {
                let input = AnnotationInput(id: id, content: note("server's \(id)"))
                let created = try await h.server.api(
                    .POST, "/documents/doc/layers/notes/annotations",
                    json: String(decoding: input.json.jsonData(), as: UTF8.self))
                #expect(created.status < 300)
            }
            try descriptor.editableDocument.update("a", content: note("mine, from before"))
            try await descriptor.sync().result()
            #expect(await log.lostChanges.isEmpty)
            let onServer = try await h.serverAnnotations("doc", layer: "notes")
            #expect(onServer.first { $0.id == "a" }?.content["text"] == .string("mine, from before"))
            #expect(try descriptor.editableDocument.annotations().map(\.id) == ["a", "z"])
            #expect(descriptor.documentState == .clean)
        }
    }

    /// A copy of an unwritten named layer (its cursor on the view, under the view's epoch)
    /// loses a change too large for the server and takes a snapshot; meanwhile another
    /// writer's first write forked the layer, under an epoch of its own, and changed a
    /// record. The snapshot is of a fork of the view, the same history: the other pending
    /// change keeps its base and loses to that writer, instead of being rebased past the
    /// writer's change and overwriting it.
    @Test func aSnapshotOfAForkOfTheViewKeepsTheBases() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let input = AnnotationInput(id: "shared", content: note("first"))
            let seeded = try await h.server.api(
                .POST, "/documents/doc/annotations", json: String(decoding: input.json.jsonData(), as: UTF8.self))
            #expect(seeded.status < 300)
            let client = try h.client()
            let log = await EventLog.recording(client)
            let descriptor = try await h.downloaded(client, "doc", layer: "notes")
            // The test server takes JSON bodies of up to 1 MiB.
            try descriptor.editableDocument.add(note(String(repeating: "x", count: 2 << 20), id: "huge"))
            try descriptor.editableDocument.update("shared", content: note("ana's, on the first"))
            let bob = try await h.server.token(document: "doc", layer: "notes", user: "bob")
            let view = try await h.server.client(.GET, "doc", "snapshot", token: bob).json(LayerSnapshot.self)
            let bobs = try await h.server.sync(
                "doc", token: bob,
                SyncRequest(
                    clientId: "bobs-client-000001", epoch: view.epoch, baseRevision: view.revision,
                    changes: [ClientChange(changeId: 1, kind: .update, id: "shared", content: note("bob's"))]))
            #expect(bobs.results.map(\.accepted) == [true] && bobs.epoch != view.epoch)
            let forked = try await h.server.client(.GET, "doc", "snapshot", token: bob).json(LayerSnapshot.self)
            #expect(forked.forkEpoch == view.epoch, "the fork names the view it continues")

            try await descriptor.sync().result()
            try await descriptor.sync().result()
            let lost = await log.lostChanges
            #expect(lost.map(\.annotationID).sorted() == ["huge", "shared"], "\(lost)")
            #expect(lost.first { $0.annotationID == "shared" }?.reason == .conflict)
            let onServer = try await h.serverAnnotations("doc", layer: "notes")
            #expect(onServer.first { $0.id == "shared" }?.content["text"] == .string("bob's"))
            #expect(try descriptor.editableDocument.annotations().first?.content["text"] == .string("bob's"))
            #expect(descriptor.documentState == .clean)
        }
    }

    /// What goes on the wire: a change's own base when it is not the cursor (nothing
    /// otherwise), and a change of a record under an earlier pending change takes the
    /// earliest base of that record's changes, by the id's bytes.
    @Test func eachChangeCarriesTheEarliestBaseOfItsRecord() throws {
        func pending(_ sequence: Int64, _ id: String, _ base: Int64?) -> PendingChange {
            PendingChange(
                sequence: sequence, annotationID: id, kind: .update, content: note(id).jsonData(), createdAt: Date(),
                baseRevision: base)
        }
        let composed = "\u{E9}"
        let decomposed = "e\u{301}"
        let sent = try SyncRound.clientChanges(
            [
                pending(1, "a", 3), pending(2, "b", 8), pending(3, "a", 8), pending(4, composed, 2),
                pending(5, decomposed, 8), pending(6, "c", nil), pending(7, "d", 12), pending(8, "a", nil),
                pending(9, "e", nil), pending(10, "e", 5),
            ], cursor: 8)
        #expect(sent.map(\.changeId) == Array(1...10))
        // "a" keeps 3 for all three (the last had none); "b" is at the cursor (not sent);
        // another spelling of é is another record; no base (a change from before layer-v4,
        // or a decided one's, handed on) is sent against the cursor; one past the cursor
        // (made on what a page brought) is sent as it is.
        #expect(sent.map(\.baseRevision) == [3, nil, 3, 2, nil, nil, 12, 3, nil, 5])
    }
}
