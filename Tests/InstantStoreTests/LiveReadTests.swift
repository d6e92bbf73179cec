import Foundation
import Testing

@testable import InstantStore

/// The reads a client makes through a handle it keeps open (`LayerDatabase+Live`): refused
/// once the layer's removal committed, even by another handle (another process), and not
/// stopped by a mark a removal left without committing.
@Suite struct LiveReadTests {
    @Test func aRemovalThroughAnotherHandleStopsLiveReads() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        defer { layer.close() }
        try layer.create(id: "a", content: note("a"))
        #expect(try layer.annotationsAndPendingIDs().annotations.map(\.id) == ["a"])
        // Another process's store handle, as `instantctl rm` has.
        let other = try InstantStore(root: scratch.root)
        defer { other.close() }
        try other.removeLayer(tenant: Scratch.tenant, document: "d", layer: "")
        let reads: [() throws -> Void] = [
            { _ = try layer.livePendingChangesAndMetadata(limit: 10) },
            { _ = try layer.annotationsAndPendingIDs() },
            { _ = try layer.annotationAndPending(id: "a") },
            { _ = try layer.livePendingChangeCount() },
        ]
        for read in reads {
            #expect { try read() } throws: { ($0 as? StoreError)?.code == "layer_removed" }
        }
        // The plain reads still read the unlinked file (salvage and verify rely on them).
        #expect(try layer.pendingChanges().map(\.annotationID) == ["a"])
    }

    @Test func aStaleMarkIsClearedByALiveRead() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        defer { layer.close() }
        try layer.create(id: "a", content: note("a"))
        _ = try layer.markRemoved(allowingPendingThrough: .max)  // as a removal killed before its commit leaves it
        let (annotations, pending) = try layer.annotationsAndPendingIDs()
        #expect(annotations.map(\.id) == ["a"] && pending == [ExactString("a")])
        #expect(try !layer.isMarkedRemoved())
        #expect(try layer.annotationAndPending(id: "a")?.pending == true)
        #expect(try layer.annotationAndPending(id: "b") == nil)
        #expect(try layer.livePendingChangeCount() == 1)
        #expect(try layer.livePendingChangesAndMetadata(limit: 10).pending.map(\.annotationID) == ["a"])
    }
}
