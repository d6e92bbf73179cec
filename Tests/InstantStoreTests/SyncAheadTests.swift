import Foundation
import Testing

@testable import InstantStore

/// A download's PDF and layer file are synced ahead of their commit (``SyncAhead``): the
/// commit renames them to their new names while those fsyncs run, and waits for them
/// beside the directories' fsyncs, before its transaction commits. Real worker
/// processes: the failpoints are process-wide.
@Suite(.serialized) struct SyncAheadTests {
    /// An fsync started ahead fails (an I/O error): the commit fails with it, nothing is
    /// committed, what is left is garbage a repair clears, and the same work then succeeds.
    @Test(arguments: [
        ("download-commit", "layer.beforeFsync"), ("download-commit", "blob.beforeFsync"),
        ("create-layer", "layer.beforeFsync"),
    ])
    func aFailedFsyncAheadCommitsNothing(command: String, failpoint: String) async throws {
        let scratch = try Scratch()
        try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "kept", from: scratch.file(samplePDF(seed: 90)))
        let arguments = try Self.arguments(command, in: scratch, pdf: samplePDF(seed: 91))
        let failed = try await runWorker(arguments, failpoint: failpoint + "=eio")
        #expect(failed.status == 2 && !failed.signalled, "\(failed.output)")
        #expect(failed.output.contains(failpoint), "the error says where: \(failed.output)")

        let store = try InstantStore(root: scratch.root)
        #expect(throws: StoreError.self) {
            try store.openLayer(tenant: Scratch.tenant, document: "new", layer: "layer")
        }
        let report = try store.verify(VerifyOptions(deep: true))
        #expect(report.remaining.allSatisfy { CrashTests.harmless.contains($0.kind) }, "\(report.remaining)")
        #expect(try store.verify(VerifyOptions(repair: true)).isClean)
        #expect(scratch.tempFiles().isEmpty)

        let retried = try await runWorker(arguments)
        #expect(retried.status == 0, "\(retried.output)")
        let layer = try store.openLayer(tenant: Scratch.tenant, document: "new", layer: "layer")
        if command == "download-commit" {
            #expect(try layer.annotations().map(\.id) == ["from-server"])
        }
        #expect(try store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// The commit renames a file whose fsync is held (`wait:`) into place, and does not
    /// commit until that fsync returns: the file is there, no row names it yet. A blob
    /// too large to be synced under the write lock (``SyncAhead/waitedUnderLockLimit``)
    /// is synced before it is renamed, as any file replacing another.
    @Test(arguments: [
        ("layer.beforeFsync", 50_000, true), ("blob.beforeFsync", 50_000, true),
        ("blob.beforeFsync", 6_000_000, false),
    ])
    func theCommitWaitsForWhatItRenamedAhead(failpoint: String, size: Int, renamedFirst: Bool) async throws {
        let scratch = try Scratch()
        let pdf = size > 1_000_000 ? Self.incompressible(size) : samplePDF(seed: 92, size: size)
        let hold = scratch.root.appendingPathComponent("hold").path
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        let arguments = try Self.arguments("download-commit", in: scratch, pdf: pdf)
        async let finished = runWorker(arguments, failpoint: "\(failpoint)=wait:\(hold)")
        try await Self.waitFor("the worker to reach \(failpoint)") { FileSystem.exists(hold + ".reached") }
        let layers = { scratch.files(in: "layers").filter { $0.hasSuffix(".sqlite") } }
        let blobs = { scratch.files(in: "blobs") }
        let placed = failpoint.hasPrefix("layer") ? layers : blobs
        if renamedFirst {
            try await Self.waitFor("the file renamed into place") { placed().count == 1 }
        } else {
            // Given time to go wrong: the rename must wait for the fsync.
            try await Task.sleep(for: .milliseconds(300))
            #expect(blobs().isEmpty, "a large blob is renamed only once synced")
        }
        #expect(throws: StoreError.self, "no row before the fsync returned") {
            try scratch.store.openLayer(tenant: Scratch.tenant, document: "new", layer: "layer")
        }
        #expect(try scratch.store.pdf(tenant: Scratch.tenant, document: "new") == nil)
        try FileManager.default.removeItem(atPath: hold)
        let result = try await finished
        #expect(result.status == 0, "\(result.output)")
        #expect(layers().count == 1 && blobs().count == 1)
        let layer = try scratch.store.openLayer(tenant: Scratch.tenant, document: "new", layer: "layer")
        #expect(try layer.annotations().map(\.id) == ["from-server"])
        if failpoint.hasPrefix("blob") {
            let stored = try #require(try scratch.store.pdf(tenant: Scratch.tenant, document: "new"))
            #expect((stored.storedSize > SyncAhead.waitedUnderLockLimit) == !renamedFirst, "\(stored.storedSize)")
        }
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// A layer built in memory (``LayerImage``) is the layer built in its file: the same
    /// rows and pending changes, in the WAL format, private, and sound.
    @Test func aLayerBuiltInMemoryIsTheOneBuiltInItsFile() throws {
        let scratch = try Scratch()
        let metadata = LayerMetadata(
            tenant: Scratch.tenant, documentIdentifier: "doc", layerName: "", pdfSHA256: BlobHash.of(Data("x".utf8)),
            userID: "u", lastServerRevision: 7, epoch: "e")
        let records = (0..<300).map { ServerRecord(id: "r\($0)", content: note("record \($0)"), revision: 7) }
        let pending = [
            PendingChange(sequence: 4, annotationID: "r1", kind: .update, content: note("changed"), createdAt: Date()),
            PendingChange(sequence: 5, annotationID: "r2", kind: .delete, content: nil, createdAt: Date()),
            PendingChange(sequence: 6, annotationID: "new", kind: .create, content: note("new"), createdAt: Date()),
        ]
        var built: [(LayerMetadata, [Annotation], [PendingChange])] = []
        for (name, limit) in [("memory", LayerImage.defaultLimit), ("file", 0)] {
            let path = scratch.root.appendingPathComponent("\(name).sqlite").path
            try LayerDatabase.create(
                at: path, key: name, metadata: metadata, records: records, pending: pending, numberChangesAfter: 9,
                inMemoryLimit: limit)
            let header = try #require(FileHandle(forReadingAtPath: path)).readData(ofLength: 20)
            #expect(Array(header.suffix(2)) == [2, 2], "\(name): a WAL database")
            #expect(!FileSystem.exists(path + "-wal") && !FileSystem.exists(path + "-journal"), "\(name)")
            #expect(FileSystem.mode(path) == 0o600, "\(name)")
            // The header as SQLite trusts it: the change counter (24) equals the version it
            // is valid for (92), so the page count (28) counts, and matches the file.
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            let word = { (at: Int) in bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
            let pageSize = bytes[16] == 0 && bytes[17] == 1 ? 65_536 : Int(bytes[16]) << 8 | Int(bytes[17])
            #expect(word(24) == word(92) && word(28) * pageSize == bytes.count, "\(name)")
            let layer = try LayerDatabase(path: path, key: name)
            #expect(try layer.queue.read { try String.fetchOne($0, sql: "PRAGMA quick_check") } == "ok", "\(name)")
            built.append(
                (try layer.metadata(), try layer.annotations(includingDeleted: true), try layer.pendingChanges()))
            // The floor: the next change is numbered past it.
            try layer.create(id: "after", content: note("after"))
            #expect(try layer.pendingChanges().last?.sequence == 10, "\(name)")
            layer.close()
        }
        let (memory, file) = (built[0], built[1])
        #expect(memory.0.lastServerRevision == 7 && memory.0.pdfSHA256 == metadata.pdfSHA256)
        #expect(memory.0.epoch == file.0.epoch && memory.0.userID == file.0.userID)
        #expect(memory.1 == file.1 && memory.1.count == 301)
        #expect(memory.1.first { $0.id == "r2" }?.isDeleted == true)
        #expect(memory.2.map(\.sequence) == [4, 5, 6] && memory.2.map(\.annotationID) == file.2.map(\.annotationID))
    }

    /// A download of the PDF whose stored copy is damaged or flagged: its fsync fails. The
    /// copy the catalog records is neither replaced nor moved to quarantine before the new
    /// bytes are durable, so the failure leaves it where its row says, as it was.
    @Test(arguments: [false, true])
    func aRecordedCopyIsReplacedOnlyByDurableBytes(flagged: Bool) async throws {
        let scratch = try Scratch()
        let (pdf, blob) = try Self.damagedCopy(in: scratch, seed: 93, flagged: flagged)
        let damaged = try Data(contentsOf: URL(fileURLWithPath: blob))
        let arguments = try Self.arguments("download-commit", in: scratch, pdf: pdf)
        let failed = try await runWorker(arguments, failpoint: "blob.beforeFsync=eio")
        #expect(failed.status == 2 && !failed.signalled, "\(failed.output)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: blob)) == damaged, "the recorded copy stays")
        #expect(scratch.files(in: "quarantine").isEmpty)
        let report = try scratch.store.verify(VerifyOptions(deep: true))
        #expect(!report.remaining.contains { $0.kind == .missingBlob }, "\(report.remaining)")

        let retried = try await runWorker(arguments)
        #expect(retried.status == 0, "\(retried.output)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: blob)) != damaged, "replaced by the durable bytes")
        #expect(try scratch.store.verify(VerifyOptions(repair: true)).isClean)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// A PDF that a power cut left short in `blobs/` (renamed there while its fsync ran):
    /// a catalog rebuild does not take it back, it quarantines it; a whole frame it takes.
    @Test func aRebuildQuarantinesAFrameCutShort() throws {
        let scratch = try Scratch()
        let whole = samplePDF(seed: 94, size: 400_000)
        let cut = Self.incompressible(400_000)
        try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "whole", from: scratch.file(whole))
        try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "cut", from: scratch.file(cut))
        let path = scratch.store.layout.blobPath(BlobHash.of(cut))
        let file = try POSIXFile.open(path, flags: O_RDONLY)
        let size = try #require(try FileSystem.fileSize(path))
        let header = try #require(ZstdFrameHeader(try file.read(count: 18, at: 0)))
        #expect(try header.isWholeFrame(file, size: size))
        for shorter in [size - 1, size - 4, size - 5, size / 2, Int64(header.headerSize) + 2] {
            #expect(try !header.isWholeFrame(file, size: shorter), "\(shorter) of \(size)")
        }
        #expect(try !header.isWholeFrame(file, size: size + 1))
        file.close()
        #expect(truncate(path, off_t(size / 2)) == 0)
        scratch.store.close()

        let (rebuilt, report) = try InstantStore.rebuildCatalog(root: scratch.root)
        #expect(report.blobs == 1 && report.quarantined.count == 1, "\(report)")
        #expect(try rebuilt.verify(VerifyOptions(deep: true)).isClean)
    }

    /// Every frame the store writes passes the walk a rebuild makes: PDFs of every size
    /// class of the frame header's content size (1, 2, 4 bytes), run-length blocks (a PDF
    /// of one repeated byte), incompressible ones, and a stream of unknown size (its frame
    /// rewritten to record its size).
    @Test func everyFrameTheStoreWritesIsWhole() async throws {
        let scratch = try Scratch()
        let pdfs: [Data] = [
            Data("%PDF-1.7\n%%EOF\n".utf8), samplePDF(seed: 97, size: 300), samplePDF(seed: 98, size: 70_000),
            Data("%PDF-1.7\n".utf8) + Data(repeating: 0x20, count: 400_000), Self.incompressible(300_000),
            samplePDF(seed: 99, size: 3_000_000),
        ]
        for (index, pdf) in pdfs.enumerated() {
            try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "d\(index)", from: scratch.file(pdf))
        }
        let stream = try scratch.store.beginPDFIngest()
        let streamed = samplePDF(seed: 100, size: 500_000)
        try streamed.withUnsafeBytes { try stream.append($0) }
        _ = try await stream.commit(tenant: Scratch.tenant, document: "streamed")
        let blobs = scratch.files(in: "blobs")
        #expect(blobs.count == pdfs.count + 1)
        for relative in blobs {
            let path = scratch.root.appendingPathComponent("blobs/" + relative).path
            let file = try POSIXFile.open(path, flags: O_RDONLY)
            defer { file.close() }
            let size = try #require(try FileSystem.fileSize(path))
            let header = try #require(ZstdFrameHeader(try file.read(count: 18, at: 0)))
            #expect(try header.isWholeFrame(file, size: size), "\(relative), \(size) bytes")
        }
    }

    /// A download replacing a flagged copy, killed between linking its bytes beside the
    /// copy and renaming them over it: the copy is still at its path (its evidence linked
    /// into quarantine/ too), never a row without its file.
    @Test func aFlaggedCopyKeepsItsPathUntilReplaced() async throws {
        let scratch = try Scratch()
        let (pdf, blob) = try Self.damagedCopy(in: scratch, seed: 101, flagged: true)
        let arguments = try Self.arguments("download-commit", in: scratch, pdf: pdf)
        let killed = try await runWorker(arguments, failpoint: "blob.swapLinked")
        #expect(killed.signalled, "\(killed.output)")
        #expect(FileSystem.exists(blob), "the flagged copy keeps its path")
        #expect(scratch.files(in: "quarantine").count == 1, "its evidence, linked")
        let report = try scratch.store.verify(VerifyOptions(deep: true))
        #expect(!report.remaining.contains { $0.kind == .missingBlob }, "\(report.remaining)")

        let retried = try await runWorker(arguments)
        #expect(retried.status == 0, "\(retried.output)")
        #expect(try scratch.store.verify(VerifyOptions(repair: true)).isClean)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// A PDF stored for document "kept" (which has a layer), its copy then damaged, and
    /// flagged corrupt when `flagged` (as a reader finding the damage does): the PDF's
    /// bytes and the copy's path.
    private static func damagedCopy(in scratch: Scratch, seed: Int, flagged: Bool) throws -> (Data, String) {
        let pdf = samplePDF(seed: seed)
        try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "kept", from: scratch.file(pdf))
        try scratch.store.createLayer(tenant: Scratch.tenant, document: "kept", layer: "")
        let blob = scratch.store.layout.blobPath(BlobHash.of(pdf))
        try flipByte(blob)
        if flagged { scratch.store.flagBlobCorrupt(BlobHash.of(pdf)) }
        return (pdf, blob)
    }

    /// Bytes zstd cannot compress: a PDF stored at about its own size.
    private static func incompressible(_ size: Int) -> Data {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        var data = Data("%PDF-1.7\n".utf8)
        data.reserveCapacity(size + 8)
        while data.count < size {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            withUnsafeBytes(of: state ^ (state >> 29)) { data.append(contentsOf: $0) }
        }
        return data
    }

    /// The worker's arguments for `command`, creating document "new", layer "layer".
    private static func arguments(_ command: String, in scratch: Scratch, pdf: Data) throws -> [String] {
        let tenant = Scratch.tenant.string
        return switch command {
        case "download-commit": [command, scratch.root.path, tenant, "new", "layer", try scratch.file(pdf).path]
        default: [command, scratch.root.path, tenant, "new", "layer"]
        }
    }

    private static func waitFor(_ what: String, _ condition: () -> Bool) async throws {
        let deadline = Date().addingTimeInterval(60)
        while !condition() && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(condition(), "waited a minute for \(what)")
    }
}
