import Foundation
import InstantProtocol
import Testing
import ServerTestSupport

@Suite struct SyncTests {
    @Test func firstComeFirstWinAndEveryChangeSinceTheBase() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            let ana = try await server.token(document: "d", user: "ana")
            let bob = try await server.token(document: "d", user: "bob")
            let created = try await server.sync(
                "d", token: ana,
                SyncRequest(
                    clientId: "ana-0123456789abcdef", baseRevision: 0,
                    changes: [ClientChange(changeId: 1, kind: .create, id: "a", content: annotation("one"))]))
            let epoch = created.epoch
            #expect(created.revision == 1 && created.results == [ChangeResult(changeId: 1, accepted: true)])
            #expect(created.changes.map(\.id) == ["a"] && created.changes.first?.createdBy == "ana")
            // Unknown keys are kept.
            #expect(created.changes.first?.content?["customData"] == .object(["kept": .bool(true)]))

            // Bob updates from revision 1; Ana's later update from revision 1 loses.
            let bobs = try await server.sync(
                "d", token: bob,
                SyncRequest(
                    clientId: "bob-0123456789abcdef", epoch: epoch, baseRevision: 1,
                    changes: [ClientChange(changeId: 7, kind: .update, id: "a", content: annotation("bob"))]))
            #expect(bobs.results.first?.accepted == true && bobs.revision == 2)
            let anas = try await server.sync(
                "d", token: ana,
                SyncRequest(
                    clientId: "ana-0123456789abcdef", epoch: epoch, baseRevision: 1,
                    changes: [
                        ClientChange(changeId: 2, kind: .update, id: "a", content: annotation("ana")),
                        ClientChange(changeId: 3, kind: .create, id: "a", content: annotation("again")),
                        ClientChange(changeId: 4, kind: .delete, id: "missing"),
                        ClientChange(changeId: 5, kind: .create, id: "b", content: .object(["v": .integer(2)])),
                        ClientChange(changeId: 6, kind: .create, id: "c", content: annotation("c")),
                        ClientChange(changeId: 8, kind: .update, id: "c", content: annotation("c2")),
                    ]))
            #expect(anas.results.map(\.reason) == [.conflict, .alreadyExists, .notFound, .invalidAnnotation, nil, nil])
            #expect(anas.revision == 3)
            // Everything after revision 1: Bob's update of a, and c.
            #expect(anas.changes.map(\.id) == ["a", "c"])
            #expect(anas.changes.first?.content?["text"] == .string("bob"))
            #expect(anas.changes.last?.content?["text"] == .string("c2") && anas.changes.last?.updatedBy == "ana")

            let snapshot = try await server.client(.GET, "d", "snapshot", token: bob).json(LayerSnapshot.self)
            #expect(snapshot.revision == 3 && snapshot.records.map(\.id) == ["a", "c"])

            // A read-only token may sync (to fetch) but its changes are refused.
            let reader = try await server.token(document: "d", permissions: ["read-document"])
            let refused = try await server.sync(
                "d", token: reader,
                SyncRequest(
                    clientId: "reader-0123456789abcdef", epoch: epoch, baseRevision: 3,
                    changes: [ClientChange(changeId: 1, kind: .delete, id: "a")]))
            #expect(refused.results.first?.reason == .permissionDenied && refused.revision == 3)
        }
    }

    /// A record is stored and read back under one id: an `"id"` in its content that names
    /// another is refused, by the sync and by the backend API alike.
    @Test func aContentIDOtherThanTheAnnotationsIsRefused() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            let ana = try await server.token(document: "d", user: "ana")
            let synced = try await server.sync(
                "d", token: ana,
                SyncRequest(
                    clientId: "ana-0123456789abcdef", baseRevision: 0,
                    changes: [
                        ClientChange(changeId: 1, kind: .create, id: "a", content: annotation("one", id: "b")),
                        ClientChange(changeId: 2, kind: .create, id: "c", content: annotation("two", id: "c")),
                        ClientChange(changeId: 3, kind: .create, id: "e", content: annotation("three")),
                    ]))
            #expect(synced.results.map(\.reason) == [.invalidAnnotation, nil, nil])
            #expect(synced.results.first?.message?.contains(#"the content's "id" is "b""#) == true)
            #expect(synced.changes.map(\.id) == ["c", "e"])

            let note = #""v":2,"type":"pspdfkit/note","pageIndex":0,"bbox":[0,0,5,5]"#
            // Beside the content, or in it: one id, or the request is refused.
            let mismatched = try await server.api(
                .POST, "/documents/d/annotations", json: #"{"id":"x","content":{"id":"y",\#(note)}}"#)
            #expect(mismatched.status == 400 && mismatched.errorCode == "invalidAnnotation")
            let numbered = try await server.api(
                .POST, "/documents/d/annotations", json: #"{"content":{"id":7,\#(note)}}"#)
            #expect(numbered.status == 400 && numbered.errorCode == "invalidAnnotation")
            let inside = try await server.api(
                .POST, "/documents/d/annotations", json: #"{"content":{"id":"y",\#(note)}}"#)
            #expect(
                inside.status == 201 && String(decoding: inside.body, as: UTF8.self).contains(#""annotation_id":"y""#))
            let renamed = try await server.api(
                .PUT, "/documents/d/annotations/y", json: #"{"content":{"id":"z",\#(note)}}"#)
            #expect(renamed.status == 400 && renamed.errorCode == "invalidAnnotation")
            let list = try await server.api(.GET, "/documents/d/annotations").json(AnnotationList.self)
            #expect(list.data.annotations.map(\.id).sorted() == ["c", "e", "y"])
        }
    }

    @Test func namedLayersStartAsACopyOfTheDefaultLayer() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            #expect(
                try await server.api(
                    .POST, "/documents/d/annotations",
                    json:
                        #"{"id":"base","content":{"v":2,"type":"pspdfkit/ink","pageIndex":1,"bbox":[0,0,1,1],"lines":[]}}"#
                ).status == 201)
            let review = try await server.token(document: "d", layer: "review")
            let snapshot = try await server.client(.GET, "d", "snapshot", token: review).json(LayerSnapshot.self)
            #expect(snapshot.records.map(\.id) == ["base"])
            _ = try await server.sync(
                "d", token: review,
                SyncRequest(
                    clientId: "review-0123456789abcdef", epoch: snapshot.epoch, baseRevision: snapshot.revision,
                    changes: [ClientChange(changeId: 1, kind: .delete, id: "base")]))
            let base = try await server.api(.GET, "/documents/d/annotations").json(AnnotationList.self)
            #expect(base.data.annotations.map(\.id) == ["base"] && !base.data.truncated)
            let layers = try await server.api(.GET, "/documents/d/layers").json([String: [String]].self)
            #expect(layers["data"] == ["", "review"])
            #expect(
                try await server.api(.GET, "/documents/d/layers/review/annotations").json(AnnotationList.self).data
                    .annotations.isEmpty)
        }
    }

    @Test func backendAnnotationsExportAndImport() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            #expect(try await server.api(.POST, "/documents/d/layers", json: #"{"name":"l"}"#).status == 201)
            #expect(
                try await server.api(.POST, "/documents/d/layers", json: #"{"name":"l"}"#).errorCode == "alreadyExists")
            let created = try await server.api(
                .POST, "/documents/d/layers/l/annotations",
                json:
                    #"{"id":"x","user_id":"svc","content":{"v":2,"type":"pspdfkit/note","pageIndex":0,"bbox":[0,0,5,5],"zz":[1,2.5,null]}}"#
            )
            #expect(created.status == 201)
            let updated = try await server.api(
                .PUT, "/documents/d/layers/l/annotations/x",
                json: #"{"content":{"v":2,"type":"pspdfkit/note","pageIndex":3,"bbox":[0,0,5,5]}}"#)
            let record = try #require(try updated.json([String: AnnotationRecord].self)["data"])
            #expect(record.content["pageIndex"] == .integer(3) && record.createdBy == "svc")
            let exported = try await server.api(.GET, "/documents/d/layers/l/document.json")
            let document = try exported.json(JSONValue.self)
            #expect(document["format"]?.string == InstantJSON.format)
            guard case .array(let annotations) = document["annotations"] else { Issue.record("no annotations"); return }
            #expect(annotations.first?["id"]?.string == "x")

            let imported = try await server.api(.POST, "/documents/d/apply_instant_json", body: exported.body)
            #expect(imported.status == 200)
            let base = try await server.api(.GET, "/documents/d/annotations/x").json([String: AnnotationRecord].self)
            #expect(base["data"]?.content["pageIndex"] == .integer(3))
            // Importing again replaces the annotation by id.
            let again = try await server.api(.POST, "/documents/d/apply_instant_json", body: exported.body)
            #expect(String(decoding: again.body, as: UTF8.self).contains(#""imported":1"#))
            let bad = try await server.api(
                .POST, "/documents/d/apply_instant_json", json: #"{"annotations":[{"v":2,"type":"t","pageIndex":0}]}"#)
            #expect(bad.status == 400 && bad.errorCode == "invalidAnnotation")
            #expect(String(decoding: bad.body, as: UTF8.self).contains("bbox"))
            #expect(try await server.api(.DELETE, "/documents/d/layers/l/annotations/x").status == 204)
            #expect(try await server.api(.GET, "/documents/d/layers/l/annotations/x").status == 404)
            #expect(try await server.api(.DELETE, "/documents/d/layers/l").status == 204)
        }
    }

    @Test func listenReturnsOnAWriteOrAtTheTimeout() async throws {
        try await TestServer.with(listenTimeout: 30) { server in
            try await server.upload("d", samplePDF(2_000))
            let token = try await server.token(document: "d")
            let idle = try await server.client(.GET, "d", "listen?revision=0&timeout=0.2", token: token)
            let quiet = try idle.json(ListenResponse.self)
            #expect(quiet.revision == 0 && !quiet.changed && !quiet.epoch.isEmpty)
            async let woken = server.client(.GET, "d", "listen?revision=0&timeout=30", token: token)
            try await Task.sleep(for: .milliseconds(200))
            _ = try await server.sync(
                "d", token: token,
                SyncRequest(
                    clientId: "writer-0123456789abcdef", baseRevision: 0,
                    changes: [ClientChange(changeId: 1, kind: .create, id: "n", content: annotation("n"))]))
            let written = ContinuousClock.now
            #expect(
                try await woken.json(ListenResponse.self)
                    == ListenResponse(epoch: quiet.epoch, revision: 1, changed: true))
            // Woken by the write, not by the 30 s timeout (which would answer the same).
            #expect(ContinuousClock.now - written < .seconds(10))
            let behind = try await server.client(.GET, "d", "listen?revision=0", token: token)
            #expect(try behind.json(ListenResponse.self).changed)
            // A client ahead of the server (its data was reset), or with another epoch, must
            // take a snapshot: it is told so at once.
            let ahead = try await server.client(.GET, "d", "listen?revision=9&timeout=5", token: token)
            #expect(ahead.status == 409 && ahead.errorCode == "resetRequired")
            let stale = try await server.client(.GET, "d", "listen?revision=0&epoch=0000&timeout=5", token: token)
            #expect(stale.status == 409 && stale.errorCode == "resetRequired")
        }
    }

    /// Two spellings Swift calls equal (canonically equivalent Unicode) are two documents:
    /// a write to one wakes no listener of the other.
    @Test func aWriteToOneSpellingWakesNoListenerOfTheOther() async throws {
        try await TestServer.with(listenTimeout: 30) { server in
            let (composed, decomposed) = ("caf\u{E9}", "cafe\u{301}")
            try await server.upload(composed, samplePDF(2_000))
            try await server.upload(decomposed, samplePDF(2_001))
            let listening = try await server.token(document: composed)
            let writing = try await server.token(document: decomposed)
            async let answer = server.client(.GET, composed, "listen?revision=0&timeout=1.5", token: listening)
            try await Task.sleep(for: .milliseconds(300))
            let written = try await server.sync(
                decomposed, token: writing,
                SyncRequest(
                    clientId: "writer-0123456789abcdef", baseRevision: 0,
                    changes: [ClientChange(changeId: 1, kind: .create, id: "n", content: annotation("n"))]))
            #expect(written.revision == 1)
            let heard = try await answer.json(ListenResponse.self)
            #expect(heard.revision == 0 && !heard.changed)
        }
    }
}
