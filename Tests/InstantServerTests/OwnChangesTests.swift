import Foundation
import InstantProtocol
import InstantServer
import ServerTestSupport
import Testing

/// `omitOwnChanges`: a sync's answer leaves out the records its own fresh accepted changes
/// wrote (the client has them), on every page, and says at which revision they are; it
/// still carries every other writer's changes, and the records of replayed changes.
@Suite struct OwnChangesTests {
    /// Pages every change of a sync's answer, following `next`.
    private func allChanges(_ server: TestServer, token: String, base: Int64, _ first: SyncResponse) async throws
        -> [ServerChange]
    {
        var changes = first.changes
        var next = first.next
        while let after = next {
            let page = try await server.client(
                .GET, "d", "changes?since=\(base)&epoch=\(first.epoch)&after=\(after)", token: token
            ).json(SyncResponse.self)
            #expect(page.ownRevision == nil, "only a sync's answer says where its changes are")
            changes += page.changes
            next = page.next
        }
        return changes
    }

    private func creates(_ prefix: String, _ ids: Range<Int>, firstChange: Int64 = 1) -> [ClientChange] {
        ids.map {
            ClientChange(
                changeId: firstChange + Int64($0 - ids.lowerBound), kind: .create, id: "\(prefix)\($0)",
                content: annotation("\(prefix)\($0)"))
        }
    }

    @Test func ownChangesAreLeftOutOfEveryPageAndOthersAreNot() async throws {
        try await TestServer.with(configure: { $0.pageLimits = PageLimits(records: 2) }) { server in
            try await server.upload("d", samplePDF(2_000))
            let token = try await server.token(document: "d")
            let base = try await server.sync(
                "d", token: token, SyncRequest(clientId: "mine-0123456789abcdef", baseRevision: 0, changes: []))
            // Another writer's five records after our base.
            let other = try await server.sync(
                "d", token: token,
                SyncRequest(clientId: "other-0123456789abcdef", baseRevision: 0, changes: creates("o", 0..<5)))
            var mine = creates("m", 0..<5)
            mine.append(ClientChange(changeId: 6, kind: .update, id: "m0", content: annotation("m0 again")))
            mine.append(ClientChange(changeId: 7, kind: .delete, id: "m1"))
            mine.append(ClientChange(changeId: 8, kind: .create, id: "o0", content: annotation("taken")))  // loses
            let answer = try await server.sync(
                "d", token: token,
                SyncRequest(
                    clientId: "mine-0123456789abcdef", epoch: base.epoch, baseRevision: base.revision, changes: mine,
                    omitOwnChanges: true))
            #expect(answer.results.map(\.accepted) == [true, true, true, true, true, true, true, false])
            #expect(answer.ownRevision == other.revision + 1 && answer.revision == other.revision + 1)
            // Before we fetch the next pages, someone else changes one of our records: it
            // is no longer ours alone, and comes back with its new state.
            let overwrite = try await server.sync(
                "d", token: token,
                SyncRequest(
                    clientId: "other-0123456789abcdef", epoch: answer.epoch, baseRevision: answer.revision,
                    changes: [ClientChange(changeId: 6, kind: .update, id: "m2", content: annotation("theirs"))]))
            #expect(overwrite.results.map(\.accepted) == [true])
            let changes = try await allChanges(server, token: token, base: base.revision, answer)
            #expect(changes.map(\.id) == ["o0", "o1", "o2", "o3", "o4", "m2"], "the other writer's, never ours")
            #expect(changes.dropLast().allSatisfy { $0.revision == other.revision })
            #expect(changes.last?.revision == overwrite.revision && changes.last?.content == annotation("theirs"))

            // Without the flag the same kind of answer echoes everything, as protocol 2 did.
            let echoed = try await server.sync(
                "d", token: token,
                SyncRequest(
                    clientId: "mine-0123456789abcdef", epoch: base.epoch, baseRevision: base.revision,
                    changes: creates("e", 0..<1, firstChange: 9)))
            #expect(echoed.ownRevision == nil)
            let all = try await allChanges(server, token: token, base: base.revision, echoed)
            #expect(Set(all.map(\.id)) == ["o0", "o1", "o2", "o3", "o4", "m0", "m1", "m2", "m3", "m4", "e0"])
            #expect(all.contains { $0.id == "m1" && $0.deleted })
        }
    }

    /// A replayed change was written at an earlier revision, and may have been overwritten
    /// since: its record comes in the answer. Only the fresh ones are left out.
    @Test func replayedChangesAreEchoedAndFreshOnesAreNot() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            let token = try await server.token(document: "d")
            let first = SyncRequest(
                clientId: "mine-0123456789abcdef", baseRevision: 0, changes: creates("m", 0..<2), omitOwnChanges: true)
            let lost = try await server.sync("d", token: token, first)  // the client never sees this answer
            #expect(lost.ownRevision == 1 && lost.changes.isEmpty)
            // Someone else changes m0 meanwhile.
            _ = try await server.sync(
                "d", token: token,
                SyncRequest(
                    clientId: "other-0123456789abcdef", epoch: lost.epoch, baseRevision: 1,
                    changes: [ClientChange(changeId: 1, kind: .update, id: "m0", content: annotation("theirs"))]))

            let pureReplay = try await server.sync("d", token: token, first)
            #expect(pureReplay.results.allSatisfy { $0.accepted && $0.replayed })
            #expect(pureReplay.ownRevision == nil, "nothing was written now")
            #expect(pureReplay.changes.map(\.id) == ["m1", "m0"])

            var retry = first
            retry.changes += creates("n", 0..<1, firstChange: 3)
            let mixed = try await server.sync("d", token: token, retry)
            #expect(mixed.results.map(\.replayed) == [true, true, false])
            #expect(mixed.ownRevision == 3)
            #expect(mixed.changes.map(\.id) == ["m1", "m0"], "the replays' records, not the fresh create")
            #expect(mixed.changes.last?.content == annotation("theirs"))
        }
    }

    /// A sync whose changes all lose wrote nothing: there is no own revision to leave out.
    @Test func aSyncThatWroteNothingLeavesNothingOut() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            let token = try await server.token(document: "d")
            let made = try await server.sync(
                "d", token: token,
                SyncRequest(clientId: "other-0123456789abcdef", baseRevision: 0, changes: creates("o", 0..<1)))
            let refused = try await server.sync(
                "d", token: token,
                SyncRequest(
                    clientId: "mine-0123456789abcdef", baseRevision: 0, changes: creates("o", 0..<1),
                    omitOwnChanges: true))
            #expect(refused.results.map(\.accepted) == [false])
            #expect(refused.ownRevision == nil && refused.revision == made.revision)
            #expect(refused.changes.map(\.id) == ["o0"])
        }
    }

    @Test func aMalformedOmittingCursorIsRefused() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            let token = try await server.token(document: "d")
            for forged in ["1.0.61.0", "1.0.61.-2", "1.0.61.x", "1.0.61.1.2", "1.0.61.01"] {
                let reply = try await server.client(.GET, "d", "changes?since=0&after=\(forged)", token: token)
                #expect(reply.status == 400 && reply.errorCode == "invalidRequest", "\(forged): \(reply.status)")
            }
        }
    }
}
