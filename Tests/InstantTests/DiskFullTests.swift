import Foundation
import InstantStore
import ServerTestSupport
import Testing

/// A disk that fills up under the client, in a worker process (the store's failpoints
/// answer as a full disk does, ENOSPC): the call fails with `couldNotWriteToDisk`, nothing
/// is half kept, what was durable before stays, and once there is room again the
/// download and the sync complete.
@Suite struct DiskFullTests {
    @Test func aFullDiskFailsADownloadAndAnEditAndLosesNothing() async throws {
        try await TestServer.with { server in
            let fixture = try await WorkerFixture(server: server)
            defer { fixture.removeRoot() }
            // The PDF's bytes cannot be written: no document, no layer, no file left.
            let download = try await fixture.expectFailure("download", failpoint: "file.write=enospc")
            #expect(download.error.contains("couldNotWriteToDisk"), "\(download.error)")
            try expectNothingStored(fixture)
            try await fixture.expectOK("download")

            // Two edits made, then one the full disk refuses: the two stay, the third is not
            // half there.
            try await fixture.expectOK("add", "kept", "1")
            let edit = try await fixture.run("add", "refused", "1", failpoint: "layer.beforeCommit=enospc")
            #expect(edit.ending.status != 0 && edit.error.contains("couldNotWriteToDisk"), "\(edit.error)")
            try await fixture.expectOK("sync")
            try await fixture.expectServer(holds: ["kept-0"], updated: "kept-0", revision: 1)
            try fixture.expectLocal(holds: ["kept-0"])
        }
    }

    private func expectNothingStored(_ fixture: WorkerFixture, sourceLocation: SourceLocation = #_sourceLocation) throws
    {
        let store = try InstantStore(root: fixture.root)
        defer { store.close() }
        #expect(try store.localDescriptors().isEmpty, sourceLocation: sourceLocation)
        #expect(try store.cacheEntries().isEmpty, sourceLocation: sourceLocation)
        // blobs/sha256/ab/<hex>: no file below the fan-out directories.
        let blobs = fixture.root.appendingPathComponent("blobs").path
        let files = (FileManager.default.enumerator(atPath: blobs)?.allObjects as? [String] ?? []).filter {
            $0.split(separator: "/").count > 2
        }
        #expect(files.isEmpty, "\(files)", sourceLocation: sourceLocation)
        let report = try store.verify(VerifyOptions(deep: true))
        #expect(report.isClean, "\(report.remaining)", sourceLocation: sourceLocation)
    }
}
