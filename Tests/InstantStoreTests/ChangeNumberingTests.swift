import Foundation
import GRDB
import Testing

@testable import InstantStore

/// A local change's number is the `changeId` the server keys its verdict by, for as long as
/// the layer's client id lives: a number given twice would be answered with the first
/// change's verdict, and the second change taken as done. Since layer-v3 the numbers come
/// from the pending changes and `meta.changeNumberFloor`, not from AUTOINCREMENT.
@Suite struct ChangeNumberingTests {
    @Test func numbersGoOnAfterEveryChangeIsDecided() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        for number in 0..<3 { try layer.create(id: "n\(number)", content: note("\(number)")) }
        #expect(try layer.pendingChanges().map(\.sequence) == [1, 2, 3])
        try layer.applyServerChanges([], newRevision: 1, acknowledgedThrough: 3)
        #expect(try layer.pendingChangeCount() == 0)
        try layer.create(id: "after", content: note("after"))
        #expect(try layer.pendingChanges().map(\.sequence) == [4])
        try layer.applySnapshot([], revision: 2, acknowledgedThrough: 4)
        layer.close()
        // Another process (a second store on the root) goes on from there too.
        let reopened = try InstantStore(root: scratch.root).openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        try reopened.create(id: "later", content: note("later"))
        #expect(try reopened.pendingChanges().map(\.sequence) == [5])
        #expect(try reopened.changeCounts() == (1, 5))
    }

    /// The floor follows every deletion, whoever makes it: not only the first changes
    /// (what the server acknowledges), and not only through the two calls that do it now.
    @Test func aDeletedChangeRaisesTheFloorWhoeverDeletesIt() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        for number in 0..<3 { try layer.create(id: "n\(number)", content: note("\(number)")) }
        let queue = try DatabaseQueue(path: scratch.store.layout.layerPath(key: layer.key))
        try queue.write { db in try db.execute(sql: "DELETE FROM localChange WHERE seq = 3") }
        try queue.close()
        try layer.create(id: "next", content: note("next"))
        #expect(try layer.pendingChanges().map(\.sequence) == [1, 2, 4])
    }

    /// A file of the second format: its changes in `pendingChange`, numbered by
    /// AUTOINCREMENT, which remembers numbers whose changes are gone.
    @Test(arguments: [false, true])
    func aFileOfTheSecondFormatKeepsItsChangesAndItsNumbers(allDecided: Bool) throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        for number in 0..<3 { try layer.create(id: "n\(number)", content: note("\(number)")) }
        try layer.applyServerChanges([], newRevision: 1, acknowledgedThrough: allDecided ? 3 : 1)
        let before = try layer.pendingChanges()
        let path = scratch.store.layout.layerPath(key: layer.key)
        layer.close()
        let old = try DatabaseQueue(path: path)
        try old.write { db in try downgradeToTheSecondFormat(db, lastNumber: 5) }
        try old.close()

        let upgraded = try InstantStore(root: scratch.root).openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        // The same changes; made against the cursor they would have been sent with (1).
        let after = try upgraded.pendingChanges()
        #expect(
            after.map {
                var change = $0; change.baseRevision = nil; return change
            }
                == before.map {
                    var change = $0; change.baseRevision = nil; return change
                })
        #expect(after.allSatisfy { $0.baseRevision == 1 })
        #expect(try upgraded.changeCounts() == (before.count, 5))
        try upgraded.create(id: "new", content: note("new"))
        #expect(try upgraded.pendingChanges().last?.sequence == 6)
        // A process of the older version that had the file open fails on its next change
        // instead of numbering it by SQLite's default.
        let older = try DatabaseQueue(path: path)
        #expect(throws: DatabaseError.self) {
            try older.write { db in
                try db.execute(
                    sql:
                        "INSERT INTO pendingChange (annotationId, kind, content, createdAt) VALUES (?, 'delete', NULL, 0)",
                    arguments: [Data("n2".utf8)])
            }
        }
        try older.close()
        #expect(try upgraded.pendingChanges().count == before.count + 1)
    }

    /// A replacement (repair) takes over the client id with the pending changes, so it
    /// numbers past the old file's last number, not just past the changes it carries.
    @Test func aRepairedLayerNumbersPastTheOldFilesLastNumber() throws {
        let scratch = try Scratch()
        let (_, path) = try closedLayer(scratch, changes: 3, snapshot: manyPageSnapshot("n"))
        let opened = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        let clientID = try opened.metadata().clientID
        opened.close()
        // The last change is gone (the floor is 3 now), and the file fails verify but opens:
        // a page of its records is damaged.
        try rewrite(path) { db in try db.execute(sql: "DELETE FROM localChange WHERE seq = 3") }
        try damageLastPage(path)

        let report = try scratch.store.verify(VerifyOptions(repair: true))
        #expect(report.pendingChangesSalvaged == 2, "\(report.problems)")
        let fresh = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        #expect(try fresh.metadata().clientID == clientID)
        try fresh.create(id: "after", content: note("after the repair"))
        let numbers = try fresh.pendingChanges().map(\.sequence)
        #expect(numbers.prefix(2) == [1, 2] && numbers.count == 3)
        #expect(numbers[2] > 3 + LayerDatabase.adoptionNumberGap)
    }

    /// A restored (or adopted) file may share its client id with a file that went on
    /// numbering meanwhile (a repair's replacement): it numbers far past what it held.
    @Test func aRestoredLayerNumbersFarPastWhatItHeld() throws {
        let scratch = try Scratch()
        let (key, _) = try closedLayer(scratch, changes: 1)
        let name = try #require(try scratch.store.layout.quarantine(StoreLayout.layerRelativePath(key: key)))
        try dropLayerRow(scratch.store, key: key)
        let before = LayerDatabase.numberFloor(past: 0)
        try scratch.store.restoreQuarantinedLayer(named: name)
        let back = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        try back.create(id: "b", content: note("b"))
        let numbers = try back.pendingChanges().map(\.sequence)
        #expect(numbers.first == 1 && numbers.count == 2)
        #expect(numbers[1] > max(1 + LayerDatabase.adoptionNumberGap, before))
    }

    /// Two files made from one original at different moments (a quarantined copy restored
    /// twice, after a restore killed before it removed the copy) start apart by more than
    /// either can number in between.
    @Test func floorsOfFilesMadeAtDifferentMomentsAreFarApart() throws {
        let first = LayerDatabase.numberFloor(past: 7)
        #expect(first >= 7 + LayerDatabase.adoptionNumberGap)
        Thread.sleep(forTimeInterval: 0.005)
        let second = LayerDatabase.numberFloor(past: 7)
        #expect(second - first >= 4 * 1024)
        // Below 2^53, so a JSON reader that holds numbers as doubles reads them exactly.
        #expect(second < 1 << 53)
    }

    /// An upgrade writes into the file: a damaged one is reported corrupt instead, left as
    /// it is, and its changes salvaged from the older table.
    @Test func aDamagedFileOfTheSecondFormatIsNotUpgradedButSalvaged() throws {
        let scratch = try Scratch()
        let (_, path) = try damagedLayerOfTheSecondFormat(scratch)
        let damaged = try Data(contentsOf: URL(fileURLWithPath: path))

        #expect {
            _ = try InstantStore(root: scratch.root).openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        } throws: { error in
            guard case StoreError.corruptLayer = error else { return false }
            return true
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == damaged)
        let reader = try DatabaseQueue(path: path, configuration: readOnly())
        #expect(try reader.read { db in try db.tableExists("pendingChange") && !db.tableExists("localChange") })
        try reader.close()
        let report = try scratch.store.verify(VerifyOptions(repair: true))
        #expect(report.pendingChangesSalvaged == 1, "\(report.problems)")
        let fresh = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        #expect(try fresh.pendingChanges().map(\.annotationID) == ["n0"])
    }

    /// A quarantined copy is upgraded even when damaged (the quarantined file stays as it
    /// is): its changes can still be exported. It is not restored: that would adopt the
    /// upgraded copy and delete the original.
    @Test func aDamagedQuarantinedFileOfTheSecondFormatCanBeExportedButNotRestored() throws {
        let scratch = try Scratch()
        let (key, path) = try damagedLayerOfTheSecondFormat(scratch)
        let damaged = try Data(contentsOf: URL(fileURLWithPath: path))
        let name = try #require(try scratch.store.layout.quarantine(StoreLayout.layerRelativePath(key: key)))
        try dropLayerRow(scratch.store, key: key)
        let copy = try scratch.store.openQuarantinedLayer(named: name)
        #expect(try copy.database.pendingChanges().map(\.annotationID) == ["n0"])
        copy.close()
        #expect(throws: StoreError.self) { try scratch.store.restoreQuarantinedLayer(named: name) }
        let quarantined = scratch.root.appendingPathComponent("quarantine/" + name)
        #expect(try Data(contentsOf: quarantined) == damaged)
    }

    /// The trigger that raises the floor is part of a sound layer: a file without it is
    /// found by verify and replaced, keeping its changes.
    @Test func aLayerWithoutTheNumberingTriggerIsFoundAndReplaced() throws {
        let scratch = try Scratch()
        let (_, path) = try closedLayer(scratch, changes: 2)
        // Without the trigger, a deletion leaves the floor behind: 2 was used, and the file
        // no longer says so.
        try rewrite(path) { db in
            try db.execute(sql: "DROP TRIGGER localChangeDecided")
            try db.execute(sql: "DELETE FROM localChange WHERE seq = 2")
        }
        #expect(try scratch.store.verify().remaining.map(\.kind) == [.corruptLayer])
        let report = try scratch.store.verify(VerifyOptions(repair: true))
        #expect(report.pendingChangesSalvaged == 1, "\(report.problems)")
        let fresh = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        try fresh.create(id: "after", content: note("after the repair"))
        let numbers = try fresh.pendingChanges().map(\.sequence)
        #expect(numbers.first == 1 && numbers.count == 2 && numbers[1] > 2 + LayerDatabase.adoptionNumberGap)
        #expect(try scratch.store.verify().isClean)
    }
}

private func readOnly() -> Configuration {
    var configuration = Configuration()
    configuration.readonly = true
    return configuration
}

/// Turns a layer file back into the format before layer-v3: the changes in
/// `pendingChange`, numbered by AUTOINCREMENT, whose record says `lastNumber` was given.
func downgradeToTheSecondFormat(_ db: Database, lastNumber: Int64) throws {
    try db.execute(
        sql: """
            CREATE TABLE pendingChange (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                annotationId BLOB NOT NULL,
                kind TEXT NOT NULL CHECK (kind IN ('create', 'update', 'delete')),
                content BLOB,
                createdAt DATETIME NOT NULL)
            """)
    try db.execute(sql: "INSERT INTO pendingChange SELECT seq, annotationId, kind, content, createdAt FROM localChange")
    try db.execute(sql: "DROP TABLE localChange")
    try db.execute(sql: "ALTER TABLE meta DROP COLUMN changeNumberFloor")
    try db.execute(sql: "ALTER TABLE meta DROP COLUMN baseEpoch")
    try db.execute(sql: "DELETE FROM sqlite_sequence WHERE name = 'pendingChange'")
    try db.execute(sql: "INSERT INTO sqlite_sequence (name, seq) VALUES ('pendingChange', ?)", arguments: [lastNumber])
    try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier IN ('layer-v3', 'layer-v4', 'layer-v5')")
}

/// A closed layer file of the second format holding one change ("n0") and 400 records,
/// one page of which, in the middle of the file, is overwritten: `quick_check` fails,
/// the change stays readable.
private func damagedLayerOfTheSecondFormat(_ scratch: Scratch) throws -> (key: String, path: String) {
    let (key, path) = try closedLayer(scratch, changes: 1)
    try rewrite(path) { db in
        try downgradeToTheSecondFormat(db, lastNumber: 1)
        for record in manyPageSnapshot("x") {
            try db.execute(
                sql: "INSERT INTO record (annotationId, content, serverRevision) VALUES (?, ?, 1)",
                arguments: [Data(record.id.utf8), record.content])
        }
    }
    // Table by table in schema order: the records' pages fill the middle of the file.
    let queue = try DatabaseQueue(path: path)
    try queue.writeWithoutTransaction { db in try db.execute(sql: "VACUUM") }
    try queue.close()
    let pages = try #require(try FileSystem.fileSize(path)) / 4096
    let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
    try handle.seek(toOffset: UInt64(pages / 2 * 4096))
    try handle.write(contentsOf: Data(repeating: 0xA5, count: 4096))
    try handle.close()
    return (key, path)
}

/// A closed layer file of document "d" holding `count` pending changes, numbered 1 to `count`.
private func closedLayer(_ scratch: Scratch, changes count: Int, snapshot: [ServerRecord] = []) throws -> (
    key: String, path: String
) {
    let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "", snapshot: snapshot)
    for number in 0..<count { try layer.create(id: "n\(number)", content: note("\(number)")) }
    layer.close()
    return (layer.key, scratch.store.layout.layerPath(key: layer.key))
}

/// Changes a closed layer file behind the store's back.
private func rewrite(_ path: String, _ change: (Database) throws -> Void) throws {
    let queue = try DatabaseQueue(path: path)
    try queue.write(change)
    try queue.close()
}
