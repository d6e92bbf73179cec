import Foundation
import GRDB

/// A server, by normalised URL.
struct TenantRecord: Codable, FetchableRecord, MutablePersistableRecord, Sendable {
    static let databaseTableName = "tenant"
    var id: Int64?
    var url: String
    var createdAt: Date

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}

/// A PDF in `blobs/`. `refCount` counts the documents whose PDF it is.
struct BlobRecord: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let databaseTableName = "blob"
    var sha256: String
    var size: Int64
    var storedSize: Int64
    var refCount: Int64
    var createdAt: Date
    var lastVerifiedAt: Date?
}

/// A document of a tenant, and the blob holding its PDF (nil before download, or after
/// the PDF was found corrupt and set aside).
struct DocumentRecord: Codable, FetchableRecord, MutablePersistableRecord, Sendable {
    static let databaseTableName = "document"
    var id: Int64?
    var tenantId: Int64
    var identifier: Data
    var blobSha256: String?
    var corrupt: Bool
    var layerCount: Int64
    var createdAt: Date
    var lastUsedAt: Date

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}

/// A layer of a document, the key naming its database file, and a summary of that file.
struct LayerRecord: Codable, FetchableRecord, MutablePersistableRecord, Sendable {
    static let databaseTableName = "layer"
    var id: Int64?
    var documentId: Int64
    var name: Data
    var key: String
    var userId: Data?
    var corrupt: Bool
    var createdAt: Date
    var lastUsedAt: Date
    var annotationCount: Int64
    var pendingCount: Int64
    var bytes: Int64

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}

/// A file to unlink whose row is already gone.
struct TombstoneRecord: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let databaseTableName = "tombstone"
    var path: String
    var createdAt: Date
}

extension String {
    /// The identifier as stored: its UTF-8 bytes, opaque to SQL.
    var storedBytes: Data { Data(utf8) }

    init(storedBytes: Data) { self = String(decoding: storedBytes, as: UTF8.self) }
}

extension DocumentRecord {
    /// Inserts the row with one cached statement and sets ``id``. A download's commit
    /// makes its document's row this way: GRDB's record `insert` encodes the record and
    /// builds its SQL on every call, which cost more than the statement itself.
    mutating func insertWithCachedStatement(_ db: Database) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO document (tenantId, identifier, blobSha256, corrupt, layerCount, createdAt, lastUsedAt)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [tenantId, identifier, blobSha256, corrupt, layerCount, createdAt, lastUsedAt])
        id = db.lastInsertedRowID
    }
}

extension LayerRecord {
    /// Inserts the row with one cached statement and sets ``id``: as
    /// ``DocumentRecord/insertWithCachedStatement(_:)``, for every downloaded layer.
    mutating func insertWithCachedStatement(_ db: Database) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO layer (documentId, name, key, userId, corrupt, createdAt, lastUsedAt,
                                   annotationCount, pendingCount, bytes)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(
            arguments: [
                documentId, name, key, userId, corrupt, createdAt, lastUsedAt, annotationCount, pendingCount, bytes,
            ])
        id = db.lastInsertedRowID
    }
}
