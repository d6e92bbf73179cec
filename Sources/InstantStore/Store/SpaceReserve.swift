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
    /// full disk it is made by a later open, once space was freed. `retaking`: the reserve
    /// this handle gave back, taken again as long as its room is still free (the usual rule
    /// asks for room to spare: a reserve taken from the last free blocks would fill the
    /// disk it is there to help with).
    static func ensure(_ layout: StoreLayout, retaking: Bool = false) {
        let path = path(layout)
        guard let held = allocatedBytes(path), held < UInt64(size), let available = available(layout) else { return }
        // Retaking, what is free of it (the catalog's -shm and -wal, which the handle that
        // gave it back made, stay: the next open needs no room for them); else all of it,
        // with as much again to spare.
        let target = retaking ? min(UInt64(size), (held + available) / 4096 * 4096) : UInt64(size)
        guard target > held, retaking || available >= target - held + UInt64(size) else { return }
        // Allocated in place (a reserve cut short, by a kill or a full disk, is completed
        // by a later call). Never through a link: the name is the store's own.
        let descriptor = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        guard posix_fallocate(descriptor, 0, off_t(target)) == 0 else {
            // A reserve that could not be made whole is not kept: it would take room for
            // nothing (and a removal would give back less than it counts on).
            unlink(path)
            return
        }
        // A file system that compresses, or stores zeros as holes, may take no blocks for
        // what posix_fallocate wrote: then bytes that do not compress.
        if (allocatedBytes(path) ?? 0) < target {
            var generator = SystemRandomNumberGenerator()
            var bytes = [UInt8](repeating: 0, count: 1 << 16)
            var offset = 0
            while offset < Int(target) {
                for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255, using: &generator) }
                let count = min(bytes.count, Int(target) - offset)
                let written = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, count, off_t(offset)) }
                guard written > 0 else {
                    unlink(path)
                    return
                }
                offset += written
            }
        }
    }

    /// Gives the reserve back; whether there was one to give (a regular file: nothing else
    /// at that name is removed).
    static func release(_ layout: StoreLayout) -> Bool {
        let path = path(layout)
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return false }
        return unlink(path) == 0
    }

    /// Whether the file system holding the store has (almost) no room left.
    static func isFull(_ layout: StoreLayout) -> Bool {
        available(layout).map { $0 < fullBelow } ?? false
    }

    /// Whether `error`, met opening the catalog, is one a full disk makes: SQLite's I/O
    /// errors (a `-shm` it cannot grow), a file it cannot open or extend, ENOSPC. Other
    /// errors (a damaged catalog, a newer format, a busy store) are told as they are.
    static func isSpaceError(_ error: StoreError) -> Bool {
        switch error {
        case .diskFull: return true
        case .io(_, _, let code): return code == ENOSPC || code == EDQUOT
        case .database(let extended, _):
            // SQLITE_IOERR (10) and its extended codes, SQLITE_FULL (13), SQLITE_CANTOPEN (14).
            return [10, 13, 14].contains(extended & 0xFF)
        default: return false
        }
    }

    /// The bytes of disk a file at `path` takes: 0 when there is none, nil when something
    /// else than a regular file stands there.
    private static func allocatedBytes(_ path: String) -> UInt64? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return 0 }
        guard info.st_mode & S_IFMT == S_IFREG else { return nil }
        return UInt64(info.st_blocks) * 512
    }

    /// The bytes free for this process on the store's file system, or nil when unknown.
    private static func available(_ layout: StoreLayout) -> UInt64? {
        var stats = statvfs()
        guard statvfs(layout.rootPath, &stats) == 0 else { return nil }
        return UInt64(stats.f_bavail) * UInt64(stats.f_frsize)
    }
}
