#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// A new layer file built in memory, then written with one `write` and synced: SQLite
/// works on a copy of the empty layer's bytes (``LayerTemplate``) that it holds in memory
/// (`sqlite3_deserialize`), the rows go in there, and the finished image is written to a
/// new file, marked as a WAL database as every layer in `layers/` is. The caller syncs it.
///
/// Building a download's layer in its file cost about a millisecond before its fsync
/// (opening the file, SQLite's page writes, the switch to WAL), and the layer file is what
/// a small download's commit waits for; in memory it costs a fraction of that.
///
/// ```swift
/// try LayerImage.write(into: file, key: key) { db in
///     try db.execute(sql: "INSERT INTO meta (id, tenant, …) VALUES (1, ?, …)", arguments: […])
/// }
/// try file.sync()
/// ```
enum LayerImage {
    /// The most content (annotation ids and bytes) a layer built in memory holds: 16 MiB.
    /// A larger one is built in its file, so that memory stays bounded by its records.
    static let defaultLimit = 16 << 20

    /// Writes a layer into `file` (new and empty): the empty schema, then whatever `fill`
    /// writes, in one transaction. Not synced. On failure, what was written is left for
    /// the caller to remove.
    static func write(into file: POSIXFile, key: String, _ fill: (Database) throws -> Void) throws(StoreError) {
        do {
            let template = try LayerTemplate.emptyImage()
            try withConnection { db in
                try load(template, into: db)
                try db.inTransaction {
                    try fill(db)
                    return .commit
                }
                try writeImage(of: db, into: file)
            }
        } catch {
            throw LayerDatabase.map(error, key: key)
        }
    }

    /// In-memory connections kept for the next image (at most ``idleLimit``), each holding
    /// an empty database: GRDB takes about a quarter of a millisecond to open one, and a
    /// download builds one image.
    private static let idle = Mutex<[DatabaseQueue]>([])
    private static let idleLimit = 4

    /// Runs `body` on an in-memory connection of its own, kept afterwards for the next
    /// call unless `body` failed (its state is not known then).
    private static func withConnection<T>(_ body: (Database) throws -> T) throws -> T {
        let kept = idle.withLock { $0.popLast() }
        let queue = try kept ?? inMemoryQueue()
        let result: T
        do {
            result = try queue.inDatabase { db in
                let result = try body(db)
                // The image's memory goes back now, not when the connection is next used.
                try load([], into: db)
                return result
            }
        } catch {
            try? queue.close()
            throw error
        }
        let closing = idle.withLock { idle -> DatabaseQueue? in
            guard idle.count < idleLimit else { return queue }
            idle.append(queue)
            return nil
        }
        // Closing only frees it: the image is written either way.
        try? closing?.close()
        return result
    }

    /// A database connection of its own, in memory.
    static func inMemoryQueue() throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.label = "InstantStore.layerImage"
        return try DatabaseQueue(configuration: configuration)
    }

    /// Makes `image` (a database file's bytes, in the rollback format) the connection's
    /// main database, in memory, on SQLite's in-memory file system (`memdb`): the same
    /// pager as a file's, keeping its header as a file's. An empty image makes an empty
    /// database.
    static func load(_ image: [UInt8], into db: Database) throws {
        let connection = try connection(of: db)
        var buffer: UnsafeMutableRawPointer?
        if !image.isEmpty {
            guard let allocated = sqlite3_malloc64(sqlite3_uint64(image.count)) else {
                throw DatabaseError(resultCode: .SQLITE_NOMEM, message: "no memory for a layer's image")
            }
            image.withUnsafeBytes { source in
                if let base = source.baseAddress { allocated.copyMemory(from: base, byteCount: source.count) }
            }
            buffer = allocated
        }
        // SQLite owns the buffer from here (freed on close, or by the call if it fails),
        // and may grow it.
        let code = sqlite3_deserialize(
            connection, "main", buffer?.assumingMemoryBound(to: UInt8.self), sqlite3_int64(image.count),
            sqlite3_int64(image.count), UInt32(SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE))
        guard code == SQLITE_OK else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: "sqlite3_deserialize failed")
        }
        db.clearSchemaCache()
    }

    /// The main database's bytes, in place (valid until the connection changes or closes).
    static func withImage<T>(of db: Database, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T {
        let connection = try connection(of: db)
        var size: sqlite3_int64 = 0
        // A deserialized database is one buffer: it is lent, not copied.
        guard let bytes = sqlite3_serialize(connection, "main", &size, UInt32(SQLITE_SERIALIZE_NOCOPY)),
            size >= 100
        else {
            throw DatabaseError(resultCode: .SQLITE_ERROR, message: "sqlite3_serialize gave no image")
        }
        return try body(UnsafeRawBufferPointer(start: bytes, count: Int(size)))
    }

    /// Writes the database's image into `file`, marked WAL.
    private static func writeImage(of db: Database, into file: POSIXFile) throws {
        try withImage(of: db) { image in
            // Bytes 18 and 19 of the header are the file format's write and read versions;
            // 2 is WAL: what makes a file a WAL database (`PRAGMA journal_mode = WAL` would
            // also bump the change counter, which WAL does not use).
            var header = Array(image[0..<100])
            header[18] = 2
            header[19] = 2
            try file.write(contentsOf: header)
            try file.write(UnsafeRawBufferPointer(rebasing: image[100...]))
        }
    }

    private static func connection(of db: Database) throws -> SQLiteConnection {
        guard let connection = db.sqliteConnection else {
            throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "the database connection is closed")
        }
        return connection
    }
}
