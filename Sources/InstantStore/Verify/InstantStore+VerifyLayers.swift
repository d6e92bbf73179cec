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
                try record(error, row, reference, options, &report)
            }
        }
    }

    /// Reports what opening or checking a layer found, and repairs what may be repaired.
    private func record(
        _ error: StoreError, _ row: LayerRecord, _ reference: LayerReference, _ options: VerifyOptions,
        _ report: inout VerificationReport
    ) throws(StoreError) {
        switch error {
        case .unsupportedFormatVersion:
            // Never repaired: a newer build's file is not ours to judge.
            report.problems.append(
                Problem(kind: .unsupportedFormat, subject: reference.description, detail: "\(error); left untouched"))
        case .corruptLayer:
            let missing = (try? FileSystem.isPresent(layout.layerPath(key: row.key))) == false
            // A layer removed (or replaced) since the rows were read is not missing.
            if missing, try !isCurrent(row) { return }
            var problem = Problem(
                kind: missing ? .missingLayer : .corruptLayer, subject: reference.description, detail: "\(error)")
            if options.repair {
                do throws(StoreError) {
                    problem.fixed = try replaceLayerFile(row, reference, &report)
                } catch {
                    problem.detail += "; not repaired: \(error)"
                }
            }
            report.problems.append(problem)
        case .io, .database, .busy, .readOnlyStore:
            // `readOnlyStore`: a layer of an older format, which a read-only store cannot
            // upgrade to read.
            report.problems.append(
                Problem(kind: .inaccessibleFile, subject: reference.description, detail: "\(error); left untouched"))
        default:
            throw error
        }
    }

    /// Whether the row still names the same file (re-read from the catalog).
    func isCurrent(_ row: LayerRecord) throws(StoreError) -> Bool {
        try catalog.read { db in
            try Bool.fetchOne(
                db, sql: "SELECT 1 FROM layer WHERE id = ? AND key = ?", arguments: [row.id, row.key]) ?? false
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
        guard metadata.reference == reference else {
            throw .corruptLayer(key: row.key, reason: "its meta row names another layer than the catalog")
        }
        if health.markedRemoved {
            // A removal marks the file and deletes the row in one catalog transaction; a
            // row that is still here means that removal never committed. Clearing the
            // mark (under the catalog's write lock) discards nothing.
            var problem = Problem(
                kind: .layerMarkedRemoved, subject: reference.description,
                detail: "a removal that never completed left it refusing writes")
            if options.repair {
                problem.fixed = try resolveStaleMark(layer)
                if problem.fixed { problem.detail += "; the mark was cleared, nothing discarded" }
            }
            report.problems.append(problem)
        }
        let summary = try layer.summary()
        if summary.annotationCount != row.annotationCount || summary.pendingCount != row.pendingCount {
            var problem = Problem(
                kind: .layerSummaryDrift, subject: reference.description,
                detail: "catalog says \(row.annotationCount) annotations, \(row.pendingCount) pending; "
                    + "the layer holds \(summary.annotationCount) and \(summary.pendingCount)")
            if options.repair {
                // Counted again inside the transaction: a write since the check moved them.
                try catalog.write { db in
                    let current = try layer.summary()
                    try db.execute(
                        sql: "UPDATE layer SET annotationCount = ?, pendingCount = ?, bytes = ? WHERE key = ?",
                        arguments: [current.annotationCount, current.pendingCount, current.bytes, row.key])
                }
                problem.fixed = true
            }
            report.problems.append(problem)
        }
    }

    /// Replaces a missing or corrupt layer file with a fresh one that carries every pending
    /// change that can still be read (cursor reset, so the next sync brings the server's
    /// records), crash-atomically:
    ///
    /// 1. Inside one catalog write transaction, after checking the row still names the
    ///    file: the pending changes are read under the old file's write lock, in the same
    ///    SQLite transaction that marks it removed, so a change made meanwhile is either
    ///    in what was read or refused (open handles see `layerRemoved`).
    /// 2. The new file is written completely under a new key, renamed into `layers/`, and
    ///    the row switched to it; then the transaction commits.
    /// 3. Only then does the old file go to `quarantine/`, with its `-wal` and `-shm`.
    ///
    /// Killed before 2 commits, the old file still has its row (its stale mark is cleared
    /// at the next open) and the new one is an orphan holding copies, marked removed
    /// before its rename, which GC quarantines (never adopts, even once the layer is
    /// removed). Killed before 3, the old file is an orphan marked removed, which GC
    /// quarantines when it holds anything. When no pending change can be read the fresh
    /// layer is flagged corrupt, so the client reports it `invalid`. Returns false when
    /// the row changed meanwhile (nothing done).
    func replaceLayerFile(
        _ row: LayerRecord, _ reference: LayerReference, _ report: inout VerificationReport
    ) throws(StoreError) -> Bool {
        let oldPath = layout.layerPath(key: row.key)
        let staging = try LayerStaging(layout)
        var committed = false
        defer { staging.release(committed: committed, in: layout) }
        let outcome = try catalog.write { db -> (salvaged: Int, unreadable: Int, lost: Int)? in
            guard let current = try LayerRecord.fetchOne(db, key: row.id), current.key == row.key else { return nil }
            var salvaged: [PendingChange]?
            // Kept, so the server answers salvaged changes it already applied with their
            // first verdicts instead of applying them again.
            var clientID: String?
            // The history the salvaged changes' bases belong to (the replacement has no
            // cursor): its first snapshot keeps them when it is of that history.
            var baseEpoch: String?
            var unreadable = 0
            // Counted by the catalog, with neither the file nor its -wal left to hold them.
            var lost = 0
            // Read from a damaged file, the salvaged changes may miss the last numbers used.
            var numberAfter: Int64?
            // Lost changes not told to the app yet: carried over too (their content is nowhere else).
            var lostCarried: [LostChangeReport] = []
            // A file that cannot be looked at (an I/O error) stops the repair, as one that
            // cannot be opened does: it is not taken for missing, nor its changes for lost.
            if try FileSystem.isPresent(oldPath) {
                do {
                    let old = try LayerDatabase(path: oldPath, key: row.key)
                    defer { old.close() }
                    let oldMetadata = try? old.metadata()
                    // A file naming another layer (another layer's file, copied or restored
                    // from a backup under this one's name, or one whose meta row is
                    // damaged) may hold another document's changes, even another server's,
                    // which must never be sent as this layer's. Nothing is taken from it
                    // and nothing written to it: it goes to quarantine untouched, where
                    // `quarantine list` shows whose changes it holds, and this layer's own
                    // changes (the catalog's count) are reported unreadable.
                    let namesThisLayer = oldMetadata.map { $0.reference == reference } ?? true
                    if namesThisLayer {
                        clientID = oldMetadata?.clientID
                        baseEpoch = oldMetadata?.pendingBasesEpoch
                        let taken = try old.takePendingChangesAndMarkRemoved()
                        // Readable, but a create or update whose content is not JSON is
                        // not carried, nor the rest of its annotation's changes.
                        let carried = LayerDatabase.withoutBrokenChains(taken.changes)
                        (salvaged, unreadable) = (carried.kept, carried.dropped)
                        lostCarried = taken.lost
                        // Past the last number, and more: a file without the numbering
                        // trigger (found by verify) may have used numbers past its floor.
                        numberAfter = LayerDatabase.numberFloor(past: taken.lastNumber)
                    }
                } catch {
                    // Too damaged to lock and mark: read what can be read. A writer still
                    // holding it writes into the file that goes to quarantine, not to
                    // nothing. Anything else (busy, a newer format since the check, an
                    // I/O error) stops the repair: the file is not ours to take.
                    guard case .corruptLayer = Catalog.map(error, path: oldPath) else { throw error }
                    let read = LayerDatabase.salvagePendingAndLostChanges(path: oldPath)
                    (salvaged, lostCarried) = (read.pending, read.lost)
                    // Rows that could not be read stay in the old file, which goes to
                    // quarantine: reported, as when no change could be read.
                    unreadable = read.unreadable
                    if let changes = salvaged {
                        let identity = LayerDatabase.salvageSyncIdentity(path: oldPath)
                        (clientID, baseEpoch) = (identity.clientID, identity.baseEpoch)
                        salvaged = identity.withBases(changes)
                    }
                    // New numbers start far past them (and the lost ones carried), so none
                    // can be one already used.
                    numberAfter = LayerDatabase.numberFloor(
                        past: ((salvaged ?? []).map(\.sequence) + lostCarried.map(\.sequence)).max() ?? 0)
                }
            }
            // Also when only its -wal is left: the changes the catalog counts were not
            // taken, and go to quarantine with it.
            // (The catalog counts the untold lost changes with them: those carried are not.)
            if salvaged == nil {
                let counted = max(0, Int(current.pendingCount) - lostCarried.count)
                let present = try FileSystem.isPresent(oldPath)
                if try present || FileSystem.isPresent(oldPath + "-wal") {
                    unreadable = counted
                } else {
                    lost = counted
                }
            }
            // The new file numbers its changes far past the old file's last number (or the
            // salvaged ones', when it could only be read). Under the old client id, a number
            // the old file had already used (its changes all acknowledged, or unreadable)
            // would be answered with that change's verdict, and the new change taken as
            // done: lost. Without changes to carry, nothing needs the old id, so the layer
            // gets a new one.
            if salvaged?.isEmpty ?? true { (clientID, baseEpoch) = (nil, nil) }
            try Failpoint.check("replace.afterSalvage")
            let pdf = try String.fetchOne(
                db, sql: "SELECT blobSha256 FROM document WHERE id = ?", arguments: [current.documentId])
            let metadata = LayerMetadata(
                tenant: reference.tenant, documentIdentifier: reference.document, layerName: reference.layer,
                pdfSHA256: pdf.flatMap { BlobHash(hex: $0) }, userID: current.userId.map { String(storedBytes: $0) },
                lastServerRevision: 0, clientID: clientID, baseEpoch: baseEpoch)
            try LayerDatabase.create(
                at: staging.path, key: staging.key, metadata: metadata, records: [], pending: salvaged ?? [],
                lost: lostCarried, numberChangesAfter: numberAfter)
            let fresh = try LayerDatabase(path: staging.path, key: staging.key)
            defer { fresh.close() }
            let summary = try fresh.summary()
            // Renamed marked removed: an orphan left by a kill before the commit holds
            // copies of the old file's changes under its client id, and must never be
            // adopted as the layer (a removal of the layer later would let a sweep take it
            // back, and send those changes again): GC quarantines a marked orphan. After
            // the commit, the mark is stale (a row names the file) and cleared.
            _ = try fresh.markRemoved(allowingPendingThrough: .max)
            fresh.close()
            try FileSystem.rename(staging.path, self.layout.layerPath(key: staging.key))
            try FileSystem.syncDirectory(self.layout.layersDirectory)
            try Failpoint.check("replace.afterRename")
            try db.execute(
                sql: """
                    UPDATE layer SET key = ?, corrupt = ?, pendingCount = ?, annotationCount = ?, bytes = ?
                    WHERE id = ? AND key = ?
                    """,
                arguments: [
                    // Flagged corrupt (the client reports it invalid) when none of its changes
                    // could be carried: the app hears of those left in quarantine.
                    staging.key, salvaged == nil || (salvaged?.isEmpty == true && unreadable > 0),
                    summary.pendingCount, summary.annotationCount, summary.bytes,
                    row.id, row.key,
                ])
            try Failpoint.check("replace.beforeCommit")
            return (salvaged?.count ?? 0, unreadable, lost)
        }
        committed = true
        guard let outcome else { return false }
        try Failpoint.check("replace.afterCommit")
        // The mark the replacement was renamed with, now that its row names it.
        clearMarkIfStale(key: staging.key)
        report.pendingChangesSalvaged += outcome.salvaged
        report.pendingChangesUnreadable += outcome.unreadable
        report.pendingChangesLost += outcome.lost
        // The layer is replaced (committed): a failure to move its old file now is not a
        // failed repair. The file is then an orphan (a layer of its name exists), which
        // the orphan sweep of this repair quarantines, and reports.
        do {
            try Failpoint.check("replace.beforeQuarantine", path: layout.layerPath(key: row.key))
            _ = try quarantineUnclaimedLayer(StoreLayout.layerRelativePath(key: row.key))
        } catch {
            // Left to the sweep (above).
        }
        return true
    }
}
