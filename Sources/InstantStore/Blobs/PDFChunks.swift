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

    let path: String
    let hash: BlobHash
    let size: Int64
    let range: Range<Int64>
    let storedFrame: Bool

    public func makeAsyncIterator() -> Iterator {
        Iterator(source: self)
    }

    public struct Iterator: AsyncIteratorProtocol {
        private let reader: ChunkReader?
        private var failure: StoreError?

        init(source: PDFChunks) {
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
            return try reader?.next()
        }
    }
}

/// The state behind ``PDFChunks``: one open file, one zstd stream, counters.
private final class ChunkReader {
    static let chunkSize = 256 << 10
    private let source: PDFChunks
    private let file: POSIXFile
    private let context: OpaquePointer?
    private var input: UnsafeMutableRawBufferPointer
    private var inputStart = 0
    private var inputEnd = 0
    private var output: UnsafeMutableRawBufferPointer
    private var hasher = SHA256()
    /// Decompressed bytes produced so far.
    private var produced: Int64 = 0
    private var frameDone = false
    private var finished = false

    init(_ source: PDFChunks) throws(StoreError) {
        self.source = source
        do {
            file = try POSIXFile.open(source.path, flags: O_RDONLY)
        } catch {
            throw FileSystem.exists(source.path)
                ? error : .corruptBlob(sha256: source.hash.hex, reason: BlobReader.missing)
        }
        context = source.storedFrame ? nil : ZSTD_createDCtx()
        if !source.storedFrame && context == nil { throw .compression(reason: "out of memory") }
        input = .allocate(byteCount: Self.chunkSize, alignment: 16)
        output = .allocate(byteCount: Self.chunkSize, alignment: 16)
    }

    deinit {
        if let context { ZSTD_freeDCtx(context) }
        input.deallocate()
        output.deallocate()
    }

    func next() throws(StoreError) -> Data? {
        if finished { return nil }
        if source.storedFrame {
            let count = try file.read(into: output)
            if count == 0 {
                finished = true
                return nil
            }
            return Data(UnsafeRawBufferPointer(rebasing: output[0..<count]))
        }
        while true {
            if inputStart == inputEnd && !frameDone {
                inputEnd = try file.read(into: input)
                inputStart = 0
                if inputEnd == 0 { throw corrupt("the zstd frame is truncated") }
            }
            if frameDone {
                let trailing = inputStart < inputEnd ? inputEnd - inputStart : try file.read(into: input)
                if trailing > 0 {
                    throw corrupt("data after the end of the zstd frame")
                }
                try finish()
                return nil
            }
            var inBuffer = ZSTD_inBuffer(
                src: input.baseAddress.map { $0 + inputStart }, size: inputEnd - inputStart, pos: 0)
            var outBuffer = ZSTD_outBuffer(dst: output.baseAddress, size: output.count, pos: 0)
            let result = ZSTD_decompressStream(context, &outBuffer, &inBuffer)
            if ZSTD_isError(result) != 0 { throw corrupt("zstd: " + String(cString: ZSTD_getErrorName(result))) }
            inputStart += inBuffer.pos
            if result == 0 { frameDone = true }
            guard outBuffer.pos > 0 else { continue }
            let bytes = UnsafeRawBufferPointer(rebasing: output[0..<outBuffer.pos])
            let start = produced
            produced += Int64(bytes.count)
            if produced > source.size { throw corrupt("it holds more than \(source.size) bytes") }
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
    }

    private func finish() throws(StoreError) {
        finished = true
        guard produced == source.size else { throw corrupt("it holds \(produced) bytes, not \(source.size)") }
        let actual = BlobHash(digest: hasher.finalize())
        guard actual == source.hash else { throw corrupt("its bytes hash to \(actual.hex)") }
    }

    private func corrupt(_ reason: String) -> StoreError {
        finished = true
        return .corruptBlob(sha256: source.hash.hex, reason: reason)
    }
}
