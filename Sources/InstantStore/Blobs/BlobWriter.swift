import Crypto
import Foundation

/// Streams bytes through SHA-256 and zstd into a temp file in `tmp/`, held under an
/// exclusive flock for as long as the writer lives, so a sweeper can tell a live writer's
/// file (locked) from a dead writer's (free).
///
/// Memory stays bounded whatever the input size: zstd's window and one output buffer.
final class BlobWriter {
    private let layout: StoreLayout
    private var file: POSIXFile
    private var hasher = SHA256()
    private var encoder: ZstdEncoder?
    private let expectedSize: Int64?
    private(set) var size: Int64 = 0

    init(layout: StoreLayout, expectedSize: Int64?) throws(StoreError) {
        self.layout = layout
        self.expectedSize = expectedSize
        file = try BlobWriter.lockedTempFile(layout)
        let target = file
        do {
            encoder = try ZstdEncoder(pledgedSize: expectedSize.map { UInt64($0) }) { (bytes) throws(StoreError) in
                try target.write(bytes)
            }
        } catch {
            discard()
            throw error
        }
    }

    deinit { if file.descriptor >= 0 { discard() } }

    /// Hashes and compresses the next bytes of the PDF.
    func append(_ bytes: UnsafeRawBufferPointer) throws(StoreError) {
        guard let encoder else { return }
        size += Int64(bytes.count)
        if let expectedSize, size > expectedSize {
            throw .sizeMismatch(expected: expectedSize, actual: size)
        }
        do {
            try encoder.compress(bytes)
            hasher.update(bufferPointer: bytes)
        } catch {
            discard()
            throw error
        }
    }

    /// Ends the frame, checks the hash, and fsyncs: the result is ready to commit.
    /// On any error the temp file is gone.
    func finish(expectedHash: BlobHash?) throws(StoreError) -> StagedBlob {
        do throws(StoreError) {
            if let expectedSize, size != expectedSize {
                throw StoreError.sizeMismatch(expected: expectedSize, actual: size)
            }
            try encoder?.finish()
            encoder = nil
            let hash = BlobHash(digest: hasher.finalize())
            if let expectedHash, expectedHash != hash {
                throw StoreError.hashMismatch(expected: expectedHash.hex, actual: hash.hex)
            }
            if expectedSize == nil { try recordContentSize() }
            try Failpoint.check("blob.beforeFsync", path: file.path)
            try file.sync()
            return StagedBlob(file: file, hash: hash, size: size, storedSize: try file.size())
        } catch {
            discard()
            throw error
        }
    }

    /// Removes the temp file; used on every failure path.
    func discard() {
        encoder = nil
        try? FileSystem.remove(file.path)
        file.close()
    }

    /// Rewrites a streamed frame's header to carry its content size (copying the frame
    /// once, at the compressed size), so every stored frame records its size.
    private func recordContentSize() throws(StoreError) {
        let header = try file.read(count: 18, at: 0)
        guard let rewritten = ZstdFrameHeader.addingContentSize(UInt64(size), to: header),
            let parsed = ZstdFrameHeader(header)
        else { throw .compression(reason: "unexpected zstd frame header") }
        let source = try POSIXFile.open(file.path, flags: O_RDONLY)
        let copy = try BlobWriter.lockedTempFile(layout)
        do throws(StoreError) {
            try copy.write(contentsOf: rewritten)
            var offset = Int64(parsed.headerSize)
            while true {
                let chunk = try source.read(count: 1 << 20, at: offset)
                if chunk.isEmpty { break }
                try copy.write(contentsOf: chunk)
                offset += Int64(chunk.count)
            }
        } catch {
            try? FileSystem.remove(copy.path)
            throw error
        }
        try? FileSystem.remove(file.path)
        file.close()
        file = copy
    }

    private static func lockedTempFile(_ layout: StoreLayout) throws(StoreError) -> POSIXFile {
        let file = try POSIXFile.create(layout.temporaryPath(suffix: ".blob"))
        try file.lockExclusively(wait: true)
        return file
    }
}

/// A blob written to `tmp/`, fsynced, hashed and still locked by its writer: what a
/// catalog transaction renames into `blobs/` and records.
struct StagedBlob {
    let file: POSIXFile
    let hash: BlobHash
    let size: Int64
    let storedSize: Int64

    var temporaryPath: String { file.path }

    func discard() {
        try? FileSystem.remove(file.path)
        file.close()
    }
}
