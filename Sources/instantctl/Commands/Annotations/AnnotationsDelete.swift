import ArgumentParser
import Foundation
import Instant
import InstantProtocol
import InstantStore

struct AnnotationsDelete: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete annotations from a local layer (pending until a sync).")

    @OptionGroup var options: GlobalOptions
    @OptionGroup var target: LayerOptions

    @Argument(help: "The annotations' ids (all are deleted, or none).")
    var ids: [String]

    func validate() throws {
        guard !ids.isEmpty else { throw ValidationError("name at least one annotation id") }
        if let twice = ids.first(where: { id in ids.filter { $0.hasSameBytes(as: id) }.count > 1 }) {
            throw ValidationError("annotation \(twice) is named twice")
        }
    }

    func run() throws {
        let opened = try target.open(root: options.rootURL)
        defer { withExtendedLifetime(opened.client) {} }
        do {
            try opened.document.apply(ids.map { .delete(id: $0) })
        } catch {
            throw LayerOptions.failure(error)
        }
        AnnotationsReport.changed(
            "deleted", ids: ids, opened: opened, target: target, output: options.output, json: options.json)
    }
}
