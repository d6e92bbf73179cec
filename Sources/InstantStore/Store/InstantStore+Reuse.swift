import Foundation
import GRDB

/// What a client asks before it downloads a PDF: does the store already hold these bytes,
/// intact? Then no byte moves twice.
extension InstantStore {
    /// The document's PDF, unless it is missing or flagged corrupt (a reader or verify
    /// found it damaged): a PDF the client can trust without downloading it again.
    public func intactPDF(tenant: TenantURL, document: String) throws(StoreError) -> StoredPDF? {
        try catalog.read { db -> StoredPDF? in
            guard let tenantID = try catalog.tenantID(tenant, create: false, in: db),
                let row = try catalog.document(tenantID, document, in: db), !row.corrupt, let sha = row.blobSha256,
                let hash = BlobHash(hex: sha), try !Self.isFlagged(sha, in: db),
                let blob = try BlobRecord.fetchOne(db, key: sha)
            else { return nil }
            return StoredPDF(sha256: hash, size: blob.size, storedSize: blob.storedSize, deduplicated: true)
        }
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
    public func attachIntactPDF(_ hash: BlobHash, tenant: TenantURL, document: String) throws(StoreError) -> Bool {
        try Identifier.validate(document, what: "document identifier")
        return try catalog.write { db in
            guard try BlobRecord.exists(db, key: hash.hex), try !Self.isFlagged(hash.hex, in: db) else { return false }
            let row = try self.catalog.documentRow(tenant, document, in: db)
            if row.blobSha256 == hash.hex { return !row.corrupt }
            try self.catalog.adjustReference(from: row.blobSha256, to: hash.hex, in: db)
            try db.execute(
                sql: "UPDATE document SET blobSha256 = ?, corrupt = 0 WHERE id = ?", arguments: [hash.hex, row.id])
            return true
        }
    }

    private static func isFlagged(_ sha: String, in db: Database) throws -> Bool {
        try Bool.fetchOne(
            db, sql: "SELECT EXISTS (SELECT 1 FROM document WHERE blobSha256 = ? AND corrupt)", arguments: [sha])
            ?? false
    }
}
