import Foundation
import GRDB
import TestSupport
import Testing

@testable import InstantStore

/// A store on a read-only file system (a backup's snapshot, a `ro` mount) is read as it is:
/// listed, measured, verified and its layers read, and every change refused with
/// `read_only_store` before it starts. On a real read-only mount (a tmpfs mounted for the
/// test, then mounted again read-only: it needs root and the right to mount, which the test
/// runs have; elsewhere it does not run).
@Suite struct ReadOnlyStoreTests {
    /// A store with a PDF and a layer holding an annotation and a change not yet synced.
    private static func fill(_ store: InstantStore) throws -> LayerDatabase {
        let tenant = Scratch.tenant
        let source = store.root.deletingLastPathComponent().appendingPathComponent("source-\(UUID()).pdf")
        try samplePDF(seed: 7).write(to: source)
        defer { try? FileManager.default.removeItem(at: source) }
        try store.ingestPDF(tenant: tenant, document: "report", from: source)
        let layer = try store.createLayer(
            tenant: tenant, document: "report", layer: "", userID: "alice",
            snapshot: [ServerRecord(id: "synced", content: note("from the server"), revision: 3)], revision: 3)
        try layer.create(id: "local", content: note("not yet synced"))
        return layer
    }

    @Test(.enabled(if: TinyDisk.canMount)) func aStoreOnAReadOnlyMountIsReadAndNeverChanged() throws {
        let disk = try TinyDisk(megabytes: 16)
        defer { disk.unmount() }
        // A name with what a URI escapes or reads as syntax: the files open `immutable`
        // through one.
        let root = disk.path.appendingPathComponent("store ?#%25&=;x")
        let writable = try InstantStore(root: root)
        try Self.fill(writable).close()
        // A second layer, with nothing to sync: what a prune would remove.
        try writable.createLayer(tenant: Scratch.tenant, document: "report", layer: "review").close()
        writable.close()
        try disk.remount(readOnly: true)

        let store = try InstantStore(root: root)
        defer { store.close() }
        #expect(store.isReadOnly)
        let listed = try store.localDescriptors()
        #expect(listed.map(\.layerName).sorted() == ["", "review"])
        #expect(listed.map(\.pendingChangeCount).sorted() == [0, 1])
        #expect(try store.diskUsage().lines.first?.layers == 2)
        let report = try store.verify(VerifyOptions(deep: true))
        #expect(report.isClean, "\(report.problems)")
        #expect(report.blobsDeepChecked == 1)
        let layer = try store.openLayer(tenant: Scratch.tenant, document: "report", layer: "")
        defer { layer.close() }
        #expect(layer.isReadOnly)
        #expect(try layer.annotations().map(\.id) == ["local", "synced"])
        #expect(try layer.pendingChanges().map(\.annotationID) == ["local"])
        let preview = try store.prune(PruneOptions(dryRun: true, maxSize: 0))
        #expect(preview.removed.layers.map(\.layer) == ["review"], "\(preview)")

        // Every change is refused with the same error, before it writes anything.
        func refused(_ operation: String, _ body: () throws -> Void) {
            do {
                try body()
                Issue.record("\(operation) was not refused")
            } catch {
                guard let error = error as? StoreError, case .readOnlyStore = error else {
                    Issue.record("\(operation): \(error)")
                    return
                }
                #expect(error.code == "read_only_store")
                #expect(error.description.contains("read-only file system"), "\(error)")
            }
        }
        refused("an annotation") { try layer.create(id: "new", content: note("x")) }
        refused("an update") { try layer.update(id: "synced", content: note("y")) }
        refused("a removal") { _ = try store.removeLayer(tenant: Scratch.tenant, document: "report", layer: "") }
        refused("a prune") { _ = try store.prune(PruneOptions(maxSize: 0)) }
        refused("unreferenced entries") { _ = try store.removeUnreferenced() }
        refused("a sweep") { _ = try store.sweepAbandonedFiles() }
        refused("a repair") { _ = try store.verify(VerifyOptions(repair: true)) }
        refused("a download") { _ = try store.reserveDownloadFiles() }
        refused("a PDF") { _ = try store.beginPDFIngest() }
        refused("a sync") { _ = try store.trySyncLock(layer) }
        refused("a new layer") { _ = try store.createLayer(tenant: Scratch.tenant, document: "other", layer: "") }
        // A handle for freeing space opens (a prune's dry run reads); its removals refuse.
        let freeing = try InstantStore(root: root, freeingSpace: true)
        #expect(freeing.isReadOnly)
        #expect(throws: StoreError.readOnlyStore(path: root.path, operation: "remove from the store")) {
            try freeing.removeLayer(tenant: Scratch.tenant, document: "report", layer: "review")
        }
        freeing.close()
        #expect(throws: StoreError.readOnlyStore(path: root.path, operation: "serve the store's PDFs")) {
            try InstantStore(root: root, role: .origin)
        }

        // Writable again, the store is as it was: nothing was lost or half-done.
        layer.close()
        store.close()
        try disk.remount(readOnly: false)
        let reopened = try InstantStore(root: root)
        defer { reopened.close() }
        #expect(!reopened.isReadOnly)
        #expect(try reopened.verify(VerifyOptions(deep: true)).isClean)
        let again = try reopened.openLayer(tenant: Scratch.tenant, document: "report", layer: "")
        defer { again.close() }
        #expect(try again.pendingChanges().map(\.annotationID) == ["local"])
    }

    /// A snapshot taken while a process had the store open holds commits in the `-wal`s
    /// of the catalog and the layer: read through the `-shm` files beside them. Without
    /// its `-shm`, such a `-wal` cannot be read, and that is said, not ignored.
    @Test(.enabled(if: TinyDisk.canMount)) func aSnapshotTakenWhileTheStoreWasOpenIsReadWithItsWAL() throws {
        let live = try TinyDisk(megabytes: 16)
        defer { live.unmount() }
        let snapshot = try TinyDisk(megabytes: 16)
        defer { snapshot.unmount() }
        let root = live.path.appendingPathComponent("store")
        let store = try InstantStore(root: root)
        defer { store.close() }
        let layer = try Self.fill(store)
        defer { layer.close() }
        // Copied while both are open: their commits are still in their -wal files.
        let copy = snapshot.path.appendingPathComponent("store")
        try FileManager.default.copyItem(at: root, to: copy)
        let catalog = copy.appendingPathComponent("catalog.sqlite").path
        let layerFile = copy.appendingPathComponent("layers/\(layer.key).sqlite").path
        for path in [catalog, layerFile] {
            let wal = try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int ?? 0
            #expect(wal > 0, "\(path)-wal holds the commits")
            #expect(FileManager.default.fileExists(atPath: path + "-shm"))
        }
        // The same again, but without the catalog's -shm.
        let without = snapshot.path.appendingPathComponent("without-shm")
        try FileManager.default.copyItem(at: root, to: without)
        try FileManager.default.removeItem(atPath: without.appendingPathComponent("catalog.sqlite-shm").path)
        try snapshot.remount(readOnly: true)

        let read = try InstantStore(root: copy)
        defer { read.close() }
        #expect(read.isReadOnly)
        #expect(try read.localDescriptors().map(\.documentIdentifier) == ["report"])
        let opened = try read.openLayer(tenant: Scratch.tenant, document: "report", layer: "")
        defer { opened.close() }
        #expect(try opened.annotations().map(\.id) == ["local", "synced"])

        do {
            _ = try InstantStore(root: without)
            Issue.record("a -wal without its -shm was ignored")
        } catch {
            guard case .io(let operation, _, let code) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(code == EROFS && operation.contains("-shm"), "\(error)")
        }
    }

    /// What a store that has lived a while holds is read too, or reported, never the end
    /// of the look: a quarantined layer (read from a copy outside the store), a removed
    /// mark left by a removal that never committed (the row says the layer is there), and
    /// a layer of an older format (which only a writable store can upgrade to read).
    @Test(.enabled(if: TinyDisk.canMount)) func quarantineMarksAndOldFormatsOnAReadOnlyMount() throws {
        let disk = try TinyDisk(megabytes: 16)
        defer { disk.unmount() }
        let root = disk.path.appendingPathComponent("store")
        let writable = try InstantStore(root: root)
        let kept = try Self.fill(writable)
        let quarantined = try #require(
            try writable.layout.quarantine(StoreLayout.layerRelativePath(key: kept.key), keepingOriginal: true))
        #expect(try kept.markRemoved(allowingPendingThrough: .max).marked)
        kept.close()
        let old = try writable.createLayer(tenant: Scratch.tenant, document: "old", layer: "")
        try old.create(id: "a", content: note("in an older format"))
        let oldPath = writable.layout.layerPath(key: old.key)
        old.close()
        writable.close()
        let downgrade = try DatabaseQueue(path: oldPath)
        try downgrade.write { db in try downgradeToTheSecondFormat(db, lastNumber: 1) }
        try downgrade.close()
        try disk.remount(readOnly: true)
        let temporary = FileManager.default.temporaryDirectory.path
        let copiesBefore = try FileManager.default.contentsOfDirectory(atPath: temporary).filter {
            $0.hasPrefix("instant-copy-")
        }

        let store = try InstantStore(root: root)
        defer { store.close() }
        // The quarantined layer, listed and read from a copy in the system's temporary directory.
        let files = try store.quarantinedFiles()
        #expect(files.map(\.name) == [quarantined])
        #expect(files.first?.pendingChanges == 1 && files.first?.restorable == true, "\(files)")
        let copy = try store.openQuarantinedLayer(named: quarantined)
        #expect(try copy.database.pendingChanges().map(\.annotationID) == ["local"])
        copy.close()
        #expect(throws: StoreError.readOnlyStore(path: root.path, operation: "restore a quarantined layer")) {
            try store.restoreQuarantinedLayer(named: quarantined)
        }
        let copiesAfter = try FileManager.default.contentsOfDirectory(atPath: temporary).filter {
            $0.hasPrefix("instant-copy-")
        }
        #expect(copiesAfter == copiesBefore, "each copy is removed with its directory")
        // The marked layer reads: its row is there, so the removal never committed.
        let marked = try store.openLayer(tenant: Scratch.tenant, document: "report", layer: "")
        #expect(try marked.annotations().map(\.id) == ["local", "synced"])
        #expect(try marked.liveLocalChangeCount() == 1, "a live read (what the client makes) too")
        marked.close()
        // The old format: refused to open, reported by verify beside the rest.
        #expect(
            throws: StoreError.readOnlyStore(path: oldPath, operation: "upgrade the layer to this version's format")
        ) {
            try store.openLayer(tenant: Scratch.tenant, document: "old", layer: "")
        }
        let report = try store.verify(VerifyOptions(deep: true))
        #expect(report.layersChecked == 2)
        let problems = report.problems.map { "\($0.kind.rawValue) \($0.subject)" }
        #expect(problems.contains { $0.hasPrefix("inaccessible_file") && $0.contains("old") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("layer_marked_removed") }, "\(problems)")
        #expect(report.problems.count == 2, "\(problems)")
    }

    /// A read-only bind mount shows the files of a store a process may be using through a
    /// writable mount. Its files are read as they are only while no process changes them:
    /// a read-only handle waits for a writable one to close, and a writable one waits for
    /// the read-only handles to close. Two read-only handles of one process share the hold.
    @Test(.enabled(if: TinyDisk.canMount)) func aReadOnlyViewOfAStoreInUseWaitsForIt() throws {
        let disk = try TinyDisk(megabytes: 16)
        defer { disk.unmount() }
        let root = disk.path.appendingPathComponent("store")
        let writable = try InstantStore(root: root)
        try Self.fill(writable).close()
        let view = try disk.readOnlyView()
        defer { TinyDisk.unmountView(view) }
        let viewRoot = view.appendingPathComponent("store")

        // The writable handle lets go after half a second (on a thread of its own: the
        // open below blocks this one); the read-only open waits for it.
        let clock = ContinuousClock()
        var start = clock.now
        Thread.detachNewThread {
            usleep(500_000)
            writable.close()
        }
        let first = try InstantStore(root: viewRoot)
        #expect(clock.now - start >= .milliseconds(450), "the read-only open waited for the writer")
        #expect(first.isReadOnly)
        let second = try InstantStore(root: viewRoot)
        #expect(try second.localDescriptors().count == 1)
        second.close()
        // A layer handle keeps the hold after its store handle closed.
        let layer = try first.openLayer(tenant: Scratch.tenant, document: "report", layer: "")
        first.close()
        #expect(try layer.liveLocalChangeCount() == 1)

        // A writable open waits while the read-only layer handle lives.
        start = clock.now
        Thread.detachNewThread {
            usleep(500_000)
            layer.close()
        }
        let reopened = try InstantStore(root: root)
        #expect(clock.now - start >= .milliseconds(450), "the writable open waited for the reader")
        reopened.close()
    }
}
