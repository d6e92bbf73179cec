import ArgumentParser
import Foundation
import InstantProtocol
import InstantStore

struct Prune: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Free space: unreferenced entries, then old or least-recently-used layers.",
        discussion: """
            First removes documents no layer uses and PDFs no document uses. Then, with \
            --older-than, layers not used for that long; with --max-size, the least recently \
            used layers until the store fits. A layer with changes not yet synced is never \
            removed; such layers are listed as skipped. Safe while apps use the store: each \
            layer is re-checked under its lock as it is removed.
            """)

    @OptionGroup var options: GlobalOptions

    @Flag(help: "Show what would be removed; change nothing.")
    var dryRun = false

    @Option(help: ArgumentHelp("Shrink the store to at most this size, such as 10GB or 500MiB.", valueName: "size"))
    var maxSize: ByteSize?

    @Option(help: ArgumentHelp("Remove layers not used for this long, such as 30d or 12h.", valueName: "age"))
    var olderThan: Age?

    @Option(help: "Only this server's layers and documents.", completion: StoreCompletions.tenants)
    var tenant: TenantURL?

    func run() throws {
        // On a full disk, with the store's reserve (a dry run too: taken again at close).
        let store = try options.openStore(freeingSpace: true)
        // Closed, so that a reserve given back to open on a full disk is taken again if
        // nothing was freed.
        defer { store.close() }
        let report = try store.prune(
            PruneOptions(dryRun: dryRun, maxSize: maxSize?.bytes, olderThan: olderThan?.seconds, tenant: tenant))
        let output = options.output
        if options.json {
            output.print(
                json: .object([
                    "dryRun": .bool(dryRun), "removed": report.removed.json, "sizeBefore": .integer(report.sizeBefore),
                    "sizeAfter": .integer(report.sizeAfter),
                ]))
            return
        }
        if !options.quiet {
            for line in report.removed.lines(verb: dryRun ? "would remove" : "removed") { output.print(line) }
            for layer in report.removed.skippedDirtyLayers { output.print("kept (not synced)  \(layer.display)") }
        }
        let freed = Formats.bytes(report.removed.bytesFreed)
        output.summary(
            report.removed.isEmpty
                ? "nothing to prune; the store uses \(Formats.bytes(report.sizeBefore))"
                : "\(dryRun ? "would free" : "freed") \(freed): \(Formats.bytes(report.sizeBefore)) → \(Formats.bytes(report.sizeAfter))"
        )
    }
}
