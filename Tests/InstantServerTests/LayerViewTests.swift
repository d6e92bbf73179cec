import Foundation
import InstantProtocol
import Testing
import ServerTestSupport

/// A named layer that was never written reads as the default layer, and only a write
/// creates it; a cursor on its view stays valid across that creation.
@Suite struct LayerViewTests {
    @Test func readsNeverCreateALayerAndTheFirstWriteDoes() async throws {
        try await TestServer.with(listenTimeout: 30) { server in
            try await server.upload("d", samplePDF(2_000))
            #expect(
                try await server.api(.POST, "/documents/d/annotations", json: #"{"id":"a","content":\#(note("a"))}"#)
                    .status == 201)
            let token = try await server.token(document: "d", layer: "review", user: "ana")
            let view = try await server.client(.GET, "d", "snapshot", token: token).json(LayerSnapshot.self)
            #expect(view.records.map(\.id) == ["a"], "a copy of the default layer")
            let quiet = try await server.client(
                .GET, "d", "listen?revision=\(view.revision)&epoch=\(view.epoch)&timeout=0.1", token: token)
            #expect(quiet.status == 200)
            let fetched = try await server.sync(
                "d", token: token,
                SyncRequest(
                    clientId: "ana-0123456789abcdef", epoch: view.epoch, baseRevision: view.revision, changes: []))
            #expect(fetched.changes.isEmpty && fetched.epoch == view.epoch)
            #expect(try await layers(server) == [""], "snapshot, listen and an empty sync created nothing")

            // A read-only token's changes are refused, and create nothing either.
            let reader = try await server.token(document: "d", layer: "review", permissions: ["read-document"])
            let refused = try await server.sync(
                "d", token: reader,
                SyncRequest(
                    clientId: "reader-0123456789abcdef", epoch: view.epoch, baseRevision: view.revision,
                    changes: [ClientChange(changeId: 1, kind: .create, id: "r", content: annotation("r"))]))
            #expect(refused.results.first?.reason == .permissionDenied)
            #expect(try await layers(server) == [""])

            // Meanwhile the default layer loses "a": the client's view (revision 1) still has it.
            #expect(try await server.api(.DELETE, "/documents/d/annotations/a").status == 204)
            let written = try await server.sync(
                "d", token: token,
                SyncRequest(
                    clientId: "ana-0123456789abcdef", epoch: view.epoch, baseRevision: view.revision,
                    changes: [ClientChange(changeId: 1, kind: .create, id: "b", content: annotation("b"))]))
            #expect(written.results.first?.accepted == true)
            #expect(written.epoch != view.epoch, "the layer exists now, with an epoch of its own")
            #expect(
                Set(written.changes.map { "\($0.id):\($0.deleted)" }) == ["a:true", "b:false"],
                "the deletion made before the fork reaches the client: its view stays exact")
            #expect(try await layers(server) == ["", "review"])
            let snapshot = try await server.client(.GET, "d", "snapshot", token: token).json(LayerSnapshot.self)
            #expect(snapshot.records.map(\.id) == ["b"])
            // The view's cursor is still accepted (it is this layer's history before the fork).
            let again = try await server.sync(
                "d", token: token,
                SyncRequest(
                    clientId: "ana-0123456789abcdef", epoch: view.epoch, baseRevision: view.revision, changes: []))
            #expect(again.changes.count == 2)
        }
    }

    /// A document "d" whose default layer holds "b", and its named layer "n", which Ana's
    /// first write (creating "c1") forked from the view she held; then Bob changed "b" there.
    private func forkedByAnaThenChangedByBob(_ server: TestServer) async throws -> (
        ana: String, view: LayerSnapshot, first: SyncResponse, bobs: SyncResponse
    ) {
        try await server.upload("d", samplePDF(2_000))
        #expect(
            try await server.api(.POST, "/documents/d/annotations", json: #"{"id":"b","content":\#(note("b"))}"#)
                .status == 201)
        let ana = try await server.token(document: "d", layer: "n", user: "ana")
        let bob = try await server.token(document: "d", layer: "n", user: "bob")
        let view = try await server.client(.GET, "d", "snapshot", token: ana).json(LayerSnapshot.self)
        // The fork is made at the view's revision, and c1 written after it.
        let first = try await server.sync(
            "d", token: ana,
            SyncRequest(
                clientId: "ana-0123456789abcdef", epoch: view.epoch, baseRevision: view.revision,
                changes: [ClientChange(changeId: 1, kind: .create, id: "c1", content: annotation("c1"))]))
        #expect(first.revision == view.revision + 1 && first.epoch != view.epoch)
        let bobs = try await server.sync(
            "d", token: bob,
            SyncRequest(
                clientId: "bob-0123456789abcdef", epoch: first.epoch, baseRevision: first.revision,
                changes: [ClientChange(changeId: 1, kind: .update, id: "b", content: annotation("bob"))]))
        #expect(bobs.results.first?.accepted == true)
        return (ana, view, first, bobs)
    }

    /// Ana's sync of `changes` from the view's cursor (she never got the fork's), as the
    /// server answers it.
    private func anaOnTheView(_ server: TestServer, _ ana: String, _ view: LayerSnapshot, _ changes: [ClientChange])
        async throws -> TestServer.Reply
    {
        try await server.client(
            .POST, "d", "sync", token: ana,
            body: try JSONEncoder().encode(
                SyncRequest(
                    clientId: "ana-0123456789abcdef", epoch: view.epoch, baseRevision: view.revision, changes: changes))
        )
    }

    /// A change's base past the fork, sent under the view's epoch: the client applied a
    /// page of the fork's changes, and the answer's cursor never came. It is judged as the
    /// fork's revision, not refused with `resetRequired`, after which the client took a
    /// snapshot and rebased every change, overwriting what it never saw.
    @Test func aBaseFromTheForkUnderTheViewsEpochIsJudgedNotRefused() async throws {
        try await TestServer.with { server in
            let (ana, view, first, _) = try await forkedByAnaThenChangedByBob(server)
            // Ana still holds the view's cursor; her edit of c1 was made on the fork's revision
            // that brought it, her edit of b on the view.
            let reply = try await anaOnTheView(
                server, ana, view,
                [
                    ClientChange(
                        changeId: 2, kind: .update, id: "c1", content: annotation("c1 again"),
                        baseRevision: first.revision),
                    ClientChange(changeId: 3, kind: .update, id: "b", content: annotation("ana")),
                ])
            #expect(reply.status == 200, "\(reply.errorCode ?? "")")
            let judged = try reply.json(SyncResponse.self)
            #expect(judged.results.map(\.accepted) == [true, false], "\(judged.results)")
            #expect(judged.results.last?.reason == .conflict, "Bob's change of b wins")
            // Past the fork's own revision, a base is still one the layer cannot have given.
            let past = try await anaOnTheView(
                server, ana, view,
                [
                    ClientChange(
                        changeId: 4, kind: .update, id: "c1", content: annotation("no"),
                        baseRevision: judged.revision + 1)
                ])
            #expect(past.status == 409 && past.errorCode == "resetRequired")
        }
    }

    /// A named layer deleted and created again is a new history, also for its view: the
    /// view's epoch changes with the deletion, so the new fork does not take a cursor or a
    /// base of the old fork's (revisions past the old fork are not the new one's): a change
    /// made on the old fork gets `resetRequired`, not a verdict against the new one's
    /// revisions, where it would overwrite what it never saw.
    @Test func aLayerCreatedAgainIsANewHistoryForItsView() async throws {
        try await TestServer.with { server in
            let (ana, view, _, bobs) = try await forkedByAnaThenChangedByBob(server)
            // Ana has seen Bob's change of b in a page (the answer's cursor never came).
            let seen = bobs.revision
            #expect(try await server.api(.DELETE, "/documents/d/layers/n").status < 300)
            let again = try await server.client(.GET, "d", "snapshot", token: ana).json(LayerSnapshot.self)
            #expect(again.epoch != view.epoch, "the view of a deleted layer's name is a new history")
            #expect(try await server.api(.POST, "/documents/d/layers", json: #"{"name": "n"}"#).status < 300)
            let carol = try await server.token(document: "d", layer: "n", user: "carol")
            let recreated = try await server.client(.GET, "d", "snapshot", token: carol).json(LayerSnapshot.self)
            #expect(recreated.forkEpoch == again.epoch)
            for (number, id) in ["b", "x", "y"].enumerated() {
                let written = try await server.sync(
                    "d", token: carol,
                    SyncRequest(
                        clientId: "carol-0123456789abcdef", epoch: recreated.epoch,
                        baseRevision: recreated.revision + Int64(number),
                        changes: [
                            ClientChange(
                                changeId: Int64(number + 1), kind: number == 0 ? .update : .create, id: id,
                                content: annotation("carol"))
                        ]))
                #expect(written.results.first?.accepted == true)
            }
            let reply = try await anaOnTheView(
                server, ana, view,
                [
                    ClientChange(
                        changeId: 2, kind: .update, id: "b", content: annotation("ana"), baseRevision: seen)
                ])
            #expect(reply.status == 409 && reply.errorCode == "resetRequired", "\(reply.status)")
            let truth = try await server.client(.GET, "d", "snapshot", token: carol).json(LayerSnapshot.self)
            #expect(truth.records.first { $0.id == "b" }?.content["text"] == .string("carol"))
        }
    }

    /// A layer copied from another named layer never continued the view, whose cursors it
    /// refused: deleting it leaves the view's epoch as it was (its holders keep their bases),
    /// where deleting a fork of the view changes it.
    @Test func deletingALayerThatNeverContinuedTheViewKeepsTheViewsEpoch() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            let token = try await server.token(document: "d", layer: "n")
            let view = try await server.client(.GET, "d", "snapshot", token: token).json(LayerSnapshot.self)
            #expect(try await server.api(.POST, "/documents/d/layers", json: #"{"name": "m"}"#).status < 300)
            let copied = try await server.api(
                .POST, "/documents/d/layers", json: #"{"name": "n", "source_layer_name": "m"}"#)
            #expect(copied.status < 300)
            #expect(try await server.api(.DELETE, "/documents/d/layers/n").status < 300)
            let after = try await server.client(.GET, "d", "snapshot", token: token).json(LayerSnapshot.self)
            #expect(after.epoch == view.epoch)
            #expect(try await server.api(.POST, "/documents/d/layers", json: #"{"name": "n"}"#).status < 300)
            #expect(try await server.api(.DELETE, "/documents/d/layers/n").status < 300)
            let again = try await server.client(.GET, "d", "snapshot", token: token).json(LayerSnapshot.self)
            #expect(again.epoch != view.epoch, "a fork of the view was deleted")
        }
    }

    @Test func aListenerOnAnUnwrittenLayerWakesForTheDefaultLayerAndForTheCreation() async throws {
        try await TestServer.with(listenTimeout: 30) { server in
            try await server.upload("d", samplePDF(2_000))
            let token = try await server.token(document: "d", layer: "l")
            let view = try await server.client(.GET, "d", "snapshot", token: token).json(LayerSnapshot.self)
            async let first = server.client(
                .GET, "d", "listen?revision=\(view.revision)&epoch=\(view.epoch)&timeout=30", token: token)
            try await Task.sleep(for: .milliseconds(300))
            #expect(
                try await server.api(.POST, "/documents/d/annotations", json: #"{"id":"x","content":\#(note("x"))}"#)
                    .status == 201)
            var started = ContinuousClock.now
            let woken = try await first.json(ListenResponse.self)
            #expect(woken.changed && woken.epoch == view.epoch && ContinuousClock.now - started < .seconds(10))

            async let second = server.client(
                .GET, "d", "listen?revision=\(woken.revision)&epoch=\(view.epoch)&timeout=30", token: token)
            try await Task.sleep(for: .milliseconds(300))
            #expect(
                try await server.api(
                    .POST, "/documents/d/layers/l/annotations", json: #"{"id":"y","content":\#(note("y"))}"#
                )
                .status == 201)
            started = ContinuousClock.now
            let created = try await second.json(ListenResponse.self)
            #expect(created.changed && created.epoch != view.epoch && ContinuousClock.now - started < .seconds(10))
        }
    }

    private func layers(_ server: TestServer) async throws -> [String] {
        try await server.api(.GET, "/documents/d/layers").json([String: [String]].self)["data"] ?? []
    }
}

/// An annotation's content as JSON text.
func note(_ text: String) -> String {
    String(decoding: annotation(text).jsonBytes(), as: UTF8.self)
}
