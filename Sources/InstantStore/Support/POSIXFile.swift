#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import CPlatform
import Foundation

/// An open file descriptor with the handful of calls the store needs: whole writes,
/// reads, `fsync`, `flock`. Closed when the last reference goes away.
final class POSIXFile: @unchecked Sendable {
    // @unchecked: the descriptor is only used by the one task that owns the file.
    let path: String
    private(set) var descriptor: Int32

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    deinit { if descriptor >= 0 { _ = Glibc.close(descriptor) } }

    /// Opens `path` with `open(2)` flags; files are created 0600.
    static func open(_ path: String, flags: Int32, mode: mode_t = 0o600) throws(StoreError) -> POSIXFile {
        try Failpoint.check("file.open", path: path)
        let fd = Glibc.open(path, flags | O_CLOEXEC, mode)
        guard fd >= 0 else { throw .fromErrno("open", path) }
        return POSIXFile(path: path, descriptor: fd)
    }

    /// Creates a new file that did not exist, for writing (and reading back).
    static func create(_ path: String) throws(StoreError) -> POSIXFile {
        try open(path, flags: O_RDWR | O_CREAT | O_EXCL)
    }

    /// Creates a new file (mode 0600) that holds an exclusive flock from before its name
    /// appears: a sweeper that finds it free knows its writer is gone, never that it has
    /// not locked it yet.
    static func createLocked(_ path: String) throws(StoreError) -> POSIXFile {
        let directory = (path as NSString).deletingLastPathComponent
        let fd = instant_create_locked(directory, path)
        guard fd >= 0 else { throw .fromErrno("create", path) }
        return POSIXFile(path: path, descriptor: fd)
    }

    /// Writes all of `bytes`, retrying short writes and `EINTR`.
    func write(_ bytes: UnsafeRawBufferPointer) throws(StoreError) {
        try Failpoint.check("file.write", path: path)
        var offset = 0
        while offset < bytes.count {
            guard let base = bytes.baseAddress else { return }
            let written = Glibc.write(descriptor, base + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw .fromErrno("write", path)
            }
            offset += written
        }
    }

    /// Writes all of `bytes` (an array, `Data`, …).
    func write(contentsOf bytes: some ContiguousBytes) throws(StoreError) {
        let failure: StoreError? = bytes.withUnsafeBytes { buffer in
            do throws(StoreError) {
                try self.write(buffer)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }

    /// Reads up to `buffer.count` bytes; returns 0 at the end of the file.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(StoreError) -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        while true {
            let count = Glibc.read(descriptor, base, buffer.count)
            if count >= 0 { return count }
            if errno != EINTR { throw .fromErrno("read", path) }
        }
    }

    /// Reads up to `count` bytes from `offset` without moving the file position.
    func read(count: Int, at offset: Int64) throws(StoreError) -> [UInt8] {
        try Failpoint.check("file.read", path: path)
        var bytes = [UInt8](repeating: 0, count: count)
        let got = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, off_t(offset)) }
        guard got >= 0 else { throw .fromErrno("read", path) }
        return Array(bytes.prefix(got))
    }

    func sync() throws(StoreError) {
        try Failpoint.check("file.fsync", path: path)
        guard fsync(descriptor) == 0 else { throw .fromErrno("fsync", path) }
    }

    /// Whether `path` names this open file now (same device and inode): false once the
    /// name was removed or given to another file.
    func isStill(at path: String) -> Bool {
        var open = stat()
        var named = stat()
        guard fstat(descriptor, &open) == 0, lstat(path, &named) == 0 else { return false }
        return open.st_dev == named.st_dev && open.st_ino == named.st_ino
    }

    func size() throws(StoreError) -> Int64 {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw .fromErrno("fstat", path) }
        return Int64(info.st_size)
    }

    /// Takes an exclusive `flock(2)`; returns false when `wait` is false and another
    /// process holds it.
    @discardableResult
    func lockExclusively(wait: Bool) throws(StoreError) -> Bool {
        while true {
            if flock(descriptor, LOCK_EX | (wait ? 0 : LOCK_NB)) == 0 { return true }
            if errno == EINTR { continue }
            if errno == EWOULDBLOCK { return false }
            throw .fromErrno("flock", path)
        }
    }

    /// Takes (or converts to) a `flock(2)` of `operation` (`LOCK_SH`, `LOCK_EX`) without
    /// waiting; returns false when another holder is in the way.
    func lock(_ operation: Int32) throws(StoreError) -> Bool {
        while true {
            if flock(descriptor, operation | LOCK_NB) == 0 { return true }
            if errno == EINTR { continue }
            if errno == EWOULDBLOCK { return false }
            throw .fromErrno("flock", path)
        }
    }

    func close() {
        if descriptor >= 0 { _ = Glibc.close(descriptor) }
        descriptor = -1
    }

    /// Unlinks the file's name, then closes it: a file its writer holds locked is never
    /// seen under its name without the lock. Failing to unlink costs nothing worse than a
    /// dead temp file, which the next sweep removes.
    func removeAndClose() {
        try? FileSystem.remove(path)
        close()
    }

    /// Renames the file to `newPath` and returns it under that name, open (and locked) as
    /// it was; this one is closed. On failure, nothing changes.
    func rename(to newPath: String) throws(StoreError) -> POSIXFile {
        try FileSystem.rename(path, newPath)
        let moved = POSIXFile(path: newPath, descriptor: descriptor)
        descriptor = -1
        return moved
    }
}

/// Path-level calls: rename, unlink, directories.
enum FileSystem {
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// Whether something is at `path`, for a caller about to remove or replace what is
    /// there: false only when nothing is (`ENOENT`, `ENOTDIR`); when `lstat` cannot say
    /// (`EIO`, `EACCES`), an `io` failure rather than the absence ``exists(_:)`` would
    /// take it for. Failpoint `file.stat`.
    static func isPresent(_ path: String) throws(StoreError) -> Bool {
        try Failpoint.check("file.stat", path: path)
        var info = stat()
        if lstat(path, &info) == 0 { return true }
        let code = errno
        if code == ENOENT || code == ENOTDIR { return false }
        throw .fromErrno("lstat", path, code)
    }

    /// Whether `path` lies on a read-only file system: mounted `ro`, or answering
    /// `access(W_OK)` with `EROFS` on a mount that is not `ro` (a btrfs read-only
    /// snapshot); false when it cannot be told (nothing there). An NFS export its server
    /// keeps read-only may answer otherwise: the store finds it at its first write.
    static func isOnReadOnlyFileSystem(_ path: String) -> Bool {
        var stats = statvfs()
        guard statvfs(path, &stats) == 0 else { return false }
        if stats.f_flag & UInt(ST_RDONLY) != 0 { return true }
        return access(path, W_OK) != 0 && errno == EROFS
    }

    /// The disk a regular file's removal would free: its allocated blocks, when `path` is
    /// its only name (0 for another name of a file, a directory, or nothing there).
    static func allocatedBytes(_ path: String) -> Int64 {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_nlink == 1 else { return 0 }
        return Int64(info.st_blocks) * 512
    }

    /// Size of a regular file, or nil when it does not exist.
    static func fileSize(_ path: String) throws(StoreError) -> Int64? {
        var info = stat()
        if lstat(path, &info) == 0 { return Int64(info.st_size) }
        if errno == ENOENT { return nil }
        throw .fromErrno("stat", path)
    }

    static func rename(_ from: String, _ to: String) throws(StoreError) {
        guard Glibc.rename(from, to) == 0 else { throw .fromErrno("rename", from + " -> " + to) }
    }

    /// Makes `to` another name of the file at `from`; false when `to` exists already.
    static func link(_ from: String, _ to: String) throws(StoreError) -> Bool {
        try Failpoint.check("file.link", path: to)
        if Glibc.link(from, to) == 0 { return true }
        if errno == EEXIST { return false }
        throw .fromErrno("link", from + " -> " + to)
    }

    /// Whether `link` failing with `code` means the file system has no hard links (vfat,
    /// some network and FUSE mounts) or allows no more of them for this file.
    static func refusesLinks(_ code: Int32) -> Bool {
        [EPERM, EXDEV, ENOTSUP, EOPNOTSUPP, EMLINK, ENOSYS].contains(code)
    }

    /// Unlinks `path`; a file that is already gone is not an error.
    static func remove(_ path: String) throws(StoreError) {
        if unlink(path) != 0 && errno != ENOENT { throw .fromErrno("unlink", path) }
    }

    /// Creates `path` (mode 0700) when missing, without syncing its parent: returns
    /// whether it did, so the caller syncs the parent (``syncDirectory(_:)``) before
    /// anything depends on the new directory, alongside other work.
    static func makeDirectoryUnsynced(_ path: String) throws(StoreError) -> Bool {
        if mkdir(path, 0o700) == 0 { return true }
        if errno == EEXIST { return false }
        try makeDirectory(path)
        return false
    }

    /// Creates `path` and its parents with mode 0700; an existing directory is fine. A
    /// directory it creates is synced into its parent, so a file renamed into it later
    /// cannot vanish with the directory in a power cut.
    static func makeDirectory(_ path: String) throws(StoreError) {
        let parent = (path as NSString).deletingLastPathComponent
        if mkdir(path, 0o700) == 0 {
            if !parent.isEmpty { try syncDirectory(parent) }
            return
        }
        if errno == EEXIST { return }
        if errno == ENOENT, !parent.isEmpty, parent != path {
            try makeDirectory(parent)
            if mkdir(path, 0o700) == 0 {
                try syncDirectory(parent)
                return
            }
            if errno == EEXIST { return }
        }
        throw .fromErrno("mkdir", path)
    }

    /// Sets `path`'s permission bits to `mode` when they differ (an absent file is fine).
    static func restrictMode(_ path: String, to mode: mode_t) throws(StoreError) {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            if errno == ENOENT { return }
            throw .fromErrno("stat", path)
        }
        if info.st_mode & 0o7777 != mode, chmod(path, mode) != 0 { throw .fromErrno("chmod", path) }
    }

    /// The permission bits of `path`, nil when it does not exist.
    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : nil
    }

    /// Whether `path` is a directory (not following a symbolic link).
    static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// Whether `path` is a regular file (not following a symbolic link).
    static func isRegularFile(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }

    /// What tells one file from another at a path: device, inode, size and change time.
    /// Repair compares it inside its write transaction with what it saw when it decided,
    /// so it never acts on a file that was replaced meanwhile.
    static func identity(_ path: String) -> FileIdentity? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return FileIdentity(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
            changed: Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec))
    }

    /// The modification time of `path`, nil when it does not exist.
    static func modificationDate(_ path: String) -> Date? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return Date(timeIntervalSince1970: Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9)
    }

    /// Copies the file at `source` to the new file `destination` (0600), synced.
    static func copy(_ source: String, to destination: String) throws(StoreError) {
        let input = try POSIXFile.open(source, flags: O_RDONLY)
        let output = try POSIXFile.create(destination)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = try input.read(into: buffer)
            if count == 0 { break }
            try output.write(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
        try output.sync()
    }

    /// Makes a rename or unlink in `directory` durable.
    static func syncDirectory(_ directory: String) throws(StoreError) {
        try Failpoint.check("directory.fsync", path: directory)
        let dir = try POSIXFile.open(directory, flags: O_RDONLY | O_DIRECTORY)
        guard fsync(dir.descriptor) == 0 else { throw .fromErrno("fsync", directory) }
    }

    /// ``syncDirectory(_:)`` for each of `directories`, all at once (each on a thread of its
    /// own but the first): a new fan-out directory and its parent, say, whose syncs are
    /// independent. Every sync is waited for; the first failure is thrown.
    static func syncDirectories(_ directories: some Collection<String>) throws(StoreError) {
        guard let first = directories.first else { return }
        let rest = directories.dropFirst()
        if rest.isEmpty { return try syncDirectory(first) }
        try Parallel.bothWaiting(
            { () throws(StoreError) in try syncDirectory(first) },
            { () throws(StoreError) in try syncDirectories(rest) })
    }

    /// Whether a directory has no entry but `.` and `..` (an absent one counts as empty).
    /// Reads one entry at most, however large the directory.
    static func isEmptyDirectory(_ directory: String) throws(StoreError) -> Bool {
        guard let handle = opendir(directory) else {
            if errno == ENOENT { return true }
            throw .fromErrno("opendir", directory)
        }
        defer { closedir(handle) }
        while let entry = readdir(handle) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { return false }
        }
        return true
    }

    /// The names in a directory (no `.` or `..`); an absent directory has none.
    static func contents(of directory: String) throws(StoreError) -> [String] {
        guard let handle = opendir(directory) else {
            if errno == ENOENT { return [] }
            throw .fromErrno("opendir", directory)
        }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}

/// See ``FileSystem/identity(_:)``.
struct FileIdentity: Equatable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var changed: Int64
}

extension StoreError {
    /// The error for the current `errno`, telling a full disk apart.
    static func fromErrno(_ operation: String, _ path: String) -> StoreError {
        fromErrno(operation, path, errno)
    }

    static func fromErrno(_ operation: String, _ path: String, _ code: Int32) -> StoreError {
        if code == ENOSPC || code == EDQUOT { return .diskFull(path: path) }
        if code == EWOULDBLOCK || code == EBUSY { return .busy(path: path) }
        return .io(operation: operation, path: path, errno: code)
    }
}
