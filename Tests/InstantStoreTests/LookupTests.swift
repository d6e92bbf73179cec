import Foundation
import Testing

@testable import InstantStore

/// The lookups a client makes before every download and state read, each one statement
/// read in place: they must answer what the listing and the records answer.
@Suite struct LookupTests {
    /// Two tenants; documents with and without a PDF, sharing one; layers with users,
    /// changes, a corrupt flag; names that differ only in case or hold odd bytes.
    private func populated() throws -> Scratch {
        let scratch = try Scratch()
        let store = scratch.store
        let shared = try scratch.file(samplePDF(seed: 1))
        try store.ingestPDF(tenant: Scratch.tenant, document: "a", from: shared)
        try store.ingestPDF(tenant: Scratch.other, document: "a", from: shared)
        try store.ingestPDF(tenant: Scratch.tenant, document: "b", from: scratch.file(samplePDF(seed: 2)))
        for (tenant, document, layer, user) in [
            (Scratch.tenant, "a", "", "ana"), (Scratch.tenant, "a", "Review", nil),
            (Scratch.tenant, "a", "review", "bo"),
            (Scratch.tenant, "b", "x/ü\u{1}", "ana"), (Scratch.tenant, "no pdf", "", nil),
            (Scratch.other, "a", "", "cy"),
        ] {
            let handle = try store.createLayer(tenant: tenant, document: document, layer: layer, userID: user)
            if layer == "review" { try handle.create(id: "n1", content: note("one")) }
            handle.close()
        }
        let corrupt = try store.openLayer(tenant: Scratch.tenant, document: "b", layer: "x/ü\u{1}")
        store.flagLayerCorrupt(key: corrupt.key)
        corrupt.close()
        return scratch
    }

    @Test func oneLayersLookupAnswersAsTheListing() throws {
        let scratch = try populated()
        defer { scratch.store.close() }
        let listed = try scratch.store.localDescriptors()
        #expect(listed.count == 6)
        for expected in listed {
            let found = try scratch.store.localDescriptor(
                tenant: expected.tenant, document: expected.documentIdentifier, layer: expected.layerName)
            #expect(found == expected)
        }
        #expect(listed.contains { $0.isCorrupted } && listed.contains { $0.pendingChangeCount == 1 })
        #expect(listed.contains { $0.pdfSHA256 == nil } && listed.contains { $0.userID == nil })
        for (tenant, document, layer) in [
            (Scratch.other, "b", "x/ü\u{1}"), (Scratch.tenant, "a", "REVIEW"), (Scratch.tenant, "c", ""),
            (try TenantURL("https://c.example.com"), "a", ""),
        ] {
            #expect(try scratch.store.localDescriptor(tenant: tenant, document: document, layer: layer) == nil)
        }
    }

    @Test func anIntactPDFIsOneNoDocumentHasFlagged() throws {
        let scratch = try populated()
        defer { scratch.store.close() }
        let store = scratch.store
        let a = try #require(try store.intactPDF(tenant: Scratch.tenant, document: "a"))
        let b = try #require(try store.intactPDF(tenant: Scratch.tenant, document: "b"))
        let cached = try store.cacheEntries(tenant: Scratch.tenant)
        #expect(a.sha256 == cached.first { $0.documentIdentifier == "a" }?.pdfSHA256 && a.deduplicated)
        #expect(a.size == 50_000 && a.storedSize > 0 && b.sha256 != a.sha256)
        #expect(try store.intactPDF(tenant: Scratch.tenant, document: "no pdf") == nil)
        #expect(try store.intactPDF(tenant: Scratch.tenant, document: "c") == nil)
        // Only the other tenant's document flagged over the shared PDF: the copy is not
        // intact for this tenant either.
        try store.catalog.write { db in
            try db.execute(
                sql: "UPDATE document SET corrupt = 1 WHERE tenantId = (SELECT id FROM tenant WHERE url = ?)",
                arguments: [Scratch.other.string])
        }
        #expect(try store.intactPDF(tenant: Scratch.tenant, document: "a") == nil)
        #expect(try store.intactPDF(tenant: Scratch.other, document: "a") == nil)
        #expect(try store.intactPDF(tenant: Scratch.tenant, document: "b") == b)
    }
}
