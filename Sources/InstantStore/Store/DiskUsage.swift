import Foundation
import GRDB

/// Bytes used by one tenant or one document.
public struct UsageLine: Sendable, Equatable, Codable {
    /// The tenant, and for a per-document line the document.
    public var tenant: TenantURL
    public var documentIdentifier: String?
    public var documents: Int64
    public var layers: Int64
    /// Layer database bytes.
    public var layerBytes: Int64
    /// Compressed PDF bytes used only here.
    public var uniqueStoredBytes: Int64
    /// Compressed PDF bytes also used elsewhere (counted in full on every line that uses them).
    public var sharedStoredBytes: Int64
    /// Uncompressed PDF bytes (each PDF counted once per line).
    public var logicalPDFBytes: Int64

    /// Disk bytes this line uses, counting shared PDFs in full.
    public var storedBytes: Int64 { layerBytes + uniqueStoredBytes + sharedStoredBytes }
}

/// Where the store's bytes go. See ``InstantStore/diskUsage(byDocument:)``.
public struct DiskUsage: Sendable, Equatable, Codable {
    /// One line per tenant (or per document).
    public var lines: [UsageLine]
    /// Disk bytes of the whole store: every PDF once, plus every layer.
    public var totalStoredBytes: Int64
    /// Uncompressed bytes of every PDF once, plus every layer.
    public var totalLogicalBytes: Int64
    /// What ``InstantStore/removeUnreferenced(tenant:)`` would free now.
    public var reclaimableBytes: Int64
}

extension InstantStore {
    /// Bytes by tenant (or by document): unique vs shared, on disk vs logical, and what
    /// removing unreferenced entries would free. Reads the catalog only.
    public func diskUsage(byDocument: Bool = false) throws(StoreError) -> DiskUsage {
        try catalog.read { db in
            let group = byDocument ? "document.id" : "tenant.id"
            // A PDF is unique to a line when every document using it belongs to that line.
            // Each total is one GROUP BY pass (no per-line subqueries: 100,000 documents
            // grouped by document stay linear).
            let lines = try Row.fetchAll(
                db,
                sql: """
                    WITH docs AS (
                        SELECT document.id, document.blobSha256, document.layerCount, document.identifier,
                               tenant.url AS url, \(group) AS grp
                        FROM document JOIN tenant ON tenant.id = document.tenantId),
                    layerBytes AS (SELECT documentId, SUM(bytes) AS bytes FROM layer GROUP BY documentId),
                    pdfs AS (SELECT DISTINCT grp, blobSha256 FROM docs WHERE blobSha256 IS NOT NULL),
                    owners AS (SELECT blobSha256, COUNT(*) AS groups FROM pdfs GROUP BY blobSha256),
                    pdfTotals AS (
                        SELECT pdfs.grp AS grp,
                               SUM(CASE WHEN owners.groups = 1 THEN blob.storedSize ELSE 0 END) AS uniqueBytes,
                               SUM(CASE WHEN owners.groups > 1 THEN blob.storedSize ELSE 0 END) AS sharedBytes,
                               SUM(blob.size) AS logicalBytes
                        FROM pdfs JOIN blob ON blob.sha256 = pdfs.blobSha256
                        JOIN owners ON owners.blobSha256 = pdfs.blobSha256 GROUP BY pdfs.grp),
                    docTotals AS (
                        SELECT docs.grp AS grp, MIN(docs.url) AS url, MIN(docs.identifier) AS identifier,
                               COUNT(*) AS documents, COALESCE(SUM(docs.layerCount), 0) AS layers,
                               COALESCE(SUM(layerBytes.bytes), 0) AS layerBytes
                        FROM docs LEFT JOIN layerBytes ON layerBytes.documentId = docs.id GROUP BY docs.grp)
                    SELECT docTotals.url, \(byDocument ? "docTotals.identifier" : "NULL"), documents, layers,
                           layerBytes, COALESCE(uniqueBytes, 0), COALESCE(sharedBytes, 0), COALESCE(logicalBytes, 0)
                    FROM docTotals LEFT JOIN pdfTotals ON pdfTotals.grp = docTotals.grp
                    ORDER BY docTotals.url, docTotals.identifier
                    """
            ).map { row in
                let identifier: Data? = row[1]
                return UsageLine(
                    tenant: TenantURL(normalized: row[0]),
                    documentIdentifier: identifier.map { String(storedBytes: $0) },
                    documents: row[2], layers: row[3], layerBytes: row[4], uniqueStoredBytes: row[5],
                    sharedStoredBytes: row[6], logicalPDFBytes: row[7])
            }
            let totals = try Row.fetchOne(
                db,
                sql: """
                    SELECT (SELECT COALESCE(SUM(storedSize), 0) FROM blob), (SELECT COALESCE(SUM(size), 0) FROM blob),
                           (SELECT COALESCE(SUM(bytes), 0) FROM layer)
                    """)
            let stored: Int64 = totals?[0] ?? 0
            let logical: Int64 = totals?[1] ?? 0
            let layerBytes: Int64 = totals?[2] ?? 0
            return DiskUsage(
                lines: lines, totalStoredBytes: stored + layerBytes, totalLogicalBytes: logical + layerBytes,
                reclaimableBytes: try reclaimableBytes(db))
        }
    }

    /// Compressed bytes of the PDFs no document with a layer uses: what removing the
    /// unreferenced documents and then the zero-count PDFs frees.
    func reclaimableBytes(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(
            db,
            sql: """
                SELECT COALESCE(SUM(storedSize), 0) FROM blob WHERE NOT EXISTS (
                    SELECT 1 FROM document WHERE document.blobSha256 = blob.sha256 AND document.layerCount > 0)
                """) ?? 0
    }
}
