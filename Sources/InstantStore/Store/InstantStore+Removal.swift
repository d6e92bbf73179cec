import Foundation
import GRDB

extension InstantStore {
    /// Removes one layer's annotation data. The document and its PDF stay, unreferenced if
    /// no layer is left. An open ``LayerDatabase`` of the layer fails its next write with
    /// `layerRemoved`.
    ///
    /// Pending changes go with the layer by default (the app asked). With `.refuse` the
    /// check happens under the layer's write lock inside the removal, so a change made
    /// while deciding cannot be lost:
    ///
    /// ```swift
    /// do {
    ///     try store.removeLayer(tenant: url, document: "doc", layer: "", pendingChanges: .refuse)
    /// } catch .pendingChanges(_, let changes) {
    ///     print("\(changes) changes not synced yet")
    /// }
    /// ```
    @discardableResult
    public func removeLayer(
        tenant: TenantURL, document: String, layer: String, pendingChanges: PendingChangesPolicy = .discard
    ) throws(StoreError) -> RemovalReport {
        try remove { db, report, marked in
            let rows = try self.layerRows(
                db, "tenant.url = ? AND document.identifier = ? AND layer.name = ?",
                [tenant.string, document.storedBytes, layer.storedBytes])
            guard !rows.isEmpty else {
                throw StoreError.noSuchLayer(tenant: tenant.string, document: document, layer: layer)
            }
            try self.deleteLayers(rows, keeping: pendingChanges, in: db, report: &report, marked: marked)
            try Self.refuseIfSkipped(report)
        }
    }

    /// Removes every layer of a document and the document itself; its PDF is deleted when
    /// no other document (of any tenant) uses it. `pendingChanges` as for
    /// ``removeLayer(tenant:document:layer:pendingChanges:)``.
    @discardableResult
    public func removeDocument(
        tenant: TenantURL, document: String, pendingChanges: PendingChangesPolicy = .discard
    ) throws(StoreError) -> RemovalReport {
        try remove { db, report, marked in
            guard let tenantID = try self.catalog.tenantID(tenant, create: false, in: db),
                let row = try self.catalog.document(tenantID, document, in: db), let id = row.id
            else { throw StoreError.noSuchDocument(tenant: tenant.string, document: document) }
            let layers = try self.layerRows(db, "layer.documentId = ?", [id])
            try self.deleteLayers(layers, keeping: pendingChanges, in: db, report: &report, marked: marked)
            try Self.refuseIfSkipped(report)
            try self.deleteDocuments([id], in: db, report: &report)
            try self.deleteUnreferencedBlobs(row.blobSha256.map { [$0] }, in: db, report: &report)
        }
    }

    /// Removes every document of `tenant` (every tenant when nil) that has no layer left,
    /// then every PDF no document uses. Returns the documents removed and the bytes freed.
    @discardableResult
    public func removeUnreferenced(tenant: TenantURL? = nil) throws(StoreError) -> RemovalReport {
        try remove { db, report, marked in
            let ids = try Int64.fetchAll(
                db,
                sql: """
                    SELECT document.id FROM document JOIN tenant ON tenant.id = document.tenantId
                    WHERE document.layerCount = 0 \(tenant == nil ? "" : "AND tenant.url = ?")
                    """, arguments: StatementArguments(tenant.map { [$0.string] } ?? []))
            try self.deleteDocuments(ids, in: db, report: &report)
            try self.deleteUnreferencedBlobs(nil, in: db, report: &report)
        }
    }

    /// Removes everything of one tenant: layers, documents, and the PDFs that no other
    /// tenant uses. `pendingChanges` as for
    /// ``removeLayer(tenant:document:layer:pendingChanges:)``.
    @discardableResult
    public func removeTenant(_ tenant: TenantURL, pendingChanges: PendingChangesPolicy = .discard) throws(StoreError)
        -> RemovalReport
    {
        try remove { db, report, marked in
            guard let tenantID = try self.catalog.tenantID(tenant, create: false, in: db) else { return }
            try self.deleteLayers(
                self.layerRows(db, "tenant.id = ?", [tenantID]), keeping: pendingChanges, in: db, report: &report,
                marked: marked)
            try Self.refuseIfSkipped(report)
            let ids = try Int64.fetchAll(db, sql: "SELECT id FROM document WHERE tenantId = ?", arguments: [tenantID])
            try self.deleteDocuments(ids, in: db, report: &report)
            try self.deleteUnreferencedBlobs(nil, in: db, report: &report)
            try db.execute(sql: "DELETE FROM tenant WHERE id = ?", arguments: [tenantID])
        }
    }

    // MARK: The shared machinery

    /// Runs one removal transaction, then unlinks the files it tombstoned. Layers marked
    /// removed in a transaction that then fails are unmarked again.
    func remove(_ body: (Database, inout RemovalReport, MarkedLayers) throws -> Void) throws(StoreError)
        -> RemovalReport
    {
        try checkRemovalAllowed()
        try checkWritable("remove from the store")
        let marked = MarkedLayers()
        var report: RemovalReport
        do throws(StoreError) {
            report = try catalog.write { db in
                marked.keys.removeAll()
                marked.toQuarantine.removeAll()
                var report = RemovalReport()
                try body(db, &report, marked)
                try Failpoint.check("remove.beforeCommit")
                return report
            }
        } catch {
            // Only while the row is there: another process may have removed the layer for
            // real since this transaction failed.
            for key in marked.keys { clearMarkIfStale(key: key) }
            throw error
        }
        try Failpoint.check("remove.afterCommit")
        // The removal has committed: what follows only tidies up, and its failure (a file
        // that cannot be moved or unlinked now) is reported, not thrown. The caller must act
        // on the commit (a client makes the removed layers' descriptors invalid), and the
        // files are found again: a tombstone stays until its file is gone, and a file
        // left without its row is an orphan that GC takes up.
        var problems: [String] = []
        // Unreadable layers the caller asked to discard: their rows are gone; their files
        // go to quarantine/, never unlinked (killed before this, GC's orphan rule moves them).
        for relative in marked.toQuarantine {
            do {
                if let name = try layout.quarantine(relative) { report.quarantined.append(name) }
            } catch {
                problems.append("\(error)")
            }
        }
        do {
            try sweepTombstones()
        } catch {
            problems.append("\(error)")
        }
        if !problems.isEmpty { report.filesLeft = problems.joined(separator: "; ") }
        // The reserve a handle freeing space gave back, taken again if there is room now.
        if !isOrigin { SpaceReserve.ensure(layout) }
        return report
    }

    /// Rows of layers joined with their document and tenant, filtered by `condition`.
    func layerRows(_ db: Database, _ condition: String, _ arguments: [any DatabaseValueConvertible & Sendable])
        throws -> [(LayerRecord, LayerReference)]
    {
        try Row.fetchAll(
            db,
            sql: """
                SELECT layer.*, document.identifier AS documentIdentifier, tenant.url AS tenantURL
                FROM layer JOIN document ON document.id = layer.documentId JOIN tenant ON tenant.id = document.tenantId
                WHERE \(condition) ORDER BY layer.lastUsedAt, layer.id
                """, arguments: StatementArguments(arguments)
        ).map { row in
            let reference = LayerReference(
                tenant: TenantURL(normalized: row["tenantURL"]),
                document: String(storedBytes: row["documentIdentifier"]), layer: String(storedBytes: row["name"]))
            return (try LayerRecord(row: row), reference)
        }
    }

    /// Marks each layer removed under its own write lock (skipping those holding pending
    /// changes that `policy` keeps), deletes its row and tombstones its file, in the
    /// caller's transaction.
    ///
    /// A layer whose file cannot be opened is never deleted unchecked: a missing file has
    /// nothing to lose; a corrupt one asked to be discarded goes to quarantine (after the
    /// commit); anything else (a newer format, no permission, no descriptors left) fails
    /// the removal with ``StoreError/layerUnreadable(layer:reason:)``, or, with
    /// `skipUnreadable` (prune), keeps the layer and lists it.
    func deleteLayers(
        _ rows: [(LayerRecord, LayerReference)], keeping policy: PendingChangesPolicy, in db: Database,
        report: inout RemovalReport, marked: MarkedLayers, skipUnreadable: Bool = false
    ) throws {
        for (row, reference) in rows {
            var pending: Int64 = 0
            var quarantine = false
            let path = layout.layerPath(key: row.key)
            // A file that cannot be looked at (an I/O error) is not taken for missing: its
            // row would go without its pending changes counted.
            let present: Bool
            let walOnly: Bool
            do throws(StoreError) {
                present = try FileSystem.isPresent(path)
                if present { walOnly = false } else { walOnly = try FileSystem.isPresent(path + "-wal") }
            } catch {
                if skipUnreadable {
                    report.skippedUnreadableLayers.append(reference)
                    continue
                }
                // Also when asked to discard: the file could be neither marked removed nor
                // moved to quarantine now, and a later sweep would take it back, with the
                // changes the caller discarded, once it can look at it again.
                throw StoreError.layerUnreadable(layer: reference.description, reason: error.description)
            }
            if walOnly {
                // A -wal without its database cannot be read: it may hold pending changes,
                // so it is never deleted unread (as a damaged file is treated below). Its
                // changes, as the catalog counts them, leave the store with it.
                if policy == .discard {
                    quarantine = true
                    pending = row.pendingCount
                } else if skipUnreadable {
                    report.skippedUnreadableLayers.append(reference)
                    continue
                } else {
                    throw StoreError.layerUnreadable(
                        layer: reference.description,
                        reason: "its database file is missing and its -wal, which cannot be read alone, remains")
                }
            } else if present {
                do {
                    let layer = try openLayer(key: row.key)
                    defer { layer.close() }
                    let outcome = try layer.markRemoved(
                        allowingPendingThrough: policy.allowedSequence(reference, key: row.key))
                    guard outcome.marked else {
                        report.skippedDirtyLayers.append(reference)
                        report.skippedPendingChanges += outcome.pending
                        continue
                    }
                    pending = outcome.pending
                    marked.keys.append(row.key)
                } catch {
                    let failure = Catalog.map(error, path: row.key)
                    if case .corruptLayer = failure, policy == .discard {
                        quarantine = true
                        pending = row.pendingCount
                    } else if skipUnreadable {
                        report.skippedUnreadableLayers.append(reference)
                        continue
                    } else {
                        throw StoreError.layerUnreadable(layer: reference.description, reason: failure.description)
                    }
                }
            }
            try Failpoint.check("remove.afterMark", path: layout.layerPath(key: row.key))
            try db.execute(sql: "DELETE FROM layer WHERE id = ? AND key = ?", arguments: [row.id, row.key])
            // Another process removed it since the rows were read: nothing to count.
            guard db.changesCount == 1 else { continue }
            try db.execute(
                sql: "UPDATE document SET layerCount = layerCount - 1 WHERE id = ?", arguments: [row.documentId])
            if quarantine {
                marked.toQuarantine.append(StoreLayout.layerRelativePath(key: row.key))
            } else {
                try catalog.addTombstone(StoreLayout.layerRelativePath(key: row.key), in: db)
            }
            report.layers.append(reference)
            report.bytesFreed += row.bytes
            report.discardedPendingChanges += pending
        }
    }

    /// Throws (rolling the removal back) when a layer was kept for its pending changes.
    static func refuseIfSkipped(_ report: RemovalReport) throws(StoreError) {
        guard !report.skippedDirtyLayers.isEmpty else { return }
        throw .pendingChanges(layers: report.skippedDirtyLayers.count, changes: report.skippedPendingChanges)
    }

    /// Deletes the documents among `ids` that have no layer left, releasing their PDFs.
    func deleteDocuments(_ ids: [Int64], in db: Database, report: inout RemovalReport) throws {
        for id in ids {
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT document.*, tenant.url AS tenantURL FROM document JOIN tenant ON tenant.id = document.tenantId
                        WHERE document.id = ? AND document.layerCount <= 0
                        """, arguments: [id])
            else { continue }
            let tenant = TenantURL(normalized: row["tenantURL"])
            try db.execute(sql: "DELETE FROM document WHERE id = ? AND layerCount <= 0", arguments: [id])
            guard db.changesCount == 1 else { continue }
            try catalog.adjustReference(from: row["blobSha256"], to: nil, in: db)
            report.documents.append(DocumentReference(tenant: tenant, document: String(storedBytes: row["identifier"])))
        }
    }

    /// Deletes blob rows whose count is zero (among `hashes`, or all) and tombstones their files.
    func deleteUnreferencedBlobs(_ hashes: [String]?, in db: Database, report: inout RemovalReport) throws {
        let rows: [BlobRecord]
        if let hashes {
            rows = try BlobRecord.fetchAll(db, keys: hashes).filter { $0.refCount <= 0 }
        } else {
            rows = try BlobRecord.fetchAll(db, sql: "SELECT * FROM blob WHERE refCount <= 0")
        }
        for blob in rows {
            guard let hash = BlobHash(hex: blob.sha256) else { continue }
            try db.execute(sql: "DELETE FROM blob WHERE sha256 = ? AND refCount <= 0", arguments: [blob.sha256])
            guard db.changesCount == 1 else { continue }
            try catalog.addTombstone(StoreLayout.blobRelativePath(hash), in: db)
            try Failpoint.check("gc.afterDeleteRow")
            report.blobs.append(hash)
            report.bytesFreed += blob.storedSize
        }
    }
}

/// The layers a removal transaction marked, so a failed transaction can unmark them.
final class MarkedLayers: @unchecked Sendable {
    // @unchecked: used inside one catalog write closure and right after it, on one thread.
    var keys: [String] = []
    /// Layer files (relative paths) to move to quarantine once the transaction committed.
    var toQuarantine: [String] = []
}
