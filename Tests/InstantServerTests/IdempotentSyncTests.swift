import Foundation
import InstantProtocol
import Testing
import ServerTestSupport

/// Protocol 2: a sync whose response was lost can be sent again and gives the same
/// outcome; a client never conflicts with itself; a cursor the layer cannot have given
/// (another epoch, a future revision) gets `resetRequired`.
@Suite struct IdempotentSyncTests {
    /// The review's case: `x = B` accepted but its response lost, the user edits `x = C`,
    /// and the retry carries both. Before protocol 2 both came back `conflict` and C was lost.
    @Test func aRetryAfterALostResponseKeepsTheUsersLatestEdit() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            let token = try await server.token(document: "d", user: "ana")
            let created = try await server.sync(
                "d", token: token,
                SyncRequest(
                    clientId: "ana-1-0123456789abcdef", baseRevision: 0,
                    changes: [ClientChange(changeId: 1, kind: .create, id: "x", content: annotation("A"))]))
            #expect(created.revision == 1)
            let lost = try await server.sync(
                "d", token: token,
                SyncRequest(
                    clientId: "ana-1-0123456789abcdef", epoch: created.epoch, baseRevision: 1,
                    changes: [ClientChange(changeId: 2, kind: .update, id: "x", content: annotation("B"))]))
            #expect(lost.revision == 2)  // the client never sees this answer
            let retry = try await server.sync(
                "d", token: token,
                SyncRequest(
                    clientId: "ana-1-0123456789abcdef", epoch: created.epoch, baseRevision: 1,
                    changes: [
                        ClientChange(changeId: 2, kind: .update, id: "x", content: annotation("B")),
                        ClientChange(changeId: 3, kind: .update, id: "x", content: annotation("C")),
                    ]))
            #expect(retry.results.map(\.accepted) == [true, true], "\(retry.results)")
            #expect(retry.revision == 3, "B was not applied twice")
            let truth = try await server.client(.GET, "d", "snapshot", token: token).json(LayerSnapshot.self)
            #expect(truth.records.first { $0.id == "x" }?.content["text"] == .string("C"))

            // Another writer's change since the base still conflicts.
            let bob = try await server.token(document: "d", user: "bob")
            _ = try await server.sync(
                "d", token: bob,
                SyncRequest(
                    clientId: "bob-1-0123456789abcdef", epoch: created.epoch, baseRevision: 3,
                    changes: [ClientChange(changeId: 1, kind: .update, id: "x", content: annotation("bob"))]))
            let stale = try await server.sync(
                "d", token: token,
                SyncRequest(
                    clientId: "ana-1-0123456789abcdef", epoch: created.epoch, baseRevision: 3,
                    changes: [ClientChange(changeId: 4, kind: .update, id: "x", content: annotation("D"))]))
            #expect(stale.results.first?.reason == .conflict)
        }
    }

    /// A change carries the revision it was made against when that is older than the
    /// request's: it is judged against that one. Bob's change at revision 2 is news to a
    /// change made at 1, whatever cursor the request that carries it has; a replay is
    /// answered with its first verdict whatever base it carries now; a negative base is
    /// refused, and one past the layer's revision gets `resetRequired`, nothing applied.
    @Test func aChangeIsJudgedAgainstItsOwnBaseRevision() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            let ana = try await server.token(document: "d", user: "ana")
            let bob = try await server.token(document: "d", user: "bob")
            let anaClient = "ana-2-0123456789abcdef"
            let created = try await server.sync(
                "d", token: ana,
                SyncRequest(
                    clientId: anaClient, baseRevision: 0,
                    changes: [
                        ClientChange(changeId: 1, kind: .create, id: "x", content: annotation("A")),
                        ClientChange(changeId: 2, kind: .create, id: "y", content: annotation("A")),
                    ]))
            let bobs = try await server.sync(
                "d", token: bob,
                SyncRequest(
                    clientId: "bob-2-0123456789abcdef", epoch: created.epoch, baseRevision: 1,
                    changes: [ClientChange(changeId: 1, kind: .update, id: "x", content: annotation("bob"))]))
            #expect(bobs.revision == 2)
            // Ana's cursor is at 2 now; her edit of x was made at 1, her edit of y too, but y
            // has not changed since.
            let request = SyncRequest(
                clientId: anaClient, epoch: created.epoch, baseRevision: 2,
                changes: [
                    ClientChange(changeId: 3, kind: .update, id: "x", content: annotation("ana"), baseRevision: 1),
                    ClientChange(changeId: 4, kind: .update, id: "y", content: annotation("ana"), baseRevision: 1),
                    ClientChange(changeId: 5, kind: .update, id: "x", content: annotation("ana again")),
                ])
            let judged = try await server.sync("d", token: ana, request)
            #expect(judged.results.map(\.accepted) == [false, true, true], "\(judged.results)")
            #expect(judged.results.first?.reason == .conflict)
            #expect(judged.results.first?.message?.contains("after revision 1") == true)
            // Sent again with other bases (the answer was lost), the same verdicts.
            var again = request
            again.changes = again.changes.map {
                var change = $0; change.baseRevision = nil; return change
            }
            let replayed = try await server.sync("d", token: ana, again)
            #expect(replayed.results.map(\.accepted) == [false, true, true])
            #expect(replayed.results.allSatisfy { $0.replayed })
            #expect(replayed.revision == judged.revision, "nothing applied twice")

            // A negative base is refused; one the layer cannot have given (past its revision,
            // 3) gets `resetRequired`, like such a cursor. Nothing is applied.
            for (base, status, code) in [(Int64(-1), 400, "invalidRequest"), (4, 409, "resetRequired")] {
                let bad = SyncRequest(
                    clientId: anaClient, epoch: created.epoch, baseRevision: 3,
                    changes: [
                        ClientChange(changeId: 6, kind: .update, id: "y", content: annotation("no"), baseRevision: base)
                    ])
                let reply = try await server.client(
                    .POST, "d", "sync", token: ana, body: try JSONEncoder().encode(bad))
                #expect(reply.status == status && reply.errorCode == code, "base \(base)")
            }
            let truth = try await server.client(.GET, "d", "snapshot", token: ana).json(LayerSnapshot.self)
            #expect(truth.revision == judged.revision, "a refused request applies nothing")
            #expect(truth.records.first { $0.id == "y" }?.content["text"] == .string("ana"))

            // A base later than the request's (the client showed a record a page of an
            // unfinished answer brought) is judged as it is: Bob's change at 4 was shown.
            let bobsAgain = try await server.sync(
                "d", token: bob,
                SyncRequest(
                    clientId: "bob-2-0123456789abcdef", epoch: created.epoch, baseRevision: 3,
                    changes: [ClientChange(changeId: 2, kind: .update, id: "y", content: annotation("bob"))]))
            #expect(bobsAgain.revision == 4)
            let onBobs = try await server.sync(
                "d", token: ana,
                SyncRequest(
                    clientId: anaClient, epoch: created.epoch, baseRevision: 3,
                    changes: [
                        ClientChange(
                            changeId: 7, kind: .update, id: "y", content: annotation("ana on bob's"), baseRevision: 4)
                    ]))
            #expect(onBobs.results.map(\.accepted) == [true], "\(onBobs.results)")
        }
    }

    /// Creates, deletes and rejections replayed, also after a restart: the same verdicts,
    /// nothing applied twice, and a rejection stays one.
    @Test func replaysGetTheirFirstVerdictAlsoAfterARestart() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("instant-server-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        let first = SyncRequest(
            clientId: "c-0123456789abcdef", baseRevision: 0,
            changes: [
                ClientChange(changeId: 1, kind: .create, id: "a", content: annotation("a")),
                ClientChange(changeId: 2, kind: .create, id: "a", content: annotation("again")),  // rejected
                ClientChange(changeId: 3, kind: .create, id: "b", content: annotation("b")),
                ClientChange(changeId: 4, kind: .delete, id: "b"),
            ])
        let (original, epoch) = try await TestServer.with(dataDirectory: data) { server in
            try await server.upload("d", samplePDF(2_000))
            let token = try await server.token(document: "d")
            let original = try await server.sync("d", token: token, first)
            let replay = try await server.sync("d", token: token, first)
            #expect(verdicts(replay) == verdicts(original) && replay.revision == original.revision)
            #expect(replay.results.allSatisfy { $0.replayed } && !original.results.contains { $0.replayed })
            return (original, original.epoch)
        }
        #expect(original.results.map(\.accepted) == [true, false, true, true])
        try await TestServer.with(dataDirectory: data) { server in
            let token = try await server.token(document: "d")
            // "a" is deleted by someone else; the rejected create of "a" would now succeed,
            // but a replay is not a new change: it keeps its verdict.
            let other = try await server.sync(
                "d", token: token,
                SyncRequest(
                    clientId: "other-0123456789abcdef", epoch: epoch, baseRevision: 1,
                    changes: [ClientChange(changeId: 1, kind: .delete, id: "a")]))
            let replay = try await server.sync("d", token: token, first)
            #expect(verdicts(replay) == verdicts(original), "after a restart too")
            #expect(replay.results.allSatisfy { $0.replayed })
            #expect(replay.revision == other.revision)
            let snapshot = try await server.client(.GET, "d", "snapshot", token: token).json(LayerSnapshot.self)
            #expect(snapshot.records.isEmpty && snapshot.epoch == epoch)
        }
    }

    /// A create the ledger has no verdict for is taken for the client's own replay only
    /// when the record it last wrote holds its content byte for byte: text that is merely canonically equivalent
    /// ("é" as one code point, or as "e" and a combining accent), which Swift's `==` on
    /// String takes for equal, is another content, refused as the existing record it meets.
    @Test func aCreateSentAgainIsAReplayOnlyForTheSameBytes() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            let ana = try await server.token(document: "d", user: "ana")
            let composed = SyncRequest(
                clientId: "ana-7-0123456789abcdef", baseRevision: 0,
                changes: [ClientChange(changeId: 1, kind: .create, id: "x", content: annotation("caf\u{E9}"))])
            let created = try await server.sync("d", token: ana, composed)
            #expect(created.results.first?.accepted == true)
            let decomposed = SyncRequest(
                clientId: "ana-7-0123456789abcdef", epoch: created.epoch, baseRevision: 0,
                changes: [ClientChange(changeId: 2, kind: .create, id: "x", content: annotation("cafe\u{301}"))])
            let late = try await server.sync("d", token: ana, decomposed)
            #expect(late.results.first?.replayed == false, "\(late.results)")
            #expect(late.results.first?.reason == .alreadyExists, "\(late.results)")
            // The same bytes again (under another change id, as a client that lost its
            // numbering sends them) are the replay they are.
            let again = try await server.sync(
                "d", token: ana,
                SyncRequest(
                    clientId: "ana-7-0123456789abcdef", epoch: created.epoch, baseRevision: 0,
                    changes: [ClientChange(changeId: 3, kind: .create, id: "x", content: annotation("caf\u{E9}"))]))
            #expect(again.results.first?.accepted == true && again.results.first?.replayed == true, "\(again.results)")
        }
    }

    /// A create whose verdict the server no longer keeps (sent again after the 7-day
    /// window: its first answer was lost, the client was offline) is decided afresh. If
    /// another writer deleted the record meanwhile, the create loses with `conflict`: it
    /// must not bring back what they removed. A create that has seen the deletion (its
    /// base at or past it), or a deletion by the same client (an undo), is accepted.
    @Test func aCreateSentAgainPastTheWindowDoesNotBringBackADeletedRecord() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            let ana = try await server.token(document: "d", user: "ana")
            let bob = try await server.token(document: "d", user: "bob")
            let first = SyncRequest(
                clientId: "ana-7-0123456789abcdef", baseRevision: 0,
                changes: [
                    ClientChange(changeId: 1, kind: .create, id: "x", content: annotation("x")),
                    ClientChange(changeId: 2, kind: .create, id: "z", content: annotation("z")),
                ])
            let created = try await server.sync("d", token: ana, first)  // its answer "lost"
            #expect(created.revision == 1 && created.results.allSatisfy(\.accepted))
            let deleted = try await server.sync(
                "d", token: bob,
                SyncRequest(
                    clientId: "bob-7-0123456789abcdef", epoch: created.epoch, baseRevision: 1,
                    changes: [
                        ClientChange(changeId: 1, kind: .delete, id: "x"),
                        ClientChange(changeId: 2, kind: .create, id: "y", content: annotation("y")),
                    ]))
            #expect(deleted.revision == 2 && deleted.results.allSatisfy(\.accepted))

            try server.ageVerdicts(byDays: 8)
            let late = try await server.sync("d", token: ana, first)
            #expect(late.results.first?.replayed == false, "decided afresh")
            #expect(late.results.first?.reason == .conflict, "\(late.results)")
            // z, which nobody touched, is Ana's own record holding her create: answered as
            // the replay it is, not written again.
            #expect(late.results.last?.accepted == true && late.results.last?.replayed == true, "\(late.results)")
            #expect(late.revision == deleted.revision, "nothing written")
            var snapshot = try await server.client(.GET, "d", "snapshot", token: bob).json(LayerSnapshot.self)
            #expect(snapshot.records.map(\.id) == ["y", "z"], "x stays deleted")
            #expect(snapshot.records.last?.content["text"] == .string("z"))

            // Bob deletes y and, in a later request with the same base (an undo left for
            // it), creates it again: his own deletion is no news to him.
            let undo = try await server.sync(
                "d", token: bob,
                SyncRequest(
                    clientId: "bob-7-0123456789abcdef", epoch: created.epoch, baseRevision: 2,
                    changes: [ClientChange(changeId: 3, kind: .delete, id: "y")]))
            let redo = try await server.sync(
                "d", token: bob,
                SyncRequest(
                    clientId: "bob-7-0123456789abcdef", epoch: created.epoch, baseRevision: 2,
                    changes: [ClientChange(changeId: 4, kind: .create, id: "y", content: annotation("y"))]))
            #expect(undo.results.first?.accepted == true && redo.results.first?.accepted == true, "\(redo.results)")
            // Ana, who has now seen x go (base past its deletion), may create x again.
            let again = try await server.sync(
                "d", token: ana,
                SyncRequest(
                    clientId: "ana-7-0123456789abcdef", epoch: created.epoch, baseRevision: redo.revision,
                    changes: [ClientChange(changeId: 3, kind: .create, id: "x", content: annotation("new x"))]))
            #expect(again.results.first?.accepted == true, "\(again.results)")
            snapshot = try await server.client(.GET, "d", "snapshot", token: bob).json(LayerSnapshot.self)
            #expect(snapshot.records.map(\.id).sorted() == ["x", "y", "z"])
        }
    }

    /// Ana's create of x is applied, its answer lost; sent again with her update of x,
    /// it is replayed and the update applied; that answer is lost too. Should the create's
    /// verdict be gone while the update's is kept (aged here by hand: the server keeps a
    /// request's verdicts together, but a store written by an older version may not have),
    /// the create decided afresh finds her own record holding the update, not the create,
    /// and loses with `alreadyExists` rather than take the update back.
    @Test func aCreateSentAgainPastTheWindowDoesNotTakeBackTheClientsLaterChange() async throws {
        try await TestServer.with { server in
            let (ana, both, first) = try await Self.createThenUpdate(on: server, client: "ana-8-0123456789abcdef")
            try server.ageVerdicts(byDays: 8, changeIds: 1...1)
            let late = try await server.sync("d", token: ana, both)
            #expect(late.results.map(\.reason) == [.alreadyExists, nil], "\(late.results)")
            #expect(late.results.last?.replayed == true)
            let snapshot = try await server.client(.GET, "d", "snapshot", token: ana).json(LayerSnapshot.self)
            #expect(snapshot.records.first?.content["text"] == .string("B"), "the update stays")
            #expect(snapshot.revision == first.revision + 1, "nothing written again")
        }
    }

    /// A replayed verdict takes the time of the request that replays it, so it lives as
    /// long as the verdicts decided beside it: the create, first sent six days before the
    /// update, is still answered as a replay two days later.
    @Test func aReplayedVerdictLivesAsLongAsTheRequestThatReplayedIt() async throws {
        try await TestServer.with { server in
            let (ana, both, _) = try await Self.createThenUpdate(
                on: server, client: "ana-9-0123456789abcdef", daysBetween: 6)
            try server.ageVerdicts(byDays: 2)
            let late = try await server.sync("d", token: ana, both)
            #expect(late.results.map(\.replayed) == [true, true], "\(late.results)")
        }
    }

    /// Ana's create of x is applied, its answer lost; past the window she sends it again
    /// with her update of x: the create, whose record still holds it, is answered as a
    /// replay, the update applied. That answer is lost too; sent a third time, both get
    /// their verdicts (the create's was kept on the second sending), and nothing is
    /// reported lost.
    @Test func aCreateAnsweredAsAReplayPastTheWindowKeepsItsVerdict() async throws {
        try await TestServer.with { server in
            let (ana, both, _) = try await Self.createThenUpdate(
                on: server, client: "ana-11-0123456789abcdef", daysBetween: 8)
            let third = try await server.sync("d", token: ana, both)
            #expect(third.results.map(\.replayed) == [true, true], "\(third.results)")
            #expect(third.results.allSatisfy { $0.accepted })
            let snapshot = try await server.client(.GET, "d", "snapshot", token: ana).json(LayerSnapshot.self)
            #expect(snapshot.records.first?.content["text"] == .string("B"))
        }
    }

    /// Ana's update and delete of x are applied, their answer lost; past the window she
    /// sends them again: the record she deleted last is gone, as she asked, so both are
    /// answered as replays (not `notFound`, which her client would report as lost changes),
    /// and their verdicts kept. Another client's delete of a gone record still gets
    /// `notFound`.
    @Test func aDeleteSentAgainPastTheWindowIsAReplay() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            let ana = try await server.token(document: "d", user: "ana")
            let client = "ana-13-0123456789abcdef"
            let created = try await server.sync(
                "d", token: ana,
                SyncRequest(
                    clientId: client, baseRevision: 0,
                    changes: [ClientChange(changeId: 1, kind: .create, id: "x", content: annotation("x"))]))
            let delete = SyncRequest(
                clientId: client, epoch: created.epoch, baseRevision: created.revision,
                changes: [
                    ClientChange(changeId: 2, kind: .update, id: "x", content: annotation("x2")),
                    ClientChange(changeId: 3, kind: .delete, id: "x"),
                ])
            let deleted = try await server.sync("d", token: ana, delete)
            #expect(deleted.results.allSatisfy { $0.accepted })
            try server.ageVerdicts(byDays: 8)
            let late = try await server.sync("d", token: ana, delete)
            #expect(late.results.allSatisfy { $0.accepted && $0.replayed }, "\(late.results)")
            #expect(late.revision == deleted.revision, "nothing written")
            let again = try await server.sync("d", token: ana, delete)
            #expect(again.results.allSatisfy { $0.replayed }, "their verdicts kept")
            let other = try await server.sync(
                "d", token: ana,
                SyncRequest(
                    clientId: "other-13-0123456789abcdef", epoch: created.epoch, baseRevision: deleted.revision,
                    changes: [ClientChange(changeId: 1, kind: .delete, id: "x")]))
            #expect(other.results.first?.reason == .notFound)
        }
    }

    /// A request sent again with fewer of its changes (its client halved its batches)
    /// renews the verdicts of all of them: the whole request (a create and an update),
    /// sent later still, finds every verdict.
    @Test func aReplayOfPartOfARequestRenewsAllOfItsVerdicts() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            let ana = try await server.token(document: "d", user: "ana")
            let client = "ana-12-0123456789abcdef"
            let changes = [
                ClientChange(changeId: 1, kind: .create, id: "n", content: annotation("n")),
                ClientChange(changeId: 2, kind: .update, id: "n", content: annotation("n2")),
            ]
            let whole = SyncRequest(clientId: client, baseRevision: 0, changes: changes)
            _ = try await server.sync("d", token: ana, whole)
            try server.ageVerdicts(byDays: 6)
            let part = try await server.sync(
                "d", token: ana, SyncRequest(clientId: client, baseRevision: 0, changes: [changes[0]]))
            #expect(part.results.first?.replayed == true)
            try server.ageVerdicts(byDays: 2)
            let again = try await server.sync("d", token: ana, whole)
            // (The update decided afresh would be applied again, not replayed.)
            #expect(again.results.map(\.replayed) == [true, true], "\(again.results)")
            #expect(again.results.allSatisfy { $0.accepted })
        }
    }

    /// Ana's create of x (A), its answer lost, then `daysBetween` days later the same
    /// request again with her update of x (B): the create replayed, the update applied.
    /// Returns her token, that second request and the first answer.
    private static func createThenUpdate(on server: TestServer, client: String, daysBetween: Int = 0)
        async throws -> (token: String, both: SyncRequest, first: SyncResponse)
    {
        try await server.upload("d", samplePDF(2_000))
        let ana = try await server.token(document: "d", user: "ana")
        let create = ClientChange(changeId: 1, kind: .create, id: "x", content: annotation("A"))
        let first = try await server.sync(
            "d", token: ana, SyncRequest(clientId: client, baseRevision: 0, changes: [create]))
        if daysBetween > 0 { try server.ageVerdicts(byDays: daysBetween) }
        let both = SyncRequest(
            clientId: client, baseRevision: 0,
            changes: [create, ClientChange(changeId: 2, kind: .update, id: "x", content: annotation("B"))])
        let second = try await server.sync("d", token: ana, both)
        #expect(
            second.results.map(\.replayed) == [true, false] && second.results.allSatisfy { $0.accepted },
            "\(second.results)")
        return (ana, both, first)
    }

    /// A request's verdicts expire together, whatever the pace of the cleanup (500 a
    /// sync). Here 499 older verdicts and a request that created x and deleted it (its
    /// answer lost) are all past the window: a cleanup batch that stopped inside that
    /// request must not leave the delete's verdict readable without the create's, or the
    /// request sent again would bring x back (the create decided afresh, the delete
    /// replayed).
    @Test func aRequestsVerdictsExpireTogetherWhateverTheCleanupsPace() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            let ana = try await server.token(document: "d", user: "ana")
            let client = "ana-10-0123456789abcdef"
            let older = (1...499).map {
                ClientChange(changeId: Int64($0), kind: .create, id: "f-\($0)", content: annotation("f"))
            }
            let filled = try await server.sync(
                "d", token: ana, SyncRequest(clientId: client, baseRevision: 0, changes: older))
            #expect(filled.results.allSatisfy { $0.accepted })
            let request = SyncRequest(
                clientId: client, epoch: filled.epoch, baseRevision: filled.revision,
                changes: [
                    ClientChange(changeId: 500, kind: .create, id: "x", content: annotation("x")),
                    ClientChange(changeId: 501, kind: .delete, id: "x"),
                ])
            let lost = try await server.sync("d", token: ana, request)
            #expect(lost.results.allSatisfy { $0.accepted })
            try server.ageVerdicts(byDays: 9, changeIds: 1...499)
            try server.ageVerdicts(byDays: 8, changeIds: 500...501)
            let again = try await server.sync("d", token: ana, request)
            #expect(again.results.allSatisfy { $0.accepted && !$0.replayed }, "decided afresh, both: \(again.results)")
            let snapshot = try await server.client(.GET, "d", "snapshot", token: ana).json(LayerSnapshot.self)
            #expect(!snapshot.records.contains { $0.id == "x" }, "x stays deleted")
            #expect(snapshot.records.count == 499)
        }
    }

    @Test func duplicateChangeIdsInOneSyncAreRefused() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            let token = try await server.token(document: "d")
            let twice = try await server.client(
                .POST, "d", "sync", token: token,
                body: Data(
                    SyncRequest(
                        clientId: "c-0123456789abcdef", baseRevision: 0,
                        changes: [
                            ClientChange(changeId: 5, kind: .create, id: "a", content: annotation("a")),
                            ClientChange(changeId: 5, kind: .create, id: "b", content: annotation("b")),
                        ]
                    ).jsonBytes()))
            #expect(twice.status == 400 && twice.errorCode == "invalidRequest")
            #expect(String(decoding: twice.body, as: UTF8.self).contains("appears twice"))
            let snapshot = try await server.client(.GET, "d", "snapshot", token: token).json(LayerSnapshot.self)
            #expect(snapshot.records.isEmpty, "nothing of a refused request is applied")
        }
    }

    /// A layer deleted and created again is a new layer: a client of the old one, and a
    /// client from the future, are told to reset instead of diverging silently.
    @Test func aRecreatedLayerOrAFutureBaseRequiresAReset() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            #expect(try await server.api(.POST, "/documents/d/layers", json: #"{"name":"l"}"#).status == 201)
            let token = try await server.token(document: "d", layer: "l")
            let synced = try await server.sync(
                "d", token: token,
                SyncRequest(
                    clientId: "c-0123456789abcdef", baseRevision: 0,
                    changes: [ClientChange(changeId: 1, kind: .create, id: "a", content: annotation("a"))]))
            let future = try await server.client(
                .POST, "d", "sync", token: token,
                body: Data(
                    SyncRequest(clientId: "c-0123456789abcdef", epoch: synced.epoch, baseRevision: 99, changes: [])
                        .jsonBytes()))
            #expect(future.status == 409 && future.errorCode == "resetRequired")
            #expect(try await server.api(.DELETE, "/documents/d/layers/l").status == 204)
            #expect(try await server.api(.POST, "/documents/d/layers", json: #"{"name":"l"}"#).status == 201)
            let recreated = try await server.client(
                .POST, "d", "sync", token: token,
                body: Data(
                    SyncRequest(clientId: "c-0123456789abcdef", epoch: synced.epoch, baseRevision: 0, changes: [])
                        .jsonBytes()))
            #expect(recreated.status == 409 && recreated.errorCode == "resetRequired")
            let snapshot = try await server.client(.GET, "d", "snapshot", token: token).json(LayerSnapshot.self)
            #expect(snapshot.epoch != synced.epoch)
            _ = try await server.sync(
                "d", token: token,
                SyncRequest(
                    clientId: "c-0123456789abcdef", epoch: snapshot.epoch, baseRevision: 0,
                    changes: [ClientChange(changeId: 2, kind: .create, id: "b", content: annotation("b"))]))
            let noEpoch = try await server.client(
                .POST, "d", "sync", token: token,
                body: Data(SyncRequest(clientId: "c-0123456789abcdef", baseRevision: 1, changes: []).jsonBytes()))
            #expect(noEpoch.status == 409, "a cursor without its epoch (protocol 1) cannot be trusted")
        }
    }

    /// A change id names one change for ever: sent again with other content it is refused
    /// (the server would otherwise answer "accepted" and apply nothing). And a client id is
    /// scoped by the token's user: another user's copy never gets its verdicts.
    @Test func changeIdsNameOneChangeAndClientIdsBelongToAUser() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            let ana = try await server.token(document: "d", user: "ana")
            let first = try await server.sync(
                "d", token: ana,
                SyncRequest(
                    clientId: "shared-0123456789abcdef", baseRevision: 0,
                    changes: [ClientChange(changeId: 1, kind: .create, id: "x", content: annotation("x"))]))
            let reused = try await server.client(
                .POST, "d", "sync", token: ana,
                body: Data(
                    SyncRequest(
                        clientId: "shared-0123456789abcdef", epoch: first.epoch, baseRevision: 1,
                        changes: [ClientChange(changeId: 1, kind: .create, id: "y", content: annotation("y"))]
                    ).jsonBytes()))
            #expect(reused.status == 400 && reused.errorCode == "invalidRequest")
            let bob = try await server.token(document: "d", user: "bob")
            let bobs = try await server.sync(
                "d", token: bob,
                SyncRequest(
                    clientId: "shared-0123456789abcdef", epoch: first.epoch, baseRevision: 1,
                    changes: [ClientChange(changeId: 1, kind: .create, id: "y", content: annotation("y"))]))
            #expect(bobs.results.first?.accepted == true && bobs.revision == 2, "decided afresh, and applied")
            let short = try await server.client(
                .POST, "d", "sync", token: bob,
                body: Data(SyncRequest(clientId: "web", baseRevision: 0, changes: []).jsonBytes()))
            #expect(short.status == 400, "a client id is at least 16 bytes")
        }
    }

    /// Deleting a layer wakes its listeners at once, and they learn to reset (the layer
    /// is not created again behind the deletion).
    @Test func aListenerIsWokenByItsLayersDeletion() async throws {
        try await TestServer.with(listenTimeout: 30) { server in
            try await server.upload("d", samplePDF(2_000))
            #expect(try await server.api(.POST, "/documents/d/layers", json: #"{"name":"l"}"#).status == 201)
            let token = try await server.token(document: "d", layer: "l")
            let epoch = try await server.client(.GET, "d", "snapshot", token: token).json(LayerSnapshot.self).epoch
            async let listening = server.client(
                .GET, "d", "listen?revision=0&epoch=\(epoch)&timeout=30", token: token)
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await server.api(.DELETE, "/documents/d/layers/l").status == 204)
            let deleted = ContinuousClock.now
            let answer = try await listening
            // Measured from the deletion: a listener left to its timeout answers ~30 s later.
            let waited = ContinuousClock.now - deleted
            #expect(answer.status == 409 && answer.errorCode == "resetRequired", "\(answer.status)")
            #expect(waited < .seconds(10), "woken by the deletion, not by its 30 s timeout: \(waited)")
            let layers = try await server.api(.GET, "/documents/d/layers").json([String: [String]].self)
            #expect(layers["data"] == [""], "the deleted layer stays deleted")
        }
    }
}

/// The verdicts without whether they were replayed.
private func verdicts(_ response: SyncResponse) -> [ChangeResult] {
    response.results.map {
        ChangeResult(changeId: $0.changeId, accepted: $0.accepted, reason: $0.reason, message: $0.message)
    }
}
