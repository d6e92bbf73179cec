import Foundation
import Testing

@testable import InstantStore

/// A commit syncs the directories its new names are in (a new fan-out directory, its
/// parent, `layers/`) at once, each on a thread of its own: every sync is waited for, and
/// one that fails, whichever thread it ran on, fails the commit with nothing stored.
@Suite(.serialized) struct DirectorySyncTests {
    @Test func everySyncIsWaitedForAndAnyFailureIsThrown() throws {
        let scratch = try Scratch()
        let present = (0..<3).map { scratch.root.appendingPathComponent("dir\($0)").path }
        for path in present { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        try FileSystem.syncDirectories(present)
        try FileSystem.syncDirectories([String]())
        let absent = scratch.root.appendingPathComponent("absent").path
        // The missing directory first (synced on the calling thread), in the middle, and
        // last (synced on other threads).
        for position in 0...present.count {
            var paths = present
            paths.insert(absent, at: position)
            #expect(throws: StoreError.self, "a failure at position \(position) must be thrown") {
                try FileSystem.syncDirectories(paths)
            }
        }
    }

    /// A directory sync that fails in a PDF's commit (an ingest, and a download's ingest,
    /// sealed before its commit) fails it: nothing is committed, what is left is garbage a
    /// repair clears, and the same ingest then succeeds.
    @Test(arguments: ["ingest", "ingest-announced"])
    func aFailedDirectorySyncCommitsNothing(command: String) async throws {
        let scratch = try Scratch()
        try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "kept", from: scratch.file(samplePDF(seed: 80)))
        let pdf = try scratch.file(samplePDF(seed: 81))
        let arguments = [command, scratch.root.path, Scratch.tenant.string, "new", pdf.path]
        let failed = try await runWorker(arguments, failpoint: "directory.fsync=eio")
        #expect(failed.status == 2 && !failed.signalled, "\(failed.output)")
        #expect(failed.output.contains("directory.fsync"), "\(failed.output)")

        let store = try InstantStore(root: scratch.root)
        #expect(try store.cacheEntries().map(\.documentIdentifier) == ["kept"])
        let report = try store.verify(VerifyOptions(deep: true))
        #expect(report.remaining.allSatisfy { CrashTests.harmless.contains($0.kind) }, "\(report.remaining)")
        #expect(try store.verify(VerifyOptions(repair: true)).isClean)

        let retried = try await runWorker(arguments)
        #expect(retried.status == 0, "\(retried.output)")
        #expect(try store.cacheEntries().map(\.documentIdentifier).sorted() == ["kept", "new"])
        #expect(try store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// A fan-out directory found already there (left by a commit killed before it synced
    /// the directory's parent) has its parent synced by the next commit into it: the first
    /// directory sync that worker makes, failed, names `blobs/sha256` itself.
    @Test func aFanOutDirectoryFoundThereHasItsParentSynced() async throws {
        let scratch = try Scratch()
        try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "kept", from: scratch.file(samplePDF(seed: 82)))
        let bytes = samplePDF(seed: 83)
        let fanOut = (scratch.store.layout.blobPath(BlobHash.of(bytes)) as NSString).deletingLastPathComponent
        if !FileManager.default.fileExists(atPath: fanOut) {
            try FileManager.default.createDirectory(atPath: fanOut, withIntermediateDirectories: false)
        }
        let pdf = try scratch.file(bytes)
        let failed = try await runWorker(
            ["ingest", scratch.root.path, Scratch.tenant.string, "new", pdf.path], failpoint: "directory.fsync=eio")
        #expect(failed.status == 2, "\(failed.output)")
        let parent = scratch.store.layout.blobsDirectory
        #expect(failed.output.contains(parent + ":") || failed.output.contains(parent + " "), "\(failed.output)")
        #expect(!failed.output.contains(fanOut), "the parent's failure is the one thrown: \(failed.output)")
    }
}
