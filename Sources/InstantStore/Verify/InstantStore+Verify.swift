import Foundation
import GRDB

extension InstantStore {
    /// Checks the store and, with `repair`, fixes what it finds.
    ///
    /// Quick checks: the catalog's `integrity_check`; every blob file present, of its
    /// recorded size, with a well-formed frame header; reference counts recomputed from the
    /// references; orphan files, temp files of dead writers; every layer file present,
    /// passing `quick_check`, with a meta row matching the catalog. Deep checks add:
    /// every blob (or a sample) decompressed and hashed, every layer record decoded.
    ///
    /// Repair recomputes counts, moves corrupt files to `quarantine/` and flags their
    /// documents corrupt (the client reports them `invalid` until downloaded again),
    /// deletes orphans and dead temp files, and carries the pending changes of a corrupt
    /// layer into a fresh file. It never deletes a file that may hold a pending change
    /// (such files are adopted back or quarantined), never touches a file of a newer
    /// format, and changes nothing at all while the catalog fails its integrity check:
    /// its rows cannot be trusted, so it must be rebuilt first.
    ///
    /// The report ends with what `quarantine/` holds (``VerificationReport/quarantine``).
    /// A store on a read-only file system is checked as any (without recording when a PDF
    /// was last deep-checked, or flagging what it finds); a repair there throws
    /// ``StoreError/readOnlyStore(path:operation:)``.
    public func verify(_ options: VerifyOptions = VerifyOptions()) throws(StoreError) -> VerificationReport {
        if options.repair && isReadOnly { throw .readOnlyStore(path: layout.rootPath, operation: "repair the store") }
        // This process's own last writes are not drift: their summaries go in first.
        SummaryRefresher.flushAll()
        var report = VerificationReport()
        var options = options
        try checkCatalogIntegrity(&report)
        if !report.problems.isEmpty && options.repair {
            options.repair = false
            report.problems[0].detail +=
                "; nothing was repaired: rebuild the catalog first (verify --repair --rebuild-catalog)"
        }
        try checkBlobs(options, &report)
        try checkCounts(options, &report)
        try checkLayers(options, &report)
        // Repair is still on only when the catalog passed integrity_check above.
        try checkFiles(options, &report, catalogIsSound: true)
        report.quarantine = try quarantinedFiles()
        return report
    }

    private func checkCatalogIntegrity(_ report: inout VerificationReport) throws(StoreError) {
        let messages = try catalog.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
        if messages != ["ok"] {
            report.problems.append(
                Problem(
                    kind: .catalogIntegrity, subject: "catalog.sqlite",
                    detail: messages.prefix(5).joined(separator: "; ")))
        }
    }

    private func checkBlobs(_ options: VerifyOptions, _ report: inout VerificationReport) throws(StoreError) {
        let blobs = try catalog.read { db in
            try BlobRecord.fetchAll(
                db, sql: "SELECT * FROM blob ORDER BY lastVerifiedAt IS NOT NULL, lastVerifiedAt, sha256")
        }
        let deepCount =
            options.deep ? Int((Double(blobs.count) * min(max(options.sampleFraction, 0), 1)).rounded(.up)) : 0
        var bytes: Int64 = 0
        for (index, listed) in blobs.enumerated() {
            guard let hash = BlobHash(hex: listed.sha256) else { continue }
            let reader = BlobReader(layout: layout, hash: hash)
            try Failpoint.check("verify.blob.beforeCheck", path: reader.path)
            let identity = FileSystem.identity(reader.path)
            // The row as it is now, read after the file's identity: the list above may be
            // older than the blob stored again since (a prune, then a download of another
            // frame size), whose good file would not match the sizes listed. Gone since:
            // collected, nothing to check.
            guard let blob = try catalog.read({ db in try BlobRecord.fetchOne(db, key: listed.sha256) }) else {
                options.progress?(
                    VerifyProgress(phase: "blobs", completed: index + 1, total: blobs.count, bytes: bytes))
                continue
            }
            report.blobsChecked += 1
            do throws(StoreError) {
                try reader.checkHeader(expectedSize: blob.size, expectedStoredSize: blob.storedSize)
                if index < deepCount {
                    try reader.read(expectedSize: blob.size, verifyHash: true) { _ in }
                    report.blobsDeepChecked += 1
                    report.bytesDeepChecked += blob.size
                    bytes += blob.size
                    // Bookkeeping only (which blobs a sampled verify takes first): forgetting
                    // it in a power cut costs one more check, so no sync of its own. A
                    // read-only store keeps its order.
                    if !isReadOnly {
                        try catalog.write(durability: .deferred) { db in
                            try db.execute(
                                sql: "UPDATE blob SET lastVerifiedAt = ? WHERE sha256 = ?",
                                arguments: [Date(), blob.sha256])
                        }
                    }
                }
            } catch {
                if error.isUnreadableFile {
                    // Not readable now (no permission, an I/O error): reported, and left as it
                    // is. Nothing is quarantined or flagged on bytes that could not be read;
                    // the other blobs are still checked.
                    report.problems.append(
                        Problem(kind: .inaccessibleFile, subject: hash.hex, detail: "\(error); left untouched"))
                    options.progress?(
                        VerifyProgress(phase: "blobs", completed: index + 1, total: blobs.count, bytes: bytes))
                    continue
                }
                guard case .corruptBlob(_, let reason) = error else { throw error }
                if try wasCollected(hash, failure: error) { continue }
                let missing = !FileSystem.exists(reader.path)
                var problem = Problem(kind: missing ? .missingBlob : .corruptBlob, subject: hash.hex, detail: reason)
                let dealtWith =
                    options.repair
                    ? try quarantineBlob(hash, ifStill: identity, checked: blob)
                    : flagFoundCorrupt(hash, ifStill: identity, checked: blob)
                if options.repair { problem.fixed = dealtWith }
                if !dealtWith { problem.detail += "; replaced meanwhile, left alone" }
                report.problems.append(problem)
            }
            options.progress?(VerifyProgress(phase: "blobs", completed: index + 1, total: blobs.count, bytes: bytes))
        }
    }

    /// A finding, not a fix: the documents on a bad blob read `invalid`, and their next
    /// download fetches the PDF instead of trusting these bytes. Decided again in the
    /// transaction, as ``quarantineBlob(_:ifStill:checked:)``: a file or row that changed
    /// since the check (the PDF stored again) is not flagged, and false returned. Best
    /// effort: a failure to flag leaves the finding in the report.
    private func flagFoundCorrupt(_ hash: BlobHash, ifStill identity: FileIdentity?, checked: BlobRecord) -> Bool {
        do {
            return try catalog.write { db in
                guard try isStill(hash, identity, checked, in: db) else { return false }
                try db.execute(sql: "UPDATE document SET corrupt = 1 WHERE blobSha256 = ?", arguments: [hash.hex])
                return true
            }
        } catch {
            return true
        }
    }

    /// Whether the blob is, inside a write transaction, still what a check found bad: the
    /// same file (`identity`), and a row saying the sizes it was checked against.
    private func isStill(_ hash: BlobHash, _ identity: FileIdentity?, _ checked: BlobRecord, in db: Database) throws
        -> Bool
    {
        guard FileSystem.identity(layout.blobPath(hash)) == identity,
            let row = try BlobRecord.fetchOne(db, key: hash.hex)
        else { return false }
        return (row.size, row.storedSize) == (checked.size, checked.storedSize)
    }

    /// Sets a bad blob aside: its file to `quarantine/`, its row gone, and the documents
    /// that used it flagged corrupt with no PDF (so the next download fetches the PDF alone).
    ///
    /// Decided again inside the write transaction: when the file is no longer the one
    /// found bad (`identity`: an ingest replaced it with good bytes meanwhile), or the row
    /// no longer says what the file was checked against (`checked`: the blob stored again
    /// meanwhile, in a frame of another size), nothing is done and false returned.
    ///
    /// The file keeps its name in `blobs/` until the row is gone: it is linked into
    /// `quarantine/` (synced), its row deleted and its path tombstoned, in one transaction,
    /// and it is unlinked from `blobs/` by the tombstone after the commit. A kill or a
    /// failure at any step before leaves the row with its file, as invariant 1 needs. On a
    /// file system without hard links the file is copied instead, before the write lock
    /// (seconds, for a large PDF); a copy leaves the file's identity as it was, so the
    /// transaction still tells whether it is the file found bad.
    func quarantineBlob(_ hash: BlobHash, ifStill identity: FileIdentity?, checked: BlobRecord) throws(StoreError)
        -> Bool
    {
        let relative = StoreLayout.blobRelativePath(hash)
        var copied: String?
        var done = false
        while true {
            do {
                done = try catalog.write { [copied] db in
                    guard try self.isStill(hash, identity, checked, in: db) else { return false }
                    if identity != nil {
                        if copied == nil {
                            _ = try self.layout.quarantine(relative, keepingOriginal: true, copying: false)
                        }
                        try self.catalog.addTombstone(relative, in: db)
                    }
                    try db.execute(
                        sql: "UPDATE document SET blobSha256 = NULL, corrupt = 1 WHERE blobSha256 = ?",
                        arguments: [hash.hex])
                    try db.execute(sql: "DELETE FROM blob WHERE sha256 = ?", arguments: [hash.hex])
                    try Failpoint.check("verify.beforeBlobQuarantineCommit")
                    return true
                }
                break
            } catch .io(_, _, let code) where copied == nil && FileSystem.refusesLinks(code) {
                // No hard links here: a synced copy, outside the lock, then the transaction again.
                guard let made = try layout.quarantine(relative, keepingOriginal: true) else { return false }
                copied = made
            }
        }
        // Replaced meanwhile (healed by an ingest), or gone: the copy is not of what the
        // store holds now. (After a failure it stays: the commit may have happened.)
        if !done, let copied { try? FileSystem.remove(layout.quarantineDirectory + "/" + copied) }
        if done {
            // The row is gone and the copy is in quarantine/: a failure to unlink the old
            // name now (of this file or of any other tombstone) leaves it to the next sweep,
            // and must not end the verification that set it aside.
            do {
                try sweepTombstones()
            } catch {
                // Tombstoned, not referenced: garbage collection removes it later.
            }
        }
        return done
    }

    private func checkCounts(_ options: VerifyOptions, _ report: inout VerificationReport) throws(StoreError) {
        let drifts = try catalog.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT 'blob', sha256, refCount, (SELECT COUNT(*) FROM document WHERE blobSha256 = blob.sha256) AS actual
                    FROM blob WHERE refCount != actual
                    UNION ALL
                    SELECT 'document', CAST(id AS TEXT), layerCount, (SELECT COUNT(*) FROM layer WHERE documentId = document.id) AS actual
                    FROM document WHERE layerCount != actual
                    """)
        }
        for row in drifts {
            let isBlob = (row[0] as String) == "blob"
            let subject: String = row[1]
            let recorded: Int64 = row[2]
            let actual: Int64 = row[3]
            var problem = Problem(
                kind: isBlob ? .referenceCountDrift : .layerCountDrift,
                subject: isBlob ? subject : "document #\(subject)",
                detail: "recorded \(recorded), counted \(actual)")
            if options.repair {
                try catalog.write { db in
                    try db.execute(
                        sql: isBlob
                            ? "UPDATE blob SET refCount = (SELECT COUNT(*) FROM document WHERE blobSha256 = blob.sha256) WHERE sha256 = ?"
                            : "UPDATE document SET layerCount = (SELECT COUNT(*) FROM layer WHERE documentId = document.id) WHERE id = CAST(? AS INTEGER)",
                        arguments: [subject])
                }
                problem.fixed = true
            }
            report.problems.append(problem)
        }
    }
}
