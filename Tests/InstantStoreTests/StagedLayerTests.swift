import Foundation
import GRDB
import Crypto
import Synchronization
import Testing

@testable import InstantStore

/// A layer made in two steps (a download writes the file while the PDF arrives): nothing
/// shows until the commit, a released stage leaves nothing behind, and the file names the
/// PDF the catalog has when it is committed.
@Suite struct StagedLayerTests {
    private func tmpEntries(_ scratch: Scratch) -> [String] { scratch.tempFiles() }

    @Test func nothingShowsUntilTheCommitAndAReleasedStageLeavesNothing() throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        let pdf = try scratch.store.ingestPDF(
            tenant: Scratch.tenant, document: "d", from: scratch.file(samplePDF(seed: 1)))
        do {
            let staged = try scratch.store.stageLayer(
                tenant: Scratch.tenant, document: "d", layer: "",
                snapshot: [ServerRecord(id: "a", content: note("a"), revision: 3)], revision: 3, pdf: pdf.sha256)
            #expect(!tmpEntries(scratch).isEmpty, "the file is written in tmp/")
            #expect(throws: StoreError.self) {
                try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
            }
            _ = staged
        }
        #expect(tmpEntries(scratch).isEmpty, "released without a commit, it removed its file and lock")
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// A layer file is built with its journal in memory, so no `-wal`, `-shm` or
    /// `-journal` appears beside it (each new file costs an inode), and it is sealed in the
    /// WAL format every file in `layers/` has (bytes 18 and 19 of its header are 2), so no
    /// open there needs a synced write to switch.
    @Test func aStagedLayerIsOneFileSealedInWALFormat() throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        let pdf = try scratch.store.ingestPDF(
            tenant: Scratch.tenant, document: "d", from: scratch.file(samplePDF(seed: 1)))
        let records = (0..<300).map { ServerRecord(id: "r\($0)", content: note("n\($0)"), revision: 4) }
        for round in 0..<2 {
            let staged = try scratch.store.stageLayer(
                tenant: Scratch.tenant, document: "d", layer: "l\(round)", snapshot: records, revision: 4,
                pdf: pdf.sha256)
            #expect(tmpEntries(scratch).sorted() == ["\(staged.key).layer", "\(staged.key).layer.lock"])
            let header = try Data(contentsOf: URL(fileURLWithPath: staged.staging.path)).prefix(20)
            #expect(header.count == 20 && header[18] == 2 && header[19] == 2, "sealed in WAL format")
            try scratch.store.commitLayer(staged)
            let layer = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "l\(round)")
            #expect(try layer.annotations().count == 300)
            layer.close()
        }
        #expect(tmpEntries(scratch).isEmpty)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// After the first, a process makes layer files from a copy of the first's empty
    /// schema: each must be the same whole database, in WAL mode, private, with its own
    /// client id and its own records.
    @Test func layersMadeFromTheTemplateAreWholeAndPrivate() throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        let pdf = try scratch.store.ingestPDF(
            tenant: Scratch.tenant, document: "d", from: scratch.file(samplePDF(seed: 1)))
        var schemas: Set<[String]> = []
        var clientIDs: Set<String> = []
        for name in ["", "b", "c"] {
            let staged = try scratch.store.stageLayer(
                tenant: Scratch.tenant, document: "d", layer: name,
                snapshot: [ServerRecord(id: "r-\(name)", content: note(name), revision: 2)], revision: 2,
                pdf: pdf.sha256)
            try scratch.store.commitLayer(staged)
            let layer = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: name)
            #expect(try layer.annotations().map(\.id) == ["r-\(name)"])
            clientIDs.insert(try #require(try layer.metadata().clientID))
            let path = scratch.store.layout.layerPath(key: layer.key)
            layer.close()
            #expect(FileSystem.mode(path) == 0o600)
            let queue = try DatabaseQueue(path: path)
            try queue.read { db in
                #expect(try String.fetchOne(db, sql: "PRAGMA integrity_check") == "ok")
                #expect(try String.fetchOne(db, sql: "PRAGMA journal_mode") == "wal")
                schemas.insert(
                    try String.fetchAll(db, sql: "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name"))
            }
            try queue.close()
        }
        #expect(schemas.count == 1 && clientIDs.count == 3)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    @Test func theCommittedFileNamesTheCatalogsPDF() throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        let first = try scratch.store.ingestPDF(
            tenant: Scratch.tenant, document: "d", from: scratch.file(samplePDF(seed: 1)))
        let staged = try scratch.store.stageLayer(
            tenant: Scratch.tenant, document: "d", layer: "", snapshot: [], pdf: first.sha256)
        // Another process replaces the document's PDF while the file waits.
        let second = try scratch.store.ingestPDF(
            tenant: Scratch.tenant, document: "d", from: scratch.file(samplePDF(seed: 2)))
        try scratch.store.commitLayer(staged)
        #expect(tmpEntries(scratch).isEmpty)
        let layer = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        defer { layer.close() }
        #expect(try layer.metadata().pdfSHA256 == second.sha256)
        #expect(throws: StoreError.self) { try scratch.store.commitLayer(staged) }
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// The document (and its PDF) was removed while the file waited: a download's commit
    /// must not bring it back without its PDF.
    @Test func aCommitRequiringThePDFFailsOnceTheDocumentIsGone() throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        let pdf = try scratch.store.ingestPDF(
            tenant: Scratch.tenant, document: "d", from: scratch.file(samplePDF(seed: 1)))
        do {
            let staged = try scratch.store.stageLayer(tenant: Scratch.tenant, document: "d", layer: "", pdf: pdf.sha256)
            try scratch.store.removeDocument(tenant: Scratch.tenant, document: "d")
            #expect {
                try scratch.store.commitLayer(staged, requiringPDF: true)
            } throws: { error in
                if case .documentHasNoPDF = error as? StoreError { true } else { false }
            }
        }
        #expect(try scratch.store.cacheEntries(tenant: Scratch.tenant).isEmpty, "the document stays removed")
        #expect(tmpEntries(scratch).isEmpty)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    @Test func aSecondStageOfAStoredLayerIsRefusedAtTheCommit() throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        let pdf = try scratch.store.ingestPDF(
            tenant: Scratch.tenant, document: "d", from: scratch.file(samplePDF(seed: 1)))
        do {
            let one = try scratch.store.stageLayer(tenant: Scratch.tenant, document: "d", layer: "x", pdf: pdf.sha256)
            let two = try scratch.store.stageLayer(tenant: Scratch.tenant, document: "d", layer: "x", pdf: pdf.sha256)
            try scratch.store.commitLayer(one)
            #expect {
                try scratch.store.commitLayer(two)
            } throws: { error in
                if case .layerAlreadyExists = error as? StoreError { true } else { false }
            }
        }
        #expect(tmpEntries(scratch).isEmpty, "the refused stage removed its file once released")
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    // MARK: A download's commit: the PDF and its layer at once

    private func beginIngest(_ scratch: Scratch, _ bytes: Data) throws -> (PDFIngest, BlobHash) {
        let hex = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
        let hash = try #require(BlobHash(hex: hex))
        let ingest = try scratch.store.beginPDFIngest(expectedSize: Int64(bytes.count), expectedHash: hash)
        try bytes.withUnsafeBytes { try ingest.append($0) }
        return (ingest, hash)
    }

    @Test func aPDFCommittedWithItsLayerAppearsWithIt() async throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        let (ingest, hash) = try beginIngest(scratch, samplePDF(seed: 3))
        let staged = try scratch.store.stageLayer(tenant: Scratch.tenant, document: "d", layer: "x", pdf: hash)
        #expect(try scratch.store.localDescriptor(tenant: Scratch.tenant, document: "d", layer: "x") == nil)
        let stored = try await ingest.commit(with: staged)
        #expect(stored.sha256 == hash && !stored.deduplicated)
        #expect(try scratch.store.localDescriptor(tenant: Scratch.tenant, document: "d", layer: "x") != nil)
        #expect(try scratch.store.intactPDF(tenant: Scratch.tenant, document: "d")?.sha256 == hash)
        #expect(tmpEntries(scratch).isEmpty)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// A download stages its layer (off the cooperative pool) for the hash in the PDF's
    /// ETag; a layer staged for one PDF and committed with another (sealed first, as a
    /// download does) names the PDF committed, not the one it was staged for.
    @Test func aLayerStagedForAnotherPDFNamesThePDFCommittedWithIt() async throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        let announced = BlobHash.of(samplePDF(seed: 5))
        let (ingest, hash) = try beginIngest(scratch, samplePDF(seed: 6))
        let staged = try await scratch.store.stageLayerInBackground(
            tenant: Scratch.tenant, document: "d", layer: "x", pdf: announced)
        try await ingest.seal()
        let stored = try await ingest.commit(with: staged)
        #expect(stored.sha256 == hash)
        let layer = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "x")
        defer { layer.close() }
        #expect(try layer.metadata().pdfSHA256 == hash)
        #expect(scratch.files(in: "blobs") == ["sha256/\(hash.hex.prefix(2))/\(hash.hex)"])
        #expect(tmpEntries(scratch).isEmpty)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// Another process stored the layer meanwhile: the commit is refused whole, so the PDF
    /// is not the document's either, and neither file is left anywhere.
    @Test func aPDFCommittedWithALayerStoredMeanwhileLeavesNothing() async throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        let first = try scratch.store.stageLayer(tenant: Scratch.tenant, document: "d", layer: "x", pdf: nil)
        try scratch.store.commitLayer(first)
        let (ingest, hash) = try beginIngest(scratch, samplePDF(seed: 4))
        do {
            let staged = try scratch.store.stageLayer(tenant: Scratch.tenant, document: "d", layer: "x", pdf: hash)
            await #expect {
                try await ingest.commit(with: staged)
            } throws: { error in
                if case .layerAlreadyExists = error as? StoreError { true } else { false }
            }
            // Now: the commit's thread may release its reference after the error came back.
            staged.discard()
        }
        #expect(try scratch.store.intactPDF(tenant: Scratch.tenant, document: "d") == nil)
        #expect(scratch.files(in: "blobs").isEmpty, "\(scratch.files(in: "blobs"))")
        #expect(tmpEntries(scratch).isEmpty)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// A commit told, inside its transaction, that the app removed what it was for commits
    /// nothing: not the PDF, not the layer, and no file is left anywhere.
    @Test func aWithdrawnCommitCommitsNothing() async throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        let (ingest, hash) = try beginIngest(scratch, samplePDF(seed: 5))
        do {
            let staged = try scratch.store.stageLayer(tenant: Scratch.tenant, document: "d", layer: "x", pdf: hash)
            await #expect {
                try await ingest.commit(with: staged, unlessWithdrawn: { true })
            } throws: { error in
                if case .layerRemoved = error as? StoreError { true } else { false }
            }
            let alone = try scratch.store.stageLayer(tenant: Scratch.tenant, document: "d", layer: "y", pdf: nil)
            #expect {
                try scratch.store.commitLayer(alone, unlessWithdrawn: { true })
            } throws: { error in
                if case .layerRemoved = error as? StoreError { true } else { false }
            }
            // Now: the commit's thread may release its reference after the error came back.
            staged.discard()
        }
        #expect(try scratch.store.cacheEntries().isEmpty)
        #expect(scratch.files(in: "blobs").isEmpty && scratch.files(in: "layers").isEmpty)
        #expect(tmpEntries(scratch).isEmpty)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// A handle on a new layer's file whose only hook is `syncRecord`.
    private func newLayer(
        in scratch: Scratch, syncRecord: @escaping @Sendable (LayerDatabase) throws(StoreError) -> Bool
    ) throws -> LayerDatabase {
        let created = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "l")
        created.close()
        return try LayerDatabase(
            path: scratch.store.layout.layerPath(key: created.key), key: created.key,
            hooks: LayerHooks(syncRecord: syncRecord))
    }

    /// A layer's commit is not synced (a download is a cache fill a power cut may forget),
    /// so a handle syncs the catalog's row for its layer before its first local change
    /// commits (the change is not in the layer yet when it runs), and only once.
    @Test func aHandleSyncsItsRecordOnceBeforeItsFirstChange() throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        let pendingAtSync = Mutex<[Int]>([])
        let layer = try newLayer(in: scratch) { (layer) throws(StoreError) in
            let pending = try layer.pendingChanges().count
            pendingAtSync.withLock { $0.append(pending) }
            return true
        }
        defer { layer.close() }
        for index in 0..<3 { try layer.create(id: "n\(index)", content: note("\(index)")) }
        #expect(pendingAtSync.withLock { $0 } == [0])
        #expect(try layer.pendingChanges().count == 3)
    }

    /// The sync is best effort: one that fails (the catalog busy, full or closed) never
    /// fails the edit, which the layer file makes durable on its own, and the next change
    /// tries again.
    @Test func aFailedSyncNeverFailsAnEditAndIsTriedAgain() throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        let calls = Mutex(0)
        let layer = try newLayer(in: scratch) { (_) throws(StoreError) in
            let call = calls.withLock {
                $0 += 1
                return $0
            }
            if call == 1 { throw StoreError.busy(path: "catalog") }
            return call == 3
        }
        defer { layer.close() }
        for index in 0..<5 { try layer.create(id: "n\(index)", content: note("\(index)")) }
        #expect(calls.withLock { $0 } == 3, "tried again after a failure and after a missing row, then done")
        #expect(try layer.pendingChanges().count == 5)
    }

    /// A handle the app holds keeps taking changes after the store closes (its catalog with
    /// it): the sync then fails, and the edit does not.
    @Test func aHandleTakesChangesAfterTheStoreCloses() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "l")
        defer { layer.close() }
        scratch.store.close()
        try layer.create(id: "a", content: note("a"))
        #expect(try layer.pendingChanges().map(\.annotationID) == ["a"])
    }

    /// Opening a layer writes its last use, synced: the clock's time (a clock set back sets
    /// it back too), or 2 ms past the stored value when the clock is that close to it, so
    /// the row always changes (a row left as it was writes nothing, so syncs nothing).
    @Test func openingALayerWritesItsLastUse() throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "l").close()
        func lastUse() throws -> Date {
            try #require(try scratch.store.localDescriptor(tenant: Scratch.tenant, document: "d", layer: "l"))
                .lastUsedAt
        }
        func store(_ date: Date) throws {
            try scratch.store.catalog.write { db in
                try db.execute(sql: "UPDATE layer SET lastUsedAt = ?", arguments: [date])
            }
        }
        // The last use as the open wrote it: read before the handle closes, since closing
        // writes the clock's time again with the layer's counts (which, a millisecond
        // behind a stored value set ahead, would hide what the open wrote).
        func open() throws -> Date {
            let layer = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "l")
            defer { layer.close() }
            return try lastUse()
        }
        try store(Date().addingTimeInterval(3600))
        #expect(try open() < Date().addingTimeInterval(60), "an hour ahead, set back to the clock's time")
        try store(Date().addingTimeInterval(0.001))
        let stored = try lastUse()
        #expect(try open() > stored)
    }
}
