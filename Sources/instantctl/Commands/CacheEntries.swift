import ArgumentParser
import Foundation
import Instant
import InstantProtocol
import InstantStore

struct CacheEntries: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: "List the cache entries: one per stored document, as listCacheEntries() sees them.",
        discussion: """
            One line per document: tenant (server), document, the disk space of its PDF and \
            all its layers, the layers downloaded ("(default)" for the default layer), and \
            what is wrong with it:

              corrupted     its PDF or a layer failed a check: remove it, then download again
              unreferenced  no layer uses it: prune (or removeUnreferencedCacheEntries()) purges it
              inconsistent  layers are stored without the document's PDF (the client's \
            layerAbsurdity); verify --repair or rm puts it right

            A PDF that several documents use counts in full on each of them.
            """)

    @OptionGroup var options: GlobalOptions

    @Option(help: "Only this server's entries.", completion: StoreCompletions.tenants)
    var tenant: TenantURL?

    @Flag(help: "Only entries with something wrong (corrupted, unreferenced or inconsistent).")
    var problems = false

    func run() throws {
        let store = try options.openStore()
        var entries = try store.cacheEntries(tenant: tenant).map { (tenant: $0.tenant, entry: InstantCacheEntry($0)) }
        if problems { entries.removeAll { $0.entry.entryState.isEmpty } }
        let output = options.output
        if options.json {
            output.print(json: .object(["entries": .array(entries.map { Self.json($0.tenant, $0.entry) })]))
            return
        }
        guard !entries.isEmpty else {
            output.summary("no cache entries\(tenant.map { " for \($0)" } ?? "")")
            return
        }
        var table = Table(["TENANT", "DOCUMENT", "ON DISK", "LAYERS", "PROBLEMS"], rightAligned: [2])
        for (tenant, entry) in entries {
            table.append(tenant.string)
            table.append(Formats.identifier(entry.documentIdentifier))
            table.append(Formats.bytes(entry.overallDiskSpace))
            let layers = entry.downloadedLayerNames.sorted().map(Formats.layer)
            table.append(layers.isEmpty ? "-" : layers.joined(separator: ","), style: layers.isEmpty ? .dim : nil)
            let flags = Self.flags(entry.entryState)
            table.append(flags.isEmpty ? "-" : flags.joined(separator: ","), style: flags.isEmpty ? .dim : .red)
        }
        table.render(colour: Output.colour, header: !options.quiet) { output.print(lines: $0) }
        let bytes = entries.reduce(Int64(0)) { $0 + $1.entry.overallDiskSpace }
        let troubled = entries.filter { !$0.entry.entryState.isEmpty }.count
        output.summary(
            (entries.count == 1 ? "1 entry, " : "\(entries.count) entries, ")
                + "\(Formats.bytes(bytes)) on disk"
                + (troubled > 0 ? "; \(troubled) with problems" : ""))
    }

    /// The flags' names, in a fixed order.
    static func flags(_ state: InstantCacheEntry.State) -> [String] {
        var names: [String] = []
        if state.contains(.corrupted) { names.append("corrupted") }
        if state.contains(.unreferenced) { names.append("unreferenced") }
        if state.contains(.layerAbsurdity) { names.append("inconsistent") }
        return names
    }

    static func json(_ tenant: TenantURL, _ entry: InstantCacheEntry) -> JSONValue {
        .object([
            "tenant": .string(tenant.string), "document": .string(entry.documentIdentifier),
            "bytes": .integer(entry.overallDiskSpace),
            "layers": .array(entry.downloadedLayerNames.sorted().map { .string($0) }),
            "corrupted": .bool(entry.entryState.contains(.corrupted)),
            "unreferenced": .bool(entry.entryState.contains(.unreferenced)),
            "inconsistent": .bool(entry.entryState.contains(.layerAbsurdity)),
        ])
    }
}
