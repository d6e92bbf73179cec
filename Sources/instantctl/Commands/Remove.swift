import ArgumentParser
import Foundation
import Instant
import InstantProtocol
import InstantStore

struct Remove: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm",
        abstract: "Remove a layer, a document, or everything of a server.",
        discussion: """
            --document ID --layer NAME removes one layer (the default layer is --layer ''); \
            its document's PDF stays until prune finds it unused. --document ID alone removes \
            the document: every layer and, unless another document uses it, its PDF. --all \
            removes everything of --tenant, or of every tenant without it. --tenant may be \
            left out when only one tenant has the document.

            Changes not yet synced would be lost, so rm refuses (exit status 3) and says how \
            many, unless --force; --export FILE first writes them to FILE as JSON (with an \
            Instant JSON document per layer) and then removes exactly what it wrote.
            """)

    @OptionGroup var options: GlobalOptions

    @Option(help: "The server the document belongs to.", completion: StoreCompletions.tenants)
    var tenant: TenantURL?

    @Option(help: "The document to remove (or whose layer to remove).", completion: StoreCompletions.documents)
    var document: String?

    @Option(help: "The layer to remove ('' for the default layer).", completion: StoreCompletions.layers)
    var layer: String?

    @Flag(help: "Remove everything of --tenant, or of every tenant.")
    var all = false

    @Flag(help: "Remove even when changes not yet synced would be lost.")
    var force = false

    @Option(
        help: ArgumentHelp("Write the changes not yet synced to this new file first.", valueName: "file"),
        completion: .file(extensions: ["json"]))
    var export: String?

    func validate() throws {
        if all && (document != nil || layer != nil) {
            throw ValidationError("--all removes whole tenants; leave out --document and --layer")
        }
        if !all && document == nil {
            throw ValidationError("say what to remove: --document ID [--layer NAME], or --all")
        }
        if layer != nil && document == nil { throw ValidationError("--layer needs --document") }
        if force && export != nil { throw ValidationError("--export already allows the removal; drop --force") }
    }

    func run() throws {
        let store = try options.openStore(freeingSpace: true)
        // Closed, so that a reserve given back to open on a full disk is taken again if
        // nothing was freed.
        defer { store.close() }
        let scope: RemovalScope
        do {
            scope = try RemovalScope.resolve(request, in: store)
        } catch {
            throw explained(error, in: store)
        }
        let output = options.output
        var policy: PendingChangesPolicy = force ? .discard : .refuse
        var exported: PendingChangesExport?
        if let export {
            let url = URL(fileURLWithPath: export)
            guard !FileManager.default.fileExists(atPath: url.path) else {
                throw CommandError.usage("\(export) exists; --export writes a new file")
            }
            let written: PendingChangesExport
            do {
                written = try store.exportPendingChanges(of: scope.dirtyLayers, to: url)
            } catch {
                throw Self.exportFailure(error, file: url)
            }
            exported = written
            policy = written.policy
            output.summary("exported \(Formats.count(written.changeCount, "change")) to \(export)")
        } else if !force, !scope.dirtyLayers.isEmpty {
            throw refusal(layers: scope.dirtyLayers.count, changes: scope.pendingChanges)
        }
        var report = RemovalReport()
        do {
            // What a failure leaves removed stays in the report: said with the error.
            try scope.remove(from: store, policy: policy, into: &report)
        } catch {
            let before = report.lines(verb: "removed")
            if !before.isEmpty {
                Output.warning("removed before the failure below:\n" + before.joined(separator: "\n"))
            }
            guard case .pendingChanges(let layers, let changes) = error else { throw error }
            // Changes made while rm ran, or (with an export) missing from the catalog's
            // counts, which the export went by (drift that verify reports).
            let rest = before.isEmpty ? "nothing was removed" : "nothing more was removed"
            if exported != nil {
                throw CommandError(
                    message: """
                        refusing: \(Formats.count(Int(changes), "change")) in \(Formats.count(layers, "layer")) \
                        not yet synced are not in the export (made while rm ran, or missing from the catalog's \
                        counts: `instantctl verify --repair` recounts them); \(rest). Sync first, or run rm \
                        again with a new --export FILE.
                        """, status: ExitStatus.refused)
            }
            throw refusal(layers: layers, changes: changes)
        }
        if options.json {
            var json: [String: JSONValue] = ["removed": report.json]
            if let exported {
                json["exported"] = .object([
                    "file": .string(exported.file.path), "changes": .integer(Int64(exported.changeCount)),
                ])
            }
            output.print(json: .object(json))
            return
        }
        if !options.quiet { for line in report.lines(verb: "removed") { output.print(line) } }
        var summary = "freed \(Formats.bytes(report.bytesFreed))"
        if report.discardedPendingChanges > 0 {
            let count = Int(report.discardedPendingChanges)
            var fate = "discarded"
            if let file = exported?.file.path { fate = "removed after being saved in \(file)" }
            summary += "; \(Formats.count(count, "change")) not yet synced \(count == 1 ? "was" : "were") \(fate)"
        }
        output.summary(summary)
    }

    /// What the options name, for ``RemovalScope/resolve(_:in:)`` (`validate()` has
    /// ensured `--document` unless `--all`).
    private var request: RemovalScope.Request {
        guard let document else { return .all(tenant: tenant) }
        guard let layer else { return .document(document, tenant: tenant) }
        return .layer(layer, document: document, tenant: tenant)
    }

    /// A name that matched nothing: when the store holds the same text spelled with other
    /// code points (another identifier, as the store compares bytes), the message says so,
    /// as the annotation and client commands do.
    private func explained(_ error: StoreError, in store: InstantStore) -> any Error {
        let hint: String
        switch error {
        case .noSuchDocument(_, let document):
            let documents = (try? store.cacheEntries(tenant: tenant).map(\.documentIdentifier)) ?? []
            hint = Formats.otherSpellingHint(of: document, among: documents)
        case .noSuchLayer(let owner, let document, let layer):
            let layers = ((try? store.localDescriptors(tenant: TenantURL(owner))) ?? [])
                .filter { $0.documentIdentifier.hasSameBytes(as: document) }.map(\.layerName)
            hint = Formats.otherSpellingHint(of: layer, among: layers)
        default:
            hint = ""
        }
        if hint.isEmpty { return error }
        return CommandError(message: error.description + hint, status: ExitStatus.status(for: error))
    }

    /// A failure to write the export file itself (its disk, its directory) is said as
    /// such: not "the store is busy or cannot be read" (status 4), nor "run prune", which
    /// frees the store's disk, perhaps not the export's. Nothing was removed.
    static func exportFailure(_ error: StoreError, file: URL) -> any Error {
        let directory = file.deletingLastPathComponent().path
        let reason: String
        switch error {
        case .io(let operation, let path, let errno) where path == file.path || path == directory:
            reason = "\(operation) failed: " + String(cString: strerror(errno)).lowercased() + " (errno \(errno))"
        case .diskFull(let path) where path == file.path || path == directory:
            reason = "no space left on its device"
        default:
            return error
        }
        return CommandError(
            message: "could not write the export \(file.path): \(reason); nothing was removed",
            status: ExitStatus.problems)
    }

    private func refusal(layers: Int, changes: Int64) -> CommandError {
        CommandError(
            message: """
                refusing: \(Formats.count(Int(changes), "change")) in \(Formats.count(layers, "layer")) \
                not yet synced would be lost. Sync first, or save them with --export FILE, or discard \
                them with --force. (`instantctl ls --dirty` lists them.)
                """, status: ExitStatus.refused)
    }
}
