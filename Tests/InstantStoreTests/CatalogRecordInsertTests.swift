import Foundation
import GRDB
import Testing

@testable import InstantStore

/// A download's commit inserts its document's and its layer's rows with cached statements
/// rather than GRDB's record `insert`: each column must be stored exactly as the record
/// insert stores it (same value, same SQLite type, dates in the same text), or every
/// reader of the catalog would see another row.
@Suite struct CatalogRecordInsertTests {
    private func catalog() throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        let queue = try DatabaseQueue(configuration: configuration)
        try CatalogMigrations.migrator.migrate(queue)
        return queue
    }

    /// Every column but the row id and `varying` (the one unique per row), each as SQL
    /// quotes it, with its SQLite type.
    private func stored(_ table: String, id: Int64?, varying: String, in db: Database) throws -> [String] {
        let row = try #require(try Row.fetchOne(db, sql: "SELECT * FROM \(table) WHERE id = ?", arguments: [id]))
        return try row.columnNames.filter { $0 != "id" && $0 != varying }.map { column in
            let typed = try #require(
                try Row.fetchOne(
                    db, sql: "SELECT quote(\(column)), typeof(\(column)) FROM \(table) WHERE id = ?", arguments: [id]))
            return "\(column)=\(typed[0] as String):\(typed[1] as String)"
        }
    }

    @Test func aDocumentRowIsStoredAsTheRecordInsertStoresIt() throws {
        let queue = try catalog()
        try queue.write { db in
            var tenant = TenantRecord(id: nil, url: "https://example.test/", createdAt: Date())
            try tenant.insert(db)
            let tenantID = try #require(tenant.id)
            try db.execute(
                sql: "INSERT INTO blob (sha256, size, storedSize, refCount, createdAt) VALUES ('ab', 1, 1, 0, 0)")
            let now = Date(timeIntervalSince1970: 1_790_000_000.123_456)
            for blob in [nil, "ab"] as [String?] {
                for corrupt in [false, true] {
                    var byRecord = DocumentRecord(
                        id: nil, tenantId: tenantID, identifier: "doc-é-\(blob ?? "")-\(corrupt)".storedBytes,
                        blobSha256: blob,
                        corrupt: corrupt, layerCount: 3, createdAt: now, lastUsedAt: now.addingTimeInterval(1))
                    try byRecord.insert(db)
                    var byStatement = byRecord
                    byStatement.id = nil
                    byStatement.identifier = "doc-è-\(blob ?? "")-\(corrupt)".storedBytes
                    try byStatement.insertWithCachedStatement(db)
                    #expect(byStatement.id == db.lastInsertedRowID && byStatement.id != byRecord.id)
                    #expect(
                        try stored("document", id: byStatement.id, varying: "identifier", in: db)
                            == stored("document", id: byRecord.id, varying: "identifier", in: db))
                    // And read back as the record it was.
                    let read = try #require(try DocumentRecord.fetchOne(db, key: byStatement.id))
                    let readByRecord = try #require(try DocumentRecord.fetchOne(db, key: byRecord.id))
                    #expect(read.identifier == byStatement.identifier && read.corrupt == corrupt)
                    #expect(read.blobSha256 == blob && read.layerCount == 3)
                    #expect(read.createdAt == readByRecord.createdAt && read.lastUsedAt == readByRecord.lastUsedAt)
                }
            }
        }
    }

    @Test func aLayerRowIsStoredAsTheRecordInsertStoresIt() throws {
        let queue = try catalog()
        try queue.write { db in
            var tenant = TenantRecord(id: nil, url: "https://example.test/", createdAt: Date())
            try tenant.insert(db)
            var document = DocumentRecord(
                id: nil, tenantId: try #require(tenant.id), identifier: "doc".storedBytes, blobSha256: nil,
                corrupt: false, layerCount: 0, createdAt: Date(), lastUsedAt: Date())
            try document.insert(db)
            let now = Date(timeIntervalSince1970: 1_790_000_000.987_654)
            for (index, user) in ([nil, "ana", ""] as [String?]).enumerated() {
                var byRecord = LayerRecord(
                    id: nil, documentId: try #require(document.id), name: "review-\(index)".storedBytes,
                    key: "k\(index)a",
                    userId: user?.storedBytes, corrupt: index == 1, createdAt: now, lastUsedAt: now,
                    annotationCount: 12, pendingCount: Int64(index), bytes: 40_960)
                try byRecord.insert(db)
                var byStatement = byRecord
                byStatement.id = nil
                byStatement.key = "k\(index)b"
                byStatement.name = "review-\(index)b".storedBytes
                try byStatement.insertWithCachedStatement(db)
                #expect(byStatement.id == db.lastInsertedRowID && byStatement.id != byRecord.id)
                // The key and the name differ by design (both are unique): the rest is the same.
                let byStatementRow = try stored("layer", id: byStatement.id, varying: "name", in: db)
                let byRecordRow = try stored("layer", id: byRecord.id, varying: "name", in: db)
                #expect(byStatementRow.filter { !$0.hasPrefix("key=") } == byRecordRow.filter { !$0.hasPrefix("key=") })
                #expect(byStatementRow.contains("key='k\(index)b':text"))
                let name = try String.fetchOne(
                    db, sql: "SELECT typeof(name) || ':' || hex(name) FROM layer WHERE id = ?",
                    arguments: [byStatement.id])
                #expect(name == "blob:" + Data("review-\(index)b".utf8).map { String(format: "%02X", $0) }.joined())
            }
        }
    }
}
