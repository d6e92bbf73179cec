#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Synchronization

/// Named points where a test can stop a process dead or make an operation fail.
///
/// Set `INSTANT_FAILPOINT` to a comma-separated list of `name` or `name=action`, where
/// action is `kill` (the default: the process sends itself SIGKILL), `enospc` (the
/// operation fails as if the disk were full), `eio`, `eperm` (as a file system without
/// hard links answers a link), `eacces` (no permission: tests run as root, which
/// permissions do not stop), or `wait:PATH` (the process creates `PATH.reached`, then
/// waits while the file `PATH` exists, at most a minute: a test does something in
/// between). A name may end in `*` to match a prefix, and be followed by `@TEXT` to match
/// only where the path the point is given contains `TEXT` (`file.read@3f2a…=eio`: one
/// blob's reads fail).
///
/// ```sh
/// INSTANT_FAILPOINT=blob.afterRename instant-store-worker ingest …   # dies there
/// INSTANT_FAILPOINT=file.write=enospc instant-store-worker ingest … # fails cleanly
/// ```
///
/// The names are listed in docs/STORE.md. Tests in the same process can set the list with
/// ``Failpoint/configure(_:)``.
public enum Failpoint {
    private static let rules = Mutex<[(pattern: String, action: String)]>(
        parse(ProcessInfo.processInfo.environment["INSTANT_FAILPOINT"] ?? ""))

    /// Replaces the active failpoints (the same syntax as `INSTANT_FAILPOINT`).
    public static func configure(_ specification: String) {
        rules.withLock { $0 = parse(specification) }
    }

    /// Adds failpoints to the active ones (the same syntax), until ``remove(_:)``: tests
    /// that run side by side in one process, each with rules of its own (scoped by `@TEXT`
    /// to its own paths), leave each other's alone.
    public static func add(_ specification: String) {
        let added = parse(specification)
        rules.withLock { $0 += added }
    }

    /// Takes out the failpoints an ``add(_:)`` of the same text put in (once each: the same
    /// rule added twice stays until removed twice).
    public static func remove(_ specification: String) {
        let removed = parse(specification)
        rules.withLock { rules in
            for gone in removed {
                if let index = rules.firstIndex(where: { $0.pattern == gone.pattern && $0.action == gone.action }) {
                    rules.remove(at: index)
                }
            }
        }
    }

    /// Called at a named point; dies or throws when a rule names it. Public so the server
    /// names its own steps the same way (`upload.afterInsert`, …).
    public static func check(_ name: String, path: String = "") throws(StoreError) {
        guard let action = action(for: name, path: path) else { return }
        switch action {
        case "enospc": throw .diskFull(path: path.isEmpty ? name : path)
        case "eio": throw .io(operation: name, path: path, errno: EIO)
        case "eperm": throw .io(operation: name, path: path, errno: EPERM)
        case "eacces": throw .io(operation: name, path: path, errno: EACCES)
        case let wait where wait.hasPrefix(waitAction):
            let signal = String(wait.dropFirst(waitAction.count))
            FileManager.default.createFile(atPath: signal + ".reached", contents: nil)
            let deadline = Date().addingTimeInterval(60)
            while FileManager.default.fileExists(atPath: signal) && Date() < deadline { usleep(10_000) }
        default:
            kill(getpid(), SIGKILL)
            while true { pause() }
        }
    }

    /// `wait:PATH`'s prefix.
    private static let waitAction = "wait:"

    private static func action(for name: String, path: String) -> String? {
        rules.withLock { rules in
            for rule in rules {
                let parts = rule.pattern.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
                let pattern = parts[0]
                if parts.count > 1 && !path.contains(parts[1]) { continue }
                let matches = pattern.hasSuffix("*") ? name.hasPrefix(pattern.dropLast()) : name == pattern
                if matches { return rule.action }
            }
            return nil
        }
    }

    private static func parse(_ text: String) -> [(pattern: String, action: String)] {
        text.split(separator: ",").compactMap { item in
            let parts = item.split(separator: "=", maxSplits: 1).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard let name = parts.first, !name.isEmpty else { return nil }
            guard parts.count > 1 else { return (name, "kill") }
            // `wait:` keeps its path as written.
            if parts[1].lowercased().hasPrefix(waitAction) {
                return (name, waitAction + parts[1].dropFirst(waitAction.count))
            }
            return (name, parts[1].lowercased())
        }
    }
}
