import Foundation
import Testing

@testable import InstantStore

/// An open of a layer that another process (prune, `instantctl rm`) removes meanwhile:
/// after the open read the layer's row, before or while it opens the files. The open
/// finds the layer gone (`noSuchLayer`), never corrupt, and never hands out a handle on
/// files that are gone.
@Suite(.serialized) struct OpenWhileRemovedTests {
    /// The removal lands after the row was read, before the files are opened: the file is
    /// missing, which is a removal, not damage.
    @Test func aLayerRemovedBeforeItsFilesAreOpenedIsGoneNotCorrupt() async throws {
        let scratch = try Scratch()
        defer { try? FileManager.default.removeItem(at: scratch.root) }
        let opened = try await openRacingRemoval(scratch, stoppedAt: "layer.open.afterRow")
        #expect(opened.error.map(isNoSuchLayer) == true, "\(opened)")
        #expect(try scratch.store.localDescriptors().isEmpty)
        #expect(try scratch.store.verify().isClean)
    }

    /// The removal lands while the files are opened: the main file open, its -wal not yet.
    /// Another handle keeps the old -wal (with the removal's mark) from being checkpointed.
    /// SQLite saw the main file unlinked and failed with a disk I/O error, which the client
    /// would have reported as a disk cache it cannot read; no handle may come out of it
    /// either, for a change through it would go to a file that is gone.
    @Test func aLayerRemovedWhileItsFilesAreOpenedGivesNoHandle() async throws {
        let scratch = try Scratch()
        defer { try? FileManager.default.removeItem(at: scratch.root) }
        let opened = try await openRacingRemoval(scratch, stoppedAt: "layer.open.beforeFirstRead")
        if case .success(let layer) = opened {
            let added = Result { () throws(StoreError) in try layer.create(id: "x", content: note) }
            Issue.record("a handle on a removed layer; a change through it: \(added)")
            layer.close()
        }
        #expect(opened.error.map(isNoSuchLayer) == true, "\(opened)")
        #expect(try scratch.store.localDescriptors().isEmpty)
        #expect(
            scratch.files(in: "layers").isEmpty,
            "nothing is left at the removed layer's path: \(scratch.files(in: "layers"))"
        )
    }

    /// The removal lands after the open found the file, before SQLite opens it: the open
    /// fails, and makes no empty database at the removed layer's path (SQLite's default
    /// open creates a missing file), which verify would then call an orphan.
    @Test func aLayerRemovedAfterItsFileWasFoundIsNotMadeAgain() async throws {
        let scratch = try Scratch()
        defer { try? FileManager.default.removeItem(at: scratch.root) }
        let opened = try await openRacingRemoval(scratch, stoppedAt: "layer.open.beforeFile")
        if case .success(let layer) = opened { layer.close() }
        #expect(opened.error.map(isNoSuchLayer) == true, "\(opened)")
        #expect(
            scratch.files(in: "layers").isEmpty,
            "nothing is left at the removed layer's path: \(scratch.files(in: "layers"))"
        )
        #expect(try scratch.store.verify().isClean)
    }

    private let note = Data(#"{"v":2,"type":"pspdfkit/note","pageIndex":0,"bbox":[0,0,1,1]}"#.utf8)

    private func isNoSuchLayer(_ error: StoreError) -> Bool {
        if case .noSuchLayer = error { true } else { false }
    }

    /// A stored layer opened through a second handle of the store (another process's),
    /// stopped at `failpoint` while the first handle removes the layer, with a third handle
    /// on the layer kept open throughout (as another process syncing it would).
    private func openRacingRemoval(_ scratch: Scratch, stoppedAt failpoint: String) async throws
        -> Result<LayerDatabase, StoreError>
    {
        try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "d", from: scratch.file(samplePDF(seed: 7)))
        let holder = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        defer { holder.close() }
        let other = try InstantStore(root: scratch.root)
        defer { other.close() }
        let signal = scratch.root.appendingPathComponent("open-stopped").path
        FileManager.default.createFile(atPath: signal, contents: nil)
        let rule = "\(failpoint)@\(holder.key)=wait:\(signal)"
        Failpoint.add(rule)
        defer { Failpoint.remove(rule) }
        let opening = Task.detached { () -> Result<LayerDatabase, StoreError> in
            Result { () throws(StoreError) in try other.openLayer(tenant: Scratch.tenant, document: "d", layer: "") }
        }
        let deadline = Date().addingTimeInterval(20)
        while !FileManager.default.fileExists(atPath: signal + ".reached") {
            guard Date() < deadline else {
                try? FileManager.default.removeItem(atPath: signal)
                Issue.record("the open never reached \(failpoint)")
                return await opening.value
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        // Only the stopped open waits: the removal opens the layer too.
        Failpoint.remove(rule)
        let report = try scratch.store.removeLayer(tenant: Scratch.tenant, document: "d", layer: "")
        #expect(report.layers.count == 1 && report.filesLeft == nil)
        try FileManager.default.removeItem(atPath: signal)
        return await opening.value
    }
}

extension Result {
    fileprivate var error: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}
