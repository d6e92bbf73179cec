#if canImport(Glibc)
    import Glibc
#endif

/// Room the store keeps on its disk so that freeing space can start when the disk is full.
///
/// On a full disk SQLite cannot open the catalog (its shared-memory file needs blocks),
/// so nothing that frees space could run: not a prune, not a removal. A store therefore
/// holds `reserve`, a file of ``size`` allocated bytes in its root, made when a handle opens
/// the store and there is room for it. A handle opened to free space
/// (``InstantStore/init(root:role:freeingSpace:)``, as `instantctl prune` and `rm` do) that
/// cannot open the catalog on a full disk gives the reserve back and opens it then; the
/// reserve is taken again once a removal has made room.
///
/// ```swift
/// let store = try InstantStore(root: root, freeingSpace: true)   // works on a full disk
/// try store.prune(PruneOptions(maxSize: 1 << 30))
/// ```
enum SpaceReserve {
    /// How much the reserve holds: room for the catalog's shared memory and the write-ahead
    /// log of a prune's transactions, and a little for the layers it marks.
    static let size = 4 << 20

    /// Less free room than this on the store's file system counts as full.
    static let fullBelow: UInt64 = 1 << 20

    static func path(_ layout: StoreLayout) -> String { layout.rootPath + "/reserve" }

    /// Makes the reserve when it is missing and there is room for it. Best effort: on a
    /// full disk it is made by a later open, once space was freed.
    static func ensure(_ layout: StoreLayout) {
        let path = path(layout)
        let held = (try? FileSystem.fileSize(path)) ?? 0
        if held >= Int64(size) { return }
        // Only with room to spare: a reserve taken from the last free blocks would fill the
        // disk it is there to help with.
        guard let available = available(layout), available >= UInt64(2 * size) + UInt64(held) else { return }
        // Allocated in place (a reserve cut short, by a kill or a full disk, is completed
        // by a later call): a file whose blocks are really taken, not a sparse one.
        let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return }
        let allocated = posix_fallocate(descriptor, 0, off_t(size)) == 0
        close(descriptor)
        // A reserve that could not be made whole is not kept: it would take room for nothing.
        if !allocated { unlink(path) }
    }

    /// Gives the reserve back; whether there was one to give.
    static func release(_ layout: StoreLayout) -> Bool {
        unlink(path(layout)) == 0
    }

    /// Whether the file system holding the store has (almost) no room left.
    static func isFull(_ layout: StoreLayout) -> Bool {
        available(layout).map { $0 < fullBelow } ?? false
    }

    /// The bytes free for this process on the store's file system, or nil when unknown.
    private static func available(_ layout: StoreLayout) -> UInt64? {
        var stats = statvfs()
        guard statvfs(layout.rootPath, &stats) == 0 else { return nil }
        return UInt64(stats.f_bavail) * UInt64(stats.f_frsize)
    }
}
