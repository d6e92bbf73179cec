import CZstd
import Crypto
import Foundation

/// Stores a zstd frame that arrives already compressed (a server's stored frame, sent
/// with `Content-Encoding: zstd`) as it is: the bytes go to a temp file in `tmp/`
/// unchanged (synced in steps as they arrive: ``EarlySync``), and are decompressed only to
/// hash and count the PDF, never compressed again.
///
/// The frame must be what the store keeps itself: one frame, its content size in the
/// header, a content checksum at the end (checked as it is decompressed), and a window of
/// at most 8 MiB, so a hostile frame cannot make decompression take more memory.
final class FrameWriter {
    private let layout: StoreLayout
    private let file: POSIXFile
    private let early = EarlySync()
    private let decoder: ZstdDecoder
    private var hasher = SHA256()
    private let expectedFrameSize: Int64?
    private var written: Int64 = 0
    private(set) var size: Int64 = 0
    private var finished = false
    private var headerChecked = false
    private var announced: Int64?
    /// A frame may announce at most this many times its own length (plus 1 MiB): far more
    /// than PDFs compress, far less than a decompression bomb (zstd reaches ~32,000×).
    static let maximumRatio: Int64 = 1000

    /// `file`: a locked temp file made ahead (``DownloadFiles``), or nil to make one.
    init(layout: StoreLayout, expectedFrameSize: Int64?, file given: POSIXFile? = nil) throws(StoreError) {
        self.layout = layout
        self.expectedFrameSize = expectedFrameSize
        if let given { file = given } else { file = try BlobWriter.lockedTempFile(layout) }
        do {
            decoder = try ZstdDecoder(name: "the downloaded frame", maxWindowLog: 23)
        } catch {
            file.removeAndClose()
            throw error
        }
    }

    deinit { if !finished { discard() } }

    /// Writes the next bytes of the frame, and hashes what they decompress to.
    func append(_ bytes: UnsafeRawBufferPointer) throws(StoreError) {
        do throws(StoreError) {
            written += Int64(bytes.count)
            if let expectedFrameSize, written > expectedFrameSize {
                throw StoreError.sizeMismatch(expected: expectedFrameSize, actual: written)
            }
            try file.write(bytes)
            early.wrote(file, upTo: written)
            // A frame the store could not keep is refused as soon as its header is in, so
            // the caller can ask for plain bytes before the whole frame has come.
            if !headerChecked, written >= 18 {
                announced = try checkHeader()
                headerChecked = true
            }
            let limit = announced ?? Int64.max
            // Without the frame's length (a response without Content-Length), the header's
            // size cannot be bounded up front: what the bytes so far decompress to is,
            // as they arrive, so a small frame announcing terabytes is refused at once
            // rather than decompressed and hashed to the end.
            let bound = expectedFrameSize == nil ? Self.largestContent(fromFrameBytes: written) : Int64.max
            try decoder.decompress(bytes) { (piece) throws(StoreError) in
                size += Int64(piece.count)
                // Never more than the header announced (itself bounded in checkHeader).
                guard size <= limit else {
                    throw StoreError.compression(reason: "the zstd frame holds more than its header announces")
                }
                guard size <= bound else {
                    throw StoreError.compression(
                        reason: "\(written) bytes of zstd frame decompress to over \(bound): refused as a bomb")
                }
                hasher.update(bufferPointer: piece)
            }
        } catch {
            discard()
            throw error
        }
    }

    /// Checks the frame (complete, its header's size, checksum and hash): the result is
    /// ready to be synced and committed. On any error the temp file is gone.
    func finish(expectedHash: BlobHash?) throws(StoreError) -> StagedBlob {
        do throws(StoreError) {
            if let expectedFrameSize, written != expectedFrameSize {
                throw StoreError.sizeMismatch(expected: expectedFrameSize, actual: written)
            }
            try decoder.finish()
            if size == 0 { throw StoreError.emptyPDF }
            guard try checkHeader() == size else {
                throw StoreError.compression(reason: "the zstd frame's header announces another size than it holds")
            }
            let hash = BlobHash(digest: hasher.finalize())
            if let expectedHash, expectedHash != hash {
                throw StoreError.hashMismatch(expected: expectedHash.hex, actual: hash.hex)
            }
            finished = true
            return StagedBlob(file: file, hash: hash, size: size, storedSize: written, earlySteps: try early.finish())
        } catch {
            discard()
            throw error
        }
    }

    /// Refuses a frame whose header does not record its content size and checksum.
    /// Returns the content size it announces.
    private func checkHeader() throws(StoreError) -> Int64 {
        guard let header = ZstdFrameHeader(try file.read(count: 18, at: 0)), header.hasChecksum,
            let contentSize = header.contentSize
        else {
            throw StoreError.compression(
                reason: "the zstd frame does not record its content size and checksum as the store needs")
        }
        if let expectedFrameSize {
            let cap = UInt64(Self.largestContent(fromFrameBytes: expectedFrameSize))
            if contentSize > cap {
                throw StoreError.compression(
                    reason: "the zstd frame announces \(contentSize) bytes from \(expectedFrameSize): refused as a bomb"
                )
            }
        }
        guard let size = Int64(exactly: contentSize) else {
            throw StoreError.compression(reason: "the zstd frame announces \(contentSize) bytes")
        }
        return size
    }

    /// The most PDF bytes `frameBytes` of frame may hold: ``maximumRatio`` times as many,
    /// plus 1 MiB (saturating: an absurd length must not overflow into a trap).
    static func largestContent(fromFrameBytes frameBytes: Int64) -> Int64 {
        let (product, overflow) = max(0, frameBytes).multipliedReportingOverflow(by: maximumRatio)
        let (sum, overflowAgain) = product.addingReportingOverflow(1 << 20)
        return overflow || overflowAgain ? Int64.max : sum
    }

    /// The PDF size the frame's header announces, once the header has arrived.
    var announcedContentSize: Int64? {
        guard let header = try? file.read(count: 18, at: 0), let parsed = ZstdFrameHeader(header) else { return nil }
        return parsed.contentSize.flatMap { Int64(exactly: $0) }
    }

    /// Hands `sink` the PDF bytes the frame received so far decompresses to: exactly
    /// ``size`` bytes, decompressed again from the temp file.
    func replay(into sink: (UnsafeRawBufferPointer) throws(StoreError) -> Void) throws(StoreError) {
        let decoder = try ZstdDecoder(name: "the downloaded frame", maxWindowLog: 23)
        let reader = try POSIXFile.open(file.path, flags: O_RDONLY)
        var offset: Int64 = 0
        var produced: Int64 = 0
        while offset < written {
            let chunk = try reader.read(count: Int(min(1 << 20, written - offset)), at: offset)
            if chunk.isEmpty { break }
            offset += Int64(chunk.count)
            let decoded = chunk.withUnsafeBytes { input in
                Result { () throws(StoreError) in
                    try decoder.decompress(input) { (piece) throws(StoreError) in
                        let wanted = Int(min(Int64(piece.count), size - produced))
                        guard wanted > 0 else { return }
                        try sink(UnsafeRawBufferPointer(rebasing: piece[0..<wanted]))
                        produced += Int64(wanted)
                    }
                }
            }
            try decoded.get()
        }
        guard produced == size else {
            throw .compression(reason: "the frame decompressed to \(produced) bytes again, not \(size)")
        }
    }

    /// Removes the temp file; used on every failure path.
    func discard() {
        finished = true
        early.cancel()
        file.removeAndClose()
    }
}
