import ArgumentParser
import Foundation
import InstantProtocol
import InstantStore

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls",
        abstract: "List the layers stored on this machine.",
        discussion: """
            One line per layer: tenant (server), document, layer ("(default)" for the default \
            layer), state, annotations, changes not yet synced, the layer's size, the size of \
            its document's PDF on disk (shared with every layer and document that uses it), \
            and when it was last used. Oldest use first.

            States: clean; dirty (changes not yet synced); unknown (PDF not downloaded); \
            invalid (found corrupt: see verify --repair).
            """)

    @OptionGroup var options: GlobalOptions

    @Option(help: "Only this server's layers.", completion: StoreCompletions.tenants)
    var tenant: TenantURL?

    @Option(help: "Only this document's layers.", completion: StoreCompletions.documents)
    var document: String?

    @Flag(help: "Only layers with changes not yet synced.")
    var dirty = false

    func run() throws {
        let store = try options.openStore()
        var descriptors = try store.localDescriptors(tenant: tenant)
        if document != nil || dirty {  // in place: no copy of 100,000 descriptors
            descriptors.removeAll {
                (document != nil && $0.documentIdentifier != document) || (dirty && $0.pendingChangeCount == 0)
            }
        }
        let output = options.output
        if options.json {
            output.print(json: .object(["layers": .array(descriptors.map(\.json))]))
            return
        }
        guard !descriptors.isEmpty else {
            output.summary("no layers stored\(tenant.map { " for \($0)" } ?? "")")
            return
        }
        let now = Date()
        var table = Table(
            ["TENANT", "DOCUMENT", "LAYER", "STATE", "ANNOTATIONS", "PENDING", "SIZE", "PDF", "LAST USED"],
            rightAligned: [4, 5, 6, 7])
        table.reserve(rows: descriptors.count)
        for descriptor in descriptors { add(descriptor, to: &table, now: now) }
        output.print(lines: table.render(colour: Output.colour, header: !options.quiet))
        let pending = descriptors.reduce(Int64(0)) { $0 + $1.pendingChangeCount }
        output.summary(
            "\(Formats.count(descriptors.count, "layer"))"
                + (pending > 0 ? ", \(Formats.count(Int(pending), "change")) not yet synced" : ""))
    }

    private func add(_ descriptor: LocalDescriptor, to table: inout Table, now: Date) {
        let layer = Formats.layer(descriptor.layerName)
        let pending = descriptor.pendingChangeCount
        let pdf = descriptor.pdfSHA256 == nil ? "-" : Formats.bytes(descriptor.pdfStoredBytes)
        let dim: ((String) -> String)? = descriptor.layerName.isEmpty ? { Style.dim($0) } : nil
        let warn: ((String) -> String)? = pending > 0 ? { Style.yellow($0) } : nil
        table.append(Table.Cell(descriptor.tenant.string))
        table.append(Table.Cell(Formats.identifier(descriptor.documentIdentifier)))
        table.append(Table.Cell(layer, style: dim))
        table.append(Table.Cell(descriptor.state.rawValue, style: descriptor.state.style))
        table.append(Table.Cell(String(descriptor.annotationCount)))
        table.append(Table.Cell(String(pending), style: warn))
        table.append(Table.Cell(Formats.bytes(descriptor.layerBytes)))
        table.append(Table.Cell(pdf))
        table.append(Table.Cell(Formats.age(descriptor.lastUsedAt, now: now)))
    }
}

extension LocalState {
    var style: ((String) -> String)? {
        switch self {
        case .clean: nil
        case .dirty: Style.yellow
        case .unknown: Style.dim
        case .invalid: Style.red
        }
    }
}

extension LocalDescriptor {
    var json: JSONValue {
        .object([
            "tenant": .string(tenant.string), "document": .string(documentIdentifier), "layer": .string(layerName),
            "userId": userID.map { .string($0) } ?? .null, "state": .string(state.rawValue),
            "annotations": .integer(annotationCount), "pendingChanges": .integer(pendingChangeCount),
            "layerBytes": .integer(layerBytes), "pdfSha256": pdfSHA256.map { .string($0.hex) } ?? .null,
            "pdfStoredBytes": .integer(pdfStoredBytes), "lastUsedAt": .string(lastUsedAt.iso8601),
        ])
    }
}
