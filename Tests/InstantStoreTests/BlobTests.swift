import Foundation
import Testing
import GRDB

@testable import InstantStore

@Suite struct BlobTests {
    @Test func ingestFromFileRoundTripsAndRecordsSizes() throws {
        let scratch = try Scratch()
        let bytes = samplePDF(seed: 1, size: 300_000)
        let stored = try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "d", from: scratch.file(bytes))
        #expect(stored.sha256 == BlobHash.of(bytes))
        #expect(stored.size == Int64(bytes.count))
        #expect(stored.storedSize < stored.size)
        var read = Data()
        try scratch.store.readPDF(stored.sha256) { read.append(contentsOf: $0) }
        #expect(read == bytes)
        let header = try POSIXFile.open(scratch.store.layout.blobPath(stored.sha256), flags: O_RDONLY).read(
            count: 18, at: 0)
        #expect(ZstdFrameHeader(header)?.contentSize == UInt64(bytes.count))
        #expect(ZstdFrameHeader(header)?.hasChecksum == true)
        #expect(scratch.tempFiles().isEmpty)
    }

    @Test(arguments: [nil, Int64(200_000)])
    func ingestFromStreamRecordsContentSize(expectedSize: Int64?) async throws {
        let scratch = try Scratch()
        let bytes = samplePDF(seed: 2, size: 200_000)
        let chunks = stride(from: 0, to: bytes.count, by: 7_000).map { bytes[$0..<min($0 + 7_000, bytes.count)] }
        let stream = AsyncStream<Data> { continuation in
            for chunk in chunks { continuation.yield(Data(chunk)) }
            continuation.finish()
        }
        let stored = try await scratch.store.ingestPDF(
            tenant: Scratch.tenant, document: "d", chunks: stream, expectedSize: expectedSize)
        let header = try POSIXFile.open(scratch.store.layout.blobPath(stored.sha256), flags: O_RDONLY).read(
            count: 18, at: 0)
        #expect(ZstdFrameHeader(header)?.contentSize == 200_000)
        let out = scratch.root.appendingPathComponent("out.pdf")
        try scratch.store.exportPDF(stored.sha256, to: out)
        #expect(try Data(contentsOf: out) == bytes)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// Bytes cross ``BlobWriter/batchSize`` boundaries by every route: read from a file, and
    /// streamed in chunks that are copied into a batch, fill it exactly, or bypass it.
    @Test func batchBoundariesDoNotChangeWhatIsStored() async throws {
        let scratch = try Scratch()
        let batch = BlobWriter.batchSize
        let bytes = samplePDF(seed: 7, size: 3 * batch + 12_345)
        let fromFile = try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "file", from: scratch.file(bytes))
        #expect(fromFile.sha256 == BlobHash.of(bytes))
        let cuts = [1, 7_000, batch - 7_001, batch, batch + 1, bytes.count]
        var chunks: [Data] = []
        var start = 0
        for cut in cuts where cut > start {
            chunks.append(bytes[start..<min(cut + start, bytes.count)])
            start = min(cut + start, bytes.count)
        }
        #expect(chunks.reduce(0) { $0 + $1.count } == bytes.count)
        let stream = AsyncStream<Data> { continuation in
            for chunk in chunks { continuation.yield(Data(chunk)) }
            continuation.finish()
        }
        let fromStream = try await scratch.store.ingestPDF(tenant: Scratch.tenant, document: "stream", chunks: stream)
        #expect(fromStream.sha256 == fromFile.sha256)
        #expect(fromStream.deduplicated)
        var read = Data()
        try scratch.store.readPDF(fromFile.sha256) { read.append(contentsOf: $0) }
        #expect(read == bytes)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// GRDB's DatabasePool puts its writer in `synchronous = NORMAL`; the catalog must undo
    /// that, and a deferred-durability ingest must not leave it behind.
    @Test func catalogWriterSyncsEveryCommitByDefault() throws {
        let scratch = try Scratch()
        let pool = scratch.store.catalog.pool
        #expect(try pool.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") } == 2)  // FULL
        try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "d", from: scratch.file(samplePDF(seed: 8)))
        #expect(try pool.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") } == 2)
    }

    /// Chunks are pulled one at a time: whole, a range, the stored frame; a flipped byte
    /// surfaces as a corrupt blob at the end of the read.
    @Test func pdfChunksReadWholeRangesAndStoredFrames() async throws {
        let scratch = try Scratch()
        let bytes = samplePDF(seed: 9, size: 700_000)
        let stored = try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "d", from: scratch.file(bytes))
        func collect(_ chunks: PDFChunks) async throws -> Data {
            var all = Data()
            for try await chunk in chunks {
                #expect(chunk.count <= 256 << 10)
                all.append(chunk)
            }
            return all
        }
        #expect(try await collect(scratch.store.pdfChunks(stored.sha256)) == bytes)
        #expect(
            try await collect(scratch.store.pdfChunks(stored.sha256, range: 300_000..<300_010))
                == bytes[300_000..<300_010])
        #expect(
            try await collect(scratch.store.pdfChunks(stored.sha256, range: 650_000..<700_000)) == bytes[650_000...])
        let frame = try await collect(scratch.store.pdfChunks(stored.sha256, storedFrame: true))
        #expect(frame == (try Data(contentsOf: URL(fileURLWithPath: scratch.store.layout.blobPath(stored.sha256)))))
        #expect(Int64(frame.count) == stored.storedSize)

        let path = scratch.store.layout.blobPath(stored.sha256)
        var damaged = try Data(contentsOf: URL(fileURLWithPath: path))
        damaged[damaged.count / 2] ^= 0x40
        try damaged.write(to: URL(fileURLWithPath: path))
        await #expect(throws: StoreError.self) { _ = try await collect(scratch.store.pdfChunks(stored.sha256)) }
        try FileManager.default.removeItem(atPath: path)
        await #expect(throws: StoreError.corruptBlob(sha256: stored.sha256.hex, reason: BlobReader.missing)) {
            _ = try await collect(scratch.store.pdfChunks(stored.sha256))
        }
    }

    /// The same reads into a caller's buffer (as the server reads into its network
    /// buffers): the same bytes for the whole PDF, ranges that start inside a chunk, an
    /// empty range, and the stored frame; a damaged frame still fails at the end.
    @Test func pdfChunksReadIntoACallersBuffer() throws {
        let scratch = try Scratch()
        let bytes = samplePDF(seed: 10, size: 900_000)
        let stored = try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "d", from: scratch.file(bytes))
        // Dirty bytes in the buffer: each chunk must overwrite what it returns.
        var buffer = [UInt8](repeating: 0xEE, count: PDFChunks.chunkSize + 7)
        func collect(_ chunks: PDFChunks) throws -> Data {
            var iterator = chunks.makeAsyncIterator()
            var all = Data()
            while let count = try buffer.withUnsafeMutableBytes({ try iterator.next(into: $0) }) {
                #expect(count > 0 && count <= PDFChunks.chunkSize)
                all.append(contentsOf: buffer[0..<count])
            }
            return all
        }
        #expect(try collect(scratch.store.pdfChunks(stored.sha256)) == bytes)
        for range in [300_000..<300_010, 262_100..<600_000, 650_000..<900_000, 0..<1, 899_999..<900_000] {
            #expect(
                try collect(
                    scratch.store.pdfChunks(stored.sha256, range: Int64(range.lowerBound)..<Int64(range.upperBound)))
                    == bytes[range], "\(range)")
        }
        #expect(try collect(scratch.store.pdfChunks(stored.sha256, range: 5..<5)).isEmpty)
        let path = scratch.store.layout.blobPath(stored.sha256)
        #expect(
            try collect(scratch.store.pdfChunks(stored.sha256, storedFrame: true))
                == Data(contentsOf: URL(fileURLWithPath: path)))

        var damaged = try Data(contentsOf: URL(fileURLWithPath: path))
        damaged[damaged.count / 2] ^= 0x40
        try damaged.write(to: URL(fileURLWithPath: path))
        #expect(throws: StoreError.self) { _ = try collect(scratch.store.pdfChunks(stored.sha256)) }
    }

    /// A range far into the PDF, with what comes before it decompressed off the calling
    /// thread first (``PDFChunks/Iterator/skipToRange()``, as the server does): the same
    /// bytes, at every kind of start; a range to the end of a damaged PDF still fails (its
    /// frame checksum); a stored frame and a range from the start skip nothing.
    @Test func pdfChunksSkipToARangeOffThePool() async throws {
        let scratch = try Scratch()
        let bytes = samplePDF(seed: 11, size: 1_500_000)
        let stored = try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "d", from: scratch.file(bytes))
        let chunk = PDFChunks.chunkSize
        func collect(_ chunks: PDFChunks, step: Int64 = PDFChunks.skipStep) async throws -> Data {
            var iterator = chunks.makeAsyncIterator()
            iterator.stepSize = step
            await iterator.skipToRange()
            var buffer = [UInt8](repeating: 0xEE, count: chunk)
            var all = Data()
            while let count = try buffer.withUnsafeMutableBytes({ try iterator.next(into: $0) }) {
                #expect(count > 0 && count <= chunk)
                all.append(contentsOf: buffer[0..<count])
            }
            return all
        }
        let ranges = [
            0..<1_500_000, 10..<20, chunk..<(chunk + 1), (chunk + 1)..<(3 * chunk), (2 * chunk - 1)..<(2 * chunk + 1),
            (4 * chunk + 5)..<1_500_000, 1_499_999..<1_500_000, 1_200_000..<1_200_001,
        ]
        for range in ranges {
            let chunks = try scratch.store.pdfChunks(
                stored.sha256, range: Int64(range.lowerBound)..<Int64(range.upperBound))
            #expect(try await collect(chunks) == bytes[range], "\(range)")
            // In steps of 100,000 bytes (a few for each range): the same.
            #expect(try await collect(chunks, step: 100_000) == bytes[range], "\(range), in steps")
        }
        // A peer that hung up: the skip ends, and the next read fails rather than skip on.
        let abandoned = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await collect(
                scratch.store.pdfChunks(stored.sha256, range: 1_400_000..<1_500_000), step: 100_000)
        }
        await #expect(throws: StoreError.self) { _ = try await abandoned.value }
        // The same when the caller says so (a server: the peer's connection is closed).
        var hungUp = try scratch.store.pdfChunks(stored.sha256, range: 1_400_000..<1_500_000).makeAsyncIterator()
        await hungUp.skipToRange { true }
        var buffer = [UInt8](repeating: 0, count: chunk)
        #expect(throws: StoreError.self) { _ = try buffer.withUnsafeMutableBytes { try hungUp.next(into: $0) } }
        let path = scratch.store.layout.blobPath(stored.sha256)
        #expect(
            try await collect(scratch.store.pdfChunks(stored.sha256, storedFrame: true))
                == Data(contentsOf: URL(fileURLWithPath: path)))

        var damaged = try Data(contentsOf: URL(fileURLWithPath: path))
        damaged[damaged.count / 3] ^= 0x40
        try damaged.write(to: URL(fileURLWithPath: path))
        await #expect(throws: StoreError.self) {
            _ = try await collect(scratch.store.pdfChunks(stored.sha256, range: 1_499_000..<1_500_000))
        }
    }

    @Test func wrongExpectedHashOrSizeLeavesNothingBehind() async throws {
        let scratch = try Scratch()
        let bytes = samplePDF(seed: 3)
        let wrong = BlobHash.of(Data("other".utf8))
        #expect(throws: StoreError.hashMismatch(expected: wrong.hex, actual: BlobHash.of(bytes).hex)) {
            try scratch.store.ingestPDF(
                tenant: Scratch.tenant, document: "d", from: scratch.file(bytes), expectedHash: wrong)
        }
        await #expect(throws: StoreError.self) {
            try await scratch.store.ingestPDF(
                tenant: Scratch.tenant, document: "d",
                chunks: AsyncStream {
                    $0.yield(bytes); $0.finish()
                },
                expectedSize: 10)
        }
        #expect(scratch.tempFiles().isEmpty)
        #expect(scratch.files(in: "blobs").isEmpty)
        #expect(try scratch.store.cacheEntries().isEmpty)
    }

    @Test func identicalPDFsAreStoredOnceAcrossTenants() throws {
        let scratch = try Scratch()
        let bytes = samplePDF(seed: 4)
        let first = try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "d1", from: scratch.file(bytes))
        let second = try scratch.store.ingestPDF(tenant: Scratch.other, document: "d2", from: scratch.file(bytes))
        #expect(!first.deduplicated && second.deduplicated)
        #expect(scratch.files(in: "blobs").filter { $0.count > 10 }.count == 1)
        try scratch.store.createLayer(tenant: Scratch.tenant, document: "d1", layer: "")
        try scratch.store.createLayer(tenant: Scratch.other, document: "d2", layer: "")
        let usage = try scratch.store.diskUsage()
        #expect(usage.lines.count == 2)
        #expect(usage.lines.allSatisfy { $0.sharedStoredBytes == first.storedSize && $0.uniqueStoredBytes == 0 })
        #expect(usage.totalStoredBytes < usage.lines.map(\.storedBytes).reduce(0, +))
    }

    @Test func truncatedAndFlippedBlobsAreDetected() throws {
        let scratch = try Scratch()
        let bytes = samplePDF(seed: 5, size: 100_000)
        let a = try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "a", from: scratch.file(bytes))
        let b = try scratch.store.ingestPDF(
            tenant: Scratch.tenant, document: "b", from: scratch.file(samplePDF(seed: 6)))
        // Flip one byte in the middle of a; truncate b.
        let pathA = scratch.store.layout.blobPath(a.sha256)
        var stored = try Data(contentsOf: URL(fileURLWithPath: pathA))
        stored[stored.count / 2] ^= 0x40
        try stored.write(to: URL(fileURLWithPath: pathA))
        let pathB = scratch.store.layout.blobPath(b.sha256)
        try Data(try Data(contentsOf: URL(fileURLWithPath: pathB)).prefix(100)).write(to: URL(fileURLWithPath: pathB))

        #expect(throws: StoreError.self) { try scratch.store.readPDF(a.sha256) { _ in } }
        let quick = try scratch.store.verify()
        #expect(quick.remaining.map(\.subject) == [b.sha256.hex])
        let deep = try scratch.store.verify(VerifyOptions(deep: true))
        #expect(Set(deep.remaining.map(\.subject)) == [a.sha256.hex, b.sha256.hex])
        #expect(deep.remaining.allSatisfy { $0.kind == .corruptBlob })

        let repaired = try scratch.store.verify(VerifyOptions(deep: true, repair: true))
        #expect(repaired.isClean)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
        #expect(scratch.files(in: "quarantine").count == 2)
        let entries = try scratch.store.cacheEntries()
        #expect(entries.allSatisfy { $0.isCorrupted && $0.pdfSHA256 == nil })
        // Downloading again brings the PDF back and clears the flag.
        try scratch.store.ingestPDF(tenant: Scratch.tenant, document: "a", from: scratch.file(bytes))
        #expect(try scratch.store.cacheEntries().first { $0.documentIdentifier == "a" }?.isCorrupted == false)
    }
}
