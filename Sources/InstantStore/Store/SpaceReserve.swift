#if canImport(Glibc)
    import Glibc
#endif

/// Room the store keeps on its disk so that freeing space can start when the disk is full.
///
/// On a full disk SQLite cannot open the catalog (its shared-memory file needs blocks), and
/// a prune needs room for its transactions, so nothing that frees space could run. A store
/// therefore holds `reserve`, a file of ``size`` allocated bytes in its root, made when a
/// handle opens the store with room to spare. A handle opened to free space
/// (``InstantStore/init(root:role:freeingSpace:)``, as `instantctl prune` and `rm` do) on
/// a full file system gives the reserve back before it opens the catalog, and takes back
/// what is still free of it when it closes; a removal's end makes it whole again when there
/// is room.
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
        guard let held = allocatedBytes(path), held < UInt64(size), let (available, block) = room(layout) else {
            return
        }
        // Retaking: what is still free of it, a few blocks left over (a file system may need
        // one for its own records); else all of it, with its size again to spare.
        let margin = 4 * block
        let free = available > margin ? available - margin : 0
        // (No sum that could overflow: `free` may be saturated, and `held` is below `size`.)
        let reachable = free >= UInt64(size) ? UInt64(size) : min(UInt64(size), (held + free) / block * block)
        let target = retaking ? reachable : UInt64(size)
        guard target > held, retaking || available >= target - held + UInt64(size) else { return }
        // Allocated in place, never through a link (the name is the store's own). What
        // could not be allocated (a full disk, a kill) is completed by a later call; what
        // was is kept: it is room a prune can have.
        let descriptor = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        guard posix_fallocate(descriptor, 0, off_t(target)) == 0 else { return }
        // A file system that compresses, or keeps zeros as holes, may take no blocks for
        // what posix_fallocate wrote: then bytes that do not compress, once.
        guard (allocatedBytes(path) ?? 0) < target, !startsWithData(descriptor) else { return }
        var generator = SystemRandomNumberGenerator()
        var words = [UInt64](repeating: 0, count: 8192)
        var offset = 0
        while offset < Int(target) {
            for index in words.indices { words[index] = generator.next() | 1 }
            let count = min(words.count * 8, Int(target) - offset)
            let written = words.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, count, off_t(offset)) }
            guard written > 0 else { return }
            offset += written
        }
    }

    /// Whether the reserve's first bytes are not zeros (filled already by ``ensure(_:retaking:)``).
    private static func startsWithData(_ descriptor: Int32) -> Bool {
        var first: UInt64 = 0
        return pread(descriptor, &first, 8, 0) == 8 && first != 0
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
        room(layout).map { $0.available < fullBelow } ?? false
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

    /// The bytes free for this process on the store's file system, and its block size, or
    /// nil when unknown. (Saturated: a file system may report any size.)
    private static func room(_ layout: StoreLayout) -> (available: UInt64, block: UInt64)? {
        var stats = statvfs()
        guard statvfs(layout.rootPath, &stats) == 0 else { return nil }
        let block = max(UInt64(stats.f_frsize), 512)
        let (bytes, overflow) = UInt64(stats.f_bavail).multipliedReportingOverflow(by: block)
        return (overflow ? .max : bytes, block)
    }
}
