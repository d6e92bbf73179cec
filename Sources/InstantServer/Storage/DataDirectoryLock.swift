import Foundation
import GRDB
import InstantStore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One server per data directory: an exclusive `flock` on `server.lock`, held for the
/// server's life (the kernel lets it go when the process ends, however it ends).
///
/// A second server on the same directory would share its files but not its memory: the
/// uploads and deletions in flight (``UploadReservations``), the listeners to wake, and
/// the start's clean-up, which removes the PDF of an upload that never answered 201 (and
/// would remove the first server's upload in progress).
///
/// `InstantServer(configuration:)` takes it. Take it first yourself to do work in the
/// directory before the server starts (`instant-server --dev` makes its keys so):
///
/// ```swift
/// let lock = try DataDirectoryLock(directory: configuration.dataDirectory)  // .inUse if taken
/// let setup = try DevelopmentSetup.prepare(base: configuration)
/// let server = try await InstantServer(configuration: setup.configuration, dataLock: lock)
/// ```
public final class DataDirectoryLock: Sendable {
    /// The data directory held.
    public let directory: URL
    /// The open `server.lock`, until ``release()`` (or the end of this object).
    private let descriptor: Mutex<Int32>

    /// Makes the directory when it is missing (0700: it holds every user's annotations,
    /// and is narrowed to 0700 when it exists), then takes its lock: ``DataDirectoryError``
    /// (`inUse`) at once when another process holds it, after up to ``ownHoldWait``
    /// seconds when this process does (a server it closed a moment ago).
    public init(directory: URL) throws {
        try Self.prepare(directory.path)
        let path = directory.appendingPathComponent("server.lock").path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw DataDirectoryError.lockFailed(path, errno) }
        // Held by this process, the lock is let go in a moment: a server it closed just now
        // may still be shared with a child being spawned (until its exec closes the
        // descriptor), or its object not yet gone. Another process's hold is refused at once.
        let patience = Date().addingTimeInterval(Self.ownHoldWait)
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let error = errno
            if error == EINTR { continue }
            let holder = Self.holder(descriptor)
            if error == EWOULDBLOCK, holder == getpid(), Date() < patience {
                usleep(20_000)
                continue
            }
            close(descriptor)
            if error == EWOULDBLOCK { throw DataDirectoryError.inUse(directory.path, holder: holder) }
            throw DataDirectoryError.lockFailed(path, error)
        }
        // Who holds it, for the message a second server gives (advisory: the lock decides).
        let pid = Array("\(getpid())\n".utf8)
        if ftruncate(descriptor, 0) == 0 {
            _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        }
        self.directory = directory
        self.descriptor = Mutex(descriptor)
    }

    /// How long a start waits for a hold of its own process to go (``init(directory:)``).
    static let ownHoldWait: TimeInterval = 2

    /// Lets go of the directory now, rather than when this object goes away (which a task
    /// still holding the server may delay): for another server to start on it in this
    /// process. Later calls do nothing.
    public func release() {
        let open = descriptor.withLock { descriptor -> Int32 in
            defer { descriptor = -1 }
            return descriptor
        }
        if open >= 0 { close(open) }
    }

    deinit { release() }

    /// Makes `path` (and its missing parents) 0700, or narrows it to 0700, with the
    /// system's own words for what stops it.
    private static func prepare(_ path: String) throws {
        if mkdir(path, 0o700) != 0 {
            let error = errno
            let parent = (path as NSString).deletingLastPathComponent
            if error == ENOENT, !parent.isEmpty, parent != path {
                try prepare(parent)
                if mkdir(path, 0o700) != 0 && errno != EEXIST { throw DataDirectoryError.unusable(path, errno) }
            } else if error != EEXIST {
                throw DataDirectoryError.unusable(path, error)
            }
        }
        var info = stat()
        guard stat(path, &info) == 0 else { throw DataDirectoryError.unusable(path, errno) }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw DataDirectoryError.unusable(path, ENOTDIR) }
        if info.st_mode & 0o7777 != 0o700, chmod(path, 0o700) != 0 { throw DataDirectoryError.unusable(path, errno) }
    }

    /// The process id the holder wrote, if it reads as one.
    private static func holder(_ descriptor: Int32) -> Int32? {
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return Int32(String(decoding: bytes[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

/// Why a server cannot have its data directory (``DataDirectoryLock``).
public struct DataDirectoryError: Error, Sendable, CustomStringConvertible {
    /// Stable codes, for scripts and logs.
    public enum Code: String, Sendable {
        /// Another server holds the directory.
        case inUse = "data_directory_in_use"
        /// The lock file could not be opened or locked (permissions, a read-only disk).
        case lockFailed = "data_directory_lock_failed"
        /// The directory could not be made, or narrowed to 0700 (a read-only disk, a file
        /// in the way, a parent this user may not write).
        case unusable = "data_directory_unusable"
        /// The file system holding it has no room left, so its databases cannot be opened.
        case full = "data_directory_full"
    }

    public var code: Code
    /// What happened and what to do, for a person.
    public var message: String

    public var description: String { "instant-server cannot start (\(code.rawValue)): \(message)" }

    static func inUse(_ directory: String, holder: Int32?) -> DataDirectoryError {
        let who = holder.map { "another instant-server (process \($0))" } ?? "another instant-server"
        return DataDirectoryError(
            code: .inUse,
            message:
                "the data directory \(directory) is in use by \(who); one server per data directory: stop the other, or set INSTANT_SERVER_DATA to another directory"
        )
    }

    static func unusable(_ path: String, _ error: Int32) -> DataDirectoryError {
        DataDirectoryError(
            code: .unusable,
            message:
                "cannot use the data directory \(path): \(String(cString: strerror(error))); set INSTANT_SERVER_DATA to a writable directory"
        )
    }

    /// Runs `open`; a failure while the file system holding `directory` has (almost) no
    /// room left is ``Code/full``, which says so, rather than SQLite's "disk I/O error"
    /// (what a `-shm` it cannot create reads as), which sends an operator looking for a
    /// failing disk.
    static func sayingAFullDisk<T>(_ directory: URL, _ open: () throws -> T) throws -> T {
        do {
            return try open()
        } catch {
            // Only errors a full disk makes (a damaged or newer database is told as it is),
            // and only a disk full for this user (root may write into ext4's reserve).
            guard isSpaceError(error) else { throw error }
            var stats = statvfs()
            guard statvfs(directory.path, &stats) == 0 else { throw error }
            let blocks = geteuid() == 0 ? UInt64(stats.f_bfree) : UInt64(stats.f_bavail)
            let free = blocks * UInt64(stats.f_frsize)
            guard free < 1 << 20 || stats.f_favail == 0 else { throw error }
            throw DataDirectoryError(
                code: .full,
                message:
                    "the file system holding the data directory \(directory.path) is full (\(free) bytes free), so its databases cannot be opened (\(error)); free space on it, then start the server again"
            )
        }
    }

    /// SQLite's I/O errors (a `-shm` it cannot make), `SQLITE_FULL`, `SQLITE_CANTOPEN`, and
    /// the store's own full disk.
    private static func isSpaceError(_ error: any Error) -> Bool {
        if let error = error as? DatabaseError {
            return [.SQLITE_IOERR, .SQLITE_FULL, .SQLITE_CANTOPEN].contains(error.resultCode)
        }
        if case .diskFull? = error as? StoreError { return true }
        return false
    }

    static func lockFailed(_ path: String, _ error: Int32) -> DataDirectoryError {
        let hint =
            error == EACCES || error == EPERM
            ? " (a server run once as another user, root say, leaves its files that user's: every file of the data directory must belong to the user the server runs as)"
            : ""
        return DataDirectoryError(
            code: .lockFailed, message: "cannot lock \(path): \(String(cString: strerror(error)))\(hint)")
    }
}
