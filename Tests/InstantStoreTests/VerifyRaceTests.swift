import CZstd
import Foundation
import Testing

@testable import InstantStore

/// `verify --repair` while another process changes what it checks.
@Suite(.serialized) struct VerifyRaceTests {
    /// A PDF removed and stored again, in a frame of another size, after a verify listed
    /// the blobs and before it reached this one: the good file matches the row as it is
    /// now, not the sizes listed. Before, the verify found it "corrupt" against the old
    /// row and quarantined a healthy, referenced PDF.
    @Test func aPDFStoredAgainInAnotherFrameWhileVerifyRunsIsNotQuarantined() async throws {
        let scratch = try Scratch()
        defer { try? FileManager.default.removeItem(at: scratch.root) }
        let bytes = samplePDF(seed: 71, size: 200_000)
        let stored = try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "d", from: scratch.file(bytes))
        let hash = stored.sha256
        let listed = try #require(try scratch.store.catalog.read { db in try BlobRecord.fetchOne(db, key: hash.hex) })
        let frame = try Self.frame(of: bytes, level: 19)
        try #require(Int64(frame.count) != listed.storedSize, "the two frames differ in size")

        let pause = FailpointPause("verify.blob.beforeCheck", at: hash.hex, in: scratch)
        defer { pause.end() }
        let store = scratch.store
        // On a thread of its own: it waits at the failpoint.
        async let verifying = onThread { try store.verify(VerifyOptions(repair: true)) }
        try await pause.reached()
        // Another process, meanwhile: the document removed (its PDF with it), then the
        // same PDF downloaded again as a server's frame.
        let other = try InstantStore(root: scratch.root)
        defer { other.close() }
        try other.removeDocument(tenant: Scratch.tenant, document: "d")
        let ingest = try other.beginPDFIngest(zstdFrame: true, expectedSize: Int64(frame.count), expectedHash: hash)
        try frame.withUnsafeBytes { raw in try ingest.append(raw) }
        _ = try await ingest.commit(tenant: Scratch.tenant, document: "d")
        pause.release()

        let report = try await verifying
        #expect(report.problems.isEmpty, "\(report.problems)")
        #expect(try scratch.store.quarantinedFiles().isEmpty)
        #expect(FileManager.default.fileExists(atPath: scratch.store.layout.blobPath(hash)))
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// A zstd frame of `bytes` at `level`, with its checksum and size (a server's frame).
    static func frame(of bytes: Data, level: Int32) throws -> Data {
        let context = try #require(ZSTD_createCCtx())
        defer { ZSTD_freeCCtx(context) }
        _ = ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, 1)
        _ = ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, level)
        var output = [UInt8](repeating: 0, count: ZSTD_compressBound(bytes.count))
        let input = [UInt8](bytes)
        let written = ZSTD_compress2(context, &output, output.count, input, input.count)
        #expect(ZSTD_isError(written) == 0)
        return Data(output.prefix(written))
    }
}
