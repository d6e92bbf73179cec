import Foundation
import GRDB

/// Reading the PDFs the store holds: by document, as bytes, as chunks for a response (or
/// the stored frame as it is), or exported to a file.
extension InstantStore {
    /// The stored PDF of a document, if it has one.
    public func pdf(tenant: TenantURL, document: String) throws(StoreError) -> StoredPDF? {
        try catalog.read { db -> StoredPDF? in
            guard let tenantID = try catalog.tenantID(tenant, create: false, in: db),
                let row = try catalog.document(tenantID, document, in: db), let sha = row.blobSha256,
                let blob = try BlobRecord.fetchOne(db, key: sha), let hash = BlobHash(hex: sha)
            else { return nil }
            return StoredPDF(sha256: hash, size: blob.size, storedSize: blob.storedSize, deduplicated: false)
        }
    }

    /// Streams a stored PDF's bytes to `body`, checking size, frame checksum and SHA-256.
    /// A blob that fails a check throws ``StoreError/corruptBlob(sha256:reason:)``; bytes
    /// already handed over must then be discarded by the caller.
    public func readPDF(_ hash: BlobHash, _ body: (UnsafeRawBufferPointer) throws(StoreError) -> Void)
        throws(StoreError)
    {
        let size = try blobSize(hash)
        guard let size else { throw .noSuchBlob(sha256: hash.hex) }
        do {
            try BlobReader(layout: layout, hash: hash).read(expectedSize: size, verifyHash: true, body)
        } catch {
            if try wasCollected(hash, failure: error) { throw .noSuchBlob(sha256: hash.hex) }
            if case .corruptBlob = error { flagBlobCorrupt(hash) }
            throw error
        }
    }

    /// Flags every document using `hash` corrupt, so listings show them `invalid` and the
    /// next ingest of the right bytes replaces the copy. Best effort: the error that found
    /// the damage reaches the caller either way, and verify finds it again.
    func flagBlobCorrupt(_ hash: BlobHash) {
        try? catalog.write { db in
            try db.execute(sql: "UPDATE document SET corrupt = 1 WHERE blobSha256 = ?", arguments: [hash.hex])
        }
    }

    /// Whether `failure`, met reading `hash`, is a missing file that a collector removed
    /// after the caller read the catalog (its row is gone too): then the blob is gone, not
    /// corrupt.
    func wasCollected(_ hash: BlobHash, failure: StoreError) throws(StoreError) -> Bool {
        guard case .corruptBlob(_, BlobReader.missing) = failure else { return false }
        return try blobSize(hash) == nil
    }

    /// The recorded size of a blob, nil when the catalog has no such blob.
    func blobSize(_ hash: BlobHash) throws(StoreError) -> Int64? {
        try catalog.read { db in
            try Int64.fetchOne(
                db.cachedStatement(sql: "SELECT size FROM blob WHERE sha256 = ?"), arguments: [hash.hex])
        }
    }

    /// A stored PDF's bytes as chunks read on demand (see ``PDFChunks``): all of them, or
    /// `range` of them (read from the start of the frame up to the range's end), or, with
    /// `storedFrame`, the zstd frame as it is on disk.
    public func pdfChunks(_ hash: BlobHash, range: Range<Int64>? = nil, storedFrame: Bool = false) throws(StoreError)
        -> PDFChunks
    {
        let size = try blobSize(hash)
        guard let size else { throw .noSuchBlob(sha256: hash.hex) }
        return PDFChunks(
            reader: BlobReader(layout: layout, hash: hash), size: size, range: range ?? 0..<size,
            storedFrame: storedFrame, foundCorrupt: { [self] in self.flagBlobCorrupt(hash) })
    }

    /// Writes a stored PDF to `destination` (replacing it), after checking every byte.
    /// A corrupt blob leaves no file at `destination`.
    public func exportPDF(_ hash: BlobHash, to destination: URL) throws(StoreError) {
        let temporary = destination.path + ".partial-" + RandomKey.make().prefix(8)
        let file = try POSIXFile.create(temporary)
        do throws(StoreError) {
            try readPDF(hash) { (bytes) throws(StoreError) in try file.write(bytes) }
            try file.sync()
            try FileSystem.rename(temporary, destination.path)
        } catch {
            try? FileSystem.remove(temporary)
            throw error
        }
    }
}
