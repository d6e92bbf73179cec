import Foundation
import Testing

@testable import InstantStore

/// A PDF whose hash is announced before its bytes (a download's ETag): its bytes can be
/// sealed (checked, their fsync started) ahead of the commit, its temp file is its own
/// claim, and no ending leaves anything behind.
struct AnnouncedIngestTests {
    /// Appends `bytes` in pieces (synchronous: typed-throws closures in async code crash
    /// the Swift 6.3 compiler).
    private func append(_ bytes: Data, to ingest: PDFIngest) throws {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let piece = Array(bytes[offset..<min(bytes.endIndex, offset + 16_000)])
            try piece.withUnsafeBytes { raw in try ingest.append(raw) }
            offset += piece.count
        }
    }

    @Test func theTempFileWaitsInTmpLockedAndTheCommitLeavesOneNameInBlobs() async throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        let pdf = samplePDF(seed: 21, size: 300_000)
        let hash = BlobHash.of(pdf)
        let ingest = try scratch.store.beginPDFIngest(expectedHash: hash)
        try append(pdf.prefix(100_000), to: ingest)
        let inTmp = scratch.tempFiles()
        #expect(inTmp.count == 1, "one file while the bytes arrive, no claim of its own: \(inTmp)")
        let temp = try #require(inTmp.first)
        #expect(try !scratch.store.isDeadTempFile(temp), "its writer holds it")
        _ = try scratch.store.prune()
        #expect(scratch.tempFiles() == [temp], "a prune meanwhile leaves it")

        try append(pdf.dropFirst(100_000), to: ingest)
        try await ingest.seal()
        let stored = try await ingest.commit(tenant: Scratch.tenant, document: "d")
        #expect(stored.sha256 == hash)
        #expect(scratch.tempFiles().isEmpty, "the claim is unlinked once committed")
        #expect(try linkCount(scratch.store.layout.blobPath(hash)) == 1)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    @Test func aDiscardedOrRefusedIngestLeavesNothing() async throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        let pdf = samplePDF(seed: 22, size: 200_000)
        let hash = BlobHash.of(pdf)

        let abandoned = try scratch.store.beginPDFIngest(expectedHash: hash)
        try append(pdf.prefix(50_000), to: abandoned)
        abandoned.discard()
        #expect(scratch.tempFiles().isEmpty, "discarded mid-way")

        let wrong = try scratch.store.beginPDFIngest(expectedHash: BlobHash.of(samplePDF(seed: 23, size: 10)))
        try append(pdf, to: wrong)
        do {
            try await wrong.seal()
            Issue.record("bytes of another hash were sealed")
        } catch {
            #expect((error as? StoreError)?.code == "hash_mismatch")
        }
        wrong.discard()
        #expect(scratch.tempFiles().isEmpty, "refused at the seal")

        let sealed = try scratch.store.beginPDFIngest(expectedHash: hash)
        try append(pdf, to: sealed)
        try await sealed.seal()
        #expect(throws: StoreError.self, "nothing is added once sealed") { try self.append(pdf, to: sealed) }
        sealed.discard()
        #expect(scratch.tempFiles().isEmpty, "sealed, then discarded")

        do {
            let dropped = try scratch.store.beginPDFIngest(expectedHash: hash)
            try append(pdf, to: dropped)
            try await dropped.seal()
        }
        #expect(scratch.tempFiles().isEmpty, "sealed, then given up without a discard")
        #expect(scratch.files(in: "blobs").isEmpty)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// The announced PDF is one the store holds already (another document's): the commit
    /// places nothing, and its temp file is removed, the stored copy untouched.
    @Test func anIngestOfAPDFTheStoreHoldsTakesNothingFromIt() async throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        let pdf = samplePDF(seed: 24, size: 120_000)
        let first = try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "a", from: scratch.file(pdf))
        let ingest = try scratch.store.beginPDFIngest(expectedHash: first.sha256)
        try append(pdf, to: ingest)
        let second = try await ingest.commit(tenant: Scratch.tenant, document: "b")
        #expect(second.deduplicated)
        #expect(scratch.tempFiles().isEmpty)
        #expect(try linkCount(scratch.store.layout.blobPath(first.sha256)) == 1)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
        #expect(try scratch.store.pdf(tenant: Scratch.tenant, document: "a")?.sha256 == first.sha256)
    }
}
