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

    /// ``storeWithTwoPDFs()``, closed, its catalog lost (with its `-wal` and `-shm`): what
    /// a rebuild starts from.
    func storeWithTwoPDFsAndNoCatalog() throws -> (Scratch, unreadable: BlobHash, readable: BlobHash) {
        let (scratch, unreadable, readable) = try storeWithTwoPDFs()
        scratch.store.close()
        for suffix in ["", "-wal", "-shm"] {
            try? FileManager.default.removeItem(atPath: scratch.store.layout.catalogPath + suffix)
        }
        return (scratch, unreadable, readable)
    }

    /// The catalog is lost and rebuilt while one PDF cannot be opened: the rebuild
    /// completes (before, it failed, and the store could not be opened at all), leaves
    /// that PDF where it is and out of the catalog (its document downloads it again), and
    /// garbage collection does not delete it while it cannot be read.
    @Test func aRebuildLeavesAPDFItCannotReadAndTakesTheRest() async throws {
        let (scratch, unreadable, readable) = try storeWithTwoPDFsAndNoCatalog()
        let path = scratch.store.layout.blobPath(unreadable)
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
        let (scratch, unreadable, _) = try storeWithTwoPDFsAndNoCatalog()
        let catalog = scratch.store.layout.catalogPath
        let failing = "file.read@\(unreadable.hex)=eio"
        #expect(FileManager.default.createFile(atPath: scratch.store.layout.originMarkerPath, contents: Data()))
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

    /// Makes `change` a pending change of `layer`, closes it, and copies its file to its
    /// `-wal` (which SQLite cannot read without the file); returns the file's path.
    func withACopyAsItsWAL(_ scratch: Scratch, _ layer: LayerDatabase, change: String) throws -> String {
        try layer.create(id: change, content: note("kept"))
        let path = scratch.store.layout.layerPath(key: layer.key)
        layer.close()
        try FileManager.default.copyItem(atPath: path, toPath: path + "-wal")
        return path
    }

    /// Verify's repair of a layer whose file is gone but whose `-wal` remains reports the
    /// catalog's count of its changes as unreadable (they went to quarantine with the
    /// `-wal`), not none.
    @Test func aRepairReportsTheChangesOfALoneWALAsUnreadable() throws {
        let scratch = try Scratch()
        let path = try withACopyAsItsWAL(
            scratch, try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: ""), change: "n")
        try FileManager.default.removeItem(atPath: path)
        let report = try scratch.store.verify(VerifyOptions(repair: true))
        #expect(report.pendingChangesUnreadable == 1, "\(report.problems)")
        #expect(scratch.files(in: "quarantine").contains { $0.hasSuffix("-wal") }, "\(scratch.files(in: "quarantine"))")

        // A removal that discards such a layer's changes says how many left with its -wal.
        let againPath = try withACopyAsItsWAL(
            scratch, try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: ""), change: "m")
        try FileManager.default.removeItem(atPath: againPath)
        let removed = try scratch.store.removeLayer(
            tenant: Scratch.tenant, document: "d", layer: "", pendingChanges: .discard)
        #expect(removed.discardedPendingChanges == 1, "its change, as the catalog counts it")
    }

    /// A layer whose file and `-wal` are both gone: its changes (the catalog's count) are
    /// reported lost, not kept in quarantine, and not passed over in silence either.
    @Test func aRepairReportsTheChangesOfAVanishedLayerAsLost() throws {
        let scratch = try Scratch()
        let path = try withACopyAsItsWAL(
            scratch, try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: ""), change: "n")
        for suffix in ["", "-wal"] { try FileManager.default.removeItem(atPath: path + suffix) }
        let report = try scratch.store.verify(VerifyOptions(repair: true))
        #expect(report.pendingChangesLost == 1 && report.pendingChangesUnreadable == 0, "\(report.problems)")
    }

    /// A layer file cut to nothing beside a `-wal`: SQLite deletes the `-wal` of an empty
    /// database when it opens one, so nothing opens it; the repair quarantines both, the
    /// `-wal` byte for byte.
    @Test func anEmptyLayerFileBesideAWALIsNeverOpened() throws {
        let scratch = try Scratch()
        let path = try withACopyAsItsWAL(
            scratch, try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: ""), change: "n")
        let wal = try Data(contentsOf: URL(fileURLWithPath: path + "-wal"))
        try Data().write(to: URL(fileURLWithPath: path))
        #expect { _ = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "") } throws: {
            ($0 as? StoreError)?.code == "corrupt_layer"
        }
        #expect(FileSystem.exists(path + "-wal"), "not deleted by the open")
        let report = try scratch.store.verify(VerifyOptions(repair: true))
        #expect(report.pendingChangesUnreadable == 1, "\(report.problems)")
        let quarantined = scratch.files(in: "quarantine").filter { $0.hasSuffix("-wal") }
        #expect(quarantined.count == 1, "\(scratch.files(in: "quarantine"))")
        if let name = quarantined.first {
            #expect(try Data(contentsOf: scratch.root.appendingPathComponent("quarantine/" + name)) == wal)
        }
    }

    /// A read that fails past a PDF's header (a bad sector inside it): the rebuild leaves
    /// the file out, and garbage collection, which reads an orphan as the rebuild does,
    /// leaves it too (it used to read the header alone, and delete it). Readable again, the
    /// orphan of a cache is garbage.
    @Test func anOrphanWhoseBlocksCannotBeReadIsLeftByGarbageCollection() async throws {
        let (scratch, unreadable, _) = try storeWithTwoPDFsAndNoCatalog()
        let path = scratch.store.layout.blobPath(unreadable)
        let failing = "frame.blockRead@\(unreadable.hex)=eio"
        let rebuilt = try await runWorker(["rebuild", scratch.root.path], failpoint: failing)
        #expect(rebuilt.status == 0 && rebuilt.output.contains("untouched=1"), "\(rebuilt.output)")
        let collected = try await runWorker(["gc", scratch.root.path], failpoint: failing)
        #expect(collected.status == 0, "\(collected.output)")
        #expect(FileSystem.exists(path), "an orphan that cannot be read is not deleted")
        let again = try await runWorker(["gc", scratch.root.path])
        #expect(again.status == 0, "\(again.output)")
        #expect(!FileSystem.exists(path), "readable, the orphan is garbage")
    }

    /// Garbage collection or a prune that must leave the orphan a dead claim leads to (it
    /// cannot be read now) keeps the claim, so the next prune looks again and removes it
    /// once it can be read.
    @Test func aPruneKeepsTheClaimOfAnOrphanItHadToLeave() async throws {
        let scratch = try Scratch()
        let pdf = samplePDF(seed: 58)
        let hash = BlobHash.of(pdf)
        let killed = try await runWorker(
            ["ingest-announced", scratch.root.path, Scratch.tenant.string, "d", try scratch.file(pdf).path],
            failpoint: "blob.afterRename")
        #expect(killed.signalled, "\(killed.output)")
        let claims = { scratch.tempFiles().filter { $0.hasPrefix(hash.hex) && $0.hasSuffix(".claim") } }
        #expect(claims().count == 1, "\(scratch.tempFiles())")
        for command in [["gc", scratch.root.path], ["prune", scratch.root.path, "0"]] {
            let left = try await runWorker(command, failpoint: "frame.blockRead@\(hash.hex)=eio")
            #expect(left.status == 0, "\(left.output)")
            #expect(FileSystem.exists(scratch.store.layout.blobPath(hash)))
            #expect(claims().count == 1, "\(command[0]) keeps it: \(scratch.tempFiles())")
        }
        let swept = try await runWorker(["prune", scratch.root.path, "0"])
        #expect(swept.status == 0, "\(swept.output)")
        #expect(!FileSystem.exists(scratch.store.layout.blobPath(hash)))
        #expect(claims().isEmpty)
    }

    /// A server's garbage collection quarantines an orphan PDF (nobody can download it
    /// again) inside its transaction: an upload of the same PDF that commits meanwhile
    /// places a new file at that path, which a quarantine after the commit took away,
    /// leaving the upload's row without its file.
    @Test func aServersCollectionNeverTakesAnUploadOfTheSamePDF() async throws {
        let scratch = try Scratch()
        scratch.store.close()
        let pdf = samplePDF(seed: 59)
        let hash = BlobHash.of(pdf)
        // The orphan: the same PDF's frame, written by another store, with no row here.
        let other = try Scratch()
        try other.store.ingestPDF(tenant: Scratch.tenant, document: "x", from: other.file(pdf))
        let origin = try InstantStore(root: scratch.root, role: .origin)
        defer { origin.close() }
        let path = origin.layout.blobPath(hash)
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try FileSystem.copy(other.store.layout.blobPath(hash), to: path)
        let hold = scratch.root.appendingPathComponent("hold").path
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        async let collected = runWorker(
            ["origin-gc", scratch.root.path], failpoint: "quarantine.afterLink=wait:\(hold)")
        let deadline = Date().addingTimeInterval(60)
        while !FileSystem.exists(hold + ".reached") && Date() < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(FileSystem.exists(hold + ".reached"))
        let file = try scratch.file(pdf)
        // On a thread of its own: it waits for the catalog's write lock.
        async let uploaded = withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    with: Result { try origin.ingestPDF(tenant: Scratch.tenant, document: "up", from: file) })
            }
        }
        try await Task.sleep(for: .milliseconds(300))
        try FileManager.default.removeItem(atPath: hold)
        #expect(try await collected.status == 0)
        #expect(try await uploaded.sha256 == hash)
        #expect(FileSystem.exists(path), "the upload's PDF is in place")
        #expect(try origin.verify(VerifyOptions(deep: true)).isClean)
        #expect(scratch.files(in: "quarantine").count == 1, "the orphan was set aside, not deleted")
    }

    /// A server's store without its mark (made before there was one, or the mark deleted)
    /// whose catalog is lost: opened as a server's, it is marked before the rebuild, which
    /// then refuses to forget a PDF it cannot read, as for any server's store.
    @Test func aStoreOpenedAsAServersIsRebuiltAsOne() async throws {
        let (scratch, unreadable, _) = try storeWithTwoPDFsAndNoCatalog()
        let catalog = scratch.store.layout.catalogPath
        #expect(!FileSystem.exists(scratch.store.layout.originMarkerPath))
        let opened = try await runWorker(
            ["origin-gc", scratch.root.path], failpoint: "file.read@\(unreadable.hex)=eio")
        #expect(!opened.signalled && opened.status != 0, "\(opened.output)")
        #expect(!FileSystem.exists(catalog), "nothing installed")
        #expect(FileSystem.exists(scratch.store.layout.blobPath(unreadable)))
    }
}
