import Foundation
import Testing

@testable import InstantStore

/// An orphan layer file set aside by one sweep and adopted by another.
@Suite(.serialized) struct OrphanRaceTests {
    /// A sweep decides, in its transaction, to quarantine an orphan holding changes (a
    /// layer of its name is stored), and moves it only after the commit. Meanwhile
    /// another process removes that layer and its sweep adopts the orphan under the same
    /// key. Before, the first sweep then moved the adopted file away: a row named a missing
    /// file, and the changes sat in quarantine. Now it sees the row, and leaves the file.
    @Test func anOrphanAdoptedByAnotherSweepMeanwhileIsNotQuarantined() async throws {
        let scratch = try Scratch()
        defer { try? FileManager.default.removeItem(at: scratch.root) }
        let (_, orphanKey) = try layerWithAnOrphanCopy(scratch, digit: "7")
        let pause = FailpointPause("gc.beforeOrphanQuarantine", at: orphanKey, in: scratch)
        defer { pause.end() }
        let store = scratch.store
        async let first = onThread { try store.disposeOrphanLayer(key: orphanKey, mayDelete: true) }
        try await pause.reached()
        // Another process: the stored layer removed, the orphan taken back as that layer.
        let other = try InstantStore(root: scratch.root)
        defer { other.close() }
        try other.removeLayer(tenant: Scratch.tenant, document: "d", layer: "", pendingChanges: .discard)
        #expect(
            try other.disposeOrphanLayer(key: orphanKey, mayDelete: true)
                == .adopted(
                    LayerReference(tenant: Scratch.tenant, document: "d", layer: "")))
        pause.release()

        #expect(try await first == .claimed)
        #expect(FileManager.default.fileExists(atPath: scratch.store.layout.layerPath(key: orphanKey)))
        #expect(try scratch.store.quarantinedFiles().isEmpty)
        let layer = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        #expect(layer.key == orphanKey)
        #expect(try layer.pendingChanges().map(\.annotationID) == ["a"])
        layer.close()
        #expect(try scratch.store.verify().isClean)
    }
}
