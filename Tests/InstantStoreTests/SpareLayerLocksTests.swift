import Foundation
import Testing

@testable import InstantStore

/// A committed layer's writer lock is kept, still locked, as a spare for the handle's next
/// layer (``SpareLayerLocks``): one rename instead of a new inode made and freed.
@Suite struct SpareLayerLocksTests {
    @Test func aCommittedLayersLockServesTheNextLayer() async throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        try await download(scratch, document: "a", seed: 1)
        let spares = scratch.files(in: "tmp")
        #expect(spares.count == 1 && spares.allSatisfy { SpareLayerLocks.isSpare(named: $0) }, "\(spares)")
        let inode = try Self.inode(scratch, spares[0])

        // The next download's layer lock is that file, under the new layer's name.
        do {
            let files = try scratch.store.reserveDownloadFiles()
            let locks = scratch.files(in: "tmp").filter { $0.hasSuffix(".layer.lock") }
            #expect(locks.count == 1 && scratch.store.spareLayerLocks.names.isEmpty)
            #expect(try Self.inode(scratch, locks[0]) == inode)
            #expect(try scratch.store.sweepAbandoned(dryRun: true).paths.isEmpty, "held: a live writer's")
            withExtendedLifetime(files) {}
        }
        #expect(scratch.store.spareLayerLocks.names.count == 1, "unused, it is a spare again")
        try await download(scratch, document: "b", seed: 2)
        #expect(scratch.tempFiles().isEmpty)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// A spare is held while its handle lives (no sweeper takes it), and goes with the
    /// handle: closed, or let go.
    @Test func sparesAreHeldAndGoWithTheirHandle() async throws {
        let scratch = try Scratch()
        try await download(scratch, document: "a", seed: 3)
        #expect(scratch.tempFiles().isEmpty, "the spare is held")
        #expect(try scratch.store.prune().removed.swept.isEmpty)
        #expect(scratch.store.spareLayerLocks.names.count == 1, "a prune leaves a live spare")
        scratch.store.close()
        #expect(scratch.files(in: "tmp").isEmpty)

        do {
            let other = try InstantStore(root: scratch.root)
            let staged = try other.stageLayer(tenant: Scratch.tenant, document: "c", layer: "", pdf: nil)
            try other.commitLayer(staged)
            #expect(other.spareLayerLocks.names.count == 1)
        }
        #expect(scratch.files(in: "tmp").isEmpty, "a handle let go removes its spares")
    }

    /// At most ``SpareLayerLocks/limit`` are kept, however many layers were staged at once.
    @Test func atMostTheLimitIsKept() throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        let count = SpareLayerLocks.limit + 3
        let staged = try (0..<count).map { index in
            try scratch.store.stageLayer(tenant: Scratch.tenant, document: "d\(index)", layer: "", pdf: nil)
        }
        #expect(scratch.files(in: "tmp").filter { $0.hasSuffix(".layer.lock") }.count == count)
        for layer in staged { try scratch.store.commitLayer(layer) }
        #expect(scratch.store.spareLayerLocks.names.count == SpareLayerLocks.limit)
        #expect(scratch.tempFiles().isEmpty)
        // Discarded stages give theirs back too, within the limit.
        try scratch.store.stageLayer(tenant: Scratch.tenant, document: "x", layer: "", pdf: nil).discard()
        #expect(scratch.store.spareLayerLocks.names.count == SpareLayerLocks.limit)
        #expect(scratch.tempFiles().isEmpty)
    }

    /// A spare removed by hand is not used: the next layer makes a lock of its own.
    @Test func aSpareRemovedByHandIsReplaced() async throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        try await download(scratch, document: "a", seed: 4)
        for name in scratch.store.spareLayerLocks.names {
            try FileManager.default.removeItem(atPath: scratch.root.path + "/tmp/" + name)
        }
        let staged = try scratch.store.stageLayer(tenant: Scratch.tenant, document: "b", layer: "", pdf: nil)
        let locks = scratch.files(in: "tmp").filter { $0.hasSuffix(".layer.lock") }
        #expect(locks == [staged.key + ".layer.lock"])
        let acquired = try POSIXFile.open(scratch.root.path + "/tmp/" + locks[0], flags: O_RDONLY)
            .lockExclusively(wait: false)
        #expect(!acquired, "the new lock is held")
        try scratch.store.commitLayer(staged)
        #expect(scratch.tempFiles().isEmpty)
    }

    /// A closed handle keeps no spare: a stage that ends after the close removes its lock.
    @Test func aClosedHandleKeepsNoSpare() throws {
        let scratch = try Scratch()
        let staged = try scratch.store.stageLayer(tenant: Scratch.tenant, document: "d", layer: "", pdf: nil)
        scratch.store.close()
        staged.discard()
        #expect(scratch.files(in: "tmp").isEmpty)
        #expect(scratch.store.spareLayerLocks.names.isEmpty)
    }

    /// The dead spares of a killed process are taken over by the next handle that needs a
    /// lock: the same files, held again, none left dead.
    @Test func deadSparesAreTakenOverByTheNextHandle() async throws {
        let scratch = try Scratch()
        scratch.store.close()
        let dead = try await sparesLeftByAKilledDownload(scratch, seed: 6)
        #expect(dead.count == 1)
        let inode = try Self.inode(scratch, dead[0])

        let store = try InstantStore(root: scratch.root)
        defer { store.close() }
        let staged = try store.stageLayer(tenant: Scratch.tenant, document: "e", layer: "", pdf: nil)
        #expect(try Self.inode(scratch, staged.key + ".layer.lock") == inode, "the dead spare, renamed")
        #expect(!scratch.files(in: "tmp").contains(dead[0]))
        try store.commitLayer(staged)
        #expect(store.spareLayerLocks.names.count == 1)
        #expect(try Self.inode(scratch, store.spareLayerLocks.names[0]) == inode)
    }

    /// A process killed (or ending without releasing its store) leaves its spares dead:
    /// empty files naming nothing. Verify does not report them; a prune, a repair or
    /// a garbage collection removes them without listing them.
    @Test(arguments: ["prune", "repair", "collect"])
    func deadSparesAreRemovedWithoutAReport(by sweep: String) async throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        let spares = try await sparesLeftByAKilledDownload(scratch, seed: 5)
        #expect(spares.count == 1, "\(scratch.files(in: "tmp"))")
        let mentioned = { (text: String) in spares.contains { text.contains($0) } }
        let report = try scratch.store.verify(VerifyOptions(deep: true))
        #expect(!report.problems.contains { mentioned($0.subject) }, "bookkeeping, not a problem")
        #expect(try !scratch.store.prune(PruneOptions(dryRun: true)).removed.swept.contains(where: mentioned))
        #expect(scratch.files(in: "tmp").contains(spares[0]), "a dry run leaves it")
        switch sweep {
        case "prune": #expect(try !scratch.store.prune().removed.swept.contains(where: mentioned))
        case "repair":
            #expect(try !scratch.store.verify(VerifyOptions(repair: true)).problems.contains { mentioned($0.subject) })
        default: _ = try scratch.store.collectGarbage()
        }
        #expect(scratch.files(in: "tmp").isEmpty)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
        let layer = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        #expect(try layer.annotations().map(\.id) == ["from-server"])
    }

    /// The spares in `tmp/` after a worker process was killed once its download committed:
    /// its lock is a spare by then (its PDF's claim, unlinked after the commit, is left too).
    private func sparesLeftByAKilledDownload(_ scratch: Scratch, seed: Int) async throws -> [String] {
        let result = try await runWorker(
            [
                "download-commit", scratch.root.path, Scratch.tenant.string, "d", "",
                try scratch.file(samplePDF(seed: seed)).path,
            ], failpoint: "layer.afterCommit")
        #expect(result.signalled, "\(result.output)")
        return scratch.files(in: "tmp").filter { SpareLayerLocks.isSpare(named: $0) }
    }

    /// A download's store steps (as the client's), through `files` made ahead.
    private func download(_ scratch: Scratch, document: String, seed: Int) async throws {
        let pdf = samplePDF(seed: seed)
        let files = try scratch.store.reserveDownloadFiles()
        let ingest = try scratch.store.beginPDFIngest(
            expectedSize: Int64(pdf.count), expectedHash: BlobHash.of(pdf), files: files)
        let staged = try scratch.store.stageLayer(
            tenant: Scratch.tenant, document: document, layer: "",
            snapshot: [ServerRecord(id: "a", content: note("a"), revision: 1)], revision: 1, epoch: "e",
            pdf: BlobHash.of(pdf), files: files)
        try pdf.withUnsafeBytes { try ingest.append($0) }
        try await ingest.seal()
        _ = try await ingest.commit(with: staged)
    }

    private static func inode(_ scratch: Scratch, _ name: String) throws -> UInt64 {
        let attributes = try FileManager.default.attributesOfItem(atPath: scratch.root.path + "/tmp/" + name)
        return try #require(attributes[.systemFileNumber] as? UInt64)
    }
}
