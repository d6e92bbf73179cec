import CZstd
import Crypto
import Foundation

/// A stored PDF as an async sequence of chunks, read only as fast as they are consumed.
///
/// Each `next()` reads and decompresses just enough for one chunk of at most 256 KiB, so a
/// slow consumer (a network peer) holds back the reading instead of piling bytes up in
/// memory. A read to the end checks the size, the frame checksum and the SHA-256; a failed
/// check throws ``StoreError/corruptBlob(sha256:reason:)`` at the end, and bytes already
/// handed over must then be discarded. A range that stops short of the end is checked only
/// by zstd's block decoding: the checksums cover the whole frame.
///
/// ```swift
/// for try await chunk in store.pdfChunks(hash, range: 0..<1024) { send(chunk) }
/// ```
public struct PDFChunks: AsyncSequence, Sendable {
    public typealias Element = Data

    let reader: BlobReader
    let size: Int64
    let range: Range<Int64>
    let storedFrame: Bool
    /// Called when a check fails, so the store flags the PDF at once.
    var foundCorrupt: @Sendable () -> Void = {}

    public func makeAsyncIterator() -> Iterator {
        Iterator(source: self)
    }

    public struct Iterator: AsyncIteratorProtocol {
        private let reader: ChunkReader?
        private var failure: StoreError?

        private let foundCorrupt: @Sendable () -> Void

        init(source: PDFChunks) {
            foundCorrupt = source.foundCorrupt
            do {
                reader = try ChunkReader(source)
            } catch {
                reader = nil
                failure = error
            }
        }

        public mutating func next() async throws -> Data? {
            if let failure {
                self.failure = nil
                throw failure
            }
            do {
                return try reader?.next()
            } catch {
                if case .corruptBlob = error { foundCorrupt() }
                throw error
            }
        }
    }
}

/// The state behind ``PDFChunks``: one open file, one zstd stream, counters.
private final class ChunkReader {
    static let chunkSize = 256 << 10
    private let source: PDFChunks
    private let file: POSIXFile
    /// nil when the stored frame is handed over as it is.
    private let decoder: ZstdDecoder?
    private var input: UnsafeMutableRawBufferPointer
    private var inputStart = 0
    private var inputEnd = 0
    private var output: UnsafeMutableRawBufferPointer
    private var hasher = SHA256()
    /// Decompressed bytes produced so far.
    private var produced: Int64 = 0
    private var finished = false

    init(_ source: PDFChunks) throws(StoreError) {
        self.source = source
        file = try source.reader.openFile()
        decoder = source.storedFrame ? nil : try ZstdDecoder(name: source.reader.hash.hex)
        input = .allocate(byteCount: Self.chunkSize, alignment: 16)
        output = .allocate(byteCount: Self.chunkSize, alignment: 16)
    }

    deinit {
        input.deallocate()
        output.deallocate()
    }

    func next() throws(StoreError) -> Data? {
        if finished { return nil }
        guard let decoder else {
            let count = try file.read(into: output)
            if count == 0 {
                finished = true
                return nil
            }
            return Data(UnsafeRawBufferPointer(rebasing: output[0..<count]))
        }
        do throws(StoreError) {
            while true {
                if inputStart == inputEnd {
                    inputEnd = try file.read(into: input)
                    inputStart = 0
                    if inputEnd == 0 {
                        // The file has ended: the frame must have, too.
                        try decoder.finish()
                        finished = true
                        try source.reader.checkEnd(
                            produced: produced, expectedSize: source.size, digest: hasher.finalize())
                        return nil
                    }
                }
                var inBuffer = ZSTD_inBuffer(
                    src: input.baseAddress.map { $0 + inputStart }, size: inputEnd - inputStart, pos: 0)
                let count = try decoder.step(&inBuffer, into: output)
                inputStart += inBuffer.pos
                guard count > 0 else { continue }
                let bytes = UnsafeRawBufferPointer(rebasing: output[0..<count])
                let start = produced
                produced += Int64(count)
                if produced > source.size {
                    throw StoreError.corruptBlob(
                        sha256: source.reader.hash.hex, reason: "it holds more than \(source.size) bytes")
                }
                hasher.update(bufferPointer: bytes)
                // Keep only the part inside the requested range.
                let lower = max(source.range.lowerBound, start)
                let upper = min(source.range.upperBound, produced)
                if lower < upper {
                    return Data(bytes[Int(lower - start)..<Int(upper - start)])
                }
                if start >= source.range.upperBound {
                    // Past the end of a partial range: stop without reading the rest.
                    finished = true
                    return nil
                }
            }
        } catch {
            finished = true
            throw error
        }
    }
}
