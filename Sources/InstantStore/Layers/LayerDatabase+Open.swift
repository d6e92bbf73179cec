import Foundation
import GRDB

/// How a layer's file is opened: for writing (WAL, `synchronous = FULL`), or for reading
/// only on a read-only file system.
extension LayerDatabase {
    static func openQueue(path: String, key: String, synchronous: String = "FULL") throws(StoreError)
        -> DatabaseQueue
    {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        configuration.label = "InstantStore.layer"
        configuration.prepareDatabase { db in
            // The main file is open, its -wal not yet (SQLite opens it on the first read).
            try Failpoint.check("layer.open.beforeFirstRead", path: key)
            // First: switching a new file to WAL is itself a synced write otherwise.
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
            try db.execute(sql: "PRAGMA journal_mode = WAL")
        }
        do {
            // Never created here: every caller opens a file that exists (a layer, a sealed
            // staged file), and one removed since it was found is missing, not made again.
            return try DatabaseQueue(path: SQLiteFile.existingOpenPath(path), configuration: configuration)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CANTOPEN {
            // Gone since the caller found it, or unreadable: told apart as at the open's start.
            guard try FileSystem.isPresent(path) else {
                throw .corruptLayer(key: key, reason: "the layer file is missing")
            }
            throw map(error, key: key)
        } catch {
            throw map(error, key: key)
        }
    }

    /// Opens a layer file on a read-only file system, for reading only, as the catalog is
    /// (``SQLiteFile/readOnlyOpenPath(_:)``): `immutable` when no `-wal` holds commits,
    /// else through the `-shm` a process left beside it.
    static func openReadOnlyQueue(path: String, key: String) throws(StoreError) -> DatabaseQueue {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(30)
        configuration.label = "InstantStore.layer"
        configuration.prepareDatabase { _ in try Failpoint.check("layer.open.beforeFirstRead", path: key) }
        do {
            return try DatabaseQueue(
                path: try SQLiteFile.readOnlyOpenPath(path),
                configuration: configuration)
        } catch {
            throw map(error, key: key)
        }
    }
}
