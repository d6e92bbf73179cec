import Foundation
import GRDB
import InstantProtocol

/// The server's documents, layers and annotation records: one SQLite database (GRDB
/// `DatabasePool`, WAL) in the data directory.
///
/// Every layer has a revision that only grows: each write that changes records takes
/// the next one and stamps it on every record it touched, so "every change since revision
/// N" is the records whose revision is above N (deleted ones included).
public final class ServerDatabase: Sendable {
    let pool: DatabasePool
    let reaper = DiscardReaper()

    public init(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        configuration.foreignKeysEnabled = true
        configuration.label = "InstantServer"
        // Created 0600 before SQLite would create it 0644 (its -wal and -shm take its mode).
        if !FileManager.default.fileExists(atPath: path) {
            FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
        }
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path + suffix)
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        // Acknowledged changes must survive a power cut: sync every commit (GRDB's pool
        // leaves its writer at NORMAL).
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        try Self.migrator.migrate(pool)
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("server-v1") { db in
            try db.create(table: "document") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("identifier", .blob).notNull().unique()
                t.column("sha256", .text).notNull()
                t.column("size", .integer).notNull()
                t.column("title", .text)
                t.column("createdAt", .datetime).notNull()
            }
            try db.create(table: "layer") { t in
                t.autoIncrementedPrimaryKey("id")
                t.belongsTo("document", onDelete: .cascade).notNull()
                t.column("name", .blob).notNull()
                t.column("revision", .integer).notNull().defaults(to: 0)
                t.column("createdAt", .datetime).notNull()
                t.uniqueKey(["documentId", "name"])
            }
            try db.create(table: "record") { t in
                t.belongsTo("layer", onDelete: .cascade).notNull()
                t.column("annotationId", .blob).notNull()
                t.column("content", .text)
                t.column("createdBy", .text)
                t.column("updatedBy", .text)
                t.column("revision", .integer).notNull()
                t.column("deleted", .boolean).notNull().defaults(to: false)
                t.primaryKey(["layerId", "annotationId"])
            }
            try db.create(index: "record_by_revision", on: "record", columns: ["layerId", "revision"])
        }
        migrator.registerMigration("server-v2") { db in
            // Protocol 2. A layer's epoch is random, new whenever the layer is (re)created.
            try db.alter(table: "layer") { t in t.add(column: "epoch", .text).notNull().defaults(to: "") }
            try db.execute(sql: "UPDATE layer SET epoch = lower(hex(randomblob(8)))")
            // The client that last wrote a record (NULL: the backend API): "changed since
            // your base" means by another writer.
            try db.alter(table: "record") { t in t.add(column: "writer", .text) }
            // The verdict on every change a client sent, so a replay gets it again.
            try db.create(table: "appliedChange", options: .withoutRowID) { t in
                t.belongsTo("layer", onDelete: .cascade).notNull()
                t.column("clientId", .text).notNull()
                t.column("changeId", .integer).notNull()
                t.column("accepted", .boolean).notNull()
                t.column("reason", .text)
                t.column("message", .text)
                // SHA-256 of the change as sent: a changeId reused for another change is refused.
                t.column("digest", .blob).notNull()
                t.column("appliedAt", .datetime).notNull()
                t.primaryKey(["layerId", "clientId", "changeId"])
            }
            try db.create(index: "appliedChange_age", on: "appliedChange", columns: ["appliedAt"])
        }
        migrator.registerMigration("server-v3") { db in
            // A named layer is forked from another with its history (revisions and
            // tombstones kept), so a cursor on the source taken before the fork stays
            // valid on the fork: `forkEpoch` is the epoch such a cursor carries, and
            // `forkRevision` the source's revision at the fork.
            try db.alter(table: "layer") { t in
                t.add(column: "forkEpoch", .text)
                t.add(column: "forkRevision", .integer).notNull().defaults(to: 0)
            }
            // Pages of changes are read in (revision, annotationId) order from a cursor.
            try db.drop(index: "record_by_revision")
            try db.create(index: "record_by_revision", on: "record", columns: ["layerId", "revision", "annotationId"])
        }
        migrator.registerMigration("server-v4") { db in
            // A fork is copied a batch per short transaction; until its last batch commits
            // it names the layer it copies here and no request sees it.
            try db.alter(table: "layer") { t in t.add(column: "copyingFrom", .integer) }
        }
        migrator.registerMigration("server-v5") { db in
            // What the reaper looks for, found without scanning the tables.
            try db.execute(sql: "CREATE INDEX layer_discarded ON layer(id) WHERE copyingFrom = 0")
            try db.execute(sql: "CREATE INDEX layer_copying ON layer(id) WHERE copyingFrom > 0")
            try db.execute(sql: "CREATE INDEX document_deleted ON document(id) WHERE typeof(identifier) = 'text'")
        }
        migrator.registerMigration("server-v6") { db in
            // A named layer deleted and written again is a new history, also while it is
            // unwritten: its view's epoch takes a salt that each deletion sets, so a cursor
            // or a change's base taken on an earlier incarnation (or on its fork) is never
            // taken for one of the next (``LayerView/epoch``).
            try db.create(table: "viewSalt", options: .withoutRowID) { t in
                t.column("documentId", .integer).notNull().references("document", onDelete: .cascade)
                t.column("name", .blob).notNull()
                t.column("salt", .text).notNull()
                t.primaryKey(["documentId", "name"])
            }
        }
        migrator.registerMigration("server-v7") { db in
            // Snapshots and listings read a layer's live records in id order: with this,
            // they step over none of its tombstones (kept for the changes feed, never
            // purged), however many deletions the layer has seen.
            try db.execute(sql: "CREATE INDEX record_live ON record(layerId, annotationId) WHERE deleted = 0")
        }
        return migrator
    }

    /// Runs `body` in an IMMEDIATE transaction on GRDB's writer queue; the calling task
    /// waits without holding a thread of Swift's cooperative pool.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await pool.writeWithoutTransaction { db in
            var result: T?
            try db.inTransaction(.immediate) {
                result = try body(db)
                return .commit
            }
            guard let result else { throw ProtocolError(.internal, "a transaction returned nothing") }
            return result
        }
    }

    /// Removes discarded rows in the background (``DiscardReaper``).
    func reap() {
        Task { await reaper.signal(self) }
    }

    /// Runs `body` in a read transaction (a WAL snapshot; writers are not blocked), off
    /// Swift's cooperative pool.
    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await pool.read(body)
    }
}

/// A stored document.
public struct DocumentInfo: Sendable, Equatable, Codable {
    public var documentId: String
    public var sha256: String
    public var size: Int64
    public var title: String?
    public var createdAt: Date
    public var layers: [String]?

    enum CodingKeys: String, CodingKey {
        case documentId = "document_id"
        case sha256 = "sourcePdfSha256"
        case size, title
        case createdAt = "created_at"
        case layers
    }
}

/// Identifiers are stored as BLOBs of their UTF-8 bytes, so any string (NUL included)
/// round-trips and none is ever part of a path.
extension String {
    var blob: Data { Data(utf8) }
    init(blob: Data) { self = String(decoding: blob, as: UTF8.self) }
}
