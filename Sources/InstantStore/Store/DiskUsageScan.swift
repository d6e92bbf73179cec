import Foundation
import GRDB

/// How ``InstantStore/diskUsage(byDocument:)`` adds up 100,000 documents in well under
/// 300 ms: the tenant, document, layer and PDF tables each read once, front to back, and
/// joined in memory.
///
/// In SQL, telling unique from shared PDFs meant walking documents in hash order and
/// fetching each one's tenant at random: 300 ms of B-tree descents on a store whose
/// hashes and tenants are as mixed as real ones. Here:
///
/// 1. each document adds to its line (tenant or document) and records, per PDF, the first
///    line that uses it, whether another line does too, and whether a document with
///    layers does;
/// 2. each layer adds its bytes to its document's line;
/// 3. each PDF adds to the totals, to its one line's unique bytes, or is left for step 4,
///    and counts as reclaimable when no document with layers uses it (or, used by no
///    document, when its reference count says so: what ``InstantStore/removeUnreferenced(tenant:)``
///    goes by);
/// 4. each (line, PDF) pair of a shared PDF adds it to that line once.
enum DiskUsageScan {
    /// What the scan knows of one PDF from the documents that use it.
    private struct PDFUse {
        var line: Int
        var shared = false
        var usedByLayers = false
        var storedSize: Int64 = 0
        var size: Int64 = 0
    }

    private struct Pair: Hashable {
        var line: Int
        var pdf: BlobHash
    }

    static func run(_ db: Database, byDocument: Bool) throws -> DiskUsage {
        let tenants = try Catalog.tenantURLs(in: db)

        var lines: [UsageLine] = []
        var lineOfTenant: [Int64: Int] = [:]
        var lineOfDocument = RowIDMap<Int>(try RowIDs.of("document", in: db))
        var pdfs: [BlobHash: PDFUse] = [:]
        var documentPDFs: [Pair] = []
        try db.scan(
            "SELECT id, tenantId, blobSha256, layerCount\(byDocument ? ", identifier" : "") FROM document ORDER BY id"
        ) { row in
            let tenantID = row.int64(1)
            guard let tenant = tenants[tenantID] else { return }  // one snapshot: cannot happen
            let line: Int
            if !byDocument, let existing = lineOfTenant[tenantID] {
                line = existing
            } else {
                line = lines.count
                if !byDocument { lineOfTenant[tenantID] = line }
                lines.append(
                    UsageLine(
                        tenant: tenant, documentIdentifier: byDocument ? row.string(4) : nil, documents: 0, layers: 0,
                        layerBytes: 0, uniqueStoredBytes: 0, sharedStoredBytes: 0, logicalPDFBytes: 0))
            }
            let layers = row.int64(3)
            lines[line].documents += 1
            lines[line].layers += layers
            lineOfDocument[row.int64(0)] = line
            guard let pdf = row.blobHash(2) else { return }
            documentPDFs.append(Pair(line: line, pdf: pdf))
            if var use = pdfs[pdf] {
                use.shared = use.shared || use.line != line
                use.usedByLayers = use.usedByLayers || layers > 0
                pdfs[pdf] = use
            } else {
                pdfs[pdf] = PDFUse(line: line, usedByLayers: layers > 0)
            }
        }

        var layerBytes: Int64 = 0
        try db.scan("SELECT documentId, bytes FROM layer") { row in
            let bytes = row.int64(1)
            layerBytes += bytes
            if let line = lineOfDocument[row.int64(0)] { lines[line].layerBytes += bytes }
        }

        var storedBytes: Int64 = 0
        var logicalBytes: Int64 = 0
        var reclaimable: Int64 = 0
        try db.scan("SELECT sha256, storedSize, size, refCount FROM blob") { row in
            let storedSize = row.int64(1)
            let size = row.int64(2)
            storedBytes += storedSize
            logicalBytes += size
            guard let pdf = row.blobHash(0), var use = pdfs[pdf] else {
                if row.int64(3) <= 0 { reclaimable += storedSize }
                return
            }
            if !use.usedByLayers { reclaimable += storedSize }
            if use.shared {
                use.storedSize = storedSize
                use.size = size
                pdfs[pdf] = use
            } else {
                lines[use.line].uniqueStoredBytes += storedSize
                lines[use.line].logicalPDFBytes += size
            }
        }

        var counted = Set<Pair>()
        for pair in documentPDFs {
            guard let use = pdfs[pair.pdf], use.shared, counted.insert(pair).inserted else { continue }
            lines[pair.line].sharedStoredBytes += use.storedSize
            lines[pair.line].logicalPDFBytes += use.size
        }

        // SQLite's order: by bytes, tenant first (its rank among the tenants' URLs).
        let ranks = Dictionary(
            uniqueKeysWithValues: tenants.values.sorted { $0.string.utf8.lexicographicallyPrecedes($1.string.utf8) }
                .enumerated().map { ($1, $0) })
        var order = lines.indices.map { (rank: ranks[lines[$0].tenant] ?? 0, index: $0) }
        order.sort { left, right in
            if left.rank != right.rank { return left.rank < right.rank }
            return (lines[left.index].documentIdentifier ?? "").utf8.lexicographicallyPrecedes(
                (lines[right.index].documentIdentifier ?? "").utf8)
        }
        return DiskUsage(
            lines: order.map { lines[$0.index] }, totalStoredBytes: storedBytes + layerBytes,
            totalLogicalBytes: logicalBytes + layerBytes, reclaimableBytes: reclaimable)
    }
}
