import Foundation
import Testing

@testable import InstantStore

/// A blob is synced in steps while it is written (`EarlySync`), on another thread: a step
/// that fails fails the ingest with nothing stored, and a process killed in a step leaves
/// only what repair clears. Real worker processes: the failpoint is process-wide.
@Suite(.serialized) struct EarlySyncTests {
    /// Large enough that its compressed bytes pass several steps.
    static let large = 3_000_000

    /// A store holding the document "kept"; then a worker ingests a large PDF as "new",
    /// under `failpoint`.
    private func ingestLarge(failpoint: String) async throws -> (
        Scratch, (status: Int32, signalled: Bool, output: String)
    ) {
        let scratch = try Scratch()
        try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "kept", from: scratch.file(samplePDF(seed: 70)))
        let pdf = try scratch.file(samplePDF(seed: 71, size: Self.large))
        let result = try await runWorker(
            ["ingest", scratch.root.path, Scratch.tenant.string, "new", pdf.path], failpoint: failpoint)
        return (scratch, result)
    }

    @Test func aStepThatFailsFailsTheIngestAndStoresNothing() async throws {
        let (scratch, result) = try await ingestLarge(failpoint: "file.earlySync=eio")
        #expect(result.status == 2 && !result.signalled, "\(result.output)")
        #expect(result.output.contains("file.earlySync failed"), "\(result.output)")
        #expect(scratch.files(in: "tmp").isEmpty)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
        #expect(try scratch.store.cacheEntries().map(\.documentIdentifier) == ["kept"])
    }

    /// Below one step nothing is synced early: the same failpoint is never reached.
    @Test func aSmallBlobHasNoStep() async throws {
        let scratch = try Scratch()
        let pdf = try scratch.file(samplePDF(seed: 72, size: 100_000))
        let result = try await runWorker(
            ["ingest", scratch.root.path, Scratch.tenant.string, "small", pdf.path], failpoint: "file.earlySync=eio")
        #expect(result.status == 0, "\(result.output)")
        #expect(try scratch.store.cacheEntries().map(\.documentIdentifier) == ["small"])
    }

    /// A stream whose size is not announced (an upload) is copied once more at its end,
    /// and the copy is committed: syncing the first file early would be wasted, so no
    /// step runs (the same failpoint is never reached).
    @Test func aStreamOfUnknownSizeHasNoStep() async throws {
        let scratch = try Scratch()
        let result = try await runWorker(["ingest-stream", scratch.root.path, "3"], failpoint: "file.earlySync=eio")
        #expect(result.status == 0, "\(result.output)")
    }

    /// The writer's last step is waited for before the commit: a step held until the
    /// writer has finished writing and begun to wait (a marker it leaves), then failing,
    /// still fails the ingest, and nothing is committed. A download's ingest (announced,
    /// sealed before its commit) waits on the thread of the fsync it starts ahead, and
    /// its commit fails the same way.
    @Test(arguments: ["ingest", "ingest-announced"])
    func theCommitWaitsForAStepUnderWay(command: String) async throws {
        let scratch = try Scratch()
        let pdf = try scratch.file(samplePDF(seed: 75, size: Self.large))
        let hold = scratch.root.appendingPathComponent("hold").path
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        // No file at `waiting`: that failpoint only leaves its marker and goes on.
        let waiting = scratch.root.appendingPathComponent("waiting").path
        let failpoints =
            "file.earlySync=wait:\(hold),file.earlySync.afterSync=eio,file.earlySync.beforeWait=wait:\(waiting)"
        let arguments = [command, scratch.root.path, Scratch.tenant.string, "new", pdf.path]
        async let finished = runWorker(arguments, failpoint: failpoints)
        for marker in [hold, waiting] {
            let deadline = Date().addingTimeInterval(60)
            while !FileManager.default.fileExists(atPath: marker + ".reached") && Date() < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(FileManager.default.fileExists(atPath: marker + ".reached"), "never reached \(marker)")
        }
        // A writer that did not wait would have committed by now.
        try await Task.sleep(for: .milliseconds(100))
        try FileManager.default.removeItem(atPath: hold)
        let result = try await finished
        #expect(result.status == 2 && !result.signalled, "\(result.output)")
        #expect(result.output.contains("file.earlySync.afterSync failed"), "\(result.output)")
        #expect(try scratch.store.cacheEntries().isEmpty)
    }

    @Test func aProcessKilledInAStepLeavesOnlyWhatRepairClears() async throws {
        let (scratch, result) = try await ingestLarge(failpoint: "file.earlySync")
        #expect(result.signalled, "the worker should die in a step: \(result.output)")
        let store = try InstantStore(root: scratch.root)
        let serious = try store.verify(VerifyOptions(deep: true)).remaining.filter {
            !CrashTests.harmless.contains($0.kind)
        }
        #expect(serious.isEmpty, "\(serious)")
        #expect(try store.cacheEntries().map(\.documentIdentifier) == ["kept"])
        #expect(try store.verify(VerifyOptions(repair: true)).isClean)
        #expect(try store.verify(VerifyOptions(deep: true)).isClean)
    }
}
