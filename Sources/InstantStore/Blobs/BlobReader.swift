import Crypto
import Foundation

/// Reads one stored blob back: decompresses its zstd frame in pieces and checks it.
struct BlobReader {
    let layout: StoreLayout
    let hash: BlobHash

    var path: String { layout.blobPath(hash) }

    /// The cheap checks done on open: the file exists, its frame header is well formed and
    /// records `expectedSize`, and, when given, the file is `expectedStoredSize` long.
    func checkHeader(expectedSize: Int64, expectedStoredSize: Int64? = nil) throws(StoreError) {
        try checkHeader(of: try openFile(), expectedSize: expectedSize, expectedStoredSize: expectedStoredSize)
    }

    /// Opens the blob; a missing file is a ``StoreError/corruptBlob(sha256:reason:)``.
    /// Everything after the open reads the one descriptor, so a concurrent unlink (GC)
    /// cannot change what is read.
    func openFile() throws(StoreError) -> POSIXFile {
        do {
            return try POSIXFile.open(path, flags: O_RDONLY)
        } catch {
            // Missing only when nothing is there: a file lstat cannot look at either (an
            // I/O error) is unreadable now, which nobody acts on, not gone.
            if try !FileSystem.isPresent(path) { throw .corruptBlob(sha256: hash.hex, reason: Self.missing) }
            throw error
        }
    }

    /// The reason given for a blob whose file is not there.
    static let missing = "the file is missing"

    private func checkHeader(of file: POSIXFile, expectedSize: Int64, expectedStoredSize: Int64?) throws(StoreError) {
        let actual = try file.size()
        if let expectedStoredSize, actual != expectedStoredSize {
            throw .corruptBlob(sha256: hash.hex, reason: "the file is \(actual) bytes, not \(expectedStoredSize)")
        }
        let header = try file.read(count: 18, at: 0)
        guard let frame = ZstdFrameHeader(header) else {
            throw .corruptBlob(sha256: hash.hex, reason: "no zstd frame header")
        }
        guard let expected = UInt64(exactly: expectedSize), frame.contentSize == expected, frame.hasChecksum else {
            throw .corruptBlob(
                sha256: hash.hex, reason: "the frame header does not record \(expectedSize) bytes with a checksum")
        }
    }

    /// Decompresses the whole blob into `body`, then checks the size and (when asked)
    /// the SHA-256; the zstd frame checksum is always checked.
    func read(
        expectedSize: Int64, verifyHash: Bool, _ body: (UnsafeRawBufferPointer) throws(StoreError) -> Void
    ) throws(StoreError) {
        let file = try openFile()
        try checkHeader(of: file, expectedSize: expectedSize, expectedStoredSize: nil)
        var hasher = SHA256()
        var produced: Int64 = 0
        let decoder = try ZstdDecoder(name: hash.hex)
        let input = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { input.deallocate() }
        while true {
            let count = try file.read(into: input)
            if count == 0 { break }
            try decoder.decompress(UnsafeRawBufferPointer(rebasing: input[0..<count])) { (bytes) throws(StoreError) in
                produced += Int64(bytes.count)
                if produced > expectedSize {
                    throw .corruptBlob(sha256: hash.hex, reason: "it holds more than \(expectedSize) bytes")
                }
                if verifyHash { hasher.update(bufferPointer: bytes) }
                try body(bytes)
            }
        }
        try decoder.finish()
        try checkEnd(produced: produced, expectedSize: expectedSize, digest: verifyHash ? hasher.finalize() : nil)
    }

    /// The checks once the frame has ended: the size, and the SHA-256 when `digest` is given.
    func checkEnd(produced: Int64, expectedSize: Int64, digest: SHA256.Digest?) throws(StoreError) {
        guard produced == expectedSize else {
            throw .corruptBlob(sha256: hash.hex, reason: "it holds \(produced) bytes, not \(expectedSize)")
        }
        if let digest {
            let actual = BlobHash(digest: digest)
            guard actual == hash else {
                throw .corruptBlob(sha256: hash.hex, reason: "its bytes hash to \(actual.hex)")
            }
        }
    }
}
