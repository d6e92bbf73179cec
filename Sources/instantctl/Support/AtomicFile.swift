import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Files a command writes whole: `metrics --output`, `annotations export --output`.
enum AtomicFile {
    /// Writes a sibling file and renames it over `path`: a reader sees the old file or the
    /// new one, also after a power cut (the file is synced before the rename, its directory
    /// after). The sibling has a random name that starts with a dot and ends in `.tmp`
    /// (node_exporter's textfile collector never reads it); it is created exclusively
    /// (never through a planted symlink). Its mode is `mode` whatever the umask (metrics:
    /// 0644, for the collector's user), or with nil what the umask gives a new file (an
    /// export of annotations, which may be private).
    static func replace(_ path: String, with bytes: [UInt8], mode: mode_t?) throws {
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString.prefix(8)).tmp").path
        func failure(_ what: String) -> CommandError {
            CommandError(
                message: "cannot \(what) \(path): \(String(cString: strerror(errno)))", status: ExitStatus.problems)
        }
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode ?? 0o666)
        guard fd >= 0 else { throw failure("write") }
        var written = 0
        var failed: CommandError?
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                failed = failure("write")
                break
            }
            written += count
        }
        if failed == nil, let mode, fchmod(fd, mode) != 0 { failed = failure("write") }
        if failed == nil && fsync(fd) != 0 { failed = failure("write") }
        if close(fd) != 0 && failed == nil { failed = failure("write") }
        if failed == nil && rename(temporary, url.path) != 0 { failed = failure("replace") }
        if let failed {
            unlink(temporary)
            throw failed
        }
        let directory = open(url.deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            let synced = fsync(directory)
            close(directory)
            // The new file is in place; only its survival of a power cut is in doubt.
            if synced != 0 { throw failure("sync the directory of") }
        }
    }
}
