import Foundation
import GRDB

/// The figures an operator of many machines watches, read from the catalog in one
/// snapshot (plus the quarantine directory). See ``InstantStore/metrics()``.
///
/// ```swift
/// let metrics = try store.metrics()
/// for tenant in metrics.tenants where tenant.pendingChanges > 0 {
///     print(tenant.tenant, tenant.pendingChanges, "changes not synced yet")
/// }
/// ```
public struct StoreMetrics: Sendable, Equatable, Codable {
    /// One tenant's share of the store.
    public struct Tenant: Sendable, Equatable, Codable {
        public var tenant: TenantURL
        public var documents: Int64
        public var layers: Int64
        public var annotations: Int64
        /// Local changes not yet accepted by the server, over all layers.
        public var pendingChanges: Int64
        /// Layers holding at least one pending change.
        public var layersWithPendingChanges: Int64
        /// Layer database bytes.
        public var layerBytes: Int64
        /// Disk bytes this tenant uses: layers, and its PDFs (a PDF shared with another
        /// tenant counted in full here too).
        public var storedBytes: Int64
        /// Layers found corrupt (they read `invalid` until removed and downloaded again).
        public var corruptLayers: Int64
        /// Documents whose PDF was found corrupt.
        public var corruptDocuments: Int64
    }

    /// Tenants in URL order.
    public var tenants: [Tenant]
    /// PDFs stored, each once however many documents use it.
    public var pdfs: Int64
    /// PDFs no document uses any more (prune and `removeUnreferencedCacheEntries` remove them).
    public var unreferencedPDFs: Int64
    /// Disk bytes of every PDF once, plus every layer.
    public var totalStoredBytes: Int64
    /// What removing unreferenced entries would free now.
    public var reclaimableBytes: Int64
    /// PDFs a deep verify has never read back.
    public var unverifiedPDFs: Int64
    /// When a deep verify last read a PDF back (nil: never).
    public var lastDeepVerifyAt: Date?
    /// The oldest of the PDFs' last deep verifications (every verified PDF was read back
    /// since then); nil when none was verified.
    public var oldestPDFVerificationAt: Date?
    /// Files moved aside by verify or repair, waiting for an operator.
    public var quarantinedFiles: Int64
    public var quarantinedBytes: Int64
    /// The disk `tmp/` takes: downloads in progress, and those a killed process cut short.
    public var temporaryBytes: Int64 = 0
}

extension InstantStore {
    /// Counts and bytes by tenant, corrupt and unverified entries, the quarantine: what
    /// `instantctl metrics` writes for Prometheus. Reads the catalog (one snapshot) and
    /// lists the quarantine; it writes nothing and takes no lock a writer waits for.
    public func metrics() throws(StoreError) -> StoreMetrics {
        var metrics = try catalog.read { db -> StoreMetrics in
            let usage = try DiskUsageScan.run(db, byDocument: false)
            let stored = Dictionary(usage.lines.map { ($0.tenant.string, $0.storedBytes) }, uniquingKeysWith: +)
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT tenant.url AS url,
                        (SELECT COUNT(*) FROM document WHERE tenantId = tenant.id) AS documents,
                        (SELECT COUNT(*) FROM document WHERE tenantId = tenant.id AND corrupt) AS corruptDocuments,
                        COUNT(layer.id) AS layers,
                        COALESCE(SUM(layer.annotationCount), 0) AS annotations,
                        COALESCE(SUM(layer.pendingCount), 0) AS pendingChanges,
                        COALESCE(SUM(layer.pendingCount > 0), 0) AS layersWithPendingChanges,
                        COALESCE(SUM(layer.bytes), 0) AS layerBytes,
                        COALESCE(SUM(layer.corrupt), 0) AS corruptLayers
                    FROM tenant
                    LEFT JOIN document ON document.tenantId = tenant.id
                    LEFT JOIN layer ON layer.documentId = document.id
                    GROUP BY tenant.id
                    ORDER BY tenant.url
                    """)
            let tenants = rows.map { row -> StoreMetrics.Tenant in
                let url: String = row["url"]
                return StoreMetrics.Tenant(
                    tenant: TenantURL(normalized: url), documents: row["documents"], layers: row["layers"],
                    annotations: row["annotations"], pendingChanges: row["pendingChanges"],
                    layersWithPendingChanges: row["layersWithPendingChanges"], layerBytes: row["layerBytes"],
                    storedBytes: stored[url] ?? row["layerBytes"], corruptLayers: row["corruptLayers"],
                    corruptDocuments: row["corruptDocuments"])
            }
            let blobs = try Row.fetchOne(
                db,
                sql: """
                    SELECT COUNT(*) AS pdfs, COALESCE(SUM(refCount <= 0), 0) AS unreferenced,
                        COALESCE(SUM(lastVerifiedAt IS NULL), 0) AS unverified,
                        MAX(lastVerifiedAt) AS newest, MIN(lastVerifiedAt) AS oldest
                    FROM blob
                    """)
            return StoreMetrics(
                tenants: tenants, pdfs: blobs?["pdfs"] ?? 0, unreferencedPDFs: blobs?["unreferenced"] ?? 0,
                totalStoredBytes: usage.totalStoredBytes, reclaimableBytes: usage.reclaimableBytes,
                unverifiedPDFs: blobs?["unverified"] ?? 0, lastDeepVerifyAt: blobs?["newest"],
                oldestPDFVerificationAt: blobs?["oldest"], quarantinedFiles: 0, quarantinedBytes: 0)
        }
        let quarantined = try quarantinedFiles()
        metrics.quarantinedFiles = Int64(quarantined.count)
        metrics.quarantinedBytes = quarantined.reduce(0) { $0 + $1.bytes }
        metrics.temporaryBytes = temporaryBytes()
        return metrics
    }
}
