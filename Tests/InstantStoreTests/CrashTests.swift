import Foundation
import Testing

@testable import InstantStore

/// Kills a real process at each named failpoint, then checks the invariants: no dangling
/// reference, no lost pending change, and what is left over is garbage repair clears.
@Suite(.serialized) struct CrashTests {
    static let harmless: Set<Problem.Kind> = [.orphanFile, .deadTempFile, .pendingTombstone, .layerMarkedRemoved]

    /// A store with a document, its PDF, a layer holding one pending change, and an
    /// unreferenced document; the worker then runs `command` and dies at `failpoint`.
    @Test(arguments: [
        ("ingest", "blob.beforeFsync"), ("ingest", "blob.beforeCommit"), ("ingest", "blob.beforeRename"),
        ("ingest", "blob.afterRename"), ("ingest", "blob.afterInsert"), ("ingest", "blob.beforeCommitTransaction"),
        ("ingest", "blob.afterCommit"),
        ("ingest-announced", "blob.claimMade"), ("ingest-announced", "blob.beforeFsync"),
        ("ingest-announced", "blob.afterRename"), ("ingest-announced", "blob.beforeCommitTransaction"),
        ("ingest", "directory.fsync"), ("ingest-announced", "directory.fsync"),
        ("create-layer", "layer.beforeFsync"), ("create-layer", "layer.beforeCommit"),
        ("create-layer", "layer.afterRename"),
        ("download-commit", "file.write"), ("download-commit", "layer.beforeFsync"),
        ("download-commit", "blob.beforeFsync"),
        ("download-commit", "layer.afterRename"), ("download-commit", "directory.fsync"),
        ("download-commit", "blob.beforeCommitTransaction"),
        ("create-layer", "layer.afterInsert"), ("create-layer", "layer.afterCommit"),
        ("annotate", "layer.syncRecord"), ("annotate", "layer.beforeCommit"),
        ("remove-layer", "remove.afterMark"), ("remove-layer", "remove.beforeCommit"),
        ("remove-layer", "remove.afterCommit"), ("remove-layer", "gc.afterUnlink"),
        ("remove-document", "gc.afterDeleteRow"), ("remove-document", "gc.afterUnlink"),
        ("remove-unreferenced", "gc.afterDeleteRow"), ("remove-unreferenced", "gc.afterUnlink"),
        ("prune", "remove.afterMark"), ("prune", "gc.afterUnlink"),
    ])
    func killedAtFailpoint(command: String, failpoint: String) async throws {
        let scratch = try Scratch()
        let tenant = Scratch.tenant.string
        try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "kept", from: scratch.file(samplePDF(seed: 50)))
        let kept = try scratch.store.createLayer(tenant: Scratch.tenant, document: "kept", layer: "")
        try kept.create(id: "pending", content: note("must survive"))
        try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "loose", from: scratch.file(samplePDF(seed: 51)))
        try scratch.store.createLayer(tenant: Scratch.tenant, document: "victim", layer: "clean")
        try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "victim", from: scratch.file(samplePDF(seed: 52)))

        let arguments: [String] =
            switch command {
            case "ingest", "ingest-announced": [tenant, "new", try scratch.file(samplePDF(seed: 53)).path]
            case "create-layer": [tenant, "new", "layer"]
            case "download-commit": [tenant, "new", "layer", try scratch.file(samplePDF(seed: 53)).path]
            case "annotate": [tenant, "victim", "clean", "x"]
            case "remove-layer": [tenant, "victim", "clean"]
            case "remove-document": [tenant, "victim"]
            case "prune": ["0"]
            default: []
            }
        let result = try await runWorker([command, scratch.root.path] + arguments, failpoint: failpoint)
        #expect(result.signalled, "the worker should die at \(failpoint): \(result.output)")

        let store = try InstantStore(root: scratch.root)
        let report = try store.verify(VerifyOptions(deep: true))
        let serious = report.remaining.filter { !Self.harmless.contains($0.kind) }
        #expect(serious.isEmpty, "after \(command) killed at \(failpoint): \(serious)")
        let survivor = try store.openLayer(tenant: Scratch.tenant, document: "kept", layer: "")
        #expect(try survivor.pendingChanges().map(\.annotationID) == ["pending"])
        #expect(try store.verify(VerifyOptions(repair: true)).isClean)
        #expect(try store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// A commit killed once the staged file was renamed to its claim, or once the claim
    /// was linked into `blobs/`, or whose transaction fails after the link, leaves a dead
    /// claim: the prune sweeps it, and the file in
    /// `blobs/` goes only when no row claims it (a new PDF's orphan), never the copy a
    /// document holds (replaced or not by then).
    @Test(arguments: [
        ("blob.afterRename", false), ("blob.afterRename", true), ("blob.claimMade", true), ("blob.swapLinked", true),
        // A file system without hard links: a claim file of its own, the PDF renamed over the copy.
        ("file.link=eperm,blob.afterRename", true),
        // Not killed: the transaction fails after the link, and the commit keeps its claim.
        ("blob.beforeCommitTransaction=eio", false),
    ])
    func aDeadClaimLeadsThePruneToOrphansOnly(failpoint: String, storedDamaged: Bool) async throws {
        let scratch = try Scratch()
        let pdf = samplePDF(seed: 54)
        let hash = BlobHash.of(pdf)
        let blob = scratch.store.layout.blobPath(hash)
        if storedDamaged {
            try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "kept", from: scratch.file(pdf))
            // A layer, so that the prune keeps the document (no unreferenced entry).
            try scratch.store.createLayer(tenant: Scratch.tenant, document: "kept", layer: "")
            // Damage nobody has read yet: the ingest below replaces the copy.
            try flipByte(blob)
        }
        let damaged = storedDamaged ? try Data(contentsOf: URL(fileURLWithPath: blob)) : nil
        let result = try await runWorker(
            ["ingest-announced", scratch.root.path, Scratch.tenant.string, "again", try scratch.file(pdf).path],
            failpoint: failpoint)
        if failpoint.hasSuffix("=eio") {
            #expect(!result.signalled && result.status != 0, "the worker should fail: \(result.output)")
        } else {
            #expect(result.signalled, "the worker should die at \(failpoint): \(result.output)")
        }
        let claims = scratch.tempFiles().filter { $0.hasPrefix(hash.hex) && $0.hasSuffix(".claim") }
        #expect(claims.count == 1, "the dead claim is left: \(scratch.tempFiles())")
        let placed = failpoint.hasSuffix("blob.afterRename") || failpoint.hasPrefix("blob.beforeCommitTransaction")
        #expect(FileSystem.exists(blob) == (storedDamaged || placed))

        let store = try InstantStore(root: scratch.root)
        _ = try store.prune()
        #expect(scratch.tempFiles().isEmpty, "swept")
        if storedDamaged {
            #expect(try store.pdf(tenant: Scratch.tenant, document: "kept")?.sha256 == hash)
            let now = try Data(contentsOf: URL(fileURLWithPath: blob))
            if failpoint.hasSuffix("blob.afterRename") {
                #expect(now != damaged, "the new copy replaced the damaged one")
                #expect(try store.verify(VerifyOptions(deep: true)).isClean)
            } else {
                #expect(now == damaged, "the damaged copy is still there, for a reader to flag")
            }
        } else {
            #expect(!FileSystem.exists(blob), "the orphan is removed")
            #expect(try store.verify(VerifyOptions(deep: true)).isClean)
        }
    }

    /// On a file system without hard links (each link refused with EPERM here), the commit
    /// makes a claim file of its own and renames the PDF into `blobs/`: stored, nothing
    /// left in `tmp/`; killed after the rename, its dead claim leads the prune to the orphan.
    @Test func withoutHardLinksTheClaimIsAFileOfItsOwn() async throws {
        let scratch = try Scratch()
        let (first, second) = (samplePDF(seed: 56), samplePDF(seed: 57))
        // A layer, so that the prune keeps the document (no unreferenced entry).
        try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "").close()
        let stored = try await runWorker(
            ["ingest-announced", scratch.root.path, Scratch.tenant.string, "d", try scratch.file(first).path],
            failpoint: "file.link=eperm")
        #expect(!stored.signalled && stored.status == 0, "\(stored.output)")
        #expect(scratch.tempFiles().isEmpty, "its claim file is removed after the commit")

        let killed = try await runWorker(
            ["ingest-announced", scratch.root.path, Scratch.tenant.string, "e", try scratch.file(second).path],
            failpoint: "file.link=eperm,blob.afterRename")
        #expect(killed.signalled, "\(killed.output)")
        let claims = scratch.tempFiles().filter { $0.hasSuffix(".claim") }
        #expect(claims.count == 1, "\(scratch.tempFiles())")
        let claim = scratch.store.layout.tmpDirectory + "/" + (claims.first ?? "")
        #expect(try FileSystem.fileSize(claim) == 0, "a claim file of its own, empty")
        let orphan = scratch.store.layout.blobPath(BlobHash.of(second))
        #expect(FileSystem.exists(orphan))

        let store = try InstantStore(root: scratch.root)
        _ = try store.prune()
        #expect(scratch.tempFiles().isEmpty && !FileSystem.exists(orphan))
        #expect(try store.pdf(tenant: Scratch.tenant, document: "d")?.sha256 == BlobHash.of(first))
        #expect(try store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// The fsync a seal starts ahead of the commit fails (an I/O error). The commit
    /// renames the blob to its new name while that fsync runs, and fails with it: nothing
    /// is committed, what is left is garbage (the orphan and its claim) that a repair
    /// clears, and the same ingest then succeeds.
    @Test func aFailedSyncAheadFailsTheCommitAndLeavesOnlyGarbage() async throws {
        let scratch = try Scratch()
        let bytes = samplePDF(seed: 55)
        let arguments = [
            "ingest-announced", scratch.root.path, Scratch.tenant.string, "new", try scratch.file(bytes).path,
        ]
        let result = try await runWorker(arguments, failpoint: "blob.beforeFsync=eio")
        #expect(!result.signalled && result.status != 0, "\(result.output)")
        #expect(result.output.contains("blob.beforeFsync"), "the error says where: \(result.output)")
        let store = try InstantStore(root: scratch.root)
        #expect(try store.pdf(tenant: Scratch.tenant, document: "new") == nil)
        let report = try store.verify(VerifyOptions(deep: true))
        #expect(report.remaining.allSatisfy { Self.harmless.contains($0.kind) }, "\(report.remaining)")
        #expect(try store.verify(VerifyOptions(repair: true)).isClean)
        #expect(scratch.tempFiles().isEmpty)
        #expect(scratch.files(in: "blobs").isEmpty)

        let retried = try await runWorker(arguments)
        #expect(retried.status == 0, "\(retried.output)")
        #expect(try store.pdf(tenant: Scratch.tenant, document: "new")?.sha256 == BlobHash.of(bytes))
        #expect(try store.verify(VerifyOptions(deep: true)).isClean)
    }

    @Test func diskFullGivesAClearErrorAndAConsistentStore() async throws {
        let scratch = try Scratch()
        try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "kept", from: scratch.file(samplePDF(seed: 60)))
        let result = try await runWorker(
            ["ingest", scratch.root.path, Scratch.tenant.string, "new", try scratch.file(samplePDF(seed: 61)).path],
            failpoint: "file.write=enospc")
        #expect(result.status == 2 && !result.signalled)
        #expect(result.output.contains("no space left on the device"))
        #expect(scratch.tempFiles().isEmpty)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
        #expect(try scratch.store.cacheEntries().map(\.documentIdentifier) == ["kept"])
    }

    /// The collector and a writer race in two processes; the writer reads back every PDF
    /// it committed and fails on a missing or wrong blob.
    @Test func collectorRacingWritersNeverLosesAReferencedBlob() async throws {
        let scratch = try Scratch()
        let rounds = ProcessInfo.processInfo.environment["INSTANT_STRESS_ROUNDS"] ?? "1000"
        async let writer = runWorker(["ingest-loop", scratch.root.path, Scratch.tenant.string, rounds])
        async let collector = runWorker(["gc-loop", scratch.root.path, rounds])
        let (written, collected) = try await (writer, collector)
        #expect(written.status == 0, "writer: \(written.output)")
        #expect(collected.status == 0, "collector: \(collected.output)")
        let report = try scratch.store.verify(VerifyOptions(deep: true))
        #expect(report.remaining.filter { !Self.harmless.contains($0.kind) }.isEmpty, "\(report.remaining)")
    }
}
