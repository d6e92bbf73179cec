import Foundation
import Testing

@testable import InstantStore

/// A file the store cannot read now (no permission, an I/O error) is reported and left as
/// it is: recovery never deletes what it could not read, and one such file does not stop
/// it from doing the rest. (Tests run as root, which permissions do not stop: the
/// failures come from path-scoped failpoints in a worker process.)
@Suite(.serialized) struct UnreadableFileTests {
    /// A store with two documents, each with its own PDF and a layer holding a change.
    func storeWithTwoPDFs() throws -> (Scratch, unreadable: BlobHash, readable: BlobHash) {
        let scratch = try Scratch()
        var hashes: [BlobHash] = []
        for (seed, document) in ["a", "b"].enumerated() {
            let stored = try scratch.store.ingestPDF(
                tenant: Scratch.tenant, document: document, from: scratch.file(samplePDF(seed: seed + 1)))
            hashes.append(stored.sha256)
            let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: document, layer: "")
            try layer.create(id: "n", content: note("kept"))
            layer.close()
        }
        return (scratch, hashes[0], hashes[1])
    }

    /// The catalog is lost and rebuilt while one PDF cannot be opened: the rebuild
    /// completes (before, it failed, and the store could not be opened at all), leaves
    /// that PDF where it is and out of the catalog (its document downloads it again), and
    /// garbage collection does not delete it while it cannot be read.
    @Test func aRebuildLeavesAPDFItCannotReadAndTakesTheRest() async throws {
        let (scratch, unreadable, readable) = try storeWithTwoPDFs()
        let path = scratch.store.layout.blobPath(unreadable)
        scratch.store.close()
        for suffix in ["", "-wal", "-shm"] {
            try? FileManager.default.removeItem(atPath: scratch.store.layout.catalogPath + suffix)
        }
        let refusal = "file.open@\(unreadable.hex)=eacces"
        let rebuilt = try await runWorker(["rebuild", scratch.root.path], failpoint: refusal)
        #expect(!rebuilt.signalled && rebuilt.status == 0, "\(rebuilt.output)")
        #expect(rebuilt.output.contains("layers=2 quarantined=0 untouched=1"), "\(rebuilt.output)")
        let collected = try await runWorker(["gc", scratch.root.path], failpoint: refusal)
        #expect(collected.status == 0, "\(collected.output)")
        #expect(FileSystem.exists(path), "an orphan that cannot be read is not deleted")

        let store = try InstantStore(root: scratch.root)
        defer { store.close() }
        #expect(try store.verify(VerifyOptions()).problems.contains { $0.kind == .orphanFile && !$0.fixed })
        #expect(try store.pdf(tenant: Scratch.tenant, document: "a") == nil, "downloaded again")
        #expect(try store.pdf(tenant: Scratch.tenant, document: "b")?.sha256 == readable)
        for document in ["a", "b"] {
            let layer = try store.openLayer(tenant: Scratch.tenant, document: document, layer: "")
            #expect(try layer.pendingChangeCount() == 1)
            layer.close()
        }
    }

    /// A read that fails anywhere in a PDF (not only opening it) is left the same way. On
    /// a server's store, whose PDFs nobody can download again, the rebuild fails instead
    /// (and the store is left as it was) rather than forget one.
    @Test func aReadErrorIsLeftTooAndAServersRebuildRefusesToForgetAPDF() async throws {
        let (scratch, unreadable, _) = try storeWithTwoPDFs()
        scratch.store.close()
        let catalog = scratch.store.layout.catalogPath
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: catalog + suffix) }
        let failing = "file.read@\(unreadable.hex)=eio"
        FileManager.default.createFile(atPath: scratch.store.layout.originMarkerPath, contents: Data())
        let refused = try await runWorker(["rebuild", scratch.root.path], failpoint: failing)
        #expect(!refused.signalled && refused.status != 0, "\(refused.output)")
        #expect(!FileSystem.exists(catalog), "nothing installed")
        #expect(FileSystem.exists(scratch.store.layout.blobPath(unreadable)))
        try FileManager.default.removeItem(atPath: scratch.store.layout.originMarkerPath)
        let rebuilt = try await runWorker(["rebuild", scratch.root.path], failpoint: failing)
        #expect(
            rebuilt.status == 0 && rebuilt.output.contains("layers=2 quarantined=0 untouched=1"), "\(rebuilt.output)")
    }

    /// Verify meets a catalogued PDF it cannot read: reported as inaccessible, left in
    /// place and in the catalog (not quarantined, its documents not flagged), and the other
    /// blobs and layers are still checked.
    @Test func verifyReportsAPDFItCannotReadAndChecksTheRest() async throws {
        let (scratch, unreadable, readable) = try storeWithTwoPDFs()
        scratch.store.close()
        let repaired = try await runWorker(
            ["repair", scratch.root.path], failpoint: "file.read@\(unreadable.hex)=eio")
        #expect(!repaired.signalled && repaired.status == 0, "\(repaired.output)")
        #expect(repaired.output.contains("inaccessible_file"), "\(repaired.output)")
        let store = try InstantStore(root: scratch.root)
        defer { store.close() }
        #expect(FileSystem.exists(store.layout.blobPath(unreadable)))
        #expect(try store.pdf(tenant: Scratch.tenant, document: "a")?.sha256 == unreadable)
        #expect(try store.pdf(tenant: Scratch.tenant, document: "b")?.sha256 == readable)
        #expect(scratch.files(in: "quarantine").isEmpty)
        #expect(try store.verify(VerifyOptions(deep: true)).isClean, "readable again, it is sound")
    }

    /// A layer whose database file is gone but whose `-wal` remains cannot be read, and
    /// may hold changes: prune skips it, a removal that keeps changes refuses, and one that
    /// discards them quarantines the `-wal` instead of deleting it.
    @Test func aLoneWALIsNeverDeletedUnread() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        let path = scratch.store.layout.layerPath(key: layer.key)
        layer.close()
        try FileManager.default.copyItem(atPath: path, toPath: path + "-wal")
        try FileManager.default.removeItem(atPath: path)

        let pruned = try scratch.store.prune(PruneOptions(maxSize: 0))
        #expect(pruned.removed.skippedUnreadableLayers.count == 1)
        #expect(FileSystem.exists(path + "-wal"))
        #expect(throws: StoreError.self) {
            try scratch.store.removeLayer(tenant: Scratch.tenant, document: "d", layer: "", pendingChanges: .refuse)
        }
        #expect(FileSystem.exists(path + "-wal"))
        _ = try scratch.store.removeLayer(tenant: Scratch.tenant, document: "d", layer: "", pendingChanges: .discard)
        #expect(!FileSystem.exists(path + "-wal"))
        #expect(scratch.files(in: "quarantine").contains { $0.hasSuffix("-wal") }, "\(scratch.files(in: "quarantine"))")
        try scratch.store.collectGarbage()
        #expect(scratch.files(in: "quarantine").contains { $0.hasSuffix("-wal") })
    }
}
