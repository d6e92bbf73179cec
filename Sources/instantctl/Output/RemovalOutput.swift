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
        ])
    }
}

extension LayerReference {
    var json: JSONValue {
        .object(["tenant": .string(tenant.string), "document": .string(document), "layer": .string(layer)])
    }
}
