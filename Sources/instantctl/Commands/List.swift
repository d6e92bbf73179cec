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
            descriptors.removeAll { descriptor in
                // By bytes, as every command resolves --document (another spelling is another document).
                if let document, !descriptor.documentIdentifier.hasSameBytes(as: document) { return true }
                return dirty && descriptor.pendingChangeCount == 0
            }
        }
        let output = options.output
        if options.json {
            printJSON(descriptors, to: output)
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
        // By index: `for descriptor in descriptors` would copy (retain and release) each one.
        for index in descriptors.indices { add(descriptors[index], to: &table, now: now) }
        table.render(colour: Output.colour, header: !options.quiet) { output.print(lines: $0) }
        let pending = descriptors.reduce(Int64(0)) { $0 + $1.pendingChangeCount }
        output.summary(
            "\(Formats.count(descriptors.count, "layer"))"
                + (pending > 0 ? ", \(Formats.count(Int(pending), "change")) not yet synced" : ""))
    }

    private func add(_ descriptor: borrowing LocalDescriptor, to table: inout Table, now: Date) {
        let pending = descriptor.pendingChangeCount
        table.append(descriptor.tenant.string)
        table.append(Formats.identifier(descriptor.documentIdentifier))
        table.append(Formats.layer(descriptor.layerName), style: descriptor.layerName.isEmpty ? .dim : nil)
        table.append(descriptor.state.rawValue, style: descriptor.state.style)
        table.append(String(descriptor.annotationCount))
        table.append(String(pending), style: pending > 0 ? .yellow : nil)
        table.append(Formats.bytes(descriptor.layerBytes))
        table.append(descriptor.pdfSHA256 == nil ? "-" : Formats.bytes(descriptor.pdfStoredBytes))
        table.append(Formats.age(descriptor.lastUsedAt, now: now))
    }
}

extension LocalState {
    var style: Style? {
        switch self {
        case .clean: nil
        case .dirty: .yellow
        case .unknown: .dim
        case .invalid: .red
        }
    }
}

extension List {
    /// `{"layers":[…]}`, written row by row in 64 KiB pieces: the same canonical JSON as
    /// building the whole document as a value, without 100,000 dictionaries.
    private func printJSON(_ descriptors: [LocalDescriptor], to output: Output) {
        var writer = JSONWriter(capacity: 1 << 17)
        writer.append(#"{"layers":["#)
        for index in descriptors.indices {
            if index > 0 { writer.append(",") }
            writer.writeObject(descriptors[index].jsonMembers)
            if writer.bytes.count >= 1 << 16 { output.print(lines: writer.takeBytes()) }
        }
        writer.append("]}\n")
        output.print(lines: writer.takeBytes())
    }
}

extension LocalDescriptor {
    /// The members of a layer's JSON object, keys in ascending order.
    var jsonMembers: KeyValuePairs<String, JSONValue> {
        [
            "annotations": .integer(annotationCount), "document": .string(documentIdentifier),
            "lastUsedAt": .string(lastUsedAt.iso8601), "layer": .string(layerName),
            "layerBytes": .integer(layerBytes), "pdfSha256": pdfSHA256.map { .string($0.hex) } ?? .null,
            "pdfStoredBytes": .integer(pdfStoredBytes), "pendingChanges": .integer(pendingChangeCount),
            "state": .string(state.rawValue), "tenant": .string(tenant.string),
            "userId": userID.map { .string($0) } ?? .null,
        ]
    }
}
