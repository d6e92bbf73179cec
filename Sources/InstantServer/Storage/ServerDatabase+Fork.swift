import Foundation
import GRDB
import InstantProtocol
import InstantStore

/// Forking a layer: a named layer is created as a copy of another (the default layer, for
/// a layer created by its first write) with its whole history: every record row, deletions
/// included, with its revision. So a cursor taken on the unwritten layer's view (which is
/// the default layer's) stays valid on the fork.
///
/// The copy is made a batch per short write transaction, the layer row invisible until the
/// last one (``prepareFork(document:name:source:)``); the transaction that writes to the
/// layer first copies what the source changed meanwhile and makes it visible
/// (``completeFork(of:as:in:)``). So no transaction holds SQLite's one write lock for
/// longer than a batch, however large the source. A kill leaves an invisible partial copy,
/// which the next fork of that name resumes.
extension ServerDatabase {
    /// Rows copied per transaction.
    static let forkBatch = 2000

    /// Copies `source`'s records into the invisible layer `name`, batch by batch, unless
    /// the layer exists already (or the document or source does not: then the write that
    /// follows says so).
    func prepareFork(document: String, name: String, source: String) async throws {
        guard let target = try await startFork(document: document, name: name, source: source) else { return }
        while try await copyForkBatch(target, limit: Self.forkBatch) == Self.forkBatch {
            try Failpoint.check("fork.afterBatch")
        }
    }

    /// The partial copy a fork of `name` continues (made here, or left by a kill), or nil
    /// when there is nothing to copy (the layer exists, or the document or source does not).
    func startFork(document: String, name: String, source: String) async throws -> (layer: Int64, source: Int64)? {
        guard !name.isEmpty else { return nil }
        // Most writes go to a layer that exists: one read, and nothing to prepare.
        guard case .unwritten = try await view(document: document, layer: name) else { return nil }
        let started = try await write { db -> (target: (layer: Int64, source: Int64)?, discarded: Bool) in
            guard let documentID = try Self.documentID(document, in: db),
                case .unwritten = try Self.view(document: document, name: name, in: db),
                let from = try Self.view(document: document, name: source, in: db).stored
            else { return (nil, false) }
            var discarded = false
            if let partial = try Self.partialFork(documentID: documentID, name: name, in: db) {
                if partial.from == from.id {
                    // Resumed: its age counts from now (the reaper gives up old copies).
                    try db.execute(sql: "UPDATE layer SET createdAt = ? WHERE id = ?", arguments: [Date(), partial.id])
                    return ((partial.id, from.id), false)
                }
                // A partial copy of another layer (a kill, then a fork from elsewhere): it goes.
                try Self.discard(partial.id, in: db)
                discarded = true
            }
            return ((try Self.insertPartialCopy(of: from, as: name, in: db), from.id), discarded)
        }
        if started.discarded { reap() }
        return started.target
    }

    /// Copies the next `limit` rows of a fork in one transaction; returns how many.
    func copyForkBatch(_ target: (layer: Int64, source: Int64), limit: Int) async throws -> Int {
        try await write { db in try Self.copyBatch(to: target.layer, from: target.source, limit: limit, in: db) }
    }

    /// Makes the fork of `source` named `name` visible: copies what the source changed
    /// since the last batch, and takes the source's revision and the epoch of its view.
    /// Without a prepared copy (a race), copies everything here.
    static func completeFork(of source: LayerRef, as name: String, in db: Database) throws -> LayerRef {
        let id: Int64
        let partial = try partialFork(documentID: source.documentID, name: name, in: db)
        if let partial, partial.from == source.id {
            id = partial.id
        } else {
            if let partial { try discard(partial.id, in: db) }
            id = try insertPartialCopy(of: source, as: name, in: db)
        }
        _ = try copyBatch(to: id, from: source.id, limit: -1, in: db)
        // Only a fork of the default layer continues a view clients could have read (the
        // unwritten layer's); a copy of another named layer starts a history of its own.
        let forkEpoch =
            source.name.isEmpty
            ? LayerView.unwrittenEpoch(
                of: source, salt: try viewSalt(documentID: source.documentID, name: name, in: db)) : nil
        try db.execute(
            sql: """
                UPDATE layer SET copyingFrom = NULL, revision = ?, forkRevision = ?, forkEpoch = ?, createdAt = ?
                WHERE id = ?
                """, arguments: [source.revision, source.revision, forkEpoch, Date(), id])
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM layer WHERE id = ?", arguments: [id]) else {
            throw ProtocolError(.internal, "a new layer vanished in its own transaction")
        }
        return LayerRef(row: row)
    }

    /// Copies up to `limit` (-1: all) rows of `source` past the last one copied, in
    /// (revision, id) order, replacing older copies of the same record. A record the source
    /// changes while the copy runs moves past the cursor, so it is copied again, newer.
    private static func copyBatch(to layer: Int64, from source: Int64, limit: Int, in db: Database) throws -> Int {
        // A copy given up meanwhile (its document deleted, the reaper's age limit) stops.
        guard
            try Int64.fetchOne(db, sql: "SELECT copyingFrom FROM layer WHERE id = ?", arguments: [layer]) == source
        else { return 0 }
        let last = try Row.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT revision, annotationId FROM record WHERE layerId = ?
                    ORDER BY revision DESC, annotationId DESC LIMIT 1
                    """), arguments: [layer])
        try db.cachedStatement(
            sql: """
                INSERT INTO record (layerId, annotationId, content, createdBy, updatedBy, revision, deleted, writer)
                SELECT ?, annotationId, content, createdBy, updatedBy, revision, deleted, writer FROM record
                WHERE layerId = ? AND (revision, annotationId) > (?, ?)
                ORDER BY revision, annotationId LIMIT ?
                ON CONFLICT (layerId, annotationId) DO UPDATE SET
                    content = excluded.content, createdBy = excluded.createdBy, updatedBy = excluded.updatedBy,
                    revision = excluded.revision, deleted = excluded.deleted, writer = excluded.writer
                """
        ).execute(arguments: [layer, source, last?[0] ?? Int64(-1), last?[1] ?? Data(), limit])
        return db.changesCount
    }

    /// A new, invisible layer row `name` that copies `source`; returns its id.
    private static func insertPartialCopy(of source: LayerRef, as name: String, in db: Database) throws -> Int64 {
        try db.execute(
            sql: """
                INSERT INTO layer (documentId, name, revision, createdAt, epoch, copyingFrom)
                VALUES (?, ?, 0, ?, lower(hex(randomblob(8))), ?)
                """, arguments: [source.documentID, name.blob, Date(), source.id])
        return db.lastInsertedRowID
    }

    private static func partialFork(documentID: Int64, name: String, in db: Database) throws -> (
        id: Int64, from: Int64
    )? {
        guard
            let row = try Row.fetchOne(
                db,
                sql: "SELECT id, copyingFrom FROM layer WHERE documentId = ? AND name = ? AND copyingFrom > 0",
                arguments: [documentID, name.blob])
        else { return nil }
        return (row[0], row[1])
    }

    /// Marks a layer discarded (a deleted layer, a partial copy given up): `copyingFrom` 0
    /// (no layer's id) hides it from every request, and its name becomes TEXT (every real
    /// name is a BLOB), which frees the name at once.
    static func discard(_ id: Int64, in db: Database) throws {
        try db.execute(sql: "UPDATE layer SET copyingFrom = 0, name = 'discarded/' || id WHERE id = ?", arguments: [id])
    }

    /// How long a partial copy may wait for the write that made it before it is given up
    /// (a write refused after its copy, or a fork whose source went).
    static let partialCopyLifetime: TimeInterval = 3600

    /// Deletes discarded layers a batch of records (then of verdicts) per transaction,
    /// then the documents being deleted once they have no layer left; first, gives up
    /// partial copies whose source is gone or that waited too long. Run in the background
    /// after each deletion and at start (a kill in between leaves only hidden rows).
    func dropDiscarded() async throws {
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE layer SET copyingFrom = 0, name = 'discarded/' || id
                    WHERE copyingFrom > 0 AND (createdAt < ?
                        OR NOT EXISTS (SELECT 1 FROM layer AS source WHERE source.id = layer.copyingFrom
                                       AND source.copyingFrom IS NULL))
                    """, arguments: [Date().addingTimeInterval(-Self.partialCopyLifetime)])
        }
        while true {
            let more = try await write { db -> Bool in
                guard let id = try Int64.fetchOne(db, sql: "SELECT id FROM layer WHERE copyingFrom = 0 LIMIT 1") else {
                    try db.execute(
                        sql: """
                            DELETE FROM document WHERE typeof(identifier) = 'text'
                            AND NOT EXISTS (SELECT 1 FROM layer WHERE layer.documentId = document.id)
                            """)
                    return false
                }
                try db.execute(
                    sql: """
                        DELETE FROM record WHERE layerId = ? AND annotationId IN (
                            SELECT annotationId FROM record WHERE layerId = ? LIMIT ?)
                        """, arguments: [id, id, Self.forkBatch])
                if db.changesCount > 0 { return true }
                try db.execute(
                    sql: """
                        DELETE FROM appliedChange WHERE (layerId, clientId, changeId) IN (
                            SELECT layerId, clientId, changeId FROM appliedChange WHERE layerId = ? LIMIT ?)
                        """, arguments: [id, Self.forkBatch])
                if db.changesCount == 0 { try db.execute(sql: "DELETE FROM layer WHERE id = ?", arguments: [id]) }
                return true
            }
            if !more { return }
            try Failpoint.check("drop.afterBatch")
        }
    }
}
