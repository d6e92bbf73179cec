import Foundation
import Instant
import InstantProtocol

/// What the changing commands print.
enum AnnotationsReport {
    static func changed(
        _ verb: String, ids: [String], opened: LayerOptions.Opened, target: LayerOptions, output: Output, json: Bool,
        detail: String? = nil, extra: [String: JSONValue] = [:]
    ) {
        let state = opened.descriptor.documentState
        if json {
            var members: [String: JSONValue] = [
                "server": .string(opened.server.absoluteString), "document": .string(target.document),
                "layer": .string(target.layer), verb: .array(ids.map { .string($0) }),
                "state": .string(state.rawValue),
            ]
            members.merge(extra) { _, new in new }
            output.print(json: .object(members))
            return
        }
        let shown = ids.count <= 5 ? ids.map(Formats.identifier).joined(separator: ", ") : "\(ids.count) annotations"
        output.summary(
            "\(verb) \(shown) in \(Formats.identifier(target.document)) layer \(Formats.layer(target.layer))"
                + (detail.map { " (\($0))" } ?? "") + (state == .dirty ? "; pending until instantctl sync" : ""))
    }
}
