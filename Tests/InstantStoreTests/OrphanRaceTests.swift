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
        let stored = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        try stored.create(id: "a", content: note("unsent"))
        let storedKey = stored.key
        stored.close()
        // An orphan naming the same layer, holding the same change: a copy under another key.
        let orphanKey = String(repeating: "7", count: storedKey.count)
        try FileManager.default.copyItem(
            atPath: scratch.store.layout.layerPath(key: storedKey),
            toPath: scratch.store.layout.layerPath(key: orphanKey))

        let signal = scratch.root.appendingPathComponent("sweep-waits").path
        FileManager.default.createFile(atPath: signal, contents: nil)
        let rule = "gc.beforeOrphanQuarantine@\(orphanKey)=wait:\(signal)"
        Failpoint.add(rule)
        defer { Failpoint.remove(rule) }
        let store = scratch.store
        async let first = onThread { try store.disposeOrphanLayer(key: orphanKey, mayDelete: true) }
        while !FileManager.default.fileExists(atPath: signal + ".reached") {
            try await Task.sleep(for: .milliseconds(5))
        }
        // Another process: the stored layer removed, the orphan taken back as that layer.
        let other = try InstantStore(root: scratch.root)
        defer { other.close() }
        try other.removeLayer(tenant: Scratch.tenant, document: "d", layer: "", pendingChanges: .discard)
        #expect(
            try other.disposeOrphanLayer(key: orphanKey, mayDelete: true)
                == .adopted(
                    LayerReference(tenant: Scratch.tenant, document: "d", layer: "")))
        try FileManager.default.removeItem(atPath: signal)

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
