import CZstd
import Crypto
import Foundation

/// A stored PDF as an async sequence of chunks, read only as fast as they are consumed.
///
/// Each `next()` reads and decompresses just enough for one chunk of at most 256 KiB, so a
/// slow consumer (a network peer) holds back the reading instead of piling bytes up in
/// memory. A read of the whole PDF checks the size, the frame checksum and the SHA-256; a
/// range that ends at the PDF's end, its size and the frame checksum (which cover the
/// bytes before the range too, decompressed to reach it); a failed check throws
/// ``StoreError/corruptBlob(sha256:reason:)`` at the end, and bytes already handed over
/// must then be discarded. A range that stops short of the end is checked only by zstd's
/// block decoding: the checksums cover the whole frame.
///
/// ```swift
/// for try await chunk in store.pdfChunks(hash, range: 0..<1024) { send(chunk) }
/// ```
///
/// A caller that has buffers of its own (a server's network buffers) can have each chunk
/// read straight into one, with no `Data` in between (``Iterator/next(into:)``).
public struct PDFChunks: AsyncSequence, Sendable {
    public typealias Element = Data

    /// The most bytes one chunk holds: a buffer of this size takes any chunk.
    public static let chunkSize = 256 << 10

    /// The most bytes one step of ``Iterator/skipToRange()`` decompresses (some 30 ms).
    static let skipStep: Int64 = 32 << 20

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
        /// The bytes of one step of ``skipToRange()`` (smaller in tests).
        var stepSize = PDFChunks.skipStep

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
            try read { (reader) throws(StoreError) in try reader.nextData() }
        }

        /// Reads the next chunk into `buffer`, which must hold at least
        /// ``PDFChunks/chunkSize`` bytes, and returns its length (never 0), or nil at the
        /// end. Blocking: it reads the file (usually from the page cache) on the caller's
        /// thread, as ``next()`` does.
        ///
        /// ```swift
        /// var chunks = store.pdfChunks(hash).makeAsyncIterator()
        /// var buffer = [UInt8](repeating: 0, count: PDFChunks.chunkSize)
        /// while let count = try buffer.withUnsafeMutableBytes({ try chunks.next(into: $0) }) { send(buffer[..<count]) }
        /// ```
        public mutating func next(into buffer: UnsafeMutableRawBufferPointer) throws(StoreError) -> Int? {
            precondition(buffer.count >= PDFChunks.chunkSize, "a PDFChunks buffer must hold chunkSize bytes")
            return try read { (reader) throws(StoreError) in try reader.next(into: buffer) }
        }

        /// Decompresses the bytes before the range's first one off Swift's cooperative
        /// pool, where a range far into a large PDF would hold a thread for as long as
        /// the whole prefix takes (seconds, for a gibibyte); the next chunk is then at
        /// hand. Call it before the first ``next(into:)``: it does nothing when there is
        /// nothing to skip (a range from the start, or a stored frame sent as it is).
        ///
        /// The skip goes in steps of ``skipStep`` bytes, at most ``SkipPermits/count`` of
        /// them at a time in the process (others wait their turn), and ends before the
        /// first step after the calling task is cancelled or `abandoned` answers true (a
        /// peer that hung up): the next read then fails.
        public mutating func skipToRange(abandoned: @escaping @Sendable () -> Bool = { false }) async {
            guard let reader, failure == nil, reader.needsSkip else { return }
            let handoff = Handoff(reader)
            let gone = { Task.isCancelled || abandoned() }
            while !gone() {
                await SkipPermits.shared.acquire()
                if gone() {
                    await SkipPermits.shared.release()
                    break
                }
                let budget = stepSize
                let step: Result<Bool, any Error>
                do {
                    step = .success(try await Offload.run { try handoff.value.skipStep(budget: budget) })
                } catch {
                    step = .failure(error)
                }
                await SkipPermits.shared.release()
                switch step {
                case .success(true): return
                case .success(false): continue
                case .failure(let error as StoreError):
                    if case .corruptBlob = error { foundCorrupt() }
                    failure = error
                    return
                case .failure(let error):
                    // (Unreached: the skip throws store errors alone.)
                    failure = .io(operation: "read the PDF: \(error)", path: "", errno: EIO)
                    return
                }
            }
            failure = .io(operation: "skip to the range asked for (abandoned)", path: "", errno: ECANCELED)
        }

        /// One step of `reader`, after the failure of its opening if there was one; a
        /// corrupt blob is flagged at once.
        private mutating func read<T>(_ step: (ChunkReader) throws(StoreError) -> T?) throws(StoreError) -> T? {
            if let failure {
                self.failure = nil
                throw failure
            }
            guard let reader else { return nil }
            do {
                return try step(reader)
            } catch {
                if case .corruptBlob = error { foundCorrupt() }
                throw error
            }
        }
    }
}

/// The state behind ``PDFChunks``: one open file, one zstd stream, counters.
private final class ChunkReader {
    static let chunkSize = PDFChunks.chunkSize
    private let source: PDFChunks
    private let file: POSIXFile
    /// nil when the stored frame is handed over as it is.
    private let decoder: ZstdDecoder?
    private var input: UnsafeMutableRawBufferPointer
    private var inputStart = 0
    private var inputEnd = 0
    /// Nil unless the whole PDF is read: only then does its SHA-256 say anything.
    private var hasher: SHA256?
    /// Decompressed bytes produced so far.
    private var produced: Int64 = 0
    private var finished = false

    init(_ source: PDFChunks) throws(StoreError) {
        self.source = source
        file = try source.reader.openFile()
        decoder = source.storedFrame ? nil : try ZstdDecoder(name: source.reader.hash.hex)
        hasher = source.range == 0..<source.size ? SHA256() : nil
        input = .allocate(byteCount: Self.chunkSize, alignment: 16)
    }

    /// How many bytes of ``scratch`` the skip to the range left for the next chunk.
    private var carried: Int?

    /// Whether bytes before the range are still to be decompressed (more than a chunk).
    var needsSkip: Bool {
        decoder != nil && carried == nil && !finished && produced + Int64(Self.chunkSize) < source.range.lowerBound
    }

    /// Where a step of the skip stops decompressing (nil: no step runs).
    private var stepEnd: Int64?

    /// Decompresses towards the range's first chunk, `budget` bytes at most; once there,
    /// the chunk is kept for the next ``next(into:)``. Returns whether the skip is done.
    func skipStep(budget: Int64) throws(StoreError) -> Bool {
        guard needsSkip else { return true }
        let buffer = scratch ?? .allocate(byteCount: Self.chunkSize, alignment: 16)
        scratch = buffer
        stepEnd = produced + budget
        defer { stepEnd = nil }
        let count = try next(into: buffer)
        if count == 0 { return false }
        carried = count
        return true
    }

    /// Where ``nextData()`` reads, made on its first call.
    private var scratch: UnsafeMutableRawBufferPointer?

    deinit {
        input.deallocate()
        scratch?.deallocate()
    }

    /// The next chunk as a `Data` of its own length (read into a buffer kept for the next
    /// call), or nil at the end.
    func nextData() throws(StoreError) -> Data? {
        let buffer = scratch ?? .allocate(byteCount: Self.chunkSize, alignment: 16)
        scratch = buffer
        guard let count = try next(into: buffer) else { return nil }
        return Data(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
    }

    /// The next chunk, read or decompressed into `buffer` (at least ``chunkSize`` bytes):
    /// its length, or nil at the end.
    func next(into buffer: UnsafeMutableRawBufferPointer) throws(StoreError) -> Int? {
        if let carried, let scratch, let base = buffer.baseAddress, let from = scratch.baseAddress {
            self.carried = nil
            memmove(base, from, carried)
            return carried
        }
        if finished { return nil }
        let output = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<Self.chunkSize])
        guard let decoder else {
            let count = try file.read(into: output)
            if count == 0 {
                finished = true
                return nil
            }
            return count
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
                            produced: produced, expectedSize: source.size, digest: hasher?.finalize())
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
                hasher?.update(bufferPointer: bytes)
                // Keep only the part inside the requested range.
                let lower = max(source.range.lowerBound, start)
                let upper = min(source.range.upperBound, produced)
                if lower < upper {
                    // Decompressed in place: a range's first chunk moves to the front.
                    let skipped = Int(lower - start)
                    if skipped > 0, let base = output.baseAddress {
                        memmove(base, base + skipped, Int(upper - lower))
                    }
                    return Int(upper - lower)
                }
                if start >= source.range.upperBound {
                    // Past the end of a partial range: stop without reading the rest.
                    finished = true
                    return nil
                }
                // A step of the skip used its budget: 0, "not there yet" (only then).
                if let stepEnd, produced >= stepEnd { return 0 }
            }
        } catch {
            finished = true
            throw error
        }
    }
}

/// How many steps of ``PDFChunks/Iterator/skipToRange()`` run at once in the process: a
/// peer asking for many ranges far into large PDFs takes this many threads, not one each.
actor SkipPermits {
    static let count = 2
    static let shared = SkipPermits()

    private var available = SkipPermits.count
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        if available > 0 {
            available -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        if waiting.isEmpty {
            available += 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}
