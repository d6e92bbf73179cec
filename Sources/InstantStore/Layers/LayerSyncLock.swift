#if canImport(Glibc)
    import Glibc
#endif
import Foundation

/// A layer's sync, held by one process at a time: `locks/<key>.lock` under an exclusive
/// `flock(2)`, which the kernel releases when the holder exits or is killed.
///
/// Two processes syncing one layer at once would each send the pending changes and apply
/// the answers in whatever order they come back, so one could move the cursor back or
/// apply an older page over a newer one. With the lock, the second waits, then reads the
/// pending changes and cursor the first left.
///
/// A lock file is separate from the layer's SQLite file on purpose: closing any
/// descriptor of a SQLite file drops that process's POSIX locks on it.
///
/// ```swift
/// while try store.trySyncLock(layer) == nil { try await Task.sleep(for: .milliseconds(20)) }
/// ```
public final class LayerSyncLock: Sendable {
    private let file: POSIXFile

    fileprivate init(file: POSIXFile) { self.file = file }

    /// Lets go of the lock (also done when the value goes away).
    public func release() { file.close() }
}

extension InstantStore {
    var locksDirectory: String { layout.rootPath + "/locks" }

    func syncLockPath(key: String) -> String { locksDirectory + "/\(key).lock" }

    /// Takes `layer`'s sync lock, or returns nil at once when another holder has it.
    public func trySyncLock(_ layer: LayerDatabase) throws(StoreError) -> LayerSyncLock? {
        try checkWritable("sync the layer")
        if !FileSystem.isDirectory(locksDirectory) { try FileSystem.makeDirectory(locksDirectory) }
        let path = syncLockPath(key: layer.key)
        for _ in 0..<8 {
            let file = try POSIXFile.open(path, flags: O_RDWR | O_CREAT | O_NOFOLLOW)
            guard try file.lockExclusively(wait: false) else { return nil }
            // A sweep may have removed the file between our open and our lock (it removes
            // only while holding the lock): then this lock guards nothing, take the new one.
            if file.isStill(at: path) {
                return LayerSyncLock(file: file)
            }
            file.close()
        }
        throw .busy(path: path + " (the lock file keeps being replaced)")
    }

    /// Removes the lock files of layers that are gone, each while holding it (so a
    /// process that opened it meanwhile sees the file replaced and takes the new one).
    /// Returns how many went.
    func sweepSyncLocks() throws(StoreError) -> Int {
        guard FileSystem.isDirectory(locksDirectory) else { return 0 }
        var swept = 0
        for name in try FileSystem.contents(of: locksDirectory) where name.hasSuffix(".lock") {
            let key = String(name.dropLast(".lock".count))
            guard !FileSystem.exists(layout.layerPath(key: key)) else { continue }
            let path = locksDirectory + "/" + name
            guard let file = try? POSIXFile.open(path, flags: O_RDWR | O_NOFOLLOW),
                try file.lockExclusively(wait: false), file.isStill(at: path)
            else { continue }
            try FileSystem.remove(path)
            file.close()
            swept += 1
        }
        return swept
    }
}
