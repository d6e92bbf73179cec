import Foundation
import GRDB
import Testing

@testable import InstantStore

@Suite struct VerifyTests {
    @Test func repairFixesDriftOrphansAndDeadTempFiles() throws {
        let scratch = try Scratch()
        let pdf = try scratch.store.ingestPDF(
            tenant: Scratch.tenant, document: "d", from: scratch.file(samplePDF(seed: 40)))
        try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        try scratch.store.catalog.write { db in try db.execute(sql: "UPDATE blob SET refCount = 7") }
        let orphanHash = BlobHash.of(Data("orphan".utf8))
        let orphan = scratch.store.layout.blobPath(orphanHash)
        try FileSystem.makeDirectory((orphan as NSString).deletingLastPathComponent)
        try Data("x".utf8).write(to: URL(fileURLWithPath: orphan))
        try Data("dead".utf8).write(to: URL(fileURLWithPath: scratch.store.layout.tmpDirectory + "/dead.blob"))
        let live = try POSIXFile.create(scratch.store.layout.tmpDirectory + "/live.blob")
        try live.lockExclusively(wait: true)

        let found = try scratch.store.verify()
        #expect(Set(found.problems.map(\.kind)) == [.referenceCountDrift, .orphanFile, .deadTempFile])
        #expect(found.problems.first { $0.kind == .referenceCountDrift }?.subject == pdf.sha256.hex)
        let repaired = try scratch.store.verify(VerifyOptions(repair: true))
        #expect(repaired.isClean && repaired.problems.count == 3)
        #expect(try scratch.store.verify().isClean)
        #expect(FileManager.default.fileExists(atPath: live.path))  // a live writer's file stays
    }

    /// A layer of many records and one pending change ("keep-me"), with a page of its
    /// records damaged while the pending change stays readable; returns its key.
    @discardableResult
    private func damagedLayerKeepingAChange(_ scratch: Scratch) throws -> String {
        let layer = try scratch.store.createLayer(
            tenant: Scratch.tenant, document: "d", layer: "", snapshot: manyPageSnapshot("v"))
        try layer.create(id: "keep-me", content: note("unsent"))
        let key = layer.key
        layer.close()
        try damageLastPage(scratch.store.layout.layerPath(key: key))
        return key
    }

    @Test func corruptLayerIsReplacedKeepingItsPendingChanges() throws {
        let scratch = try Scratch()
        try damagedLayerKeepingAChange(scratch)

        let found = try scratch.store.verify()
        #expect(found.remaining.map(\.kind).contains(.corruptLayer))
        let repaired = try scratch.store.verify(VerifyOptions(repair: true))
        #expect(repaired.isClean && repaired.pendingChangesSalvaged == 1)
        let fresh = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        #expect(try fresh.pendingChanges().map(\.annotationID) == ["keep-me"])
        #expect(try fresh.annotation(id: "keep-me")?.content == note("unsent"))
        #expect(try fresh.metadata().lastServerRevision == 0)
        #expect(scratch.files(in: "quarantine").count == 1)
        let after = try scratch.store.verify()
        #expect(after.isClean, "\(after.remaining)")
    }

    /// A replacement committed, then its old file cannot be moved to quarantine/: the
    /// repair is done (reported fixed, the changes in the new file), and the old file, an
    /// orphan now, goes to quarantine with the same repair's sweep.
    @Test func aReplacementWhoseOldFileStaysIsStillARepair() throws {
        let scratch = try Scratch()
        let key = try damagedLayerKeepingAChange(scratch)
        let rule = "replace.beforeQuarantine@\(key)=eio"
        Failpoint.add(rule)
        let repaired: VerificationReport
        do {
            defer { Failpoint.remove(rule) }
            repaired = try scratch.store.verify(VerifyOptions(repair: true))
        }
        #expect(repaired.problems.first { $0.kind == .corruptLayer }?.fixed == true, "\(repaired.problems)")
        #expect(repaired.problems.contains { $0.kind == .orphanFile && $0.fixed }, "\(repaired.problems)")
        #expect(repaired.isClean, "\(repaired.remaining)")
        let fresh = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        #expect(try fresh.pendingChanges().map(\.annotationID) == ["keep-me"])
        fresh.close()
        #expect(scratch.files(in: "quarantine").count == 1, "the old file")
        #expect(try scratch.store.verify().isClean)
    }

    /// A record an older build stored under its looser check (duplicate keys) is not
    /// damage: a deep verification finds nothing, so no repair replaces the layer (which
    /// would bring the same record back, and be done again at every verification).
    @Test func aRecordAnOlderBuildsCheckTookIsNotCorruption() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        try layer.create(id: "old", content: note("old"))
        let key = layer.key
        layer.close()
        let queue = try DatabaseQueue(path: scratch.store.layout.layerPath(key: key))
        try queue.write { db in
            try db.execute(sql: #"UPDATE record SET content = CAST('{"v": 2, "v": 2, "type": "x"}' AS BLOB)"#)
        }
        try queue.close()
        let found = try scratch.store.verify(VerifyOptions(deep: true))
        #expect(found.isClean, "\(found.remaining)")
        // Damage is still found: a record that is not JSON at all.
        let damaged = try DatabaseQueue(path: scratch.store.layout.layerPath(key: key))
        try damaged.write { db in try db.execute(sql: "UPDATE record SET content = CAST('{nope' AS BLOB)") }
        try damaged.close()
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).remaining.map(\.kind) == [.corruptLayer])
    }

    /// A layer file that names another layer (another layer's file, copied or restored
    /// under this one's name) is never salvaged into this layer: its changes could be
    /// another document's, or another server's. It goes to quarantine untouched, naming
    /// its layer and holding its changes; this layer starts again, flagged invalid.
    @Test func aFileNamingAnotherLayerIsQuarantinedUntouchedNotSalvaged() throws {
        let scratch = try Scratch()
        let other = try TenantURL("https://other.example.com")
        let mine = try scratch.store.createLayer(tenant: Scratch.tenant, document: "mine", layer: "")
        try mine.create(id: "my-change", content: note("mine"))
        let myKey = mine.key
        mine.close()
        let theirs = try scratch.store.createLayer(tenant: other, document: "theirs", layer: "L")
        try theirs.create(id: "their-change", content: note("theirs, for another server"))
        let theirKey = theirs.key
        theirs.close()
        // Their file, copied over mine.
        let myPath = scratch.store.layout.layerPath(key: myKey)
        for suffix in ["", "-wal", "-shm"] { try FileSystem.remove(myPath + suffix) }
        try FileSystem.copy(scratch.store.layout.layerPath(key: theirKey), to: myPath)
        let copied = try Data(contentsOf: URL(fileURLWithPath: myPath))

        let repaired = try scratch.store.verify(VerifyOptions(repair: true))
        #expect(repaired.pendingChangesSalvaged == 0, "\(repaired.problems)")
        #expect(repaired.pendingChangesUnreadable == 1, "my change is reported, not silently gone")
        let fresh = try scratch.store.openLayer(tenant: Scratch.tenant, document: "mine", layer: "")
        #expect(try fresh.pendingChanges().isEmpty, "their change is not sent as mine")
        fresh.close()
        #expect(try scratch.store.localDescriptors(tenant: Scratch.tenant).map(\.isCorrupted) == [true])
        let quarantined = try scratch.store.quarantinedFiles().filter { $0.kind == .layer }
        #expect(quarantined.count == 1)
        #expect(quarantined.first?.layer == LayerReference(tenant: other, document: "theirs", layer: "L"))
        #expect(quarantined.first?.pendingChanges == 1)
        let name = try #require(quarantined.first?.name)
        let kept = try Data(contentsOf: scratch.root.appendingPathComponent("quarantine/\(name)"))
        #expect(kept == copied, "the quarantined file is exactly the file found")
        // Their own layer is untouched.
        let theirsAgain = try scratch.store.openLayer(tenant: other, document: "theirs", layer: "L")
        #expect(try theirsAgain.pendingChanges().map(\.annotationID) == ["their-change"])
    }

    @Test func garbageLayerFileAndMissingLayerFileAreFlaggedInvalid() throws {
        let scratch = try Scratch()
        let garbage = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "garbage")
        let missing = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "missing")
        garbage.close()
        missing.close()
        try Data(repeating: 0xAB, count: 8192).write(
            to: URL(fileURLWithPath: scratch.store.layout.layerPath(key: garbage.key)))
        try FileManager.default.removeItem(atPath: scratch.store.layout.layerPath(key: missing.key))
        #expect(throws: StoreError.self) {
            try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "garbage")
        }
        let found = try scratch.store.verify()
        #expect(Set(found.remaining.map(\.kind)) == [.corruptLayer, .missingLayer])
        let repaired = try scratch.store.verify(VerifyOptions(repair: true))
        #expect(repaired.isClean)
        #expect(try scratch.store.localDescriptors().allSatisfy(\.isCorrupted))
        #expect(try scratch.store.verify().isClean)
        // removeLocalStorage brings the layer back to "not downloaded".
        try scratch.store.removeLayer(tenant: Scratch.tenant, document: "d", layer: "garbage")
        #expect(try !scratch.store.hasLayer(tenant: Scratch.tenant, document: "d", layer: "garbage"))
    }

    @Test func catalogIsRebuiltFromLayersAndBlobs() throws {
        let scratch = try Scratch()
        let pdf = try scratch.store.ingestPDF(
            tenant: Scratch.tenant, document: "d", from: scratch.file(samplePDF(seed: 41)))
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "mine", userID: "u")
        try layer.create(id: "a", content: note("a"))
        layer.close()
        try scratch.destroyCatalog()

        #expect(throws: StoreError.self) { _ = try InstantStore(root: scratch.root).localDescriptors() }
        let (rebuilt, report) = try InstantStore.rebuildCatalog(root: scratch.root)
        #expect(report.blobs == 1 && report.layers == 1 && report.documents == 1 && report.oldCatalog != nil)
        let descriptors = try rebuilt.localDescriptors()
        #expect(descriptors.map(\.layerName) == ["mine"] && descriptors[0].pendingChangeCount == 1)
        #expect(descriptors[0].pdfSHA256 == pdf.sha256 && descriptors[0].userID == "u")
        #expect(try rebuilt.verify(VerifyOptions(deep: true)).isClean)
    }

    @Test func aCatalogFromANewerVersionIsRefused() throws {
        let scratch = try Scratch()
        try scratch.store.catalog.write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99-from-the-future')")
        }
        #expect {
            _ = try InstantStore(root: scratch.root)
        } throws: { error in
            (error as? StoreError)?.code == "unsupported_format_version"
        }
    }
}
