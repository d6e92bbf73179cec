import CZstd
import Foundation
import Testing

@testable import InstantStore

/// A PDF that arrives as a server's zstd frame (`PDFIngest`): kept as it is, checked as
/// it is decompressed, and nothing left behind when it is refused.
struct FrameIngestTests {
    /// A zstd frame of `bytes` with its checksum, and its size in the header unless not
    /// `pledged` (libzstd directly: a frame from outside the store).
    private func frame(of bytes: Data, pledged: Bool = true) throws -> Data {
        let context = try #require(ZSTD_createCCtx())
        defer { ZSTD_freeCCtx(context) }
        _ = ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, 1)
        _ = ZSTD_CCtx_setParameter(context, ZSTD_c_contentSizeFlag, pledged ? 1 : 0)
        var output = [UInt8](repeating: 0, count: ZSTD_compressBound(bytes.count))
        let input = [UInt8](bytes)
        let written: Int
        if pledged {
            written = ZSTD_compress2(context, &output, output.count, input, input.count)
        } else {
            // Streamed without a pledged size: the header cannot carry it.
            var inBuffer = ZSTD_inBuffer(src: input, size: input.count, pos: 0)
            written = output.withUnsafeMutableBytes { raw in
                var outBuffer = ZSTD_outBuffer(dst: raw.baseAddress, size: raw.count, pos: 0)
                _ = ZSTD_compressStream2(context, &outBuffer, &inBuffer, ZSTD_e_end)
                return outBuffer.pos
            }
        }
        #expect(ZSTD_isError(written) == 0)
        return Data(output.prefix(written))
    }

    private func ingest(_ store: InstantStore, _ frame: Data, hash: BlobHash?, split: Int = 7_000) async throws
        -> StoredPDF
    {
        let ingest = try store.beginPDFIngest(zstdFrame: true, expectedSize: Int64(frame.count), expectedHash: hash)
        try append(frame, to: ingest, split: split)
        return try await ingest.commit(tenant: Scratch.tenant, document: "d")
    }

    /// The code of the store error `body` threw, nil when it did not throw.
    private func failure(_ body: () async throws -> StoredPDF) async -> String? {
        do {
            _ = try await body()
            return nil
        } catch {
            return (error as? StoreError)?.code ?? "\(error)"
        }
    }

    /// Appends `bytes` in pieces of `split` (synchronous: typed-throws closures in async
    /// code crash the Swift 6.3 compiler).
    private func append(_ bytes: Data, to ingest: PDFIngest, split: Int = 7_000) throws {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let piece = Array(bytes[offset..<min(bytes.endIndex, offset + split)])
            try piece.withUnsafeBytes { raw in try ingest.append(raw) }
            offset += piece.count
        }
    }

    @Test func aFrameIsStoredByteForByte() async throws {
        let scratch = try Scratch()
        let pdf = samplePDF(seed: 3, size: 400_000)
        let frame = try frame(of: pdf)
        let stored = try await ingest(scratch.store, frame, hash: BlobHash.of(pdf))
        #expect(stored.size == Int64(pdf.count))
        #expect(
            try Data(contentsOf: scratch.root.appendingPathComponent(StoreLayout.blobRelativePath(stored.sha256)))
                == frame)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    @Test func aFlippedByteOrAWrongHashOrAFrameWithoutItsSizeLeavesNothing() async throws {
        let scratch = try Scratch()
        let pdf = samplePDF(seed: 4, size: 300_000)
        var flipped = try frame(of: pdf)
        flipped[flipped.count / 2] ^= 0x40
        #expect(await failure { try await ingest(scratch.store, flipped, hash: nil) } != nil)
        let other = BlobHash.of(samplePDF(seed: 5, size: 10))
        let whole = try frame(of: pdf)
        #expect(await failure { try await ingest(scratch.store, whole, hash: other) } == "hash_mismatch")
        let sizeless = try frame(of: pdf, pledged: false)
        let refused = await failure { try await ingest(scratch.store, sizeless, hash: nil) }
        #expect(refused == "compression_failure", "\(refused ?? "nil")")
        #expect(scratch.tempFiles().isEmpty)
        #expect(scratch.files(in: "blobs").isEmpty)
        #expect(try scratch.store.pdf(tenant: Scratch.tenant, document: "d") == nil)
    }

    /// Without the frame's length (a response without Content-Length), a small frame that
    /// decompresses to far more than any PDF compresses from is refused as its bytes
    /// arrive, not decompressed and hashed to the end.
    @Test func aBombWithoutItsLengthIsRefusedAsItArrives() async throws {
        let scratch = try Scratch()
        let bomb = try frame(of: Data(count: 256 << 20))  // 256 MiB of zeros, a few KB of frame
        #expect(bomb.count < 64 << 10)
        let ingest = try scratch.store.beginPDFIngest(zstdFrame: true, expectedSize: nil, expectedHash: nil)
        var refused: String?
        do {
            try append(bomb, to: ingest, split: 1_000)
        } catch {
            refused = (error as? StoreError)?.code
        }
        #expect(refused == "compression_failure")
        #expect(scratch.tempFiles().isEmpty)
        // A real PDF without its length still goes in.
        let pdf = samplePDF(seed: 8, size: 300_000)
        let plain = try scratch.store.beginPDFIngest(zstdFrame: true, expectedSize: nil, expectedHash: BlobHash.of(pdf))
        try append(try frame(of: pdf), to: plain)
        #expect(try await plain.commit(tenant: Scratch.tenant, document: "d").size == Int64(pdf.count))
    }

    @Test func aBrokenFrameGoesOnAsPlainBytesFromThePDFOffsetReached() async throws {
        let scratch = try Scratch()
        let pdf = samplePDF(seed: 6, size: 2_000_000)
        let frame = try frame(of: pdf)
        let ingest = try scratch.store.beginPDFIngest(
            zstdFrame: true, expectedSize: Int64(frame.count), expectedHash: BlobHash.of(pdf))
        try append(frame.prefix(frame.count / 2), to: ingest)
        #expect(ingest.announcedPDFSize == Int64(pdf.count))
        let offset = Int(ingest.pdfOffset)
        #expect(offset > 0 && offset < pdf.count)
        #expect(try await ingest.continueWithPlainBytes() == Int64(pdf.count))
        try append(pdf[offset...], to: ingest)
        let stored = try await ingest.commit(tenant: Scratch.tenant, document: "d")
        var read = Data()
        try scratch.store.readPDF(stored.sha256) { read.append(contentsOf: $0) }
        #expect(read == pdf)
        #expect(scratch.tempFiles().isEmpty)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }
}
