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

        try layer.forgetLostChangeReports(through: reports[0].sequence)
        #expect(try layer.lostChangeReports() == [reports[1]])
        // A snapshot's transaction keeps them too.
        try layer.delete(id: "a")
        let deletion = try #require(try layer.pendingChanges().last)
        let refused = LostChangeReport(deletion, reason: "notFound", message: nil)
        try layer.applySnapshot([], revision: 3, acknowledgedThrough: deletion.sequence, losing: [refused])
        #expect(try layer.lostChangeReports() == [reports[1], refused])
        #expect(try layer.lostChangeReports().last?.content == nil)
        try layer.forgetLostChangeReports(through: deletion.sequence)
        #expect(try layer.lostChangeReports().isEmpty)
    }

    /// A file of the format before layer-v6 gets the table when it is opened.
    @Test func aFileFromBeforeGetsTheTable() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "", revision: 1)
        try layer.create(id: "a", content: note("kept"))
        let path = scratch.store.layout.layerPath(key: layer.key)
        layer.close()
        let old = try DatabaseQueue(path: path)
        try old.write { db in
            try db.execute(sql: "DROP TABLE lostChange")
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'layer-v6'")
        }
        try old.close()
        let upgraded = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        defer { upgraded.close() }
        #expect(try upgraded.lostChangeReports().isEmpty)
        let change = try #require(try upgraded.pendingChanges().first)
        try upgraded.applyServerChanges(
            [], newRevision: 2, acknowledgedThrough: change.sequence,
            losing: [LostChangeReport(change, reason: "alreadyExists", message: nil)])
        #expect(try upgraded.lostChangeReports().map(\.annotationID) == ["a"])
        #expect(try upgraded.pendingChangeCount() == 0)
    }
}
