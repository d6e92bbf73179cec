import Foundation
import Spawn

#if canImport(Glibc)
    import Glibc
#endif

/// A tmpfs of a few MiB mounted on a temporary directory.
public struct TinyDisk: Sendable {
    public let path: URL

    /// Whether this process may mount one (root, with the right to mount).
    public static let canMount: Bool = {
        guard getuid() == 0, let disk = try? TinyDisk(megabytes: 1) else { return false }
        disk.unmount()
        return true
    }()

    public init(megabytes: Int) throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("tiny-disk-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: path, withIntermediateDirectories: true)
        let mounted = try Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", path.path])
        guard mounted else {
            try? FileManager.default.removeItem(at: path)
            throw CocoaError(.fileWriteNoPermission)
        }
    }

    /// Writes files until the disk has no room left: blocks, then smaller pieces, until
    /// not one byte more fits (ENOSPC).
    public func fill() throws {
        for (index, size) in [65536, 4096, 512, 1].enumerated() {
            let descriptor = open(path.appendingPathComponent("filler-\(index)").path, O_WRONLY | O_CREAT, 0o600)
            guard descriptor >= 0 else { return }
            defer { close(descriptor) }
            let piece = [UInt8](repeating: 0, count: size)
            while true {
                let written = piece.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { break }
            }
        }
    }

    /// The bytes still free on the disk.
    public var available: UInt64 {
        var stats = statvfs()
        guard statvfs(path.path, &stats) == 0 else { return .max }
        return UInt64(stats.f_bavail) * UInt64(stats.f_frsize)
    }

    /// Mounts the disk again read-only (or writable again): what a snapshot or a `ro`
    /// mount gives. Fails while a file on it is open for writing.
    public func remount(readOnly: Bool) throws {
        guard try Self.run("/bin/mount", ["-o", "remount,\(readOnly ? "ro" : "rw")", path.path]) else {
            throw CocoaError(.fileWriteNoPermission)
        }
    }

    /// The disk's files again, through a read-only bind mount on a new directory (as a
    /// container is given a store read-only): the same files, the same locks, while the
    /// disk stays writable. Unmount it with ``unmountView(_:)``.
    public func readOnlyView() throws -> URL {
        let view = FileManager.default.temporaryDirectory.appendingPathComponent("read-only-view-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: view, withIntermediateDirectories: true)
        guard try Self.run("/bin/mount", ["--bind", path.path, view.path]),
            try Self.run("/bin/mount", ["-o", "remount,bind,ro", view.path])
        else {
            Self.unmountView(view)
            throw CocoaError(.fileWriteNoPermission)
        }
        return view
    }

    public static func unmountView(_ view: URL) {
        _ = try? run("/bin/umount", ["-l", view.path])
        try? FileManager.default.removeItem(at: view)
    }

    public func unmount() {
        _ = try? Self.run("/bin/umount", ["-l", path.path])
        try? FileManager.default.removeItem(at: path)
    }

    /// Runs `tool` and waits for it; whether it exited 0. (Not Foundation's `Process`: its
    /// `run()` in Swift 6.3.1 reads past a buffer now and then and crashes the test
    /// process: swift-corelibs-foundation PR 5472.)
    private static func run(_ tool: String, _ arguments: [String]) throws -> Bool {
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { if null >= 0 { close(null) } }
        let process = try SpawnedProcess(tool, arguments, standardError: null >= 0 ? null : 2)
        // A tool stuck for a minute (a mount that hangs) fails rather than hang the run.
        let deadline = Date().addingTimeInterval(60)
        while true {
            if let ending = process.ending { return ending == .init(status: 0) }
            if Date() > deadline {
                process.signal(SIGKILL)
                return false
            }
            usleep(2_000)
        }
    }
}
