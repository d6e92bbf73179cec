import Foundation
import Instant
import InstantProtocol
import InstantServer
import ServerTestSupport
import Testing

/// `didReceiveChanges`: other writers' changes, as a sync applied them.
@Suite struct ServerChangeEventTests {
    @Test func anotherWritersCreateUpdateAndDeleteArriveWithTheirKinds() async throws {
        try await ClientHarness.with { h in
            let (_, logA, a) = try await h.downloadedDoc(user: "ana")
            let clientB = try h.client(root: h.root.appendingPathComponent("b"))
            let logB = await EventLog.recording(clientB)
            let b = try await h.downloaded(clientB, "doc", user: "bob")

            try a.editableDocument.add(note("one", id: "n1"))
            try a.editableDocument.add(note("two", id: "n2"))
            try await a.sync().result()
            try await b.sync().result()
            try a.editableDocument.update("n1", content: note("one, changed"))
            try a.editableDocument.remove("n2")
            try await a.sync().result()
            try await b.sync().result()
            // Events reach the log on a task of their own: each of B's two syncs has ended
            // in it before it is read (a loaded machine let the reading come first).
            try await logB.wait("B's two syncs to end") { events in
                events.filter { if case .didFinishSync = $0 { true } else { false } }.count >= 2
            }

            let received = await logB.receivedChanges
            #expect(
                received.map { "\($0.kind.rawValue) \($0.annotationID)" }.sorted() == [
                    "created n1", "created n2", "deleted n2", "updated n1",
                ])
            #expect(received.first { $0.kind == .updated }?.content?["text"] == .string("one, changed"))
            #expect(received.first { $0.kind == .deleted }?.content == nil)
            #expect(received.map(\.revision) == received.map(\.revision).sorted())
            // The event comes before the cycle's end.
            let names = await logB.names
            let firstReceived = try #require(names.firstIndex { $0.hasPrefix("didReceiveChanges") })
            #expect(names.dropFirst(firstReceived + 1).contains("didFinishSync"))
            // A writer is not told of its own changes.
            #expect(await logA.receivedChanges.isEmpty)
            // B's own change, once synced, is not reported to B either.
            try b.editableDocument.add(note("from bob", id: "b1"))
            await logB.clear()
            try await b.sync().result()
            #expect(await logB.receivedChanges.isEmpty)
        }
    }

    /// A round cut short between pages reports what it applied; the next round asks for
    /// those records again (the cursor moves on the last page only) and does not report
    /// them twice.
    /// (Its retries wait an hour: a sync stuck behind one fails the test in minutes.)
    @Test(.timeLimit(.minutes(5))) func aRoundCutShortBetweenPagesReportsEachChangeOnce() async throws {
        try await ClientHarness.with(configure: { $0.pageLimits = PageLimits(records: 2) }) { h in
            try await h.server.upload("doc", samplePDF())
            let client = try h.client()
            // No retry may fetch the rest before the first report is read.
            client.retryPolicy = RetryPolicy(initialDelay: .seconds(3600), maximumDelay: .seconds(3600))
            let log = await EventLog.recording(client)
            let descriptor = try await h.downloaded(client, "doc")
            let inputs = (0..<5).map { AnnotationInput(id: "s\($0)", content: note("server \($0)")).json }
            let body = JSONValue.object(["annotations": .array(inputs)])
            #expect(
                try await h.server.api(
                    .POST, "/documents/doc/annotations", json: String(decoding: body.jsonData(), as: UTF8.self)
                ).status < 300)
            // The first page comes with the sync's answer; the next page's answer is lost.
            h.proxy.loseNextResponse(to: "GET /i/v1/documents/doc/changes", times: 2)
            #expect(await failure(of: descriptor.sync()) != nil)
            let first = await log.receivedChanges.map(\.annotationID)
            #expect(first == ["s0", "s1"])
            try await descriptor.sync().result()
            let all = await log.receivedChanges
            #expect(all.map(\.annotationID) == ["s0", "s1", "s2", "s3", "s4"])
            #expect(all.allSatisfy { $0.kind == .created })
        }
    }

    /// Starts and stops made one after the other, from outside any actor, may reach the
    /// engine in either order: balanced, they must leave nothing listening.
    @Test func balancedStartsAndStopsLeaveNothingListening() async throws {
        try await ClientHarness.with { h in
            let (_, log, descriptor) = try await h.downloadedDoc()
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        for _ in 0..<100 {
                            descriptor.startListeningForServerChanges()
                            descriptor.stopListeningForServerChanges()
                        }
                    }
                }
            }
            try await Task.sleep(for: .milliseconds(500))
            let before = await log.events.count
            try await h.createOnServer(["s"])
            try await Task.sleep(for: .milliseconds(700))
            let after = await log.events.dropFirst(before)
            #expect(!after.contains { if case .didBeginSync = $0 { true } else { false } }, "a poll was left running")
        }
    }

    /// removeLocalStorage() ends the layer's long poll too (network work of the removed
    /// layer): a server change after it starts no sync of nothing; listening goes on once
    /// the layer is downloaded again.
    @Test func aRemovalEndsTheLongPollAndADownloadResumesIt() async throws {
        try await withListeningToDoc { h, log, descriptor in
            try descriptor.removeLocalStorage()
            try await Task.sleep(for: .milliseconds(100))
            let before = await log.events.count
            try await h.createOnServer(["s"])
            try await Task.sleep(for: .milliseconds(500))
            let after = await log.events.dropFirst(before)
            #expect(
                !after.contains {
                    switch $0 {
                    case .didBeginSync, .didFailSync: true
                    default: false
                    }
                }, "\(after)")
            #expect(descriptor.documentState == .unknown)
            // Downloaded again: listening resumes, and the next server change arrives.
            try await descriptor.download(usingJWT: try await h.jwt("doc")).result()
            #expect(try descriptor.editableDocument.annotations().map(\.id) == ["s"])
            try await Task.sleep(for: .milliseconds(200))
            try await h.createOnServer(["t"])
            try await log.wait("the change after the new download") { events in
                events.contains {
                    if case .didReceiveChanges(_, let changes) = $0 {
                        changes.contains { $0.annotationID == "t" }
                    } else {
                        false
                    }
                }
            }
        }
    }

    /// A listening client that loses the server says so once, keeps trying, and syncs
    /// when the server answers again (catching up on what it missed).
    @Test func listeningReportsAnOutageOnceAndSyncsAfterIt() async throws {
        try await withListeningToDoc { h, log, descriptor in
            h.proxy.setRefusing(true)
            try await log.wait("the outage to be reported") { events in
                events.contains { if case .didFailSync(_, let e) = $0 { e.code == .requestFailed } else { false } }
            }
            // Several retries (400 ms apart at most here), one report.
            try await Task.sleep(for: .seconds(1.5))
            #expect(await log.names.filter { $0 == "didFailSync(requestFailed)" }.count == 1)
            #expect(!(await log.names.contains("didFinishSync")))
            h.proxy.setRefusing(false)
            // Retries are 400 ms apart at most; a minute allows for a machine under load.
            try await log.wait("a sync after the outage", seconds: 60) { events in
                events.contains { if case .didFinishSync = $0 { true } else { false } }
            }
        }
    }

    /// The server is ahead of this copy, so each listen answers at once, and each sync it
    /// starts fails (a 500 from the proxy): the listener backs off further each time (50
    /// doubling to 400 ms here, jittered) rather than trying at the first delay forever.
    @Test func listeningBacksOffWhileTheSyncsItStartsFail() async throws {
        try await withListeningToDoc { h, log, descriptor in
            h.proxy.answerNextRequest(
                to: "POST /i/v1/documents/doc/sync", status: "500 Internal Server Error", times: 1000)
            try await h.createOnServer(["s"])
            try await log.wait(for: "didFailSync")
            let before = h.proxy.requestsAnswered
            try await Task.sleep(for: .seconds(2))
            let syncs = h.proxy.requestsAnswered - before
            // Without backoff past the first delay (25-50 ms): 40 and more.
            #expect(syncs <= 20, "\(syncs) syncs in 2 s")
            h.proxy.answerNextRequest(to: "POST", status: "200 OK", times: 0)
            try await log.wait(for: "didFinishSync", seconds: 60)
        }
    }

    /// A peer that answers every listen at once with nothing new (a server shutting down, a
    /// proxy that does not hold the poll) is not polled in a loop: each such answer waits
    /// longer before the next (50 doubling to 400 ms here).
    @Test func listensAnsweredAtOnceWithNothingNewAreSpacedOut() async throws {
        try await withListeningToDoc { h, log, descriptor in
            // (Only `changed` counts for the client.)
            h.proxy.answerNextRequest(
                to: "GET /i/v1/documents/doc/listen", status: "200 OK",
                body: #"{"epoch": "e", "revision": 0, "changed": false}"#, contentType: "application/json",
                times: 100_000)
            // A poll parked at the server already is woken (its sync follows); the next
            // ones are the proxy's.
            try await h.createOnServer(["s"])
            for _ in 0..<3000 where h.proxy.requestsAnswered == 0 { try await Task.sleep(for: .milliseconds(10)) }
            let before = h.proxy.requestsAnswered
            // 4 s: on a machine running the whole suite, 2 s once saw a single poll.
            try await Task.sleep(for: .seconds(4))
            let polls = h.proxy.requestsAnswered - before
            #expect(polls >= 2, "still listening")
            // In a loop: hundreds.
            #expect(polls <= 40, "\(polls) polls in 4 s")
            let names = await log.names
            #expect(names.filter { $0.hasPrefix("didFailSync") }.isEmpty, "\(names)")
        }
    }

    /// Answers that are not the server's (a captive portal's page, a load balancer's bare
    /// 404; three times) are an outage to listening, reported once and waited out, not the
    /// end of it: a change on the server after them still reaches the listening client.
    @Test(arguments: [
        ("200 OK", "<html>sign in</html>", "didFailSync(requestFailed)"),
        ("404 Not Found", "", "didFailSync(requestFailed)"),
    ])
    func listeningOutlastsAnswersThatAreNotTheServers(status: String, body: String, reported: String)
        async throws
    {
        try await withListeningToDoc { h, log, descriptor in
            h.proxy.answerNextRequest(
                to: "GET /i/v1/documents/doc/listen", status: status, body: body, contentType: "text/html",
                times: 3)
            // A poll parked at the server already is woken; the next three are the portal's.
            try await h.createOnServer(["first"])
            for _ in 0..<3000 where h.proxy.requestsAnswered < 3 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(h.proxy.requestsAnswered == 3)
            try await h.createOnServer(["second"])
            let view = descriptor.readOnlyDocument()
            try await log.wait("the change after the outage") { _ in (try? view.annotation(withID: "second")) != nil }
            let failures = await log.names.filter { $0.hasPrefix("didFailSync") }
            #expect(failures == [reported], "reported once")
        }
    }

    /// A server change heard while a cycle runs after `stopSyncing(false)`: the sync it
    /// asks for (its poll began before the stop) does not revive the cycle the stop ends
    /// after its round; the change left waits for the next sync.
    @Test func aServerChangeDoesNotReviveACycleAStopEnds() async throws {
        try await withListeningToDoc { h, _, descriptor in
            descriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
            try descriptor.editableDocument.add(note("first", id: "1"))
            h.proxy.holdNextRequest(to: "POST /i/v1/documents/doc/sync")
            let running = descriptor.sync()
            while h.proxy.requestsHeld == 0 { try await Task.sleep(for: .milliseconds(5)) }
            try descriptor.editableDocument.add(note("second", id: "2"))
            descriptor.stopSyncing(false)
            try await Task.sleep(for: .milliseconds(50))
            try await h.createOnServer(["s"])
            try await Task.sleep(for: .milliseconds(300))
            h.proxy.releaseHeldRequest()
            #expect(await failure(of: running)?.code == .requestFailed)
            try await Task.sleep(for: .seconds(1))
            #expect(Set(try await h.serverAnnotations("doc").map(\.id)) == ["1", "s"], "no round after the stop")
            try await descriptor.sync().result()
            #expect(try await h.serverAnnotations("doc").count == 3)
        }
    }

    /// What no wait mends (here the server refusing this client's protocol version) ends
    /// listening, reported once, rather than a poll every minute for good.
    @Test func listeningEndsOnARefusalNoWaitMends() async throws {
        try await withListeningToDoc { h, log, _ in
            h.proxy.answerNextRequest(
                to: "GET /i/v1/documents/doc/listen", status: "426 Upgrade Required",
                body: #"{"error": {"code": "oldClient", "message": "update the client"}}"#,
                contentType: "application/json", times: 100)
            // A poll parked at the server already is woken; the next one is refused.
            try await h.createOnServer(["first"])
            try await log.wait(for: "didFailSync")
            try await Task.sleep(for: .seconds(1.5))
            #expect(h.proxy.requestsAnswered == 1, "no poll after the refusal")
            #expect(await log.names.filter { $0.hasPrefix("didFailSync") }.count == 1)
        }
    }

    /// A client the app lets go while it listens goes at once: the poll out (30 s) does
    /// not hold it.
    @Test func aListeningClientLetGoIsReleasedAtOnce() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            weak var released: InstantClient?
            var client: InstantClient? = try h.client()
            released = client
            let descriptor = try await h.downloaded(try #require(client), "doc")
            descriptor.startListeningForServerChanges()
            try await Task.sleep(for: .milliseconds(300))  // the poll is out
            client = nil
            for _ in 0..<200 where released != nil { try await Task.sleep(for: .milliseconds(10)) }
            #expect(released == nil, "the client outlived the app's last reference")
            #expect(descriptor.documentState == .invalid)
        }
    }

    /// A reset (the layer made again on the server) reports what the snapshot changed,
    /// not the records under a local change.
    @Test func aResetReportsWhatTheSnapshotChanged() async throws {
        try await ClientHarness.with { h in
            let (_, log, descriptor) = try await h.downloadedDoc(layer: "notes")
            try descriptor.editableDocument.add(note("first", id: "a"))
            try descriptor.editableDocument.add(note("kept", id: "k"))
            try await descriptor.sync().result()
            #expect(try await h.server.api(.DELETE, "/documents/doc/layers/notes").status < 300)
            #expect(
                try await h.server.api(
                    .POST, "/documents/doc/layers/notes/annotations",
                    json: String(
                        decoding: AnnotationInput(id: "c", content: note("server's")).json.jsonData(), as: UTF8.self)
                ).status < 300)
            try descriptor.editableDocument.update("k", content: note("kept, pending"))
            await log.clear()
            try await descriptor.sync().result()
            let received = await log.receivedChanges
            // "k", changed locally, was not on the new layer: the server refused the change
            // (lost, reported), and the snapshot took the record away, which is reported too.
            #expect(
                received.map { "\($0.kind.rawValue) \($0.annotationID)" }.sorted() == [
                    "created c", "deleted a", "deleted k",
                ])
            #expect(await log.lostChanges.map(\.annotationID) == ["k"])
            #expect(try descriptor.editableDocument.annotations().map(\.id) == ["c"])
            #expect(received.first { $0.annotationID == "c" }?.content?["text"] == .string("server's"))
        }
    }
}

/// "doc" uploaded and downloaded by a client of its own (kept alive by the caller, with
/// its event log), its descriptor listening for server changes, the long poll out.
/// `body` with a client listening to a downloaded `doc` (its poll given 200 ms to park),
/// stopped and let go afterwards.
private func withListeningToDoc(
    _ body: @Sendable (ClientHarness, EventLog, InstantDocumentDescriptor) async throws -> Void
) async throws {
    try await ClientHarness.with { h in
        let (client, log, descriptor) = try await h.downloadedDoc()
        descriptor.startListeningForServerChanges()
        defer {
            descriptor.stopListeningForServerChanges()
            withExtendedLifetime(client) {}
        }
        try await Task.sleep(for: .milliseconds(200))
        try await body(h, log, descriptor)
    }
}
