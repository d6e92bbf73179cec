import GRDB

/// The catalog's schema, one migration per format change. Never edit a shipped migration:
/// add a new one.
enum CatalogMigrations {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "tenant") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("url", .text).notNull().unique()
                t.column("createdAt", .datetime).notNull()
            }
            try db.create(table: "blob", options: .withoutRowID) { t in
                t.primaryKey("sha256", .text)
                t.column("size", .integer).notNull()
                t.column("storedSize", .integer).notNull()
                t.column("refCount", .integer).notNull().defaults(to: 0)
                t.column("createdAt", .datetime).notNull()
                t.column("lastVerifiedAt", .datetime)
            }
            try db.create(
                index: "blob_unreferenced", on: "blob", columns: ["sha256"], condition: Column("refCount") <= 0)
            try db.create(table: "document") { t in
                t.autoIncrementedPrimaryKey("id")
                t.belongsTo("tenant", onDelete: .restrict).notNull()
                // Identifiers are opaque bytes (UTF-8 of any string, NUL included).
                t.column("identifier", .blob).notNull()
                t.column("blobSha256", .text).references("blob", column: "sha256", onDelete: .restrict)
                t.column("corrupt", .boolean).notNull().defaults(to: false)
                t.column("layerCount", .integer).notNull().defaults(to: 0)
                t.column("createdAt", .datetime).notNull()
                t.column("lastUsedAt", .datetime).notNull()
                t.uniqueKey(["tenantId", "identifier"])
            }
            try db.create(index: "document_blob", on: "document", columns: ["blobSha256"])
            try db.create(
                index: "document_unreferenced", on: "document", columns: ["tenantId"],
                condition: Column("layerCount") == 0)
            try db.create(table: "layer") { t in
                t.autoIncrementedPrimaryKey("id")
                t.belongsTo("document", onDelete: .restrict).notNull()
                t.column("name", .blob).notNull()
                t.column("key", .text).notNull().unique()
                t.column("userId", .blob)
                t.column("corrupt", .boolean).notNull().defaults(to: false)
                t.column("createdAt", .datetime).notNull()
                t.column("lastUsedAt", .datetime).notNull()
                // A summary of the layer file for listings; the file is the authority.
                t.column("annotationCount", .integer).notNull().defaults(to: 0)
                t.column("pendingCount", .integer).notNull().defaults(to: 0)
                t.column("bytes", .integer).notNull().defaults(to: 0)
                t.uniqueKey(["documentId", "name"])
            }
            try db.create(index: "layer_lastUsed", on: "layer", columns: ["lastUsedAt"])
            // Files whose rows are gone and that are to be unlinked, in a later transaction
            // than the one that deleted the row (so no row ever outlives its file).
            try db.create(table: "tombstone", options: .withoutRowID) { t in
                t.primaryKey("path", .text)
                t.column("createdAt", .datetime).notNull()
            }
        }
        return migrator
    }

    /// The newest migration this build knows: the catalog's format version.
    static var latestVersion: String { migrator.migrations.last ?? "none" }
}
