import Foundation
import Testing

@testable import InstantStore

/// A blob is synced in steps while it is written (`EarlySync`), on another thread: a step
/// that fails fails the ingest with nothing stored, and a process killed in a step leaves
/// only what repair clears. Real worker processes: the failpoint is process-wide.
@Suite(.serialized) struct EarlySyncTests {
    /// Large enough that its compressed bytes pass several steps.
    static let large = 3_000_000

    @Test func aStepThatFailsFailsTheIngestAndStoresNothing() throws {
        let scratch = try Scratch()
        try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "kept", from: scratch.file(samplePDF(seed: 70)))
        let pdf = try scratch.file(samplePDF(seed: 71, size: Self.large))
        let result = try runWorker(
            ["ingest", scratch.root.path, Scratch.tenant.string, "new", pdf.path], failpoint: "file.earlySync=eio")
        #expect(result.status == 2 && !result.signalled, "\(result.output)")
        #expect(result.output.contains("file.earlySync failed"), "\(result.output)")
        #expect(scratch.files(in: "tmp").isEmpty)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
        #expect(try scratch.store.cacheEntries().map(\.documentIdentifier) == ["kept"])
    }

    /// Below one step nothing is synced early: the same failpoint is never reached.
    @Test func aSmallBlobHasNoStep() throws {
        let scratch = try Scratch()
        let pdf = try scratch.file(samplePDF(seed: 72, size: 100_000))
        let result = try runWorker(
            ["ingest", scratch.root.path, Scratch.tenant.string, "small", pdf.path], failpoint: "file.earlySync=eio")
        #expect(result.status == 0, "\(result.output)")
        #expect(try scratch.store.cacheEntries().map(\.documentIdentifier) == ["small"])
    }

    @Test func aProcessKilledInAStepLeavesOnlyWhatRepairClears() throws {
        let scratch = try Scratch()
        try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "kept", from: scratch.file(samplePDF(seed: 73)))
        let pdf = try scratch.file(samplePDF(seed: 74, size: Self.large))
        let result = try runWorker(
            ["ingest", scratch.root.path, Scratch.tenant.string, "new", pdf.path], failpoint: "file.earlySync")
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
