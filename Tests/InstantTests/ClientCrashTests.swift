import Foundation
import Instant
import InstantProtocol
import InstantServer
import InstantStore
import ServerTestSupport
import TestSupport
import Testing

/// Kills a real client process (`instant-client-worker`) at each step of a download and a
/// sync, then runs it again: no pending change is lost, none is applied twice (the
/// server's revision counts every change it applied), and the store verifies clean.
@Suite(.serialized) struct ClientCrashTests {
    /// What a sync killed at a step leaves, with a multi-page answer (pages of 2) and, for
    /// `reset.beforeApply`, a layer the server created again.
    @Test(arguments: [
        "sync.beforeSend", "sync.afterSend", "sync.betweenPages", "layer.beforeCommit", "sync.afterApply",
        "reset.beforeApply",
    ])
    func syncKilled(failpoint: String) async throws {
        try await TestServer.with(configure: { $0.pageLimits = PageLimits(records: 2) }) { server in
            let fixture = try await WorkerFixture(server: server)
            defer { fixture.removeRoot() }
            try await fixture.expectOK("download")
            // Another writer's five annotations, so the answer to our sync has pages.
            let other = (0..<5).map {
                ClientChange(changeId: Int64($0 + 1), kind: .create, id: "other-\($0)", content: note("o", id: nil))
            }
            _ = try await server.sync(
                "doc", token: fixture.jwt,
                SyncRequest(clientId: "another-client-0001", epoch: nil, baseRevision: 0, changes: other))
            // The client takes them in (its cursor is now on the layer's own epoch), then
            // makes three creates and an update offline.
            try await fixture.expectOK("sync")
            try await fixture.expectOK("add", "mine", "3")
            // Meanwhile the other writer makes five more: the answer to our sync carries
            // them in pages (our own accepted changes are not echoed back).
            let late = (0..<5).map {
                ClientChange(changeId: Int64($0 + 6), kind: .create, id: "late-\($0)", content: note("o", id: nil))
            }
            let status = try await server.sync(
                "doc", token: fixture.jwt,
                SyncRequest(clientId: "another-client-0001", epoch: nil, baseRevision: 0, changes: late))
            #expect(status.results.allSatisfy { $0.accepted })
            var expected = ["mine-0", "mine-1", "mine-2"] + other.map(\.id) + late.map(\.id)
            // The server gives each batch it applies one new revision: theirs, theirs, ours.
            var batchesApplied: Int64 = 3
            if failpoint == "reset.beforeApply" {
                // The layer is made again on the server: the next sync resets from a snapshot.
                try await server.createLayerAgain("L")
                expected = ["mine-0", "mine-1", "mine-2"]
                batchesApplied = 1
            }
            let killed = try await fixture.run("sync", failpoint: failpoint)
            #expect(killed.ending.signalled, "the sync should die at \(failpoint): \(killed.output) \(killed.error)")

            let again = try await fixture.run("sync")
            #expect(again.ending.status == 0, "\(again.error)")
            #expect(again.output.contains("lost=0"), "no change may be lost or refused as a duplicate: \(again.error)")
            try await fixture.expectServer(holds: expected.sorted(), updated: "mine-0", revision: batchesApplied)
            try fixture.expectLocal(holds: expected.sorted())
        }
    }

    /// A change the server refuses is dropped in the transaction that applies the verdict,
    /// and the app learns of it (with the lost content, which exists nowhere else) only
    /// after that. A process killed in between (`sync.afterApply`) leaves the report in the
    /// layer: the next sync tells it, once.
    @Test func aLostChangeWhoseProcessDiedBeforeTellingIsToldByTheNextSync() async throws {
        try await withTwoChangesThatWillLose { server, fixture in
            let killed = try await fixture.run("sync", failpoint: "sync.afterApply")
            #expect(killed.ending.signalled, "the sync should die after applying: \(killed.error)")
            #expect(!killed.error.contains("lost mine-0"), "killed before telling")

            let again = try await fixture.run("sync")
            #expect(again.ending.status == 0, "\(again.error)")
            #expect(again.output.contains("lost=2"), "\(again.output) \(again.error)")
            // With what won: the other writer's note, as the answer brought it.
            #expect(again.error.contains("lost mine-0: alreadyExists winner=theirs"), "\(again.error)")
            #expect(again.error.contains("lost mine-0: conflict winner=theirs"))
            let third = try await fixture.run("sync")
            #expect(third.output.contains("lost=0"), "told once: \(third.error)")
            try fixture.expectLocal(holds: ["mine-0"])
        }
    }

    /// A lost change told while an `events()` stream of the app has not taken it yet stays
    /// in the layer: a process killed then (the stream's buffer dies with it) leaves it to
    /// the next sync, which tells it again, once, rather than never.
    @Test func aLostChangeAStreamHadNotTakenWhenItsProcessDiedIsToldAgain() async throws {
        try await withTwoChangesThatWillLose { server, fixture in
            let child = try fixture.start("sync-unread")
            _ = try await child.waitForOutput(containing: "synced")
            #expect(child.standardOutput.contains("lost=2"), "told to the stream that reads: \(child.standardError)")
            child.signal(SIGKILL)
            _ = try await child.exit(within: .seconds(30))

            let again = try await fixture.run("sync")
            #expect(again.output.contains("lost=2"), "told again: \(again.output) \(again.error)")
            let third = try await fixture.run("sync")
            #expect(third.output.contains("lost=0"), "then forgotten: \(third.error)")
        }
    }

    /// What a download killed at a step leaves: nothing the catalog names (the PDF and its
    /// layer are committed together or not at all), downloading again completes it, and
    /// the store verifies clean once repair has swept what the dead process left (orphans,
    /// dead temp files), never anything that held data.
    @Test(arguments: [
        "blob.claimMade", "blob.beforeFsync", "blob.beforeCommit", "blob.afterRename", "download.afterPDF",
        "download.afterSnapshot", "layer.afterRename", "layer.afterInsert",
    ])
    func downloadKilled(failpoint: String) async throws {
        try await TestServer.with { server in
            let fixture = try await WorkerFixture(server: server)
            defer { fixture.removeRoot() }
            let killed = try await fixture.run("download", failpoint: failpoint)
            #expect(killed.ending.signalled, "the download should die at \(failpoint): \(killed.error)")
            let store = try InstantStore(root: fixture.root)
            defer { store.close() }
            let leftovers = try store.verify(VerifyOptions(deep: true)).remaining
            let harmless: Set<Problem.Kind> = [.orphanFile, .deadTempFile, .pendingTombstone]
            #expect(leftovers.allSatisfy { harmless.contains($0.kind) }, "\(leftovers)")
            #expect(try store.cacheEntries().isEmpty, "a PDF committed without its layer")

            try await fixture.expectOK("download")
            try await fixture.expectOK("add", "mine", "1")
            try await fixture.expectOK("sync")
            try await fixture.expectServer(holds: ["mine-0"], updated: "mine-0", revision: 1)
            try fixture.expectLocal(holds: ["mine-0"])
        }
    }
}

/// Several processes on one store: a layer's sync is held by one process at a time, and
/// neither a second syncing process nor `instantctl prune` loses or doubles a change.
@Suite(.serialized) struct ClientProcessesTests {
    @Test func aSyncWaitsForTheProcessHoldingTheLayersSyncLock() async throws {
        try await TestServer.with { server in
            let fixture = try await WorkerFixture(server: server)
            defer { fixture.removeRoot() }
            try await fixture.expectOK("download")
            try await fixture.expectOK("add", "mine", "1")
            let store = try InstantStore(root: fixture.root)
            defer { store.close() }
            let layer = try store.openLayer(tenant: TenantURL(server.base), document: "doc", layer: "L")
            defer { layer.close() }
            let held = try #require(try store.trySyncLock(layer))
            #expect(try store.trySyncLock(layer) == nil, "the lock is exclusive, within a process too")

            let child = try fixture.start("sync")
            _ = try await child.waitForOutput(containing: "started")
            try await Task.sleep(for: .seconds(1))
            #expect(!child.standardOutput.contains("ok"), "the sync must wait for the lock")
            #expect(try layer.pendingChangeCount() == 2, "nothing was sent or applied meanwhile")
            held.release()
            let ending = try await child.exit(within: .seconds(60))
            #expect(ending.status == 0 && child.standardOutput.contains("lost=0"), "\(child.standardError)")
            #expect(try layer.pendingChangeCount() == 0)
            try await fixture.expectServer(holds: ["mine-0"], updated: "mine-0", revision: 1)
        }
    }

    @Test func twoProcessesSyncingOneLayerWhilePruneRunsLoseNothing() async throws {
        try await TestServer.with { server in
            let fixture = try await WorkerFixture(server: server)
            defer { fixture.removeRoot() }
            try await fixture.expectOK("download")
            let count = 12
            let loops = try ["a", "b"].map { try fixture.start("sync-loop", $0, String(count)) }
            // `instantctl prune` with a budget no layer fits: it removes the layer whenever
            // it is clean, never while a change waits.
            var prunes = 0
            while loops.contains(where: \.isRunning) {
                try await fixture.prune()
                prunes += 1
            }
            for loop in loops {
                let ending = try await loop.exit(within: .seconds(120))
                #expect(ending.status == 0, "\(loop.standardError)")
                #expect(loop.standardOutput.contains("lost=0"), "\(loop.standardError)")
            }
            #expect(prunes > 0)
            let ids = (0..<count).flatMap { ["a-\($0)", "b-\($0)"] }.sorted()
            let list = try await server.api(.GET, "/documents/doc/layers/L/annotations").json(AnnotationList.self)
            #expect(list.data.annotations.map(\.id).sorted() == ids, "every change reached the server once")
            // The store, synced once more (or downloaded again, when prune took the clean
            // layer last), holds the server's records and nothing pending.
            let tenant = try TenantURL(server.base)
            let present = try InstantStore(root: fixture.root).localDescriptor(
                tenant: tenant, document: "doc", layer: "L")
            try await fixture.expectOK(present == nil ? "download" : "sync")
            let store = try InstantStore(root: fixture.root)
            defer { store.close() }
            let layer = try store.openLayer(tenant: tenant, document: "doc", layer: "L")
            defer { layer.close() }
            #expect(try layer.pendingChangeCount() == 0)
            let local = try layer.annotations()
            #expect(local.map(\.id) == ids)
            for record in list.data.annotations {
                let mine = try #require(local.first { $0.id == record.id })
                #expect(try JSONValue.parse(mine.content) == record.content)
            }
        }
    }
}

/// `body` with a worker's downloaded layer holding, offline, a create of `mine-0` and an
/// update of it, which another writer's create of `mine-0`, made first, will beat: the
/// create loses (`alreadyExists`), and the update, made on it, loses to theirs (`conflict`).
private func withTwoChangesThatWillLose(_ body: @Sendable (TestServer, WorkerFixture) async throws -> Void)
    async throws
{
    try await TestServer.with { server in
        let fixture = try await WorkerFixture(server: server)
        defer { fixture.removeRoot() }
        try await fixture.expectOK("download")
        try await fixture.expectOK("add", "mine", "1")
        let theirs = try await server.sync(
            "doc", token: fixture.jwt,
            SyncRequest(
                clientId: "another-client-0001", epoch: nil, baseRevision: 0,
                changes: [ClientChange(changeId: 1, kind: .create, id: "mine-0", content: note("theirs", id: nil))]))
        #expect(theirs.results.first?.accepted == true)
        try await body(server, fixture)
    }
}
