import Foundation
import GRDB
import Testing

@testable import InstantStore

/// A layer file whose SQLite structure is sound but which holds a value of the wrong type
/// (a date that is not one, text where a number goes: damage `quick_check` does not see in
/// tables that are not STRICT). GRDB's subscripts trap on such a value; every read of a
/// layer decodes with `throws` instead, so the file is corrupt, never a crash, for the app
/// and for the recovery paths, which keep what they could not read.
@Suite(.serialized) struct DamagedValueTests {
    private let note = Data(#"{"v":2,"type":"pspdfkit/note","pageIndex":0,"bbox":[0,0,1,1]}"#.utf8)

    /// A layer with a pending change, then `damage` written to its file directly.
    private func damagedLayer(_ damage: String) throws -> (Scratch, key: String) {
        let scratch = try Scratch()
        try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "d", from: scratch.file(samplePDF(seed: 3)))
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        try layer.create(id: "n", content: note)
        let key = layer.key
        layer.close()
        let queue = try DatabaseQueue(path: scratch.store.layout.layerPath(key: key))
        try queue.write { db in try db.execute(sql: damage) }
        try queue.close()
        return (scratch, key)
    }

    /// A second pending change, of the annotation whose id is the hex bytes given, with a
    /// kind no change has: damage the schema's CHECK refuses from a writer, written past
    /// it, as a flipped byte in a record would be.
    private func addChangeOfNoKind(annotationID hex: String, to scratch: Scratch, key: String) throws {
        let queue = try DatabaseQueue(path: scratch.store.layout.layerPath(key: key))
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA ignore_check_constraints = ON") }
        try queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO localChange (seq, annotationId, kind, content, createdAt, baseRevision)
                    VALUES (2, X'\(hex)', 42, NULL, '2026-01-01 00:00:00.000', 0)
                    """)
        }
        try queue.close()
    }

    private func isCorrupt(_ error: StoreError) -> Bool {
        if case .corruptLayer = error { true } else { false }
    }

    @Test func aPendingChangeThatCannotBeDecodedIsCorruptionNotACrash() throws {
        let (scratch, key) = try damagedLayer("UPDATE localChange SET createdAt = 'not a date'")
        defer { try? FileManager.default.removeItem(at: scratch.root) }
        let layer = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        defer { layer.close() }
        #expect(throws: StoreError.self) { try layer.pendingChanges() }
        do {
            _ = try layer.pendingChanges()
        } catch {
            #expect(isCorrupt(error), "\(error)")
        }
        // A deep verify, and its repair, decode every change: reported, and the file kept
        // (in place, or set aside in quarantine), never deleted.
        let report = try scratch.store.verify(VerifyOptions(deep: true, repair: true))
        #expect(report.problems.contains { $0.kind == .corruptLayer }, "\(report.problems)")
        let kept =
            scratch.files(in: "layers").contains { $0.hasPrefix(key) }
            || scratch.files(in: "quarantine").contains { $0.contains(key) }
        #expect(kept, "layers: \(scratch.files(in: "layers")), quarantine: \(scratch.files(in: "quarantine"))")
        // The repair carries the change into the new file, read row by row (its creation
        // time, which could not be read, is the repair's); the old file is evidence.
        #expect(report.pendingChangesSalvaged == 1 && report.pendingChangesUnreadable == 0, "\(report)")
        let repaired = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        defer { repaired.close() }
        #expect(try repaired.pendingChanges().map(\.annotationID) == ["n"])
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// An annotation's changes are a chain: its create carried without the delete after
    /// it (whose kind cannot be read) would bring the note back for every collaborator.
    /// Both are left out, and with no change carried the layer is flagged corrupt: the
    /// client reports it invalid, and the changes are in the quarantined old file.
    @Test func aRepairCarriesNoPartOfABrokenChain() throws {
        let (scratch, key) = try damagedLayer("UPDATE localChange SET createdAt = 'not a date'")
        defer { try? FileManager.default.removeItem(at: scratch.root) }
        try addChangeOfNoKind(annotationID: "6E", to: scratch, key: key)  // "n"'s
        let report = try scratch.store.verify(VerifyOptions(deep: true, repair: true))
        #expect(report.pendingChangesSalvaged == 0 && report.pendingChangesUnreadable == 2, "\(report)")
        let descriptor = try #require(try scratch.store.localDescriptors().first)
        #expect(descriptor.state == .invalid && descriptor.pendingChangeCount == 0)
        #expect(try scratch.store.quarantinedFiles().count == 1)
    }

    /// A create whose content is no longer JSON is found by a deep verify, and not carried
    /// by the repair: sent, it would stop every later sync of the layer (the round reads
    /// each change's content).
    @Test func aChangeWhoseContentIsNotJSONIsNotCarried() throws {
        let (scratch, _) = try damagedLayer("UPDATE localChange SET content = X'00FF7B'")
        defer { try? FileManager.default.removeItem(at: scratch.root) }
        let report = try scratch.store.verify(VerifyOptions(deep: true, repair: true))
        #expect(report.pendingChangesSalvaged == 0 && report.pendingChangesUnreadable == 1, "\(report)")
        #expect(try scratch.store.localDescriptors().first?.state == .invalid)
    }

    /// Of two pending changes, one has no readable kind: the repair carries the other and
    /// reports that one unreadable (it stays in the quarantined old file).
    @Test func aRepairCarriesTheChangesItCanReadAndReportsTheRest() throws {
        let (scratch, key) = try damagedLayer("UPDATE localChange SET createdAt = 'not a date'")
        defer { try? FileManager.default.removeItem(at: scratch.root) }
        try addChangeOfNoKind(annotationID: "6D", to: scratch, key: key)  // "m"'s
        let report = try scratch.store.verify(VerifyOptions(deep: true, repair: true))
        #expect(report.pendingChangesSalvaged == 1 && report.pendingChangesUnreadable == 1, "\(report)")
        let repaired = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        defer { repaired.close() }
        #expect(try repaired.pendingChanges().map(\.annotationID) == ["n"])
        #expect(try scratch.store.quarantinedFiles().count == 1)
    }

    @Test func aMetaRowWithTextForANumberIsCorruptionNotACrash() throws {
        let (scratch, _) = try damagedLayer("UPDATE meta SET lastServerRevision = 'many'")
        defer { try? FileManager.default.removeItem(at: scratch.root) }
        #expect(throws: StoreError.self) {
            let layer = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
            defer { layer.close() }
            _ = try layer.metadata()
        }
        let report = try scratch.store.verify(VerifyOptions(repair: true))
        #expect(report.problems.contains { $0.kind == .corruptLayer }, "\(report.problems)")
        // Lost catalog: the rebuild reads every layer file's meta row.
        scratch.store.close()
        for suffix in ["", "-wal", "-shm"] {
            try? FileManager.default.removeItem(atPath: scratch.store.layout.catalogPath + suffix)
        }
        let (rebuilt, _) = try InstantStore.rebuildCatalog(root: scratch.root)
        rebuilt.close()
    }
}
