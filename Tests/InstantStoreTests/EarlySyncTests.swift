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

    /// A step that fails fails the ingest. The writer is held before it finishes (a step
    /// not begun by then is skipped: the final fsync does its work) until its first step
    /// has begun, so that a loaded machine cannot let the writer finish first.
    @Test func aStepThatFailsFailsTheIngestAndStoresNothing() async throws {
        let scratch = try Scratch()
        try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "kept", from: scratch.file(samplePDF(seed: 70)))
        let pdf = try scratch.file(samplePDF(seed: 71, size: Self.large))
        let (hold, finishing) = try Self.markers(in: scratch, "hold", "finishing")
        let failpoints =
            "file.earlySync=wait:\(hold),file.earlySync.afterSync=eio,file.earlySync.beforeFinish=wait:\(finishing)"
        async let finished = runWorker(
            ["ingest", scratch.root.path, Scratch.tenant.string, "new", pdf.path], failpoint: failpoints)
        try await Self.reached(hold)
        try FileManager.default.removeItem(atPath: hold)
        try FileManager.default.removeItem(atPath: finishing)
        let result = try await finished
        #expect(result.status == 2 && !result.signalled, "\(result.output)")
        #expect(result.output.contains("file.earlySync.afterSync failed"), "\(result.output)")
        #expect(scratch.tempFiles().isEmpty)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
        #expect(try scratch.store.cacheEntries().map(\.documentIdentifier) == ["kept"])
    }

    /// Files at `names` in the scratch directory, for `wait:` failpoints to wait on.
    private static func markers(in scratch: Scratch, _ names: String...) throws -> (String, String) {
        let paths = names.map { scratch.root.appendingPathComponent($0).path }
        for path in paths { #expect(FileManager.default.createFile(atPath: path, contents: nil)) }
        return (paths[0], paths[1])
    }

    /// Waits (up to a minute) for the worker to reach the `wait:` failpoint on `marker`.
    private static func reached(_ marker: String) async throws {
        let deadline = Date().addingTimeInterval(60)
        while !FileManager.default.fileExists(atPath: marker + ".reached") && Date() < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(FileManager.default.fileExists(atPath: marker + ".reached"), "never reached \(marker)")
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
        // The writer is held before it finishes until its step has begun (see above).
        let (hold, finishing) = try Self.markers(in: scratch, "hold", "finishing")
        // No file at `waiting`: that failpoint only leaves its marker and goes on.
        let waiting = scratch.root.appendingPathComponent("waiting").path
        let failpoints =
            "file.earlySync=wait:\(hold),file.earlySync.afterSync=eio,file.earlySync.beforeWait=wait:\(waiting),"
            + "file.earlySync.beforeFinish=wait:\(finishing)"
        let arguments = [command, scratch.root.path, Scratch.tenant.string, "new", pdf.path]
        async let finished = runWorker(arguments, failpoint: failpoints)
        try await Self.reached(hold)
        try FileManager.default.removeItem(atPath: finishing)
        try await Self.reached(waiting)
        // A writer that did not wait would have committed by now.
        try await Task.sleep(for: .milliseconds(100))
        try FileManager.default.removeItem(atPath: hold)
        let result = try await finished
        #expect(result.status == 2 && !result.signalled, "\(result.output)")
        #expect(result.output.contains("file.earlySync.afterSync failed"), "\(result.output)")
        #expect(try scratch.store.cacheEntries().isEmpty)
    }

    @Test func aProcessKilledInAStepLeavesOnlyWhatRepairClears() async throws {
        // The writer is held before it finishes (never let go: the step kills it first).
        let finishing = FileManager.default.temporaryDirectory.appendingPathComponent("finishing-\(UUID())").path
        #expect(FileManager.default.createFile(atPath: finishing, contents: nil))
        defer { for path in [finishing, finishing + ".reached"] { try? FileManager.default.removeItem(atPath: path) } }
        let (scratch, result) = try await ingestLarge(
            failpoint: "file.earlySync,file.earlySync.beforeFinish=wait:\(finishing)")
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
