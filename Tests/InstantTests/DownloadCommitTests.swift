import Foundation
import Instant
import InstantProtocol
import InstantServer
import InstantStore
import ServerTestSupport
import TestSupport
import Testing

/// A download's last step, with real client processes (`instant-client-worker`): the PDF
/// that came over the network and its layer are committed in one catalog transaction, so
/// neither a prune nor a failure in between leaves the document with one and not the
/// other; what a failure leaves is found by the next prune; a removal by the app just
/// before the commit is not undone by it.
@Suite(.serialized) struct DownloadCommitTests {
    /// A download whose PDF the store holds already (here: its own, kept when its layer
    /// was removed) commits the layer alone. A prune in another process before that
    /// commit finds the PDF unreferenced (the document has no layer) and removes it: the
    /// download starts over, fetches the PDF and completes. Found by ClientProcessesTests'
    /// two syncing processes and prune, which failed once in CI. (A PDF that comes over
    /// the network is committed with its layer, in one transaction: no prune falls between.)
    @Test func aDownloadWhosePDFIsPrunedMeanwhileStartsOverAndCompletes() async throws {
        try await TestServer.with { server in
            let fixture = try await WorkerFixture(server: server)
            defer { fixture.removeRoot() }
            try await fixture.expectOK("download")
            let tenant = try TenantURL(server.base)
            do {
                let store = try InstantStore(root: fixture.root)
                defer { store.close() }
                _ = try store.removeLayer(tenant: tenant, document: "doc", layer: "L")
                #expect(try store.intactPDF(tenant: tenant, document: "doc") != nil, "the PDF stays")
            }
            let hold = try Hold()
            defer { hold.remove() }
            let download = try fixture.start("download", failpoint: hold.failpoint("download.afterPDF"))
            try await hold.waitUntilReached()
            try await fixture.prune()
            let blobs = fixture.root.appendingPathComponent("blobs").path
            let stored = FileManager.default.enumerator(atPath: blobs)?.allObjects.compactMap { $0 as? String }
            #expect(
                stored?.contains { $0.split(separator: "/").last?.count == 64 } == false, "the prune removed the PDF")
            try hold.release()
            let ending = try await download.exit(within: .seconds(60))
            #expect(ending.status == 0 && download.standardOutput.contains("ok"), "\(download.standardError)")
            #expect(!download.standardOutput.contains("pdf-bytes=0"), "the PDF was fetched again")
            try fixture.expectLayerStored()
        }
    }

    /// The layer side of a download fails once the PDF has arrived whole (here an I/O
    /// error once the layer file is written): the download fails, the PDF is kept, and the
    /// next download moves none of its bytes.
    @Test func aDownloadWhoseLayerFailsKeepsItsPDF() async throws {
        try await TestServer.with { server in
            let fixture = try await WorkerFixture(server: server)
            defer { fixture.removeRoot() }
            try await fixture.expectFailure("download", failpoint: "download.afterSnapshot=eio")
            let again = try await fixture.run("download")
            #expect(again.ending.status == 0 && again.output.contains("ok"), "\(again.error)")
            #expect(again.output.contains("pdf-bytes=0"), "\(again.output)")
            try fixture.expectStoreClean()
        }
    }

    /// The PDF is synced in steps while it arrives; a step that fails (an I/O error) fails
    /// the download with nothing committed and no file left, and the next download
    /// completes. The writer is held before it finishes until its step has begun (a step
    /// not begun by then is skipped), so a loaded machine cannot let it finish first.
    @Test func aDownloadWhosePDFFailsToSyncStoresNothing() async throws {
        try await TestServer.with { server in
            // Incompressible and large: its frame passes several steps.
            try await server.upload("doc", incompressiblePDF(1_500_000))
            let fixture = try await WorkerFixture(server: server, upload: false)
            defer { fixture.removeRoot() }
            // Beside the store, which the worker creates.
            let markers = FileManager.default.temporaryDirectory.appendingPathComponent("markers-\(UUID())")
            try FileManager.default.createDirectory(at: markers, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: markers) }
            let (hold, finishing) = (
                markers.appendingPathComponent("hold").path, markers.appendingPathComponent("finishing").path
            )
            for path in [hold, finishing] { #expect(FileManager.default.createFile(atPath: path, contents: nil)) }
            async let failing = fixture.expectFailure(
                "download",
                failpoint:
                    "file.earlySync=wait:\(hold),file.earlySync.afterSync=eio,file.earlySync.beforeFinish=wait:\(finishing)"
            )
            let deadline = Date().addingTimeInterval(60)
            while !FileManager.default.fileExists(atPath: hold + ".reached") && Date() < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(FileManager.default.fileExists(atPath: hold + ".reached"), "the step never began")
            for path in [hold, finishing] { try FileManager.default.removeItem(atPath: path) }
            let failed = try await failing
            #expect(failed.error.contains("file.earlySync"), "the step's error is the one reported: \(failed.error)")
            do {
                let store = try InstantStore(root: fixture.root)
                defer { store.close() }
                #expect(try store.cacheEntries().isEmpty, "nothing of the download is committed")
            }
            // A spare layer lock the worker kept, dead once it exited, is bookkeeping (the
            // next handle takes it over), not a file of the download.
            let left = try FileManager.default.contentsOfDirectory(
                atPath: fixture.root.appendingPathComponent("tmp").path
            ).filter { !$0.hasSuffix(".spare.lock") }
            #expect(left.isEmpty, "\(left)")
            try await fixture.expectOK("download")
            try fixture.expectLayerStored()
        }
    }

    /// A download's commit fails after the PDF and the layer file were both renamed into
    /// place (an I/O error before the transaction's end): nothing is committed, and the
    /// orphans left behind are found by the next prune, which reads `tmp/` only.
    @Test func aDownloadCommitThatFailsLeavesOrphansThePruneFinds() async throws {
        try await TestServer.with { server in
            let fixture = try await WorkerFixture(server: server)
            defer { fixture.removeRoot() }
            try await fixture.expectFailure("download", failpoint: "layer.afterInsert=eio")
            do {
                let store = try InstantStore(root: fixture.root)
                defer { store.close() }
                #expect(try store.cacheEntries().isEmpty, "nothing of the download is committed")
                let orphans = try store.verify(VerifyOptions()).remaining.filter { $0.kind == .orphanFile }
                #expect(orphans.count == 2, "the PDF and the layer file: \(orphans)")
            }
            try await fixture.prune()
            try fixture.expectStoreClean()
        }
    }

    /// A prune in another process while a download's PDF has arrived but is not committed
    /// yet finds nothing of it to remove (the PDF and the layer are committed together,
    /// and the PDF's temp file is its writer's): the download completes, the PDF moved once.
    @Test func aPruneBeforeADownloadsCommitTakesNothingFromIt() async throws {
        try await TestServer.with { server in
            // Incompressible: the bytes moved say how many times the PDF was sent.
            let pdf = incompressiblePDF(200_000)
            try await server.upload("doc", pdf)
            let fixture = try await WorkerFixture(server: server, upload: false)
            defer { fixture.removeRoot() }
            let hold = try Hold()
            defer { hold.remove() }
            let download = try fixture.start("download", failpoint: hold.failpoint("download.afterPDF"))
            try await hold.waitUntilReached()
            try await fixture.prune()
            try hold.release()
            let ending = try await download.exit(within: .seconds(60))
            #expect(ending.status == 0 && download.standardOutput.contains("ok"), "\(download.standardError)")
            let moved = download.standardOutput.split(separator: "\n").first { $0.hasPrefix("pdf-bytes=") }
                .flatMap { Int($0.dropFirst("pdf-bytes=".count)) }
            let size = pdf.count
            #expect(moved.map { $0 > 0 && $0 < size * 3 / 2 } == true, "moved \(moved ?? -1) for a PDF of \(size)")
            try fixture.expectLayerStored()
        }
    }

    /// The app removes the document while its download is past its last cancellation
    /// check (held at the commit's first step): the commit sees the removal inside its
    /// transaction and commits nothing, and the download fails; neither the layer nor the
    /// document (with its PDF) comes back.
    @Test func aDocumentRemovedJustBeforeItsDownloadCommitsDoesNotComeBack() async throws {
        try await TestServer.with { server in
            let fixture = try await WorkerFixture(server: server)
            defer { fixture.removeRoot() }
            let hold = try Hold()
            defer { hold.remove() }
            let run = try await fixture.run(
                "download-removing-document", hold.path, failpoint: hold.failpoint("blob.beforeCommit"))
            #expect(run.ending.status == 0, "\(run.error)")
            #expect(hold.reached, "the download reached its commit")
            #expect(run.output.contains("download=requestFailed"), "\(run.output)")
            let store = try InstantStore(root: fixture.root)
            defer { store.close() }
            let tenant = try TenantURL(server.base)
            #expect(try store.localDescriptor(tenant: tenant, document: "doc", layer: "L") == nil)
            #expect(try store.cacheEntries().isEmpty, "the removed document came back")
            let report = try store.verify(VerifyOptions(deep: true))
            #expect(report.isClean, "\(report.remaining)")
        }
    }

    /// The other order: the app removes the document while the download's commit holds the
    /// catalog's write lock (held inside its transaction). The removal waits for the
    /// commit, then removes what it committed: nothing of the document is left.
    @Test func aDocumentRemovedWhileItsDownloadCommitsIsRemovedAfterIt() async throws {
        try await TestServer.with { server in
            let fixture = try await WorkerFixture(server: server)
            defer { fixture.removeRoot() }
            let hold = try Hold()
            defer { hold.remove() }
            let run = try await fixture.run(
                "download-removing-document", hold.path, "behind",
                failpoint: hold.failpoint("blob.beforeCommitTransaction"))
            #expect(run.ending.status == 0, "\(run.error)")
            #expect(hold.reached, "the download reached its commit")
            #expect(run.output.contains("download=ok"), "the commit came first: \(run.output)")
            let store = try InstantStore(root: fixture.root)
            defer { store.close() }
            #expect(try store.cacheEntries().isEmpty, "the removal came after the commit")
            let report = try store.verify(VerifyOptions(deep: true))
            #expect(report.isClean, "\(report.remaining)")
        }
    }
}
