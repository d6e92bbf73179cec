import Foundation
import GRDB
import Testing

@testable import InstantStore

/// A change the server refused is kept, with its content, by the transaction that drops it
/// (the last page's, or a snapshot's), until the client has told the app and forgets it.
@Suite struct LostChangeReportTests {
    @Test func aRefusedChangeIsKeptByTheTransactionThatDropsItUntilForgotten() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "", revision: 1)
        defer { layer.close() }
        try layer.create(id: "a", content: note("mine"))
        try layer.update(id: "a", content: note("mine again"))
        let pending = try layer.pendingChanges()
        let reports = pending.map { LostChangeReport($0, reason: "conflict", message: "another writer was first") }
        let theirs = ServerChange(annotationID: "a", content: note("theirs"), revision: 2)
        try layer.applyServerChanges(
            [theirs], newRevision: 2, acknowledgedThrough: pending.last?.sequence, losing: reports)
        #expect(try layer.pendingChangeCount() == 0)
        #expect(try layer.lostChangeReports() == reports)
        #expect(try layer.lostChangeReports().map(\.content) == [note("mine"), note("mine again")])
        #expect(try layer.annotation(id: "a")?.content == note("theirs"))

        try layer.forgetLostChangeReports([reports[0].sequence])
        #expect(try layer.lostChangeReports() == [reports[1]])
        // A snapshot's transaction keeps them too.
        try layer.delete(id: "a")
        let deletion = try #require(try layer.pendingChanges().last)
        let refused = LostChangeReport(deletion, reason: "notFound", message: nil)
        try layer.applySnapshot([], revision: 3, acknowledgedThrough: deletion.sequence, losing: [refused])
        #expect(try layer.lostChangeReports() == [reports[1], refused])
        #expect(try layer.lostChangeReports().last?.content == nil)
        #expect(try layer.liveLocalChangeCount() == 2)
        #expect(try layer.liveLocalChangeCount(excludingLost: [deletion.sequence]) == 1, "told, not taken")
        try layer.forgetLostChangeReports([deletion.sequence])
        #expect(try layer.lostChangeReports() == [reports[1]], "only those named")
        try layer.forgetLostChangeReports([reports[1].sequence])
        #expect(try layer.lostChangeReports().isEmpty)
    }

    /// A handle kept open over a layer that a repair replaced (its lost changes carried into
    /// the new file) reads no lost change: told from it, they would be told again from the
    /// new file.
    @Test func aReplacedLayersHandleReadsNoLostChange() throws {
        let scratch = try Scratch()
        let created = try scratch.store.createLayer(
            tenant: Scratch.tenant, document: "d", layer: "", snapshot: manyPageSnapshot("x"), revision: 1)
        try created.create(id: "a", content: note("mine"))
        let change = try #require(try created.pendingChanges().first)
        try created.applyServerChanges(
            [], newRevision: 2, acknowledgedThrough: change.sequence,
            losing: [LostChangeReport(change, reason: "conflict", message: nil)])
        created.close()
        try damageLastPage(scratch.store.layout.layerPath(key: created.key))
        let open = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        defer { open.close() }
        _ = try scratch.store.verify(VerifyOptions(repair: true))
        #expect {
            try open.lostChangeReports()
        } throws: { ($0 as? StoreError)?.code == "layer_removed" }
        let fresh = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        defer { fresh.close() }
        #expect(try fresh.key != open.key && fresh.lostChangeReports().map(\.annotationID) == ["a"])
    }

    /// A layer whose only local data is a lost change not told yet (with what won) counts
    /// it as pending in the catalog, and is kept by what must not lose changes: a removal
    /// that refuses them (prune's), and garbage collection, which takes the file back
    /// rather than delete it. A removal allowed through its number (an export, which
    /// writes it out) or a forced one takes it.
    @Test func anUntoldLostChangeKeepsItsLayerFromCleanups() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "", revision: 1)
        try layer.create(id: "a", content: note("mine"))
        let change = try #require(try layer.pendingChanges().first)
        try layer.applyServerChanges(
            [ServerChange(annotationID: "a", content: note("theirs"), revision: 2)], newRevision: 2,
            acknowledgedThrough: change.sequence,
            losing: [LostChangeReport(change, reason: "alreadyExists", message: nil, winner: note("theirs"))])
        #expect(try layer.pendingChangeCount() == 0)
        #expect(try layer.lostChangeReports().map(\.winner) == [note("theirs")])
        let key = layer.key
        layer.close()
        #expect(try scratch.store.localDescriptors().map(\.pendingChangeCount) == [1])

        #expect(throws: StoreError.pendingChanges(layers: 1, changes: 1)) {
            try scratch.store.removeLayer(tenant: Scratch.tenant, document: "d", layer: "", pendingChanges: .refuse)
        }
        let pruned = try scratch.store.prune(PruneOptions(olderThan: 0))
        #expect(pruned.removed.layers.isEmpty, "\(pruned.removed)")
        try dropLayerRow(scratch.store, key: key)
        _ = try scratch.store.collectGarbage()
        let back = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        #expect(try back.lostChangeReports().map(\.annotationID) == ["a"], "taken back, not deleted")
        let backKey = back.key
        back.close()
        let reference = LayerReference(tenant: Scratch.tenant, document: "d", layer: "")
        #expect(throws: StoreError.pendingChanges(layers: 1, changes: 1)) {
            try scratch.store.removeLayer(
                tenant: Scratch.tenant, document: "d", layer: "",
                pendingChanges: .discardThrough([
                    reference: ExportedChanges(key: backKey, sequence: change.sequence - 1)
                ]))
        }
        let removed = try scratch.store.removeLayer(
            tenant: Scratch.tenant, document: "d", layer: "",
            pendingChanges: .discardThrough([reference: ExportedChanges(key: backKey, sequence: change.sequence)]))
        #expect(removed.discardedPendingChanges == 1)
        #expect(try scratch.store.localDescriptors().isEmpty)
    }

    /// A file of an older format gets what it lacks when it is opened: before layer-v6,
    /// the table; marked layer-v6 by a build of the same day, without `winner`, the column.
    @Test(arguments: [
        ["DROP TABLE lostChange", "DELETE FROM grdb_migrations WHERE identifier IN ('layer-v6', 'layer-v7')"],
        ["ALTER TABLE lostChange DROP COLUMN winner", "DELETE FROM grdb_migrations WHERE identifier = 'layer-v7'"],
    ])
    func aFileOfAnOlderFormatIsUpgraded(downgrade: [String]) throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "", revision: 1)
        try layer.create(id: "a", content: note("kept"))
        let path = scratch.store.layout.layerPath(key: layer.key)
        layer.close()
        let old = try DatabaseQueue(path: path)
        try old.write { db in for sql in downgrade { try db.execute(sql: sql) } }
        try old.close()
        let upgraded = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        defer { upgraded.close() }
        #expect(try upgraded.lostChangeReports().isEmpty)
        let change = try #require(try upgraded.pendingChanges().first)
        try upgraded.applyServerChanges(
            [], newRevision: 2, acknowledgedThrough: change.sequence,
            losing: [LostChangeReport(change, reason: "conflict", message: nil, winner: note("theirs"))])
        #expect(try upgraded.lostChangeReports().map(\.winner) == [note("theirs")])
        #expect(try upgraded.pendingChangeCount() == 0)
    }

    /// A repair that replaces a damaged layer file carries its untold lost changes into
    /// the new file, as it does its pending changes.
    @Test func aRepairCarriesUntoldLostChangesOver() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(
            tenant: Scratch.tenant, document: "d", layer: "", snapshot: manyPageSnapshot("b"), revision: 7,
            epoch: "e1")
        try layer.update(id: "r1", content: note("mine"))
        try layer.update(id: "r2", content: note("kept"))
        let lostOne = try #require(try layer.pendingChanges().first)
        try layer.applyServerChanges(
            [], newRevision: nil, acknowledgedThrough: lostOne.sequence,
            losing: [LostChangeReport(lostOne, reason: "conflict", message: nil, winner: note("theirs"))])
        let path = scratch.store.layout.layerPath(key: layer.key)
        layer.close()
        try damageLastPage(path)

        let report = try scratch.store.verify(VerifyOptions(repair: true))
        #expect(report.pendingChangesSalvaged == 1, "\(report.problems)")
        let replaced = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        defer { replaced.close() }
        #expect(try replaced.pendingChanges().map(\.annotationID) == ["r2"])
        let carried = try replaced.lostChangeReports()
        #expect(carried.map(\.annotationID) == ["r1"] && carried.first?.winner == note("theirs"))
    }
}
