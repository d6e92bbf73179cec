import Foundation
import GRDB
/// A layer file being written in `tmp/` under a writer lock (`<key>.layer.lock`), so a
/// sweeper can tell a live writer's file from a dead one's. The lock file holds its flock
/// from before its name appears. Call ``cleanUp()`` when done, whether the file was
/// committed (renamed away) or not.
struct LayerStaging: Sendable {
    let key = RandomKey.make()
    let path: String
    private let lock: POSIXFile

    init(_ layout: StoreLayout) throws(StoreError) {
        path = layout.tmpDirectory + "/\(key).layer"
        lock = try POSIXFile.createLocked(path + ".lock")
    }

    /// Removes whatever is left of the staged file and its lock.
    func cleanUp() {
        for suffix in ["", "-wal", "-shm"] { try? FileSystem.remove(path + suffix) }
        try? FileSystem.remove(lock.path)
        lock.close()
    }

    /// The file was renamed into `layers/` but its row was not committed: the lock is let
    /// go and its file kept, so the sweep of dead temp files finds the orphan from it
    /// (without listing `layers/`).
    func abandonPlaced() {
        for suffix in ["-wal", "-shm"] { try? FileSystem.remove(path + suffix) }
        lock.close()
    }
}

extension LayerDatabase {
    /// Sets the PDF a staged layer file (in `tmp/`, not yet in the catalog) belongs to, and
    /// makes the file whole and durable again, as ``create(at:key:metadata:records:pending:)`` leaves it.
    static func restamp(at path: String, key: String, pdf: BlobHash?) throws(StoreError) {
        do {
            let queue = try openQueue(path: path, key: key, synchronous: "OFF")
            try queue.write { db in try db.execute(sql: "UPDATE meta SET pdfSha256 = ?", arguments: [pdf?.hex]) }
            try sealStaged(queue)
        } catch {
            throw map(error, key: key)
        }
        try syncStaged(at: path)
    }

    /// Folds the WAL into the main file, so the one file is the whole layer, and closes it.
    static func sealStaged(_ queue: DatabaseQueue) throws {
        _ = try queue.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
        try queue.close()
    }

    /// Removes what the sealed file's WAL left and makes the file durable (its only sync).
    static func syncStaged(at path: String) throws(StoreError) {
        try FileSystem.remove(path + "-wal")
        try FileSystem.remove(path + "-shm")
        try POSIXFile.open(path, flags: O_RDWR).sync()
    }
}
