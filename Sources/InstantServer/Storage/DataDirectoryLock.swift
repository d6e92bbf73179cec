import Foundation

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
    private let descriptor: Int32

    /// Makes the directory when it is missing (0700: it holds every user's annotations,
    /// and is narrowed to 0700 when it exists), then takes its lock.
    public init(directory: URL) throws {
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.path)
        let path = directory.appendingPathComponent("server.lock").path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw DataDirectoryError.lockFailed(path, errno) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let error = errno
            let holder = Self.holder(descriptor)
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
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

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

    static func lockFailed(_ path: String, _ error: Int32) -> DataDirectoryError {
        let hint =
            error == EACCES || error == EPERM
            ? " (a server run once as another user, root say, leaves its files that user's: every file of the data directory must belong to the user the server runs as)"
            : ""
        return DataDirectoryError(
            code: .lockFailed, message: "cannot lock \(path): \(String(cString: strerror(error)))\(hint)")
    }
}
