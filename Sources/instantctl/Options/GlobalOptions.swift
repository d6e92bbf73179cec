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
        try StoreOwner.check(root)
        // A store may be without its catalog for a moment (a rebuild to finish) or for
        // good (lost): opening it then finishes the swap or rebuilds the catalog.
        let marks = ["catalog.sqlite", "catalog-rebuilt.sqlite", "layers"]
        guard marks.contains(where: { FileManager.default.fileExists(atPath: root.appendingPathComponent($0).path) })
        else { return nil }
        return try InstantStore(root: root, freeingSpace: freeingSpace)
    }

    var output: Output { Output(json: json, quiet: quiet) }
}
