import Foundation
import GRDB
import InstantStore

/// Stores with many layers for the listing benchmarks: catalog rows written straight into
/// the catalog (through the store's own schema), shaped like a busy multi-tenant cache, so
/// that no listing gets an order for free:
///
/// - 20 tenants, documents dealt to them in turn;
/// - PDF hashes as random as SHA-256s; every tenth document uses the previous document's
///   PDF, which belongs to another tenant (about 10% of PDFs shared between tenants);
/// - four layers in five open a new document; the fifth is a second layer of a random
///   earlier document;
/// - last-use times in random order; a user on every third layer, changes not yet synced
///   on every hundredth.
public enum SyntheticStore {
    public static let tenants = 20

    /// Creates a store at `root` with `layers` layers (plus the seed layer that creates the
    /// schema); with `files`, an empty file in `layers/` for each, so file tools have work.
    @discardableResult
    public static func create(at root: URL, layers: Int, files: Bool = false) throws -> InstantStore {
        let store = try InstantStore(root: root)
        try store.createLayer(tenant: try TenantURL("https://bench.example"), document: "seed", layer: "")
        let queue = try DatabaseQueue(path: root.appendingPathComponent("catalog.sqlite").path)
        let urls = try (1..<tenants).map { try TenantURL("https://t\($0).bench.example").string }
        try queue.write { db in
            let now = Date()
            for url in urls {
                try db.execute(sql: "INSERT INTO tenant (url, createdAt) VALUES (?, ?)", arguments: [url, now])
            }
            let tenantIDs = try Int64.fetchAll(db, sql: "SELECT id FROM tenant ORDER BY id")
            var documentIDs: [Int64] = []
            var sha = ""
            for index in 0..<layers {
                let documentID: Int64
                let name: String
                if index % 5 == 4 {
                    documentID = documentIDs[Int(mix(index) % UInt64(documentIDs.count))]
                    name = "review-\(index)"
                    try db.execute(
                        sql: "UPDATE document SET layerCount = layerCount + 1 WHERE id = ?", arguments: [documentID])
                } else {
                    let number = documentIDs.count
                    if number % 10 == 9 {
                        try db.execute(
                            sql: "UPDATE blob SET refCount = refCount + 1 WHERE sha256 = ?", arguments: [sha])
                    } else {
                        sha = (0..<4).map { String(format: "%016llx", mix(number * 4 + $0)) }.joined()
                        try db.execute(
                            sql: """
                                INSERT INTO blob (sha256, size, storedSize, refCount, createdAt)
                                VALUES (?, 100000, 90000, 1, ?)
                                """,
                            arguments: [sha, now])
                    }
                    try db.execute(
                        sql: """
                            INSERT INTO document (tenantId, identifier, blobSha256, corrupt, layerCount, createdAt,
                                                  lastUsedAt)
                            VALUES (?, ?, ?, 0, 1, ?, ?)
                            """,
                        arguments: [tenantIDs[number % tenantIDs.count], Data("doc-\(number)".utf8), sha, now, now])
                    documentID = db.lastInsertedRowID
                    documentIDs.append(documentID)
                    name = ""
                }
                let key = String(format: "%032x", index)
                try db.execute(
                    sql: """
                        INSERT INTO layer (documentId, name, key, userId, corrupt, createdAt, lastUsedAt,
                                           annotationCount, pendingCount, bytes)
                        VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        documentID, Data(name.utf8), key, index % 3 == 0 ? Data("user-\(index % 50)".utf8) : nil,
                        now, now.addingTimeInterval(-Double(mix(index) % 100_000_000) / 10), index % 40,
                        index % 100 == 0 ? 3 : 0, 8192 * (1 + index % 8),
                    ])
                if files {
                    // 0600, as the store makes them.
                    _ = FileManager.default.createFile(
                        atPath: root.appendingPathComponent("layers/\(key).sqlite").path, contents: nil,
                        attributes: [.posixPermissions: 0o600])
                }
            }
        }
        try queue.close()
        return store
    }

    /// splitmix64: well-spread bits from a counter.
    static func mix(_ value: Int) -> UInt64 {
        var z = UInt64(truncatingIfNeeded: value) &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
