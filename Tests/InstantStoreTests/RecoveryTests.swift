import Foundation
import GRDB
import Testing

@testable import InstantStore

/// Repair, rebuild, GC and quarantine never lose a pending change (issue 10).
@Suite struct RecoveryTests {
    @Test func rebuildKeepsTheCarefulChoiceOfTwoFilesForOneLayer() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "L")
        try layer.create(id: "pending", content: note("keep me"))
        layer.close()
        // A second, older, clean file claiming the same layer (as a killed create leaves).
        let clean = try scratch.store.createLayer(tenant: Scratch.tenant, document: "other", layer: "x")
        clean.close()
        let cleanKey = clean.key
        try dropLayerRow(scratch.store, key: cleanKey, zeroingLayerCounts: false)
        try rewriteMeta(scratch.store.layout.layerPath(key: cleanKey), document: "d", layer: "L")
        let stray = scratch.root.appendingPathComponent("blobs/sha256/README")
        try Data("not a blob".utf8).write(to: stray)
        try Data("nor a layer".utf8).write(to: scratch.root.appendingPathComponent("layers/notes.txt"))
        try FileManager.default.createDirectory(
            at: scratch.root.appendingPathComponent("tmp/a-directory"), withIntermediateDirectories: false)

        scratch.store.close()
        let (rebuilt, report) = try InstantStore.rebuildCatalog(root: scratch.root)
        #expect(report.layers == 1 && report.duplicates.count == 1 && report.quarantined.count == 1)
        #expect(report.strayFiles.sorted() == ["blobs/sha256/README", "layers/notes.txt"])
        let kept = try rebuilt.openLayer(tenant: Scratch.tenant, document: "d", layer: "L")
        #expect(try kept.pendingChanges().map(\.annotationID) == ["pending"])
        #expect(FileManager.default.fileExists(atPath: stray.path), "stray files are never touched")
        let quarantined = try rebuilt.quarantinedFiles().filter { $0.kind == .layer }
        #expect(quarantined.map(\.layer?.layer) == ["L"] && quarantined.first?.pendingChanges == 0)
        #expect(report.oldCatalog != nil)
        let repaired = try rebuilt.verify(VerifyOptions(repair: true))
        #expect(repaired.isClean && repaired.strayFiles.contains("tmp/a-directory"))
        #expect(try rebuilt.prune(PruneOptions()).removed.swept.isEmpty)
        #expect(try rebuilt.verify(VerifyOptions(deep: true)).isClean)
    }

    @Test func aMissingCatalogIsRebuiltNotStartedEmpty() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        try layer.create(id: "a", content: note("a"))
        layer.close()
        scratch.store.close()
        for suffix in ["", "-wal", "-shm"] { try FileSystem.remove(scratch.store.layout.catalogPath + suffix) }
        let reopened = try InstantStore(root: scratch.root)
        #expect(try reopened.localDescriptors().map(\.pendingChangeCount) == [1])
        #expect(try reopened.verify(VerifyOptions(repair: true)).isClean)
        #expect(try reopened.openLayer(tenant: Scratch.tenant, document: "d", layer: "").pendingChanges().count == 1)
    }

    /// A blob whose header announces more than `Int64.max` bytes (a flipped top bit of its
    /// size field) is damage: the rebuild, which a missing catalog starts at launch,
    /// quarantines it rather than trapping on the size.
    @Test func aRebuildQuarantinesABlobAnnouncingASizePastInt64() async throws {
        let scratch = try Scratch()
        // Streamed without a size, so the stored frame records one in an 8-byte field.
        let stream = AsyncStream<Data> { continuation in
            continuation.yield(samplePDF(seed: 71))
            continuation.finish()
        }
        let pdf = try await scratch.store.ingestPDF(tenant: Scratch.tenant, document: "d", chunks: stream)
        scratch.store.close()
        let path = scratch.store.layout.blobPath(pdf.sha256)
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let header = try #require(ZstdFrameHeader(Array(bytes.prefix(18))))
        #expect(bytes[4] >> 6 == 3, "an 8-byte size field")
        bytes[header.headerSize - 1] |= 0x80
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        for suffix in ["", "-wal", "-shm"] { try FileSystem.remove(scratch.store.layout.catalogPath + suffix) }

        let reopened = try InstantStore(root: scratch.root)
        #expect(!FileSystem.exists(path))
        #expect(scratch.files(in: "quarantine").count == 1, "the damaged blob is kept as evidence")
        #expect(try reopened.verify(VerifyOptions(deep: true)).isClean)
    }

    @Test func aRebuildTakesBackALayerAStaleMarkDisabled() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        try layer.create(id: "a", content: note("a"))
        layer.close()
        _ = try scratch.store.openLayer(key: layer.key).markRemoved(allowingPendingThrough: .max)  // a refused removal's
        scratch.store.close()
        let (rebuilt, report) = try InstantStore.rebuildCatalog(root: scratch.root)
        #expect(report.layers == 1 && report.quarantined.isEmpty)
        let back = try rebuilt.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        try back.create(id: "b", content: note("b"))
        #expect(try back.pendingChanges().map(\.annotationID) == ["a", "b"])
    }

    /// A catalog file that exists but was never written (0 bytes, no tables) over PDFs and
    /// layers is rebuilt too: taken as it is, it would make every file look like garbage.
    @Test func aBlankCatalogOverDataIsRebuilt() throws {
        let scratch = try Scratch()
        try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "d", from: scratch.file(samplePDF(seed: 11)))
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        try layer.create(id: "a", content: note("a"))
        layer.close()
        scratch.store.close()
        for suffix in ["-wal", "-shm"] { try FileSystem.remove(scratch.store.layout.catalogPath + suffix) }
        try Data().write(to: URL(fileURLWithPath: scratch.store.layout.catalogPath))
        let reopened = try InstantStore(root: scratch.root)
        #expect(try reopened.verify(VerifyOptions(repair: true)).isClean)
        #expect(try reopened.localDescriptors().map(\.pendingChangeCount) == [1])
        #expect(scratch.files(in: "blobs").count == 1, "the PDF was not taken for garbage")
    }

    /// A layer handle that finds its file corrupt flags it at once: `ls` shows `invalid`.
    @Test func aReaderFlagsACorruptLayer() throws {
        let scratch = try Scratch()
        let snapshot = manyPageSnapshot("y")
        let created = try scratch.store.createLayer(
            tenant: Scratch.tenant, document: "d", layer: "", snapshot: snapshot)
        created.close()
        try damageLastPage(scratch.store.layout.layerPath(key: created.key))
        let layer = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        #expect { _ = try layer.annotations() } throws: { ($0 as? StoreError)?.code == "corrupt_layer" }
        #expect(try scratch.store.localDescriptors().map(\.state) == [.invalid])
    }

    /// A server links a document to a PDF it already holds.
    @Test func attachPDFLinksAStoredPDF() throws {
        let scratch = try Scratch()
        let pdf = try scratch.store.ingestPDF(
            tenant: Scratch.tenant, document: "d", from: scratch.file(samplePDF(seed: 12)))
        #expect(try scratch.store.attachPDF(pdf.sha256, tenant: Scratch.tenant, document: "e"))
        #expect(try scratch.store.pdf(tenant: Scratch.tenant, document: "e")?.sha256 == pdf.sha256)
        #expect(try !scratch.store.attachPDF(BlobHash.of(Data("other".utf8)), tenant: Scratch.tenant, document: "f"))
        #expect(try scratch.store.verify(VerifyOptions()).isClean, "reference counts follow")
    }

    @Test func anOrphanLayerHoldingChangesIsAdoptedOrQuarantinedNeverDeleted() throws {
        let scratch = try Scratch()
        let dirty = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "mine")
        try dirty.create(id: "a", content: note("a"))
        dirty.close()
        // Its row lost (as a half-built catalog would), and a copy under another key.
        let copy = RandomKey.make()
        try FileSystem.copy(
            scratch.store.layout.layerPath(key: dirty.key), to: scratch.store.layout.layerPath(key: copy))
        try dropLayerRow(scratch.store, key: dirty.key)
        let report = try scratch.store.verify(VerifyOptions(repair: true))
        let orphans = report.problems.filter { $0.kind == .orphanFile }
        #expect(orphans.count == 2 && orphans.allSatisfy(\.fixed), "\(report.problems)")
        let layer = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "mine")
        #expect(try layer.pendingChanges().map(\.annotationID) == ["a"])
        #expect(report.quarantine.count == 1 && report.quarantine[0].pendingChanges == 1)
        #expect(try scratch.store.verify(VerifyOptions(repair: true)).isClean)
    }

    /// A quarantined layer whose file fails SQLite's check is not restored: nothing is
    /// written to a copy of it, and the quarantined file stays exactly as it was.
    @Test func aDamagedQuarantinedLayerIsNotRestoredAndStaysAsItWas() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(
            tenant: Scratch.tenant, document: "d", layer: "", snapshot: manyPageSnapshot("q"))
        try layer.create(id: "a", content: note("pending"))
        layer.close()
        try damageLastPage(scratch.store.layout.layerPath(key: layer.key))
        let name = try #require(try scratch.store.layout.quarantine(StoreLayout.layerRelativePath(key: layer.key)))
        try dropLayerRow(scratch.store, key: layer.key)
        let path = scratch.root.appendingPathComponent("quarantine/\(name)")
        let before = try Data(contentsOf: path)
        #expect {
            try scratch.store.restoreQuarantinedLayer(named: name)
        } throws: { ($0 as? StoreError)?.code == "cannot_restore" }
        #expect(try Data(contentsOf: path) == before, "the quarantined file is untouched")
        #expect(try !scratch.store.hasLayer(tenant: Scratch.tenant, document: "d", layer: ""))
        #expect(!scratch.files(in: "tmp").contains { $0.hasSuffix(".layer") }, "the copy is gone")
    }

    @Test func quarantineKeepsTheWALAndRestoreBringsTheLayerBack() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        try layer.create(id: "a", content: note("in the WAL"))
        // Still open: the change is committed in the -wal only.
        #expect(FileManager.default.fileExists(atPath: scratch.store.layout.layerPath(key: layer.key) + "-wal"))
        let name = try #require(try scratch.store.layout.quarantine(StoreLayout.layerRelativePath(key: layer.key)))
        layer.close()
        #expect(scratch.files(in: "quarantine").contains(name + "-wal"))
        let listed = try scratch.store.quarantinedFiles()
        #expect(listed.map(\.pendingChanges) == [1] && listed[0].restorable)
        #expect(throws: StoreError.self) { try scratch.store.restoreQuarantinedLayer(named: name) }  // the row is still there
        try dropLayerRow(scratch.store, key: layer.key)
        let restored = try scratch.store.restoreQuarantinedLayer(named: name)
        #expect(restored.document == "d")
        let back = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        #expect(try back.pendingChanges().map(\.annotationID) == ["a"])
        try back.update(id: "a", content: note("written after the restore"))
        #expect(try scratch.store.quarantinedFiles().isEmpty)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    @Test func replacingACorruptLayerKeepsItsChangesAndRetiresOpenHandles() throws {
        let scratch = try Scratch()
        let snapshot = manyPageSnapshot("x")
        let created = try scratch.store.createLayer(
            tenant: Scratch.tenant, document: "d", layer: "", snapshot: snapshot)
        try created.create(id: "pending", content: note("p"))
        let sequence = try #require(try created.pendingChanges().first?.sequence)
        created.close()
        let oldKey = created.key
        try damageLastPage(scratch.store.layout.layerPath(key: oldKey))
        let open = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        let report = try scratch.store.verify(VerifyOptions(repair: true))
        #expect(report.problems.contains { $0.kind == .corruptLayer && $0.fixed }, "\(report.problems)")
        #expect(report.pendingChangesSalvaged == 1)
        #expect {
            try open.create(id: "late", content: note("too late"))
        } throws: { ($0 as? StoreError)?.code == "layer_removed" }
        let fresh = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        #expect(fresh.key != oldKey)
        #expect(try fresh.pendingChanges().map(\.annotationID) == ["pending"])
        // Sequences carry over: an export "through" a sequence still names the same changes.
        #expect(try fresh.pendingChanges().map(\.sequence) == [sequence])
        // New ones go far past the old file's numbers (``LayerDatabase/numberFloor(past:)``).
        try fresh.create(id: "next", content: note("after the repair"))
        let numbers = try fresh.pendingChanges().map(\.sequence)
        #expect(numbers.first == sequence && numbers.count == 2)
        #expect(numbers[1] > sequence + LayerDatabase.adoptionNumberGap)
        #expect(scratch.files(in: "quarantine").contains { $0.hasSuffix("layers_\(oldKey).sqlite") })
        #expect(try scratch.store.verify(VerifyOptions(repair: true)).isClean)
    }

    /// A repaired layer never numbers a new change with a number its client id has used:
    /// the server would answer it with the old change's verdict, and it would be lost.
    @Test func aRepairedLayerNeverReusesAChangeNumberUnderItsClientID() throws {
        let scratch = try Scratch()
        let created = try scratch.store.createLayer(
            tenant: Scratch.tenant, document: "d", layer: "", snapshot: manyPageSnapshot("x"))
        for number in 0..<3 { try created.create(id: "n\(number)", content: note("\(number)")) }
        let used = try created.pendingChanges().map(\.sequence)
        // The server took them all: nothing is pending, the numbers are used.
        try created.applyServerChanges(
            [], newRevision: 10, acknowledgedThrough: try #require(used.last))
        let oldClientID = try created.metadata().clientID
        created.close()
        try damageLastPage(scratch.store.layout.layerPath(key: created.key))
        #expect(try scratch.store.verify(VerifyOptions(repair: true)).problems.contains { $0.fixed })
        let fresh = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        try fresh.create(id: "after", content: note("after the repair"))
        let next = try #require(try fresh.pendingChanges().first)
        let newClientID = try fresh.metadata().clientID
        #expect(
            newClientID != oldClientID || !used.contains(next.sequence),
            "\(next.sequence) reused under \(String(describing: oldClientID))")
    }

    /// Changes salvaged from a file too damaged to open may miss the last numbers used:
    /// new changes are numbered far past them.
    @Test func changesSalvagedFromADamagedFileAreFollowedByFarHigherNumbers() throws {
        let scratch = try Scratch()
        let created = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        for number in 0..<3 { try created.create(id: "n\(number)", content: note("\(number)")) }
        let numbers = try created.pendingChanges().map(\.sequence)
        created.close()
        // A file whose schema record is lost: it cannot be opened as a layer, but its
        // pending changes can still be read.
        let queue = try DatabaseQueue(path: scratch.store.layout.layerPath(key: created.key))
        try queue.write { db in try db.execute(sql: "DELETE FROM grdb_migrations") }
        try queue.close()
        let report = try scratch.store.verify(VerifyOptions(repair: true))
        #expect(report.pendingChangesSalvaged == 3, "\(report.problems)")
        let fresh = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        #expect(try fresh.pendingChanges().map(\.sequence) == numbers)
        try fresh.create(id: "after", content: note("after the repair"))
        let next = try #require(try fresh.pendingChanges().last?.sequence)
        #expect(next > (numbers.last ?? 0) + 1_000_000)
    }

    @Test func aNewerFormatLayerIsNeverRepairedPrunedOrRemoved() throws {
        let scratch = try Scratch()
        try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "d", from: scratch.file(samplePDF(seed: 90)))
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        layer.close()
        let path = scratch.store.layout.layerPath(key: layer.key)
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in try db.execute(sql: "INSERT INTO grdb_migrations VALUES ('layer-v99-future')") }
        try queue.close()
        let before = try Data(contentsOf: URL(fileURLWithPath: path))

        let report = try scratch.store.verify(VerifyOptions(repair: true))
        #expect(report.remaining.map(\.kind) == [.unsupportedFormat], "\(report.problems)")
        let pruned = try scratch.store.prune(PruneOptions(maxSize: 0))
        #expect(pruned.removed.layers.isEmpty && pruned.removed.skippedUnreadableLayers.count == 1)
        let removals: [() throws -> Void] = [
            { _ = try scratch.store.removeLayer(tenant: Scratch.tenant, document: "d", layer: "") },
            { _ = try scratch.store.removeDocument(tenant: Scratch.tenant, document: "d") },
            { _ = try scratch.store.removeTenant(Scratch.tenant) },
        ]
        for removal in removals {
            #expect { try removal() } throws: { ($0 as? StoreError)?.code == "layer_unreadable" }
        }
        scratch.store.close()
        _ = try InstantStore.rebuildCatalog(root: scratch.root)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "the newer file is untouched")
        #expect(try InstantStore(root: scratch.root).verify(VerifyOptions(repair: true)).remaining.count == 1)
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test func aNewerCatalogIsNotRebuilt() throws {
        let scratch = try Scratch()
        try scratch.store.catalog.write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99-from-the-future')")
        }
        scratch.store.close()
        #expect {
            _ = try InstantStore.rebuildCatalog(root: scratch.root)
        } throws: { ($0 as? StoreError)?.code == "unsupported_format_version" }
        #expect(!scratch.files(in: "quarantine").contains { $0.contains("catalog") })
    }

    @Test func aStaleRemovedMarkIsClearedWithoutDiscardingAnything() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        try layer.create(id: "a", content: note("a"))
        _ = try layer.markRemoved(allowingPendingThrough: .max)  // as a removal killed before its commit leaves it
        try layer.create(id: "b", content: note("written after the stale mark"))
        layer.close()
        _ = try scratch.store.openLayer(key: layer.key).markRemoved(allowingPendingThrough: .max)
        let reopened = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        #expect(try !reopened.isMarkedRemoved())
        #expect(try reopened.pendingChanges().map(\.annotationID) == ["a", "b"])
    }

    @Test func aFlippedByteIsFlaggedByItsReaderAndHealedByTheNextIngest() throws {
        let scratch = try Scratch()
        let bytes = samplePDF(seed: 70)
        let pdf = try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "d", from: scratch.file(bytes))
        try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "").close()
        try flipByte(scratch.store.layout.blobPath(pdf.sha256))
        #expect(throws: StoreError.self) { try scratch.store.readPDF(pdf.sha256) { _ in } }
        #expect(try scratch.store.localDescriptors().map(\.state) == [.invalid])
        #expect(try scratch.store.cacheEntries().map(\.isCorrupted) == [true])

        let again = try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "d", from: scratch.file(bytes))
        #expect(!again.deduplicated)
        var read = Data()
        try scratch.store.readPDF(pdf.sha256) { read.append(contentsOf: $0) }
        #expect(read == bytes)
        #expect(try scratch.store.localDescriptors().map(\.state) == [.clean])
        #expect(scratch.files(in: "quarantine").count == 1, "the bad copy is kept as evidence")
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)

        // Damage nobody has read yet is healed too: the copy is compared byte for byte.
        try flipByte(scratch.store.layout.blobPath(pdf.sha256))
        try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "e", from: scratch.file(bytes))
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
        #expect(scratch.tempFiles().isEmpty, "no claim or temp name is left")
        #expect(try linkCount(scratch.store.layout.blobPath(pdf.sha256)) == 1)
        let intact = try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "f", from: scratch.file(bytes))
        #expect(intact.deduplicated)
    }

    @Test func anEmptyPDFIsRefusedAndLeavesNothing() throws {
        let scratch = try Scratch()
        #expect {
            try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "d", from: scratch.file(Data()))
        } throws: { ($0 as? StoreError)?.code == "empty_pdf" }
        #expect(scratch.tempFiles().isEmpty && scratch.files(in: "blobs").isEmpty)
        #expect(try scratch.store.cacheEntries().isEmpty)
    }

    @Test func aServersStoreRefusesEveryRemovalButItsOwn() throws {
        let scratch = try Scratch()
        let server = try InstantStore(root: scratch.root.appendingPathComponent("pdfs"), role: .origin)
        let pdf = try server.ingestPDF(tenant: Scratch.tenant, document: "d", from: scratch.file(samplePDF(seed: 80)))
        let operator_ = try InstantStore(root: server.root)
        #expect(operator_.role == .origin)
        let refusals: [() throws -> Void] = [
            { _ = try operator_.prune(PruneOptions(maxSize: 0)) }, { _ = try operator_.removeUnreferenced() },
            { _ = try operator_.removeTenant(Scratch.tenant) },
            { _ = try operator_.removeDocument(tenant: Scratch.tenant, document: "d") },
            { _ = try operator_.collectGarbage() },
        ]
        for refusal in refusals {
            #expect { try refusal() } throws: { ($0 as? StoreError)?.code == "origin_store" }
        }
        #expect(try operator_.verify(VerifyOptions(repair: true)).isClean)
        #expect(try operator_.pdf(tenant: Scratch.tenant, document: "d")?.sha256 == pdf.sha256)
        // A rebuilt catalog is still a server's: the mark is also kept outside the catalog.
        operator_.close()
        server.close()
        for suffix in ["", "-wal", "-shm"] { try FileSystem.remove(server.layout.catalogPath + suffix) }
        let rebuilt = try InstantStore(root: server.root)
        #expect(rebuilt.role == .origin)
        #expect { _ = try rebuilt.prune(PruneOptions(maxSize: 0)) } throws: {
            ($0 as? StoreError)?.code == "origin_store"
        }
        #expect(FileManager.default.fileExists(atPath: rebuilt.layout.blobPath(pdf.sha256)))
        let own = try InstantStore(root: server.root, role: .origin)
        #expect(
            try own.ingestPDF(tenant: Scratch.tenant, document: "e", from: scratch.file(samplePDF(seed: 81))).size > 0)
        #expect(
            try own.removeDocument(tenant: Scratch.tenant, document: "e").documents.count == 1, "its own handle may")
    }

    @Test func directoriesAndFilesArePrivate() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("instant-modes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try InstantStore(root: root)
        let pdf = try store.ingestPDF(
            tenant: Scratch.tenant, document: "d",
            from: {
                let url = root.appendingPathComponent("in.pdf"); try samplePDF(seed: 3).write(to: url); return url
            }())
        let layer = try store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        try layer.create(id: "a", content: note("a"))
        _ = try store.layout.quarantine(StoreLayout.blobRelativePath(pdf.sha256))
        let directories = [
            "", "blobs", "blobs/sha256", "blobs/sha256/" + pdf.sha256.hex.prefix(2), "layers", "tmp", "quarantine",
        ]
        for directory in directories {
            #expect(FileSystem.mode(root.path + "/" + directory) == 0o700, "\(directory)")
        }
        let files =
            ["catalog.sqlite", "catalog.sqlite-wal", "catalog.sqlite-shm"]
            + ["", "-wal", "-shm"].map { StoreLayout.layerRelativePath(key: layer.key) + $0 }
            + (try FileSystem.contents(of: store.layout.quarantineDirectory)).map { "quarantine/" + $0 }
        for file in files { #expect(FileSystem.mode(root.path + "/" + file) == 0o600, "\(file)") }
        // A store made by an older build: loose modes are narrowed when it is opened (the
        // directories and catalog), or reported by verify and narrowed by repair (files).
        chmod(store.layout.catalogPath, 0o644)
        chmod(root.path, 0o755)
        let layerPath = store.layout.layerPath(key: layer.key)
        chmod(layerPath, 0o644)
        let reopened = try InstantStore(root: root)
        #expect(FileSystem.mode(store.layout.catalogPath) == 0o600 && FileSystem.mode(root.path) == 0o700)
        let loose = try reopened.verify().problems.filter { $0.kind == .loosePermissions }
        #expect(loose.map(\.subject) == [StoreLayout.layerRelativePath(key: layer.key)], "\(loose)")
        #expect(try reopened.verify(VerifyOptions(repair: true)).problems.allSatisfy(\.fixed))
        #expect(FileSystem.mode(layerPath) == 0o600)
    }
}

/// Deletes the catalog row of the layer file `key` (as a lost or half-built catalog would
/// have it), and with `zeroingLayerCounts` sets every document's layer count to 0 to match.
func dropLayerRow(_ store: InstantStore, key: String, zeroingLayerCounts: Bool = true) throws {
    try store.catalog.write { db in
        try db.execute(sql: "DELETE FROM layer WHERE key = ?", arguments: [key])
        if zeroingLayerCounts { try db.execute(sql: "UPDATE document SET layerCount = 0") }
    }
}

/// 400 records of about 250 bytes: a layer file of many pages, whose last page holds
/// records (so damaging it leaves the meta row and pending changes readable).
func manyPageSnapshot(_ letter: String) -> [ServerRecord] {
    (0..<400).map { ServerRecord(id: "r\($0)", content: note(String(repeating: letter, count: 200)), revision: 1) }
}

/// Changes a layer file's meta row to name another document and layer.
func rewriteMeta(_ path: String, document: String, layer: String) throws {
    let queue = try DatabaseQueue(path: path)
    try queue.write { db in
        try db.execute(
            sql: "UPDATE meta SET documentIdentifier = ?, layerName = ?",
            arguments: [document.storedBytes, layer.storedBytes])
    }
    try queue.close()
}

/// Overwrites the last page of a (checkpointed) SQLite file with garbage.
func damageLastPage(_ path: String) throws {
    let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
    let size = try handle.seekToEnd()
    try handle.seek(toOffset: size - 4096)
    try handle.write(contentsOf: Data(repeating: 0xA5, count: 4096))
    try handle.close()
}

/// Flips one byte in the middle of a file, keeping its size.
func flipByte(_ path: String) throws {
    let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
    let size = try handle.seekToEnd()
    try handle.seek(toOffset: size / 2)
    let byte = try handle.read(upToCount: 1) ?? Data([0])
    try handle.seek(toOffset: size / 2)
    try handle.write(contentsOf: Data([byte[0] ^ 0x40]))
    try handle.close()
}

/// The number of names (hard links) of the file at `path`.
func linkCount(_ path: String) throws -> Int {
    var info = stat()
    guard lstat(path, &info) == 0 else { throw POSIXError(.ENOENT) }
    return Int(info.st_nlink)
}
