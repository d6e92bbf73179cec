import Foundation
import InstantStore

/// A store is its owner's alone (its directory is 0700). instantctl run by another user,
/// root included, refuses it before it opens anything: the files a command makes there (a
/// layer, a lock, a catalog's `-shm`) would be that user's, and the owner's apps could no
/// longer open them. Git refuses another user's repository for the same kind of reason.
///
/// ```swift
/// try StoreOwner.check(root)  // before InstantStore(root:) or a rebuild of its catalog
/// ```
enum StoreOwner {
    /// Set to `1`, the check is off: for file systems that keep no owner of their own
    /// (vfat, some network or container mounts), where every file reads as someone else's.
    static let anyOwnerVariable = "INSTANTCTL_ANY_OWNER"

    static func check(_ root: URL, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        guard environment[anyOwnerVariable] != "1" else { return }
        var info = stat()
        guard stat(root.path, &info) == 0 else {
            let error = errno
            if error == ENOENT { return try checkNewStore(root.path) }
            if error == ENOTDIR {
                throw CommandError(
                    message: "the store root \(root.path) lies under a file; set --root or INSTANT_HOME to a directory",
                    status: ExitStatus.unavailable)
            }
            guard error == EACCES || error == EPERM else { return }
            // A directory this user may not search hides the store: said as such, not as
            // "no store" (or, for a download, as a store that cannot be made).
            throw CommandError(
                message:
                    "cannot read the store at \(root.path): \(String(cString: strerror(error)).lowercased()); "
                    + "run the command as the store's owner, or set --root or INSTANT_HOME",
                status: ExitStatus.unavailable)
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw CommandError(
                message: "the store root \(root.path) is not a directory; set --root or INSTANT_HOME to a directory",
                status: ExitStatus.unavailable)
        }
        guard info.st_uid != geteuid() else { return }
        // Nothing is made in a store on a read-only file system (a snapshot): root reads
        // another user's as it is. (Another user who is not root is told whose it is.)
        if geteuid() == 0, StoreLayout(root: root).isOnReadOnlyFileSystem { return }
        let owner = userName(info.st_uid)
        throw CommandError(
            message:
                "the store at \(root.path) belongs to \(owner), and this command runs as \(userName(geteuid())): "
                + "a store is its owner's alone (files another user made in it would lock \(owner) out); "
                + "run it as \(owner) (sudo -u \(owner) instantctl …), or set --root or INSTANT_HOME "
                + "(\(anyOwnerVariable)=1 turns this check off, for file systems that keep no owners)",
            status: ExitStatus.unavailable)
    }

    /// Root making a new store inside another user's directory (`sudo -E` keeping their
    /// `INSTANT_HOME`, say) would leave a store of root's in their home. Another user can
    /// make one only where they may write, and it is theirs; a sticky directory (`/tmp`)
    /// is everyone's.
    private static func checkNewStore(_ path: String) throws {
        guard geteuid() == 0 else { return }
        var parent = (path as NSString).deletingLastPathComponent
        var info = stat()
        while stat(parent, &info) != 0 {
            guard errno == ENOENT, parent != "/", !parent.isEmpty else { return }
            parent = (parent as NSString).deletingLastPathComponent
        }
        guard info.st_uid != 0, info.st_mode & S_ISVTX == 0 else { return }
        let owner = userName(info.st_uid)
        throw CommandError(
            message:
                "no store at \(path) yet, and making it as root inside \(parent), which belongs to \(owner), "
                + "would give \(owner) a store they cannot open; run it as \(owner) (sudo -u \(owner) instantctl …), "
                + "or set --root or INSTANT_HOME (\(anyOwnerVariable)=1 turns this check off)",
            status: ExitStatus.unavailable)
    }

    /// A user's name, or `#UID` (as sudo -u takes it) when the system has none for it.
    private static func userName(_ uid: uid_t) -> String {
        getpwuid(uid).map { String(cString: $0.pointee.pw_name) } ?? "#\(uid)"
    }
}
