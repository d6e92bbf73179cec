import Foundation
import GRDB
import InstantStore

/// Stores with many layers for the listing benchmarks: catalog rows written straight into
/// the catalog (through the store's own schema), one tenant, one document and PDF per layer.
public enum SyntheticStore {
    /// Creates a store at `root` with `layers` layers (plus the seed layer that creates the
    /// schema); with `files`, an empty file in `layers/` for each, so file tools have work.
    @discardableResult
    public static func create(at root: URL, layers: Int, files: Bool = false) throws -> InstantStore {
        let store = try InstantStore(root: root)
        try store.createLayer(tenant: try TenantURL("https://bench.example"), document: "seed", layer: "")
        let queue = try DatabaseQueue(path: root.appendingPathComponent("catalog.sqlite").path)
        try queue.write { db in
            let now = Date()
            for index in 0..<layers {
                let sha = String(format: "%064x", index + 1)
                let key = String(format: "%032x", index)
                try db.execute(
                    sql:
                        "INSERT INTO blob (sha256, size, storedSize, refCount, createdAt) VALUES (?, 100000, 90000, 1, ?)",
                    arguments: [sha, now])
                try db.execute(
                    sql: """
                        INSERT INTO document (tenantId, identifier, blobSha256, corrupt, layerCount, createdAt, lastUsedAt)
                        VALUES (1, ?, ?, 0, 1, ?, ?)
                        """,
                    arguments: [Data("doc-\(index)".utf8), sha, now, now])
                try db.execute(
                    sql: """
                        INSERT INTO layer (documentId, name, key, corrupt, createdAt, lastUsedAt, annotationCount, pendingCount, bytes)
                        VALUES (last_insert_rowid(), ?, ?, 0, ?, ?, 12, 0, 32768)
                        """, arguments: [Data(), key, now, now.addingTimeInterval(Double(index))])
                if files {
                    FileManager.default.createFile(
                        atPath: root.appendingPathComponent("layers/\(key).sqlite").path, contents: nil)
                }
            }
        }
        try queue.close()
        return store
    }
}
