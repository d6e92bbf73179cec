import Foundation
import GRDB
import Testing

@testable import InstantStore

/// Identifiers Swift calls equal (canonically equivalent Unicode) are two documents or
/// layers in the store, also on its recovery paths and in its corruption checks.
@Suite struct IdentifierSpellingStoreTests {
    static let composed = "caf\u{E9}"
    static let decomposed = "cafe\u{301}"

    /// A rebuilt catalog keeps each spelling's layer: neither is quarantined as the
    /// other's duplicate.
    @Test func aRebuildKeepsEachSpellingsLayer() throws {
        let scratch = try Scratch()
        for (index, document) in [Self.composed, Self.decomposed].enumerated() {
            try scratch.store.ingestPDF(
                tenant: Scratch.tenant, document: document, from: scratch.file(samplePDF(seed: 60 + index)))
            let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: document, layer: "")
            try layer.create(id: "a", content: note("pending in \(index)"))
            layer.close()
        }
        scratch.store.close()
        try Data(repeating: 0x55, count: 4096).write(to: URL(fileURLWithPath: scratch.store.layout.catalogPath))
        for suffix in ["-wal", "-shm"] {
            try? FileManager.default.removeItem(atPath: scratch.store.layout.catalogPath + suffix)
        }
        let (rebuilt, report) = try InstantStore.rebuildCatalog(root: scratch.root)
        #expect(report.duplicates.isEmpty && report.quarantined.isEmpty)
        #expect(report.layers == 2 && report.documents == 2)
        let documents = try rebuilt.localDescriptors().map { Array($0.documentIdentifier.utf8) }
        #expect(Set(documents) == Set([Self.composed, Self.decomposed].map { Array($0.utf8) }))
        #expect(try rebuilt.localDescriptors().allSatisfy { $0.pendingChangeCount == 1 })
    }

    /// A layer file whose meta row names the other spelling is not the catalog's layer.
    @Test func aFileNamingTheOtherSpellingIsCorrupt() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: Self.composed, layer: "")
        let key = layer.key
        layer.close()
        let queue = try DatabaseQueue(path: scratch.store.layout.layerPath(key: key))
        try queue.write { db in
            try db.execute(sql: "UPDATE meta SET documentIdentifier = ?", arguments: [Data(Self.decomposed.utf8)])
        }
        try queue.close()
        #expect {
            try scratch.store.openLayer(tenant: Scratch.tenant, document: Self.composed, layer: "")
        } throws: { ($0 as? StoreError)?.code == "corrupt_layer" }
        #expect(try scratch.store.verify().remaining.map(\.kind).contains(.corruptLayer))
    }
}
