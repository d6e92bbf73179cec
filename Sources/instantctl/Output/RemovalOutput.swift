import InstantProtocol
import InstantStore

extension RemovalReport {
    /// Human lines: what went (or would go), then the bytes freed.
    func lines(verb: String) -> [String] {
        var lines: [String] = []
        for layer in layers { lines.append("\(verb) layer     \(layer.display)") }
        for document in documents {
            lines.append("\(verb) document  \(document.tenant)  \(Formats.identifier(document.document))")
        }
        for blob in blobs { lines.append("\(verb) PDF       \(blob.hex)") }
        for path in swept { lines.append("\(verb == "removed" ? "swept" : "would sweep") \(path)") }
        for name in quarantined { lines.append("quarantined  \(name) (could not be read; kept in quarantine/)") }
        for layer in skippedUnreadableLayers { lines.append("kept (cannot be opened)  \(layer.display)") }
        if let filesLeft {
            lines.append(
                "warning: some files are left until the next prune or instantctl verify --repair: \(filesLeft)")
        }
        return lines
    }

    var json: JSONValue {
        .object([
            "layers": .array(layers.map(\.json)),
            "documents": .array(
                documents.map {
                    .object(["tenant": .string($0.tenant.string), "document": .string($0.document)])
                }),
            "pdfs": .array(blobs.map { .string($0.hex) }), "bytesFreed": .integer(bytesFreed),
            "discardedPendingChanges": .integer(discardedPendingChanges),
            "skippedDirtyLayers": .array(skippedDirtyLayers.map(\.json)),
            "skippedPendingChanges": .integer(skippedPendingChanges),
            "skippedUnreadableLayers": .array(skippedUnreadableLayers.map(\.json)),
            "quarantined": .array(quarantined.map { .string($0) }), "swept": .array(swept.map { .string($0) }),
            "filesLeft": filesLeft.map { .string($0) } ?? .null,
        ])
    }
}

extension LayerReference {
    var json: JSONValue {
        .object(["tenant": .string(tenant.string), "document": .string(document), "layer": .string(layer)])
    }
}
