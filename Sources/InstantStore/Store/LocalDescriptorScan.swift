import Foundation
import GRDB

/// How ``InstantStore/localDescriptors(tenant:)`` reads 100,000 layers in a few hundred
/// milliseconds: three scans in table order joined in memory, then one sort.
///
/// A single SQL join ordered by last use visits the layer, document and PDF tables in a
/// random order, one B-tree descent into each per row; on a real store (last uses in any
/// order, random hashes) that was 600 ms. Here each table is read front to back:
///
/// 1. the PDFs' stored sizes, joined to their documents in hash order on both sides
///    (the `document_blob` index and the PDF table share that order);
/// 2. the documents, in table order, kept by id (``RowIDMap``);
/// 3. the layers, in table order, each completed from its document, then sorted by last
///    use (and id, as ties need an order).
///
/// Dates come as milliseconds from SQLite's own parser (``Catalog/milliseconds(_:)``) and
/// identifiers straight from SQLite's buffer (``Database/scan(_:arguments:_:)``).
enum LocalDescriptorScan {
    struct Document {
        var tenant: TenantURL
        var identifier: String
        var pdf: BlobHash?
        var pdfStoredBytes: Int64
        var corrupt: Bool
    }

    /// Every layer of the tenant with id `tenantID` (of all tenants when nil), oldest use
    /// first. Runs inside one read transaction: the three scans see one snapshot.
    static func run(_ db: Database, tenantID: Int64?) throws -> [LocalDescriptor] {
        let tenants = try Catalog.tenantURLs(in: db)
        let documentIDs = try RowIDs.of("document", in: db)
        var pdfBytes = RowIDMap<Int64>(documentIDs)
        try db.scan("SELECT document.id, blob.storedSize FROM document JOIN blob ON blob.sha256 = document.blobSha256")
        {
            pdfBytes[$0.int64(0)] = $0.int64(1)
        }

        var documents = RowIDMap<Document>(documentIDs)
        try db.scan(
            "SELECT id, tenantId, identifier, blobSha256, corrupt FROM document \(tenantID == nil ? "" : "WHERE tenantId = ?")",
            arguments: StatementArguments(tenantID.map { [$0] } ?? [])
        ) { row in
            let id = row.int64(0)
            guard let tenant = tenants[row.int64(1)] else { return }  // one snapshot: cannot happen
            documents[id] = Document(
                tenant: tenant, identifier: row.string(2), pdf: row.blobHash(3),
                pdfStoredBytes: pdfBytes[id] ?? 0, corrupt: row.bool(4))
        }

        var descriptors: [LocalDescriptor] = []
        var order: [(milliseconds: Int64, index: Int)] = []
        let capacity = try Int.fetchOne(db, sql: "SELECT MAX(id) FROM layer") ?? 0
        descriptors.reserveCapacity(capacity)
        order.reserveCapacity(capacity)
        try db.scan(
            """
            SELECT id, documentId, name, userId, annotationCount, pendingCount, bytes,
                   \(Catalog.milliseconds("lastUsedAt")), corrupt
            FROM layer ORDER BY id
            """
        ) { row in
            guard let document = documents[row.int64(1)] else { return }  // another tenant's
            let milliseconds = row.int64(7)
            order.append((milliseconds, descriptors.count))
            descriptors.append(
                LocalDescriptor(
                    tenant: document.tenant, documentIdentifier: document.identifier, layerName: row.string(2),
                    userID: row.optionalString(3), annotationCount: row.int64(4), pendingChangeCount: row.int64(5),
                    layerBytes: row.int64(6), pdfSHA256: document.pdf, pdfStoredBytes: document.pdfStoredBytes,
                    lastUsedAt: Date(timeIntervalSince1970: Double(milliseconds) / 1000),
                    isCorrupted: row.bool(8) || document.corrupt))
        }
        // Layers came in id order, and ties in last use stay in id order.
        order.sort { ($0.milliseconds, $0.index) < ($1.milliseconds, $1.index) }
        return order.map { descriptors[$0.index] }
    }
}
