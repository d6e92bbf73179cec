import Foundation
import Instant
import InstantProtocol
import InstantStore
import ServerTestSupport
import Synchronization
import Testing

@Suite struct SyncCycleTests {
    @Test func downloadEditSyncWithTheDocumentedStatesInOrder() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let client = try h.client()
            let log = await EventLog.recording(client)
            let token = try await h.jwt("doc")
            let descriptor = try client.documentDescriptor(forJWT: token)
            descriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
            // The editable document exists before the download, and refuses CRUD until then.
            #expect(throws: InstantError.self) { try descriptor.editableDocument.add(note("early")) }
            #expect(descriptor.documentState == .unknown)
            try await descriptor.download(usingJWT: token).result()
            #expect(throws: InstantError.self) { try descriptor.download(usingJWT: token) }
            #expect(descriptor.isDownloaded && descriptor.documentState == .clean)
            #expect(descriptor.downloadProgress == nil)

            let added = try descriptor.editableDocument.add(note("hello"))
            #expect(descriptor.documentState == .dirty)
            #expect(try descriptor.readOnlyDocument().annotation(withID: added.id)?.isSynced == false)
            await log.clear()
            try await descriptor.sync().result()
            #expect(descriptor.documentState == .clean)
            try await log.wait("the end of the cycle") {
                $0.contains { if case .didFinishSync = $0 { true } else { false } }
            }
            #expect(
                await log.names == [
                    "didBeginSync", "state(sendingChanges)", "state(receivingChanges)", "state(clean)", "didFinishSync",
                ])
            let onServer = try await h.serverAnnotations("doc")
            #expect(onServer.map(\.id) == [added.id])
            // Unknown keys travel as they are.
            #expect(onServer.first?.content["customData"] == .object(["kept": .bool(true)]))
            #expect(try descriptor.readOnlyDocument().annotation(withID: added.id)?.isSynced == true)
        }
    }

    @Test func invalidContentReadOnlyWritesAndMissingAnnotationsAreClearErrors() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let client = try h.client()
            let descriptor = try await h.downloaded(client, "doc")
            let document = descriptor.editableDocument
            let error = #expect(throws: InstantError.self) { try document.add(.object(["v": .integer(2)])) }
            #expect(error?.code == .invalidJSONStructure)
            // Content nested past what a sync can carry would stop the layer syncing: refused.
            var deep = note("deep")
            guard case .object(var members) = deep else { return }
            var nested = JSONValue.array([])
            for _ in 0..<(InstantJSON.maximumAnnotationDepth - 1) { nested = .array([nested]) }
            members["nested"] = nested
            deep = .object(members)
            let tooDeep = #expect(throws: InstantError.self) { try document.add(deep) }
            #expect(tooDeep?.code == .invalidJSONStructure)
            #expect(tooDeep?.message.contains("nest deeper") == true, "\(String(describing: tooDeep))")
            // More values than a server parses again at every read: refused.
            guard case .object(var big) = note("big") else { return }
            big["points"] = .array(Array(repeating: .integer(1), count: InstantJSON.maximumAnnotationValues))
            let tooBig = #expect(throws: InstantError.self) { try document.add(.object(big)) }
            #expect(tooBig?.code == .invalidJSONStructure && tooBig?.message.contains("split it") == true)
            // A number no JSON text can hold (JSON would carry it as null): refused.
            for number in [Double.nan, .infinity, -.infinity] {
                guard case .object(var members) = note("not finite") else { return }
                members["bbox"] = [0, 0, .double(number), 10]
                members["custom"] = ["x": .double(number)]
                let refused = #expect(throws: InstantError.self) { try document.add(.object(members)) }
                #expect(refused?.code == .invalidJSONStructure && refused?.message.contains("not finite") == true)
            }
            // An id in the content is the annotation's, or the content is refused.
            for change in [
                InstantAnnotationChange.create(id: "a", content: note("x", id: "b")),
                .create(id: "a", content: note("x", id: "A")),
            ] {
                let refused = #expect(throws: InstantError.self) { try document.apply([change]) }
                #expect(refused?.code == .invalidJSONStructure && refused?.message.contains("\"id\"") == true)
            }
            guard case .object(var numbered) = note("numbered") else { return }
            numbered["id"] = 5
            #expect(throws: InstantError.self) { try document.add(.object(numbered)) }
            let readOnly = #expect(throws: InstantError.self) { try descriptor.readOnlyDocument().add(note("x")) }
            #expect(readOnly?.code == .savingDisabled)
            let missing = #expect(throws: InstantError.self) { try document.remove("nope") }
            #expect(missing?.code == .noSuchAnnotation)
            // A batch is all or nothing.
            let batch = #expect(throws: InstantError.self) {
                try document.apply([.create(id: "a", content: note("a")), .delete(id: "nope")])
            }
            #expect(batch?.code == .noSuchAnnotation)
            #expect(try document.annotations().isEmpty)
            #expect(descriptor.documentState == .clean)
        }
    }

    @Test func automaticSyncAfterTheDelayAndListeningClientsConverge() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let clientA = try h.client()
            let a = try await h.downloaded(clientA, "doc", user: "ana")
            let otherRoot = h.root.appendingPathComponent("other")
            let clientB = try h.client(root: otherRoot)
            let logB = await EventLog.recording(clientB)
            let b = try await h.downloaded(clientB, "doc", user: "bob")
            b.startListeningForServerChanges()
            a.delayForSyncingLocalChanges = 0.05
            let added = try a.editableDocument.add(note("from ana"))
            let view = b.readOnlyDocument()
            try await logB.wait("B to receive ana's note") { _ in
                (try? view.annotation(withID: added.id)) != nil
            }
            #expect(try view.annotation(withID: added.id)?.content["text"] == .string("from ana"))
            b.stopListeningForServerChanges()
            #expect(a.documentState == .clean)
        }
    }

    /// Listening stops with the layer (`removeLocalStorage()`), and goes on by itself after
    /// the next download while it is still asked for.
    @Test func listeningGoesOnAfterLocalStorageIsRemovedAndDownloadedAgain() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let clientA = try h.client()
            let a = try await h.downloaded(clientA, "doc", user: "ana")
            let clientB = try h.client(root: h.root.appendingPathComponent("b"))
            let logB = await EventLog.recording(clientB)
            let b = try await h.downloaded(clientB, "doc", user: "bob")
            b.startListeningForServerChanges()
            try b.removeLocalStorage()
            // A change while B's layer is gone: a listen loop begun before the removal
            // ends (one begins only while the layer is stored), reporting nothing.
            try a.editableDocument.add(note("while B has no layer"))
            try await a.sync().result()
            // Past its retry delay (at most 400 ms here) any loop has found the layer gone
            // and ended (were it still running, the test could pass without the fix, never
            // fail with it).
            try await Task.sleep(for: .seconds(1))
            #expect(await logB.names.filter { $0.hasPrefix("didFailSync") }.isEmpty, "no sync was asked for")
            try await b.download(usingJWT: try await h.jwt("doc", user: "bob")).result()
            let added = try a.editableDocument.add(note("after the new download"))
            try await a.sync().result()
            let view = b.readOnlyDocument()
            try await logB.wait("B, listening again, to receive ana's note") { _ in
                (try? view.annotation(withID: added.id)) != nil
            }
            b.stopListeningForServerChanges()
        }
    }

    /// Listening on a descriptor from the store after a restart (no JWT) asks for one, as
    /// the first sync after a launch does (`didFailAuthentication`), and goes on once the
    /// app reauthenticates. (Before, listening ended at once, telling nobody.)
    @Test func listeningWithoutAJWTAsksForOneAndGoesOnAfterReauthentication() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let clientA = try h.client()
            let a = try await h.downloaded(clientA, "doc", user: "ana")
            let rootB = h.root.appendingPathComponent("b")
            do {
                let first = try h.client(root: rootB)
                _ = try await h.downloaded(first, "doc", user: "bob")
            }
            // A restart: B's descriptor comes from the store, without a JWT.
            let clientB = try h.client(root: rootB)
            let logB = await EventLog.recording(clientB)
            let b = try #require(try clientB.localDocumentDescriptors()["doc"]?.first)
            b.startListeningForServerChanges()
            try await logB.wait("the request for a JWT") {
                $0.contains { if case .didFailAuthentication = $0 { true } else { false } }
            }
            b.reauthenticate(withJWT: try await h.jwt("doc", user: "bob"))
            try await logB.wait("the reauthentication and its sync") {
                $0.contains { if case .didFinishReauthentication = $0 { true } else { false } }
                    && $0.contains { if case .didFinishSync = $0 { true } else { false } }
            }
            // Only listening can bring B what A sends now.
            try await Task.sleep(for: .milliseconds(200))
            let added = try a.editableDocument.add(note("from ana"))
            try await a.sync().result()
            let view = b.readOnlyDocument()
            try await logB.wait("B, listening, to receive ana's note") { _ in
                (try? view.annotation(withID: added.id)) != nil
            }
            b.stopListeningForServerChanges()
            #expect(
                await logB.names.filter { $0.hasPrefix("didFailAuthentication") }.count == 1, "asked once")
        }
    }

    @Test func aConflictIsAnEventWithTheLoserAndTheWinner() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let clientA = try h.client()
            let a = try await h.downloaded(clientA, "doc", user: "ana")
            let clientB = try h.client(root: h.root.appendingPathComponent("b"))
            let logB = await EventLog.recording(clientB)
            let b = try await h.downloaded(clientB, "doc", user: "bob")
            try a.editableDocument.add(note("v1", id: "shared"))
            try await a.sync().result()
            try await b.sync().result()
            try a.editableDocument.update("shared", content: note("ana wins"))
            try b.editableDocument.update("shared", content: note("bob loses"))
            try await a.sync().result()
            try await b.sync().result()
            let lost = await logB.lostChanges
            #expect(lost.count == 1)
            #expect(lost.first?.reason == .conflict)
            #expect(lost.first?.lostContent?["text"] == .string("bob loses"))
            #expect(lost.first?.winner?["text"] == .string("ana wins"))
            #expect(try b.editableDocument.annotation(withID: "shared")?.content["text"] == .string("ana wins"))
            #expect(b.documentState == .clean)
        }
    }

    /// The server does not send a client's own accepted changes back (`omitOwnChanges`):
    /// the client makes them the server's state at the sync's revision, and the answer
    /// brings only what others wrote, here a change made after A's base.
    @Test func ownChangesDoNotComeBackAndTakeTheServersRevision() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let clientA = try h.client()
            let a = try await h.downloaded(clientA, "doc", user: "ana")
            let clientB = try h.client(root: h.root.appendingPathComponent("b"))
            let b = try await h.downloaded(clientB, "doc", user: "bob")
            let padding = String(repeating: "x", count: 2_000)
            for index in 0..<100 { try a.editableDocument.add(note("\(padding) \(index)", id: "a\(index)")) }
            try a.editableDocument.remove("a99")
            try b.editableDocument.add(note("from bob", id: "b0"))
            try await b.sync().result()
            let before = h.proxy.bytesFromServer
            try await a.sync().result()
            let moved = h.proxy.bytesFromServer - before
            #expect(moved < 20_000, "A's 200 KB of annotations do not come back: \(moved) bytes came")
            #expect(try a.editableDocument.annotation(withID: "b0")?.content["text"] == .string("from bob"))
            #expect(a.documentState == .clean)

            let onServer = try await h.serverAnnotations("doc")
            #expect(onServer.count == 100 && !onServer.contains { $0.id == "a99" })
            let store = try InstantStore(root: h.root)
            defer { store.close() }
            let layer = try store.openLayer(tenant: TenantURL(h.proxy.url.absoluteString), document: "doc", layer: "")
            defer { layer.close() }
            let local = try layer.annotations()
            #expect(local.map(\.id).sorted() == onServer.map(\.id).sorted())
            #expect(try layer.metadata().lastServerRevision == 2)
            #expect(local.allSatisfy { $0.serverRevision == ($0.id == "b0" ? 1 : 2) }, "the server's revisions")
            for record in local {
                let server = try #require(onServer.first { $0.id == record.id })
                #expect(try JSONValue.parse(record.content) == server.content)
            }
        }
    }

    /// A retry carrying a replayed change (its first answer lost) and a fresh one: the
    /// replayed record comes back as it is now (another writer changed it meanwhile), the
    /// fresh one is the client's own at the sync's revision.
    @Test func aRetryWithReplayedAndFreshChangesEndsAsTheServerHasIt() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let clientA = try h.client()
            clientA.retryPolicy = RetryPolicy(initialDelay: .seconds(60), maximumDelay: .seconds(60))
            let a = try await h.downloaded(clientA, "doc", user: "ana")
            let clientB = try h.client(root: h.root.appendingPathComponent("b"))
            let b = try await h.downloaded(clientB, "doc", user: "bob")
            try a.editableDocument.add(note("first", id: "n1"))
            h.proxy.loseNextResponse(to: "POST /i/v1/documents/doc/sync", times: 2)
            #expect(await failure(of: a.sync())?.code == .requestFailed)
            try await b.sync().result()
            try b.editableDocument.update("n1", content: note("bob's"))
            try await b.sync().result()
            try a.editableDocument.add(note("second", id: "n2"))
            try await a.sync().result()

            #expect(a.documentState == .clean)
            #expect(try a.editableDocument.annotation(withID: "n1")?.content["text"] == .string("bob's"))
            let onServer = try await h.serverAnnotations("doc")
            let store = try InstantStore(root: h.root)
            defer { store.close() }
            let layer = try store.openLayer(tenant: TenantURL(h.proxy.url.absoluteString), document: "doc", layer: "")
            defer { layer.close() }
            let local = try layer.annotations()
            #expect(local.map(\.id).sorted() == ["n1", "n2"] && onServer.map(\.id).sorted() == ["n1", "n2"])
            for record in local {
                let server = try #require(onServer.first { $0.id == record.id })
                #expect(try JSONValue.parse(record.content) == server.content, "\(record.id)")
            }
            // Revisions: ana's n1 (1), bob's update (2), ana's n2 (3).
            #expect(local.first { $0.id == "n2" }?.serverRevision == 3)
            #expect(local.first { $0.id == "n1" }?.serverRevision == 2)
            #expect(try layer.pendingChangeCount() == 0)
        }
    }

    /// Ana's create is applied but its answer is lost; Bob deletes the note; Ana comes
    /// back after the server's 7-day verdict window. Her create, decided afresh, loses to
    /// Bob's deletion (reported, winner none) instead of bringing the note back; her other
    /// create, of a note nobody touched, is hers and is not reported lost.
    @Test func aCreateSentAgainPastTheVerdictWindowLosesToADeletionMeanwhile() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let clientA = try h.client()
            clientA.retryPolicy = RetryPolicy(initialDelay: .seconds(60), maximumDelay: .seconds(60))
            let log = await EventLog.recording(clientA)
            let a = try await h.downloaded(clientA, "doc", user: "ana")
            let clientB = try h.client(root: h.root.appendingPathComponent("b"))
            let b = try await h.downloaded(clientB, "doc", user: "bob")
            try a.editableDocument.add(note("ana's", id: "n1"))
            try a.editableDocument.add(note("untouched", id: "n2"))
            h.proxy.loseNextResponse(to: "POST /i/v1/documents/doc/sync", times: 2)
            #expect(await failure(of: a.sync())?.code == .requestFailed)
            try await b.sync().result()
            try b.editableDocument.remove("n1")
            try await b.sync().result()
            try h.server.ageVerdicts(byDays: 8)

            try await a.sync().result()
            #expect(try await h.serverAnnotations("doc").map(\.id) == ["n2"], "n1 stays deleted")
            #expect(try a.editableDocument.annotation(withID: "n1") == nil)
            #expect(try a.editableDocument.annotation(withID: "n2")?.content["text"] == .string("untouched"))
            #expect(a.documentState == .clean)
            let lost = await log.lostChanges
            #expect(lost.map(\.annotationID) == ["n1"] && lost.first?.reason == .conflict)
            #expect(lost.first?.winner == nil && lost.first?.lostContent?["text"] == .string("ana's"))
        }
    }

    @Test func aLostResponseIsSentAgainAndAppliedOnce() async throws {
        try await ClientHarness.with { h in
            let (_, log, a) = try await h.downloadedDoc()
            try a.editableDocument.add(note("once", id: "n1"))
            try a.editableDocument.update("n1", content: note("twice"))
            h.proxy.loseNextResponse(to: "POST /i/v1/documents/doc/sync", times: 2)
            // The first cycle fails (no answer); the retry sends the same changes again.
            #expect(await failure(of: a.sync())?.code == .requestFailed)
            #expect(h.proxy.responsesLost == 2)
            try await log.wait("the retry to finish") {
                $0.contains { if case .didFinishSync = $0 { true } else { false } }
            }
            let onServer = try await h.serverAnnotations("doc")
            #expect(onServer.count == 1)
            #expect(onServer.first?.content["text"] == .string("twice"))
            #expect(await !log.names.contains { $0.hasPrefix("didLoseChange") })
            #expect(a.documentState == .clean)
        }
    }

    @Test func offlineEditsAreKeptAndSyncedWhenTheServerAnswersAgain() async throws {
        try await ClientHarness.with { h in
            let (_, log, a) = try await h.downloadedDoc()
            h.proxy.setRefusing(true)
            try a.editableDocument.add(note("offline", id: "o1"))
            a.sync()
            try await log.wait("two failed attempts") {
                $0.filter { if case .didFailSync(_, let e) = $0 { e.code == .requestFailed } else { false } }.count >= 2
            }
            #expect(a.documentState == .dirty)
            h.proxy.setRefusing(false)
            try await log.wait("a retry to succeed") {
                $0.contains { if case .didFinishSync = $0 { true } else { false } }
            }
            #expect(try await h.serverAnnotations("doc").map(\.id) == ["o1"])
        }
    }

    /// A lost change a killed process left untold needs no server to be told: after a
    /// restart, the first sync tells it before it fails for want of a JWT, and once.
    @Test func aLostChangeLeftUntoldIsToldAfterARestartBeforeAnyJWT() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let first = try h.client()
            _ = try await h.downloaded(first, "doc")
            // What a process killed after the verdict's transaction leaves behind.
            let store = try InstantStore(root: h.root)
            let layer = try store.openLayer(tenant: TenantURL(h.proxy.url.absoluteString), document: "doc", layer: "")
            try layer.create(id: "n", content: note("mine").jsonData())
            let change = try #require(try layer.pendingChanges().last)
            try layer.applyServerChanges(
                [], newRevision: nil, acknowledgedThrough: change.sequence,
                losing: [
                    LostChangeReport(change, reason: "conflict", message: "changed", winner: note("theirs").jsonData())
                ])
            layer.close()
            store.close()

            let client = try h.client()
            let log = await EventLog.recording(client)
            let descriptor = try #require(client.localDocumentDescriptors()["doc"]?.first)
            #expect(descriptor.documentState == .dirty, "a lost change waits to be told")
            _ = try descriptor.editableDocument.annotations()  // its layer open: the same answer
            #expect(descriptor.documentState == .dirty)
            #expect(await failure(of: descriptor.sync())?.code == .accessDenied)
            try await log.wait("the authentication failure") {
                $0.contains { if case .didFailAuthentication = $0 { true } else { false } }
            }
            #expect(descriptor.documentState == .clean, "told")
            let lost = await log.lostChanges
            #expect(lost.map(\.annotationID) == ["n"] && lost.first?.reason == .conflict)
            #expect(lost.first?.lostContent?["text"] == .string("mine"))
            #expect(lost.first?.winner?["text"] == .string("theirs"))
            #expect(await failure(of: descriptor.sync())?.code == .accessDenied)
            try await log.wait("the second failure") {
                $0.filter { if case .didFailAuthentication = $0 { true } else { false } }.count == 2
            }
            #expect(await log.lostChanges.count == 1, "told once")
        }
    }

    /// Changes made while a JWT is awaited, after a `stopSyncing(false)`, are sent once the
    /// reauthentication succeeds, even when the sync it ends with fails (the stop, asked
    /// for after that sync, keeps it from being retried): they set a timer of their own.
    @Test func changesMadeWhileAJWTIsAwaitedAreSentAfterReauthentication() async throws {
        try await ClientHarness.with { h in
            // After a restart: no JWT; the first sync asks for one.
            let (_, log, descriptor) = try await h.restartedDoc()
            descriptor.delayForSyncingLocalChanges = 0.2
            #expect(await failure(of: descriptor.sync())?.code == .accessDenied)
            // The reauthentication's check waits at the proxy meanwhile.
            h.proxy.holdNextRequest(to: "GET /i/v1/documents/doc/listen")
            descriptor.reauthenticate(withJWT: try await h.jwt("doc"))
            while h.proxy.requestsHeld == 0 { try await Task.sleep(for: .milliseconds(5)) }
            descriptor.stopSyncing(false)
            try await Task.sleep(for: .milliseconds(50))
            try descriptor.editableDocument.add(note("made while the JWT was awaited", id: "w"))
            h.proxy.answerNextRequest(to: "POST /i/v1/documents/doc/sync", status: "503 Service Unavailable")
            h.proxy.releaseHeldRequest()
            try await log.wait("the reauthentication") {
                $0.contains { if case .didFinishReauthentication = $0 { true } else { false } }
            }
            for _ in 0..<500 where try await h.serverAnnotations("doc").isEmpty {
                try await Task.sleep(for: .milliseconds(10))
            }
            let names = await log.names
            #expect(try await h.serverAnnotations("doc").map(\.id) == ["w"], "\(names)")
        }
    }

    @Test func anAuthenticationFailureWaitsForReauthentication() async throws {
        try await ClientHarness.with { h in
            // After a restart: the descriptor comes from the store, without a JWT.
            let (_, log, descriptor) = try await h.restartedDoc()
            descriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
            try descriptor.editableDocument.add(note("kept", id: "k"))
            #expect(await failure(of: descriptor.sync())?.code == .accessDenied)
            try await log.wait("the authentication failure") {
                $0.contains { if case .didFailAuthentication = $0 { true } else { false } }
            }
            #expect(descriptor.documentState == .dirty)
            // A JWT for another document is refused; the right one works and starts a sync.
            descriptor.reauthenticate(withJWT: try await h.jwt("other"))
            try await log.wait("the refusal") {
                $0.contains { if case .didFailReauthentication = $0 { true } else { false } }
            }
            descriptor.reauthenticate(withJWT: try await h.jwt("doc"))
            try await log.wait("reauthentication and a sync") {
                $0.contains { if case .didFinishReauthentication = $0 { true } else { false } }
                    && $0.contains { if case .didFinishSync = $0 { true } else { false } }
            }
            #expect(try await h.serverAnnotations("doc").map(\.id) == ["k"])
        }
    }

    /// A JWT given while a cycle runs goes out from the cycle's next round on (the old one
    /// may have expired meanwhile), not only in a later cycle.
    @Test func aJWTGivenDuringACycleIsUsedByItsNextRound() async throws {
        try await ClientHarness.with { h in
            let (_, log, descriptor) = try await h.downloadedDoc()
            try descriptor.editableDocument.add(note("first", id: "a"))
            let (running, sync) = try await syncHeldAtTheProxy(h, descriptor)
            // Made while the first round's request is out: the cycle goes round again.
            try descriptor.editableDocument.add(note("second", id: "b"))
            let renewed = try await reauthenticated(descriptor, h, log)
            h.proxy.releaseHeldRequest()
            try await running.result()
            let syncs = h.proxy.requestHeads.filter { $0.hasPrefix(sync) }
            #expect(syncs.count >= 2)
            #expect(syncs.dropFirst().allSatisfy { $0.contains(renewed) }, "\(syncs.map { $0.prefix(60) })")
            #expect(try await h.serverAnnotations("doc").map(\.id) == ["a", "b"])
        }
    }

    /// The old JWT refused in a round that went out before a new one was given: the cycle
    /// goes again with the new one by itself, rather than leave the changes waiting for
    /// the next edit.
    @Test func aRefusalOfTheJWTReplacedMeanwhileIsRetriedWithTheNewOne() async throws {
        try await ClientHarness.with { h in
            let (_, log, descriptor) = try await h.downloadedDoc()
            try descriptor.editableDocument.add(note("kept", id: "k"))
            let (running, sync) = try await syncHeldAtTheProxy(h, descriptor)
            _ = try await reauthenticated(descriptor, h, log)
            // The held request, sent with the old JWT, is refused as expired.
            h.proxy.answerNextRequest(
                to: sync, status: "403 Forbidden",
                body: #"{"error": {"code": "tokenExpired", "message": "the token expired"}}"#,
                contentType: "application/json")
            h.proxy.releaseHeldRequest()
            #expect(await failure(of: running)?.code == .accessDenied)
            try await waitUntilClean(descriptor)
            #expect(try await h.serverAnnotations("doc").map(\.id) == ["k"])
            #expect(await !log.events.contains { if case .didFailAuthentication = $0 { true } else { false } })
        }
    }

    /// stopSyncing(false) lets the request in flight finish; if it then fails, no retry
    /// fires by itself (the next sync, or the next local change's, sends the changes). A
    /// sync asked for after the stop, while that cycle still runs, joins it: then the
    /// retry it is owed fires.
    @Test(arguments: [false, true])
    func aCycleRunningAtAStopSetsNoRetryUnlessAskedForSince(syncAskedAfterTheStop: Bool) async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let client = try h.client()
            let descriptor = try await h.downloaded(client, "doc")
            try descriptor.editableDocument.add(note("kept", id: "k"))
            let (running, sync) = try await syncHeldAtTheProxy(h, descriptor)
            descriptor.stopSyncing(false)
            try await Task.sleep(for: .milliseconds(50))
            let joined = syncAskedAfterTheStop ? descriptor.sync() : nil
            try await Task.sleep(for: .milliseconds(50))
            h.proxy.answerNextRequest(to: sync, status: "503 Service Unavailable")
            h.proxy.releaseHeldRequest()
            #expect(await failure(of: running)?.code == .requestFailed)
            if let joined {
                #expect(await failure(of: joined)?.code == .requestFailed)
                try await waitUntilClean(descriptor)
            } else {
                // The harness's retries wait 50–400 ms: none may come.
                try await Task.sleep(for: .seconds(1.5))
                #expect(h.proxy.requestHeads.filter { $0.hasPrefix(sync) }.count == 1)
                #expect(descriptor.documentState == .dirty)
                try await descriptor.sync().result()
            }
            #expect(try await h.serverAnnotations("doc").map(\.id) == ["k"])
        }
    }

    /// `stopSyncing(true)` then `sync()`, one right after the other: the stop acts first
    /// (the request in flight is cancelled), and the sync runs a cycle of its own that sends
    /// the changes, rather than joining the cancelled one or being cancelled by a stop whose
    /// task happened to run after it.
    /// A cycle that ends in another state than the one the app last heard tells it, also
    /// when it never got to send: told `clean`, then an edit, then a cycle stopped while it
    /// waits for another process's sync of the layer ends `dirty`, and says so.
    @Test func aCycleStoppedBeforeItSentTellsAStateTheAppHasNotHeard() async throws {
        try await ClientHarness.with { h in
            let (_, log, descriptor) = try await h.downloadedDoc()
            try descriptor.editableDocument.add(note("first"))
            try await descriptor.sync().result()
            #expect(await log.names.suffix(2) == ["state(clean)", "didFinishSync"])
            // Another process syncs the layer: it holds the layer's sync lock.
            let other = try InstantStore(root: h.root)
            defer { other.close() }
            let layer = try other.openLayer(tenant: TenantURL(h.proxy.url.absoluteString), document: "doc", layer: "")
            defer { layer.close() }
            let lock = try #require(try other.trySyncLock(layer))
            defer { lock.release() }
            try descriptor.editableDocument.add(note("second"))
            await log.clear()
            let cycle = descriptor.sync()
            try await log.wait(for: "didBeginSync")
            descriptor.stopSyncing(true)
            await #expect(throws: InstantError.self) { try await cycle.result() }
            try await log.wait(for: "didFailSync")
            let names = await log.names
            #expect(names.contains("state(dirty)"), "\(names)")
            #expect(descriptor.documentState == .dirty)
        }
    }

    @Test func aSyncAskedRightAfterACancellingStopRunsAfterIt() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let client = try h.client()
            let descriptor = try await h.downloaded(client, "doc")
            try descriptor.editableDocument.add(note("kept", id: "k"))
            let (running, _) = try await syncHeldAtTheProxy(h, descriptor)
            descriptor.stopSyncing(true)
            let after = descriptor.sync()
            #expect(await failure(of: running) != nil, "the cycle in flight was cancelled")
            h.proxy.releaseHeldRequest()
            #expect(await failure(of: after) == nil)
            #expect(try await h.serverAnnotations("doc").map(\.id) == ["k"])
            #expect(descriptor.documentState == .clean)

            // With no cycle running, the same two calls: the sync is never cancelled.
            for round in 0..<5 {
                try descriptor.editableDocument.add(note("more", id: "m\(round)"))
                descriptor.stopSyncing(true)
                #expect(await failure(of: descriptor.sync()) == nil, "round \(round)")
            }
            #expect(try await h.serverAnnotations("doc").count == 6)

            // A cancelling stop asked for after a sync withdraws it, even when the sync waits
            // for a cancelled cycle to end, or its task runs after the stop's.
            try descriptor.editableDocument.add(note("held back", id: "late"))
            let (held, sync) = try await syncHeldAtTheProxy(h, descriptor)
            let syncsSent = { h.proxy.requestHeads.filter { $0.hasPrefix(sync) }.count }
            let sentBeforeTheStop = syncsSent()
            descriptor.stopSyncing(true)
            let withdrawn = descriptor.sync()
            descriptor.stopSyncing(true)
            #expect(await failure(of: held) != nil)
            // The request in flight at the stop goes on to the server (as a cancelled
            // request may have): it is applied, once.
            h.proxy.releaseHeldRequest()
            #expect(await failure(of: withdrawn) != nil, "withdrawn by the stop asked for after it")
            try await Task.sleep(for: .milliseconds(300))
            #expect(syncsSent() == sentBeforeTheStop, "nothing sent after the stop")
            #expect(await failure(of: descriptor.sync()) == nil)
            #expect(try await h.serverAnnotations("doc").count == 7)
        }
    }

    /// A reauthentication asked for while one runs is refused with `alreadyAuthenticating`,
    /// told off the caller's thread: a handler that asks again from the refusal's own call
    /// does not recurse into itself.
    @Test func aSecondReauthenticationIsRefusedOffTheCallersThread() async throws {
        try await ClientHarness.with { h in
            let (_, log, descriptor) = try await h.downloadedDoc()
            let token = try await h.jwt("doc")
            let depth = Mutex((now: 0, deepest: 0, asked: 0))
            let observer = NotificationCenter.default.addObserver(
                forName: .PSPDFInstantDidFailReauthentication, object: descriptor, queue: nil
            ) { note in
                guard (note.userInfo?[InstantNotificationKey.error] as? InstantError)?.code == .alreadyAuthenticating
                else { return }
                let again = depth.withLock { d -> Bool in
                    d.now += 1
                    d.deepest = max(d.deepest, d.now)
                    d.asked += 1
                    return d.asked < 3
                }
                if again { descriptor.reauthenticate(withJWT: token) }
                depth.withLock { $0.now -= 1 }
            }
            defer { NotificationCenter.default.removeObserver(observer) }
            // The first one's check waits at the proxy while the others are asked for.
            h.proxy.holdNextRequest(to: "GET /i/v1/documents/doc/listen")
            descriptor.reauthenticate(withJWT: token)
            while h.proxy.requestsHeld == 0 { try await Task.sleep(for: .milliseconds(5)) }
            descriptor.reauthenticate(withJWT: token)
            try await log.wait("three refusals") {
                $0.filter {
                    if case .didFailReauthentication(_, let e) = $0 { e.code == .alreadyAuthenticating } else { false }
                }.count == 3
            }
            #expect(depth.withLock { $0.deepest } == 1, "each refusal told outside the call that asked")
            // One more, asked for right before the running one ends: told before its outcome.
            descriptor.reauthenticate(withJWT: token)
            h.proxy.releaseHeldRequest()
            try await log.wait("the first one's success") {
                $0.contains { if case .didFinishReauthentication = $0 { true } else { false } }
            }
            let names = await log.names
            let finished = try #require(names.firstIndex { $0.hasPrefix("didFinishReauthentication") })
            let refusals = names.indices.filter { names[$0].hasPrefix("didFailReauthentication") }
            #expect(refusals.count == 4 && refusals.allSatisfy { $0 < finished }, "\(names)")
        }
    }

    /// A sync answered by somebody else's page (a captive portal's sign-in, twice) is an
    /// outage: retried with backoff until the server answers, with no new edit or call
    /// needed. (Before, it was `invalidServerData`, never retried.) An answer of the
    /// server's type that makes no sense is still not retried.
    @Test func aSyncAnsweredByACaptivePortalIsRetried() async throws {
        try await ClientHarness.with { h in
            let (_, log, descriptor) = try await h.downloadedDoc()
            descriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
            try descriptor.editableDocument.add(note("behind the portal", id: "p"))
            h.proxy.answerNextRequest(
                to: "POST /i/v1/documents/doc/sync", status: "200 OK", body: "<html>sign in</html>",
                contentType: "text/html", times: 2)
            let first = await failure(of: descriptor.sync())
            #expect(first?.code == .requestFailed)
            #expect(first?.message.contains("captive portal") == true, "\(String(describing: first))")
            try await log.wait("the retry's success") {
                $0.contains { if case .didFinishSync = $0 { true } else { false } }
            }
            #expect(try await h.serverAnnotations("doc").map(\.id) == ["p"])

            try descriptor.editableDocument.add(note("nonsense", id: "n"))
            h.proxy.answerNextRequest(
                to: "POST /i/v1/documents/doc/sync", status: "200 OK", body: #"{"unexpected": true}"#,
                contentType: "application/json")
            #expect(await failure(of: descriptor.sync())?.code == .invalidServerData)
            try await Task.sleep(for: .seconds(1))
            #expect(try await h.serverAnnotations("doc").count == 1, "not retried")
        }
    }

    /// A removal during a sync: the descriptor reads `unknown` at once, also while the
    /// cycle still runs (the layer removed by another process, whose cycle state this
    /// process kept: before, it read `sendingChanges` until the cycle ended), and when
    /// `removeLocalStorage()` returns.
    @Test func aRemovalDuringASyncReadsUnknownAtOnce() async throws {
        try await ClientHarness.with { h in
            let (_, _, descriptor) = try await h.downloadedDoc()
            descriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
            try descriptor.editableDocument.add(note("going", id: "g"))
            let (running, _) = try await syncHeldAtTheProxy(h, descriptor)
            #expect(descriptor.documentState == .sendingChanges)
            let other = try InstantStore(root: h.root)
            defer { other.close() }
            try other.removeLayer(tenant: TenantURL(h.proxy.url.absoluteString), document: "doc", layer: "")
            #expect(descriptor.documentState == .unknown)
            h.proxy.releaseHeldRequest()
            _ = await failure(of: running)
            #expect(descriptor.documentState == .unknown)

            try await descriptor.download(usingJWT: try await h.jwt("doc")).result()
            try descriptor.editableDocument.add(note("going again", id: "h"))
            let (again, _) = try await syncHeldAtTheProxy(h, descriptor)
            try descriptor.removeLocalStorage()
            #expect(descriptor.documentState == .unknown)
            h.proxy.releaseHeldRequest()
            _ = await failure(of: again)
            #expect(descriptor.documentState == .unknown)
        }
    }

    /// `stopSyncing(false)` while a round is out: that round finishes, and the cycle sends
    /// nothing more (before, it went on round after round while changes were left); the
    /// changes left wait for the next sync.
    @Test func stopSyncingWithoutCancellingLetsTheRoundFinishAndSendsNoOther() async throws {
        try await ClientHarness.with { h in
            let (_, _, descriptor) = try await h.downloadedDoc()
            descriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
            try descriptor.editableDocument.add(note("first", id: "1"))
            let (running, _) = try await syncHeldAtTheProxy(h, descriptor)
            try descriptor.editableDocument.add(note("second", id: "2"))
            descriptor.stopSyncing(false)
            try await Task.sleep(for: .milliseconds(100))
            h.proxy.releaseHeldRequest()
            let stopped = await failure(of: running)
            #expect(stopped?.code == .requestFailed, "\(String(describing: stopped))")
            try await Task.sleep(for: .seconds(1))
            #expect(try await h.serverAnnotations("doc").map(\.id) == ["1"], "the round out finished, no other")
            #expect(descriptor.documentState == .dirty)
            #expect(await failure(of: descriptor.sync()) == nil)
            #expect(try await h.serverAnnotations("doc").count == 2)
        }
    }

    /// The same with syncing after changes on: an edit right before the stop (its hop to
    /// the engine may come after the stop's) joins the cycle, and the stop still ends it
    /// after the round out.
    @Test func aStopRightAfterAnEditStillEndsTheCycleAfterItsRound() async throws {
        try await ClientHarness.with { h in
            let (_, log, descriptor) = try await h.downloadedDoc()
            descriptor.delayForSyncingLocalChanges = 0.05
            // The timer's cycle, held at the proxy; no timer is set while it runs.
            h.proxy.holdNextRequest(to: "POST /i/v1/documents/doc/sync")
            try descriptor.editableDocument.add(note("first", id: "1"))
            while h.proxy.requestsHeld == 0 { try await Task.sleep(for: .milliseconds(5)) }
            try descriptor.editableDocument.add(note("second", id: "2"))
            descriptor.stopSyncing(false)
            try await Task.sleep(for: .milliseconds(100))
            h.proxy.releaseHeldRequest()
            try await log.wait(for: "didFailSync")
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await h.serverAnnotations("doc").map(\.id) == ["1"], "the round out finished, no other")
            #expect(descriptor.documentState == .dirty)
        }
    }

    /// Cancelling the operation `sync()` returned stops the cycle, as `stopSyncing(true)`
    /// does (before, the wait was cancelled and the cycle went on): what `instantctl sync
    /// --timeout` relies on against a server that never answers.
    @Test func cancellingASyncsOperationStopsItsCycle() async throws {
        try await ClientHarness.with { h in
            let (_, log, descriptor) = try await h.downloadedDoc()
            descriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
            try descriptor.editableDocument.add(note("kept", id: "k"))
            let (running, _) = try await syncHeldAtTheProxy(h, descriptor)
            // Another call joined the same cycle: it ends with it.
            let joined = descriptor.sync()
            let clock = ContinuousClock()
            let cancelled = clock.now
            running.cancel()
            #expect(await failure(of: running)?.code == .requestFailed)
            #expect(clock.now - cancelled < .seconds(10), "ended by the cancellation, not the request's timeout")
            #expect(await failure(of: joined) != nil, "the joined call ends with the cancelled cycle")
            try await log.wait(for: "didFailSync")
            #expect(descriptor.documentState == .dirty)
            h.proxy.releaseHeldRequest()
            // Sent again by the next sync, applied once.
            #expect(await failure(of: descriptor.sync()) == nil)
            #expect(try await h.serverAnnotations("doc").map(\.id) == ["k"])
            #expect(descriptor.documentState == .clean)
            // Cancelled after it ended: nothing happens to later syncing.
            let done = descriptor.sync()
            #expect(await failure(of: done) == nil)
            done.cancel()
            try descriptor.editableDocument.add(note("later", id: "l"))
            #expect(await failure(of: descriptor.sync()) == nil)
            #expect(try await h.serverAnnotations("doc").count == 2)
        }
    }

    @Test func anExpiredJWTIsAnAuthenticationFailureNotRetried() async throws {
        try await ClientHarness.with { h in
            let (_, log, descriptor) = try await h.downloadedDoc()
            descriptor.reauthenticate(withJWT: try await h.jwt("doc", expiresIn: -3600))
            try await log.wait("the refused token") {
                $0.contains {
                    if case .didFailReauthentication(_, let e) = $0 { e.code == .accessDenied } else { false }
                }
            }
            // The old token still works: the refused one was not taken.
            try await descriptor.sync().result()
        }
    }

    /// After an authentication failure, the app removes the layer and downloads it again
    /// with a new JWT (what Nutrient's guide advises on losing access): the server took
    /// that JWT, so syncing by itself goes on (an edit is sent after the delay) without a
    /// call to `reauthenticate`.
    @Test func aDownloadAfterAnAuthenticationFailureLetsSyncingGoOn() async throws {
        try await ClientHarness.with { h in
            let (_, log, descriptor) = try await h.downloadedDoc()
            h.proxy.answerNextRequest(
                to: "POST /i/v1/documents/doc/sync", status: "403 Forbidden",
                body: #"{"error": {"code": "tokenExpired", "message": "the token expired"}}"#,
                contentType: "application/json")
            try descriptor.editableDocument.add(note("refused", id: "r"))
            #expect(await failure(of: descriptor.sync())?.code == .accessDenied)
            try await log.wait(for: "didFailAuthentication")
            try descriptor.removeLocalStorage()
            try await descriptor.download(usingJWT: try await h.jwt("doc")).result()
            descriptor.delayForSyncingLocalChanges = 0.05
            try descriptor.editableDocument.add(note("after the new download", id: "n"))
            try await log.wait(for: "didFinishSync")
            #expect(try await h.serverAnnotations("doc").map(\.id) == ["n"])
        }
    }

    /// The sync that follows a reauthentication is refused (here by the proxy): the app,
    /// told `didFailAuthentication`, may reauthenticate again at once, from its handler.
    @Test func aReauthenticationFromTheHandlerOfTheFollowingSyncsRefusalIsTaken() async throws {
        try await ClientHarness.with { h in
            let (client, log, descriptor) = try await h.downloadedDoc()
            let handler = ReauthenticatingDelegate(token: try await h.jwt("doc"), onFailure: 2)
            client.delegate = handler
            try descriptor.editableDocument.add(note("kept", id: "k"))
            let refusal = #"{"error": {"code": "tokenExpired", "message": "the token expired"}}"#
            h.proxy.answerNextRequest(
                to: "POST /i/v1/documents/doc/sync", status: "403 Forbidden", body: refusal,
                contentType: "application/json", times: 2)
            #expect(await failure(of: descriptor.sync())?.code == .accessDenied)
            descriptor.reauthenticate(withJWT: try await h.jwt("doc"))
            try await log.wait("the second reauthentication and its sync") {
                $0.filter { if case .didFinishReauthentication = $0 { true } else { false } }.count == 2
                    && $0.contains { if case .didFinishSync = $0 { true } else { false } }
            }
            #expect(await log.names.filter { $0.hasPrefix("didFailReauthentication") }.isEmpty)
            #expect(try await h.serverAnnotations("doc").map(\.id) == ["k"])
            withExtendedLifetime(handler) {}
        }
    }

    /// A policy's waits never overflow, whatever the attempt or the delays given.
    @Test func retryDelaysStayInRange() {
        let huge = RetryPolicy(initialDelay: .seconds(Int64.max), maximumDelay: .seconds(Int64.max))
        for attempt in [Int.min, -1, 0, 1, 2, 31, 64, Int.max] {
            #expect(huge.delay(attempt: attempt) <= .seconds(365 * 86_400))
            #expect(RetryPolicy().delay(attempt: attempt, retryAfter: Int.max) == .seconds(3600))
            #expect(RetryPolicy().delay(attempt: attempt, retryAfter: Int.min) <= .seconds(60))
        }
        let negative = RetryPolicy(initialDelay: .seconds(-5), maximumDelay: .seconds(-1))
        #expect(negative.delay(attempt: 3) == .zero)
    }
}

@Suite struct DocumentLiteralTests {
    @Test func literalsBuildTheSameJSON() {
        let written: JSONValue = ["v": 2, "type": "pspdfkit/note", "bbox": [1, 2.5], "on": true, "none": nil]
        #expect(
            written
                == .object([
                    "v": .integer(2), "type": .string("pspdfkit/note"), "bbox": .array([.integer(1), .double(2.5)]),
                    "on": .bool(true), "none": .null,
                ]))
    }
}

@Suite struct RejectedChangeTests {
    @Test func aChangeWithoutWritePermissionIsLostAndTheRecordRestored() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let client = try h.client()
            let log = await EventLog.recording(client)
            let token = try await h.server.token(
                document: "doc", user: "reader", permissions: ["read-document", "download"])
            let descriptor = try client.documentDescriptor(forJWT: token)
            descriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
            try await descriptor.download(usingJWT: token).result()
            try descriptor.editableDocument.add(note("not allowed", id: "r1"))
            try await descriptor.sync().result()
            let lost = await log.lostChanges
            #expect(lost.map(\.reason) == [.permissionDenied])
            #expect(lost.first?.winner == nil)
            // The local copy is the server's again: the refused note is gone.
            #expect(try descriptor.editableDocument.annotations().isEmpty)
            #expect(descriptor.documentState == .clean)
        }
    }

    /// The refused change's id and one the answer brings back are two spellings Swift
    /// calls equal (canonically equivalent Unicode): two records, so the refused one is
    /// still restored from a snapshot.
    @Test func aRefusedChangeIsRestoredAlsoWhenTheAnswerBringsAnotherSpellingOfItsID() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let client = try h.client()
            let token = try await h.server.token(
                document: "doc", user: "reader", permissions: ["read-document", "download"])
            let descriptor = try client.documentDescriptor(forJWT: token)
            descriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
            try await descriptor.download(usingJWT: token).result()
            let (composed, decomposed) = ("caf\u{E9}", "cafe\u{301}")
            try descriptor.editableDocument.add(note("not allowed", id: decomposed))
            // Another writer creates the other spelling after the reader's base.
            let writer = try await h.server.token(document: "doc", user: "writer")
            _ = try await h.server.sync(
                "doc", token: writer,
                SyncRequest(
                    clientId: "writer-0123456789abcdef", baseRevision: 0,
                    changes: [ClientChange(changeId: 1, kind: .create, id: composed, content: note("theirs"))]))
            try await descriptor.sync().result()
            let shown = try descriptor.editableDocument.annotations().map { Array($0.id.utf8) }
            #expect(shown == [Array(composed.utf8)], "the refused note must be gone")
            #expect(descriptor.documentState == .clean)
        }
    }

    @Test func aChangeLargerThanTheServerTakesDoesNotBlockLaterOnes() async throws {
        try await ClientHarness.with { h in
            let (_, log, descriptor) = try await h.downloadedDoc()
            // The test server takes JSON bodies of up to 1 MiB.
            try descriptor.editableDocument.add(note(String(repeating: "x", count: 2 << 20), id: "huge"))
            try descriptor.editableDocument.add(note("small", id: "small"))
            try await descriptor.sync().result()
            try await descriptor.sync().result()
            let lost = await log.lostChanges
            #expect(lost.map(\.annotationID) == ["huge"])
            #expect(lost.first?.reason == .payloadLimitExceeded)
            #expect(try await h.serverAnnotations("doc").map(\.id) == ["small"])
            #expect(try descriptor.editableDocument.annotations().map(\.id) == ["small"])
            #expect(descriptor.documentState == .clean)
        }
    }

    /// The server's payload limit, answered to a sync that sends no change (one started
    /// to receive): reported, and nothing else happens (it used to trap on `pending[0]`).
    @Test func aPayloadLimitAnswerToASyncWithoutChangesIsAnError() async throws {
        try await ClientHarness.with { h in
            let (_, log, descriptor) = try await h.downloadedDoc()
            h.proxy.answerNextRequest(
                to: "POST /i/v1/documents/doc/sync", status: "413 Payload Too Large",
                body: #"{"error": {"code": "payloadLimitExceeded", "message": "too large"}}"#,
                contentType: "application/json")
            let failed = await syncError(descriptor)
            #expect(failed?.code == .payloadLimitExceeded, "\(String(describing: failed))")
            #expect(await log.lostChanges.isEmpty)
            #expect(descriptor.documentState == .clean)
            try await descriptor.sync().result()
        }
    }

    /// A 413 without the server's error body (a proxy whose body limit is lower) says
    /// nothing about the change: every change is kept, none reported lost, and they go
    /// once the way is clear.
    @Test func aProxysBareRefusalKeepsEveryChange() async throws {
        try await ClientHarness.with { h in
            let (_, log, descriptor) = try await h.downloadedDoc()
            try descriptor.editableDocument.add(note("kept", id: "kept"))
            for _ in 0..<2 {
                h.proxy.answerNextRequest(to: "POST /i/v1/documents/doc/sync", status: "413 Payload Too Large")
                let failed = await syncError(descriptor)
                #expect(failed != nil)
                #expect(failed?.code != .payloadLimitExceeded, "\(String(describing: failed))")
                #expect(descriptor.documentState == .dirty)
            }
            #expect(await log.lostChanges.isEmpty)
            try await descriptor.sync().result()
            #expect(try await h.serverAnnotations("doc").map(\.id) == ["kept"])
            #expect(descriptor.documentState == .clean)
        }
    }
}

extension SyncCycleTests {
    /// "Try later" from something in front of the server (429, 408, 502, 504 without the
    /// server's error body) is a failure for now: retried with backoff without the app
    /// asking, never a refusal that stops the cycle. So is a bare 404 (a proxy that lost its
    /// route): the server's own 404 always says why.
    @Test(arguments: [
        "429 Too Many Requests", "408 Request Timeout", "502 Bad Gateway", "504 Gateway Timeout", "404 Not Found",
    ])
    func aProxysTryLaterIsRetried(status: String) async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let client = try h.client()
            let descriptor = try await h.downloaded(client, "doc")
            try descriptor.editableDocument.add(note("kept", id: "kept"))
            h.proxy.answerNextRequest(to: "POST /i/v1/documents/doc/sync", status: status)
            let failed = await syncError(descriptor)
            #expect(failed?.code == .requestFailed, "\(String(describing: failed))")
            // The retry the cycle scheduled syncs it; nothing asks again.
            try await waitUntilClean(descriptor)
            #expect(try await h.serverAnnotations("doc").map(\.id) == ["kept"])
        }
    }
}

/// Waits (up to 10 s) for `descriptor` to read `clean` by itself (a retry's sync).
private func waitUntilClean(
    _ descriptor: InstantDocumentDescriptor, sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    let deadline = Date().addingTimeInterval(10)
    while descriptor.documentState != .clean && Date() < deadline {
        try await Task.sleep(for: .milliseconds(20))
    }
    #expect(descriptor.documentState == .clean, sourceLocation: sourceLocation)
}

/// A sync of `descriptor` started, its first request held by the proxy (not yet at the
/// server); returns the operation and the request's head prefix.
private func syncHeldAtTheProxy(_ h: ClientHarness, _ descriptor: InstantDocumentDescriptor) async throws -> (
    InstantOperation, String
) {
    let sync = "POST /i/v1/documents/doc/sync"
    let heldBefore = h.proxy.requestsHeld
    h.proxy.holdNextRequest(to: sync)
    let running = descriptor.sync()
    while h.proxy.requestsHeld == heldBefore { try await Task.sleep(for: .milliseconds(5)) }
    return (running, sync)
}

/// `descriptor` given a new JWT for "doc", once the server took it; returns that JWT.
private func reauthenticated(_ descriptor: InstantDocumentDescriptor, _ h: ClientHarness, _ log: EventLog)
    async throws -> String
{
    let renewed = try await h.jwt("doc", expiresIn: 7200)
    descriptor.reauthenticate(withJWT: renewed)
    try await log.wait("the new JWT taken") {
        $0.contains { if case .didFinishReauthentication = $0 { true } else { false } }
    }
    return renewed
}

/// The error a sync of `descriptor` ends with, nil when it succeeds.
private func syncError(_ descriptor: InstantDocumentDescriptor) async -> InstantError? {
    do throws(InstantError) {
        try await descriptor.sync().result()
        return nil
    } catch {
        return error
    }
}

/// Reauthenticates, from its handler, at the `onFailure`th authentication failure.
private final class ReauthenticatingDelegate: InstantClientDelegate {
    let token: String
    let onFailure: Int
    private let failures = Mutex(0)

    init(token: String, onFailure: Int) {
        self.token = token
        self.onFailure = onFailure
    }

    func instantClient(_ client: InstantClient, didFailAuthenticationFor descriptor: InstantDocumentDescriptor) {
        let count = failures.withLock { count in
            count += 1
            return count
        }
        if count == onFailure { descriptor.reauthenticate(withJWT: token) }
    }

    func instantClient(_ client: InstantClient, didFinishDownloadFor descriptor: InstantDocumentDescriptor) {}
    func instantClient(
        _ client: InstantClient, documentDescriptor descriptor: InstantDocumentDescriptor,
        didFailDownloadWithError error: InstantError
    ) {}
    func instantClient(
        _ client: InstantClient, documentDescriptor descriptor: InstantDocumentDescriptor,
        didFinishReauthenticationWithJWT jwt: String
    ) {}
    func instantClient(
        _ client: InstantClient, documentDescriptor descriptor: InstantDocumentDescriptor,
        didFailReauthenticationWithError error: InstantError
    ) {}
}
