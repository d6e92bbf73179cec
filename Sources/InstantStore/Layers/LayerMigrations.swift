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
        migrator.registerMigration("layer-v2", migrate: addSyncIdentity)
        return migrator
    }

    /// Protocol 2's sync identity: the random client id the server keys its verdicts by,
    /// and the epoch that goes with the cursor. A file from before gets its client id here.
    static func addSyncIdentity(_ db: Database) throws {
        try db.alter(table: "meta") { t in
            t.add(column: "clientId", .text)
            t.add(column: "epoch", .text)
        }
        try db.execute(sql: "UPDATE meta SET clientId = ?", arguments: [UUID().uuidString.lowercased()])
    }

    /// Brings a file made by an older version up to date, race-free across processes: the
    /// missing migrations run inside one IMMEDIATE transaction that re-reads what is
    /// applied under the write lock (GRDB's migrator reads it before taking the lock).
    static func upgrade(_ db: Database) throws {
        try db.inTransaction(.immediate) {
            let applied = try migrator.appliedIdentifiers(db)
            if !applied.contains("layer-v2") {
                try addSyncIdentity(db)
                try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('layer-v2')")
            }
            return .commit
        }
    }

    static var latestVersion: String { migrator.migrations.last ?? "none" }
}
