import Foundation
import GRDB

/// What a client asks before it downloads a PDF: does the store already hold these bytes,
/// intact? Then no byte moves twice.
extension InstantStore {
    /// The document's PDF, unless it is missing or flagged corrupt (a reader or verify
    /// found it damaged): a PDF the client can trust without downloading it again.
    public func intactPDF(tenant: TenantURL, document: String) throws(StoreError) -> StoredPDF? {
        // One statement, its columns read in place: this runs before every download.
        let found = try catalog.read { db in
            try db.firstRow(
                """
                SELECT blob.sha256, blob.size, blob.storedSize,
                       EXISTS (SELECT 1 FROM document flagged WHERE flagged.blobSha256 = blob.sha256 AND flagged.corrupt)
                FROM tenant
                JOIN document ON document.tenantId = tenant.id AND document.identifier = ? AND NOT document.corrupt
                JOIN blob ON blob.sha256 = document.blobSha256
                WHERE tenant.url = ?
                """, .blob(document.storedBytes), .text(tenant.string)
            ) { row in (hash: row.blobHash(0), size: row.int64(1), storedSize: row.int64(2), flagged: row.bool(3)) }
        }
        guard let found, let hash = found.hash, !found.flagged else { return nil }
        return StoredPDF(sha256: hash, size: found.size, storedSize: found.storedSize, deduplicated: true)
    }

    /// Points `document` at the stored PDF `hash` (creating the document when missing), if
    /// the store holds it and no document using it is flagged corrupt; false otherwise, and
    /// then nothing changed. For a PDF that another document or server already stored.
    ///
    /// ```swift
    /// if try !store.attachIntactPDF(etagHash, tenant: tenant, document: "report") {
    ///     // download it
    /// }
    /// ```
    ///
    /// `withdrawn`, when given, is asked inside the transaction: when it answers true (the
    /// app removed what the download was for meanwhile), nothing changes and the call throws
    /// `layerRemoved`, rather than bring the removed document back. So it does when
    /// `storedLayer` (the layer, stored already, whose PDF this is: a download of the PDF
    /// alone) is no longer stored, by whatever process removed it.
    public func attachIntactPDF(
        _ hash: BlobHash, tenant: TenantURL, document: String,
        forStoredLayer storedLayer: (key: String, name: String)? = nil,
        unlessWithdrawn withdrawn: (@Sendable () -> Bool)? = nil
    ) throws(StoreError) -> Bool {
        try Identifier.validate(document, what: "document identifier")
        let (attached, layerKeys) = try catalog.write { db -> (Bool, [String]) in
            try Self.refuseIfWithdrawn(withdrawn, document: document, layer: storedLayer?.name ?? "")
            try self.refuseIfRemoved(storedLayer, document: document, in: db)
            guard try BlobRecord.exists(db, key: hash.hex), try !Self.isFlagged(hash.hex, in: db) else {
                return (false, [])
            }
            let row = try self.catalog.documentRow(tenant, document, in: db)
            if row.blobSha256 == hash.hex { return (!row.corrupt, []) }
            try self.catalog.adjustReference(from: row.blobSha256, to: hash.hex, in: db)
            try db.execute(
                sql: "UPDATE document SET blobSha256 = ?, corrupt = 0 WHERE id = ?", arguments: [hash.hex, row.id])
            return (true, try row.id.map { id in try self.catalog.layerKeys(ofDocument: id, in: db) } ?? [])
        }
        // The document's layers name its PDF in their files too (what a catalog rebuild
        // reads), as after a commit: they still name the one it had.
        recordPDF(hash, inLayers: layerKeys)
        return attached
    }

    /// A stored layer's file key, and whether the layer is intact while its document's PDF
    /// is not (never downloaded with it, moved to quarantine by a repair, or flagged corrupt
    /// by a reader): then a download fetches the PDF alone (committed with
    /// ``PDFIngest/commit(forStoredLayer:tenant:document:layer:unlessWithdrawn:)``), and the
    /// layer, with its pending changes, stays as it is. Nil when the layer is not stored.
    public func storedLayerNeed(tenant: TenantURL, document: String, layer: String) throws(StoreError) -> (
        key: String, needsPDF: Bool
    )? {
        try catalog.read { db in
            try db.firstRow(
                """
                SELECT layer.key, NOT layer.corrupt AND (document.blobSha256 IS NULL OR document.corrupt
                       OR NOT EXISTS (SELECT 1 FROM blob WHERE blob.sha256 = document.blobSha256))
                FROM tenant
                JOIN document ON document.tenantId = tenant.id AND document.identifier = ?
                JOIN layer ON layer.documentId = document.id AND layer.name = ?
                WHERE tenant.url = ?
                """, .blob(document.storedBytes), .blob(layer.storedBytes), .text(tenant.string)
            ) { row in (key: row.string(0), needsPDF: row.bool(1)) }
        }
    }

    /// What a download of one of `tenant`'s documents may name in `If-None-Match` to learn,
    /// in the same request, whether the store already holds its PDF.
    ///
    /// Only this tenant's own PDFs may be named: another server must never see which PDFs
    /// the store holds for others. So the answer is ``PDFReuse/nothingStored`` when the
    /// store holds no PDF at all (nothing to reuse: download), ``PDFReuse/ownPDFs(_:)``
    /// when every stored PDF belongs to this tenant alone and there are at most `limit`,
    /// and ``PDFReuse/ask`` otherwise (learn the server's ETag first, with `If-None-Match: *`).
    /// (A server can still test for one PDF it knows, by naming its hash in the answer to
    /// `*` and seeing whether a download follows: what sharing PDFs across servers costs,
    /// docs/PROTOCOL.md.)
    public func pdfReuse(tenant: TenantURL, limit: Int = 32) throws(StoreError) -> PDFReuse {
        try catalog.read { db -> PDFReuse in
            // Cached statements: this runs before every download.
            let hashes = try String.fetchAll(
                db.cachedStatement(sql: "SELECT sha256 FROM blob LIMIT ?"), arguments: [limit + 1])
            if hashes.isEmpty { return .nothingStored }
            guard hashes.count <= limit, let tenantID = try catalog.tenantID(tenant, create: false, in: db) else {
                return .ask
            }
            // A PDF no document of this tenant uses (unreferenced, or only another's) is
            // not this tenant's to name: so every stored PDF must be used by one of this
            // tenant's documents, and by no other tenant's.
            let others = try Bool.fetchOne(
                db.cachedStatement(
                    sql: "SELECT EXISTS (SELECT 1 FROM document WHERE blobSha256 IS NOT NULL AND tenantId <> ?)"),
                arguments: [tenantID])
            let used = try Int.fetchOne(
                db.cachedStatement(
                    sql: "SELECT count(DISTINCT blobSha256) FROM document WHERE tenantId = ? AND blobSha256 IS NOT NULL"
                ),
                arguments: [tenantID])
            if others != false || used != hashes.count { return .ask }
            // The intact ones, in one statement (one per PDF cost a millisecond for 30).
            let intact = try String.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT sha256 FROM blob b
                        WHERE NOT EXISTS (SELECT 1 FROM document d WHERE d.blobSha256 = b.sha256 AND d.corrupt)
                        """))
            return .ownPDFs(intact.compactMap { BlobHash(hex: $0) })
        }
    }

    private static func isFlagged(_ sha: String, in db: Database) throws -> Bool {
        try Bool.fetchOne(
            db, sql: "SELECT EXISTS (SELECT 1 FROM document WHERE blobSha256 = ? AND corrupt)", arguments: [sha])
            ?? false
    }
}

/// How a download may learn whether the store already holds the PDF it is about to fetch
/// (``InstantStore/pdfReuse(tenant:limit:)``).
public enum PDFReuse: Sendable, Equatable {
    /// The store holds no PDF: fetch it.
    case nothingStored
    /// Every stored PDF is the tenant's own: name these (the intact ones) in `If-None-Match`;
    /// a `304` says which one it is.
    case ownPDFs([BlobHash])
    /// Learn the PDF's hash first (`If-None-Match: *`), then look for it in the store.
    case ask
}
