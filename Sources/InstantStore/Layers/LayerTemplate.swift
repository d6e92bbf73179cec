import Foundation
import GRDB
import Synchronization

/// The bytes of a new, empty layer file: the whole schema, no row, in the rollback
/// format. Built once per process, in memory, by SQLite and the migrator; every new layer
/// starts as a copy of them (``LayerImage``, or a file that
/// ``LayerDatabase/openStagingQueue(path:key:)`` builds a large layer in), which skips
/// the migrator's schema work (1–2 ms per layer).
///
/// ```swift
/// try LayerTemplate.writeEmptyLayer(into: file, key: key)
/// let queue = try LayerDatabase.openStagingQueue(path: tmpPath, key: key)
/// ```
enum LayerTemplate {
    private static let image = Mutex<[UInt8]?>(nil)

    /// The empty layer's bytes.
    static func emptyImage() throws -> [UInt8] {
        if let image = image.withLock({ $0 }) { return image }
        // Built on SQLite's in-memory file system (not a plain `:memory:` database), whose
        // pager keeps the header as it does for a file.
        let queue = try LayerImage.inMemoryQueue()
        try queue.inDatabase { db in try LayerImage.load([], into: db) }
        try LayerMigrations.migrator.migrate(queue)
        let built = try queue.inDatabase { db in try LayerImage.withImage(of: db) { Array($0) } }
        try queue.close()
        return image.withLock { image in
            if image == nil { image = built }
            return image ?? built
        }
    }

    /// Writes an empty layer into `file` (new and empty), not synced.
    static func writeEmptyLayer(into file: POSIXFile, key: String) throws(StoreError) {
        let bytes: [UInt8]
        do { bytes = try emptyImage() } catch { throw LayerDatabase.map(error, key: key) }
        try file.write(contentsOf: bytes)
    }
}
