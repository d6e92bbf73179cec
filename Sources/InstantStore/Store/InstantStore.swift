import Foundation
import GRDB

/// A content-addressed, reference-counted store of PDFs and annotation layers for many
/// servers (tenants) at once.
///
/// Every PDF is stored once, zstd-compressed and named by its SHA-256, whichever tenants
/// and documents use it. Each layer's annotations live in a SQLite file of their own. A
/// SQLite catalog ties them together and counts references; several processes may use
/// one store at once, and any of them may be killed at any point without losing a
/// reference or a local change (see docs/STORE.md).
///
/// ```swift
/// let store = try InstantStore(root: StoreLayout.defaultRoot())
/// let tenant = try TenantURL("https://documents.example.com")
/// let pdf = try store.ingestPDF(tenant: tenant, document: "report", from: fileURL)
/// let layer = try store.createLayer(tenant: tenant, document: "report", layer: "", userID: "alice")
/// try layer.create(id: "note-1", content: noteJSON)
/// ```
public final class InstantStore: Sendable {
    /// Where the store lives.
    public let layout: StoreLayout
    let catalog: Catalog

    /// Opens the store at `root`, creating it if needed.
    public init(root: URL) throws(StoreError) {
        layout = StoreLayout(root: root)
        try layout.createDirectories()
        catalog = try Catalog(path: layout.catalogPath)
    }

    /// The store's root directory.
    public var root: URL { layout.root }

    // MARK: Layers

    /// Creates a layer from a server snapshot. The layer file is written completely in
    /// `tmp/` and appears in the catalog, with its document, in one transaction.
    @discardableResult
    public func createLayer(
        tenant: TenantURL, document: String, layer: String, userID: String? = nil,
        snapshot: [ServerRecord] = [], revision: Int64 = 0
    ) throws(StoreError) -> LayerDatabase {
        try Identifier.validate(document, what: "document identifier")
        try Identifier.validate(layer, what: "layer name")
        if let userID { try Identifier.validate(userID, what: "user id") }
        let staging = try LayerStaging(layout)
        defer { staging.cleanUp() }
        let key = staging.key
        let tempPath = staging.path
        let pdf = try catalog.read { db -> String? in
            guard let tenantID = try catalog.tenantID(tenant, create: false, in: db) else { return nil }
            return try catalog.document(tenantID, document, in: db)?.blobSha256
        }
        let metadata = LayerMetadata(
            tenant: tenant, documentIdentifier: document, layerName: layer,
            pdfSHA256: pdf.flatMap { BlobHash(hex: $0) }, userID: userID, lastServerRevision: revision)
        try LayerDatabase.create(at: tempPath, key: key, metadata: metadata, records: snapshot)
        try Failpoint.check("layer.beforeCommit")
        try catalog.write { db in
            let now = Date()
            var documentRow = try self.documentRow(tenant, document, in: db)
            guard let documentID = documentRow.id else {
                throw StoreError.noSuchDocument(tenant: tenant.string, document: document)
            }
            if try self.catalog.layer(documentID, layer, in: db) != nil {
                throw StoreError.layerAlreadyExists(document: document, layer: layer)
            }
            let path = self.layout.layerPath(key: key)
            try FileSystem.rename(tempPath, path)
            try Failpoint.check("layer.afterRename")
            try FileSystem.syncDirectory(self.layout.layersDirectory)
            var row = LayerRecord(
                id: nil, documentId: documentID, name: layer.storedBytes, key: key, userId: userID?.storedBytes,
                corrupt: false, createdAt: now, lastUsedAt: now, annotationCount: Int64(snapshot.count),
                pendingCount: 0, bytes: (try FileSystem.fileSize(path)) ?? 0)
            try row.insert(db)
            documentRow.layerCount += 1
            documentRow.lastUsedAt = now
            try documentRow.update(db)
            try Failpoint.check("layer.afterInsert")
        }
        try Failpoint.check("layer.afterCommit")
        return try openLayer(key: key)
    }

    /// Opens a stored layer for reading and changing its annotations.
    public func openLayer(tenant: TenantURL, document: String, layer: String) throws(StoreError) -> LayerDatabase {
        let row = try catalog.read { db -> LayerRecord? in
            guard let tenantID = try catalog.tenantID(tenant, create: false, in: db),
                let documentRow = try catalog.document(tenantID, document, in: db), let id = documentRow.id
            else { return nil }
            return try catalog.layer(id, layer, in: db)
        }
        guard let row else { throw .noSuchLayer(tenant: tenant.string, document: document, layer: layer) }
        let database = try openLayer(key: row.key)
        let metadata = try database.metadata()
        guard metadata.tenant == tenant, metadata.documentIdentifier == document, metadata.layerName == layer else {
            throw .corruptLayer(key: row.key, reason: "its meta row names another layer than the catalog")
        }
        try? catalog.write { db in
            try db.execute(sql: "UPDATE layer SET lastUsedAt = ? WHERE key = ?", arguments: [Date(), row.key])
        }
        return database
    }

    /// Whether the layer is stored (its state in the catalog; the file is checked on open).
    public func hasLayer(tenant: TenantURL, document: String, layer: String) throws(StoreError) -> Bool {
        try catalog.read { db in
            guard let tenantID = try catalog.tenantID(tenant, create: false, in: db),
                let documentRow = try catalog.document(tenantID, document, in: db), let id = documentRow.id
            else { return false }
            return try catalog.layer(id, layer, in: db) != nil
        }
    }

    func openLayer(key: String) throws(StoreError) -> LayerDatabase {
        let catalog = self.catalog
        return try LayerDatabase(path: layout.layerPath(key: key), key: key) { summary in
            try? catalog.write { db in
                try db.execute(
                    sql:
                        "UPDATE layer SET annotationCount = ?, pendingCount = ?, bytes = ?, lastUsedAt = ? WHERE key = ?",
                    arguments: [summary.annotationCount, summary.pendingCount, summary.bytes, Date(), key])
            }
        }
    }

    /// The document's row, created (with its tenant) when missing.
    func documentRow(_ tenant: TenantURL, _ identifier: String, in db: Database) throws -> DocumentRecord {
        guard let tenantID = try catalog.tenantID(tenant, create: true, in: db) else {
            throw StoreError.invalidServerURL(tenant.string)
        }
        if let row = try catalog.document(tenantID, identifier, in: db) { return row }
        let now = Date()
        var row = DocumentRecord(
            id: nil, tenantId: tenantID, identifier: identifier.storedBytes, blobSha256: nil, corrupt: false,
            layerCount: 0, createdAt: now, lastUsedAt: now)
        try row.insert(db)
        return row
    }

    // MARK: Tombstones

    /// Unlinks the files whose rows earlier transactions deleted. Runs in a write
    /// transaction of its own: no row claims a tombstoned path, and a writer that
    /// re-creates one removes its tombstone in the same transaction as its rename.
    func sweepTombstones() throws(StoreError) {
        try catalog.write { db in
            for tombstone in try TombstoneRecord.fetchAll(db) {
                let path = self.layout.absolute(tombstone.path)
                for suffix in ["", "-wal", "-shm"] { try FileSystem.remove(path + suffix) }
                try Failpoint.check("gc.afterUnlink")
                try tombstone.delete(db)
            }
        }
    }
}
