import Foundation
import Testing

@testable import InstantStore

/// What a download may name in `If-None-Match`: this tenant's own PDFs only, never a PDF
/// the store holds for another server (or for nobody).
@Suite struct PDFReuseTests {
    @Test func onlyATenantsOwnPDFsAreNamed() throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        #expect(try scratch.store.pdfReuse(tenant: Scratch.tenant) == .nothingStored)

        let first = try scratch.store.ingestPDF(
            tenant: Scratch.tenant, document: "d1", from: scratch.file(samplePDF(seed: 1)))
        let second = try scratch.store.ingestPDF(
            tenant: Scratch.tenant, document: "d2", from: scratch.file(samplePDF(seed: 2)))
        guard case .ownPDFs(let named) = try scratch.store.pdfReuse(tenant: Scratch.tenant) else {
            Issue.record("a store holding only this tenant's PDFs names them")
            return
        }
        #expect(Set(named) == [first.sha256, second.sha256])
        #expect(try scratch.store.pdfReuse(tenant: Scratch.tenant, limit: 1) == .ask, "more than the limit: ask")
        #expect(try scratch.store.pdfReuse(tenant: Scratch.other) == .ask, "another server's PDFs are not named")

        // The other server's document uses the same PDF: now it is not this tenant's alone.
        #expect(try scratch.store.attachIntactPDF(first.sha256, tenant: Scratch.other, document: "x"))
        #expect(try scratch.store.pdfReuse(tenant: Scratch.tenant) == .ask)
    }

    @Test func aPDFNoDocumentUsesIsNotNamed() throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        let first = try scratch.store.ingestPDF(
            tenant: Scratch.tenant, document: "d1", from: scratch.file(samplePDF(seed: 1)))
        _ = try scratch.store.ingestPDF(
            tenant: Scratch.tenant, document: "d2", from: scratch.file(samplePDF(seed: 2)))
        // d2 now uses d1's PDF; its own stays, unreferenced, until collected (and an
        // unreferenced PDF may have been anyone's).
        #expect(try scratch.store.attachIntactPDF(first.sha256, tenant: Scratch.tenant, document: "d2"))
        #expect(try scratch.store.pdfReuse(tenant: Scratch.tenant) == .ask)
    }

    /// A document moved to another stored PDF (the server's PDF changed, and the store held
    /// the new one): its layer files name the new PDF too, so a catalog rebuild, which
    /// reads them, keeps the document on it rather than take it back to the old one.
    @Test func anAttachedPDFIsTheOneTheDocumentsLayerFilesName() throws {
        let scratch = try Scratch()
        let old = try scratch.store.ingestPDF(
            tenant: Scratch.tenant, document: "d", from: scratch.file(samplePDF(seed: 1)))
        // A layer that cannot be written (damaged) does not keep the others from being told.
        let damaged = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "damaged")
        damaged.close()
        try Data(repeating: 0x55, count: 8192).write(
            to: URL(fileURLWithPath: scratch.store.layout.layerPath(key: damaged.key)))
        try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "").close()
        // The old PDF stays stored: another document uses it.
        try #require(try scratch.store.attachIntactPDF(old.sha256, tenant: Scratch.tenant, document: "keeper"))
        let new = try scratch.store.ingestPDF(
            tenant: Scratch.tenant, document: "e", from: scratch.file(samplePDF(seed: 2)))
        #expect(try scratch.store.attachIntactPDF(new.sha256, tenant: Scratch.tenant, document: "d"))
        let layer = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        #expect(try layer.metadata().pdfSHA256 == new.sha256)
        layer.close()
        try scratch.store.removeLayer(tenant: Scratch.tenant, document: "d", layer: "damaged")
        try scratch.destroyCatalog()
        let (rebuilt, _) = try InstantStore.rebuildCatalog(root: scratch.root)
        defer { rebuilt.close() }
        #expect(try rebuilt.pdf(tenant: Scratch.tenant, document: "d")?.sha256 == new.sha256)
    }

    /// A download's attach of a stored PDF, asked after the app removed the document: it
    /// changes nothing, rather than bring the document back as a cache entry.
    @Test func anAttachWithdrawnMeanwhileChangesNothing() throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        let stored = try scratch.store.ingestPDF(
            tenant: Scratch.tenant, document: "d1", from: scratch.file(samplePDF(seed: 1)))
        #expect {
            try scratch.store.attachIntactPDF(stored.sha256, tenant: Scratch.other, document: "x") { true }
        } throws: { ($0 as? StoreError)?.code == "layer_removed" }
        #expect(try scratch.store.cacheEntries(tenant: Scratch.other).isEmpty)
        #expect(try scratch.store.attachIntactPDF(stored.sha256, tenant: Scratch.other, document: "x") { false })
        #expect(try scratch.store.cacheEntries(tenant: Scratch.other).map(\.documentIdentifier) == ["x"])
        // For a layer stored already (a download of its PDF alone): only while it still is.
        let layer = try scratch.store.createLayer(tenant: Scratch.other, document: "y", layer: "")
        let key = layer.key
        layer.close()
        try scratch.store.removeLayer(tenant: Scratch.other, document: "y", layer: "")
        try scratch.store.removeDocument(tenant: Scratch.other, document: "y")
        #expect {
            try scratch.store.attachIntactPDF(
                stored.sha256, tenant: Scratch.other, document: "y", forStoredLayer: (key, ""))
        } throws: { ($0 as? StoreError)?.code == "layer_removed" }
        #expect(try scratch.store.cacheEntries(tenant: Scratch.other).map(\.documentIdentifier) == ["x"])
    }
}
