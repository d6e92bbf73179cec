import Crypto
import Foundation

/// Streams bytes through SHA-256 and zstd into a temp file in `tmp/`, held under an
/// exclusive flock for as long as the writer lives, so a sweeper can tell a live writer's
/// file (locked) from a dead writer's (free).
///
/// Input is gathered into batches of up to ``batchSize`` bytes; each batch is hashed on one
/// core while it is compressed and written on another, and the compressed bytes are synced
/// in steps as they are written (``EarlySync``), so the final `fsync` has little left to do.
/// Memory stays bounded whatever the input size: one batch, zstd's window and one output
/// buffer.
final class BlobWriter {
    /// Bytes gathered before hashing and compression run side by side.
    static let batchSize = 1 << 20
    /// Below this a batch is hashed and compressed on the calling thread: handing work to
    /// another core costs more than it saves.
    static let parallelThreshold = 64 << 10

    private let layout: StoreLayout
    private var file: POSIXFile
    private let early: EarlySync
    private var hasher = SHA256()
    private var encoder: ZstdEncoder?
    private let expectedSize: Int64?
    private var batch: UnsafeMutableRawBufferPointer
    private var batchCount = 0
    private(set) var size: Int64 = 0

    /// `file`: a locked temp file made ahead (``DownloadFiles``), or nil to make one.
    init(layout: StoreLayout, expectedSize: Int64?, file given: POSIXFile? = nil) throws(StoreError) {
        self.layout = layout
        self.expectedSize = expectedSize
        // A stream of unknown size is copied once more at its end (recordContentSize): the
        // copy is what is committed, synced whole.
        early = EarlySync(enabled: expectedSize != nil)
        batch = .allocate(byteCount: Self.batchSize, alignment: 16)
        if let given { file = given } else { file = try BlobWriter.lockedTempFile(layout) }
        let (target, early) = (file, early)
        var written: Int64 = 0
        do {
            encoder = try ZstdEncoder(pledgedSize: expectedSize.map { UInt64($0) }) { (bytes) throws(StoreError) in
                try target.write(bytes)
                written += Int64(bytes.count)
                early.wrote(target, upTo: written)
            }
        } catch {
            discard()
            batch.deallocate()
            throw error
        }
    }

    deinit {
        if file.descriptor >= 0 { discard() }
        batch.deallocate()
    }

    /// Hashes and compresses the next bytes of the PDF.
    func append(_ bytes: UnsafeRawBufferPointer) throws(StoreError) {
        guard encoder != nil else { return }
        do throws(StoreError) {
            try account(bytes.count)
            var rest = bytes
            // Large pieces with nothing gathered go straight through, without a copy.
            if batchCount == 0, rest.count >= Self.batchSize {
                try process(rest)
                return
            }
            while !rest.isEmpty {
                let taken = min(rest.count, Self.batchSize - batchCount)
                if let source = rest.baseAddress, let target = batch.baseAddress {
                    (target + batchCount).copyMemory(from: source, byteCount: taken)
                }
                batchCount += taken
                rest = UnsafeRawBufferPointer(rebasing: rest[taken...])
                if batchCount == Self.batchSize { try processBatch() }
            }
        } catch {
            discard()
            throw error
        }
    }

    /// Hashes and compresses the rest of `source`, read straight into the batch buffer.
    func append(contentsOf source: POSIXFile) throws(StoreError) {
        guard encoder != nil else { return }
        do throws(StoreError) {
            while true {
                let count = try source.read(into: UnsafeMutableRawBufferPointer(rebasing: batch[batchCount...]))
                if count == 0 { return }
                try account(count)
                batchCount += count
                if batchCount == Self.batchSize { try processBatch() }
            }
        } catch {
            discard()
            throw error
        }
    }

    /// Counts `count` more input bytes, refusing more than were announced.
    private func account(_ count: Int) throws(StoreError) {
        size += Int64(count)
        if let expectedSize, size > expectedSize {
            throw .sizeMismatch(expected: expectedSize, actual: size)
        }
    }

    /// Hashes and compresses what has been gathered.
    private func processBatch() throws(StoreError) {
        guard batchCount > 0 else { return }
        try process(UnsafeRawBufferPointer(rebasing: batch[0..<batchCount]))
        batchCount = 0
    }

    /// Hashes `bytes` on one core while compressing them on another.
    private func process(_ bytes: UnsafeRawBufferPointer) throws(StoreError) {
        guard let encoder else { return }
        if bytes.count < Self.parallelThreshold {
            hasher.update(bufferPointer: bytes)
            try encoder.compress(bytes)
            return
        }
        var hasher = self.hasher
        try Parallel.both(
            { () throws(StoreError) in try encoder.compress(bytes) },
            { () throws(StoreError) in hasher.update(bufferPointer: bytes) })
        self.hasher = hasher
    }

    /// Ends the frame and checks the hash: the result is ready to be synced and committed.
    /// On any error the temp file is gone.
    func finish(expectedHash: BlobHash?) throws(StoreError) -> StagedBlob {
        do throws(StoreError) {
            if let expectedSize, size != expectedSize {
                throw StoreError.sizeMismatch(expected: expectedSize, actual: size)
            }
            if size == 0 { throw StoreError.emptyPDF }
            try processBatch()
            try encoder?.finish()
            encoder = nil
            let hash = BlobHash(digest: hasher.finalize())
            if let expectedHash, expectedHash != hash {
                throw StoreError.hashMismatch(expected: expectedHash.hex, actual: hash.hex)
            }
            if expectedSize == nil { try recordContentSize() }
            return StagedBlob(
                file: file, hash: hash, size: size, storedSize: try file.size(), earlySteps: try early.finish())
        } catch {
            discard()
            throw error
        }
    }

    /// Removes the temp file; used on every failure path.
    func discard() {
        encoder = nil
        early.cancel()
        file.removeAndClose()
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
            copy.removeAndClose()
            throw error
        }
        file.removeAndClose()
        file = copy
    }

    /// A new blob temp file in `tmp/`, locked by its writer from before its name appears
    /// (for this writer, ``FrameWriter``, and ``DownloadFiles``).
    static func lockedTempFile(_ layout: StoreLayout) throws(StoreError) -> POSIXFile {
        try POSIXFile.createLocked(layout.temporaryPath(suffix: ".blob"))
    }
}

/// A blob written to `tmp/`, hashed and still locked by its writer: what a catalog
/// transaction fsyncs, renames into `blobs/` and records.
struct StagedBlob {
    let file: POSIXFile
    let hash: BlobHash
    let size: Int64
    let storedSize: Int64
    /// The fsync started ahead of the commit (``syncingAhead()``: a download's, while its
    /// layer file is still being written), and what it met. Nothing is written to a staged
    /// file after that.
    private(set) var ahead: SyncAhead?
    /// The writer's early sync (``EarlySync``): a step may still be running, and the
    /// file's fsync waits for it, and fails with the error a step met.
    let earlySteps: EarlySync.Steps?

    init(file: POSIXFile, hash: BlobHash, size: Int64, storedSize: Int64, earlySteps: EarlySync.Steps?) {
        self.file = file
        self.hash = hash
        self.size = size
        self.storedSize = storedSize
        self.earlySteps = earlySteps
    }

    var temporaryPath: String { file.path }

    /// Called before the commit's write lock, so that no long wait for a disk happens under
    /// it: waits for the writer's early sync step still running, if one is, so the fsync
    /// inside the lock finds only the rest to do; for a blob from ``syncingAhead()``, waits
    /// for that fsync when the blob is large (``SyncAhead/waitedUnderLockLimit``). Throws
    /// what either met.
    func settle() throws(StoreError) {
        if let ahead {
            if storedSize > SyncAhead.waitedUnderLockLimit { try ahead.wait() }
            return
        }
        try earlySteps?.wait()
    }

    /// Whether ``sync()`` only waits for an fsync started ahead (``syncingAhead()``).
    var isSyncedAhead: Bool { ahead != nil }

    /// Makes the bytes durable; must return before the file replaces another in `blobs/`,
    /// and before the transaction that records it commits. For a blob from
    /// ``syncingAhead()``, waits for the fsync it started.
    func sync() throws(StoreError) {
        if let ahead { return try ahead.wait() }
        try earlySteps?.wait()  // done by settle(), usually: then no wait
        try Failpoint.check("blob.beforeFsync", path: file.path)
        try file.sync()
    }

    /// Starts the fsync now, on another thread, after the writer's early sync step still
    /// running (the caller waits for neither); the blob returned is the same, and its
    /// ``sync()`` waits for that fsync. The fsync goes through a duplicate of the writer's
    /// descriptor: the writer may close its file meanwhile (a download given up).
    func syncingAhead() -> StagedBlob {
        let earlySteps = earlySteps
        var blob = self
        blob.ahead = SyncAhead(file, failpoint: "blob.beforeFsync") { () throws(StoreError) in try earlySteps?.wait() }
        return blob
    }

    func discard() {
        file.removeAndClose()
    }

    /// Whether the file at `path` holds exactly the staged bytes: then it is an intact
    /// copy (the staged bytes were just hashed from the source). Cheap when the sizes
    /// differ; otherwise one read of each, both usually in the page cache.
    func hasSameBytes(as path: String) throws(StoreError) -> Bool {
        guard try FileSystem.fileSize(path) == storedSize,
            let other = try? POSIXFile.open(path, flags: O_RDONLY)
        else { return false }
        var offset: Int64 = 0
        while offset < storedSize {
            let mine = try file.read(count: 1 << 20, at: offset)
            let theirs = try other.read(count: mine.count, at: offset)
            if mine.isEmpty || mine != theirs { return false }
            offset += Int64(mine.count)
        }
        return true
    }
}
