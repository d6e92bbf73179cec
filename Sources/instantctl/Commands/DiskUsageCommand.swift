import ArgumentParser
import InstantProtocol
import InstantStore

struct DiskUsageCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "du",
        abstract: "Show where the store's bytes go.",
        discussion: """
            One line per tenant (or per document with --by document): documents, layers, \
            layer data, PDF bytes used only there (unique) and also used elsewhere (shared), \
            disk bytes (compressed) and logical bytes (uncompressed). A shared PDF counts in \
            full on every line that uses it; the total counts it once. The last line says \
            what prune would free now without any limit (unreferenced documents and PDFs), \
            and what tmp/ holds besides: downloads in progress, and those a killed process \
            cut short (a whole PDF, perhaps), which prune sweeps.
            """)

    enum Grouping: String, ExpressibleByArgument, CaseIterable {
        case tenant, document
    }

    @OptionGroup var options: GlobalOptions

    @Option(help: "Group by tenant or document.")
    var by: Grouping = .tenant

    func run() throws {
        let store = try options.openStore()
        let usage = try store.diskUsage(byDocument: by == .document)
        let output = options.output
        if options.json {
            output.print(
                json: .object([
                    "by": .string(by.rawValue), "lines": .array(usage.lines.map(\.json)),
                    "totalStoredBytes": .integer(usage.totalStoredBytes),
                    "totalLogicalBytes": .integer(usage.totalLogicalBytes),
                    "reclaimableBytes": .integer(usage.reclaimableBytes),
                    "temporaryBytes": .integer(usage.temporaryBytes),
                ]))
            return
        }
        var header = ["TENANT"]
        if by == .document { header.append("DOCUMENT") }
        header += ["DOCUMENTS", "LAYERS", "LAYER DATA", "PDF UNIQUE", "PDF SHARED", "ON DISK", "LOGICAL"]
        let first = by == .document ? 2 : 1
        var table = Table(header, rightAligned: Set(first..<header.count))
        for line in usage.lines {
            var row: [Table.Cell] = [Table.Cell(line.tenant.string)]
            if by == .document { row.append(Table.Cell(Formats.identifier(line.documentIdentifier ?? ""))) }
            row += [
                Table.Cell(String(line.documents)), Table.Cell(String(line.layers)),
                Table.Cell(Formats.bytes(line.layerBytes)), Table.Cell(Formats.bytes(line.uniqueStoredBytes)),
                Table.Cell(Formats.bytes(line.sharedStoredBytes)), Table.Cell(Formats.bytes(line.storedBytes)),
                Table.Cell(Formats.bytes(line.logicalPDFBytes + line.layerBytes)),
            ]
            table.add(row)
        }
        if !table.isEmpty { table.render(colour: Output.colour, header: !options.quiet) { output.print(lines: $0) } }
        output.summary(
            "total \(Formats.bytes(usage.totalStoredBytes)) on disk, \(Formats.bytes(usage.totalLogicalBytes)) logical"
                + " (each PDF once); prune would free \(Formats.bytes(usage.reclaimableBytes))"
                + (usage.temporaryBytes > 0
                    ? "; \(Formats.bytes(usage.temporaryBytes)) more in tmp/ (downloads in progress, or cut short: "
                        + "prune sweeps those)" : ""))
    }
}

extension UsageLine {
    var json: JSONValue {
        .object([
            "tenant": .string(tenant.string), "document": documentIdentifier.map { .string($0) } ?? .null,
            "documents": .integer(documents), "layers": .integer(layers), "layerBytes": .integer(layerBytes),
            "uniqueStoredBytes": .integer(uniqueStoredBytes), "sharedStoredBytes": .integer(sharedStoredBytes),
            "storedBytes": .integer(storedBytes), "logicalBytes": .integer(logicalPDFBytes + layerBytes),
        ])
    }
}
