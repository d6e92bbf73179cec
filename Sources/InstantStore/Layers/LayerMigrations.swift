import Foundation
import GRDB

/// The schema of a layer database.
enum LayerMigrations {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("layer-v1") { db in
            try db.create(table: "meta") { t in
                t.column("id", .integer).primaryKey().check { $0 == 1 }
                t.column("tenant", .text).notNull()
                t.column("documentIdentifier", .blob).notNull()
                t.column("layerName", .blob).notNull()
                t.column("pdfSha256", .text)
                t.column("userId", .blob)
                t.column("lastServerRevision", .integer).notNull().defaults(to: 0)
                // Set, under this database's write lock, before the layer is deleted:
                // a writer that finds it set knows its change would be lost and fails.
                t.column("removed", .boolean).notNull().defaults(to: false)
                t.column("createdAt", .datetime).notNull()
            }
            try db.create(table: "record", options: .withoutRowID) { t in
                t.primaryKey("annotationId", .blob)
                t.column("content", .blob).notNull()
                t.column("serverRevision", .integer)
                t.column("deleted", .boolean).notNull().defaults(to: false)
            }
            try db.create(table: "pendingChange") { t in
                t.autoIncrementedPrimaryKey("seq")
                t.column("annotationId", .blob).notNull()
                t.column("kind", .text).notNull().check { ["create", "update", "delete"].contains($0) }
                t.column("content", .blob)
                t.column("createdAt", .datetime).notNull()
            }
        }
        for (identifier, migrate) in upgrades { migrator.registerMigration(identifier, migrate: migrate) }
        return migrator
    }

    /// The migrations after the first, in order: how a new file is made, and how an
    /// older one is brought up to date (``upgrade(_:checkingFirst:)``).
    static let upgrades: [(identifier: String, migrate: @Sendable (Database) throws -> Void)] = [
        ("layer-v2", addSyncIdentity),
        ("layer-v3", numberChangesInMeta),
        ("layer-v4", addChangeBases),
        ("layer-v5", addBaseEpoch),
        ("layer-v6", addLostChanges),
        ("layer-v7", addLostChangeWinner),
    ]

    /// Protocol 2's sync identity: the random client id the server keys its verdicts by,
    /// and the epoch that goes with the cursor. A file from before gets its client id here.
    static func addSyncIdentity(_ db: Database) throws {
        try db.alter(table: "meta") { t in
            t.add(column: "clientId", .text)
            t.add(column: "epoch", .text)
        }
        try db.execute(sql: "UPDATE meta SET clientId = ?", arguments: [UUID().uuidString.lowercased()])
    }

    /// The local changes move to `localChange`, numbered past `meta.changeNumberFloor`
    /// instead of by `AUTOINCREMENT`, whose `sqlite_sequence` row was a third page written
    /// by every local change (a create wrote three pages where a plain insert writes one).
    ///
    /// A change's number is its `changeId`, which the server keys its verdict by for as long
    /// as the client id lives: a number must never be given twice. A new change is numbered
    /// past the highest pending one and past the floor; the floor starts at the highest
    /// number ever given (AUTOINCREMENT's record), and a trigger raises it to every change
    /// deleted, whoever deletes it. The table has a new name so that a process of an older
    /// version that had the file open fails on its next statement, rather than inserting
    /// changes numbered by SQLite's default (past the highest row, or 1 in an empty table).
    static func numberChangesInMeta(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE meta ADD COLUMN changeNumberFloor INTEGER NOT NULL DEFAULT 0")
        try db.execute(
            sql: """
                UPDATE meta SET changeNumberFloor = max(
                    ifnull((SELECT seq FROM sqlite_sequence WHERE name = 'pendingChange'), 0),
                    ifnull((SELECT max(seq) FROM pendingChange), 0))
                """)
        try db.execute(
            sql: """
                CREATE TABLE localChange (
                    seq INTEGER PRIMARY KEY,
                    annotationId BLOB NOT NULL,
                    kind TEXT NOT NULL CHECK (kind IN ('create', 'update', 'delete')),
                    content BLOB,
                    createdAt DATETIME NOT NULL)
                """)
        try db.execute(
            sql: """
                INSERT INTO localChange (seq, annotationId, kind, content, createdAt)
                SELECT seq, annotationId, kind, content, createdAt FROM pendingChange
                """)
        let copied = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM localChange")
        guard copied == (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM pendingChange")) else {
            throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: "the pending changes did not all copy")
        }
        try db.execute(sql: "DROP TABLE pendingChange")
        try db.execute(
            sql: """
                CREATE TRIGGER localChangeDecided BEFORE DELETE ON localChange BEGIN
                    UPDATE meta SET changeNumberFloor = max(changeNumberFloor, OLD.seq);
                END
                """)
    }

    /// Each local change keeps the server revision it was made against, sent with it: the
    /// server judges it against that, not against the cursor of the request that carries it,
    /// which may have moved past another writer's change the local change never saw (it
    /// was made while an earlier sync was in flight, or left for a later request). The
    /// changes of a file from before get the cursor they would have been sent with; a
    /// change an older process adds meanwhile has none, and is sent with the request's.
    static func addChangeBases(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE localChange ADD COLUMN baseRevision INTEGER")
        try db.execute(sql: "UPDATE localChange SET baseRevision = (SELECT lastServerRevision FROM meta WHERE id = 1)")
    }

    /// `meta.baseEpoch` names the history the pending changes' base revisions belong to in
    /// a file that has no cursor (a repair's replacement, which starts from a snapshot): a
    /// snapshot of that history keeps them.
    /// (Builds of 2026-11-25 added it with layer-v4: such a file has it already.)
    static func addBaseEpoch(_ db: Database) throws {
        guard try !db.columns(in: "meta").contains(where: { $0.name == "baseEpoch" }) else { return }
        try db.execute(sql: "ALTER TABLE meta ADD COLUMN baseEpoch TEXT")
    }

    /// The local changes the server decided against, kept from the transaction that drops
    /// them until the app has been told (``LostChangeReport``).
    static func addLostChanges(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS lostChange (
                    seq INTEGER PRIMARY KEY,
                    annotationId BLOB NOT NULL,
                    kind TEXT NOT NULL,
                    content BLOB,
                    reason TEXT NOT NULL,
                    message TEXT,
                    winner BLOB)
                """)
    }

    /// What won, beside each lost change: for a file a build of the same day marked
    /// layer-v6 with the table but not the column (layer-v6 makes it with the column).
    static func addLostChangeWinner(_ db: Database) throws {
        guard try !db.columns(in: "lostChange").contains(where: { $0.name == "winner" }) else { return }
        try db.execute(sql: "ALTER TABLE lostChange ADD COLUMN winner BLOB")
    }

    /// Brings a file made by an older version up to date, race-free across processes: the
    /// missing migrations run inside one IMMEDIATE transaction that re-reads what is
    /// applied under the write lock (GRDB's migrator reads it before taking the lock).
    ///
    /// With `checkingFirst`, a damaged file is not upgraded (it is reported corrupt):
    /// writing into it could lose what a salvage, which reads either format, would still
    /// find. A copy is upgraded whatever its state.
    static func upgrade(_ db: Database, checkingFirst: Bool = true) throws {
        try db.inTransaction(.immediate) {
            let applied = try migrator.appliedIdentifiers(db)
            // Another process may have upgraded it since this one looked.
            if migrator.migrations.allSatisfy(applied.contains) { return .commit }
            if checkingFirst {
                let check = try String.fetchAll(db, sql: "PRAGMA quick_check")
                guard check == ["ok"] else {
                    throw DatabaseError(
                        resultCode: .SQLITE_CORRUPT,
                        message: "not upgraded, the file is damaged: " + check.prefix(3).joined(separator: "; "))
                }
            }
            for (identifier, migrate) in upgrades where !applied.contains(identifier) {
                try migrate(db)
                try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES (?)", arguments: [identifier])
            }
            return .commit
        }
    }

    static var latestVersion: String { migrator.migrations.last ?? "none" }
}
