import Foundation
import GRDB
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
        try await expectAdoptionWins(scratch, orphanKey, sweepStoppedAt: "gc.beforeOrphanQuarantine")
    }

    /// The same race on a file system without hard links, where the orphan is copied to
    /// quarantine outside the catalog's lock: the adoption lands while the copy is made.
    /// Before, the sweep looked for a row before copying, then unlinked the adopted file;
    /// now it looks again under the lock after the copy, leaves the file, and drops its copy.
    @Test func anOrphanAdoptedWhileItIsCopiedIsNotQuarantined() async throws {
        let scratch = try Scratch()
        defer { try? FileManager.default.removeItem(at: scratch.root) }
        let (_, orphanKey) = try layerWithAnOrphanCopy(scratch, digit: "6")
        let noLinks = "file.link@\(orphanKey)=eperm"
        Failpoint.add(noLinks)
        defer { Failpoint.remove(noLinks) }
        try await expectAdoptionWins(scratch, orphanKey, sweepStoppedAt: "quarantine.afterLink")
    }

    /// A sweep of `orphanKey` stopped at `failpoint` while another process removes the
    /// stored layer and adopts the orphan as it: the stopped sweep then finds the row and
    /// leaves the file, and nothing is in quarantine.
    private func expectAdoptionWins(
        _ scratch: Scratch, _ orphanKey: String, sweepStoppedAt failpoint: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let pause = FailpointPause(failpoint, at: orphanKey, in: scratch)
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
                == .adopted(LayerReference(tenant: Scratch.tenant, document: "d", layer: "")),
            sourceLocation: sourceLocation)
        pause.release()

        #expect(try await first == .claimed, sourceLocation: sourceLocation)
        #expect(
            FileManager.default.fileExists(atPath: scratch.store.layout.layerPath(key: orphanKey)),
            sourceLocation: sourceLocation)
        #expect(
            try scratch.store.quarantinedFiles().isEmpty, "a copy of a file not set aside is dropped",
            sourceLocation: sourceLocation)
        let layer = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        #expect(layer.key == orphanKey, sourceLocation: sourceLocation)
        #expect(try layer.pendingChanges().map(\.annotationID) == ["a"], sourceLocation: sourceLocation)
        layer.close()
        #expect(try scratch.store.verify().isClean, sourceLocation: sourceLocation)
    }

    /// Without the race, on a file system without hard links, the orphan is set aside as
    /// with links: copied, then unlinked under the lock.
    @Test func anOrphanIsQuarantinedByCopyWithoutHardLinks() throws {
        let scratch = try Scratch()
        defer { try? FileManager.default.removeItem(at: scratch.root) }
        let (_, orphanKey) = try layerWithAnOrphanCopy(scratch, digit: "5")
        let noLinks = "file.link@\(orphanKey)=eperm"
        Failpoint.add(noLinks)
        defer { Failpoint.remove(noLinks) }
        let outcome = try scratch.store.disposeOrphanLayer(key: orphanKey, mayDelete: true)
        guard case .quarantined(let name) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(!FileManager.default.fileExists(atPath: scratch.store.layout.layerPath(key: orphanKey)))
        #expect(try scratch.store.quarantinedFiles().map(\.name) == [name])
        #expect(try scratch.store.verify().isClean)
    }

    /// An orphan set aside because its layer was removed (the file carries the removal's
    /// mark) after the app removed the whole document: the sweep brings back no tenant
    /// or document row (a cache entry the app would see purged a second time).
    @Test func quarantiningAnOrphanMakesNoRowsForWhatWasRemoved() throws {
        let scratch = try Scratch()
        defer { try? FileManager.default.removeItem(at: scratch.root) }
        let (_, orphanKey) = try layerWithAnOrphanCopy(scratch, digit: "4")
        try scratch.store.removeTenant(Scratch.tenant, pendingChanges: .discard)
        let queue = try DatabaseQueue(path: scratch.store.layout.layerPath(key: orphanKey))
        try queue.write { db in try db.execute(sql: "UPDATE meta SET removed = 1") }
        try queue.close()
        guard case .quarantined = try scratch.store.disposeOrphanLayer(key: orphanKey, mayDelete: true) else {
            Issue.record("the marked orphan is set aside")
            return
        }
        #expect(try scratch.store.cacheEntries().isEmpty)
        #expect(try scratch.store.localDescriptors().isEmpty)
    }

    /// Without hard links, the copy to quarantine fails part way (a full disk): nothing
    /// was moved, the orphan is where it was, and no torn copy is left in `quarantine/`
    /// (one more per sweep would fill what the next sweep frees).
    @Test func aCopyThatFailsLeavesNothingInQuarantine() throws {
        let scratch = try Scratch()
        defer { try? FileManager.default.removeItem(at: scratch.root) }
        let (_, orphanKey) = try layerWithAnOrphanCopy(scratch, digit: "3")
        let rules = ["file.link@\(orphanKey)=eperm", "file.write@quarantine=enospc"]
        for rule in rules { Failpoint.add(rule) }
        defer { for rule in rules { Failpoint.remove(rule) } }
        #expect(throws: StoreError.self) { try scratch.store.disposeOrphanLayer(key: orphanKey, mayDelete: true) }
        #expect(scratch.files(in: "quarantine").isEmpty, "\(scratch.files(in: "quarantine"))")
        #expect(FileManager.default.fileExists(atPath: scratch.store.layout.layerPath(key: orphanKey)))
    }
}
