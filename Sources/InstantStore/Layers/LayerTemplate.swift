import Foundation
import GRDB
import Synchronization

/// The bytes of a new, empty layer file: the whole schema, no row, in the rollback format
/// that ``LayerDatabase/openStagingQueue(path:key:)`` builds a layer in. The first
/// layer a process creates is built by SQLite and the migrator, and its bytes are kept;
/// every later one starts as a copy of them, which skips the migrator's schema work (the
/// most expensive part of a download's layer file, 1–2 ms of some 4).
///
/// ```swift
/// try LayerTemplate.writeEmptyLayer(at: tmpPath, key: key)
/// let queue = try LayerDatabase.openStagingQueue(path: tmpPath, key: key)
/// ```
enum LayerTemplate {
    private static let image = Mutex<[UInt8]?>(nil)

    /// Creates `path` (which must not exist; mode 0600, so SQLite's `-wal` and `-shm`, which
    /// take the database's mode, keep a user's annotations private) as an empty layer
    /// file, not synced.
    static func writeEmptyLayer(at path: String, key: String) throws(StoreError) {
        let file = try POSIXFile.open(path, flags: O_RDWR | O_CREAT | O_EXCL)
        defer { file.close() }
        if let image = image.withLock({ $0 }) {
            try file.write(contentsOf: image)
            return
        }
        do {
            let queue = try LayerDatabase.openStagingQueue(path: path, key: key)
            try LayerMigrations.migrator.migrate(queue)
            try queue.close()
        } catch {
            throw LayerDatabase.map(error, key: key)
        }
        // Closed, with its journal in memory: the file alone is the database.
        let size = try file.size()
        let bytes = try file.read(count: Int(size), at: 0)
        guard bytes.count == Int(size) else {
            throw StoreError.corruptLayer(key: key, reason: "a new layer file read back short")
        }
        image.withLock { $0 = $0 ?? bytes }
    }
}
