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
        return migrator
    }

    static var latestVersion: String { migrator.migrations.last ?? "none" }
}
