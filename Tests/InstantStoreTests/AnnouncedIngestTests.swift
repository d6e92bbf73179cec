import Foundation
import Testing

@testable import InstantStore

/// A PDF whose hash is announced before its bytes (a download's ETag): its claim file is
/// made while the bytes arrive, its bytes can be sealed (checked, their fsync started)
/// ahead of the commit, and no ending leaves anything behind.
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

    /// The claims in `tmp/` that name `hash`.
    private func claims(_ scratch: Scratch, naming hash: BlobHash) -> [String] {
        scratch.files(in: "tmp").filter { $0.hasPrefix(hash.hex + "-") && $0.hasSuffix(".claim") }
    }

    @Test func theClaimWaitsInTmpLockedWhileTheBytesArriveAndTheCommitTakesIt() async throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        let pdf = samplePDF(seed: 21, size: 300_000)
        let hash = BlobHash.of(pdf)
        let ingest = try scratch.store.beginPDFIngest(expectedHash: hash)
        try append(pdf.prefix(100_000), to: ingest)
        // Made on another thread: it appears soon.
        var claim: String?
        for _ in 0..<500 where claim == nil {
            claim = claims(scratch, naming: hash).first
            if claim == nil { try await Task.sleep(for: .milliseconds(10)) }
        }
        let made = try #require(claim, "a claim for the announced hash is made while the bytes arrive")
        #expect(try !scratch.store.isDeadTempFile(made), "its writer holds it")
        _ = try scratch.store.prune()
        #expect(claims(scratch, naming: hash) == [made], "a prune meanwhile leaves a live claim")

        try append(pdf.dropFirst(100_000), to: ingest)
        try await ingest.seal()
        let stored = try await ingest.commit(tenant: Scratch.tenant, document: "d")
        #expect(stored.sha256 == hash)
        #expect(scratch.files(in: "tmp").isEmpty, "the commit took the claim and removed it")
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
        #expect(scratch.files(in: "tmp").isEmpty, "discarded mid-way")

        let wrong = try scratch.store.beginPDFIngest(expectedHash: BlobHash.of(samplePDF(seed: 23, size: 10)))
        try append(pdf, to: wrong)
        do {
            try await wrong.seal()
            Issue.record("bytes of another hash were sealed")
        } catch {
            #expect((error as? StoreError)?.code == "hash_mismatch")
        }
        wrong.discard()
        #expect(scratch.files(in: "tmp").isEmpty, "refused at the seal")

        let sealed = try scratch.store.beginPDFIngest(expectedHash: hash)
        try append(pdf, to: sealed)
        try await sealed.seal()
        #expect(throws: StoreError.self, "nothing is added once sealed") { try self.append(pdf, to: sealed) }
        sealed.discard()
        #expect(scratch.files(in: "tmp").isEmpty, "sealed, then discarded")

        do {
            let dropped = try scratch.store.beginPDFIngest(expectedHash: hash)
            try append(pdf, to: dropped)
            try await dropped.seal()
        }
        #expect(scratch.files(in: "tmp").isEmpty, "sealed, then given up without a discard")
        #expect(scratch.files(in: "blobs").isEmpty)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// The announced PDF is one the store holds already (another document's): the commit
    /// renames nothing, and the claim made for it is removed, the stored copy untouched.
    @Test func aClaimForAPDFTheStoreHoldsTakesNothingFromIt() async throws {
        let scratch = try Scratch()
        defer { scratch.store.close() }
        let pdf = samplePDF(seed: 24, size: 120_000)
        let first = try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "a", from: scratch.file(pdf))
        let ingest = try scratch.store.beginPDFIngest(expectedHash: first.sha256)
        try append(pdf, to: ingest)
        let second = try await ingest.commit(tenant: Scratch.tenant, document: "b")
        #expect(second.deduplicated)
        #expect(scratch.files(in: "tmp").isEmpty)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
        #expect(try scratch.store.pdf(tenant: Scratch.tenant, document: "a")?.sha256 == first.sha256)
    }
}
