import Foundation
import GRDB

/// The pending local changes inside a layer's transactions: how a change is numbered and
/// recorded with its base revision, how decided changes go and hand their bases on, and
/// how the pending changes are applied again over the server's records.
extension LayerDatabase {
    /// The highest change number given so far: the last pending change's, or the floor
    /// (see ``LayerMigrations/numberChangesInMeta(_:)``) when that is higher.
    static let lastChangeNumber =
        "SELECT max(ifnull((SELECT max(seq) FROM localChange), 0), changeNumberFloor) FROM meta WHERE id = 1"

    /// Records a local change, numbered past every number given before (pending, decided
    /// or carried over). Runs inside ``write(addsPending:_:)``, which has made sure the meta
    /// row is there.
    ///
    /// `createdAt` is stored as seconds since 1970 (GRDB reads numbers and its text dates
    /// alike as `Date`): formatting a date as text cost more than the insert.
    ///
    /// The change's base revision is what the layer showed of the record: the cursor, or
    /// the revision of the server's version the record holds when that is later (a page
    /// of an unfinished sync brought it). A record under an earlier pending change shows
    /// that change instead; ``SyncRound`` sends such a change with the earlier one's base,
    /// and ``dropDecided(_:through:)`` hands a decided change's base on to the later ones.
    static func appendPending(_ db: Database, _ id: String, _ kind: PendingChange.Kind, _ content: Data?) throws {
        let bytes = id.storedBytes
        try db.run(
            """
            INSERT INTO localChange (seq, annotationId, kind, content, createdAt, baseRevision)
            VALUES ((\(lastChangeNumber)) + 1, ?, ?, ?, ?,
                    (SELECT max(lastServerRevision,
                                ifnull((SELECT serverRevision FROM record WHERE annotationId = ?), 0))
                     FROM meta WHERE id = 1))
            """,
            .blob(bytes), .text(kind.rawValue), content.map(BoundValue.blob) ?? .null,
            .real(Date().timeIntervalSince1970), .blob(bytes))
    }

    /// Drops the local changes through `acknowledged` (the server decided them), handing
    /// their bases on first (``handDownBases(_:decidedThrough:only:)``).
    static func dropDecided(_ db: Database, through acknowledged: Int64) throws {
        try handDownBases(db, decidedThrough: acknowledged)
        try db.execute(sql: "DELETE FROM localChange WHERE seq <= ?", arguments: [acknowledged])
    }

    /// A decided change (through `decided`) stops showing when its record is replaced by
    /// the server's answer: a page that brings the record, a snapshot, or the last page.
    /// The pending changes of that record made until then were made on top of it, so they
    /// take its base when that is older: the server's changes they never showed (the
    /// decided change shadowed them) stay news to them. The decided change's base is then
    /// cleared, so a change made later, on the server's version, keeps its own.
    ///
    /// With `only`, just the records of those ids (by bytes: a page's); else every record.
    static func handDownBases(_ db: Database, decidedThrough decided: Int64, only: Set<[UInt8]>? = nil) throws {
        var bases: [[UInt8]: Int64] = [:]
        var handed: [Int64] = []
        var withBase = 0
        let decidedRows = try Row.fetchCursor(
            db.cachedStatement(
                sql:
                    "SELECT seq, annotationId, baseRevision FROM localChange WHERE seq <= ? AND baseRevision IS NOT NULL"
            ), arguments: [decided])
        while let row = try decidedRows.next() {
            withBase += 1
            let id = [UInt8](row[1] as Data)
            if let only, !only.contains(id) { continue }
            let base: Int64 = row[2]
            bases[id] = min(base, bases[id] ?? base)
            handed.append(row[0])
        }
        guard !bases.isEmpty else { return }
        let later = try Row.fetchCursor(
            db.cachedStatement(sql: "SELECT seq, annotationId, baseRevision FROM localChange WHERE seq > ?"),
            arguments: [decided])
        var lowered: [(seq: Int64, base: Int64)] = []
        while let row = try later.next() {
            guard let base = bases[[UInt8](row[1] as Data)] else { continue }
            if let own: Int64 = row[2], own <= base { continue }
            lowered.append((row[0], base))
        }
        let lower = try db.cachedStatement(sql: "UPDATE localChange SET baseRevision = ? WHERE seq = ?")
        for change in lowered { try lower.execute(arguments: [change.base, change.seq]) }
        if handed.count == withBase {
            try db.execute(sql: "UPDATE localChange SET baseRevision = NULL WHERE seq <= ?", arguments: [decided])
        } else {
            let clear = try db.cachedStatement(sql: "UPDATE localChange SET baseRevision = NULL WHERE seq = ?")
            for seq in handed { try clear.execute(arguments: [seq]) }
        }
    }

    /// Applies the pending changes, in order, to the records (after the server's state
    /// replaced them), so the local view keeps every unacknowledged change.
    /// With `only`, just the pending changes of those annotations (the records a page of
    /// server changes replaced).
    static func reapplyPending(_ db: Database, to only: [String]? = nil, after decided: Int64? = nil) throws {
        if let only, only.isEmpty { return }
        // By the ids' bytes, as stored: not `String`s (two canonically equivalent spellings
        // are two records), and not `Data` (its hash covers the first 80 bytes only, and a
        // page of ids sharing a longer prefix would make this quadratic).
        let wanted = only.map { Set($0.map { [UInt8]($0.storedBytes) }) }
        // The records replaced stop showing their decided changes, which are not put back.
        if let decided { try handDownBases(db, decidedThrough: decided, only: wanted) }
        let rows = try Row.fetchAll(
            db, sql: "SELECT annotationId, kind, content FROM localChange WHERE seq > ? ORDER BY seq",
            arguments: [decided ?? Int64.min])
        let upsert = try db.cachedStatement(
            sql: """
                INSERT INTO record (annotationId, content, serverRevision, deleted) VALUES (?, ?, NULL, 0)
                ON CONFLICT(annotationId) DO UPDATE SET content = excluded.content, deleted = 0
                """)
        let markDeleted = try db.cachedStatement(sql: "UPDATE record SET deleted = 1 WHERE annotationId = ?")
        for row in rows {
            let id: Data = try row.decode(forColumn: "annotationId")
            if let wanted, !wanted.contains([UInt8](id)) { continue }
            let kind: String? = try row.decode(forColumn: "kind")
            if let content: Data = try row.decode(forColumn: "content"), kind != "delete" {
                try upsert.execute(arguments: [id, content])
            } else {
                try markDeleted.execute(arguments: [id])
            }
        }
    }
}
