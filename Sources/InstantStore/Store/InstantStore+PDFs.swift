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
        try checkWritable("store a PDF")
        let source = try POSIXFile.open(fileURL.path, flags: O_RDONLY)
        let writer = try BlobWriter(layout: layout, expectedSize: try source.size())
        try writer.append(contentsOf: source)
        return try commit(try writer.finish(expectedHash: expectedHash), tenant: tenant, document: document)
    }

    /// Stores a PDF that arrives as chunks (for example an HTTP body) as the PDF of
    /// `document`. Memory stays bounded by the chunk size, whatever the PDF's size.
    ///
    /// - Parameters:
    ///   - expectedSize: the announced length; a body of another length is refused.
    ///   - expectedHash: the announced SHA-256 (an ETag); other bytes are refused.
    /// - Throws: ``StoreError``, or whatever error `chunks` throws. Nothing is stored (a
    ///   commit that fails after renaming the file into place leaves an orphan, which the
    ///   next prune removes).
    @discardableResult
    public func ingestPDF<Chunks: AsyncSequence>(
        tenant: TenantURL, document: String, chunks: Chunks, expectedSize: Int64? = nil,
        expectedHash: BlobHash? = nil
    ) async throws -> StoredPDF where Chunks.Element: ContiguousBytes {
        try Identifier.validate(document, what: "document identifier")
        let ingest = try beginPDFIngest(expectedSize: expectedSize, expectedHash: expectedHash)
        do {
            for try await chunk in chunks {
                try chunk.withUnsafeBytes { try ingest.append($0) }
            }
        } catch {
            ingest.discard()
            throw error
        }
        return try await ingest.commit(tenant: tenant, document: document)
    }

    /// Renames the staged blob into `blobs/` and points the document at it, in one catalog
    /// transaction; a stored copy is reused only when it is byte for byte the staged one
    /// and no reader has flagged it, so an ingest of the right bytes heals a damaged copy
    /// (a flagged one goes to `quarantine/`) and clears the flags.
    ///
    /// With `layer` (a download: the layer staged for `tenant`'s `document` while the PDF
    /// arrived), the layer appears in the same transaction: the document is never in the
    /// store with its new PDF and without the layer, so no prune can take the PDF between
    /// the two, and the download pays for one commit.
    ///
    /// This runs for every ingest, so it keeps to cached statements, and each fsync runs on
    /// another core while catalog rows are read or written. The order the invariants need
    /// still holds: every file's fsync and its directory's return before the transaction
    /// commits, and a file replaces a copy the catalog records only once its bytes are
    /// durable (a copy no row names is garbage, and may be replaced before). A
    /// download's files (a blob from ``StagedBlob/syncingAhead()``, a staged layer) may be
    /// renamed to a new name while their fsyncs, started earlier, still run: until the
    /// commit nothing reads them there, and a power cut leaves orphans, never a row.
    ///
    /// `withdrawn`, when given, is asked inside the transaction, before anything is
    /// renamed: when it answers true (the app removed what the download was for, after its
    /// last chance to cancel), nothing is committed and the call throws `layerRemoved`.
    ///
    /// A blob new to `blobs/` is linked there from its claim (``BlobClaim``): its temp file
    /// renamed in `tmp/`, which keeps that name until the transaction has committed.
    func commit(
        _ staged: StagedBlob, tenant: TenantURL, document: String, layer: StagedLayer? = nil,
        requiring storedLayer: (key: String, name: String)? = nil,
        unlessWithdrawn withdrawn: (@Sendable () -> Bool)? = nil
    ) throws(StoreError) -> StoredPDF {
        let hash = staged.hash
        // The staged file's name in tmp/: its temp name, or its claim once renamed.
        var name = staged.temporaryPath
        // A claim file of its own, on a file system without hard links (see place(_:at:)).
        var claimFile: POSIXFile?
        var linked = false
        var committed = false
        defer {
            // Kept when the blob was linked into blobs/ and the transaction failed: the
            // claim, let go with the writer's lock, leads the sweep of dead temp files to
            // the orphan.
            if committed || !linked { try? FileSystem.remove(name) }
            staged.file.close()
            claimFile?.close()
        }
        // The writer's early sync step still under way (or a large blob's fsync), waited for
        // outside the write lock.
        try staged.settle()
        try layer?.settle()
        let path = layout.blobPath(hash)
        // Checked before the write lock is taken (it reads files); the transaction trusts
        // the result only while the stored file is still the one checked.
        let compared = FileSystem.identity(path)
        let storedIsIntact = compared != nil && isIntactCopy(of: staged, at: path)
        try Failpoint.check("blob.beforeCommit")
        if layer != nil { try Failpoint.check("layer.beforeCommit") }
        // Deferred durability in a cache: the files and their directory entries are synced
        // before the commit, so a power cut can only forget this ingest or download (orphans,
        // downloaded again), never leave a reference to a missing file. A downloaded layer
        // holds nothing the server does not; opening it syncs its row, or else its first
        // local change does (``LayerHooks/syncRecord``). A server's store holds originals
        // nobody can download again: synced.
        let durability: Catalog.Durability = isOrigin ? .synced : .deferred
        let (deduplicated, layerKeys) = try catalog.write(durability: durability) { db -> (Bool, [String]) in
            try Self.refuseIfWithdrawn(withdrawn, document: document, layer: layer?.layer ?? "")
            // The PDF of a layer stored already: only while that layer still is.
            try self.refuseIfRemoved(storedLayer, document: document, in: db)
            // The temp file's fsync runs while the rows are looked up; the rename below
            // waits for both. (A sealed blob's fsync is under way already: it is waited for
            // after the rename, beside the directories' fsyncs.)
            var documentRow: DocumentRecord?
            var recordedSize: Int64?
            var flagged = false
            let lookUp = { () throws(any Error) in
                documentRow = try self.catalog.documentRow(tenant, document, in: db)
                recordedSize = try Int64.fetchOne(
                    db.cachedStatement(sql: "SELECT storedSize FROM blob WHERE sha256 = ?"), arguments: [hash.hex])
                flagged =
                    try Bool.fetchOne(
                        db.cachedStatement(
                            sql: "SELECT EXISTS (SELECT 1 FROM document WHERE blobSha256 = ? AND corrupt)"),
                        arguments: [hash.hex]) ?? false
            }
            if staged.isSyncedAhead {
                try lookUp()
            } else {
                try Parallel.bothWaiting(lookUp, { () throws(any Error) in try staged.sync() })
            }
            guard let documentRow, let documentID = documentRow.id else {
                throw StoreError.noSuchDocument(tenant: tenant.string, document: document)
            }
            if let layer { try self.refuseExistingLayer(layer, documentID: documentID, in: db) }
            let directory = (path as NSString).deletingLastPathComponent
            let intact = recordedSize != nil && storedIsIntact && !flagged && FileSystem.identity(path) == compared
            // The blob's directories whose new entries must be durable before the commit.
            var directories: [String] = []
            var syncsParent = false
            if !intact {
                // A copy the catalog records (damaged, or flagged) is replaced, or moved to
                // quarantine, only once the bytes that replace it are durable, before anything
                // moves: its row is durable. A new name may come before they are, as nothing
                // commits before both.
                if staged.isSyncedAhead, recordedSize != nil { try staged.sync() }
                // A new fan-out directory is synced into its parent beside the insert below;
                // so is one found there that this handle has not synced yet (a commit that
                // died or failed may have made it without the parent's sync).
                let made = try FileSystem.makeDirectoryUnsynced(directory)
                syncsParent = made || !self.syncedFanOuts.withLock { $0.contains(directory) }
                if syncsParent { directories.append(self.layout.blobsDirectory) }
                // Names the blob in tmp/ until the commit: if this process dies before, a
                // prune finds the orphan from this claim without listing blobs/.
                let claim = BlobClaim.path(self.layout, hash: hash)
                try FileSystem.rename(name, claim)
                name = claim
                try Failpoint.check("blob.claimMade")
                if flagged, FileSystem.exists(path) {
                    // A reader found this copy bad: kept as evidence, linked into
                    // quarantine/; its path keeps it until the rename over it below.
                    _ = try self.layout.quarantine(StoreLayout.blobRelativePath(hash), keepingOriginal: true)
                }
                try Failpoint.check("blob.beforeRename")
                claimFile = try self.place(claim, at: path, hash: hash)
                if let claimFile { name = claimFile.path }
                linked = true
                try Failpoint.check("blob.afterRename")
                directories.append(directory)
            }
            let layerPath = try layer.map { (layer) throws(StoreError) in try self.placeLayer(layer, pdf: hash) }

            if layerPath != nil { directories.append(self.layout.layersDirectory) }
            // Here, every row the commit writes, then the fsyncs started ahead waited for
            // (the layer file's by recordLayer, the blob's last); beside them, the new
            // entries' directories, each synced on a thread of its own (a new fan-out
            // directory's entry in its parent and the blob's entry in it are independent).
            // All are durable before the transaction commits, whatever their order.
            var layerKeys: [String] = []
            let here = { () throws(any Error) in
                if !intact {
                    try self.recordBlob(staged, in: db)
                    if flagged {
                        try db.execute(
                            sql: "UPDATE document SET corrupt = 0 WHERE blobSha256 = ? AND corrupt",
                            arguments: [hash.hex])
                    }
                    try Failpoint.check("blob.afterInsert")
                }
                try self.catalog.adjustReference(from: documentRow.blobSha256, to: hash.hex, in: db)
                try db.cachedStatement(
                    sql: "UPDATE document SET blobSha256 = ?, corrupt = 0, lastUsedAt = ? WHERE id = ?"
                ).execute(arguments: [hash.hex, Date(), documentID])
                layerKeys = try self.catalog.layerKeys(ofDocument: documentID, in: db)
                if let layer, let layerPath {
                    try self.recordLayer(layer, at: layerPath, documentID: documentID, in: db)
                }
                if !intact, staged.isSyncedAhead { try staged.sync() }
            }
            if directories.isEmpty {
                try here()
            } else {
                try Parallel.bothWaiting(here, { () throws(any Error) in try FileSystem.syncDirectories(directories) })
                if syncsParent { self.syncedFanOuts.withLock { _ = $0.insert(directory) } }
            }
            try Failpoint.check("blob.beforeCommitTransaction")
            return (intact, layerKeys)
        }
        committed = true
        layer?.landed()
        try Failpoint.check("blob.afterCommit")
        if layer != nil { try Failpoint.check("layer.afterCommit") }
        // The layer committed with the PDF names it already; the document's others may not.
        recordPDF(hash, inLayers: layerKeys)
        return StoredPDF(sha256: hash, size: staged.size, storedSize: staged.storedSize, deduplicated: deduplicated)
    }

    /// Gives the blob named `claim` its name in `blobs/` at `path`, the claim staying:
    /// linked, or, over a copy found there (damaged, or an orphan), linked under a temp
    /// name that is then renamed over it, so that `path` never goes missing.
    ///
    /// On a file system without hard links (vfat, some network and FUSE mounts), as before
    /// claims were links: a claim file of its own is made, locked, and the blob renamed
    /// into place; that claim is returned, for the caller to remove after the commit.
    private func place(_ claim: String, at path: String, hash: BlobHash) throws(StoreError) -> POSIXFile? {
        do throws(StoreError) {
            if try FileSystem.link(claim, path) { return nil }
            let swap = layout.temporaryPath(suffix: ".blob")
            guard try FileSystem.link(claim, swap) else {
                throw StoreError.fromErrno("link", claim + " -> " + swap, EEXIST)
            }
            do {
                try Failpoint.check("blob.swapLinked")
                try FileSystem.rename(swap, path)
            } catch {
                try? FileSystem.remove(swap)
                throw error
            }
            return nil
        } catch .io(_, _, let code) where FileSystem.refusesLinks(code) {
            let own = try POSIXFile.createLocked(BlobClaim.path(layout, hash: hash))
            do {
                try FileSystem.rename(claim, path)
            } catch {
                own.removeAndClose()
                throw error
            }
            return own
        }
    }

    /// Whether the stored file at `path` holds the staged PDF intact: byte for byte the
    /// staged frame (the usual case, cheap), or else a frame of its own (written from a
    /// stream rather than a file, say) that decompresses and hashes to the same bytes.
    /// Any failure to read it counts as damage: the staged copy then replaces it.
    private func isIntactCopy(of staged: StagedBlob, at path: String) -> Bool {
        if (try? staged.hasSameBytes(as: path)) == true { return true }
        do {
            try BlobReader(layout: layout, hash: staged.hash).read(expectedSize: staged.size, verifyHash: true) { _ in }
            return true
        } catch {
            return false
        }
    }

    /// Records a blob just renamed into place, keeping the reference count of a row that
    /// pointed at a missing or damaged copy, and clearing any tombstone for its path.
    private func recordBlob(_ staged: StagedBlob, in db: Database) throws(StoreError) {
        do {
            try db.cachedStatement(sql: "DELETE FROM tombstone WHERE path = ?")
                .execute(arguments: [StoreLayout.blobRelativePath(staged.hash)])
            try db.cachedStatement(
                sql: """
                    INSERT INTO blob (sha256, size, storedSize, refCount, createdAt, lastVerifiedAt)
                    VALUES (?, ?, ?, 0, ?, NULL)
                    ON CONFLICT (sha256) DO UPDATE SET
                        size = excluded.size, storedSize = excluded.storedSize,
                        createdAt = excluded.createdAt, lastVerifiedAt = NULL
                    """
            ).execute(arguments: [staged.hash.hex, staged.size, staged.storedSize, Date()])
        } catch {
            throw Catalog.map(error, path: catalog.path)
        }
    }

    /// Tells the document's layer files which PDF they belong to (for catalog rebuilds),
    /// after the commit that made it theirs: each layer on its own, so one that cannot be
    /// written (removed meanwhile, damaged, busy) leaves the others told. What is not told
    /// costs only a rebuild's choice of PDF for that layer's document.
    func recordPDF(_ hash: BlobHash, inLayers keys: [String]) {
        for key in keys {
            guard let layer = try? openHookedLayer(key: key) else { continue }
            defer { layer.close() }
            if (try? layer.metadata().pdfSHA256) != hash { try? layer.setPDF(hash) }
        }
    }

    /// Points `document` at a PDF already stored, creating the document when missing;
    /// false when no such PDF is stored. A server uses it to link its documents again
    /// after its store's catalog was rebuilt (a rebuild knows PDFs, not the documents
    /// without layers that used them).
    ///
    /// ```swift
    /// try pdfs.attachPDF(hash, tenant: tenant, document: "report")
    /// ```
    @discardableResult
    public func attachPDF(_ hash: BlobHash, tenant: TenantURL, document: String) throws(StoreError) -> Bool {
        try Identifier.validate(document, what: "document identifier")
        return try catalog.write { db in
            guard try BlobRecord.exists(db, key: hash.hex) else { return false }
            let row = try self.catalog.documentRow(tenant, document, in: db)
            guard row.blobSha256 != hash.hex else { return true }
            try self.catalog.adjustReference(from: row.blobSha256, to: hash.hex, in: db)
            try db.execute(
                sql: "UPDATE document SET blobSha256 = ?, corrupt = 0 WHERE id = ?", arguments: [hash.hex, row.id])
            return true
        }
    }
}
