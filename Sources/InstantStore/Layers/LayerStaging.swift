import Foundation
import GRDB
/// A layer file being written in `tmp/` under a writer lock (`<key>.layer.lock`), so a
/// sweeper can tell a live writer's file from a dead one's. The lock file holds its flock
/// from before its name appears. Call ``cleanUp()`` when done, whether the file was
/// committed (renamed away) or not.
///
/// With a store handle's ``SpareLayerLocks``, the lock is a spare renamed to its name
/// (else a new one), and goes back to the spares once cleaned up.
struct LayerStaging: Sendable {
    let key = RandomKey.make()
    let path: String
    private let lock: POSIXFile
    private let spares: SpareLayerLocks?
    /// The directory made for this file alone (``init(privateUnder:)``), removed with it.
    private let ownDirectory: String?

    init(_ layout: StoreLayout, spares: SpareLayerLocks? = nil) throws(StoreError) {
        path = layout.tmpDirectory + "/\(key).layer"
        if let spares {
            lock = try spares.lock(at: path + ".lock")
        } else {
            lock = try POSIXFile.createLocked(path + ".lock")
        }
        self.spares = spares
        ownDirectory = nil
    }

    /// A file in a new directory (0700) of its own under `base`, outside any store: for a
    /// copy of a file of a store that cannot be written (on a read-only file system).
    /// ``cleanUp()`` removes the directory too.
    init(privateUnder base: String) throws(StoreError) {
        Self.sweepDeadCopies(under: base)
        let directory = base + "/" + Self.privatePrefix + key
        guard mkdir(directory, 0o700) == 0 else { throw .fromErrno("mkdir", directory) }
        path = directory + "/\(key).layer"
        do {
            lock = try POSIXFile.createLocked(path + ".lock")
        } catch {
            rmdir(directory)
            throw error
        }
        spares = nil
        ownDirectory = directory
    }

    private static let privatePrefix = "instant-copy-"

    /// Removes the copies that processes killed while they read them left under `base`:
    /// directories of ``init(privateUnder:)`` whose lock nobody holds. Best effort (a
    /// directory it cannot take is left for the next time, or the system's clean-up); only
    /// this user's can be opened.
    private static func sweepDeadCopies(under base: String) {
        guard let names = try? FileSystem.contents(of: base) else { return }
        for name in names where name.hasPrefix(privatePrefix) {
            let directory = base + "/" + name
            let file = directory + "/" + name.dropFirst(privatePrefix.count) + ".layer"
            // A directory just made has no lock file yet: its open fails, and it is left.
            guard let lock = try? POSIXFile.open(file + ".lock", flags: O_RDONLY),
                (try? lock.lockExclusively(wait: false)) == true
            else { continue }
            for suffix in ["", "-wal", "-shm"] { try? FileSystem.remove(file + suffix) }
            lock.removeAndClose()
            rmdir(directory)
        }
    }

    /// Removes whatever is left of the staged file, then its lock (or keeps the lock, still
    /// held, as a spare: it names nothing once the file is gone).
    func cleanUp() {
        for suffix in ["", "-wal", "-shm"] { try? FileSystem.remove(path + suffix) }
        if let spares {
            spares.recycle(lock)
        } else {
            lock.removeAndClose()
        }
        if let ownDirectory { rmdir(ownDirectory) }
    }

    /// Done with the staged file, whether its transaction committed or not: cleaned up
    /// (``cleanUp()``), unless the file was renamed into `layers/` and its transaction did
    /// not commit; then, as ``abandonPlaced()``, the lock is left for the next prune to
    /// find the orphan from (it may hold the only copy of changes a repair salvaged).
    func release(committed: Bool, in layout: StoreLayout) {
        // The key is new and random: a file of that name in layers/ is this one, renamed.
        if !committed, FileSystem.exists(layout.layerPath(key: key)) {
            abandonPlaced()
        } else {
            cleanUp()
        }
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
    /// Opens a layer file being built in `tmp/` (a layer too large to build in memory, see
    /// ``LayerImage``): no sync per commit (nobody sees the file until its one fsync, once
    /// built) and the rollback journal in memory, so
    /// SQLite creates no `-wal`, `-shm` or `-journal` beside it. Each new file costs an
    /// inode, and on a busy file system (no journal, many files recently removed) an inode
    /// costs a scan: two fewer per download. The file stays in the rollback format until
    /// ``sealStaged(_:key:)``.
    ///
    /// A crash while it is open can leave the file torn: it is in `tmp/`, unnamed anywhere,
    /// and the sweep of dead temp files removes it.
    static func openStagingQueue(path: String, key: String) throws(StoreError) -> DatabaseQueue {
        var configuration = Configuration()
        configuration.label = "InstantStore.stagedLayer"
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = OFF")
            try db.execute(sql: "PRAGMA journal_mode = MEMORY")
        }
        do { return try DatabaseQueue(path: path, configuration: configuration) } catch { throw map(error, key: key) }
    }

    /// Turns a file built by ``openStagingQueue(path:key:)`` into the WAL format every layer
    /// in `layers/` has (so the first open there needs no synced write to switch), and
    /// closes it. The switch rewrites the header only: no `-wal` file is made.
    static func sealStaged(_ queue: DatabaseQueue, key: String) throws {
        let mode = try queue.writeWithoutTransaction { db in
            try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
        }
        guard mode == "wal" else {
            throw StoreError.corruptLayer(
                key: key, reason: "a new layer file did not switch to WAL (\(mode ?? "no answer"))")
        }
        try queue.close()
    }

    /// Makes a sealed staged file durable (its only sync).
    static func syncStaged(at path: String) throws(StoreError) {
        try POSIXFile.open(path, flags: O_RDWR).sync()
    }

    /// Sets the PDF a staged layer file (in `tmp/`, not yet in the catalog) belongs to, and
    /// makes the file whole and durable again, as ``create(at:key:metadata:records:pending:numberChangesAfter:)`` leaves it.
    /// (Rare: another process replaced the document's PDF while the file was written.)
    static func restamp(at path: String, key: String, pdf: BlobHash?) throws(StoreError) {
        do {
            // The file is sealed (WAL format): opened as a layer is, then folded back into
            // the one file.
            let queue = try openQueue(path: path, key: key, synchronous: "OFF")
            try queue.write { db in try db.execute(sql: "UPDATE meta SET pdfSha256 = ?", arguments: [pdf?.hex]) }
            _ = try queue.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
            try queue.close()
        } catch {
            throw map(error, key: key)
        }
        try FileSystem.remove(path + "-wal")
        try FileSystem.remove(path + "-shm")
        try syncStaged(at: path)
    }
}
