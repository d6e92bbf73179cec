import Foundation
import GRDB
import Synchronization

/// One layer's annotations: records as this device sees them, the local changes not yet
/// acknowledged by the server, and the sync cursor. One SQLite file per layer (WAL,
/// `synchronous = FULL`): a change is durable when the call that made it returns.
///
/// Get one from ``InstantStore/openLayer(tenant:document:layer:)``:
///
/// ```swift
/// let layer = try store.openLayer(tenant: tenant, document: "doc-1", layer: "")
/// try layer.create(id: "a1", content: Data(#"{"v":2,"type":"pspdfkit/note"}"#.utf8))
/// let outgoing = try layer.pendingChanges()
/// // … send them; when the server answers:
/// try layer.applyServerChanges(changes, newRevision: 42, acknowledgedThrough: outgoing.last?.sequence)
/// ```
///
/// If another process removes the layer while it is open, every later write throws
/// ``StoreError/layerRemoved(document:layer:)``; a write that returned was not lost.
public final class LayerDatabase: Sendable {
    let queue: DatabaseQueue
    /// The random key naming the file, `layers/<key>.sqlite`.
    public let key: String
    let path: String
    private let hooks: LayerHooks
    /// Whether the catalog's row for this handle's layer is known durable: synced when
    /// the store opened the handle, or by its first local change (``LayerHooks/syncRecord``).
    private let recordSynced = Mutex(false)

    /// Opens the layer file at `path`, upgrading a file of an older format in place.
    /// `isCopy`: the file is a copy (of a quarantined layer), upgraded even when damaged,
    /// to read what can be read; an original that is damaged is left as it is (corrupt).
    /// `readOnly`: the store is read-only (nil: whether `path` is on a read-only file
    /// system); `hold`, its share of the store's lock, kept until ``close()``: for a
    /// read-only store, the exclusive hold that keeps anybody from changing the file while
    /// this handle reads it; for a writable one, the shared lock that keeps a catalog
    /// rebuild from starting while this handle may write.
    init(
        path: String, key: String, hooks: LayerHooks = LayerHooks(), isCopy: Bool = false, readOnly: Bool? = nil,
        hold: (any StoreLockShare)? = nil
    ) throws(StoreError) {
        self.path = path
        self.key = key
        self.hooks = hooks
        self.hold = hold
        // Missing only when nothing is there: one lstat cannot look at is an I/O failure.
        guard try FileSystem.isPresent(path) else { throw .corruptLayer(key: key, reason: "the layer file is missing") }
        if LayerDatabase.isEmptyBesideWAL(path) {
            throw .corruptLayer(key: key, reason: "the layer file is empty beside a -wal that may hold its changes")
        }
        try Failpoint.check("layer.open.beforeFile", path: key)
        isReadOnly = readOnly ?? FileSystem.isOnReadOnlyFileSystem(path)
        queue =
            isReadOnly
            ? try LayerDatabase.openReadOnlyQueue(path: path, key: key)
            : try LayerDatabase.openQueue(path: path, key: key)
        do {
            let migrator = LayerMigrations.migrator
            let (superseded, complete) = try queue.read { db in
                (try migrator.hasBeenSuperseded(db), try migrator.hasCompletedMigrations(db))
            }
            if superseded {
                throw StoreError.unsupportedFormatVersion(
                    file: path, found: "newer than layer format", supported: LayerMigrations.latestVersion)
            }
            if !complete {
                // A file of the first format (before protocol 2's client id) is upgraded in
                // place; one without even the first migration is not a layer.
                guard try queue.read({ try migrator.appliedIdentifiers($0).contains("layer-v1") }) else {
                    throw StoreError.corruptLayer(key: key, reason: "the layer schema is incomplete")
                }
                if isReadOnly {
                    throw StoreError.readOnlyStore(path: path, operation: "upgrade the layer to this version's format")
                }
                try queue.writeWithoutTransaction { db in try LayerMigrations.upgrade(db, checkingFirst: !isCopy) }
            }
        } catch {
            throw LayerDatabase.map(error, key: key)
        }
    }

    /// Whether this handle's file is on a read-only file system: opened for reading only,
    /// and every change fails with ``StoreError/readOnlyStore(path:operation:)``.
    public let isReadOnly: Bool

    /// The handle's share of its store's lock (``StoreLockShare``).
    private let hold: (any StoreLockShare)?

    /// Whether the file at `path` is empty while its `-wal` is not. SQLite deletes the
    /// `-wal` of an empty database file when it opens it, so such a file is never opened
    /// (not even read-only, to salvage it): it is reported corrupt, and recovery
    /// quarantines it with its `-wal`, which may hold its changes. A new file never has a
    /// `-wal` before its first page; a file cut short by a failing disk can.
    static func isEmptyBesideWAL(_ path: String) -> Bool {
        (try? FileSystem.fileSize(path)) == 0 && ((try? FileSystem.fileSize(path + "-wal")) ?? 0) > 0
    }

    // MARK: Reading

    /// The layer's self-description.
    public func metadata() throws(StoreError) -> LayerMetadata {
        try read { db in try LayerDatabase.readMetadata(db, key: self.key) }
    }

    /// The annotations, in identifier order; locally deleted ones only when asked.
    public func annotations(includingDeleted: Bool = false) throws(StoreError) -> [Annotation] {
        try read { db in try Self.fetchAnnotations(db, includingDeleted: includingDeleted) }
    }

    static func fetchAnnotations(_ db: Database, includingDeleted: Bool = false) throws -> [Annotation] {
        try Row.fetchAll(
            db, sql: "SELECT * FROM record \(includingDeleted ? "" : "WHERE deleted = 0") ORDER BY annotationId"
        ).map(LayerDatabase.annotation)
    }

    /// One annotation, or nil (also for a locally deleted one).
    public func annotation(id: String) throws(StoreError) -> Annotation? {
        try read { db in try Self.fetchAnnotation(db, id: id) }
    }

    static func fetchAnnotation(_ db: Database, id: String) throws -> Annotation? {
        try Row.fetchOne(
            db, sql: "SELECT * FROM record WHERE annotationId = ? AND deleted = 0", arguments: [id.storedBytes]
        ).map(LayerDatabase.annotation)
    }

    /// What the layer holds of each of `ids` (absent ones are left out), in one read: the
    /// server revision it was last confirmed at, and whether it is deleted locally. Keyed by
    /// the ids' bytes: two spellings Swift calls equal are two records.
    public func recordStates(among ids: [String]) throws(StoreError) -> [ExactString: RecordState] {
        guard !ids.isEmpty else { return [:] }
        return try read { db in
            var found: [ExactString: RecordState] = [:]
            // SQLite binds at most 32,766 parameters to a statement.
            for start in stride(from: 0, to: ids.count, by: 500) {
                let chunk = ids[start..<min(start + 500, ids.count)]
                let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
                let rows = try Row.fetchAll(
                    db,
                    sql: "SELECT annotationId, serverRevision, deleted FROM record WHERE annotationId IN (\(marks))",
                    arguments: StatementArguments(chunk.map(\.storedBytes)))
                for row in rows {
                    found[ExactString(String(storedBytes: row[0]))] = RecordState(
                        serverRevision: row[1], isDeleted: row[2])
                }
            }
            return found
        }
    }

    /// The local changes not yet acknowledged by the server, oldest first (the first
    /// `limit` of them, when given).
    ///
    /// Each carries the server revision it was made against: the cursor then, or the
    /// record's revision when a sync's page had brought a later one. A change of a record
    /// under an earlier pending change was made on that change, not on the server's
    /// version: send it with the earliest base among its record's changes.
    public func pendingChanges(limit: Int? = nil) throws(StoreError) -> [PendingChange] {
        try read { db in try LayerDatabase.fetchPending(db, limit: limit) }
    }

    /// How many local changes wait for the server, without reading them.
    public func pendingChangeCount() throws(StoreError) -> Int {
        try read { db in try Self.countPending(db) }
    }

    static func countPending(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM localChange") ?? 0
    }

    /// How many local changes wait for the server, and how many were ever made (the last
    /// sequence number given): between two readings, the changes the server decided are
    /// the pending ones before, plus those made since, less the pending ones now.
    public func changeCounts() throws(StoreError) -> (pending: Int, made: Int64) {
        try read { db in
            let pending = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM localChange") ?? 0
            let made = try Int64.fetchOne(db, sql: LayerDatabase.lastChangeNumber) ?? 0
            return (pending, made)
        }
    }

    /// The annotations that have a local change waiting for the server (only changes after
    /// sequence number `after`, when given), by their ids' bytes: two spellings Swift calls
    /// equal are two records.
    public func pendingAnnotationIDs(after: Int64? = nil) throws(StoreError) -> Set<ExactString> {
        try read { db in try Self.pendingIDs(db, after: after) }
    }

    /// The ids a pending change (after the sequence number `after`) holds.
    static func pendingIDs(_ db: Database, after: Int64? = nil) throws -> Set<ExactString> {
        Set(
            try Data.fetchAll(
                db, sql: "SELECT DISTINCT annotationId FROM localChange WHERE seq > ?", arguments: [after ?? -1]
            ).map { ExactString(String(storedBytes: $0)) })
    }

    /// The pending changes in order; `table` is `pendingChange` for a file of a format
    /// before layer-v3 (read by salvage, which does not upgrade what it reads).
    static func fetchPending(_ db: Database, limit: Int? = nil, table: String = "localChange") throws
        -> [PendingChange]
    {
        try Row.fetchAll(
            db, sql: "SELECT * FROM \(table) ORDER BY seq LIMIT ?", arguments: [limit.map { Int64($0) } ?? -1]
        ).map { row in
            guard let kind = PendingChange.Kind(rawValue: try row.decode(forColumn: "kind")) else {
                throw StoreError.corruptLayer(key: "", reason: "a pending change of unknown kind")
            }
            return PendingChange(
                sequence: try row.decode(forColumn: "seq"),
                annotationID: String(storedBytes: try row.decode(forColumn: "annotationId")), kind: kind,
                content: try row.decode(forColumn: "content"), createdAt: try row.decode(forColumn: "createdAt"),
                baseRevision: try row.decode(forColumn: "baseRevision"))
        }
    }

    /// Records the PDF this layer belongs to.
    func setPDF(_ hash: BlobHash) throws(StoreError) {
        try write { db in try db.execute(sql: "UPDATE meta SET pdfSha256 = ?", arguments: [hash.hex]) }
    }

    /// Counts and size for the catalog's listing summary.
    func summary() throws(StoreError) -> LayerSummary {
        let counts = try read { db in
            (
                try Int64.fetchOne(db, sql: "SELECT COUNT(*) FROM record WHERE deleted = 0") ?? 0,
                try Int64.fetchOne(db, sql: "SELECT COUNT(*) FROM localChange") ?? 0,
                try Self.countLost(db)
            )
        }
        let bytes = try (FileSystem.fileSize(path) ?? 0) + (FileSystem.fileSize(path + "-wal") ?? 0)
        return LayerSummary(annotationCount: counts.0, pendingCount: counts.1 + counts.2, bytes: bytes)
    }

    /// Closes the file; later calls throw ``StoreError/layerClosed(key:)``.
    public func close() {
        hooks.willClose?(self)
        try? queue.close()
        hold?.release()
    }

    // MARK: Helpers

    /// A read in one deferred transaction, in read-only mode (as `DatabaseQueue.read`).
    func read<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        do {
            return try onConnection { db in
                try db.readOnly {
                    var result: T?
                    try db.inTransaction(.deferred) {
                        result = try body(db)
                        return .commit
                    }
                    guard let result else {
                        throw StoreError.database(extendedCode: 2, message: "a read gave no result")
                    }
                    return result
                }
            }
        } catch {
            throw flagged(LayerDatabase.map(error, key: key))
        }
    }

    /// Runs `body` on the handle's connection, or throws `layerClosed` once ``close()``
    /// ran. A closed queue has no connection left, and SQLite's calls crash on none (GRDB
    /// does not check): another thread may close a handle a caller still holds (a removal,
    /// a document letting a removed layer go). Checked on the queue, as `close()` runs.
    func onConnection<T>(_ body: (Database) throws -> T) throws -> T {
        try queue.inDatabase { db in
            guard db.sqliteConnection != nil else { throw StoreError.layerClosed(key: key) }
            return try body(db)
        }
    }

    /// A durable write: IMMEDIATE, refused once the layer is removed; then the catalog's
    /// summary is refreshed.
    ///
    /// A write that finds the removed mark asks the store whether the removal really
    /// happened (``LayerHooks/resolveMark``): a removal that was refused, rolled back or
    /// killed leaves its mark behind, and that mark is cleared rather than reported, so
    /// nobody sees `layerRemoved` for a layer that is still there.
    func write(addsPending: Bool = false, _ body: (Database) throws -> Void) throws(StoreError) {
        if isReadOnly { throw .readOnlyStore(path: path, operation: "change the layer's annotations") }
        if addsPending { syncRecordOnce() }
        var resolved = false
        while true {
            do {
                try onConnection { db in
                    try LayerDatabase.immediateTransaction(db) {
                        // No meta row reads as removed.
                        let removed = try db.fetchInt64("SELECT removed FROM meta") ?? 1
                        if removed != 0 { throw MarkedRemoved() }
                        try body(db)
                        try Failpoint.check("layer.beforeCommit", path: self.path)
                    }
                }
                break
            } catch is MarkedRemoved {
                try markFound(resolvedBefore: &resolved)
            } catch {
                throw flagged(LayerDatabase.map(error, key: key))
            }
        }
        hooks.didWrite(self, addsPending)
    }

    /// A read or write found the removed mark: returns (to do it again) when the mark was
    /// stale and is now cleared (``LayerHooks/resolveMark``), the first time only; throws
    /// `layerRemoved` when the removal really happened.
    func markFound(resolvedBefore resolved: inout Bool) throws(StoreError) {
        if !resolved, let resolve = hooks.resolveMark, try resolve(self) {
            resolved = true
            return
        }
        let meta = try metadata()
        throw .layerRemoved(document: meta.documentIdentifier, layer: meta.layerName)
    }

    /// Before this handle's first local change (unless its opening did it): makes the
    /// catalog's row for the layer durable, outside the layer's write lock (a removal takes
    /// the catalog's lock, then the layer's). A download commits that row without syncing
    /// it, so a power cut may forget it, and a change made then would be durable in a file
    /// the store takes for an orphan, out of sight until an orphan sweep adopts it back (or
    /// quarantines it, if the layer was downloaded again meanwhile).
    ///
    /// Best effort: a sync that fails (the catalog busy, full, or closed) never fails the
    /// edit, which the layer file alone makes durable; the next change tries again (and
    /// waits, as the catalog's writers do, up to its busy timeout). A layer with no row was
    /// removed: the write's removed mark refuses the change.
    private func syncRecordOnce() {
        guard let syncRecord = hooks.syncRecord, !recordSynced.withLock({ $0 }) else { return }
        if (try? syncRecord(self)) == true { markRecordSynced() }
    }

    /// The catalog's row for this layer is durable: no local change needs to sync it.
    func markRecordSynced() {
        recordSynced.withLock { $0 = true }
    }

    /// GRDB's `inTransaction(.immediate)` with its `BEGIN` and `COMMIT` prepared once per
    /// connection and run through SQLite's C API (``Database/run(_:_:)``): a local change
    /// is one short transaction, and preparing those two statements (and `SELECT removed`)
    /// was a tenth of its CPU time. GRDB never sees the transaction begin or end; nothing
    /// here uses what it tracks about transactions (observers, `transactionDate`), and
    /// `isInsideTransaction` asks SQLite. Rolls back when `body` or the commit throws, and
    /// rethrows the first error.
    static func immediateTransaction(_ db: Database, _ body: () throws -> Void) throws {
        try db.run("BEGIN IMMEDIATE TRANSACTION")
        do {
            try body()
            // SQLite rolls a transaction back by itself on some errors (SQLITE_FULL, IOERR,
            // NOMEM…). A body that caught one and went on would have run its later statements
            // in autocommit mode, each durable on its own: refuse rather than report success.
            guard db.isInsideTransaction else {
                throw DatabaseError(
                    resultCode: .SQLITE_ABORT, message: "the transaction was rolled back before its end")
            }
            try db.run("COMMIT TRANSACTION")
        } catch {
            // A failed statement may have rolled the transaction back already (SQLITE_FULL,
            // SQLITE_IOERR…); a failed COMMIT leaves it open.
            if db.isInsideTransaction { try? db.execute(sql: "ROLLBACK TRANSACTION") }
            throw error
        }
    }

    /// Tells the store at once when the file turns out corrupt, so listings show it `invalid`.
    private func flagged(_ error: StoreError) -> StoreError {
        if case .corruptLayer = error { hooks.flagCorrupt?() }
        return error
    }

    private struct MarkedRemoved: Error {}

    static func readMetadata(_ db: Database, key: String) throws -> LayerMetadata {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM meta WHERE id = 1") else {
            throw StoreError.corruptLayer(key: key, reason: "the meta row is missing")
        }
        let tenantText: String = try row.decode(forColumn: "tenant")
        guard let tenant = try? TenantURL(tenantText) else {
            throw StoreError.corruptLayer(key: key, reason: "the meta row names no valid server")
        }
        let pdf: String? = try row.decode(forColumn: "pdfSha256")
        let user: Data? = try row.decode(forColumn: "userId")
        return LayerMetadata(
            tenant: tenant, documentIdentifier: String(storedBytes: try row.decode(forColumn: "documentIdentifier")),
            layerName: String(storedBytes: try row.decode(forColumn: "layerName")),
            pdfSHA256: pdf.flatMap { BlobHash(hex: $0) }, userID: user.map { String(storedBytes: $0) },
            lastServerRevision: try row.decode(forColumn: "lastServerRevision"),
            epoch: try row.decode(forColumn: "epoch"), clientID: try row.decode(forColumn: "clientId"),
            baseEpoch: try row.decode(forColumn: "baseEpoch"))
    }

    /// (Every value through `decode`, which throws where GRDB's subscripts trap: a value of
    /// the wrong type in a damaged file is ``StoreError/corruptLayer(key:reason:)``, never
    /// a crash, also for the recovery paths that read what they can of such a file.)
    private static func annotation(_ row: Row) throws -> Annotation {
        Annotation(
            id: String(storedBytes: try row.decode(forColumn: "annotationId")),
            content: try row.decode(forColumn: "content"), serverRevision: try row.decode(forColumn: "serverRevision"),
            isDeleted: try row.decode(forColumn: "deleted"))
    }

    static func liveRecordExists(_ db: Database, _ id: String) throws -> Bool {
        try db.fetchInt64("SELECT 1 FROM record WHERE annotationId = ? AND deleted = 0", .blob(id.storedBytes)) != nil
    }

    static func map(_ error: any Error, key: String) -> StoreError {
        if let error = error as? StoreError { return error }
        if let error = error as? RowDecodingError {
            return .corruptLayer(key: key, reason: "a value of the wrong type: \(error)")
        }
        if let error = error as? DatabaseError {
            switch error.resultCode {
            case .SQLITE_CORRUPT, .SQLITE_NOTADB:
                return .corruptLayer(key: key, reason: error.message ?? "not a database")
            case .SQLITE_BUSY, .SQLITE_LOCKED: return .busy(path: "layer \(key)")
            case .SQLITE_FULL: return .diskFull(path: "layer \(key)")
            default:
                return .database(extendedCode: error.extendedResultCode.rawValue, message: error.message ?? "")
            }
        }
        return .database(extendedCode: 1, message: "\(error)")
    }
}

/// What a layer handle tells the store that opened it. Handles used inside a catalog
/// transaction (removal, repair) get none: the hooks write to the catalog themselves.
struct LayerHooks: Sendable {
    /// After each local write.
    /// A write committed; the flag says it recorded local changes.
    var didWrite: @Sendable (LayerDatabase, Bool) -> Void = { _, _ in }
    /// Before the handle closes.
    var willClose: (@Sendable (LayerDatabase) -> Void)?
    /// A write found the removed mark: returns true when the removal never committed (the
    /// mark was stale and is now cleared), false when the layer is really gone.
    var resolveMark: (@Sendable (LayerDatabase) throws(StoreError) -> Bool)?
    /// A read or write found the file corrupt.
    var flagCorrupt: (@Sendable () -> Void)?
    /// Before the handle's first local change: makes every catalog commit so far durable,
    /// the one that recorded this layer included; false when the catalog has no row for it.
    var syncRecord: (@Sendable (LayerDatabase) throws(StoreError) -> Bool)?
}
