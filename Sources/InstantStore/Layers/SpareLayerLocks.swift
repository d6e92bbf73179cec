import Foundation
import Synchronization

/// Layer writer locks kept for reuse by one store handle: a staged layer's lock
/// (`tmp/<key>.layer.lock`) is renamed to a spare's name once its layer is committed, still
/// locked, and renamed again to the next staged layer's lock name.
///
/// Every lock is otherwise a new inode, made and freed per download. On a file system
/// without a journal, ext4 does not reuse an inode freed less than a minute ago: each new
/// one is found by scanning past every file removed in that minute, a fraction of a
/// millisecond when many were (the download benchmark, a busy cache). A rename costs
/// neither the scan nor a freed inode that slows the next file made.
///
/// A spare is `tmp/<random>.spare.lock`, held under its flock from before it had that name
/// (it was a staged layer's lock): a sweeper sees it live while its process is, and as a
/// dead temp file once the process is gone. It names no layer. At most ``limit`` are kept;
/// the handle's ``InstantStore/close()`` (or its release) removes them.
///
/// ```swift
/// let lock = try spares.lock(at: staging.path + ".lock")  // a spare renamed, or a new lock
/// // … the layer is staged and committed …
/// spares.recycle(lock)
/// ```
final class SpareLayerLocks: Sendable {
    /// How many spares a handle keeps: enough for the downloads an app runs at once.
    static let limit = 8
    /// A spare's name: `<random key>.spare.lock`.
    static let suffix = ".spare.lock"

    private let layout: StoreLayout
    private let spares = Mutex<[POSIXFile]>([])

    init(_ layout: StoreLayout) {
        self.layout = layout
    }

    /// A lock held at `path`: a spare renamed there, else a new one
    /// (``POSIXFile/createLocked(_:)``). Either way it holds its flock from before `path`
    /// names it.
    func lock(at path: String) throws(StoreError) -> POSIXFile {
        while let spare = spares.withLock({ $0.popLast() }) {
            do {
                return try spare.rename(to: path)
            } catch {
                // Gone (removed by hand, say): let go, and try the next.
                spare.close()
            }
        }
        return try POSIXFile.createLocked(path)
    }

    /// Keeps `lock` (a committed or discarded staged layer's, still locked) as a spare, or
    /// removes it when ``limit`` are kept or the rename fails.
    func recycle(_ lock: POSIXFile) {
        let kept = spares.withLock { $0.count } < Self.limit
        if kept, let spare = try? lock.rename(to: layout.tmpDirectory + "/\(RandomKey.make())\(Self.suffix)") {
            let overflow: POSIXFile? = spares.withLock { spares in
                guard spares.count < Self.limit else { return spare }
                spares.append(spare)
                return nil
            }
            if let overflow { Self.remove(overflow) }
            return
        }
        Self.remove(lock)
    }

    /// Removes every spare (the handle is closing).
    func removeAll() {
        for spare in spares.withLock({ spares in
            defer { spares = [] }; return spares
        }) { Self.remove(spare) }
    }

    /// Whether a name in `tmp/` is a spare's.
    static func isSpare(named name: String) -> Bool {
        name.hasSuffix(suffix) && RandomKey.isValid(String(name.dropLast(suffix.count)))
    }

    /// The spares' names in `tmp/`.
    var names: [String] { spares.withLock { $0.map { ($0.path as NSString).lastPathComponent } } }

    /// Unlinks the lock's name, then lets go of its flock: no sweeper sees it unlocked.
    private static func remove(_ lock: POSIXFile) {
        try? FileSystem.remove(lock.path)
        lock.close()
    }

    deinit { removeAll() }
}
