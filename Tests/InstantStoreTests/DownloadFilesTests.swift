import Foundation
import Testing

@testable import InstantStore

/// The files a download writes in `tmp/`, made ahead (``DownloadFiles``): taken by the
/// ingest and the staged layer, or removed when the download does not use them; locked
/// while their maker lives, swept once it is gone.
@Suite struct DownloadFilesTests {
    @Test func reservedFilesAreTakenByTheDownload() async throws {
        let scratch = try Scratch()
        let files = try scratch.store.reserveDownloadFiles()
        let made = Set(scratch.tempFiles())
        #expect(made.count == 3, "a PDF's temp file, a layer file and its lock: \(made)")
        #expect(try scratch.store.sweepAbandoned(dryRun: true).paths.isEmpty, "locked: not a dead writer's")

        let pdf = samplePDF(seed: 95)
        let ingest = try scratch.store.beginPDFIngest(
            expectedSize: Int64(pdf.count), expectedHash: BlobHash.of(pdf), files: files)
        let staged = try scratch.store.stageLayer(
            tenant: Scratch.tenant, document: "d", layer: "",
            snapshot: [ServerRecord(id: "a", content: note("a"), revision: 1)],
            revision: 1, epoch: "e", pdf: BlobHash.of(pdf), files: files)
        #expect(Set(scratch.tempFiles()) == made, "the files made ahead are the ones written")
        try pdf.withUnsafeBytes { try ingest.append($0) }
        try await ingest.seal()
        _ = try await ingest.commit(with: staged)
        #expect(scratch.tempFiles().isEmpty)
        let layer = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        #expect(try layer.annotations().map(\.id) == ["a"])
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// A download that uses none of them (its PDF was stored already, or it failed early):
    /// they go with it.
    @Test func reservedFilesNotTakenAreRemoved() throws {
        let scratch = try Scratch()
        do {
            let files = try scratch.store.reserveDownloadFiles()
            #expect(scratch.tempFiles().count == 3)
            withExtendedLifetime(files) {}
        }
        #expect(scratch.tempFiles().isEmpty)
        do {
            let files = try scratch.store.reserveDownloadFiles()
            _ = try scratch.store.beginPDFIngest(files: files).discard()
            #expect(scratch.tempFiles().count == 2, "the layer's, still reserved")
        }
        #expect(scratch.tempFiles().isEmpty)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// A process killed holding them leaves dead temp files: the next prune sweeps them.
    @Test func filesOfAKilledDownloadAreSwept() async throws {
        let scratch = try Scratch()
        let result = try await runWorker(
            [
                "download-commit", scratch.root.path, Scratch.tenant.string, "new", "layer",
                try scratch.file(samplePDF(seed: 96)).path,
            ],
            failpoint: "file.write")
        #expect(result.signalled, "\(result.output)")
        #expect(!scratch.tempFiles().isEmpty)
        let store = try InstantStore(root: scratch.root)
        _ = try store.prune()
        #expect(scratch.tempFiles().isEmpty)
        #expect(try store.verify(VerifyOptions(deep: true)).isClean)
    }
}
