import Foundation
import GRDB
import Testing

@testable import InstantStore

/// Each local change keeps the server revision it was made against, so the server judges
/// it against what the layer showed then, not against a later cursor.
@Suite struct ChangeBaseTests {
    /// A layer at revision 3 with `s1` (from its snapshot) and `s2`, which a page of an
    /// unfinished sync brought at revision 5 (the cursor stays at 3 until the last page).
    func layerWithAPageApplied(_ scratch: Scratch) throws -> LayerDatabase {
        let layer = try scratch.store.createLayer(
            tenant: Scratch.tenant, document: "d", layer: "",
            snapshot: [ServerRecord(id: "s1", content: note("s1"), revision: 3)], revision: 3, epoch: "e1")
        try layer.applyServerChanges(
            [ServerChange(annotationID: "s2", content: note("s2 from another writer"), revision: 5)],
            newRevision: nil, acknowledgedThrough: nil)
        return layer
    }

    @Test func aChangeIsMadeAgainstTheCursorOrTheLaterRevisionItsRecordShows() throws {
        let scratch = try Scratch()
        let layer = try layerWithAPageApplied(scratch)
        defer { layer.close() }
        try layer.update(id: "s1", content: note("mine"))
        try layer.update(id: "s2", content: note("mine"))
        try layer.create(id: "new", content: note("mine"))
        try layer.delete(id: "s1")
        let bases = try layer.pendingChanges().map { "\($0.annotationID) \($0.baseRevision ?? -1)" }
        #expect(bases == ["s1 3", "s2 5", "new 3", "s1 3"])
    }

    /// `s1` is edited (base 3), and another writer's edit of it (revision 5) comes in an
    /// answer that does not decide the edit: the record keeps showing the edit. A second
    /// edit, made after the cursor moved to 6, is made on the first, so when the first is
    /// decided it hands its base on: the second must lose to the change it never showed.
    @Test func aDecidedChangeHandsItsBaseOnToTheLaterChangesOfItsRecord() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(
            tenant: Scratch.tenant, document: "d", layer: "",
            snapshot: [ServerRecord(id: "s1", content: note("s1"), revision: 3)], revision: 3, epoch: "e1")
        defer { layer.close() }
        try layer.update(id: "s1", content: note("first edit"))
        try layer.create(id: "other", content: note("other"))
        try layer.applyServerChanges(
            [ServerChange(annotationID: "s1", content: note("another writer"), revision: 5)], newRevision: 6,
            acknowledgedThrough: nil)
        #expect(try layer.annotation(id: "s1")?.content == note("first edit"))
        try layer.update(id: "s1", content: note("second edit"))
        try layer.update(id: "other", content: note("other, edited"))
        let made = try layer.pendingChanges()
        #expect(made.map { $0.baseRevision ?? -1 } == [3, 3, 6, 6], "the second edit alone sees revision 6")
        // The first edit and the create are decided.
        try layer.applyServerChanges(
            [ServerChange(annotationID: "other", content: note("other"), revision: 7)], newRevision: 7,
            acknowledgedThrough: made[1].sequence)
        let left = try layer.pendingChanges()
        #expect(left.map(\.annotationID) == ["s1", "other"])
        #expect(left.map { $0.baseRevision ?? -1 } == [3, 3])
    }

    /// An answer in pages rejects the edit of `s1` (another writer changed it) and brings
    /// that writer's version on its first page. An edit made on the rejected one before
    /// that page keeps the rejected one's base; an edit made after it, on the writer's
    /// version the layer showed, keeps its own, also once the last page drops the decided
    /// change.
    @Test func aDecidedChangeHandsItsBaseOnOnlyToTheChangesMadeOnIt() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(
            tenant: Scratch.tenant, document: "d", layer: "",
            snapshot: [ServerRecord(id: "s1", content: note("s1"), revision: 3)], revision: 3, epoch: "e1")
        defer { layer.close() }
        try layer.update(id: "s1", content: note("rejected edit"))
        let decided = try #require(try layer.pendingChanges().last?.sequence)
        // Sent; meanwhile an edit on top of it.
        try layer.update(id: "s1", content: note("on the rejected edit"))
        // The first page brings the other writer's version; the rejected edit is not put back.
        try layer.applyServerChanges(
            [ServerChange(annotationID: "s1", content: note("another writer"), revision: 5)], newRevision: nil,
            acknowledgedThrough: nil, decidedThrough: decided)
        #expect(try layer.annotation(id: "s1")?.content == note("on the rejected edit"))
        #expect(try layer.pendingChanges().map(\.baseRevision) == [nil, 3], "handed on, then cleared")
        // Another edit, on the one above (still pending): it keeps what the record showed
        // of the server (5); a sync sends its record's earliest base (3) with both.
        try layer.update(id: "s1", content: note("after the page"))
        try layer.applyServerChanges(
            [], newRevision: 6, epoch: "e1", acknowledgedThrough: decided, decidedThrough: decided)
        #expect(try layer.pendingChanges().map(\.baseRevision) == [3, 5], "the last page hands nothing on again")

        // Once a page has shown the writer's version with nothing pending on it, a new
        // edit is made on that version, and keeps its base past the last page.
        try layer.applySnapshot(
            [ServerRecord(id: "s2", content: note("s2"), revision: 6)], revision: 6, epoch: "e1",
            acknowledgedThrough: try layer.pendingChanges().last?.sequence)
        try layer.update(id: "s2", content: note("rejected"))
        let second = try #require(try layer.pendingChanges().last?.sequence)
        try layer.applyServerChanges(
            [ServerChange(annotationID: "s2", content: note("writer"), revision: 8)], newRevision: nil,
            acknowledgedThrough: nil, decidedThrough: second)
        #expect(try layer.annotation(id: "s2")?.content == note("writer"))
        try layer.update(id: "s2", content: note("on the writer's"))
        try layer.applyServerChanges(
            [], newRevision: 9, epoch: "e1", acknowledgedThrough: second, decidedThrough: second)
        #expect(try layer.pendingChanges().map(\.baseRevision) == [8], "made on the writer's version at 8")
    }

    /// A snapshot the answer called for keeps the bases, whatever its epoch (a named layer's
    /// first write forks it from the default layer under a new epoch, keeping revisions);
    /// one of another history (the layer was created again) replaces them.
    @Test func aSnapshotKeepsTheBasesUnlessItIsOfAnotherHistory() throws {
        let scratch = try Scratch()
        let layer = try layerWithAPageApplied(scratch)
        defer { layer.close() }
        try layer.update(id: "s1", content: note("mine"))
        try layer.applySnapshot(
            [ServerRecord(id: "s1", content: note("s1 changed"), revision: 8)], revision: 9, epoch: "fork")
        #expect(try layer.pendingChanges().map(\.baseRevision) == [3])
        #expect(try layer.annotation(id: "s1")?.content == note("mine"))
        // The layer was created again on the server: its revisions start again, and the
        // edit is applied on top of the new layer's snapshot.
        try layer.applySnapshot(
            [ServerRecord(id: "s1", content: note("s1 again"), revision: 2)], revision: 2, epoch: "e2",
            rebasingPending: true)
        #expect(try layer.pendingChanges().map(\.baseRevision) == [2])
        #expect(try layer.metadata().epoch == "e2")
    }

    /// A file of the format before layer-v4 gets, for each pending change, the cursor it
    /// would have been sent against.
    @Test func aFileFromBeforeGetsTheCursorAsItsChangesBase() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "", revision: 7)
        try layer.create(id: "a", content: note("kept"))
        let path = scratch.store.layout.layerPath(key: layer.key)
        layer.close()
        try makeFileFromBeforeChangeBases(path)
        let upgraded = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        #expect(try upgraded.pendingChanges().map(\.baseRevision) == [7])
        try upgraded.update(id: "a", content: note("again"))
        #expect(try upgraded.pendingChanges().map(\.baseRevision) == [7, 7])
        upgraded.close()
        // A file that a build of this day marked layer-v4 with the column already there.
        let marked = try DatabaseQueue(path: path)
        try marked.write { db in try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'layer-v5'") }
        try marked.close()
        let again = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        defer { again.close() }
        #expect(try again.pendingChanges().count == 2)
    }

    /// A damaged file of the format before layer-v4 is read by the salvage, not upgraded:
    /// its changes have no base. The replacement gives each the cursor they would have
    /// been sent against (as the upgrade of a sound file does), not none, which would send
    /// them against the replacement's first snapshot and overwrite what they never saw.
    @Test func changesSalvagedFromADamagedOlderFileGetTheCursorAsTheirBase() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(
            tenant: Scratch.tenant, document: "d", layer: "", snapshot: manyPageSnapshot("b"), revision: 7,
            epoch: "e1")
        try layer.update(id: "r1", content: note("mine"))
        let path = scratch.store.layout.layerPath(key: layer.key)
        layer.close()
        try makeFileFromBeforeChangeBases(path)
        try damageLastPage(path)

        let report = try scratch.store.verify(VerifyOptions(repair: true))
        #expect(report.pendingChangesSalvaged == 1, "\(report.problems)")
        let replaced = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        defer { replaced.close() }
        #expect(try replaced.pendingChanges().map(\.baseRevision) == [7])
        #expect(try replaced.metadata().pendingBasesEpoch == "e1")
    }
}

/// Turns a closed layer file into one of the format before layer-v4: no change bases, no
/// `baseEpoch`, and neither migration recorded.
private func makeFileFromBeforeChangeBases(_ path: String) throws {
    let old = try DatabaseQueue(path: path)
    try old.write { db in
        try db.execute(sql: "ALTER TABLE localChange DROP COLUMN baseRevision")
        try db.execute(sql: "ALTER TABLE meta DROP COLUMN baseEpoch")
        try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier IN ('layer-v4', 'layer-v5')")
    }
    try old.close()
}
