import Foundation
import GRDB

/// What removal, repair and garbage collection do to a layer file: the removed mark, its
/// health, and reading what it holds when it is damaged.
extension LayerDatabase {
    /// Marks the layer removed under its write lock, unless it holds a pending change, or a
    /// lost change not told to the app yet (``LostChangeReport``), numbered past `allowed`
    /// (0: any keeps it; an export writes both out). Returns the number of both, as the
    /// catalog counts them, and whether it was marked.
    func markRemoved(allowingPendingThrough allowed: Int64) throws(StoreError) -> (pending: Int64, marked: Bool) {
        do {
            return try queue.writeWithoutTransaction { db in
                var outcome: (Int64, Bool) = (0, false)
                try db.inTransaction(.immediate) {
                    let pending = try Int64.fetchOne(db, sql: "SELECT COUNT(*) FROM localChange") ?? 0
                    let latest = try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM localChange") ?? 0
                    let latestLost = try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM lostChange") ?? 0
                    let count = pending + (try LayerDatabase.countLost(db))
                    if max(latest, latestLost) > allowed {
                        outcome = (count, false)
                        return .rollback
                    }
                    try db.execute(sql: "UPDATE meta SET removed = 1")
                    outcome = (count, true)
                    return .commit
                }
                return outcome
            }
        } catch {
            throw LayerDatabase.map(error, key: key)
        }
    }

    /// Clears the removed mark after a removal whose catalog transaction failed.
    /// Runs on a client's shared handle too (a write that met a stale mark), which
    /// another thread may have closed: `layerClosed` then.
    func unmarkRemoved() throws(StoreError) {
        do {
            try onConnection { db in
                try db.inTransaction {
                    try db.execute(sql: "UPDATE meta SET removed = 0")
                    return .commit
                }
            }
        } catch {
            throw LayerDatabase.map(error, key: key)
        }
    }

    /// `quick_check`, the removed mark and, when `deep`, every record decoded.
    func health(deep: Bool) throws(StoreError) -> (failure: String?, markedRemoved: Bool) {
        try read { db in
            let messages = try String.fetchAll(db, sql: deep ? "PRAGMA integrity_check" : "PRAGMA quick_check")
            if messages != ["ok"] { return (messages.prefix(3).joined(separator: "; "), false) }
            let removed = try Bool.fetchOne(db, sql: "SELECT removed FROM meta") ?? false
            // Without it, a deleted change's number could be given again (a repair
            // replaces the file, keeping its changes and numbering past them).
            let numbered = try Bool.fetchOne(
                db, sql: "SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = 'localChangeDecided'")
            if numbered != true { return ("the trigger that keeps change numbers unique is missing", removed) }
            if deep {
                // Every change decodes: a value of the wrong type (a date that is not one)
                // is damage that `integrity_check` does not see in tables that are not STRICT.
                do {
                    // A create or update whose content is not JSON would stop every sync.
                    if let change = try Self.fetchPending(db).first(where: { !$0.isIntact }) {
                        return ("pending change \(change.sequence): not a JSON object", removed)
                    }
                    _ = try Self.fetchLost(db)
                } catch let error as RowDecodingError {
                    return ("a change holds a value of the wrong type: \(error)", removed)
                } catch StoreError.corruptLayer(_, let reason) {
                    return (reason, removed)
                }
                let records = try Row.fetchCursor(db, sql: "SELECT annotationId, content FROM record")
                while let row = try records.next() {
                    let id: Data? = try? row.decode(atIndex: 0)
                    let content: Data? = try? row.decode(atIndex: 1)
                    guard let id, let content, AnnotationContent.isIntact(content) else {
                        let name = id.map { StoreError.quoted(String(storedBytes: $0)) } ?? "without an id"
                        return ("record \(name): not a JSON object", removed)
                    }
                }
            }
            return (nil, removed)
        }
    }

    /// The pending changes of a file of any format (before layer-v3 they are in
    /// `pendingChange`), row by row, by annotation: an annotation's changes are a chain
    /// (a create then a delete, an update then another), and sending part of one would
    /// undo what the user did last. So when a row cannot be read (its kind, content or
    /// base), every change of its annotation is left out and counted unreadable; the
    /// other annotations' changes are carried (a creation time that cannot be read is
    /// now: it is never sent). A row whose number or annotation id cannot be read makes
    /// the whole read fail (nil from the caller's `try?`): which chain it broke is unknown.
    /// What is left out stays in the old file, which the recovery quarantines.
    static func fetchSalvagedPending(_ db: Database) throws -> (changes: [PendingChange], unreadable: Int) {
        let table = try db.tableExists("localChange") ? "localChange" : "pendingChange"
        var changes: [(id: Data, change: PendingChange?)] = []
        var broken: Set<Data> = []
        let rows = try Row.fetchCursor(db, sql: "SELECT * FROM \(table) ORDER BY seq")
        while let row = try rows.next() {
            let sequence = try row.decode(Int64.self, forColumn: "seq")
            let id = try row.decode(Data.self, forColumn: "annotationId")
            guard let kindName = try? row.decode(String.self, forColumn: "kind"),
                let kind = PendingChange.Kind(rawValue: kindName),
                case let content = kind == .delete ? nil : (try? row.decode(Data?.self, forColumn: "content")) ?? nil,
                // (Content that is there but not JSON is left to withoutBrokenChains.)
                kind == .delete || content != nil,
                // (Not `try?`, which flattens a base that is rightly NULL, or absent before
                // layer-v4, into a failure.)
                case .success(let base) = Result(catching: { try row.decode(Int64?.self, forColumn: "baseRevision") })
            else {
                broken.insert(id)
                changes.append((id, nil))
                continue
            }
            changes.append(
                (
                    id,
                    PendingChange(
                        sequence: sequence, annotationID: String(storedBytes: id), kind: kind, content: content,
                        createdAt: (try? row.decode(Date.self, forColumn: "createdAt")) ?? Date(), baseRevision: base)
                ))
        }
        let readable = changes.compactMap { broken.contains($0.id) ? nil : $0.change }
        let carried = withoutBrokenChains(readable)
        return (carried.kept, changes.count - carried.kept.count)
    }

    /// `changes` without every change of an annotation one of whose creates or updates
    /// holds content that is not a JSON object (a damaged blob inside a sound file), and
    /// how many were left out. Sent, such a change stops every later sync of the layer,
    /// and part of an annotation's chain would undo what the user did last, so a repair
    /// carries none of that annotation's changes: they stay in the old file it quarantines.
    static func withoutBrokenChains(_ changes: [PendingChange]) -> (kept: [PendingChange], dropped: Int) {
        let broken = Set(changes.filter { !$0.isIntact }.map(\.annotationID.storedBytes))
        guard !broken.isEmpty else { return (changes, 0) }
        let kept = changes.filter { !broken.contains($0.annotationID.storedBytes) }
        return (kept, changes.count - kept.count)
    }

    /// What `read` finds in a possibly damaged layer file, opened read-only and not
    /// upgraded; nil when the file is missing, empty beside its WAL, or unreadable there.
    static func salvage<T>(path: String, _ read: (Database) throws -> T) -> T? {
        guard FileSystem.exists(path), !isEmptyBesideWAL(path) else { return nil }
        var configuration = Configuration()
        configuration.readonly = true
        guard let queue = try? DatabaseQueue(path: path, configuration: configuration) else { return nil }
        defer { try? queue.close() }
        return try? queue.read(read)
    }

    /// What a layer file that may be damaged says of its sync, as far as it can be read.
    struct SalvagedSyncIdentity {
        /// A replacement keeps it, so the server answers the salvaged changes it already
        /// applied with their first verdicts instead of applying them again.
        var clientID: String?
        /// The epoch the pending changes' bases belong to, so a snapshot of the same history
        /// keeps them.
        var baseEpoch: String?
        /// The cursor's revision, when the file has an epoch: the base of a salvaged change
        /// that has none (a file from before layer-v4, which a damaged file is not upgraded
        /// to), as the upgrade would have given it.
        var cursorRevision: Int64?

        /// `changes`, each without a base given the cursor's revision.
        func withBases(_ changes: [PendingChange]) -> [PendingChange] {
            guard let cursorRevision else { return changes }
            return changes.map { change in
                var change = change
                if change.baseRevision == nil { change.baseRevision = cursorRevision }
                return change
            }
        }
    }

    /// The sync identity of a layer file that may be damaged (see ``SalvagedSyncIdentity``).
    static func salvageSyncIdentity(path: String) -> SalvagedSyncIdentity {
        // `SELECT *`: a file of a format before layer-v5 has no baseEpoch column (read as nil).
        let identity = salvage(path: path) { db -> SalvagedSyncIdentity? in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM meta WHERE id = 1") else { return nil }
            let epoch: String? = try row.decode(forColumn: "epoch")
            return SalvagedSyncIdentity(
                clientID: try row.decode(forColumn: "clientId"),
                baseEpoch: try epoch ?? row.decode(forColumn: "baseEpoch"),
                cursorRevision: epoch == nil ? nil : try row.decode(forColumn: "lastServerRevision"))
        }
        return (identity ?? nil) ?? SalvagedSyncIdentity()
    }

    /// How far past its last change number a file that carries on a client id numbers
    /// its next changes (see ``numberFloor(past:)``).
    static let adoptionNumberGap: Int64 = 1 << 20

    /// The change number floor for a file that carries on a client id another file may
    /// have used meanwhile: a repair's replacement, a restored or adopted file. Such files
    /// can be made more than once from one original (a restore killed after its commit
    /// leaves the quarantined copy to restore again), so a fixed gap past `last` is not
    /// enough: the floor also never falls below 1,024 per millisecond since 1970, so two
    /// files made at different moments start apart by more than either can number in
    /// between (creates run at a few per millisecond). Still below 2^53 until about 2248.
    static func numberFloor(past last: Int64) -> Int64 {
        let milliseconds = Int64(max(0, Date().timeIntervalSince1970) * 1000)
        // A number read from a damaged file may be anything: never trap on it.
        let (past, overflow) = last.addingReportingOverflow(adoptionNumberGap)
        return max(overflow ? Int64.max / 2 : past, milliseconds * 1024)
    }

    /// Clears the removed mark and folds the WAL into the file, so the one file is the
    /// whole layer: a layer about to be adopted back into the catalog (restored from
    /// quarantine, or found holding pending changes with no row).
    ///
    /// Its next changes are numbered from ``numberFloor(past:)``: another file may have
    /// gone on under the same client id meanwhile (a repair's replacement keeps the id and
    /// numbers past the old file), and a number it used, given again here, would be
    /// answered with that change's verdict. The changes it holds keep their numbers, so
    /// sent again they get their first verdicts.
    func prepareForAdoption() throws(StoreError) {
        do {
            try queue.write { db in
                let last = try Int64.fetchOne(db, sql: LayerDatabase.lastChangeNumber) ?? 0
                try db.execute(
                    sql: "UPDATE meta SET removed = 0, changeNumberFloor = ?",
                    arguments: [LayerDatabase.numberFloor(past: last)])
            }
            _ = try queue.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
        } catch {
            throw LayerDatabase.map(error, key: key)
        }
    }

    /// Whether the removed mark is set.
    func isMarkedRemoved() throws(StoreError) -> Bool {
        try read { db in try Bool.fetchOne(db, sql: "SELECT removed FROM meta") ?? false }
    }

    /// Reads the pending changes, the untold lost ones and the last change number given,
    /// and sets the removed mark, in one IMMEDIATE transaction, so every change committed
    /// before is in what is returned, and every write after it is refused. Used by a
    /// layer's replacement, which numbers its own changes past `lastNumber`.
    func takePendingChangesAndMarkRemoved() throws(StoreError) -> (
        changes: [PendingChange], lost: [LostChangeReport], lastNumber: Int64
    ) {
        do {
            return try queue.writeWithoutTransaction { db in
                var taken: (changes: [PendingChange], lost: [LostChangeReport], lastNumber: Int64) = ([], [], 0)
                try db.inTransaction(.immediate) {
                    taken.changes = try LayerDatabase.fetchPending(db)
                    taken.lost = try LayerDatabase.fetchLost(db)
                    taken.lastNumber = try Int64.fetchOne(db, sql: LayerDatabase.lastChangeNumber) ?? 0
                    try db.execute(sql: "UPDATE meta SET removed = 1")
                    return .commit
                }
                return taken
            }
        } catch {
            throw LayerDatabase.map(error, key: key)
        }
    }
}
