import Foundation
import GRDB

extension InstantStore {
    func checkLayers(_ options: VerifyOptions, _ report: inout VerificationReport) throws(StoreError) {
        let rows = try catalog.read { db in try layerRows(db, "1", []) }
        for (index, (row, reference)) in rows.enumerated() {
            report.layersChecked += 1
            options.progress?(VerifyProgress(phase: "layers", completed: index + 1, total: rows.count, bytes: 0))
            do throws(StoreError) {
                try checkLayer(row, reference, options, &report)
            } catch {
                switch error {
                case .corruptLayer, .unsupportedFormatVersion: break
                default: throw error
                }
                let missing = !FileSystem.exists(layout.layerPath(key: row.key))
                var problem = Problem(
                    kind: missing ? .missingLayer : .corruptLayer, subject: reference.description, detail: "\(error)")
                if options.repair {
                    try replaceLayerFile(row, reference, &report)
                    problem.fixed = true
                }
                report.problems.append(problem)
            }
        }
    }

    private func checkLayer(
        _ row: LayerRecord, _ reference: LayerReference, _ options: VerifyOptions, _ report: inout VerificationReport
    ) throws(StoreError) {
        let layer = try openLayer(key: row.key)
        defer { layer.close() }
        let health = try layer.health(deep: options.deep)
        if let failure = health.failure { throw .corruptLayer(key: row.key, reason: failure) }
        let metadata = try layer.metadata()
        guard metadata.tenant == reference.tenant, metadata.documentIdentifier == reference.document,
            metadata.layerName == reference.layer
        else { throw .corruptLayer(key: row.key, reason: "its meta row names another layer than the catalog") }
        if health.markedRemoved {
            // A removal died between marking the file and deleting the row: finish it.
            var problem = Problem(
                kind: .layerMarkedRemoved, subject: reference.description, detail: "removal was interrupted")
            if options.repair {
                _ = try remove { db, report, marked in
                    try self.deleteLayers(
                        [(row, reference)], keeping: .discard, in: db, report: &report, marked: marked)
                }
                problem.fixed = true
            }
            report.problems.append(problem)
            return
        }
        let summary = try layer.summary()
        if summary.annotationCount != row.annotationCount || summary.pendingCount != row.pendingCount {
            var problem = Problem(
                kind: .layerSummaryDrift, subject: reference.description,
                detail: "catalog says \(row.annotationCount) annotations, \(row.pendingCount) pending; "
                    + "the layer holds \(summary.annotationCount) and \(summary.pendingCount)")
            if options.repair {
                try catalog.write { db in
                    try db.execute(
                        sql: "UPDATE layer SET annotationCount = ?, pendingCount = ?, bytes = ? WHERE key = ?",
                        arguments: [summary.annotationCount, summary.pendingCount, summary.bytes, row.key])
                }
                problem.fixed = true
            }
            report.problems.append(problem)
        }
    }

    /// Replaces a missing or corrupt layer file with a fresh one that carries every pending
    /// change that can still be read (cursor reset, so the next sync brings the server's
    /// records). The old file goes to `quarantine/`. When no pending change can be read
    /// the fresh layer is flagged corrupt, so the client reports it `invalid`.
    func replaceLayerFile(
        _ row: LayerRecord, _ reference: LayerReference, _ report: inout VerificationReport
    ) throws(StoreError) {
        let oldPath = layout.layerPath(key: row.key)
        let salvaged = LayerDatabase.salvagePendingChanges(path: oldPath)
        let pending = salvaged ?? []
        report.pendingChangesSalvaged += pending.count
        if salvaged == nil && FileSystem.exists(oldPath) { report.pendingChangesUnreadable += Int(row.pendingCount) }
        let pdf = try catalog.read { db in
            try String.fetchOne(db, sql: "SELECT blobSha256 FROM document WHERE id = ?", arguments: [row.documentId])
        }
        let staging = try LayerStaging(layout)
        defer { staging.cleanUp() }
        let key = staging.key
        let tempPath = staging.path
        let metadata = LayerMetadata(
            tenant: reference.tenant, documentIdentifier: reference.document, layerName: reference.layer,
            pdfSHA256: pdf.flatMap { BlobHash(hex: $0) }, userID: row.userId.map { String(storedBytes: $0) },
            lastServerRevision: 0)
        try LayerDatabase.create(at: tempPath, key: key, metadata: metadata, records: [], pending: pending)
        let fresh = try LayerDatabase(path: tempPath, key: key)
        let summary = try fresh.summary()
        fresh.close()
        let lostEverything = salvaged == nil
        try catalog.write { db in
            if FileSystem.exists(oldPath) {
                try FileSystem.rename(
                    oldPath, self.layout.quarantinePath(for: StoreLayout.layerRelativePath(key: row.key)))
                for suffix in ["-wal", "-shm"] { try FileSystem.remove(oldPath + suffix) }
            }
            let newPath = self.layout.layerPath(key: key)
            try FileSystem.rename(tempPath, newPath)
            try FileSystem.syncDirectory(self.layout.layersDirectory)
            try db.execute(
                sql:
                    "UPDATE layer SET key = ?, corrupt = ?, pendingCount = ?, annotationCount = ?, bytes = ? WHERE id = ?",
                arguments: [key, lostEverything, summary.pendingCount, summary.annotationCount, summary.bytes, row.id])
        }
    }
}
