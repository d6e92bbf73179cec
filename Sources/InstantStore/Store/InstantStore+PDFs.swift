import Foundation
import GRDB

/// What an ingest stored.
public struct StoredPDF: Sendable, Equatable {
    /// The SHA-256 of the PDF: its name in the store.
    public var sha256: BlobHash
    /// The PDF's size.
    public var size: Int64
    /// The size of its zstd frame on disk.
    public var storedSize: Int64
    /// True when the store already held these bytes and no new file was kept.
    public var deduplicated: Bool
}

extension InstantStore {
    /// Stores the PDF at `fileURL` as the PDF of `document`, streaming it through SHA-256
    /// and zstd in bounded memory.
    ///
    /// - Parameter expectedHash: when given (a server's ETag), bytes that hash otherwise
    ///   are refused and nothing is stored.
    @discardableResult
    public func ingestPDF(
        tenant: TenantURL, document: String, from fileURL: URL, expectedHash: BlobHash? = nil
    ) throws(StoreError) -> StoredPDF {
        try Identifier.validate(document, what: "document identifier")
        let source = try POSIXFile.open(fileURL.path, flags: O_RDONLY)
        let writer = try BlobWriter(layout: layout, expectedSize: try source.size())
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = try source.read(into: buffer)
            if count == 0 { break }
            try writer.append(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
        return try commit(try writer.finish(expectedHash: expectedHash), tenant: tenant, document: document)
    }

    /// Stores a PDF that arrives as chunks (for example an HTTP body) as the PDF of
    /// `document`. Memory stays bounded by the chunk size, whatever the PDF's size.
    ///
    /// - Parameters:
    ///   - expectedSize: the announced length; a body of another length is refused.
    ///   - expectedHash: the announced SHA-256 (an ETag); other bytes are refused.
    /// - Throws: ``StoreError``, or whatever error `chunks` throws. Nothing is left behind.
    @discardableResult
    public func ingestPDF<Chunks: AsyncSequence>(
        tenant: TenantURL, document: String, chunks: Chunks, expectedSize: Int64? = nil,
        expectedHash: BlobHash? = nil
    ) async throws -> StoredPDF where Chunks.Element: ContiguousBytes {
        try Identifier.validate(document, what: "document identifier")
        let writer = try BlobWriter(layout: layout, expectedSize: expectedSize)
        do {
            for try await chunk in chunks {
                try chunk.withUnsafeBytes { try writer.append($0) }
            }
        } catch {
            writer.discard()
            throw error
        }
        return try commit(try writer.finish(expectedHash: expectedHash), tenant: tenant, document: document)
    }

    /// Renames the staged blob into `blobs/` and points the document at it, in one catalog
    /// transaction; a blob already stored intact is reused and the staged copy dropped.
    func commit(_ staged: StagedBlob, tenant: TenantURL, document: String) throws(StoreError) -> StoredPDF {
        defer { staged.discard() }
        let hash = staged.hash
        try Failpoint.check("blob.beforeCommit")
        let deduplicated = try catalog.write { db -> Bool in
            var documentRow = try self.documentRow(tenant, document, in: db)
            let path = self.layout.blobPath(hash)
            let existing = try BlobRecord.fetchOne(db, key: hash.hex)
            let intact = try existing.map { try FileSystem.fileSize(path) == $0.storedSize } ?? false
            if !intact {
                try FileSystem.makeDirectory((path as NSString).deletingLastPathComponent)
                try Failpoint.check("blob.beforeRename")
                try FileSystem.rename(staged.temporaryPath, path)
                try Failpoint.check("blob.afterRename")
                try FileSystem.syncDirectory((path as NSString).deletingLastPathComponent)
                try TombstoneRecord.deleteOne(db, key: StoreLayout.blobRelativePath(hash))
                try BlobRecord(
                    sha256: hash.hex, size: staged.size, storedSize: staged.storedSize,
                    refCount: existing?.refCount ?? 0, createdAt: Date(), lastVerifiedAt: nil
                ).save(db)
                try Failpoint.check("blob.afterInsert")
            }
            try self.catalog.adjustReference(from: documentRow.blobSha256, to: hash.hex, in: db)
            documentRow.blobSha256 = hash.hex
            documentRow.corrupt = false
            documentRow.lastUsedAt = Date()
            try documentRow.update(db)
            try Failpoint.check("blob.beforeCommitTransaction")
            return intact
        }
        try Failpoint.check("blob.afterCommit")
        try? recordPDFInLayers(tenant: tenant, document: document, hash: hash)
        return StoredPDF(sha256: hash, size: staged.size, storedSize: staged.storedSize, deduplicated: deduplicated)
    }

    /// Tells the document's layer files which PDF they belong to (for catalog rebuilds).
    private func recordPDFInLayers(tenant: TenantURL, document: String, hash: BlobHash) throws(StoreError) {
        let keys = try catalog.read { db -> [String] in
            guard let tenantID = try catalog.tenantID(tenant, create: false, in: db),
                let id = try catalog.document(tenantID, document, in: db)?.id
            else { return [] }
            return try String.fetchAll(db, sql: "SELECT key FROM layer WHERE documentId = ?", arguments: [id])
        }
        for key in keys {
            let layer = try openLayer(key: key)
            defer { layer.close() }
            if try layer.metadata().pdfSHA256 != hash { try layer.setPDF(hash) }
        }
    }

    // MARK: Reading

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
        let size = try catalog.read { db in try BlobRecord.fetchOne(db, key: hash.hex)?.size }
        guard let size else { throw .noSuchBlob(sha256: hash.hex) }
        try BlobReader(layout: layout, hash: hash).read(expectedSize: size, verifyHash: true, body)
    }

    /// Streams a stored PDF's bytes as chunks of up to 1 MiB.
    public func pdfChunks(_ hash: BlobHash) -> AsyncThrowingStream<Data, any Error> {
        AsyncThrowingStream(bufferingPolicy: .bufferingOldest(4)) { continuation in
            let thread = Thread {
                do {
                    try self.readPDF(hash) { bytes in _ = continuation.yield(Data(bytes)) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            thread.start()
        }
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
