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
        let store = try options.openStore()
        let scope = try RemovalScope.resolve(tenant: tenant, document: document, layer: layer, all: all, in: store)
        let output = options.output
        var policy: PendingChangesPolicy = force ? .discard : .refuse
        var exported: PendingChangesExport?
        if let export {
            let url = URL(fileURLWithPath: export)
            guard !FileManager.default.fileExists(atPath: url.path) else {
                throw CommandError.usage("\(export) exists; --export writes a new file")
            }
            let written = try store.exportPendingChanges(of: scope.dirtyLayers, to: url)
            exported = written
            policy = written.policy
            output.summary("exported \(Formats.count(written.changeCount, "change")) to \(export)")
        } else if !force, !scope.dirtyLayers.isEmpty {
            throw refusal(layers: scope.dirtyLayers.count, changes: scope.pendingChanges)
        }
        var report = RemovalReport()
        do {
            for target in scope.targets { report.merge(try target.remove(from: store, policy)) }
        } catch .pendingChanges(let layers, let changes) {  // changes made while rm ran
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
            summary += "; \(Formats.count(Int(report.discardedPendingChanges), "change")) not yet synced were discarded"
        }
        output.summary(summary)
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

/// What an `rm` removes, resolved against the store.
struct RemovalScope {
    enum Target {
        case layer(LayerReference)
        case document(DocumentReference)
        case tenant(TenantURL)

        func remove(from store: InstantStore, _ policy: PendingChangesPolicy) throws(StoreError) -> RemovalReport {
            switch self {
            case .layer(let reference):
                try store.removeLayer(
                    tenant: reference.tenant, document: reference.document, layer: reference.layer,
                    pendingChanges: policy)
            case .document(let reference):
                try store.removeDocument(tenant: reference.tenant, document: reference.document, pendingChanges: policy)
            case .tenant(let tenant):
                try store.removeTenant(tenant, pendingChanges: policy)
            }
        }
    }

    var targets: [Target]
    /// Layers in scope holding changes not yet synced (by the catalog's count).
    var dirtyLayers: [LayerReference]
    var pendingChanges: Int64

    static func resolve(tenant: TenantURL?, document: String?, layer: String?, all: Bool, in store: InstantStore)
        throws -> RemovalScope
    {
        let descriptors = try store.localDescriptors(tenant: tenant)
        let inScope: [LocalDescriptor]
        let targets: [Target]
        if all {
            let known = Set(try store.cacheEntries(tenant: tenant).map(\.tenant)).union(descriptors.map(\.tenant))
            if let tenant, !known.contains(tenant) {
                throw CommandError(message: "nothing is stored for \(tenant)", status: ExitStatus.problems)
            }
            inScope = descriptors
            targets = (tenant.map { [$0] } ?? known.sorted()).map { .tenant($0) }
        } else {
            guard let document else { throw CommandError.usage("--document is needed") }
            let owners = Set(
                try store.cacheEntries(tenant: tenant).filter { $0.documentIdentifier == document }.map(\.tenant))
            guard let owner = owners.first else {
                throw CommandError(
                    message:
                        "no document \(Formats.identifier(document)) is stored\(tenant.map { " for \($0)" } ?? "")",
                    status: ExitStatus.problems)
            }
            guard owners.count == 1 else {
                throw CommandError.usage(
                    "document \(Formats.identifier(document)) is stored for several tenants; pick one with --tenant: "
                        + owners.map(\.string).sorted().joined(separator: ", "))
            }
            let layers = descriptors.filter { $0.tenant == owner && $0.documentIdentifier == document }
            if let layer {
                inScope = layers.filter { $0.layerName == layer }
                guard !inScope.isEmpty else {
                    throw CommandError(
                        message:
                            "document \(Formats.identifier(document)) of \(owner) has no layer \(Formats.layer(layer))",
                        status: ExitStatus.problems)
                }
                targets = [.layer(LayerReference(tenant: owner, document: document, layer: layer))]
            } else {
                inScope = layers
                targets = [.document(DocumentReference(tenant: owner, document: document))]
            }
        }
        let dirty = inScope.filter { $0.pendingChangeCount > 0 }
        return RemovalScope(
            targets: targets,
            dirtyLayers: dirty.map {
                LayerReference(tenant: $0.tenant, document: $0.documentIdentifier, layer: $0.layerName)
            },
            pendingChanges: dirty.reduce(0) { $0 + $1.pendingChangeCount })
    }
}
