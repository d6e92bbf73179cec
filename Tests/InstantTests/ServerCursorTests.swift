import Foundation
import Instant
import InstantProtocol
import InstantServer
import InstantStore
import ServerTestSupport
import Testing

/// The cursor (epoch and revision) the client keeps comes from the server's answers: an
/// answer that would leave one no later request can use is refused, and a server that
/// keeps refusing the cursor it gave is retried with backoff, not snapshotted in a loop.
@Suite struct ServerCursorTests {
    static let sync = "POST /i/v1/documents/doc/sync"

    /// The layer's cursor and pending changes, read from the store.
    func cursor(_ h: ClientHarness) throws -> (revision: Int64, epoch: String?, pending: Int) {
        let store = try InstantStore(root: h.root)
        defer { store.close() }
        let layer = try store.openLayer(tenant: TenantURL(h.proxy.url.absoluteString), document: "doc", layer: "")
        defer { layer.close() }
        let meta = try layer.metadata()
        return (meta.lastServerRevision, meta.epoch, try layer.pendingChangeCount())
    }

    /// A server that names the same next page again would have the client page for ever,
    /// piling records up in memory: the read fails instead, for a download's snapshot, a
    /// reset's, and the pages after a sync.
    @Test func aServerThatNamesTheSamePageAgainFailsTheRead() async throws {
        try await ClientHarness.with(configure: { $0.pageLimits = PageLimits(records: 2) }) { h in
            try await h.server.upload("doc", samplePDF())
            let client = try h.client()
            let descriptor = try await h.downloaded(client, "doc")
            let epoch = try #require(try cursor(h).epoch)
            let snapshot = "GET /i/v1/documents/doc/snapshot"
            let page = #"{"epoch": "\#(epoch)", "revision": 0, "records": [], "next": "c1"}"#
            h.proxy.answerNextRequest(
                to: snapshot, status: "200 OK", body: page, contentType: "application/json", times: 9)
            let token = try await h.jwt("doc", layer: "notes")
            let notes = try client.documentDescriptor(forJWT: token)
            let download = await failure(of: try notes.download(usingJWT: token))
            #expect(download?.code == .invalidServerData, "\(String(describing: download))")
            #expect(h.proxy.requestsAnswered == 2, "the first page, and the one it named, once")
            #expect(!notes.isDownloaded)

            // The pages after a sync (two records a page, five from another writer): the
            // second page names itself as the next.
            try await h.createOnServer((0..<5).map { "s\($0)" })
            try descriptor.editableDocument.add(note("kept", id: "kept"))
            h.proxy.answerNextRequest(
                to: "GET /i/v1/documents/doc/changes", status: "200 OK",
                body: #"{"epoch": "\#(epoch)", "revision": 6, "results": [], "changes": [], "next": "c1"}"#,
                contentType: "application/json", times: 9)
            let synced = await failure(of: descriptor.sync())
            #expect(synced?.code == .invalidServerData, "\(String(describing: synced))")
            #expect(h.proxy.requestsAnswered == 4, "two snapshot pages, then two pages of changes")
            h.proxy.answerNextRequest(to: "GET", status: "200 OK", times: 0)
            // Nothing was lost: the real server's pages are read at the next sync.
            try await descriptor.sync().result()
            #expect(try await h.serverAnnotations("doc").map(\.id).sorted() == ["kept", "s0", "s1", "s2", "s3", "s4"])
            #expect(try descriptor.editableDocument.annotations().count == 6)
            #expect(descriptor.documentState == .clean)
        }
    }

    @Test func anAnswerWithACursorTheClientCannotKeepFailsAndLosesNothing() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let client = try h.client()
            let descriptor = try await h.downloaded(client, "doc")
            try descriptor.editableDocument.add(note("kept", id: "kept"))
            let before = try cursor(h)
            let epoch = try #require(before.epoch)
            let answers = [
                #"{"epoch": "\#(epoch)", "revision": -3, "results": [{"changeId": 1, "accepted": true}], "changes": []}"#,
                #"{"epoch": "", "revision": 4, "results": [{"changeId": 1, "accepted": true}], "changes": []}"#,
                #"{"epoch": "\#(String(repeating: "e", count: 129))", "revision": 4, "results": [], "changes": []}"#,
                #"{"epoch": "\#(epoch)", "revision": 4, "results": [{"changeId": 1, "accepted": true}], "#
                    + #""changes": [{"id": "x", "revision": 9, "deleted": true}]}"#,
            ]
            for body in answers {
                h.proxy.answerNextRequest(to: Self.sync, status: "200 OK", body: body, contentType: "application/json")
                let failed = await failure(of: descriptor.sync())
                #expect(failed?.code == .invalidServerData, "\(body): \(String(describing: failed))")
                let after = try cursor(h)
                #expect(after.revision == before.revision && after.epoch == epoch && after.pending == 1, "\(body)")
            }
            #expect(h.proxy.requestsAnswered == answers.count)
            try await descriptor.sync().result()
            #expect(try cursor(h).pending == 0)
            #expect(try await h.serverAnnotations("doc").map(\.id) == ["kept"])
            #expect(descriptor.documentState == .clean)

            // A snapshot (here a second layer's download) with no epoch is refused too.
            h.proxy.answerNextRequest(
                to: "GET /i/v1/documents/doc/snapshot", status: "200 OK",
                body: #"{"epoch": "", "revision": 0, "records": []}"#, contentType: "application/json")
            let notes = try client.documentDescriptor(forJWT: try await h.jwt("doc", layer: "notes"))
            let download = await failure(of: try notes.download(usingJWT: try await h.jwt("doc", layer: "notes")))
            #expect(download?.code == .invalidServerData, "\(String(describing: download))")
            #expect(!notes.isDownloaded)
        }
    }

    /// A later page of changes may carry another epoch than the first: an unwritten layer
    /// written for the first time between pages is a fork that keeps the revisions. The
    /// page is taken, and the cursor moves to its epoch.
    @Test func aLaterPageOfAnotherEpochIsTaken() async throws {
        try await ClientHarness.with(configure: { $0.pageLimits = PageLimits(records: 2) }) { h in
            try await h.server.upload("doc", samplePDF())
            let client = try h.client()
            let descriptor = try await h.downloaded(client, "doc")
            let other = (0..<5).map {
                ClientChange(changeId: Int64($0 + 1), kind: .create, id: "o\($0)", content: note("o"))
            }
            let written = try await h.server.sync(
                "doc", token: try await h.jwt("doc", user: "bob"),
                SyncRequest(clientId: "bobs-client-000002", baseRevision: 0, changes: other))
            h.proxy.answerNextRequest(
                to: "GET /i/v1/documents/doc/changes", status: "200 OK",
                body: #"{"epoch": "forked", "revision": \#(written.revision), "results": [], "changes": []}"#,
                contentType: "application/json")
            try await descriptor.sync().result()
            #expect(h.proxy.requestsAnswered == 1)
            #expect(try cursor(h).epoch == "forked" && cursor(h).revision == written.revision)
        }
    }

    /// Every sync is answered `resetRequired` (a server whose layer keeps changing epoch):
    /// the client takes a few snapshots in a row, then fails the cycle as a request
    /// failure and tries again with backoff, instead of taking a snapshot at every round
    /// as fast as the server answers. Once the server takes the cursor, the change goes up.
    @Test func aServerThatKeepsRefusingTheCursorIsTriedAgainWithBackoff() async throws {
        try await ClientHarness.with { h in
            let (_, log, descriptor) = try await h.downloadedDoc()
            try descriptor.editableDocument.add(note("kept", id: "kept"))
            h.proxy.answerNextRequest(
                to: Self.sync, status: "409 Conflict",
                body: #"{"error": {"code": "resetRequired", "message": "take a snapshot"}}"#,
                contentType: "application/json", times: 100_000)
            let failed = await failure(of: descriptor.sync())
            #expect(failed?.code == .requestFailed, "\(String(describing: failed))")
            #expect(failed?.message.contains("snapshot several times in a row") == true)
            #expect(h.proxy.requestsAnswered == 4, "three snapshots, then the fourth refusal fails the cycle")
            // The retries back off (50 ms, doubling, at most 400 ms): a handful of requests
            // in two seconds, where a loop would send one per round trip.
            try await Task.sleep(for: .seconds(2))
            let refused = h.proxy.requestsAnswered
            #expect(refused < 40, "\(refused) syncs refused in 2 s")
            #expect(try cursor(h).pending == 1, "the change is kept")

            h.proxy.answerNextRequest(to: Self.sync, status: "409 Conflict", times: 0)
            await log.clear()
            try await log.wait("a retry to go through") {
                $0.contains { if case .didFinishSync = $0 { true } else { false } }
            }
            #expect(try await h.serverAnnotations("doc").map(\.id) == ["kept"])
            #expect(try cursor(h).pending == 0)
        }
    }
}
