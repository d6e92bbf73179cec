import Foundation
import InstantProtocol
import Testing
import ServerTestSupport

/// Pages, caps and limits: no request makes the server do unbounded work or hold
/// unbounded resources.
@Suite struct BoundedWorkTests {
    @Test func snapshotsAndChangesComeInPagesAndMissNothingWrittenBetweenThem() async throws {
        try await TestServer.with(configure: { $0.pageLimits.records = 10 }) { server in
            try await server.upload("d", samplePDF(2_000))
            let token = try await server.token(document: "d", user: "ana")
            let changes = (0..<25).map {
                ClientChange(changeId: Int64($0), kind: .create, id: "a\($0)", content: annotation("\($0)"))
            }
            let pushed = try await server.sync(
                "d", token: token, SyncRequest(clientId: "ana-0123456789abcdef", baseRevision: 0, changes: changes))
            #expect(pushed.results.count == 25 && pushed.changes.count == 10 && pushed.next != nil)

            // The rest of the changes, page by page; a record of the first page changes in between.
            var seen = pushed.changes.map(\.id)
            var next = pushed.next
            var updated = false
            var last = pushed
            while let cursor = next {
                if !updated {
                    _ = try await server.api(.PUT, "/documents/d/annotations/a0", json: #"{"content":\#(note("new"))}"#)
                    updated = true
                }
                let page = try await server.client(
                    .GET, "d", "changes?since=0&epoch=\(pushed.epoch)&after=\(cursor)", token: token
                ).json(SyncResponse.self)
                #expect(page.changes.count <= 10)
                seen += page.changes.map(\.id)
                next = page.next
                last = page
            }
            #expect(Set(seen) == Set(changes.map(\.id)))
            #expect(seen.last == "a0", "the record changed between pages comes again, later")
            #expect(last.revision == 2)

            // A snapshot in pages: every record once, in id order.
            var records: [String] = []
            var after: String?
            var first: LayerSnapshot?
            repeat {
                let query = after.map { "?epoch=\(first?.epoch ?? "")&after=\($0)" } ?? ""
                let page = try await server.client(.GET, "d", "snapshot\(query)", token: token).json(LayerSnapshot.self)
                first = first ?? page
                records += page.records.map(\.id)
                after = page.next
            } while after != nil
            #expect(records == changes.map(\.id).sorted())

            let forged = try await server.client(.GET, "d", "changes?since=0&after=zz", token: token)
            #expect(forged.status == 400 && forged.errorCode == "invalidRequest")
            let stale = try await server.client(.GET, "d", "snapshot?epoch=0000&after=1.0.61", token: token)
            #expect(stale.status == 409 && stale.errorCode == "resetRequired")
        }
    }

    /// A page cursor belongs to one incarnation of the layer: continuing from the default
    /// layer into the fork taken from it is fine; continuing into a layer created again is not.
    @Test func aPageCursorNeverCrossesIntoAnotherIncarnation() async throws {
        try await TestServer.with(configure: { $0.pageLimits.records = 2 }) { server in
            try await server.upload("d", samplePDF(2_000))
            let bulk = (0..<6).map { #"{"id":"a\#($0)","content":\#(note(String($0)))}"# }
            _ = try await server.api(
                .POST, "/documents/d/annotations", json: #"{"annotations":[\#(bulk.joined(separator: ","))]}"#)
            let token = try await server.token(document: "d", layer: "review")
            let view = try await server.client(.GET, "d", "snapshot", token: token).json(LayerSnapshot.self)
            let first = try await server.client(
                .GET, "d", "changes?since=0&epoch=\(view.epoch)", token: token
            ).json(SyncResponse.self)
            let firstNext = try #require(first.next)
            // The layer is forked by a write: the cursor on the default layer continues in the fork.
            _ = try await server.api(
                .POST, "/documents/d/layers/review/annotations", json: #"{"id":"z","content":\#(note("z"))}"#)
            let second = try await server.client(
                .GET, "d", "changes?since=0&epoch=\(view.epoch)&after=\(firstNext)", token: token)
            #expect(second.status == 200, "\(String(decoding: second.body, as: UTF8.self))")
            let secondNext = try #require(try second.json(SyncResponse.self).next)
            // The fork is deleted: its cursor must not continue in the default layer.
            #expect(try await server.api(.DELETE, "/documents/d/layers/review").status == 204)
            let third = try await server.client(
                .GET, "d", "changes?since=0&epoch=\(view.epoch)&after=\(secondNext)", token: token)
            #expect(third.status == 409 && third.errorCode == "resetRequired")
        }
    }

    /// Query values at their extremes get a clear answer at once, and the server carries on.
    @Test func queryValuesAtTheirExtremes() async throws {
        try await TestServer.with(listenTimeout: 1) { server in
            try await server.upload("d", samplePDF(2_000))
            let token = try await server.token(document: "d")
            let epoch = try await server.client(.GET, "d", "snapshot", token: token).json(LayerSnapshot.self).epoch
            let cases: [(String, Int)] = [
                ("listen?revision=9223372036854775807&epoch=\(epoch)", 409),
                ("listen?revision=99999999999999999999", 400), ("listen?revision=-1", 400),
                ("listen?revision=0&timeout=-1", 400), ("listen?revision=0&timeout=nan", 400),
                ("listen?revision=0&timeout=inf", 400), ("listen?revision=0&timeout=1e308", 200),
                ("listen?revision=0&timeout=0", 200), ("changes?since=-5", 400),
                ("changes?since=9223372036854775807&epoch=\(epoch)", 409),
                ("changes?since=0&after=1.9223372036854775807.ff", 200),
                ("changes?since=0&after=99999999999999999999.0.", 400),
                ("snapshot?after=1.0.\(String(repeating: "ab", count: 5000))", 400),
            ]
            // (A request that hung would fail on the client's 30 s timeout.)
            for (query, status) in cases {
                let reply = try await server.client(.GET, "d", query, token: token)
                #expect(reply.status == status, "\(query): \(reply.status)")
            }
            #expect(try await server.request(.GET, "/i/v1/version").status == 200)
        }
    }

    @Test func aSyncCarriesAtMostTheCap() async throws {
        try await TestServer.with(configure: { $0.maxChangesPerSync = 3 }) { server in
            try await server.upload("d", samplePDF(2_000))
            let token = try await server.token(document: "d")
            let changes = (0..<4).map {
                ClientChange(changeId: Int64($0), kind: .create, id: "a\($0)", content: annotation("\($0)"))
            }
            let over = try await server.client(
                .POST, "d", "sync", token: token,
                body: Data(SyncRequest(clientId: "cap-0123456789abcdef", baseRevision: 0, changes: changes).jsonBytes())
            )
            #expect(over.status == 413 && over.errorCode == "payloadLimitExceeded")
            let snapshot = try await server.client(.GET, "d", "snapshot", token: token).json(LayerSnapshot.self)
            #expect(snapshot.records.isEmpty, "nothing of a refused sync is applied")
        }
    }

    /// A listener parked on a raw connection with `token`, and the answer to the next listen
    /// with it (503 once the cap is reached). On a loaded machine the parked request may not
    /// be in yet when the next one comes (which then takes the place itself), or come in
    /// only after it, once this loop has moved on and closed its connection: that one still
    /// holds the place until the server sees the close, and the refusal is then its, while
    /// the new parked one was refused too. So a refusal counts only while the parked
    /// connection has had no answer for 4 s (a 503 for it can take seconds to come on a
    /// machine running the whole suite); else start over, a few times.
    private func parkedAndRefused(_ server: TestServer, token: String) async throws -> (
        RawConnection, TestServer.Reply
    ) {
        var parked = try RawConnection(server)
        var refused: TestServer.Reply?
        for attempt in 1...8 {
            if attempt > 1 {
                parked.close()
                parked = try RawConnection(server)
            }
            parked.send(
                "GET /i/v1/documents/d/listen?revision=0&timeout=80 HTTP/1.1\r\nHost: x\r\n"
                    + "Authorization: Token token=\"\(token)\"\r\n\r\n")
            try await Task.sleep(for: .milliseconds(300 * attempt))
            refused = try await server.client(.GET, "d", "listen?revision=0&timeout=1", token: token)
            guard refused?.status == 503 else { continue }
            let heard = await parked.readUntilClosed(seconds: 4)
            if heard.data.isEmpty && !heard.closed { break }
        }
        return (parked, try #require(refused))
    }

    /// One token parks at most `maxListenersPerToken` listeners: past that, 503 for it, while
    /// another token still listens on the same layer. (A client listens once per layer; a
    /// token that parks polls it no longer waits for, on connections it left, cannot take
    /// the layer's places.)
    @Test func oneTokenParksAtMostItsShareOfListeners() async throws {
        try await TestServer.with(listenTimeout: 80, configure: { $0.maxListenersPerToken = 1 }) { server in
            try await server.upload("d", samplePDF(2_000))
            let token = try await server.token(document: "d", user: "ana")
            let (parked, refusal) = try await parkedAndRefused(server, token: token)
            defer { parked.close() }
            #expect(refusal.status == 503 && refusal.errorCode == "serverBusy")
            let message = (try? refusal.json(ErrorBody.self))?.error.message ?? ""
            #expect(message.contains("this token"), "\(message)")
            // The same token spelled otherwise (no quotes) is the same token.
            let respelled = try RawConnection(server)
            defer { respelled.close() }
            respelled.send(
                "GET /i/v1/documents/d/listen?revision=0&timeout=1 HTTP/1.1\r\nHost: x\r\n"
                    + "Authorization: Token token=\(token)\r\n\r\n")
            let answer = String(decoding: await respelled.readUntilClosed(seconds: 5).data, as: UTF8.self)
            #expect(answer.hasPrefix("HTTP/1.1 503"), "\(answer.prefix(200))")
            let other = try await server.token(document: "d", user: "bob")
            #expect(try await server.client(.GET, "d", "listen?revision=0&timeout=0.1", token: other).status == 200)
        }
    }

    @Test func listenersPastTheCapGet503AndAClosedConnectionFreesItsPlace() async throws {
        try await TestServer.with(listenTimeout: 80, configure: { $0.maxListenersPerLayer = 1 }) { server in
            try await server.upload("d", samplePDF(2_000))
            let token = try await server.token(document: "d")
            let (parked, refusal) = try await parkedAndRefused(server, token: token)
            #expect(refusal.status == 503 && refusal.errorCode == "serverBusy")
            #expect(refusal.header("Retry-After") == "5")
            // Another layer has room of its own.
            let other = try await server.token(document: "d", layer: "other")
            #expect(try await server.client(.GET, "d", "listen?revision=0&timeout=0.1", token: other).status == 200)

            // The parked client hangs up: its place is free at once, not after its 30 s.
            parked.close()
            // Freed at once: well before the parked request's 30 s (a loaded machine may take
            // a moment to see the hang-up).
            var admitted = try await server.client(.GET, "d", "listen?revision=0&timeout=0.2", token: token)
            let freedBy = ContinuousClock.now + .seconds(10)
            while admitted.status == 503 && ContinuousClock.now < freedBy {
                try await Task.sleep(for: .milliseconds(100))
                admitted = try await server.client(.GET, "d", "listen?revision=0&timeout=0.2", token: token)
            }
            #expect(admitted.status == 200, "\(admitted.status)")
        }
    }

    /// A listen that carries a body (sent slowly, in pieces) is refused at once: parked, its
    /// unread body kept the handler from ever returning, and the connection open. So is one
    /// whose length is past Int's range (read as no body before, and parked).
    @Test(
        .timeLimit(.minutes(2)),
        arguments: ["Content-Length: 8", "Transfer-Encoding: chunked", "Content-Length: 9223372036854775808"])
    func aListenWithABodyIsRefusedNotParked(header: String) async throws {
        try await TestServer.with(listenTimeout: 1) { server in
            try await server.upload("d", samplePDF(2_000))
            let token = try await server.token(document: "d")
            let connection = try RawConnection(server)
            defer { connection.close() }
            connection.send(
                "GET /i/v1/documents/d/listen?revision=0&timeout=1 HTTP/1.1\r\nHost: x\r\n"
                    + "Authorization: Token token=\"\(token)\"\r\nConnection: close\r\n\(header)\r\n\r\n")
            // Eight pieces: more than the body stream below an unread handler takes in.
            let body = Array(repeating: header.hasPrefix("Content-Length") ? "x" : "1\r\nx\r\n", count: 8)
            for piece in body {
                try await Task.sleep(for: .milliseconds(50))
                connection.send(piece)
            }
            let answer = await connection.readUntilClosed(seconds: 5)
            #expect(answer.closed, "answered, and closed as asked")
            let text = String(decoding: answer.data, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 400"), "\(text)")
            #expect(text.contains("invalidRequest"), "\(text)")
        }
    }

    @Test func idleAndStalledConnectionsAreClosed() async throws {
        try await TestServer.with(listenTimeout: 1, configure: { $0.idleTimeout = 2 }) { server in
            let silent = try RawConnection(server)
            defer { silent.close() }
            let stalled = try RawConnection(server)
            defer { stalled.close() }
            stalled.send("POST /api/documents HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")
            async let silentEnd = silent.readUntilClosed(seconds: 15)
            let stalledEnd = await stalled.readUntilClosed(seconds: 15)
            #expect(stalledEnd.closed, "a request that stops sending is cut off")
            #expect(await silentEnd.closed, "a connection that sends nothing is closed")
            // The server carries on.
            #expect(try await server.request(.GET, "/i/v1/version").status == 200)
        }
    }
}
