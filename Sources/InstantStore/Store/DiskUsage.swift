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
            let lines = try Row.fetchAll(db, sql: byDocument ? Self.usageByDocument : Self.usageByTenant).map { row in
                let identifier: StoredText? = row[1]
                return UsageLine(
                    tenant: TenantURL(normalized: row[0]), documentIdentifier: identifier?.string,
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

    /// One line per tenant. Each part is one pass whose joins all go through an index; the
    /// parts meet in one GROUP BY (joining per-tenant subtotals to each other instead is
    /// what SQLite cannot index). A PDF is unique to a tenant when every document using it
    /// belongs to that tenant: the lowest and highest tenant among its documents agree. Only
    /// PDFs shared between tenants need the (tenant, PDF) pairs.
    static let usageByTenant = """
        WITH perPDF AS (
            SELECT document.blobSha256 AS sha256, MIN(document.tenantId) AS first, MAX(document.tenantId) AS last,
                   blob.storedSize AS storedSize, blob.size AS size
            FROM document JOIN blob ON blob.sha256 = document.blobSha256
            GROUP BY document.blobSha256),
        parts(tenantId, documents, layers, layerBytes, uniqueBytes, sharedBytes, logicalBytes) AS (
            SELECT tenantId, COUNT(*), SUM(layerCount), 0, 0, 0, 0 FROM document GROUP BY tenantId
            UNION ALL
            SELECT document.tenantId, 0, 0, SUM(layer.bytes), 0, 0, 0
            FROM layer JOIN document ON document.id = layer.documentId GROUP BY document.tenantId
            UNION ALL
            SELECT first, 0, 0, 0, SUM(storedSize), 0, SUM(size) FROM perPDF WHERE first = last GROUP BY first
            UNION ALL
            SELECT pairs.tenantId, 0, 0, 0, 0, SUM(blob.storedSize), SUM(blob.size)
            FROM (SELECT DISTINCT tenantId, blobSha256 FROM document
                  WHERE blobSha256 IN (SELECT sha256 FROM perPDF WHERE first != last)) AS pairs
            JOIN blob ON blob.sha256 = pairs.blobSha256 GROUP BY pairs.tenantId)
        SELECT tenant.url, NULL, SUM(documents), SUM(layers), SUM(layerBytes), SUM(uniqueBytes), SUM(sharedBytes),
               SUM(logicalBytes)
        FROM parts JOIN tenant ON tenant.id = parts.tenantId
        GROUP BY parts.tenantId ORDER BY tenant.url
        """

    /// One line per document, each value found through an index: the layers by document,
    /// and whether another document uses the same PDF (then it is shared).
    static let usageByDocument = """
        SELECT tenant.url, document.identifier, 1, document.layerCount,
               (SELECT COALESCE(SUM(bytes), 0) FROM layer WHERE layer.documentId = document.id),
               CASE WHEN document.shared THEN 0 ELSE COALESCE(blob.storedSize, 0) END,
               CASE WHEN document.shared THEN blob.storedSize ELSE 0 END,
               COALESCE(blob.size, 0)
        FROM (SELECT id, tenantId, identifier, layerCount, blobSha256,
                     EXISTS (SELECT 1 FROM document AS other
                             WHERE other.blobSha256 = document.blobSha256 AND other.id != document.id) AS shared
              FROM document) AS document
        JOIN tenant ON tenant.id = document.tenantId
        LEFT JOIN blob ON blob.sha256 = document.blobSha256
        ORDER BY tenant.url, document.identifier
        """

    /// Compressed bytes of the PDFs no document with a layer uses: what removing the
    /// unreferenced documents and then the zero-count PDFs frees.
    func reclaimableBytes(_ db: Database) throws -> Int64 {
        // Only candidates are checked: PDFs no document counts (the partial index
        // blob_unreferenced) and those of documents without layers. What
        // removeUnreferenced(tenant:) itself finds through the same reference counts.
        try Int64.fetchOne(
            db,
            sql: """
                SELECT COALESCE(SUM(storedSize), 0) FROM blob
                WHERE sha256 IN (
                    SELECT sha256 FROM blob WHERE refCount <= 0
                    UNION SELECT blobSha256 FROM document WHERE layerCount = 0 AND blobSha256 IS NOT NULL)
                AND NOT EXISTS (
                    SELECT 1 FROM document WHERE document.blobSha256 = blob.sha256 AND document.layerCount > 0)
                """) ?? 0
    }
}
