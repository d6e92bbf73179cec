import Foundation
import InstantProtocol
import Testing
import ServerTestSupport

@testable import InstantServer

/// A sync's batch is decided against records and verdicts read up front, in chunks: every
/// chunk is seen, the batch's own writes count, and ids are the bytes the client sent.
@Suite struct BatchApplyTests {
    /// More records than one read names (500), so that a lost chunk would show.
    let count = 1_201

    /// A server with document "d", and a token of Ana's for it.
    func withDocument(_ body: @Sendable (TestServer, String) async throws -> Void) async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            try await body(server, try await server.token(document: "d", user: "ana"))
        }
    }

    /// `count` changes of `kind` to r0, r1…, numbered from `firstID`.
    func batch(_ kind: ChangeKind, text: String? = nil, firstID: Int64 = 1) -> [ClientChange] {
        (0..<count).map {
            ClientChange(
                changeId: firstID + Int64($0), kind: kind, id: "r\($0)", content: annotation(text ?? "\($0)"))
        }
    }

    @Test func aBatchLargerThanOneReadSeesEveryRecordAndItsOwnWrites() async throws {
        try await withDocument { server, ana in
            let bob = try await server.token(document: "d", user: "bob")
            let created = try await server.sync(
                "d", token: ana,
                SyncRequest(
                    clientId: "ana-0123456789abcdef", baseRevision: 0,
                    changes: batch(.create)))
            #expect(created.results.allSatisfy { $0.accepted } && created.revision == 1)

            // Bob: every record exists (creates lose, updates win), and a record this
            // batch deletes is gone for the batch's next change.
            var changes = batch(.update, text: "bob")
            changes.append(ClientChange(changeId: 5_000, kind: .create, id: "r\(count - 1)", content: annotation("x")))
            changes.append(ClientChange(changeId: 5_001, kind: .delete, id: "r0"))
            changes.append(ClientChange(changeId: 5_002, kind: .update, id: "r0", content: annotation("late")))
            changes.append(ClientChange(changeId: 5_003, kind: .create, id: "r0", content: annotation("again")))
            let bobs = try await server.sync(
                "d", token: bob,
                SyncRequest(clientId: "bob-0123456789abcdef", epoch: created.epoch, baseRevision: 1, changes: changes))
            #expect(bobs.results.prefix(count).allSatisfy { $0.accepted })
            #expect(bobs.results.suffix(4).map(\.reason) == [.alreadyExists, nil, .notFound, nil])
            #expect(bobs.revision == 2)

            // Ana from her old base: Bob changed every record since, in every chunk.
            let stale = try await server.sync(
                "d", token: ana,
                SyncRequest(
                    clientId: "ana-0123456789abcdef", epoch: created.epoch, baseRevision: 1,
                    changes: batch(.update, text: "ana", firstID: Int64(count + 1))))
            #expect(stale.results.allSatisfy { $0.reason == .conflict })
            #expect(stale.revision == 2)
        }
    }

    /// A replay is found among many verdicts of the same client with ids between, which
    /// are not taken for it; a fresh change past them is applied.
    @Test func aReplayAmongManyVerdictsGetsItsOwn() async throws {
        try await withDocument { server, ana in
            let changes = batch(.create)
            let first = try await server.sync(
                "d", token: ana, SyncRequest(clientId: "ana-0123456789abcdef", baseRevision: 0, changes: changes))
            let again = try await server.sync(
                "d", token: ana,
                SyncRequest(
                    clientId: "ana-0123456789abcdef", epoch: first.epoch, baseRevision: 0,
                    changes: [
                        changes[0], changes[count - 1],
                        ClientChange(changeId: 9_999, kind: .create, id: "new", content: annotation("new")),
                    ]))
            #expect(again.results.map(\.replayed) == [true, true, false])
            #expect(again.results.map(\.accepted) == [true, true, true])
            #expect(again.revision == 2)
            // The same id for another change is still refused, wherever it lies.
            await #expect(throws: (any Error).self) {
                _ = try await server.sync(
                    "d", token: ana,
                    SyncRequest(
                        clientId: "ana-0123456789abcdef", epoch: first.epoch, baseRevision: 2,
                        changes: [ClientChange(changeId: 600, kind: .delete, id: "r0")]))
            }
        }
    }

    /// Ids Swift calls equal (canonically equivalent Unicode) are different bytes, so
    /// different annotations, also inside one batch.
    @Test func canonicallyEquivalentIdsAreTwoAnnotations() async throws {
        try await withDocument { server, ana in
            let composed = "caf\u{E9}"
            let decomposed = "cafe\u{301}"
            #expect(composed == decomposed)
            let answer = try await server.sync(
                "d", token: ana,
                SyncRequest(
                    clientId: "ana-0123456789abcdef", baseRevision: 0,
                    changes: [
                        ClientChange(changeId: 1, kind: .create, id: composed, content: annotation("one")),
                        ClientChange(changeId: 2, kind: .create, id: decomposed, content: annotation("two")),
                        ClientChange(changeId: 3, kind: .delete, id: composed),
                    ]))
            #expect(answer.results.map(\.accepted) == [true, true, true])
            let snapshot = try await server.client(.GET, "d", "snapshot", token: ana).json(LayerSnapshot.self)
            #expect(snapshot.records.map { Array($0.id.utf8) } == [Array(decomposed.utf8)])
        }
    }

    /// Ids sharing a long prefix (Foundation hashes only a `Data`'s first 80 bytes) must
    /// not all land in one bucket: a batch of them would take quadratic time inside the
    /// write transaction, stalling every writer of the server.
    @Test func recordKeysHashEveryByte() {
        let prefix = String(repeating: "tenant/namespace/", count: 10)
        let keys = (0..<64).map { ServerDatabase.RecordKey(prefix + "\($0)") }
        #expect(Set(keys.map(\.hashValue)).count == keys.count)
        #expect(ServerDatabase.RecordKey("caf\u{E9}") != ServerDatabase.RecordKey("cafe\u{301}"))
    }

    /// Change ids spread far wider than their number are looked up one by one, and a
    /// replay among them still gets its verdict.
    @Test func sparseChangeIdsStillFindTheirVerdicts() async throws {
        try await withDocument { server, ana in
            let far = ClientChange(changeId: .max, kind: .create, id: "far", content: annotation("far"))
            let near = ClientChange(changeId: .min, kind: .create, id: "near", content: annotation("near"))
            let first = try await server.sync(
                "d", token: ana, SyncRequest(clientId: "ana-0123456789abcdef", baseRevision: 0, changes: [near, far]))
            #expect(first.results.map(\.accepted) == [true, true])
            let again = try await server.sync(
                "d", token: ana,
                SyncRequest(
                    clientId: "ana-0123456789abcdef", epoch: first.epoch, baseRevision: 0,
                    changes: [near, ClientChange(changeId: 0, kind: .update, id: "far", content: annotation("x")), far])
            )
            #expect(again.results.map(\.replayed) == [true, false, true])
            #expect(again.results.map(\.accepted) == [true, true, true])
        }
    }

    /// A client id is scoped by its token's user. The scope of a user id holding the
    /// separator (U+001F) is written otherwise, so no two users share one; other users'
    /// scopes are those older builds wrote.
    @Test func scopedClientIDsNeverCollide() {
        let scoped = ServerDatabase.scopedClientID
        #expect(scoped("ana", "x-0123456789abcdef") == "ana\u{1F}x-0123456789abcdef")
        #expect(scoped(nil, "x-0123456789abcdef") == "\u{1F}x-0123456789abcdef")
        let pairs: [(String?, String)] = [
            ("a\u{1F}b", "c-0123456789abcdef"), ("a", "b\u{1F}c-0123456789abcdef"),
            ("\u{1E}611f62", "c-0123456789abcdef"), ("\u{1E}", "c-0123456789abcdef"),
            ("", "\u{1E}\u{1F}c-0123456789abc"),
        ]
        let scopes = pairs.map { scoped($0.0, $0.1) }
        #expect(Set(scopes.map { Array($0.utf8) }).count == pairs.count, "\(scopes)")
    }
}
