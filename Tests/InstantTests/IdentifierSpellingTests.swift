import Foundation
import InstantProtocol
import InstantStore
import ServerTestSupport
import Testing

@testable import Instant

/// Identifiers Swift calls equal (canonically equivalent Unicode, `"caf\u{E9}"` and
/// `"cafe\u{301}"`) are two documents, layers or annotations in the store and on the
/// server, which compare bytes: every set, map and report of them keeps the two apart.
@Suite struct IdentifierSpellingTests {
    static let composed = "caf\u{E9}"
    static let decomposed = "cafe\u{301}"
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("instant-spelling-\(UUID().uuidString)")

    func tenant() throws -> TenantURL { try TenantURL("https://instant.example.com") }

    /// `"a"`, `"b"`, then the two spellings, by their bytes.
    func bytes(_ ids: [String]) -> [[UInt8]] { ids.map { Array($0.utf8) } }

    @Test func exactStringsCompareHashAndSortByTheirBytes() throws {
        let (composed, decomposed) = (Self.composed, Self.decomposed)
        #expect(composed == decomposed, "what Swift says, and why ExactString exists")
        #expect(ExactString(composed) != ExactString(decomposed))
        #expect(ExactString(composed) == ExactString("caf\u{E9}"))
        #expect(Set([ExactString(composed), ExactString(decomposed), ExactString(composed)]).count == 2)
        // SQLite's order: "e" (0x65) before "é" (0xC3 0xA9).
        let sorted = [ExactString(composed), "b", ExactString(decomposed), "a"].sorted().map(\.string)
        #expect(bytes(sorted) == bytes(["a", "b", decomposed, composed]))
        let tenant = try tenant()
        let layers = [
            LayerReference(tenant: tenant, document: composed, layer: ""),
            LayerReference(tenant: tenant, document: decomposed, layer: ""),
            LayerReference(tenant: tenant, document: "d", layer: composed),
            LayerReference(tenant: tenant, document: "d", layer: decomposed),
        ]
        #expect(Set(layers).count == 4)
        #expect(layers[0] == LayerReference(tenant: tenant, document: "caf\u{E9}", layer: ""))
        let documents = [composed, decomposed].map { DocumentReference(tenant: tenant, document: $0) }
        #expect(Set(documents).count == 2)
    }

    /// The export `rm --export` writes before removing: each spelling's annotation is in
    /// its Instant JSON, as it stands.
    @Test func anExportHoldsEachSpellingsAnnotation() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try InstantStore(root: root)
        let tenant = try tenant()
        let layer = try store.createLayer(tenant: tenant, document: "d", layer: "")
        try layer.create(id: Self.composed, content: note("one").jsonData())
        try layer.create(id: Self.decomposed, content: note("two").jsonData())
        layer.close()
        let file = root.appendingPathComponent("export.json")
        let export = try store.exportPendingChanges(
            of: [LayerReference(tenant: tenant, document: "d", layer: "")], to: file)
        #expect(export.changeCount == 2)
        let written = try JSONValue.parse(Data(contentsOf: file))
        guard case .object(let top) = written, case .array(let layers)? = top["layers"],
            case .object(let entry)? = layers.first, case .object(let instantJSON)? = entry["instantJSON"],
            case .array(let annotations)? = instantJSON["annotations"]
        else {
            Issue.record("unexpected export: \(written)")
            return
        }
        let ids = annotations.compactMap { annotation -> String? in
            guard case .object(let members) = annotation, case .string(let id)? = members["id"] else { return nil }
            return id
        }
        #expect(Set(bytes(ids)) == Set(bytes([Self.composed, Self.decomposed])))
    }

    /// A removal after an export lets each layer's exported changes go, and no more: a
    /// change made after the export to the layer of one spelling is not covered by the
    /// other spelling's (higher) limit.
    @Test func aRemovalAfterAnExportHoldsEachSpellingToItsOwnLimit() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try InstantStore(root: root)
        let tenant = try tenant()
        let first = try store.createLayer(tenant: tenant, document: Self.decomposed, layer: "")
        try first.create(id: "a", content: note("a").jsonData())
        try first.create(id: "b", content: note("b").jsonData())
        first.close()
        let second = try store.createLayer(tenant: tenant, document: Self.composed, layer: "")
        try second.create(id: "c", content: note("c").jsonData())
        second.close()
        let export = try store.exportPendingChanges(
            of: [Self.decomposed, Self.composed].map { LayerReference(tenant: tenant, document: $0, layer: "") },
            to: root.appendingPathComponent("export.json"))
        #expect(export.layers.map(\.throughSequence).count == 2)
        // A change made after the export, to the composed spelling's layer.
        let again = try store.openLayer(tenant: tenant, document: Self.composed, layer: "")
        try again.create(id: "late", content: note("made after the export").jsonData())
        again.close()
        #expect(throws: StoreError.self) {
            try store.removeLayer(tenant: tenant, document: Self.composed, layer: "", pendingChanges: export.policy)
        }
        let kept = try store.openLayer(tenant: tenant, document: Self.composed, layer: "")
        #expect(try kept.pendingChangeCount() == 2)
        kept.close()
        // The other layer holds only what was exported: it goes.
        try store.removeLayer(tenant: tenant, document: Self.decomposed, layer: "", pendingChanges: export.policy)
    }

    /// A page bringing both spellings: one is new, the other an update of what the layer
    /// held, and a local change of one leaves the other synced.
    @Test func eachSpellingHasItsOwnEventsAndSyncedFlag() async throws {
        let (composed, decomposed) = (Self.composed, Self.decomposed)
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let client = try h.client()
            let descriptor = try await h.downloaded(client, "doc")
            let writer = try await h.server.token(document: "doc", user: "writer")
            func write(_ base: Int64, epoch: String? = nil, _ changes: [ClientChange]) async throws -> String {
                try await h.server.sync(
                    "doc", token: writer,
                    SyncRequest(clientId: "writer-0123456789abcdef", epoch: epoch, baseRevision: base, changes: changes)
                ).epoch
            }
            let epoch = try await write(
                0, [ClientChange(changeId: 1, kind: .create, id: decomposed, content: note("first"))])
            try await descriptor.sync().result()
            let log = await EventLog.recording(client)
            _ = try await write(
                1, epoch: epoch,
                [
                    ClientChange(changeId: 2, kind: .create, id: composed, content: note("new")),
                    ClientChange(changeId: 3, kind: .update, id: decomposed, content: note("changed")),
                ])
            try await descriptor.sync().result()
            let received = await log.receivedChanges.map { ($0.kind, Array($0.annotationID.utf8)) }
            #expect(received.count == 2)
            #expect(received.contains { $0 == (.created, Array(composed.utf8)) })
            #expect(received.contains { $0 == (.updated, Array(decomposed.utf8)) })
            // A local change of the decomposed spelling only.
            try descriptor.editableDocument.update(decomposed, content: note("mine"))
            let flags = try descriptor.editableDocument.annotations().map { (Array($0.id.utf8), $0.isSynced) }
            #expect(flags.count == 2)
            #expect(flags.contains { $0 == (Array(composed.utf8), true) })
            #expect(flags.contains { $0 == (Array(decomposed.utf8), false) })
            #expect(try descriptor.editableDocument.annotation(withID: composed)?.isSynced == true)
            #expect(try descriptor.editableDocument.annotation(withID: decomposed)?.isSynced == false)
        }
    }

    func jwt(_ document: String, user: String? = nil) -> String {
        var claims = #"{"document_id":"\#(document)""#
        if let user { claims += #","user_id":"\#(user)""# }
        return InstantJWTTests.token(claims + "}")
    }

    /// A JWT is for its own spelling of the document, and of the user.
    @Test func aJWTForTheOtherSpellingIsRefused() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try InstantStore(root: root)
        try store.createLayer(tenant: tenant(), document: "d", layer: "", userID: Self.composed).close()
        let client = try InstantClient(serverURL: URL(string: "https://instant.example.com")!, storeRoot: root)
        #expect {
            try client.documentDescriptor(forJWT: jwt("d", user: Self.decomposed))
        } throws: { ($0 as? InstantError)?.code == .userIDMismatch }
        let descriptor = try client.documentDescriptor(forJWT: jwt(Self.composed))
        #expect {
            _ = try descriptor.download(usingJWT: jwt(Self.decomposed))
        } throws: { ($0 as? InstantError)?.code == .invalidJWT }
    }

    /// `rm --document` finds the tenant holding that spelling: the other spelling, stored
    /// for another server, makes it neither ambiguous nor part of the scope.
    @Test func aRemovalsScopeIsTheSpellingItNames() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try InstantStore(root: root)
        let (ours, theirs) = (try tenant(), try TenantURL("https://other.example.com"))
        try store.createLayer(tenant: ours, document: Self.composed, layer: "").close()
        let other = try store.createLayer(tenant: theirs, document: Self.decomposed, layer: "")
        try other.create(id: "pending", content: note("not in the scope").jsonData())
        other.close()
        let scope = try RemovalScope.resolve(.document(Self.composed, tenant: nil), in: store)
        #expect(scope.targets == [.document(DocumentReference(tenant: ours, document: Self.composed))])
        #expect(scope.pendingChanges == 0 && scope.dirtyLayers.isEmpty)
        let layer = try RemovalScope.resolve(.layer("", document: Self.decomposed, tenant: nil), in: store)
        #expect(layer.targets == [.layer(LayerReference(tenant: theirs, document: Self.decomposed, layer: ""))])
        #expect(layer.pendingChanges == 1)
    }
}
