import Foundation
import InstantStore
import Testing

/// Two spellings of an id that Swift calls equal (canonically equivalent Unicode) are
/// two documents, or two annotations, for every command.
@Suite struct SpellingTests {
    static let composed = "caf\u{E9}"
    static let decomposed = "cafe\u{301}"
    static let server = "https://instant.example.com"

    /// A store holding both spellings' documents (a PDF and a default layer each).
    func store(at root: URL) throws -> InstantStore {
        let store = try InstantStore(root: root)
        let tenant = try TenantURL(Self.server)
        let pdf = root.deletingLastPathComponent().appendingPathComponent("spelling-\(UUID()).pdf")
        defer { try? FileManager.default.removeItem(at: pdf) }
        try Data("%PDF-1.7\n\(String(repeating: "spelling\n", count: 300))".utf8).write(to: pdf)
        for document in [Self.composed, Self.decomposed] {
            try store.ingestPDF(tenant: tenant, document: document, from: pdf)
            try store.createLayer(tenant: tenant, document: document, layer: "").close()
        }
        return store
    }

    func annotationIDs(_ store: InstantStore, _ document: String) throws -> [[UInt8]] {
        let layer = try store.openLayer(tenant: try TenantURL(Self.server), document: document, layer: "")
        defer { layer.close() }
        return try layer.annotations().map { Array($0.id.utf8) }
    }

    @Test func eachCommandActsOnTheSpellingItIsGiven() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("instantctl-spelling-\(UUID())")
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try store(at: root)
        let note = #"{"v": 2, "type": "pspdfkit/note", "pageIndex": 0, "bbox": [1, 2, 3, 4], "text": "x", "id": "n"}"#
        // Both documents are stored for one server: each is its own document.
        for _ in 0..<4 {
            let layer = ["--server", Self.server, "--document", Self.decomposed]
            let added = try await instantctl(["annotations", "add"] + layer, root: root, input: note)
            #expect(added.status == 0, "\(added.error)")
            #expect(try annotationIDs(store, Self.composed).isEmpty, "the other spelling's layer is untouched")
            #expect(try annotationIDs(store, Self.decomposed) == [Array("n".utf8)])
            let removed = try await instantctl(["annotations", "delete", "n"] + layer, root: root)
            #expect(removed.status == 0, "\(removed.error)")
        }
        // Two annotation ids, one of each spelling, in one input: two annotations.
        let both = """
            [{"v": 2, "type": "pspdfkit/note", "pageIndex": 0, "bbox": [1, 2, 3, 4], "text": "1", "id": "\(Self.composed)"},
             {"v": 2, "type": "pspdfkit/note", "pageIndex": 0, "bbox": [1, 2, 3, 4], "text": "2", "id": "\(Self.decomposed)"}]
            """
        let imported = try await instantctl(
            ["annotations", "import", "--server", Self.server, "--document", Self.composed], root: root, input: both)
        #expect(imported.status == 0, "\(imported.error)")
        #expect(
            Set(try annotationIDs(store, Self.composed))
                == Set([Self.composed, Self.decomposed].map { Array($0.utf8) }))
        let deleted = try await instantctl(
            [
                "annotations", "delete", Self.composed, Self.decomposed, "--server", Self.server, "--document",
                Self.composed,
            ],
            root: root)
        #expect(deleted.status == 0, "\(deleted.error)")
        #expect(try annotationIDs(store, Self.composed).isEmpty)
    }

    /// `ls --document` lists that spelling's layers only; a command given the other
    /// spelling of the only stored one says which code points the store holds.
    @Test func lsListsOneSpellingAndAMissAShowsTheStoredOne() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("instantctl-spelling-\(UUID())")
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try store(at: root)
        let listed = try await instantctl(["ls", "--json", "--document", Self.decomposed], root: root)
        #expect(listed.status == 0, "\(listed.error)")
        let layers = try #require(try listed.json()["layers"] as? [[String: Any]])
        #expect(
            layers.compactMap { ($0["document"] as? String).map { Array($0.utf8) } } == [Array(Self.decomposed.utf8)])
        try store.removeDocument(tenant: TenantURL(Self.server), document: Self.decomposed)
        let missed = try await instantctl(["annotations", "list", "--document", Self.decomposed], root: root)
        #expect(missed.status != 0)
        #expect(missed.error.contains(#"the store holds caf\u{00E9}"#), "\(missed.error)")
        #expect(missed.error.contains(#"cafe\u{0301}"#))
    }

    /// `rm` given the other spelling of the only stored document, or of a layer's name,
    /// removes nothing, and says which code points the store holds.
    @Test func rmOfAnotherSpellingRemovesNothingAndShowsTheStoredOne() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("instantctl-spelling-\(UUID())")
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try store(at: root)
        let tenant = try TenantURL(Self.server)
        try store.removeDocument(tenant: tenant, document: Self.decomposed)
        try store.createLayer(tenant: tenant, document: Self.composed, layer: Self.composed).close()
        let missed = try await instantctl(["rm", "--document", Self.decomposed], root: root)
        #expect(missed.status == 1, "\(missed.error)")
        #expect(missed.error.contains(#"the store holds caf\u{00E9}"#), "\(missed.error)")
        #expect(missed.error.contains(#"cafe\u{0301}"#))
        let missedLayer = try await instantctl(
            ["rm", "--document", Self.composed, "--layer", Self.decomposed], root: root)
        #expect(missedLayer.status == 1, "\(missedLayer.error)")
        #expect(missedLayer.error.contains(#"the store holds caf\u{00E9}"#), "\(missedLayer.error)")
        // Nothing was removed, and a name matching nothing in any spelling gets no hint.
        let layers = try store.localDescriptors(tenant: tenant).map { Array($0.layerName.utf8) }
        #expect(Set(layers) == [[], Array(Self.composed.utf8)])
        let unknown = try await instantctl(["rm", "--document", "nowhere"], root: root)
        #expect(unknown.status == 1)
        #expect(!unknown.error.contains("the store holds"), "\(unknown.error)")
    }
}
