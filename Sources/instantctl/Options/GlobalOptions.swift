import ArgumentParser
import Foundation
import InstantStore

/// The options every command takes.
struct GlobalOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The store directory (default: $INSTANT_HOME, else $XDG_DATA_HOME/instant).", valueName: "path"),
        completion: .directory)
    var root: String?

    @Flag(help: "Print JSON for scripts instead of tables.")
    var json = false

    @Flag(name: [.short, .long], help: "Print less: no headers, summaries or progress.")
    var quiet = false

    /// The store's directory, from --root or the environment.
    var rootURL: URL {
        if let root { return URL(fileURLWithPath: root) }
        return StoreLayout.defaultRoot()
    }

    /// Opens the existing store; a missing one is an error, not a new empty store.
    /// `freeingSpace`: for a command that frees space (prune, rm), which may use the
    /// store's reserve to open it on a full disk.
    func openStore(freeingSpace: Bool = false) throws -> InstantStore {
        let url = rootURL
        guard let store = try Self.existingStore(at: url, freeingSpace: freeingSpace) else {
            throw CommandError(
                message: "no store at \(url.path) (set --root or INSTANT_HOME)", status: ExitStatus.unavailable)
        }
        return store
    }

    /// The store at `root`, or nil when there is none: opening must never create one.
    static func existingStore(at root: URL, freeingSpace: Bool = false) throws -> InstantStore? {
        try checkOwner(root)
        // A store may be without its catalog for a moment (a rebuild to finish) or for
        // good (lost): opening it then finishes the swap or rebuilds the catalog.
        let marks = ["catalog.sqlite", "catalog-rebuilt.sqlite", "layers"]
        guard marks.contains(where: { FileManager.default.fileExists(atPath: root.appendingPathComponent($0).path) })
        else { return nil }
        return try InstantStore(root: root, freeingSpace: freeingSpace)
    }

    /// A store is its owner's alone (its directory is 0700). Another user, root included,
    /// is refused before anything is opened: the files a command makes there (a layer, a
    /// lock, a catalog's `-shm`) would be that user's, and the owner's apps could no
    /// longer open them. A directory this user may not search is said as such, not as
    /// "no store".
    private static func checkOwner(_ root: URL) throws {
        var info = stat()
        if stat(root.path, &info) != 0 {
            let error = errno
            guard error == EACCES || error == EPERM else { return }  // none yet: a download makes it
            throw CommandError(
                message:
                    "cannot read the store at \(root.path): \(String(cString: strerror(error)).lowercased()); "
                    + "run the command as the store's owner, or set --root or INSTANT_HOME",
                status: ExitStatus.unavailable)
        }
        guard info.st_uid != geteuid() else { return }
        let owner = userName(info.st_uid)
        throw CommandError(
            message:
                "the store at \(root.path) belongs to \(owner), and this command runs as \(userName(geteuid())): "
                + "a store is its owner's alone (files another user made in it would lock \(owner) out); "
                + "run it as \(owner) (sudo -u \(owner) instantctl …), or set --root or INSTANT_HOME",
            status: ExitStatus.unavailable)
    }

    /// A user's name, or `#UID` (as sudo -u takes it) when the system has none for it.
    private static func userName(_ uid: uid_t) -> String {
        getpwuid(uid).map { String(cString: $0.pointee.pw_name) } ?? "#\(uid)"
    }

    var output: Output { Output(json: json, quiet: quiet) }
}
