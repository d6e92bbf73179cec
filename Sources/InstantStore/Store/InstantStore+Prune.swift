import Foundation
import GRDB

/// What ``InstantStore/prune(_:)`` may remove.
public struct PruneOptions: Sendable, Equatable {
    /// Report what would be removed, change nothing.
    public var dryRun = false
    /// Evict least-recently-used clean layers (and then their unreferenced documents and
    /// PDFs) until the whole store is at most this many bytes on disk.
    public var maxSize: Int64?
    /// Evict clean layers not used for this long.
    public var olderThan: TimeInterval?
    /// Only this tenant's layers and documents are candidates.
    public var tenant: TenantURL?
    /// The time ages are measured from.
    public var now = Date()

    public init(
        dryRun: Bool = false, maxSize: Int64? = nil, olderThan: TimeInterval? = nil, tenant: TenantURL? = nil
    ) {
        self.dryRun = dryRun
        self.maxSize = maxSize
        self.olderThan = olderThan
        self.tenant = tenant
    }
}

/// What a prune removed (or, in a dry run, would remove).
public struct PruneReport: Sendable, Equatable, Codable {
    public var removed: RemovalReport
    public var dryRun: Bool
    /// Disk bytes of the store before, and after (or, in a dry run, after it would have run).
    public var sizeBefore: Int64
    public var sizeAfter: Int64
}

extension InstantStore {
    /// Sweeps what dead writers left (temp files, and the orphans their claims name: see
    /// ``RemovalReport/swept``), then removes unreferenced entries, then clean layers past
    /// the age limit, then the least-recently-used clean layers while the store is over
    /// the size budget. A layer with pending changes is never removed, whatever its age or
    /// size, nor one whose file cannot be opened to check (it is listed as skipped).
    ///
    /// Refused with ``StoreError/originStore(path:)`` in a server's store.
    ///
    /// ```swift
    /// let report = try store.prune(PruneOptions(dryRun: true, maxSize: 10 << 30))
    /// print(report.removed.bytesFreed)
    /// ```
    public func prune(_ options: PruneOptions = PruneOptions()) throws(StoreError) -> PruneReport {
        try checkRemovalAllowed()
        if !options.dryRun { try checkWritable("prune the store") }
        let sweep = try sweepAbandoned(dryRun: options.dryRun)
        let plan = try catalog.read { db in try PrunePlan(db, options: options) }
        // The store's size counts what the sweep frees (a download cut short can leave a
        // whole PDF in tmp/), so "freed" and "before → after" tell the same story.
        let sizeBefore = plan.sizeBefore + sweep.bytes
        guard !plan.isEmpty else {
            var removed = RemovalReport()
            removed.swept = sweep.paths
            removed.bytesFreed = sweep.bytes
            return PruneReport(
                removed: removed, dryRun: options.dryRun, sizeBefore: sizeBefore, sizeAfter: plan.sizeBefore)
        }
        if options.dryRun {
            var removed = try catalog.read { db in try plan.describe(db) }
            removed.swept = sweep.paths
            removed.bytesFreed += sweep.bytes
            return PruneReport(
                removed: removed, dryRun: true, sizeBefore: sizeBefore, sizeAfter: sizeBefore - removed.bytesFreed)
        }
        var total = RemovalReport()
        total.swept = sweep.paths
        total.bytesFreed = sweep.bytes
        // Batches keep each write transaction short; each re-checks what it removes.
        for batch in stride(from: 0, to: max(plan.layerIDs.count, 1), by: 200) {
            let ids = Array(plan.layerIDs[batch..<min(batch + 200, plan.layerIDs.count)])
            let removed = try remove { db, report, marked in
                let placeholders = ids.map { _ in "?" }.joined(separator: ",")
                let rows = ids.isEmpty ? [] : try self.layerRows(db, "layer.id IN (\(placeholders))", ids)
                // A layer used since the plan was made is no longer a candidate.
                let current = rows.filter { plan.lastUsed[$0.0.id ?? -1] == $0.0.lastUsedAt }
                try self.deleteLayers(
                    current, keeping: .refuse, in: db, report: &report, marked: marked, skipUnreadable: true)
                let documentIDs = Set(current.map(\.0.documentId)).union(batch == 0 ? plan.documentIDs : [])
                try self.deleteDocuments(Array(documentIDs), in: db, report: &report)
                try self.deleteUnreferencedBlobs(nil, in: db, report: &report)
            }
            total.merge(removed)
        }
        let after = try catalog.read { db in try PrunePlan.storedBytes(db) }
        return PruneReport(removed: total, dryRun: false, sizeBefore: sizeBefore, sizeAfter: after)
    }
}

/// The decision of a prune, made on one catalog snapshot: which layers and documents go,
/// simulating how references fall so that a PDF counts as freed only with its last user.
struct PrunePlan {
    var layerIDs: [Int64] = []
    var lastUsed: [Int64: Date] = [:]
    var documentIDs: Set<Int64> = []
    var blobs: Set<String> = []
    var sizeBefore: Int64 = 0

    var isEmpty: Bool { layerIDs.isEmpty && documentIDs.isEmpty && blobs.isEmpty }

    static func storedBytes(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(
            db,
            sql: "SELECT (SELECT COALESCE(SUM(storedSize), 0) FROM blob) + (SELECT COALESCE(SUM(bytes), 0) FROM layer)"
        ) ?? 0
    }

    init(_ db: Database, options: PruneOptions) throws {
        sizeBefore = try Self.storedBytes(db)
        let tenantFilter = options.tenant == nil ? "" : "AND tenant.url = ?"
        let tenantArguments = StatementArguments(options.tenant.map { [$0.string] } ?? [])
        let cutoff = options.olderThan.map { options.now.addingTimeInterval(-$0) }
        // Fast path: nothing unreferenced, nothing too old, within budget: no full scan.
        let unreferenced =
            try Bool.fetchOne(
                db,
                sql: """
                    SELECT EXISTS (SELECT 1 FROM document JOIN tenant ON tenant.id = document.tenantId
                                   WHERE document.layerCount = 0 \(tenantFilter))
                        OR EXISTS (SELECT 1 FROM blob WHERE refCount <= 0)
                    """, arguments: tenantArguments) ?? false
        let old =
            try cutoff.map { cutoff in
                try Bool.fetchOne(
                    db, sql: "SELECT EXISTS (SELECT 1 FROM layer WHERE lastUsedAt < ?)", arguments: [cutoff]) ?? false
            } ?? false
        let overBudget = options.maxSize.map { sizeBefore > $0 } ?? false
        guard unreferenced || old || overBudget else { return }

        // The full simulation.
        var blobSize: [String: Int64] = [:]
        var blobRefs: [String: Int64] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT sha256, storedSize, refCount FROM blob") {
            blobSize[row[0]] = row[1]
            blobRefs[row[0]] = row[2]
        }
        var documentBlob: [Int64: String] = [:]
        var documentLayers: [Int64: Int64] = [:]
        var candidateDocuments: Set<Int64> = []
        for row in try Row.fetchAll(
            db,
            sql: """
                SELECT document.id, document.blobSha256, document.layerCount, tenant.url FROM document
                JOIN tenant ON tenant.id = document.tenantId
                """)
        {
            let id: Int64 = row[0]
            documentBlob[id] = row[1]
            documentLayers[id] = row[2]
            if options.tenant == nil || options.tenant?.string == row[3] { candidateDocuments.insert(id) }
        }
        var size = sizeBefore
        var plan = self
        func dropDocument(_ id: Int64) {
            guard candidateDocuments.contains(id), documentLayers[id, default: 0] <= 0, !plan.documentIDs.contains(id)
            else { return }
            plan.documentIDs.insert(id)
            if let blob = documentBlob[id] { blobRefs[blob, default: 0] -= 1 }
        }
        func dropBlobs() {
            for (blob, references) in blobRefs where references <= 0 && !plan.blobs.contains(blob) {
                plan.blobs.insert(blob)
                size -= blobSize[blob] ?? 0
            }
        }
        for id in candidateDocuments { dropDocument(id) }
        dropBlobs()
        let layers = try Row.fetchAll(
            db,
            sql: """
                SELECT layer.id, layer.documentId, layer.bytes, layer.lastUsedAt FROM layer
                JOIN document ON document.id = layer.documentId JOIN tenant ON tenant.id = document.tenantId
                WHERE layer.pendingCount = 0 \(tenantFilter) ORDER BY layer.lastUsedAt, layer.id
                """, arguments: tenantArguments)
        for row in layers {
            let lastUsedAt: Date = row[3]
            let tooOld = cutoff.map { lastUsedAt < $0 } ?? false
            let overBudget = options.maxSize.map { size > $0 } ?? false
            guard tooOld || overBudget else { continue }
            let id: Int64 = row[0]
            let documentID: Int64 = row[1]
            plan.layerIDs.append(id)
            plan.lastUsed[id] = lastUsedAt
            size -= row[2] as Int64
            documentLayers[documentID, default: 0] -= 1
            dropDocument(documentID)
            dropBlobs()
        }
        self = plan
    }

    /// The report a dry run gives: the same rows the real run would remove.
    func describe(_ db: Database) throws -> RemovalReport {
        var report = RemovalReport()
        for chunk in stride(from: 0, to: layerIDs.count, by: 500) {
            let ids = Array(layerIDs[chunk..<min(chunk + 500, layerIDs.count)])
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT tenant.url, document.identifier, layer.name, layer.bytes FROM layer
                    JOIN document ON document.id = layer.documentId JOIN tenant ON tenant.id = document.tenantId
                    WHERE layer.id IN (\(ids.map { _ in "?" }.joined(separator: ",")))
                    """, arguments: StatementArguments(ids))
            {
                report.layers.append(
                    LayerReference(
                        tenant: TenantURL(normalized: row[0]), document: String(storedBytes: row[1]),
                        layer: String(storedBytes: row[2])))
                report.bytesFreed += row[3] as Int64
            }
        }
        for id in documentIDs.sorted() {
            if let row = try Row.fetchOne(
                db,
                sql:
                    "SELECT tenant.url, document.identifier FROM document JOIN tenant ON tenant.id = document.tenantId WHERE document.id = ?",
                arguments: [id])
            {
                report.documents.append(
                    DocumentReference(tenant: TenantURL(normalized: row[0]), document: String(storedBytes: row[1])))
            }
        }
        for sha in blobs.sorted() {
            guard let hash = BlobHash(hex: sha) else { continue }
            report.blobs.append(hash)
            report.bytesFreed +=
                try Int64.fetchOne(db, sql: "SELECT storedSize FROM blob WHERE sha256 = ?", arguments: [sha]) ?? 0
        }
        return report
    }
}

extension RemovalReport {
    /// Adds what `other` removed (and skipped) to this report.
    public mutating func merge(_ other: RemovalReport) {
        layers += other.layers
        documents += other.documents
        blobs += other.blobs
        bytesFreed += other.bytesFreed
        discardedPendingChanges += other.discardedPendingChanges
        skippedDirtyLayers += other.skippedDirtyLayers
        skippedPendingChanges += other.skippedPendingChanges
        skippedUnreadableLayers += other.skippedUnreadableLayers
        quarantined += other.quarantined
        swept += other.swept
        let left = [filesLeft, other.filesLeft].compactMap { $0 }.joined(separator: "; ")
        filesLeft = left.isEmpty ? nil : left
    }
}
