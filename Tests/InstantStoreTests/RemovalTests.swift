import Foundation
import Testing

@testable import InstantStore

@Suite struct RemovalTests {
    /// Two documents sharing one PDF in tenant A, one in tenant B with the same PDF.
    func populated() throws -> (Scratch, StoredPDF) {
        let scratch = try Scratch()
        let bytes = samplePDF(seed: 20)
        var stored: StoredPDF?
        for (tenant, document) in [(Scratch.tenant, "d1"), (Scratch.tenant, "d2"), (Scratch.other, "d1")] {
            stored = try scratch.store.ingestPDF(tenant: tenant, document: document, from: scratch.file(bytes))
            try scratch.store.createLayer(tenant: tenant, document: document, layer: "")
            try scratch.store.createLayer(tenant: tenant, document: document, layer: "review")
        }
        return (scratch, try #require(stored))
    }

    /// The sweep after a removal's commit unlinks every tombstoned file, other removals'
    /// too: one that cannot go now must not make the removal, which committed, throw (a
    /// client would then skip making its descriptors invalid). It is reported, and taken
    /// up by a later sweep.
    @Test func aCommittedRemovalReportsTheFilesItCouldNotUnlinkInsteadOfFailing() throws {
        let scratch = try Scratch()
        try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "").close()
        // A tombstone whose path unlink refuses, even to root: a directory stands there.
        let stuck = "layers/stuck.sqlite"
        try FileManager.default.createDirectory(
            atPath: scratch.store.layout.absolute(stuck), withIntermediateDirectories: false)
        try scratch.store.catalog.write { db in try scratch.store.catalog.addTombstone(stuck, in: db) }
        let report = try scratch.store.removeLayer(tenant: Scratch.tenant, document: "d", layer: "")
        #expect(report.layers.map(\.document) == ["d"])
        #expect(report.filesLeft?.contains("stuck.sqlite") == true, "\(String(describing: report.filesLeft))")
        #expect(try scratch.store.localDescriptors().isEmpty)
        // Reports merged (as `instantctl rm` and prune merge theirs) keep it.
        var merged = RemovalReport()
        merged.merge(report)
        merged.merge(RemovalReport())
        #expect(merged.filesLeft == report.filesLeft)
        // Once the path can go, the next removal's sweep takes it.
        try FileManager.default.removeItem(atPath: scratch.store.layout.absolute(stuck))
        try scratch.store.createLayer(tenant: Scratch.tenant, document: "e", layer: "").close()
        let next = try scratch.store.removeLayer(tenant: Scratch.tenant, document: "e", layer: "")
        #expect(next.filesLeft == nil)
        #expect(try scratch.store.catalog.read { db in try TombstoneRecord.fetchCount(db) } == 0)

        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// A removal allowed through an export's changes covers the file exported only: a
    /// layer removed and stored again under the same name since numbers its changes
    /// afresh, none of them exported, and the removal refuses rather than take them.
    @Test func aRemovalThroughAnExportSparesAFileStoredUnderTheSameNameSince() throws {
        let scratch = try Scratch()
        let reference = LayerReference(tenant: Scratch.tenant, document: "d", layer: "L")
        let exported = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "L")
        for index in 0..<5 { try exported.create(id: "old\(index)", content: note("exported")) }
        let policy = PendingChangesPolicy.discardThrough(
            [reference: ExportedChanges(key: exported.key, sequence: try exported.pendingChanges().last?.sequence ?? 0)]
        )
        exported.close()
        // Meanwhile the app removes the layer and downloads it again; the user edits it.
        try scratch.store.removeLayer(tenant: Scratch.tenant, document: "d", layer: "L", pendingChanges: .discard)
        let again = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "L")
        for index in 0..<3 { try again.create(id: "new\(index)", content: note("never exported")) }
        #expect(try again.pendingChanges().map(\.sequence).max() ?? 0 < 5, "numbered afresh")
        again.close()

        #expect(throws: StoreError.pendingChanges(layers: 1, changes: 3)) {
            try scratch.store.removeLayer(tenant: Scratch.tenant, document: "d", layer: "L", pendingChanges: policy)
        }
        let kept = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "L")
        #expect(try kept.pendingChanges().map(\.annotationID) == ["new0", "new1", "new2"])
        kept.close()
    }

    @Test func removingALayerKeepsTheDocumentAndItsPDF() throws {
        let (scratch, pdf) = try populated()
        let open = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d1", layer: "review")
        try open.create(id: "a", content: note("unsynced"))
        let report = try scratch.store.removeLayer(tenant: Scratch.tenant, document: "d1", layer: "review")
        #expect(report.layers.count == 1 && report.discardedPendingChanges == 1 && report.blobs.isEmpty)
        #expect(throws: StoreError.layerRemoved(document: "d1", layer: "review")) {
            try open.create(id: "b", content: note(""))
        }
        #expect(try scratch.store.pdf(tenant: Scratch.tenant, document: "d1")?.sha256 == pdf.sha256)
        #expect(throws: StoreError.noSuchLayer(tenant: Scratch.tenant.string, document: "d1", layer: "review")) {
            try scratch.store.removeLayer(tenant: Scratch.tenant, document: "d1", layer: "review")
        }
        #expect(try scratch.store.verify().isClean)
    }

    @Test func removingADocumentKeepsAPDFOthersUse() throws {
        let (scratch, pdf) = try populated()
        let report = try scratch.store.removeDocument(tenant: Scratch.tenant, document: "d1")
        #expect(report.layers.count == 2 && report.documents.count == 1 && report.blobs.isEmpty)
        try scratch.store.removeDocument(tenant: Scratch.tenant, document: "d2")
        let last = try scratch.store.removeDocument(tenant: Scratch.other, document: "d1")
        #expect(last.blobs == [pdf.sha256] && last.bytesFreed >= pdf.storedSize)
        #expect(!FileManager.default.fileExists(atPath: scratch.store.layout.blobPath(pdf.sha256)))
        #expect(scratch.files(in: "layers").isEmpty)
        #expect(try scratch.store.verify().isClean)
    }

    @Test func unreferencedEntriesGoOnlyWhenNoLayerIsLeft() throws {
        let (scratch, pdf) = try populated()
        for layer in ["", "review"] {
            try scratch.store.removeLayer(tenant: Scratch.tenant, document: "d1", layer: layer)
        }
        #expect(
            try scratch.store.cacheEntries(tenant: Scratch.tenant).filter(\.isUnreferenced).map(\.documentIdentifier)
                == ["d1"])
        let report = try scratch.store.removeUnreferenced(tenant: Scratch.tenant)
        #expect(report.documents.map(\.document) == ["d1"] && report.blobs.isEmpty)
        #expect(try scratch.store.cacheEntries().count == 2)
        #expect(FileManager.default.fileExists(atPath: scratch.store.layout.blobPath(pdf.sha256)))
    }

    @Test func removingATenantLeavesOtherTenantsAlone() throws {
        let (scratch, pdf) = try populated()
        let report = try scratch.store.removeTenant(Scratch.tenant)
        #expect(report.documents.count == 2 && report.layers.count == 4 && report.blobs.isEmpty)
        #expect(try scratch.store.localDescriptors(tenant: Scratch.tenant).isEmpty)
        #expect(try scratch.store.localDescriptors(tenant: Scratch.other).count == 2)
        #expect(try scratch.store.pdf(tenant: Scratch.other, document: "d1")?.sha256 == pdf.sha256)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    @Test func pruneEvictsLeastRecentlyUsedCleanLayersOnly() throws {
        let scratch = try Scratch()
        for index in 0..<5 {
            try scratch.store.ingestPDF(
                tenant: Scratch.tenant, document: "d\(index)", from: scratch.file(samplePDF(seed: 30 + index)))
            let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d\(index)", layer: "")
            if index == 0 { try layer.create(id: "unsent", content: note("")) }  // the oldest is dirty
        }
        let before = try scratch.store.diskUsage().totalStoredBytes
        let dry = try scratch.store.prune(PruneOptions(dryRun: true, maxSize: before / 2))
        #expect(dry.dryRun && !dry.removed.isEmpty)
        #expect(try scratch.store.diskUsage().totalStoredBytes == before)
        #expect(try scratch.store.localDescriptors().count == 5)

        let real = try scratch.store.prune(PruneOptions(maxSize: before / 2))
        #expect(real.removed.layers.map(\.document) == dry.removed.layers.map(\.document))
        #expect(real.removed.bytesFreed == dry.removed.bytesFreed)
        #expect(real.sizeAfter <= before / 2)
        #expect(!real.removed.layers.contains { $0.document == "d0" })
        #expect(real.removed.layers.first?.document == "d1")
        // Nothing left to do: a no-op.
        #expect(try scratch.store.prune(PruneOptions(maxSize: before / 2)).removed.isEmpty)
        // Even a zero budget keeps the dirty layer.
        _ = try scratch.store.prune(PruneOptions(maxSize: 0))
        #expect(try scratch.store.localDescriptors().map(\.documentIdentifier) == ["d0"])
        #expect(try scratch.store.verify().isClean)
    }

    @Test func pruneByAge() throws {
        let scratch = try Scratch()
        try scratch.store.createLayer(tenant: Scratch.tenant, document: "old", layer: "")
        var options = PruneOptions(olderThan: 3600)
        options.now = Date().addingTimeInterval(7200)
        let report = try scratch.store.prune(options)
        #expect(report.removed.layers.count == 1 && report.removed.documents.count == 1)
        #expect(try scratch.store.prune(PruneOptions(olderThan: 3600)).removed.isEmpty)
    }
}
