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
        try rebuildKeepsEach([(Self.composed, ""), (Self.decomposed, "")])
    }

    /// Nor are a document "a\0b" with a layer "c" and a document "a" with a layer "b\0c"
    /// one layer (NUL is allowed in ids).
    @Test func aRebuildKeepsLayersWhoseNamesJoinAlike() throws {
        try rebuildKeepsEach([("a\u{0}b", "c"), ("a", "b\u{0}c")])
    }

    func rebuildKeepsEach(_ layers: [(document: String, layer: String)]) throws {
        let scratch = try Scratch()
        for (index, (document, name)) in layers.enumerated() {
            try scratch.store.ingestPDF(
                tenant: Scratch.tenant, document: document, from: scratch.file(samplePDF(seed: 60 + index)))
            let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: document, layer: name)
            try layer.create(id: "a", content: note("pending in \(index)"))
            layer.close()
        }
        try scratch.destroyCatalog()
        let (rebuilt, report) = try InstantStore.rebuildCatalog(root: scratch.root)
        #expect(report.duplicates.isEmpty && report.quarantined.isEmpty)
        #expect(report.layers == 2 && report.documents == 2)
        let found = try rebuilt.localDescriptors().map {
            Array($0.documentIdentifier.utf8) + [0xFF] + Array($0.layerName.utf8)
        }
        #expect(Set(found) == Set(layers.map { Array($0.document.utf8) + [0xFF] + Array($0.layer.utf8) }))
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
