import Foundation
import GRDB

/// A layer stored on this machine, as listed by ``InstantStore/localDescriptors(tenant:)``.
public struct LocalDescriptor: Sendable, Equatable, Codable {
    public var tenant: TenantURL
    public var documentIdentifier: String
    public var layerName: String
    public var userID: String?
    public var annotationCount: Int64
    public var pendingChangeCount: Int64
    /// Bytes of the layer's database file.
    public var layerBytes: Int64
    /// The document's PDF, if downloaded.
    public var pdfSHA256: BlobHash?
    /// Bytes of the PDF on disk (compressed), 0 if not downloaded.
    public var pdfStoredBytes: Int64
    public var lastUsedAt: Date
    /// The layer or its document's PDF was found corrupt: the client reports it `invalid`.
    public var isCorrupted: Bool

    /// The layer's state at rest, in the client's terms: `invalid` when something of it
    /// is corrupt, `dirty` with changes not yet synced, `unknown` while its PDF is not
    /// downloaded, `clean` otherwise. (`sendingChanges` and `receivingChanges` exist only
    /// while a client is syncing.)
    public var state: LocalState {
        if isCorrupted { return .invalid }
        if pendingChangeCount > 0 { return .dirty }
        return pdfSHA256 == nil ? .unknown : .clean
    }
}

/// The state of a stored layer when no client is syncing it. See ``LocalDescriptor/state``.
public enum LocalState: String, Sendable, Codable, CaseIterable {
    case unknown, clean, dirty, invalid
}

/// A document in the store, as listed by ``InstantStore/cacheEntries(tenant:)``.
public struct CacheEntry: Sendable, Equatable, Codable {
    public var tenant: TenantURL
    public var documentIdentifier: String
    /// The compressed PDF plus all its layers, in bytes.
    public var overallDiskSpace: Int64
    public var downloadedLayerNames: [String]
    public var pdfSHA256: BlobHash?
    /// Something of it failed a check: it must be purged or repaired.
    public var isCorrupted: Bool
    /// No layer uses it: it may be purged.
    public var isUnreferenced: Bool
}

extension InstantStore {
    /// Every stored layer (of one tenant, or of all), oldest use first. Reads the catalog
    /// only, so it stays fast with 100,000 layers (see ``LocalDescriptorScan``).
    public func localDescriptors(tenant: TenantURL? = nil) throws(StoreError) -> [LocalDescriptor] {
        try catalog.read { db in
            var tenantID: Int64?
            if let tenant {
                tenantID = try catalog.tenantID(tenant, create: false, in: db)
                if tenantID == nil { return [] }
            }
            return try LocalDescriptorScan.run(db, tenantID: tenantID)
        }
    }

    /// One stored layer, looked up by its keys (what a client asks on every state read).
    public func localDescriptor(tenant: TenantURL, document: String, layer: String) throws(StoreError)
        -> LocalDescriptor?
    {
        // One statement, its columns read in place: this runs before every download.
        try catalog.read { db -> LocalDescriptor? in
            try db.firstRow(
                """
                SELECT layer.userId, layer.annotationCount, layer.pendingCount, layer.bytes,
                       \(Catalog.milliseconds("layer.lastUsedAt")), layer.corrupt OR document.corrupt,
                       document.blobSha256, blob.storedSize
                FROM tenant
                JOIN document ON document.tenantId = tenant.id AND document.identifier = ?
                JOIN layer ON layer.documentId = document.id AND layer.name = ?
                LEFT JOIN blob ON blob.sha256 = document.blobSha256
                WHERE tenant.url = ?
                """, .blob(document.storedBytes), .blob(layer.storedBytes), .text(tenant.string)
            ) { row in
                LocalDescriptor(
                    tenant: tenant, documentIdentifier: document, layerName: layer, userID: row.optionalString(0),
                    annotationCount: row.int64(1), pendingChangeCount: row.int64(2), layerBytes: row.int64(3),
                    pdfSHA256: row.blobHash(6), pdfStoredBytes: row.int64(7),
                    lastUsedAt: Date(timeIntervalSince1970: Double(row.int64(4)) / 1000), isCorrupted: row.bool(5))
            }
        }
    }

    /// Every stored document (of one tenant, or of all) with its disk space and layers.
    public func cacheEntries(tenant: TenantURL? = nil) throws(StoreError) -> [CacheEntry] {
        try catalog.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT tenant.url, document.identifier, document.blobSha256, COALESCE(blob.storedSize, 0),
                           document.corrupt, document.layerCount,
                           (SELECT COALESCE(SUM(bytes), 0) FROM layer WHERE layer.documentId = document.id),
                           (SELECT COUNT(*) FROM layer WHERE layer.documentId = document.id AND layer.corrupt),
                           document.id
                    FROM document JOIN tenant ON tenant.id = document.tenantId
                    LEFT JOIN blob ON blob.sha256 = document.blobSha256
                    \(tenant == nil ? "" : "WHERE tenant.url = ?")
                    ORDER BY tenant.url, document.identifier
                    """, arguments: StatementArguments(tenant.map { [$0.string] } ?? []))
            return try rows.map { row in
                let names = try Data.fetchAll(
                    db, sql: "SELECT name FROM layer WHERE documentId = ? ORDER BY name", arguments: [row[8] as Int64])
                let pdf: String? = row[2]
                let storedSize: Int64 = row[3]
                let layerBytes: Int64 = row[6]
                let corruptLayers: Int64 = row[7]
                let layerCount: Int64 = row[5]
                return CacheEntry(
                    tenant: TenantURL(normalized: row[0]), documentIdentifier: String(storedBytes: row[1]),
                    overallDiskSpace: storedSize + layerBytes,
                    downloadedLayerNames: names.map { String(storedBytes: $0) },
                    pdfSHA256: pdf.flatMap { BlobHash(hex: $0) }, isCorrupted: row[4] || corruptLayers > 0,
                    isUnreferenced: layerCount == 0)
            }
        }
    }
}
