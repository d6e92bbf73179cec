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
}
